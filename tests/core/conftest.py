"""What the C core's tests (tests/core) share beyond tests/conftest.py: the
fixture libraries only they call, compiled once per session from
tests/data/kernels (support/sources.py), each with its `<name>_lib` path:
`dispatch` (overload selection, test_dispatch.py) and `names` (namespaces
and extern "C", test_call.py); and the pure-C drivers (c_drivers.py), built
once per test run rather than once per pytest-xdist worker."""

import functools
import shutil

import pytest

import c_drivers
from sources import kernel_fixtures, once_per_run

dispatch_lib, dispatch = kernel_fixtures("dispatch")
names_lib, names = kernel_fixtures("names")


@pytest.fixture(scope="session", autouse=True)
def _c_drivers_once_per_run(tmp_path_factory):
    """c_drivers.build(), which compiles every pure-C file of csrc five times (four
    drivers with ASan/UBSan, scale.c -O2), made once per test run, whichever
    workers ask (test_c_drivers, test_expr, test_fuzz, test_parse and test_scale
    call it): the first builds and copies the executables into the run's shared
    folder (its own build folder goes when that worker exits), the others use
    those copies. Nothing is built until a test asks."""
    build = c_drivers.build

    def copy(folder):
        return {name: shutil.copy2(exe, str(folder / name)) for name, exe in build().items()}

    c_drivers.build = functools.lru_cache(maxsize=None)(
        lambda: once_per_run(tmp_path_factory, "c-drivers", copy))
    yield
    c_drivers.build = build
