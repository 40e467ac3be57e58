"""The device check's marker, known in the whole suite too (where these
tests skip): ``isolated(limit=S)``, the wall limit of a test run in a process
of its own by isolation.py (run_gpu_check.sh loads that plugin)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "isolated(limit=S): the device check's wall limit for "
                                       "this test in its own process (tests/cuda/gpu/isolation.py)")
