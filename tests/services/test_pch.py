"""The precompiled prelude: a cold g++ build reads bindthem's prelude (the
standard headers every unit includes) from a precompiled header kept in the
build cache, made once per compiler and flags; the kernels it builds call the
same as without it; other compilers, $BINDTHEM_NO_PCH and a precompiled header
that is gone all build from the prelude's text."""

import glob
import importlib
import os
import shutil

import numpy as np
import pytest

from support import TOTAL_SCALE_H

import bindthem

build_module = importlib.import_module("bindthem._services.compile.kernels")  # the one unit
units_module = importlib.import_module("bindthem._services.compile.units")  # units, prelude
cache_module = importlib.import_module("bindthem._services.cache")
entry_module = importlib.import_module("bindthem._services.cache._entry")  # _compile runs

HEADER = TOTAL_SCALE_H

YAML = """\
instantiate:
  - functions: [total, scale]
    types: [[int], [long], [float], [double]]
"""

FLAGS = ["-O1"]


@pytest.fixture
def kernels(tmp_path):
    h, y = tmp_path / "pch.h", tmp_path / "pch.yml"
    h.write_text(HEADER)
    y.write_text(YAML)
    return str(h), str(y)


@pytest.fixture
def commands(monkeypatch):
    """Every compiler command the build runs, in order."""
    seen = []
    real = build_module.run_commands

    def spy(cmds, what, status):
        seen.extend(cmds)
        return real(cmds, what, status)

    monkeypatch.setattr(build_module, "run_commands", spy)  # the one unit
    monkeypatch.setattr(units_module, "run_commands", spy)  # the parallel units
    monkeypatch.setattr(entry_module, "run_commands", spy)  # the precompile (a cache entry)
    monkeypatch.delenv(units_module.PCH_ENV, raising=False)
    return seen


def _includes(cmds):
    return [c[c.index("-include") + 1] for c in cmds if "-include" in c]


def _computes(lib):
    x = np.arange(1.0, 6.0)
    assert lib.total(x) == 15.0
    assert lib.total(np.arange(5, dtype=np.int32)) == 10
    lib.scale(x, 2.0)
    np.testing.assert_array_equal(x, [2.0, 4.0, 6.0, 8.0, 10.0])


def _prelude_entries(cache):
    return sorted(glob.glob(os.path.join(cache, "prelude-*")))


@pytest.mark.parametrize("jobs", [1, 2])
def test_gxx_units_read_the_precompiled_prelude(kernels, commands, tmp_path, jobs):
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    cache = str(tmp_path / "cache")
    lib = bindthem.build(*kernels, cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=jobs)
    _computes(lib)
    [entry] = _prelude_entries(cache)
    [gch] = glob.glob(os.path.join(entry, "prelude-*.hpp.gch"))
    units = [c for c in commands if any(a.endswith(".cpp") for a in c)]
    assert len(units) == jobs
    assert _includes(units) == [gch[:-len(".gch")]] * jobs
    precompile = [c for c in commands if "c++-header" in c]
    assert len(precompile) == 1 and "-O1" in precompile[0] and "-fPIC" in precompile[0]
    # g++ leaves most standard headers out of a unit's dependencies when it reads them
    # precompiled: the build adds the precompile's, so the warm check still sees them
    [kernels_entry] = glob.glob(os.path.join(cache, "pch-*", "deps.json"))
    with open(kernels_entry, "rb") as f:
        deps = cache_module.read_manifest(f.read())["deps"]
    with open(os.path.join(entry, "deps.json"), "rb") as f:
        prelude_deps = cache_module.read_manifest(f.read())["deps"]
    assert len(prelude_deps) > 50 and set(prelude_deps) <= set(deps)


def test_a_small_one_unit_build_does_not_wait_for_it(tmp_path, commands):
    """Fewer than PCH_MIN instantiations in one unit: no precompile (one made
    already is no faster to find than the standard headers are to read)."""
    h, y = tmp_path / "small.h", tmp_path / "small.yml"
    h.write_text(HEADER)
    y.write_text(YAML.replace("[[int], [long], [float], [double]]", "[[double]]"))
    lib = bindthem.build(str(h), str(y), cxx="g++", cxxflags=FLAGS,
                         cache_dir=str(tmp_path / "c"), jobs=1)
    assert lib.total(np.ones(3)) == 3.0
    assert _includes(commands) == [] and _prelude_entries(str(tmp_path / "c")) == []
    assert units_module.PCH_MIN > 2


