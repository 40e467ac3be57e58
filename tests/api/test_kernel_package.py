"""Kernels in a package: bindthem.setuptools compiles examples/kernelpkg's
header into the package when it is built, bindthem.load_package binds it at
import with no compiler, checks it against what it was built from, and its
pickles bind the unpickling side's own installed copy.

The wheel test (slow: venvs of two other CPythons, pip, a bindthem build for
each) builds the example's wheel, checks its tag and the library's
undefined symbols, installs it where no C++ compiler is reachable, and runs
its tests and mypy on its stub."""

import glob
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import types
import zipfile

import pytest

from cached import mypy_cache
from sources import ROOT
from support import python_env

import bindthem
from bindthem._services import loading
from bindthem._services import travel as _travel

EXAMPLE = os.path.join(ROOT, "examples", "kernelpkg")
PYTHONS = ["/root/.pyenv/versions/3.10.13/bin/python3", "/root/.pyenv/versions/3.12.1/bin/python3"]

USE = """
import pickle, sys
import numpy as np
import kernelpkg
from kernelpkg import kernels
x = np.arange(4.0); y = np.ones(4)
kernels.axpy(x, y, 2.0)
print(y.tolist(), kernels.total(np.arange(5, dtype=np.int32)), kernels.count_above(x, 1.5))
print(kernels.__name__, sys.modules["kernelpkg.kernels"] is kernels)
sys.stdout.flush()
sys.stdout.buffer.write(pickle.dumps(kernels.total))
"""


def run(cmd, ok=True, **kw):
    kw.setdefault("timeout", 300)
    r = subprocess.run(cmd, capture_output=True, **kw)
    if ok:
        assert r.returncode == 0, "%s\n%s%s" % (" ".join(map(str, cmd)), r.stdout[-3000:],
                                                r.stderr[-3000:])
    return r


def env_with(path, **extra):
    """os.environ with path, then the folder this bindthem is imported from
    (the checkout's in-place build, an installed copy or an ASan build), first
    on PYTHONPATH."""
    env = python_env(**extra)
    env["PYTHONPATH"] = os.pathsep.join([path, env["PYTHONPATH"]])
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """examples/kernelpkg after `setup.py build_py`: its build/lib folder."""
    tmp = tmp_path_factory.mktemp("kernelpkg")
    src = tmp / "src"
    shutil.copytree(EXAMPLE, src)
    env = env_with(str(src), BINDTHEM_CACHE=str(tmp / "cache"))
    run([sys.executable, "setup.py", "-q", "build_py"], cwd=str(src), env=env)
    return str(src / "build" / "lib")


@pytest.fixture
def pkg(built, tmp_path):
    """A private copy of the built package, to damage."""
    dest = tmp_path / "site"
    shutil.copytree(built, dest)
    return str(dest)


def use(site, code=USE, **kw):
    return run([sys.executable, "-c", code], env=env_with(site, BINDTHEM_CACHE=site + ".cache"),
               cwd=site, **kw)


def test_compile_library_is_public():
    assert "compile_library" in bindthem.__all__ and "load_package" in bindthem.__all__
    from bindthem import compile_library

    assert bindthem.compile_library is compile_library


def test_build_places_library_stub_and_manifest(built):
    folder = os.path.join(built, "kernelpkg")
    assert sorted(os.listdir(folder)) == sorted([
        "__init__.py", "instantiate.yml", "kernels.bindthem.json", "kernels.h", "kernels.pyi",
        "libkernels.so", "py.typed"])
    m = json.load(open(os.path.join(folder, "kernels.bindthem.json")))
    assert m["library"] == "libkernels.so" and m["flags"] == ["-O3"]
    assert m["module"] == "kernelpkg.kernels"
    assert m["library_sha256"] == loading.sha256_hex(_travel._read(os.path.join(folder,
                                                                          "libkernels.so")))
    stub = open(os.path.join(folder, "kernels.pyi")).read()
    assert "def count_above(x: NDArray[numpy.float64], threshold: float) -> int" in stub.replace(
        "numpy.typing.", "")


def test_library_links_no_python(built):
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    out = run([nm, "-D", "--undefined-only", os.path.join(built, "kernelpkg",
                                                          "libkernels.so")]).stdout.decode()
    assert "axpy" not in out  # the kernels are defined here, not imported
    assert [s for s in out.split() if s.startswith(("Py", "_Py"))] == []


def test_import_binds_and_computes(pkg):
    r = use(pkg)
    lines = r.stdout.split(b"\n", 2)
    assert lines[0] == b"[1.0, 3.0, 5.0, 7.0] 10 2"
    assert lines[1] == b"kernelpkg.kernels True"


