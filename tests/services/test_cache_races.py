"""The build cache under eviction and transient failures ("The bytes that were
checked are the bytes that run"): an entry in use is never evicted (group
entries, ``sources/``, ``cells/``, hold a lock as build entries do), a file
the compiler read that changed or vanished while it ran is compiled again,
``on-demand/`` records count toward the bound, and a compiler killed by a
signal is not remembered by instantiation on demand.

The compilers are wrappers of ``c++`` that do the harmful thing (evict the
cache, kill themselves, edit an include) at a chosen moment; a file
``armed`` makes them do it once. Builds that evict or race run in
subprocesses. docs/build.rst, "Publishing, locking, eviction".
"""

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from support import python_env

import bindthem
from bindthem._services import cache as cachemod

KERNEL = """\
#include "inc/step.h"

// x[i] += STEP * a
template <class T>
void axpy(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] += STEP * a;
}

// Compiles for arithmetic T only.
template <class T> void fails_for_complex(T x[], const int x_size) { x[0] = x[0] < T(1); }

int step(int a) { return STEP * a; }
"""


def kernel_tree(folder, step=3):
    """folder/kern.h, which includes folder/inc/step.h (STEP = step)."""
    (folder / "inc").mkdir(parents=True)
    (folder / "inc" / "step.h").write_text("#define STEP %d\n" % step)
    (folder / "kern.h").write_text(KERNEL)
    return folder / "kern.h"


def wrapper(tmp_path, before="", after=""):
    """A compiler: ``c++`` with ``before`` run before a compile (a command
    with -o; not --version nor the include-path query) and ``after`` after
    it, each compile logged to tmp_path/cxx.log."""
    cxx = tmp_path / "cxx.sh"
    cxx.write_text(textwrap.dedent("""\
        #!/bin/sh
        case "$*" in *" -o "*) ;; *) exec c++ "$@";; esac
        echo "$*" >> {log}
        {before}
        c++ "$@"
        status=$?
        {after}
        exit $status
        """).format(log=tmp_path / "cxx.log", before=before, after=after))
    cxx.chmod(0o755)
    return str(cxx)


def once(armed, action):
    """Shell that runs ``action`` the first time only (while ``armed`` exists)."""
    return 'if [ -e "%s" ]; then rm -f "%s"; %s; fi' % (armed, armed, action)


def compiles(tmp_path):
    log = tmp_path / "cxx.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


# the cache cleared (every entry no one holds removed), from another process
CLEAR = "%s -m bindthem cache clear > /dev/null" % sys.executable


def run(script, *args, env, data=None, timeout=120):
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], input=data,
                          env=env, capture_output=True, timeout=timeout)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """A cache of the test's own ($BINDTHEM_CACHE), and c++ as $CXX."""
    monkeypatch.setenv("BINDTHEM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BINDTHEM_CACHE_SIZE", raising=False)
    monkeypatch.setenv("CXX", "c++")
    return tmp_path / "cache"


# --- an entry in use is never evicted ---------------------------------------


def test_a_group_entry_in_use_is_never_evicted(cache):
    with cachemod.using_group(None, "sources", "k") as folder:
        cachemod.write_once(folder, os.path.join("src", "k.h"), b"int k;\n")
        assert cachemod.remove_entry(folder) is False
        assert cachemod.evict(cachemod.resolve(), 0) == []
        with open(os.path.join(folder, "src", "k.h")) as f:
            assert f.read() == "int k;\n"
    assert cachemod.evict(cachemod.resolve(), 0) == [folder]


UNPICKLE = """\
import pickle, sys, numpy as np
lib = pickle.loads(sys.stdin.buffer.read())
print(lib.step(2))
if sys.argv[1:] == ["on demand"]:
    x = np.zeros(2)
    lib.axpy(x, 1.0)
    print(x.tolist())
"""


def _unpickled_elsewhere(tmp_path, cache):
    """A pickle of an open Library whose files are gone (renamed away), of its
    source alone: a worker builds it from the copy it writes in its cache's
    sources/."""
    header = kernel_tree(tmp_path / "src")
    lib = bindthem.build(header, cxxflags="-O0")
    os.environ["BINDTHEM_CARRY_LIBRARY"] = "0"  # the source alone: the worker compiles
    try:
        data = pickle.dumps(lib)
    finally:
        del os.environ["BINDTHEM_CARRY_LIBRARY"]
    os.rename(tmp_path / "src", tmp_path / "gone")
    env = python_env(BINDTHEM_CACHE=str(tmp_path / "worker"),
                     CXX=wrapper(tmp_path, before=CLEAR))
    return data, env


def test_an_unpickled_build_survives_an_eviction_just_before_its_compiler(tmp_path, cache):
    """The wrapper clears the cache just before c++ runs: the copy of the
    carried text in sources/, which c++ reads, is in use and stays."""
    data, env = _unpickled_elsewhere(tmp_path, cache)
    r = run(UNPICKLE, env=env, data=data)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert r.stdout.decode() == "6\n"
    assert compiles(tmp_path) == 1


