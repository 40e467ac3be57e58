"""Where the tests' sources are, and the fixture kernels compiled from them.

ROOT is the repository, TESTS its tests/ folder, SUPPORT tests/support (this
folder, which tests/conftest.py puts on sys.path), DATA tests/data (what
every folder's tests read), KERNELS tests/data/kernels (the fixture kernels'
sources). A test file names these instead of counting dirname()s from its
own path, so it reads the same files from whichever folder it lies in.

The fixture libraries (tests/conftest.py and tests/core/conftest.py) are
compiled here: with g++ (a C++ header plus the explicit instantiations its
instantiate.yml lists, compile_cxx) or gcc (ckernels.c). bindthem is
imported inside the functions, so that importing this module (the conftest
files do) needs no built bindthem.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import pytest

SUPPORT = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(SUPPORT)
ROOT = os.path.dirname(TESTS)
DATA = os.path.join(TESTS, "data")
KERNELS = os.path.join(DATA, "kernels")
CXX = os.environ.get("CXX", "g++")
CC = os.environ.get("CC", "gcc")


@contextlib.contextmanager
def source_tree_lock():
    """Held while a command writes into the source tree (an sdist's
    bindthem.egg-info and staging folder, a build's build/): the processes of
    one run (pytest-xdist's workers) take turns, rather than one sdist
    reading a folder another is writing."""
    key = hashlib.sha256(os.path.realpath(ROOT).encode()).hexdigest()[:16]
    # not through a link another user planted in the shared temporary folder
    fd = os.open(os.path.join(tempfile.gettempdir(), "bindthem-tree-%s.lock" % key),
                 os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def run_folder(tmp_path_factory):
    """The temporary folder every process of this test run shares: under
    pytest-xdist, the workers' own folders (popen-gw0, ...) lie in it; without
    it, the session's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory, name, make):
    """make(folder), run once per test run, whichever pytest-xdist workers ask:
    the first one makes it, in the run's shared folder `name` (new), while the
    others wait; each gets the JSON value make returned. A make that raised is
    tried again by the next one to ask (its folder made anew)."""
    folder = run_folder(tmp_path_factory) / name
    done = folder / ".made.json"
    fd = os.open(str(folder) + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if done.exists():
            return json.loads(done.read_text())
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        value = make(folder)
        part = folder / ".made.json.part"
        part.write_text(json.dumps(value))
        os.replace(part, done)
        return value
    finally:
        os.close(fd)  # releases the lock


def kernel(name):
    """Path of a fixture source in tests/data/kernels."""
    return os.path.join(KERNELS, name)


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("%s failed:\n%s%s" % (" ".join(cmd), proc.stdout, proc.stderr))


def c_library(tmp_path_factory, stem, header, source, cxx=False, flags=()):
    """A test's own small library: header and source text written into a fresh
    folder as STEM.h and STEM.c (STEM.cpp with cxx: C++, its functions extern
    "C" where the header says so), compiled with CC (CXX) -O1 into libSTEM.so.
    (library path, header path); skips the test without the compiler."""
    compiler = CXX if cxx else CC
    if not shutil.which(compiler):
        pytest.skip("needs a C%s compiler (%s)" % ("++" if cxx else "", compiler))
    d = tmp_path_factory.mktemp(stem)
    (d / (stem + ".h")).write_text(header)
    src = d / (stem + (".cpp" if cxx else ".c"))
    src.write_text(source)
    so = d / ("lib%s.so" % stem)
    std = [] if cxx else ["-std=c11"]
    subprocess.run([compiler, *std, "-O1", "-fPIC", "-shared", "-I", str(d), *flags, str(src),
                    "-o", str(so)], check=True)
    return str(so), str(d / (stem + ".h"))


def system_library(soname, header, instantiate=None, package="", **options):
    """bindthem.load of a system library and its unmodified header (read through
    the preprocessor), its BindWarning (what the header declares that is left
    out) silenced; skips the test where the header (Debian: package), cc or
    the library is missing."""
    import ctypes
    import warnings

    import bindthem
    if not os.path.exists(header):
        pytest.skip("%s not found%s" % (header, " (Debian: %s)" % package if package else ""))
    if shutil.which("cc") is None:
        pytest.skip("needs cc (the headers are read through the preprocessor)")
    try:
        ctypes.CDLL(soname)
    except OSError:
        pytest.skip("%s not found" % soname)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        return bindthem.load(soname, header, instantiate, **options)


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
    run([CXX, "-std=c++17", "-O1", "-fPIC", "-shared", src, "-o", lib])
    return lib


def kernel_fixtures(name):
    """Session fixtures `<name>_lib` (tests/data/kernels/<name>.h compiled
    with its .yml, into the session's libdir) and `<name>` (that library
    bound); a conftest.py assigns both to module names to register them."""
    @pytest.fixture(scope="session", name=name + "_lib")
    def lib_path(libdir):
        return compile_cxx(libdir, name, kernel(name + ".h"), kernel(name + ".yml"))

    @pytest.fixture(scope="session", name=name)
    def bound(request):
        import bindthem
        path = request.getfixturevalue(name + "_lib")
        return bindthem.load(path, kernel(name + ".h"), kernel(name + ".yml"))

    return lib_path, bound
