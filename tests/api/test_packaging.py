"""The sdist carries everything a build from it and its test suite need.

Built with ``python -m build --sdist --no-isolation`` when `build` is
installed, else ``python setup.py sdist`` (tests/api/conftest.py's
`bindthem_sdist`, made once per test run). The install from it into a fresh
venv (the wheel pip builds from the sdist in an isolated environment,
`bindthem_wheel`, shared with test_wheel; about 35 s, with the index
reachable) runs only with BINDTHEM_SLOW_TESTS=1."""

import glob
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from sources import ROOT

import bindthem

# bindthem.__version__ is the one place the version is written (pyproject.toml reads it).
PREFIX = "bindthem-%s/" % bindthem.__version__


@pytest.fixture(scope="module")
def sdist(bindthem_sdist):
    """bindthem's sdist (tests/api/conftest.py: made once per test run)."""
    return bindthem_sdist


@pytest.fixture(scope="module")
def members(sdist):
    with tarfile.open(sdist) as tf:
        names = [m.name for m in tf.getmembers() if m.isfile()]
    assert all(n.startswith(PREFIX) for n in names)
    return {n[len(PREFIX):] for n in names}


def _rel(pattern):
    return {os.path.relpath(p, ROOT)
            for p in glob.glob(os.path.join(ROOT, pattern), recursive=True)}


def test_sdist_has_sources(members):
    want = _rel("csrc/*/*.c") | _rel("csrc/*/*.cpp") | _rel("csrc/*/*.h") | _rel("csrc/*.md")
    want |= _rel("bindthem/*.py") | {p for p in _rel("examples/**/*") if os.path.isfile(
        os.path.join(ROOT, p)) and "__pycache__" not in p}
    want |= _rel("bindthem/**/*.py") | _rel("bindthem/_services/cuda/*.cuh")
    assert "bindthem/_services/cuda/prelude.cuh" in want
    want |= {"bindthem/py.typed", "bindthem/README.md", "README.rst", "pyproject.toml",
             "setup.py", "MANIFEST.in"}
    # the documentation site and the image it shows (tests/api/test_docs.py builds it)
    want |= _rel("docs/*.rst") | _rel("docs/*.py") | {"benchmarks/callgrind_instructions.png"}
    assert len(_rel("csrc/*/*.c")) >= 15 and "examples/myheader.h" in want
    assert sorted(want - members) == []
    assert "bindthem/_core.pyi" in members


def test_sdist_metadata_has_the_package_version(sdist):
    with tarfile.open(sdist) as tf:
        info = tf.extractfile(PREFIX + "PKG-INFO").read().decode()
    assert "\nVersion: %s\n" % bindthem.__version__ in info
    assert os.path.basename(sdist) == "bindthem-%s.tar.gz" % bindthem.__version__


def test_sdist_has_no_build_products(members):
    bad = [m for m in members if m.endswith((".so", ".o", ".pyc")) or m.startswith(
        (".venv/", "build/", ".git/"))]
    assert bad == []


def test_sdist_has_tracked_test_files(members):
    """Every test file git tracks is shipped, so the suite runs from the sdist."""
    # .git is a file in a worktree
    if not shutil.which("git") or not os.path.exists(os.path.join(ROOT, ".git")):
        pytest.skip("not a git checkout")
    r = subprocess.run(["git", "ls-files", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    tracked = {f for f in r.stdout.split() if os.path.exists(os.path.join(ROOT, f))}
    assert "tests/data/headers/dialect.h" in tracked
    assert sorted(tracked - members) == []


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (pip install from the index, ~35 s)")
def test_pip_install_sdist(sdist, bindthem_wheel, tmp_path):
    """The sdist builds (pip wheel, isolated: bindthem_wheel) and what it builds
    installs into a fresh venv and works there."""
    assert os.path.basename(bindthem_wheel).startswith("bindthem-%s-" % bindthem.__version__)
    venv = str(tmp_path / "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=120)
    py = os.path.join(venv, "bin", "python")
    r = subprocess.run([py, "-m", "pip", "install", "-q", bindthem_wheel], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    code = ("import bindthem, importlib.metadata, sys; "
            "m = bindthem.parse_header(sys.argv[1], sys.argv[2]); "
            "print(m['functions'][0]['overloads'][0]['symbol']); "
            "print(bindthem.__version__, importlib.metadata.version('bindthem'))")
    r = subprocess.run([py, "-c", code, os.path.join(ROOT, "examples", "myheader.h"),
                        os.path.join(ROOT, "examples", "instantiate.yml")],
                       capture_output=True, text=True, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stderr
    symbol, versions = r.stdout.splitlines()
    assert symbol == "_Z6myfuncIidSt7complexIdEEiPKT_iPT0_iPT1_id"
    assert versions == "%s %s" % (bindthem.__version__, bindthem.__version__)