def test_precompiled_once_per_compiler_and_flags(kernels, commands, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    cache = str(tmp_path / "cache")
    h, y = kernels
    bindthem.build(h, y, cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=1)
    other = tmp_path / "other.h"
    other.write_text(HEADER.replace("total", "total2").replace("scale", "scale2"))
    oy = tmp_path / "other.yml"
    oy.write_text(YAML.replace("total", "total2").replace("scale", "scale2"))
    bindthem.build(str(other), str(oy), cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=1)
    assert len([c for c in commands if "c++-header" in c]) == 1  # the second header reused it
    assert len(_prelude_entries(cache)) == 1
    bindthem.build(h, y, cxx="g++", cxxflags=["-O2"], cache_dir=cache, jobs=1)
    assert len(_prelude_entries(cache)) == 2  # other flags: its own precompiled prelude


def test_same_calls_with_and_without(kernels, monkeypatch, tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    monkeypatch.setenv(units_module.PCH_ENV, "1")
    plain = bindthem.build(*kernels, cxx="g++", cxxflags=FLAGS, name="plain",
                           cache_dir=str(tmp_path / "a"), jobs=1)
    assert _prelude_entries(str(tmp_path / "a")) == []
    monkeypatch.delenv(units_module.PCH_ENV)
    fast = bindthem.build(*kernels, cxx="g++", cxxflags=FLAGS, name="fast",
                          cache_dir=str(tmp_path / "b"), jobs=1)
    assert len(_prelude_entries(str(tmp_path / "b"))) == 1
    for lib in (plain, fast):
        _computes(lib)
    x = np.linspace(0, 1, 7, dtype=np.float32)
    assert plain.total(x) == fast.total(x)


def test_no_pch_env_and_clang_build_from_text(kernels, commands, monkeypatch, tmp_path):
    monkeypatch.setenv(units_module.PCH_ENV, "1")
    lib = bindthem.build(*kernels, cxx="g++", cxxflags=FLAGS, cache_dir=str(tmp_path / "a"))
    _computes(lib)
    assert _includes(commands) == [] and _prelude_entries(str(tmp_path / "a")) == []
    monkeypatch.delenv(units_module.PCH_ENV)
    if shutil.which("clang++") is None:
        return
    del commands[:]
    lib = bindthem.build(*kernels, cxx="clang++", cxxflags=FLAGS, name="withclang",
                         cache_dir=str(tmp_path / "b"))
    _computes(lib)
    assert _includes(commands) == [] and _prelude_entries(str(tmp_path / "b")) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_precompiled_prelude_gone_meanwhile_is_no_failure(kernels, commands, monkeypatch,
                                                            tmp_path, jobs):
    """Evicted between its check and the compile that reads it: the compile
    that names it fails, and the build compiles again from the text."""
    gone = str(tmp_path / "evicted" / "prelude-0.hpp")
    monkeypatch.setattr(build_module, "_prelude_pch", lambda *a: (("-include", gone), ()))
    lib = bindthem.build(*kernels, cxx="g++", cxxflags=FLAGS, cache_dir=str(tmp_path / "c"),
                         jobs=jobs)
    _computes(lib)
    units = [c for c in commands if any(a.endswith(".cpp") for a in c)]
    assert _includes(units) == [gone] * jobs  # tried first
    assert len(units) == 2 * jobs and _includes(units[jobs:]) == []


def test_a_damaged_prelude_manifest_is_no_failure(kernels, commands, tmp_path):
    """The precompiled prelude's manifest with a damaged second line (every
    file's hash, read for the units' dependencies): the build compiles from
    the text instead of failing."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    cache = str(tmp_path / "cache")
    h, y = kernels
    bindthem.build(h, y, cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=1)
    [entry] = _prelude_entries(cache)
    manifest = os.path.join(entry, "deps.json")
    with open(manifest, "rb") as f:
        head = f.read().partition(b"\n")[0]
    with open(manifest, "wb") as f:
        f.write(head + b"\n{damaged")
    other = tmp_path / "other.h"
    other.write_text(HEADER.replace("total", "total2").replace("scale", "scale2"))
    oy = tmp_path / "other.yml"
    oy.write_text(YAML.replace("total", "total2").replace("scale", "scale2"))
    del commands[:]
    lib = bindthem.build(str(other), str(oy), cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=1)
    assert lib.total2(np.arange(4.0)) == 6.0
    units = [c for c in commands if any(a.endswith(".cpp") for a in c)]
    assert len(units) == 1 and _includes(units) == []
    del commands[:]  # the damaged entry was removed: the next cold build precompiles again
    third = tmp_path / "third.h"
    third.write_text(HEADER.replace("total", "total3").replace("scale", "scale3"))
    ty = tmp_path / "third.yml"
    ty.write_text(YAML.replace("total", "total3").replace("scale", "scale3"))
    bindthem.build(str(third), str(ty), cxx="g++", cxxflags=FLAGS, cache_dir=cache, jobs=1)
    assert len([c for c in commands if "c++-header" in c]) == 1
    assert len(_includes(commands)) == 1


def test_a_header_error_is_not_retried(kernels, commands, tmp_path):
    """A real compile error fails at once (no second compile from the text)."""
    h, y = kernels
    with open(h, "a") as f:
        f.write("template <class T> T broken(const T x[], const int x_size) { return x; }\n")
    with open(y, "a") as f:
        f.write("  - functions: [broken]\n    types: [[double]]\n")
    with pytest.raises(bindthem.BuildError, match="pch.h"):
        bindthem.build(h, y, cxx="g++", cxxflags=FLAGS, cache_dir=str(tmp_path / "d"), jobs=1)
    units = [c for c in commands if any(a.endswith(".cpp") for a in c)]
    assert len(units) == 1
