"""The public API is annotated: a user's ``mypy --strict`` sees typed calls
(no "call to untyped function"), and wrong argument types are caught."""

import os
import site
import subprocess
import sys

import pytest

from cached import mypy_cache
from support import BINDTHEM_PATH

GOOD = '''\
import pathlib
from typing import Any

import bindthem
import bindthem.cuda


def use() -> None:
    lib: bindthem.Library = bindthem.build(pathlib.Path("k.h"), "k.yml", name="k",
                                           extra_cxxflags=["-g"], openmp=True, gil="keep")
    lib2: bindthem.Library = bindthem.load("libk.so", pathlib.Path("k.h"), None, strict=True,
                                           gil={"f": "release"}, copy_const=True)
    meta = bindthem.parse_header("k.h", "k.yml")
    names: list[str] = [f["name"] for f in meta["functions"]]
    klib: bindthem.Library = bindthem.cuda.build("k.cuh", arch=[80, "sm_90"], cxxflags="-O3",
                                                  extra_cxxflags=["-lineinfo"])
    kmod: bindthem.cuda.Library = bindthem.cuda.load(b"\\x00", "k.cuh")
    owner: bindthem.Library | None = bindthem.library.library_of(klib.axpy)
    dev: Any = bindthem.cuda.to_device([1.0], device=0)
    with bindthem.options(gil="release", copy_const=False):
        pass
    print(lib, lib2, names, klib, kmod, owner, dev)
'''

BAD = '''\
import bindthem


def use() -> None:
    bindthem.build("k.h", gil="sometimes")
    bindthem.load("libk.so", "k.h", strict="yes")
    bindthem.parse_header(42)
'''


def _mypy(tmp_path, name, text):
    pytest.importorskip("mypy")
    f = tmp_path / name
    f.write_text(text)
    env = dict(os.environ)
    installed = {os.path.realpath(p) for p in site.getsitepackages() + [site.getusersitepackages()]}
    if os.path.realpath(BINDTHEM_PATH) not in installed:  # an in-place build
        env["MYPYPATH"] = BINDTHEM_PATH  # (mypy finds installed packages itself)
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-color-output",
                           "--cache-dir", mypy_cache("api-" + name), str(f)],
                          capture_output=True, text=True, env=env, timeout=600)


def test_public_api_calls_type_check_strictly(tmp_path):
    r = _mypy(tmp_path, "good.py", GOOD)
    assert r.returncode == 0, r.stdout + r.stderr


def test_wrong_argument_types_are_caught(tmp_path):
    r = _mypy(tmp_path, "bad.py", BAD)
    lines = {int(line.split(":")[1]) for line in r.stdout.splitlines() if ": error:" in line}
    assert lines == {5, 6, 7}, r.stdout
