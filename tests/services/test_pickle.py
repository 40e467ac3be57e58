"""Libraries and Functions pickle by value: on their own, any number of
round trips, across processes and onto machines without the author's files;
a changed file on the unpickling side is never bound in place of the pickled
one; deepcopy and dask tokens; unpickling on a warm cache is cheap."""

import copy
import gc
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import time
import weakref

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import python_env

import bindthem

with open(kernel("rows.h")) as _f:
    HEADER = ('#include "detail/offset.h"\n' + _f.read()
              + "\n// OFFSET, from a local include.\nint offset() { return OFFSET; }\n")
with open(kernel("rows.yml")) as _f:
    YAML = _f.read()


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    (d / "detail").mkdir(parents=True)
    (d / "detail" / "offset.h").write_text("#define OFFSET 100\n")
    (d / "travel.h").write_text(HEADER)
    (d / "travel.yml").write_text(YAML)
    return d


@pytest.fixture
def built(project, cache_dir):
    return bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                          cache_dir=cache_dir)


def child(code, data, **env):
    """Runs code in a fresh interpreter with the pickle on stdin; its stdout."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=data,
                          capture_output=True, env=python_env(**env), timeout=180)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode()


CALL_CHILD = """
    import pickle, sys
    import numpy as np
    import bindthem
    f = pickle.loads(sys.stdin.buffer.read())
    x = np.arange(4.0)
    print(f(x) + f.library.offset(), f.library.__file__,
          bindthem.info(f.library).metadata["header"])
    sys.stdout.flush()
    sys.stderr.write(repr(pickle.dumps(f)))
"""


def test_function_pickles_after_its_library_is_gone(project, cache_dir):
    lib = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                         cache_dir=cache_dir)
    f, gone = lib.total, weakref.ref(lib)
    # CPython 3.13t makes every module object (a Library is one) immortal once a
    # thread has started; elsewhere the Library goes with its last reference
    immortal = sys.getrefcount(lib) >= 1 << 30
    del lib
    for _ in range(100):
        gc.collect()
        if gone() is None or immortal:
            break
        time.sleep(0.01)
    assert (f.library is None) != immortal
    data = pickle.dumps(f)
    g = pickle.loads(data)
    assert g(np.arange(3.0)) == 3.0
    # round trips, each from the previous unpickled function
    for _ in range(3):
        g = pickle.loads(pickle.dumps(g))
        assert g(np.ones(2, np.float32)) == 2.0
    assert isinstance(g, bindthem.Function)


def test_function_round_trips_through_fresh_processes(built):
    data = pickle.dumps(built.total)
    for _ in range(2):
        code = CALL_CHILD.replace("sys.stderr.write(repr(pickle.dumps(f)))",
                                  "sys.stdout.buffer.write(pickle.dumps(f))")
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=data,
                              capture_output=True, env=python_env(), timeout=180)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        first, _, data = proc.stdout.partition(b"\n")
        assert first.split()[0] == b"106.0"
    assert pickle.loads(data)(np.ones(1)) == 1.0


def test_unpickling_in_the_same_process_returns_the_live_library(built):
    assert pickle.loads(pickle.dumps(built)) is built
    assert pickle.loads(pickle.dumps(built.scale)) is built.scale
    lib, f, g = pickle.loads(pickle.dumps((built, built.total, built.scale)))
    assert lib is built and f is built.total and g is built.scale


def test_library_and_function_deepcopy(built):
    assert copy.deepcopy(built) is built and copy.copy(built) is built
    assert copy.deepcopy(built.total) is built.total and copy.copy(built.scale) is built.scale
    d = copy.deepcopy({"k": [built.total]})
    assert d["k"][0](np.ones(2)) == 2.0


def test_pickle_carries_the_text_and_shares_it(built, project):
    data = pickle.dumps((built, built.total, built.scale))
    assert HEADER.encode() in data and YAML.encode() in data
    assert b"#define OFFSET 100" in data  # the local include travels too
    assert data.count(HEADER.encode()) == 1  # one Source for the three objects
    src = bindthem.info(built).source
    assert src.kind == "build" and src.files == {os.path.join("detail", "offset.h"):
                                                 b"#define OFFSET 100\n"}
    assert src.flags == ["-O3"]


TOKEN = """
    import pickle, sys
    from dask.base import tokenize
    lib, f = pickle.loads(sys.stdin.buffer.read())
    print(tokenize(lib), tokenize(f), tokenize(lib.scale))
