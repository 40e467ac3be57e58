"""What the API's tests (tests/api) share beyond tests/conftest.py:
`symbols_lib`, tests/data/kernels/symbols.h compiled with symbols_ok.yml
(plain() and tmpl<int> only: inl is inline (unused, so not emitted), stat is
static, tmpl<double> is not instantiated), for bindthem.load's missing
symbols; and bindthem's own sdist and the wheel pip builds from it
(`bindthem_sdist`, `bindthem_wheel`), each made once per test run, however
many pytest-xdist workers ask, for the packaging tests (test_packaging,
test_wheel, test_kernel_package)."""

import glob
import importlib.util
import os
import subprocess
import sys

import pytest

from sources import ROOT, compile_cxx, kernel, once_per_run, source_tree_lock


@pytest.fixture(scope="session")
def symbols_lib(libdir):
    return compile_cxx(libdir, "symbols", kernel("symbols.h"), kernel("symbols_ok.yml"))


def _has_build():
    """pypa/build installed (not a source tree's build/ folder, which imports
    as a namespace package when the tree is on sys.path)."""
    try:
        return importlib.util.find_spec("build.__main__") is not None
    except ImportError:
        return False


def _run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, "%s\n%s%s" % (" ".join(cmd), r.stdout[-3000:], r.stderr[-3000:])


def _make_sdist(out):
    """bindthem's sdist, as `python -m build --sdist` makes it (no isolation:
    the test venv has setuptools; `setup.py sdist` where build is missing)."""
    if _has_build():
        cmd = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(out), ROOT]
    else:
        cmd = [sys.executable, "setup.py", "-q", "sdist", "-d", str(out)]
    with source_tree_lock():  # it writes bindthem.egg-info into the source tree
        _run(cmd, cwd=ROOT, timeout=300)
    (path,) = glob.glob(os.path.join(str(out), "bindthem-*.tar.gz"))
    return path


@pytest.fixture(scope="session")
def bindthem_sdist(tmp_path_factory):
    """bindthem's sdist (its path)."""
    return once_per_run(tmp_path_factory, "bindthem-sdist", _make_sdist)


@pytest.fixture(scope="session")
def bindthem_wheel(tmp_path_factory, bindthem_sdist):
    """The wheel `pip wheel` builds from bindthem's sdist, in an isolated build
    environment (setuptools and NumPy from the index), as `pip install` of the
    sdist would (its path): one compile of the extension for the tests that
    install it (test_packaging's venv, test_wheel's auditwheel, test_kernel_package's
    `python -m build`, which finds it through PIP_FIND_LINKS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BINDTHEM_CACHE")}

    def make(out):
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out),
              bindthem_sdist], env=env, cwd=str(out), timeout=600)
        (path,) = glob.glob(os.path.join(str(out), "bindthem-*.whl"))
        return path

    return once_per_run(tmp_path_factory, "bindthem-wheel", make)
