"""Kernels in a package, bound on first use (``KernelLibrary(..., lazy=True)``,
bindthem.package.write_lazy_module): the build writes the kernel module
itself; importing it (and its package) imports no bindthem and loads no
library; the first call binds with every check of load_package, and then the
bound Functions replace the stand-ins where the package put them."""

import os
import subprocess
import sys
import textwrap

import pytest

from support import TOTAL_SCALE_H, python_env

from bindthem import BindError
from bindthem.package import lazy_module_text, package_library

HEADER = "#pragma once\n" + TOTAL_SCALE_H

YAML = """\
- functions: [total, scale]
  types: [[double], [int]]
"""

INIT = '"""A package whose kernels bind on first use."""\nfrom .kernels import scale, total\n'


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("lazy")
    pkg = root / "site" / "lazypkg"
    pkg.mkdir(parents=True)
    (pkg / "kernels.h").write_text(HEADER)
    (pkg / "instantiate.yml").write_text(YAML)
    (pkg / "__init__.py").write_text(INIT)
    env = dict(os.environ, BINDTHEM_CACHE=str(root / "cache"))
    old = os.environ.copy()
    os.environ.update(env)
    try:
        written = package_library(str(pkg), "kernels.h", "instantiate.yml",
                                  module="lazypkg.kernels", package="lazypkg", lazy=True)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert str(pkg / "kernels.py") in written
    return str(root / "site")


def run(site, code, ok=True):
    env = python_env()
    env["PYTHONPATH"] = os.pathsep.join([site, env["PYTHONPATH"]])
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, env=env, cwd=site, timeout=300)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def test_import_binds_nothing_and_the_first_call_binds(site):
    r = run(site, """
        import sys
        import lazypkg
        maps = open("/proc/self/maps").read()
        print("bindthem" in sys.modules, "libkernels" in maps)
        from lazypkg.kernels import total as early   # a stand-in, kept by the caller
        print(repr(lazypkg.total).startswith("<kernel lazypkg.kernels.total, bound on first use"),
              hasattr(early, "_function"), lazypkg.kernels._library,  # neither binds
              "libkernels" in open("/proc/self/maps").read())
        import numpy as np
        print(lazypkg.total(np.arange(5.0)))
        import bindthem
        print(isinstance(lazypkg.total, bindthem.Function),
              isinstance(lazypkg.kernels.total, bindthem.Function),
              isinstance(lazypkg.scale, bindthem.Function),
              lazypkg.total is lazypkg.kernels.total)
        print(early(np.arange(4, dtype=np.int32)), early.__name__,
              early.__doc__ == lazypkg.total.__doc__)
        print(sys.modules["lazypkg.kernels"] is lazypkg.kernels,
              "libkernels" in open("/proc/self/maps").read())
        print(lazypkg.kernels.metadata["header"].endswith("kernels.h"))
    """)
    assert r.stdout.split("\n")[:7] == ["False False", "True False None False", "10.0",
                                        "True True True True",
                                        "6 total True", "True True", "True"]


def test_a_stale_header_fails_at_the_first_call(site, tmp_path):
    import shutil
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    h = copy / "lazypkg" / "kernels.h"
    h.write_text(h.read_text() + "\n// edited after the build\n")
    r = run(str(copy), """
        import numpy as np
        import lazypkg   # imports: nothing is read yet
        for _ in range(2):
            try:
                lazypkg.total(np.arange(3.0))
            except Exception as e:
                print(type(e).__name__, "stale" in str(e))
    """)
    assert r.stdout.split("\n")[:2] == ["BindError True", "BindError True"]


def test_a_stand_in_pickles_as_its_bound_function(site):
    """Pickled before the first call: the pickle is the bound Function's (the
    package name and the library's identity), bound again where it is loaded."""
    r = run(site, """
        import pickle
        import lazypkg
        print(pickle.dumps(lazypkg.total).hex())
    """)
    r = run(site, """
        import pickle, sys
        import numpy as np
        f = pickle.loads(bytes.fromhex(%r))
        print(f(np.arange(4.0)), type(f).__name__)
    """ % r.stdout.strip())
    assert r.stdout.split()[0] == "6.0" and r.stdout.split()[1].endswith("Function")


def test_threads_bind_once(site):
    r = run(site, """
        import threading
        import numpy as np
        import lazypkg
        from lazypkg import kernels
        stand_ins = [lazypkg.total, lazypkg.scale]
        out, errors = [], []
        def go(i):
            try:
                x = np.ones(3)
                stand_ins[i % 2](x, 2.0) if i % 2 else out.append(stand_ins[0](x))
            except Exception as e:
                errors.append(e)
        ts = [threading.Thread(target=go, args=(i,)) for i in range(8)]
        [t.start() for t in ts]; [t.join() for t in ts]
        print(errors, out, kernels._library is kernels._bound())
    """)
    assert r.stdout.strip() == "[] [3.0, 3.0, 3.0, 3.0] True"


def test_kernel_names_that_clash_with_the_module_are_refused():
    with pytest.raises(BindError, match="_bound"):
        lazy_module_text("p.k", "k.h", None, ["_bound", "f"])
    # every name the module's own code stores, read from the template itself: its
    # loop variable too (deleted after the loop, with a kernel of that name)
    for own in ("_HEADER", "_INSTANTIATE", "_library", "_Kernel", "_n"):
        with pytest.raises(BindError, match="kernel %s would replace" % own):
            lazy_module_text("p.k", "k.h", None, ["f", own])
    with pytest.raises(BindError, match="module p.k.x as a file of its package"):
        from bindthem.package import _lazy_module_path
        _lazy_module_path("/tmp", "p", "p.k.x")


def test_the_build_system_step_writes_the_module_too(tmp_path):
    """``python -m bindthem package sources --lazy`` (meson's recipe) writes the
    same module as ``KernelLibrary(..., lazy=True)``."""
    (tmp_path / "kernels.h").write_text(HEADER)
    (tmp_path / "instantiate.yml").write_text(YAML)
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "bindthem", "package", "sources",
                        str(tmp_path / "kernels.h"), "-i", str(tmp_path / "instantiate.yml"),
                        "--package", "lazypkg", "--lazy", "-o", str(out)],
                       capture_output=True, text=True, env=python_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == ["kernels.bindthem.cpp", "kernels.py", "kernels.pyi"]
    assert (out / "kernels.py").read_text() == lazy_module_text(
        "lazypkg.kernels", "kernels.h", "instantiate.yml", ["scale", "total"])
