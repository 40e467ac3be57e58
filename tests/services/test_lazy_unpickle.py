"""Unpickling a Library or Function where the process does not have it
returns at once a stand-in that binds on first use, in the thread that uses
it: unpickling never compiles and never fails for want of a compiler or a
library; that use raises bindthem's own error, and retries after
bindthem._unpickle.RETRY_AFTER seconds."""

import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import python_env, untyped

import bindthem
from bindthem import _unpickle as _lazy


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    shutil.copy(kernel("rows.h"), d / "lazy.h")
    shutil.copy(kernel("rows.yml"), d / "lazy.yml")
    return d


def child(code, data, **env):
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=data,
                          capture_output=True, env=python_env(**env), timeout=240)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode().splitlines()


NO_COMPILER = """
    import os, pickle, sys, time
    import numpy as np
    import bindthem
    from bindthem import _unpickle as _lazy
    data = sys.stdin.buffer.read()
    t = time.perf_counter()
    lib, f = pickle.loads(data)
    print("loads %.3f" % (time.perf_counter() - t))
    print(type(lib).__name__, type(f).__name__, isinstance(f, bindthem.Function), repr(f))
    print(len(pickle.dumps((lib, f))) == len(data))  # pickling again binds nothing
    pending = f._pending
    for attempt in range(2):
        t = time.perf_counter()
        try:
            f(np.ones(3))
        except bindthem.BuildError as e:
            took = time.perf_counter() - t
            print("BuildError", str(e).split(":")[0], pending.binds, "%.3f" % took)
    try:
        lib.scale
    except bindthem.BuildError as e:
        print("attribute BuildError", pending.binds)
    os.environ["CXX"] = sys.argv[1]
    _lazy.RETRY_AFTER = 0.0  # retry now: the compiler is there
    print(f(np.ones(3)), pending.binds, type(lib).__name__, f.library is lib,
          lib.total.library is lib)
    print(pickle.loads(data)[0] is lib, type(pickle.loads(data)[1]).__name__)
"""


def test_no_compiler_fails_at_first_use_and_retries(project, cache_dir, tmp_path, monkeypatch):
    lib = bindthem.build(str(project / "lazy.h"), str(project / "lazy.yml"), cache_dir=cache_dir)
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")  # the source alone: it must be built
    data = pickle.dumps((lib, lib.total))
    shutil.rmtree(project)  # no author's files, no cache: the pickle must be built
    shutil.rmtree(cache_dir)
    missing = str(tmp_path / "no" / "c++")
    code = NO_COMPILER.replace("sys.argv[1]", repr(shutil.which("c++") or shutil.which("g++")))
    out = child(code, data, CXX=missing, BINDTHEM_CACHE=str(tmp_path / "empty"))
    assert float(out[0].split()[1]) < 0.5, out  # unpickling returned at once
    assert out[1] == "LazyLibrary LazyFunction True <bindthem function lazy.total (unpickled; " \
                     "binds on first use)>"
    assert out[2] == "True"
    # the first call tried and failed with the compiler named; the second re-raised at once
    first = "BuildError cannot run the C++ compiler '%s' 1 " % missing
    assert out[3].startswith(first) and out[4].startswith(first), out
    assert float(out[4].split()[-1]) < 0.05, out[4]
    assert out[5] == "attribute BuildError 1"
    assert out[6] == "3.0 2 Library True True"  # retried once the compiler is there
    assert out[7] == "True Function"


LOAD_MISSING = """
    import pickle, sys
    import numpy as np
    import bindthem
    f = pickle.loads(sys.stdin.buffer.read())
    print("unpickled")
    try:
        f(np.ones(2))
    except bindthem.BindError as e:
        print(type(e).__name__, e)
"""


def test_a_load_pickle_without_its_library_fails_at_first_use(project, tmp_path, monkeypatch):
    so = compile_cxx(str(tmp_path), "lazy", str(project / "lazy.h"), str(project / "lazy.yml"))
    lib = bindthem.load(so, str(project / "lazy.h"), str(project / "lazy.yml"))
    monkeypatch.setenv("BINDTHEM_CARRY_LIBRARY", "0")  # its path and SHA-256 alone
    data = pickle.dumps(lib.total)
    os.unlink(so)
    out = child(LOAD_MISSING, data)
    assert out[0] == "unpickled"
    assert out[1].startswith("BindError cannot unpickle Library 'lazy': its shared library %s "
                             "is not on this machine" % so), out


def test_eager_where_the_process_has_the_library(project, cache_dir):
    lib = bindthem.build(str(project / "lazy.h"), str(project / "lazy.yml"), cache_dir=cache_dir)
    lib2, f = pickle.loads(pickle.dumps((lib, lib.total)))
    assert lib2 is lib and f is lib.total and type(f) is bindthem.Function


def test_a_lazy_function_behaves_as_the_function(project, cache_dir):

    from dask.base import tokenize

    from bindthem._services import travel as _travel
    from bindthem.library import library_of

    lib = bindthem.build(str(project / "lazy.h"), str(project / "lazy.yml"), cache_dir=cache_dir)
    key = bindthem.info(lib).source.key
    tokens = tokenize(lib), tokenize(lib.scale)
    data = pickle.dumps((lib, lib.scale))
    del lib
    _travel._live.pop(key, None)  # as in a process that never had it
    lazy_lib, f = pickle.loads(data)
    try:
        assert type(f) is _lazy.LazyFunction and isinstance(lazy_lib, bindthem.Library)
        assert (tokenize(lazy_lib), tokenize(f)) == tokens and f._pending.binds == 0
        assert f.__name__ == "scale" and f._pending.binds == 0
        assert untyped(f) == "(x, a)" and f._pending.binds == 1
        assert "x *= a" in f.__doc__ and library_of(f) is lazy_lib
        assert type(lazy_lib).__bases__ == (bindthem.Library,) and "rowsum" in dir(lazy_lib)
        x = np.ones(3)
        f(x, 2.0)
        assert x.tolist() == [2.0, 2.0, 2.0]
        assert pickle.loads(pickle.dumps(f)) is lazy_lib.scale
        assert (tokenize(lazy_lib), tokenize(f)) == tokens
    finally:
        _travel._unpickled.pop(key, None)


CONCURRENT = """
    import pickle, sys, threading
    import numpy as np
    from bindthem import _unpickle as _lazy
    binds = []
    real = _lazy.bind
    _lazy.bind = lambda source: binds.append(1) or real(source)
    data = sys.stdin.buffer.read()
    fs = [pickle.loads(data) for _ in range(8)]
    barrier = threading.Barrier(8)
    out = [None] * 8
    def run(i):
        barrier.wait()
        out[i] = fs[i](np.arange(4.0))
    ts = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print(out, len(binds), fs[0]._pending.binds)
"""


def test_concurrent_first_uses_bind_once(project, cache_dir, tmp_path):
    lib = bindthem.build(str(project / "lazy.h"), str(project / "lazy.yml"), cache_dir=cache_dir)
    data = pickle.dumps(lib.total)
    shutil.rmtree(project)
    shutil.rmtree(cache_dir)
    out = child(CONCURRENT, data, BINDTHEM_CACHE=str(tmp_path / "fresh"))
    assert out == ["[6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0] 1 1"]
