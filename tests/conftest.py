"""What the tests of every folder share (tests/README.md): the helper modules
on sys.path, the core suite's marker, an empty working folder, and the
fixtures that tests of several folders use. A folder's own fixtures are in
its conftest.py (tests/core, tests/cuda, tests/api).

The helpers in tests/support/ are imported by plain name (``from support
import python_env``): this file puts that folder first on sys.path, so that
they import the same whichever folder or file pytest is given
(``pytest tests/core/test_call.py`` too). A folder's own helpers lie beside
its tests (tests/core/c_drivers.py), found as pytest puts each test file's
folder on sys.path. No test imports a conftest.py.

The fixture kernel libraries (tests/data/kernels, support/sources.py) are
compiled once per session, with g++ (C++ headers plus the explicit
instantiations their instantiate.yml lists) or gcc (ckernels.c), into a
temporary directory.
"""

import os
import shutil
import sys

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(TESTS, "support")
if SUPPORT not in sys.path:
    sys.path.insert(0, SUPPORT)

# the mock CUDA driver's fixtures mock_path and mock (tests/cuda, and the tests of
# tests/core that check a rule of the core on its CUDA side too): here, so that
# they are one per session across folders, as the driver is process-wide
from cuda_support import mock_fixture, mock_path_fixture  # noqa: E402, F401

from sources import CC, CXX, kernel, kernel_fixtures, run  # noqa: E402


def _core_suite():
    """tests/core_suite.txt's entries (relative to tests/): the core suite's
    files, and test functions as FILE::NAME."""
    with open(os.path.join(TESTS, "core_suite.txt")) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    """Marker `core` on the core suite's tests (`-m core` runs just those): a
    listed file's, and a listed function's (every parametrisation)."""
    core = _core_suite()
    for item in items:
        path = os.path.relpath(str(item.path), TESTS)
        if path in core or "%s::%s" % (path, getattr(item, "originalname", item.name)) in core:
            item.add_marker(pytest.mark.core)


class _SlowFirst:
    """Under pytest-xdist, the tests marked `slow` (minutes each, some of them)
    start first, shared out among the workers, rather than one of them being
    left for the end, when the other workers have nothing left to do. The
    load scheduler starts each worker on a run of consecutive tests (a
    quarter of its share): the slow tests go at the heads of those runs, in
    turn, a module's together where they share a module's fixture (a cluster,
    a built site), else one by one."""

    @staticmethod
    def _group(item):
        for defs in item._fixtureinfo.name2fixturedefs.values():
            if any(d.scope in ("module", "class", "package") for d in defs):
                return item.module.__name__
        return item.nodeid

    @pytest.hookimpl(trylast=True)  # after the deselection (-m, -k): on what will run
    def pytest_collection_modifyitems(self, items):
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
        slow = [item for item in items if item.get_closest_marker("slow")]
        if workers < 2 or not slow:
            return
        rest = [item for item in items if not item.get_closest_marker("slow")]
        groups = {}
        for item in slow:
            groups.setdefault(self._group(item), []).append(item)
        heads = [[] for _ in range(workers)]
        for i, group in enumerate(groups.values()):
            heads[i % workers] += group
        run = max(2, len(items) // workers // 4)  # pytest-xdist's first run for each worker
        ordered, taken = [], 0
        for head in heads:
            fill = max(0, run - len(head))
            ordered += head + rest[taken:taken + fill]
            taken += fill
        items[:] = ordered + rest[taken:]


def pytest_configure(config):
    config.pluginmanager.register(_SlowFirst(), "bindthem-slow-first")


@pytest.fixture(autouse=True, scope="session")
def _cwd_outside_the_source_tree(tmp_path_factory):
    """Tests and the subprocesses they start run in an empty folder, so that
    ``python -c``/``-m`` import the installed bindthem, not the source folder
    (which has no compiled _core unless built in place)."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(old)


@pytest.fixture(scope="session")
def libdir(tmp_path_factory):
    if not shutil.which(CXX) or not shutil.which(CC):
        pytest.skip("needs %s and %s" % (CXX, CC))
    return str(tmp_path_factory.mktemp("kernels"))


# abi.h: the calls (tests/core) and the Library (tests/api)
abi_lib, abi = kernel_fixtures("abi")


@pytest.fixture(scope="session")
def c_lib(libdir):
    lib = os.path.join(libdir, "libckernels.so")
    run([CC, "-std=c11", "-O1", "-fPIC", "-shared", kernel("ckernels.c"), "-o", lib])
    return lib


@pytest.fixture(scope="session")
def ckernels(c_lib):
    import bindthem
    return bindthem.load(c_lib, kernel("ckernels.h"))


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh bindthem.build cache."""
    d = tmp_path / "cache"
    d.mkdir()
    return str(d)


@pytest.fixture(scope="session")
def python():
    return sys.executable
