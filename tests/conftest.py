"""Fixture kernel libraries for the run-time binding tests.

Each library is compiled once per session, with g++ (C++ headers plus the
explicit instantiations their instantiate.yml lists) or gcc (ckernels.c),
into a temporary directory. Sources live in tests/data/kernels/.
"""

import os
import shutil
import subprocess
import sys

import pytest

# the mock CUDA driver's fixtures mock_path, mock, lib, clean (test_cuda_*.py):
# here, so that they are session-wide, as the driver is process-wide
from cuda_support import clean_fixture, lib_fixture, mock_fixture, mock_path_fixture  # noqa: F401

TESTS = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(TESTS, "data", "kernels")
CXX = os.environ.get("CXX", "g++")
CC = os.environ.get("CC", "gcc")


def _core_suite():
    """tests/core_suite.txt's files (relative to tests/): the core suite."""
    with open(os.path.join(TESTS, "core_suite.txt")) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config, items):
    """Marker `core` on the core suite's tests (`-m core` runs just those)."""
    core = _core_suite()
    for item in items:
        if os.path.relpath(str(item.path), TESTS) in core:
            item.add_marker(pytest.mark.core)


@pytest.fixture(autouse=True, scope="session")
def _cwd_outside_the_source_tree(tmp_path_factory):
    """Tests and the subprocesses they start run in an empty folder, so that
    ``python -c``/``-m`` import the installed bindthem, not the source folder
    (which has no compiled _core unless built in place)."""
    old = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(old)


def kernel(name):
    """Path of a fixture source in tests/data/kernels."""
    return os.path.join(KERNELS, name)


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))


def compile_cxx(outdir, stem, header, instantiate=None, extra=""):
    """Compile header (+ the explicit instantiations of instantiate) with g++."""
    from bindthem._services.compile.source import instantiation_source

    src = os.path.join(outdir, stem + ".cpp")
    with open(src, "w") as f:
        if instantiate:
            f.write(instantiation_source(header, instantiate))
        else:
            f.write('#include <complex>\n#include "%s"\n' % header)
        f.write(extra)
    lib = os.path.join(outdir, "lib%s.so" % stem)
    _run([CXX, "-std=c++17", "-O1", "-fPIC", "-shared", src, "-o", lib])
    return lib


@pytest.fixture(scope="session")
def libdir(tmp_path_factory):
    if not shutil.which(CXX) or not shutil.which(CC):
        pytest.skip("needs %s and %s" % (CXX, CC))
    return str(tmp_path_factory.mktemp("kernels"))


def _kernel_fixtures(name):
    """Session fixtures `<name>_lib` (tests/data/kernels/<name>.h compiled
    with its .yml) and `<name>` (that library bound)."""
    @pytest.fixture(scope="session", name=name + "_lib")
    def lib_path(libdir):
        return compile_cxx(libdir, name, kernel(name + ".h"), kernel(name + ".yml"))

    @pytest.fixture(scope="session", name=name)
    def bound(request):
        import bindthem
        path = request.getfixturevalue(name + "_lib")
        return bindthem.load(path, kernel(name + ".h"), kernel(name + ".yml"))

    return lib_path, bound


abi_lib, abi = _kernel_fixtures("abi")
dispatch_lib, dispatch = _kernel_fixtures("dispatch")
names_lib, names = _kernel_fixtures("names")


@pytest.fixture(scope="session")
def c_lib(libdir):
    lib = os.path.join(libdir, "libckernels.so")
    _run([CC, "-std=c11", "-O1", "-fPIC", "-shared", kernel("ckernels.c"), "-o", lib])
    return lib


@pytest.fixture(scope="session")
def ckernels(c_lib):
    import bindthem
    return bindthem.load(c_lib, kernel("ckernels.h"))


@pytest.fixture(scope="session")
def symbols_lib(libdir):
    # plain() and tmpl<int> only: inl is inline (unused, so not emitted),
    # stat is static, tmpl<double> is not instantiated.
    return compile_cxx(libdir, "symbols", kernel("symbols.h"), kernel("symbols_ok.yml"))


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh bindthem.build cache."""
    d = tmp_path / "cache"
    d.mkdir()
    return str(d)


@pytest.fixture(scope="session")
def python():
    return sys.executable
