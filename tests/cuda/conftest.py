"""What the CUDA tests (tests/cuda) share beyond tests/conftest.py: the mock
driver's `lib` (the test module of tests/data/cuda bound with bindthem.cuda,
once per session) and `clean` (the mock's logs cleared before a test). The
driver itself (`mock_path`, `mock`) is tests/conftest.py's, as tests/core
uses it too. tests/cuda/gpu's tests, on a real device, define their own `lib`."""

from cuda_support import clean_fixture, held_fixture, lib_fixture  # noqa: F401
