"""pytest plugin: run pyamg's own test suite with amg_core served by bindthem.

Use::

    PYTHONPATH=tests/api/pyamg:tests/support python -m pytest -p bindthem_pyamg --pyargs pyamg

(``tests/api/pyamg/run_suite.sh bindthem`` does exactly that.)

Importing this module (pytest imports ``-p`` plugins before it collects
anything, so before pyamg is imported) compiles pyamg's eight amg_core
headers and the test module ``bind_examples`` from pyamg's sdist with
:func:`bindthem.build`, with pyamg's own ``instantiate.yml`` /
``tests/instantiate-test.yml`` unchanged, and serves the resulting
:class:`bindthem.Library` objects, through a ``sys.meta_path`` finder placed
first, as the modules ``pyamg.amg_core.<header>`` and
``pyamg.amg_core.tests.bind_examples``. When pyamg's ``amg_core/__init__.py``
then runs ``from . import relaxation`` (and ``from .relaxation import
gauss_seidel, ...``), the import system gets the Library from that finder and
never looks for the wheel's pybind11 extension modules.
No pyamg file is changed or copied.

At session start a check (printed as a header line) proves the functions
pyamg sees are bindthem Functions: every name in the sdist's
``amg_core.__all__`` is a ``bindthem.Function`` owned by the Library in
``sys.modules``, ``pyamg.amg_core.X is pyamg.amg_core.<sub>.X``, and none of
the wheel's ``.so`` files got loaded. If any of it fails the session stops.

Environment: ``BINDTHEM_CACHE`` (where the libraries are built; default
``<BINDTHEM_TEST_CACHE>/bindthem-pyamg``), ``BINDTHEM_TEST_CACHE`` (the
sdist cache of ``pyamg_sdist``).
"""

import importlib.machinery
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyamg_libs  # noqa: E402  (tests/api/pyamg/pyamg_libs.py)
from pyamg_libs import HEADERS, TEST_MODULE, core_all, pyamg_sdist  # noqa: E402

import bindthem  # noqa: E402

if "pyamg.amg_core" in sys.modules:
    raise ImportError("bindthem_pyamg must be imported before pyamg.amg_core "
                      "(use it as `python -m pytest -p bindthem_pyamg ...`)")


class _Finder:
    """A sys.meta_path finder serving the bindthem Libraries by module name.

    The import system does the rest as for any module: it imports the parent
    packages first (pyamg, pyamg.amg_core, pyamg.amg_core.tests, the wheel's
    plain Python packages), sets the attribute on the parent, fills in
    ``__spec__``/``__loader__`` and puts the Library in ``sys.modules``. A
    bare ``sys.modules`` pre-load is not enough: ``import
    pyamg.amg_core.tests.bind_examples as g`` then finds the leaf but never
    imports the package ``pyamg.amg_core.tests`` in between.
    """

    def __init__(self, libs):
        self.libs = libs

    def find_spec(self, fullname, path=None, target=None):
        lib = self.libs.get(fullname)
        if lib is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=lib.__file__)

    def create_module(self, spec):
        return self.libs[spec.name]

    def exec_module(self, module):
        pass


def install(libs):
    """Serve the Libraries to every later import (before pyamg imports them)."""
    for name in libs:
        if name in sys.modules:
            raise ImportError("%s is already imported" % name)
    sys.meta_path.insert(0, _Finder(libs))


_T0 = time.perf_counter()
CORE = pyamg_sdist.amg_core_dir()
LIBRARIES = pyamg_libs.build_libraries(CORE)
install(LIBRARIES)
BUILD_SECONDS = time.perf_counter() - _T0


def check():
    """Assert that pyamg.amg_core is served by bindthem. Returns a summary."""
    import pyamg  # noqa: F401
    import pyamg.amg_core as core
    import pyamg.amg_core.tests.bind_examples as examples

    Function = bindthem.Function
    assert type(core.relaxation.gauss_seidel).__name__ == "Function", type(
        core.relaxation.gauss_seidel)
    assert core.gauss_seidel is core.relaxation.gauss_seidel
    assert examples is LIBRARIES[TEST_MODULE]
    names = core_all(CORE)
    nfun = 0
    for h in HEADERS:
        lib = LIBRARIES["pyamg.amg_core." + h]
        assert sys.modules["pyamg.amg_core." + h] is lib
        assert getattr(core, h) is lib, (h, getattr(core, h))
    for n in names:
        obj = getattr(core, n)
        if n in HEADERS:
            continue
        assert isinstance(obj, Function), (n, type(obj))
        owner = [h for h in HEADERS if getattr(LIBRARIES["pyamg.amg_core." + h], n, None)
                 is obj]
        assert owner, "%s is not a function of any bindthem Library" % n
        nfun += 1
    wheel = os.path.dirname(core.__file__)
    loaded = [m.__name__ for m in list(sys.modules.values())
              if getattr(m, "__file__", None) and m.__file__.startswith(wheel)
              and m.__file__.endswith(".so")]
    assert not loaded, "the wheel's extension modules got loaded: %s" % loaded
    try:  # nor dlopen'ed some other way
        with open("/proc/self/maps") as f:
            mapped = {ln.split()[-1] for ln in f if ln.rstrip().endswith(".so")}
    except OSError:
        mapped = set()
    assert not [p for p in mapped if p.startswith(wheel + os.sep)], mapped
    return "%d amg_core functions + %d bind_examples from bindthem (%s), built in %.1fs" % (
        nfun, len(examples.__all__), pyamg_libs.default_cache(), BUILD_SECONDS)


def pytest_sessionstart(session):
    """The check, and a banner line saying so (shown even with -q)."""
    line = "bindthem_pyamg: pyamg.amg_core served by bindthem %s: %s" % (
        bindthem.__version__, check())
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(line)
    else:
        print(line)
