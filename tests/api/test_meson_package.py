"""Kernels in a package built by meson-python: ``python -m bindthem package
flags|sources|library`` give meson what bindthem.setuptools does itself (the
flags, the instantiation source and stub, the library's manifest), meson's
shared_library() compiles, and load_package binds the installed library with
no compiler.

The fast tests run the three steps with a plain compiler command where meson
would run; the wheel test (slow: meson-python, meson, ninja and wheel from
PyPI into a venv cached under ``$BINDTHEM_TEST_CACHE``, default
``~/.cache/bindthem-tests``) builds examples/kernelpkg_meson's wheel, retags
it ``py3-none-<platform>``, checks the library's undefined symbols, installs
it into a fresh venv where no C++ compiler is reachable and runs its tests."""

import glob
import json
import os
import shutil
import sys
import sysconfig
import zipfile

import pytest
from test_fresh_machine import cache_dir
from test_kernel_package import _venv_python, env_with, run

from sources import ROOT
from support import BINDTHEM_PATH

from bindthem._services import loading
from bindthem._services import travel as _travel
from bindthem.stubs import render

EXAMPLE = os.path.join(ROOT, "examples", "kernelpkg_meson")
PKG = os.path.join(EXAMPLE, "mesonkernels")
TOOLS = ["meson-python>=0.16", "meson>=1.1", "ninja", "wheel>=0.40", "numpy"]

USE = """
import numpy as np
import mesonkernels
from mesonkernels import kernels
x = np.arange(4.0)
kernels.scale(x, 2.0)
print(x.tolist(), kernels.dot(x, x), kernels.argmax(x), kernels.__name__)
"""


def step(*args, ok=True, env=None):
    return run([sys.executable, "-m", "bindthem", "package", *args], ok=ok,
               env=env or env_with(BINDTHEM_PATH))


def options(*extra):
    return [os.path.join(PKG, "kernels.h"), "-i", os.path.join(PKG, "instantiate.yml"),
            "--package", "mesonkernels", *extra]


def test_flags_are_builds_and_warn_as_a_build_would():
    env = env_with(BINDTHEM_PATH, CXXFLAGS="-g -DX=1")
    r = step("flags", *options("--openmp"), env=env)
    assert r.stdout.decode().split("\n") == ["-O3", "-g", "-DX=1", "-fopenmp", ""]
    assert r.stderr == b""
    r = step("flags", *options("--cxxflags=-O1", "--extra-cxxflags=-march=x86-64"), env=env)
    assert r.stdout.decode().split() == ["-O1", "-g", "-DX=1", "-march=x86-64"]
    # kernels.h's dot() has a #pragma omp: without --openmp it would run on one thread
    err = r.stderr.decode()
    assert err.startswith("warning: %s:" % os.path.join(PKG, "kernels.h"))
    assert "'#pragma omp parallel for reduction(+ : s)' has no effect" in err


def test_missing_arguments_are_named():
    r = step("sources", *options(), ok=False)
    assert r.returncode == 2 and b"give the folder with -o/--output" in r.stderr
    r = step("library", *options("-o", "x"), ok=False)
    assert r.returncode == 2 and b"give it with --built" in r.stderr
    r = step("flags", os.path.join(PKG, "kernels.h"), ok=False)
    assert r.returncode == 2 and b"--package" in r.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The three steps, with the compiler command meson runs between them
    (the flags to compile and link, -fPIC -shared), into a package folder
    beside copies of the package's own files: an installed package."""
    tmp = tmp_path_factory.mktemp("mesonpkg")
    build, site = tmp / "build", tmp / "site"
    build.mkdir()
    shutil.copytree(PKG, site / "mesonkernels")
    flags = step("flags", *options("--openmp")).stdout.decode().split()
    step("sources", *options("--openmp", "-o", str(build)))
    assert sorted(os.listdir(build)) == ["kernels.bindthem.cpp", "kernels.pyi"]
    linked = str(build / "libkernels-linked.so")
    run([os.environ.get("CXX", "c++")] + flags + ["-fPIC", "-shared",
                                                  str(build / "kernels.bindthem.cpp"),
                                                  "-o", linked])
    out = str(site / "mesonkernels")
    step("library", *options("--openmp", "--built", linked, "-o", out))
    shutil.copy(str(build / "kernels.pyi"), out)
    return str(site)


def test_steps_write_what_load_package_checks(site):
    folder = os.path.join(site, "mesonkernels")
    m = json.load(open(os.path.join(folder, "kernels.bindthem.json")))
    assert (m["header"], m["instantiate"], m["library"], m["module"], m["flags"]) == (
        "kernels.h", "instantiate.yml", "libkernels.so", "mesonkernels.kernels",
        ["-O3", "-fopenmp"])
    assert m["library_sha256"] == loading.sha256_hex(_travel._read(os.path.join(folder,
                                                                          "libkernels.so")))
    # the stub is the one bindthem.setuptools writes (bindthem.stubs)
    assert open(os.path.join(folder, "kernels.pyi")).read() == render(
        os.path.join(PKG, "kernels.h"), os.path.join(PKG, "instantiate.yml"),
        "mesonkernels.kernels")