"""


def test_dask_tokens_are_deterministic(built, project, cache_dir):
    tokenize = pytest.importorskip("dask.base").tokenize
    mine = [tokenize(built), tokenize(built.total), tokenize(built.scale)]
    assert len(set(mine)) == 3
    assert mine == [tokenize(built), tokenize(built.total), tokenize(built.scale)]
    assert child(TOKEN, pickle.dumps((built, built.total))).split() == mine
    # other options, other content: other tokens
    other = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                           cache_dir=cache_dir, gil="release")
    assert tokenize(other.total) != mine[1]
    (project / "travel.h").write_text(HEADER.replace("return OFFSET;", "return 2 * OFFSET;"))
    edited = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                            cache_dir=cache_dir)
    assert tokenize(edited.total) != mine[1]


def test_options_travel(project, cache_dir):
    lib = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                         cache_dir=cache_dir, gil={"total": "release"}, copy_const=True)
    out = child("""
        import pickle, sys
        f, g = pickle.loads(sys.stdin.buffer.read())
        print(f.gil, f.copy_const, g.gil)
    """, pickle.dumps((lib.total, lib.scale)))
    assert out.split() == ["release", "True", "auto"]


def test_a_machine_without_the_files_builds_the_carried_text(built, project, cache_dir,
                                                             tmp_path):
    data = pickle.dumps(built.total)
    shutil.rmtree(project)  # the author's files are gone, and the cache_dir given to build()
    shutil.rmtree(cache_dir)
    fresh = tmp_path / "worker-cache"
    out = child(CALL_CHILD, data, BINDTHEM_CACHE=str(fresh))
    value, path, header = out.split()
    assert value == "106.0"  # OFFSET came from the carried include
    assert path.startswith(str(fresh)) and header.startswith(str(fresh / "sources"))
    with open(header) as f:
        assert f.read() == HEADER
    # built once: a second unpickle finds it in the cache
    assert child(CALL_CHILD, data, BINDTHEM_CACHE=str(fresh)).split()[1] == path


def test_an_edited_header_is_not_bound_in_place_of_the_pickled_one(built, project, tmp_path):
    data = pickle.dumps(built.total)
    (project / "travel.h").write_text(HEADER.replace("return OFFSET;", "return -OFFSET;"))
    out = child(CALL_CHILD, data, BINDTHEM_CACHE=str(tmp_path / "c2"))
    value, _, header = out.split()
    assert value == "106.0" and header != str(project / "travel.h")
    assert (project / "travel.h").read_text() != HEADER  # the user's file is left alone
    # an edited local include: the same
    (project / "travel.h").write_text(HEADER)
    (project / "detail" / "offset.h").write_text("#define OFFSET 7\n")
    assert child(CALL_CHILD, data, BINDTHEM_CACHE=str(tmp_path / "c3")).split()[0] == "106.0"


def test_unchanged_files_bind_from_their_own_paths(built, project, cache_dir, tmp_path,
                                                   monkeypatch):
    out = child(CALL_CHILD, pickle.dumps(built.total), BINDTHEM_CACHE=str(cache_dir))
    value, path, header = out.split()
    assert (value, path, header) == ("106.0", built.__file__, str(project / "travel.h"))
    # another cache: the library the pickle carries, read where it was built
    # (this machine has that file, with the carried SHA-256): nothing compiled
    other = tmp_path / "other-cache"
    out = child(CALL_CHILD, pickle.dumps(built.total), BINDTHEM_CACHE=str(other))
    assert out.split() == ["106.0", built.__file__, str(project / "travel.h")]
    # a pickle of the source alone builds in the unpickling side's cache
    # ($BINDTHEM_CACHE), never in the cache_dir the pickle carries
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")
    out = child(CALL_CHILD, pickle.dumps(built.total), BINDTHEM_CACHE=str(other))
    value, path, header = out.split()
    assert value == "106.0" and path.startswith(str(other) + os.sep), path
    assert header == str(project / "travel.h")


# --- bindthem.load pickles ------------------------------------------------------


@pytest.fixture
def loaded(project, tmp_path):
    libdir = tmp_path / "libs"
    libdir.mkdir()
    so = compile_cxx(str(libdir), "travel", str(project / "travel.h"),
                     str(project / "travel.yml"))
    return bindthem.load(so, str(project / "travel.h"), str(project / "travel.yml"))


def test_load_pickle_binds_the_same_library(loaded):
    out = child(CALL_CHILD, pickle.dumps(loaded.total))
    assert out.split()[:2] == ["106.0", loaded.__file__]
    src = bindthem.info(loaded).source
    assert src.kind == "load" and len(src.library_hash) == 64


def test_load_pickle_refuses_a_changed_library(loaded, project, tmp_path, monkeypatch):
    carried = pickle.dumps(loaded.total)  # with the library's bytes
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")
    data = pickle.dumps(loaded.total)  # its path and SHA-256 alone
    libdir = os.path.dirname(loaded.__file__)
    (project / "travel.h").write_text(HEADER.replace("return OFFSET;", "return 1;"))
    compile_cxx(libdir, "travel", str(project / "travel.h"), str(project / "travel.yml"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CALL_CHILD)], input=data,
                          capture_output=True, env=python_env(), timeout=180)
    err = proc.stderr.decode()
    assert proc.returncode == 1
    assert ("BindError: cannot unpickle Library 'travel': the shared library %s is "
            "not the one pickled (SHA-256 " % loaded.__file__) in err
    assert "bindthem does not bind other code than was pickled" in err
    os.unlink(loaded.__file__)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CALL_CHILD)], input=data,
                          capture_output=True, env=python_env(), timeout=180)
    assert ("cannot unpickle Library 'travel': its shared library %s is not on this machine"
            % loaded.__file__) in proc.stderr.decode()
    # the pickle that carries the bytes runs the pickled code, from the worker's cache
    out = child(CALL_CHILD, carried, BINDTHEM_CACHE=str(tmp_path / "w"))
    value, path = out.split()[:2]
    assert value == "106.0" and path.startswith(str(tmp_path / "w" / "carried") + os.sep), out


def test_load_pickle_uses_the_carried_header(loaded, project):
    data = pickle.dumps(loaded)
    (project / "travel.h").write_text("// nothing here any more\n")
    out = child("""
        import pickle, sys
        import bindthem
        lib = pickle.loads(sys.stdin.buffer.read())
        print(lib.__all__, open(bindthem.info(lib).metadata["header"]).read() == sys.argv[1])
    """.replace("sys.argv[1]", repr(HEADER)), data)
    assert out.strip() == "['offset', 'rowsum', 'scale', 'total'] True"


def test_load_cannot_pickle_a_library_changed_since_it_was_loaded(loaded, project):
    time.sleep(0.01)
    compile_cxx(os.path.dirname(loaded.__file__), "travel", str(project / "travel.h"),
                str(project / "travel.yml"), extra="// changed\nint more() { return 1; }\n")
    with pytest.raises(pickle.PicklingError, match="has changed on disk since it was loaded"):
        pickle.dumps(loaded.total)


# --- cost ---------------------------------------------------------------------


def test_warm_unpickle_is_cheap(project, cache_dir):
    data = pickle.dumps(bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                                       cache_dir=cache_dir).total)
    pickle.loads(data)  # binds once
    n = 200
    t = time.perf_counter()
    for _ in range(n):
        pickle.loads(data)
    per = (time.perf_counter() - t) / n
    assert per < 1e-3, "%.0f us per unpickle" % (per * 1e6)


def test_the_compiler_identity_is_asked_once_per_process(project, cache_dir, monkeypatch):
    import importlib

    cc = importlib.import_module("bindthem._services.compile.compiler")  # where it is asked
    runs = []
    real = cc.subprocess.run

    def counting(cmd, *a, **kw):
        runs.append(cmd)
        return real(cmd, *a, **kw)

    monkeypatch.setattr(cc, "_compiler_ids", {})
    monkeypatch.setattr(cc, "_system_dirs_of", {})
    monkeypatch.setattr(cc.subprocess, "run", counting)
    for _ in range(3):
        bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                       cache_dir=cache_dir)
    assert [c[-1] for c in runs if "-E" not in c and c[0] != "nm"] == ["--version"]
    assert sum("-E" in c for c in runs) == 1  # the include search list: once too


def test_a_cache_hit_does_not_rehash_the_system_headers(project, cache_dir, monkeypatch):
    import bindthem._services.cache._manifest as cachemod  # where _hit looks hash_file up

    lib = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                         cache_dir=cache_dir)
    hashed = []
    real = cachemod.hash_file
    monkeypatch.setattr(cachemod, "hash_file", lambda p: hashed.append(p) or real(p))
    again = bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                           cache_dir=cache_dir)
    assert again.__file__ == lib.__file__ and hashed == []
    # a touched but unchanged include is re-hashed once, then trusted again
    os.utime(project / "detail" / "offset.h", ns=(1, 1))
    bindthem.build(str(project / "travel.h"), str(project / "travel.yml"), cache_dir=cache_dir)
    assert hashed == [str(project / "detail" / "offset.h")]
    bindthem.build(str(project / "travel.h"), str(project / "travel.yml"), cache_dir=cache_dir)
    assert len(hashed) == 1
    # an edit with the same size and mtime is still seen (ctime and inode change)
    (project / "detail" / "offset.h").write_text("#define OFFSET 200\n")
    os.utime(project / "detail" / "offset.h", ns=(1, 1))
    assert bindthem.build(str(project / "travel.h"), str(project / "travel.yml"),
                          cache_dir=cache_dir).offset() == 200