def test_an_unpickled_instantiation_survives_an_eviction_just_before_its_compiler(
        tmp_path, cache):
    data, env = _unpickled_elsewhere(tmp_path, cache)
    r = run(UNPICKLE, "on demand", env=env, data=data)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert r.stdout.decode() == "6\n[3.0, 3.0]\n"


CELL = """\
import os, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "bindthem")
shell.run_cell_magic("bindthem", "k", "int twice(int a) { return 2 * a; }\\n")
lib = shell.user_ns["k"]
print(lib.twice(21), os.path.exists(lib.metadata["header"]))
"""


def test_a_notebook_cell_survives_an_eviction_just_before_its_compiler(tmp_path):
    pytest.importorskip("IPython")
    env = python_env(BINDTHEM_CACHE=str(tmp_path / "cache"), CXX=wrapper(tmp_path, before=CLEAR),
                     IPYTHONDIR=str(tmp_path / "ipython"))
    r = run(CELL, env=env)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert r.stdout.decode().splitlines()[-1] == "42 True"  # the cell's file is still there


# --- what the compiler read changed while it ran ------------------------------


def test_an_include_edited_while_the_compiler_runs_is_compiled_again(tmp_path, cache,
                                                                     monkeypatch):
    header = kernel_tree(tmp_path / "src", step=1)
    armed = tmp_path / "armed"
    armed.write_text("")
    edit = 'echo "#define STEP 2" > "%s"' % (tmp_path / "src" / "inc" / "step.h")
    monkeypatch.setenv("CXX", wrapper(tmp_path, after=once(armed, edit)))
    lib = bindthem.build(header, cxxflags="-O0")
    assert lib.step(1) == 2  # what step.h holds now, not what c++ read before the edit
    assert compiles(tmp_path) == 2
    again = bindthem.build(header, cxxflags="-O0")  # a hit: the manifest matches the library
    assert again.step(1) == 2 and compiles(tmp_path) == 2


def test_an_include_that_keeps_changing_fails_the_build_and_names_it(tmp_path, cache,
                                                                     monkeypatch):
    header = kernel_tree(tmp_path / "src")
    step = tmp_path / "src" / "inc" / "step.h"
    monkeypatch.setenv("CXX", wrapper(tmp_path, after='touch "%s"' % step))
    with pytest.raises(bindthem.BuildError) as e:
        bindthem.build(header, cxxflags="-O0")
    assert "%s changed while it was compiled" % step in str(e.value)
    assert "compiled 3 times" in str(e.value) and e.value.transient
    assert compiles(tmp_path) == 3


def test_an_include_removed_while_the_compiler_runs_is_no_silent_success(tmp_path, cache,
                                                                         monkeypatch):
    """The depfile names a file that is gone after the compile: the build
    compiles again (and fails, as the file is missing), never records a
    manifest without it, and never raises a raw FileNotFoundError."""
    header = kernel_tree(tmp_path / "src")
    step = tmp_path / "src" / "inc" / "step.h"
    armed = tmp_path / "armed"
    armed.write_text("")
    monkeypatch.setenv("CXX", wrapper(tmp_path, after=once(armed, 'mv "%s" "%s.away"'
                                                           % (step, step))))
    with pytest.raises(bindthem.BuildError) as e:
        bindthem.build(header, cxxflags="-O0")
    assert "step.h" in e.value.output and e.value.transient
    assert compiles(tmp_path) == 2
    os.rename(str(step) + ".away", step)
    assert bindthem.build(header, cxxflags="-O0").step(1) == 3


# --- transient failures --------------------------------------------------------


@pytest.mark.parametrize("argv, transient, says", [
    (["sh", "-c", "kill -9 $$"], True, "killed by signal 9 (SIGKILL: out of memory?)"),
    (["sh", "-c", "echo 'c++: fatal error: Killed signal terminated program cc1plus' >&2; "
      "exit 1"], True, "its compiler proper was killed or ran out of memory"),
    (["sh", "-c", "echo 'cc1plus: out of memory allocating 65536 bytes' >&2; exit 1"], True,
     "ran out of memory"),
    (["sh", "-c", "echo 'k.cpp:2:10: fatal error: gone.h: No such file or directory' >&2; "
      "exit 1"], True, "failed (exit 1)"),
    (["sh", "-c", "echo 'k.h:1:1: error: static assertion failed: out of memory' >&2; "
      "exit 1"], False, "failed (exit 1)"),
])
def test_run_commands_says_which_failures_are_transient(argv, transient, says):
    with pytest.raises(bindthem.BuildError) as e:
        cachemod.run_commands([argv], "compiling k", "compiling k")
    assert e.value.transient is transient and says in str(e.value)
    assert pickle.loads(pickle.dumps(e.value)).transient is transient