def test_import_needs_no_compiler(pkg, tmp_path):
    (tmp_path / "bin").mkdir()
    env = env_with(pkg, BINDTHEM_CACHE=str(tmp_path / "c"), CXX="/nonexistent",
                   PATH=str(tmp_path / "bin"))
    r = run([sys.executable, "-c", USE], env=env, cwd=pkg)
    assert r.stdout.startswith(b"[1.0, 3.0, 5.0, 7.0] 10 2\n")


def _error(site):
    r = use(site, "import kernelpkg", ok=False)
    assert r.returncode == 1
    return r.stderr.decode().strip().splitlines()[-1]


def test_edited_header_is_refused(pkg):
    h = os.path.join(pkg, "kernelpkg", "kernels.h")
    with open(h, "a") as f:
        f.write("int extra(int n);\n")
    msg = _error(pkg)
    assert msg.startswith("bindthem.errors.BindError: package kernelpkg's kernel library")
    assert "is stale" in msg and h in msg and "pip install ." in msg
    # the remedy for each reader: a user reinstalls (or reports), the author rebuilds
    assert ("if you use kernelpkg, reinstall it (`pip install --force-reinstall kernelpkg`) or "
            "report this to its authors; if you develop it, rebuild") in msg, msg


def test_editable_install_rebuilds_a_stale_library_on_import(tmp_path):
    """An editable install (setuptools' editable_wheel runs build_py in editable
    mode: the library is written into the source folder) whose header is then
    edited: the next import rebuilds the library with the build's options,
    says so on stderr, and binds the edited header; the one after is quiet.
    A wheel's manifest records no options: there the edit stays refused
    (test_edited_header_is_refused)."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    env = env_with(str(src), BINDTHEM_CACHE=str(tmp_path / "cache"))
    run([sys.executable, "setup.py", "-q", "editable_wheel", "--dist-dir",
         str(tmp_path / "dist")], cwd=str(src), env=env)
    m = json.load(open(src / "kernelpkg" / "kernels.bindthem.json"))
    assert m["rebuild"]["package"] == "kernelpkg" and m["rebuild"]["openmp"] is False
    code = "from kernelpkg import kernels; print(hasattr(kernels, 'plus_one'))"
    r = run([sys.executable, "-c", code], env=env, cwd=str(tmp_path))
    assert r.stdout == b"False\n" and r.stderr == b""
    with open(src / "kernelpkg" / "kernels.h", "a") as f:
        f.write("\n// One more than n.\nint plus_one(const int n) { return n + 1; }\n")
    code = "from kernelpkg import kernels; print(kernels.plus_one(41))"
    r = run([sys.executable, "-c", code], env=env, cwd=str(tmp_path))
    assert r.stdout == b"42\n", r.stderr
    assert r.stderr.decode().startswith(
        "bindthem: %s or %s changed since the editable install of kernelpkg was built; "
        "rebuilding its kernel library\n" % (src / "kernelpkg" / "kernels.h",
                                              src / "kernelpkg" / "instantiate.yml")), r.stderr
    r = run([sys.executable, "-c", code], env=env, cwd=str(tmp_path))
    assert r.stdout == b"42\n" and r.stderr == b""
    assert json.load(open(src / "kernelpkg" / "kernels.bindthem.json"))["rebuild"] == m["rebuild"]


def test_edited_yaml_is_refused(pkg):
    y = os.path.join(pkg, "kernelpkg", "instantiate.yml")
    text = open(y).read()
    open(y, "w").write(text.replace("    - [int]\n", "    - [long]\n"))
    msg = _error(pkg)
    assert "is stale" in msg and y in msg


def test_replaced_library_is_refused(pkg, tmp_path):
    lib = os.path.join(pkg, "kernelpkg", "libkernels.so")
    with open(lib, "ab") as f:
        f.write(b"\0")
    msg = _error(pkg)
    assert "is not the one built with it" in msg and lib in msg


def test_other_files_than_built_are_refused(pkg):
    init = os.path.join(pkg, "kernelpkg", "__init__.py")
    text = open(init).read()
    open(init, "w").write(text.replace('"kernels.h", "instantiate.yml"', '"kernels.h"'))
    msg = _error(pkg)
    assert "was built from header 'kernels.h' and instantiate.yml 'instantiate.yml'" in msg


def test_missing_manifest_says_how_to_build(pkg):
    os.remove(os.path.join(pkg, "kernelpkg", "kernels.bindthem.json"))
    msg = _error(pkg)
    assert "has no compiled kernel library for kernels.h" in msg
    assert "KernelLibrary('kernelpkg', 'kernels.h', 'instantiate.yml')" in msg


def test_damaged_manifest_is_refused(pkg):
    open(os.path.join(pkg, "kernelpkg", "kernels.bindthem.json"), "w").write("{\"format\": 1")
    assert "is not a bindthem kernel manifest" in _error(pkg)


def test_paths_outside_the_package_are_refused():
    for bad in ("../kernels.h", "/etc/passwd", "a//b.h"):
        with pytest.raises(bindthem.BindError, match="not a path inside the package"):
            bindthem.load_package("json", bad)
    with pytest.raises(bindthem.BindError, match="no installed package 'no_such_pkg_x'"):
        bindthem.load_package("no_such_pkg_x", "k.h")


def test_pickle_binds_the_workers_own_copy(built, pkg, tmp_path, monkeypatch):
    carried = use(built).stdout.split(b"\n", 2)[2]  # with the library's bytes
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")
    data = use(built).stdout.split(b"\n", 2)[2]  # the package's name and the SHA-256 alone
    code = ("import pickle, sys, numpy as np; f = pickle.loads(sys.stdin.buffer.read()); "
            "print(f(np.arange(5.0)), 'kernelpkg' in sys.modules, f.library.__file__)")
    r = run([sys.executable, "-c", code], input=data,
            env=env_with(pkg, BINDTHEM_CACHE=str(tmp_path / "c")), cwd=str(tmp_path))
    total, imported, path = r.stdout.decode().split()
    assert (total, imported) == ("10.0", "False")  # bound without running the package
    assert path == os.path.join(pkg, "kernelpkg", "libkernels.so")
    # a worker without the package, and one with another build of it
    r = run([sys.executable, "-c", code], input=data, ok=False, cwd=str(tmp_path),
            env=env_with(str(tmp_path), BINDTHEM_CACHE=str(tmp_path / "c")))
    assert "PickleError: cannot unpickle 'kernelpkg.kernels'" in r.stderr.decode()
    assert "package kernelpkg, which is not installed here" in r.stderr.decode()
    with open(os.path.join(pkg, "kernelpkg", "libkernels.so"), "ab") as f:
        f.write(b"\0")
    r = run([sys.executable, "-c", code], input=data, ok=False, cwd=str(tmp_path),
            env=env_with(pkg, BINDTHEM_CACHE=str(tmp_path / "c")))
    assert "another version of kernelpkg is installed" in r.stderr.decode()
    # the pickle with the library: the worker with another build of the package binds
    # its own copy only if it is the same; else, as one without the package, the library
    # the pickle carries (the builder's file where it hashes alike, else its bytes)
    for where in (pkg, str(tmp_path)):
        r = run([sys.executable, "-c", code], input=carried, cwd=str(tmp_path),
                env=env_with(where, BINDTHEM_CACHE=str(tmp_path / "c2")))
        total, imported, path = r.stdout.decode().split()
        assert (total, imported) == ("10.0", "False"), r.stdout
        assert path != os.path.join(pkg, "kernelpkg", "libkernels.so")


def test_forged_package_pickles_are_refused(built):
    data = use(built).stdout.split(b"\n", 2)[2]
    fields = _fields(data)
    for change, what in [({"package": "../x"}, "the package"),
                         ({"package": None}, "the package"),
                         ({"library": "../libc.so"}, "the library's path in the package"),
                         ({"library": "/lib/libc.so.6"}, "the library's path in the package"),
                         ({"library_hash": "0" * 63}, "the shared library's SHA-256"),
                         ({"library_hash": "0" * 64, "binary": None}, "key"),
                         ({"library_hash": "0" * 64}, "is not the library the pickle names")]:
        with pytest.raises(bindthem.PickleError, match=what):
            _travel.check(dict(fields, **change))
    load_fields = dict(fields, kind="load", package="kernelpkg")
    with pytest.raises(bindthem.PickleError, match="only a packaged Library carries one"):
        _travel.check(load_fields)
    assert _travel.check(fields).key == fields["key"]


def _fields(data):
    """The Source fields inside a pickle of a packaged function."""
    found = []

    # the pickle names bindthem._unpickle's entry points by module and name
    # (bindthem._base.byname): a stand-in module in its place
    entry = types.SimpleNamespace(source=lambda f: found.append(f) or f,
                                  function=lambda s, n: None)

    class Finder(pickle.Unpickler):
        def find_class(self, module, name):
            if (module, name) == ("importlib", "import_module"):
                return lambda m: entry if m == "bindthem._unpickle" else __import__(m)
            return super().find_class(module, name)

    Finder(__import__("io").BytesIO(data)).load()
    (fields,) = found
    assert fields["kind"] == "package" and fields["package"] == "kernelpkg"
    return fields


def _venv_python(venv):
    return os.path.join(venv, "bin", "python")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("BINDTHEM_SLOW_TESTS"),
                    reason="set BINDTHEM_SLOW_TESTS=1 (venvs of two CPythons, pip, ~2 min)")
def test_wheel_installs_and_runs_on_two_pythons_without_a_compiler(tmp_path, bindthem_sdist,
                                                                   bindthem_wheel):
    pythons = [p for p in PYTHONS if os.path.exists(p)]
    if len(pythons) < 2:
        pytest.skip("needs CPython 3.10 and 3.12 at %s" % ", ".join(PYTHONS))
    pytest.importorskip("build")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BINDTHEM_CACHE")}
    env["BINDTHEM_CACHE"] = str(tmp_path / "cache")
    # the build, docs/packages.rst's recipe: `python -m build` as it runs by default (an
    # isolated environment, whose pip finds the build requirement bindthem, which PyPI
    # does not hold, in a folder of wheels: PIP_FIND_LINKS; setuptools from the index)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    shutil.copy(bindthem_wheel, wheels)
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)],
        env=dict(env, PIP_FIND_LINKS=str(wheels)), timeout=600)
    (wheel,) = glob.glob(str(dist / "*.whl"))
    assert os.path.basename(wheel) == "kernelpkg-0.1.0-py3-none-linux_x86_64.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        wheel_meta = z.read("kernelpkg-0.1.0.dist-info/WHEEL").decode()
    assert {"kernelpkg/libkernels.so", "kernelpkg/kernels.pyi", "kernelpkg/kernels.h",
            "kernelpkg/instantiate.yml", "kernelpkg/kernels.bindthem.json",
            "kernelpkg/py.typed", "kernelpkg/__init__.py"} <= names
    assert "Root-Is-Purelib: false" in wheel_meta and "Tag: py3-none-linux_x86_64" in wheel_meta
    # bindthem itself for each Python, from its sdist (tests/api/conftest.py; a C
    # compiler is needed for that)
    bt_sdist = bindthem_sdist
    nobin = tmp_path / "nobin"
    nobin.mkdir()
    for python in pythons:
        venv = str(tmp_path / ("venv" + os.path.basename(os.path.dirname(os.path.dirname(
            python)))))
        run([python, "-m", "venv", venv])
        py = _venv_python(venv)
        run([py, "-m", "pip", "install", "-q", bt_sdist], env=env, timeout=600)
        # the package: no C++ compiler reachable while it installs and runs
        bare = dict(env, CXX="/nonexistent", CC="/nonexistent",
                    PATH=os.pathsep.join([os.path.join(venv, "bin"), str(nobin)]))
        run([py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], env=bare)
        r = run([py, "-c", USE], env=bare, cwd=str(tmp_path))
        assert r.stdout.startswith(b"[1.0, 3.0, 5.0, 7.0] 10 2\nkernelpkg.kernels True\n")
        tests = os.path.join(EXAMPLE, "tests", "test_kernels.py")
        code = ("import sys, runpy; m = runpy.run_path(sys.argv[1]); "
                "[f() for n, f in sorted(m.items()) if n.startswith('test_')]; print('ok')")
        r = run([py, "-c", code, tests], env=bare, cwd=str(tmp_path))
        assert r.stdout == b"ok\n"
        # the stub, as a user's mypy sees the installed package: a good use passes, a bad
        # one fails on its line (one mypy run for both files)
        bad = tmp_path / "bad_use.py"
        bad.write_text("from kernelpkg import kernels\nkernels.total('x')\n")
        r = run([sys.executable, "-m", "mypy", "--strict", "--python-executable", py,
                 "--cache-dir", mypy_cache("kernelpkg-" + os.path.basename(venv)),
                 os.path.join(EXAMPLE, "tests", "typed_use.py"), str(bad)],
                ok=False, env=env, cwd=str(tmp_path))
        out = r.stdout.decode()
        errors = [line for line in out.splitlines() if ": error:" in line]
        assert r.returncode == 1 and errors, out + r.stderr.decode()
        assert all(re.match(r"(.*/)?bad_use\.py:2: error: ", line) for line in errors), out
        assert "No overload variant of \"total\"" in out
