"""What the C core's tests (tests/core) share beyond tests/conftest.py: the
fixture libraries only they call, compiled once per session from
tests/data/kernels (support/sources.py), each with its `<name>_lib` path:
`dispatch` (overload selection, test_dispatch.py) and `names` (namespaces
and extern "C", test_call.py)."""

from sources import kernel_fixtures

dispatch_lib, dispatch = kernel_fixtures("dispatch")
names_lib, names = kernel_fixtures("names")