def test_installed_package_binds_without_a_compiler(site, tmp_path):
    (tmp_path / "bin").mkdir()
    env = env_with(site, BINDTHEM_CACHE=str(tmp_path / "c"), CXX="/nonexistent",
                   CC="/nonexistent", PATH=str(tmp_path / "bin"))
    r = run([sys.executable, "-c", USE], env=env, cwd=site)
    assert r.stdout == b"[0.0, 2.0, 4.0, 6.0] 56.0 3 mesonkernels.kernels\n"
    assert not os.listdir(tmp_path / "bin") and not (tmp_path / "c").exists()


def test_stale_header_is_refused(site, tmp_path):
    dest = str(tmp_path / "site")
    shutil.copytree(site, dest)
    with open(os.path.join(dest, "mesonkernels", "kernels.h"), "a") as f:
        f.write("int extra(int n);\n")
    r = run([sys.executable, "-c", "import mesonkernels"], ok=False, cwd=dest,
            env=env_with(dest, BINDTHEM_CACHE=str(tmp_path / "c")))
    assert b"BindError: package mesonkernels's kernel library" in r.stderr
    assert b"is stale" in r.stderr


def _tools():
    """A venv with meson-python, meson, ninja, wheel and numpy, made once per
    CPython version under the test cache."""
    venv = os.path.join(cache_dir(), "meson-tools-py%d.%d" % sys.version_info[:2])
    py = _venv_python(venv)
    if not os.path.exists(os.path.join(venv, ".complete")):
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", venv])
        run([py, "-m", "pip", "install", "-q"] + TOOLS, timeout=900)
        open(os.path.join(venv, ".complete"), "w").close()
    return venv


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (meson-python from PyPI, a wheel build, "
                    "a venv)")
def test_meson_wheel_installs_and_runs_without_a_compiler(tmp_path, bindthem_wheel):
    pytest.importorskip("build")
    tools = _tools()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BINDTHEM_CACHE")}
    env.update(BINDTHEM_CACHE=str(tmp_path / "cache"),
               PATH=os.pathsep.join([os.path.join(tools, "bin"), env.get("PATH", "")]))
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    dist = tmp_path / "dist"
    # docs/packages.rst's recipe: `python -m build` as it runs by default (an isolated
    # environment: meson-python, meson and ninja from the index, bindthem, the one under
    # test, from a folder of wheels)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(bindthem_wheel, wheels)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)],
        env=dict(env, PIP_FIND_LINKS=str(wheels)), timeout=900)
    (built,) = glob.glob(str(dist / "*.whl"))
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    # meson-python tags a wheel with files in platlib for this CPython; the kernel
    # library links no Python, so it is retagged for every CPython 3 (README.rst)
    run([_venv_python(tools), "-m", "wheel", "tags", "--python-tag", "py3", "--abi-tag",
         "none", "--remove", built], env=env)
    (wheel,) = glob.glob(str(dist / "*.whl"))
    assert os.path.basename(wheel) == "mesonkernels-0.1.0-py3-none-%s.whl" % plat
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        assert "Tag: py3-none-%s" % plat in z.read(
            "mesonkernels-0.1.0.dist-info/WHEEL").decode()
        lib = tmp_path / "libkernels.so"
        lib.write_bytes(z.read("mesonkernels/libkernels.so"))
    assert {"mesonkernels/" + n for n in (
        "__init__.py", "py.typed", "kernels.h", "instantiate.yml", "kernels.pyi",
        "libkernels.so", "kernels.bindthem.json")} == {n for n in names if "dist-info" not in n}
    nm = shutil.which("nm")
    if nm:
        out = run([nm, "-D", "--undefined-only", str(lib)]).stdout.decode().split()
        assert [s for s in out if s.startswith(("Py", "_Py"))] == []
        assert any(s.startswith("GOMP_parallel") for s in out)  # --openmp linked
    # a fresh venv: the wheel and numpy installed, bindthem the one under test,
    # no C++ compiler reachable while it installs and runs
    venv = str(tmp_path / "venv")
    run([sys.executable, "-m", "venv", venv])
    py = _venv_python(venv)
    run([py, "-m", "pip", "install", "-q", "numpy"], env=env, timeout=600)
    nobin = tmp_path / "nobin"
    nobin.mkdir()
    bare = dict(env, CXX="/nonexistent", CC="/nonexistent", PYTHONPATH=BINDTHEM_PATH,
                PATH=os.pathsep.join([os.path.join(venv, "bin"), str(nobin)]))
    run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], env=bare)
    r = run([py, "-c", USE], env=bare, cwd=str(tmp_path))
    assert r.stdout == b"[0.0, 2.0, 4.0, 6.0] 56.0 3 mesonkernels.kernels\n"
    code = ("import sys, runpy; m = runpy.run_path(sys.argv[1]); "
            "[f() for n, f in sorted(m.items()) if n.startswith('test_')]; print('ok')")
    r = run([py, "-c", code, os.path.join(EXAMPLE, "tests", "test_kernels.py")], env=bare,
            cwd=str(tmp_path))
    assert r.stdout == b"ok\n"
    assert not (tmp_path / "cache").exists() or not os.listdir(tmp_path / "cache")
