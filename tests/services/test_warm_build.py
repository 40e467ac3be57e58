"""A warm build (every library a cache hit) in a new process does what load
does plus the cache's checks: it parses the header once, briefly (the
overloads' full dicts are not built), and runs no compiler: what the
compiler's ``--version`` printed is kept in the cache under the identity of
its executable, asked again when that executable changes."""

import importlib
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from test_build_jobs import write

from bindthem import _core

build = importlib.import_module("bindthem._services.compile.kernels")  # the build
compiler = importlib.import_module("bindthem._services.compile.compiler")  # who the compiler is

CHILD = textwrap.dedent("""
    import subprocess, sys
    import numpy as np
    real = subprocess.run
    ran = []
    def spy(cmd, *a, **k):
        ran.append(list(cmd))
        return real(cmd, *a, **k)
    subprocess.run = spy
    import bindthem
    lib = bindthem.build(sys.argv[1], sys.argv[2], cache_dir=sys.argv[3])
    assert lib.total(np.arange(4.0)) == 6.0
    print(repr([c for c in ran if "--version" in c]))
""")


def _ran_version(tmp_path, cxx):
    env = dict(os.environ, CXX=cxx)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "k.h"),
                           str(tmp_path / "k.yml"), str(tmp_path / "cache")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return eval(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def kernels(tmp_path):
    write(tmp_path, name="k")
    return tmp_path


def _real_compiler(name):
    """The executable `name` runs, past a ccache masquerade (CI puts
    /usr/lib/ccache first on PATH: its c++ is ccache, which needs a compiler
    after it when named itself)."""
    dirs = os.environ.get("PATH", os.defpath).split(os.pathsep)
    for d in dirs:
        found = shutil.which(name, path=d)
        if found and os.path.basename(os.path.realpath(found)) != "ccache":
            return os.path.realpath(found)
    pytest.skip("no %s on PATH" % name)


def test_warm_build_runs_no_compiler(kernels):
    cxx = _real_compiler(os.environ.get("CXX") or "c++")
    assert _ran_version(kernels, cxx) == [[cxx, "--version"]]
    assert _ran_version(kernels, cxx) == []  # warm, in a new process: nothing run
    entries = os.listdir(kernels / "cache" / "compilers")
    assert len(entries) == 1
    version = (kernels / "cache" / "compilers" / entries[0] / "version").read_text()
    assert version == subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout


def test_compiler_identity_follows_the_executable(kernels):
    """The remembered text is found by the executable's identity: a new
    executable at the same path (an upgrade) is another compiler."""
    exe = kernels / "bin" / "cxx"
    exe.parent.mkdir()
    shutil.copy2(sys.executable, exe)  # any ELF executable
    first = compiler._compiler_identity([str(exe)])
    assert first and first == compiler._compiler_identity([str(exe)])
    link = kernels / "bin" / "c++"
    link.symlink_to(exe)
    assert compiler._compiler_identity([str(link)]) == first  # resolved, not named
    exe.unlink()
    shutil.copy2(sys.executable, exe)
    assert compiler._compiler_identity([str(exe)]) not in (None, first)
    assert compiler._compiler_identity([str(exe), "-m64"]) is None  # with arguments: asked


def test_wrapper_script_is_asked_every_process(kernels):
    cxx = shutil.which(os.environ.get("CXX") or "c++")
    wrap = kernels / "wrapcxx"
    wrap.write_text("#!/bin/sh\nexec %s \"$@\"\n" % cxx)
    wrap.chmod(0o755)
    assert _ran_version(kernels, str(wrap)) == [[str(wrap), "--version"]]
    # what a script runs can change under it: never remembered
    assert _ran_version(kernels, str(wrap)) == [[str(wrap), "--version"]]


def test_brief_metadata_holds_what_a_build_needs(kernels):
    full = _core.parse_header(str(kernels / "k.h"), str(kernels / "k.yml"))
    brief = _core.parse_header(str(kernels / "k.h"), str(kernels / "k.yml"), brief=True)
    overloads = [ov for fn in brief["functions"] for ov in fn["overloads"]]
    assert [set(ov) for ov in overloads] == [{"instantiation", "lines"}] * 12
    decls = full["declarations"]
    assert [(ov["instantiation"], ov["lines"]) for ov in overloads] == [
        (ov["instantiation"], decls[ov["declaration"]]["last_line"]
         - decls[ov["declaration"]]["first_line"] + 1)
        for fn in full["functions"] for ov in fn["overloads"]]
    assert brief["declarations"] == [] and decls
    same = ("header", "instantiate", "skipped", "missing", "openmp", "includes")
    assert {k: brief[k] for k in same} == {k: full[k] for k in same}
    assert [fn["name"] for fn in brief["functions"]] == [fn["name"] for fn in full["functions"]]


def test_sources_are_read_once_while_their_stat_holds(tmp_path, monkeypatch):
    """Headers that include one file, or share one YAML, read it once in a
    process; a write is seen even where it keeps the size and puts the mtime
    back (the ctime changes), as is a file renamed over it."""
    from bindthem._base import files as _files

    monkeypatch.setattr(_files, "_sources", {})
    p = tmp_path / "shared.h"
    p.write_bytes(b"int a;\n")
    first = _files.read_source(str(p))
    assert first == b"int a;\n" and _files.read_source(str(p)) is first  # not read again
    st = os.stat(p)
    p.write_bytes(b"int b;\n")  # same size
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _files.read_source(str(p)) == b"int b;\n"
    new = tmp_path / "new.h"
    new.write_bytes(b"int c;\n")
    os.replace(new, p)
    assert _files.read_source(str(p)) == b"int c;\n"
    with pytest.raises(FileNotFoundError):
        _files.read_source(str(tmp_path / "gone.h"))


def test_a_local_include_is_scanned_for_openmp_once(tmp_path, monkeypatch):
    """'#pragma omp' in a local include warns for every header built without
    an OpenMP flag; the include's text is lexed once however many include it."""
    import warnings

    import bindthem

    monkeypatch.setattr(build, "_omp_of", {})
    (tmp_path / "par.h").write_text("#pragma once\ninline void par(double *y, int n) {\n"
                                    "#pragma omp parallel for\n"
                                    "    for (int i = 0; i < n; i++) y[i] += 1;\n}\n")
    lexed, real = [], _core.header_directives
    monkeypatch.setattr(build._core, "header_directives",
                        lambda text: lexed.append(text) or real(text), raising=False)
    for stem in ("k1", "k2"):
        (tmp_path / (stem + ".h")).write_text('#include "par.h"\n// %s.\nvoid %s(double y[], '
                                              'const int y_size) { par(y, y_size); }\n'
                                              % (stem, stem))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bindthem.build(str(tmp_path / (stem + ".h")), cache_dir=str(tmp_path / "c"))
        assert [str(w.message) for w in caught
                if "par.h:3: '#pragma omp parallel for' has no effect" in str(w.message)]
    assert len(lexed) == 1