@pytest.mark.parametrize("kill", [
    "kill -9 $$",
    "echo 'c++: fatal error: Killed signal terminated program cc1plus' >&2; exit 1",
])
def test_a_killed_instantiation_is_not_remembered(tmp_path, cache, monkeypatch, kill):
    header = kernel_tree(tmp_path / "src")
    armed = tmp_path / "armed"
    monkeypatch.setenv("CXX", wrapper(tmp_path, before=once(armed, kill)))
    lib = bindthem.build(header, cxxflags="-O0")
    armed.write_text("")
    x = np.zeros(2)
    with pytest.raises(bindthem.BuildError) as e:
        lib.axpy(x, 1.0)
    assert e.value.transient
    assert "not remembered: the next call compiles again" in str(e.value)
    lib.axpy(x, 1.0)  # an OOM kill is no verdict on the source: compiled again
    assert x.tolist() == [3.0, 3.0]


def test_a_rejected_instantiation_is_remembered_and_says_so(tmp_path, cache):
    lib = bindthem.build(kernel_tree(tmp_path / "src"), cxxflags="-O0")
    for _ in range(2):
        with pytest.raises(bindthem.BuildError) as e:
            lib.fails_for_complex(np.zeros(2, np.complex128))
        assert not e.value.transient
        assert ("(remembered: the compiler rejected it; this process does not compile it "
                "again)") in str(e.value)


# --- on-demand records count toward the bound ------------------------------------


def test_on_demand_records_are_entries_of_the_cache(tmp_path, cache):
    lib = bindthem.build(kernel_tree(tmp_path / "src"), cxxflags="-O0")
    lib.axpy(np.zeros(2), 1.0)  # records axpy<double> in on-demand/
    root = cachemod.resolve()
    seen = [e for e in cachemod.entries(root) if e["kind"] == "on-demand"]
    assert len(seen) == 1 and seen[0]["size"] > 0
    r = subprocess.run([sys.executable, "-m", "bindthem", "cache", "list"],
                       env=python_env(), capture_output=True, text=True)
    assert r.returncode == 0 and " on-demand " in r.stdout
    assert seen[0]["path"] in cachemod.evict(root, 0)
    assert not [e for e in cachemod.entries(root) if e["kind"] == "on-demand"]


# --- racing processes at the size limit --------------------------------------------

WORKER = """\
import pickle, random, sys, time
import numpy as np
unpickled, open_ones = pickle.load(open(sys.argv[1], "rb"))
deadline = time.monotonic() + float(sys.argv[2])
random.seed(int(sys.argv[3]))
work = [("unpickled", i, None) for i in range(len(unpickled))]
work += [("on demand", i, t) for i in range(len(open_ones))
         for t in (np.float64, np.float32, np.int64)]
random.shuffle(work)
done = 0
for kind, i, t in work:
    if time.monotonic() > deadline:
        break
    try:
        if kind == "unpickled":  # its files are gone: built from sources/
            step, data = unpickled[i]
            got, want = pickle.loads(data).step(1), step
        else:  # an open function: its first call with this type compiles it
            step, data = open_ones[i]
            x = np.zeros(2, t)
            pickle.loads(data)(x, t(1))
            got, want = x.tolist(), [step, step]
    except Exception as e:
        print("FAILED", kind, i, t, type(e).__name__, str(e)[:800])
    else:
        if got != want:
            print("WRONG", kind, i, t, got, want)
    done += 1
print("done", done)
"""


def test_processes_making_first_calls_at_the_size_limit(tmp_path, cache):
    """Six processes share a cache bounded at one byte (every compile evicts
    all that is not in use), unpickling Libraries whose files are gone and
    making first calls of open functions for 15 s: no call fails, none
    returns another kernel's result."""
    unpickled, open_ones = [], []
    for i in range(3):
        lib = bindthem.build(kernel_tree(tmp_path / ("gone%d" % i), step=i + 2),
                             cxxflags="-O0")
        unpickled.append((i + 2, pickle.dumps(lib)))
        os.rename(tmp_path / ("gone%d" % i), tmp_path / ("away%d" % i))
        lib = bindthem.build(kernel_tree(tmp_path / ("open%d" % i), step=i + 5),
                             cxxflags="-O0")
        open_ones.append((i + 5, pickle.dumps(lib.axpy)))
    work = tmp_path / "work.pickle"
    work.write_bytes(pickle.dumps((unpickled, open_ones)))
    env = python_env(BINDTHEM_CACHE=str(tmp_path / "shared"), BINDTHEM_CACHE_SIZE="1",
                     CXX="c++")
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(work), "15", str(n)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for n in range(6)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        outs.append(out)
        assert p.returncode == 0, err[-3000:]
    bad = [line for out in outs for line in out.splitlines() if not line.startswith("done")]
    assert bad == []
    assert all(int(out.split()[-1]) >= 1 for out in outs)
