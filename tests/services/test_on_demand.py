"""Instantiation on demand (issue 31): bindthem.build without instantiate.yml
binds templated functions open; a call deduces the template arguments,
compiles that instantiation once through the cache and adds it.

Compiler runs are counted with a wrapper compiler that logs each command.
"""

import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

from support import python_env

import bindthem
from bindthem._services import display

KERNELS = """\
// x[i] += a for i < n (n: the first Ap[0] elements).
template <class I, class T>
void axpy(const I Ap[], const int Ap_size, T x[], const int x_size, const T a)
{
    for (I i = 0; i < Ap[0]; i++)
        x[i] += a;
}

// y[i] = x[i] + z[i]
template <class T>
void add(const T x[], const int x_size, const T z[], const int z_size, T y[], const int y_size)
{
    for (int i = 0; i < y_size; i++)
        y[i] = x[i] + z[i];
}

// Twice v.
template <class T> T twice(T v) { return v + v; }

// A zero of type T: nothing in the call says which T.
template <class T> T zero(int n) { return T(n) * T(0); }

// Compiles for arithmetic T only.
template <class T> void fails_for_complex(T x[], const int x_size) { x[0] = x[0] < T(1); }

int plain(int a) { return a + 1; }
"""


@pytest.fixture()
def setup(tmp_path, monkeypatch):
    """(header, log): the header in tmp_path, a private cache, and $CXX a
    wrapper that appends each compile command (not --version) to log."""
    header = tmp_path / "kern.h"
    header.write_text(KERNELS)
    log = tmp_path / "cxx.log"
    cxx = tmp_path / "cxx.sh"
    cxx.write_text('#!/bin/sh\ncase "$*" in *-o*) echo "$*" >> %s;; esac\nexec c++ "$@"\n' % log)
    cxx.chmod(0o755)
    monkeypatch.setenv("CXX", str(cxx))
    monkeypatch.setenv("BINDTHEM_CACHE", str(tmp_path / "cache"))
    return header, log


def compiles(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_arrays_deduce_and_later_calls_use_the_new_overload(setup):
    header, log = setup
    lib = bindthem.build(header)
    assert lib.axpy.open and lib.axpy.overloads == () and lib.plain(1) == 2
    base = compiles(log)
    ap, x = np.array([2], np.int32), np.zeros(3)
    lib.axpy(ap, x, 1.5)
    assert x.tolist() == [1.5, 1.5, 0.0]
    assert [s.split("(")[0] for s in lib.axpy.overloads] == ["void axpy<int, double>"]
    assert compiles(log) == base + 1
    lib.axpy(ap, x, 1.0)  # the normal dispatch now: no compile
    lib.axpy(np.array([1], np.int64), np.zeros(2, np.float32), a=2)  # int64 -> long
    assert [s.split("(")[0] for s in lib.axpy.overloads] == [
        "void axpy<int, double>", "void axpy<long, float>"]
    assert compiles(log) == base + 2
    assert lib.axpy._dispatch_info is not None and x.tolist() == [2.5, 2.5, 0.0]
    # shown wherever overloads show, with where the template is
    html, text = lib.axpy._repr_html_(), display.function_text(lib.axpy)
    for shown in (html, text):
        assert "axpy&lt;long, float&gt;" in shown or "axpy<long, float>" in shown
        assert "open: a call with types no overload takes" in shown and "kern.h:3" in shown
    assert bindthem.getsource(lib.axpy).startswith("// x[i] += a")


def test_scalars_deduce_by_python_and_numpy_type(setup):
    header, _ = setup
    lib = bindthem.build(header)
    assert lib.twice(21) == 42 and lib.twice(2.5) == 5.0 and lib.twice(1 + 2j) == 2 + 4j
    assert [s.split("(")[0] for s in lib.twice.overloads] == [
        "long twice<long>", "double twice<double>",
        "std::complex<double> twice<std::complex<double>>"]
    assert lib.twice(7) == 14 and len(lib.twice.overloads) == 3
    fresh = bindthem.build(header)
    assert fresh.twice(np.float32(1.5)) == 3.0
    # an overload that takes the call with a conversion answers it: no new instantiation
    assert fresh.twice(2) == 4.0
    assert [s.split("(")[0] for s in fresh.twice.overloads] == ["float twice<float>"]


def test_arrays_fix_a_parameter_before_scalars(setup):
    header, _ = setup
    lib = bindthem.build(header)
    x = np.zeros(2, np.float32)
    lib.axpy(np.array([1], np.int32), x, 2)  # T from x: float; the int a converts
    assert lib.axpy.overloads[0].startswith("void axpy<int, float>") and x[0] == 2


def test_conflicting_and_undeducible_parameters_name_them(setup):
    header, log = setup
    lib = bindthem.build(header)
    base = compiles(log)
    with pytest.raises(TypeError) as e:
        lib.add(np.zeros(2, np.float32), np.zeros(2), np.zeros(2))
    msg = str(e.value)
    assert "T conflicts: float from x (float32 array), double from z (float64 array)" in msg
    assert "- types:\n    - [float]\n  functions: [add]" in msg
    with pytest.raises(TypeError, match=r"T cannot be deduced: no argument declared with it "
                       r"was given(.|\n)*- \[<T>\]\n  functions: \[zero\]"):
        lib.zero(3)
    with pytest.raises(TypeError, match=r"I cannot be deduced: the arguments declared with it "
                       r"\(Ap \(list\)\) have no type"):
        lib.axpy([1], np.zeros(2), 1.0)
    # arguments that do not bind to the parameters: Python's own message
    with pytest.raises(TypeError, match="axpy"):
        lib.axpy(np.zeros(1, np.int32))
    assert compiles(log) == base and lib.add.overloads == ()


def test_failed_instantiation_reads_as_a_build_error_and_is_remembered(setup):
    header, log = setup
    lib = bindthem.build(header)
    base = compiles(log)
    x = np.zeros(2, np.complex128)
    for _ in range(3):
        with pytest.raises(bindthem.BuildError) as e:
            lib.fails_for_complex(x)
        assert "instantiating fails_for_complex<std::complex<double>> on demand" in str(e.value)
        assert "kern.h:" in e.value.output and "error" in e.value.output
    assert "remembered" in str(e.value)
    assert compiles(log) == base + 1  # once, not per call
    y = np.zeros(2)
    lib.fails_for_complex(y)  # other types still instantiate
    assert y[0] == 1


def test_instantiations_compile_the_text_the_library_was_built_from(setup, tmp_path):
    """The header and a local include edited after the build, then removed:
    later instantiations still compile the build's text (a copy the cache
    keeps), so one Library never mixes two versions of its header. An
    include outside the header's folder (never copied) is read where it is."""
    _, log = setup
    header = tmp_path / "src" / "kern.h"
    (tmp_path / "src" / "inc").mkdir(parents=True)
    (tmp_path / "src" / "inc" / "step.h").write_text("#define STEP 1\n")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "twice.h").write_text("#define TWICE(v) (2 * (v))\n")
    header.write_text('#include "inc/step.h"\n#include "../common/twice.h"\n'
                      + KERNELS.replace("x[i] += a;", "x[i] += TWICE(STEP * a);"))
    lib = bindthem.build(header)
    x = np.zeros(2)
    lib.axpy(np.array([2], np.int32), x, 1.5)
    assert x.tolist() == [3.0, 3.0]
    header.write_text(header.read_text().replace("x[i] += TWICE", "x[i] -= TWICE"))
    (tmp_path / "src" / "inc" / "step.h").write_text("#define STEP 10\n")
    y = np.zeros(2, np.float32)
    lib.axpy(np.array([2], np.int64), y, 1.5)  # axpy<long, float>: from the built text
    assert y.tolist() == [3.0, 3.0]
    copies = list((tmp_path / "cache" / "sources").glob("*/src/kern.h"))
    assert len(copies) == 1 and "x[i] += TWICE(STEP * a);" in copies[0].read_text()
    assert (copies[0].parent / "inc" / "step.h").read_text() == "#define STEP 1\n"
    assert "-iquote %s" % header.parent in log.read_text().splitlines()[-1]
    header.unlink()
    z = np.zeros(2, np.float32)
    lib.axpy(np.array([2], np.int32), z, 2.0)  # axpy<int, float>: the header is gone
    assert z.tolist() == [4.0, 4.0]
    # a failure compiling the copy says whose text it is and that the file changed
    with pytest.raises(bindthem.BuildError) as e:
        lib.fails_for_complex(np.zeros(2, np.complex128))
    assert ("from the text %s and its local includes had when the Library was built" % header
            in str(e.value))
    assert "changed on disk since, or are gone" in str(e.value)


def test_threads_making_the_same_first_call_compile_once(setup):
    header, log = setup
    lib = bindthem.build(header)
    base = compiles(log)
    n = 4
    barrier, out, errs = threading.Barrier(n), [None] * n, []

    def work(i):
        x = np.zeros(3)
        barrier.wait()
        try:
            lib.axpy(np.array([3], np.int32), x, float(i))
        except BaseException as e:  # noqa: BLE001 - reported below
            errs.append(e)
        out[i] = x

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errs == []
    assert [x.tolist() for x in out] == [[float(i)] * 3 for i in range(n)]
    assert compiles(log) == base + 1 and len(lib.axpy.overloads) == 1


def test_calls_in_other_threads_go_on_while_an_overload_is_added(setup):
    header, _ = setup
    lib = bindthem.build(header)
    ap = np.array([2], np.int32)
    lib.axpy(ap, np.zeros(2), 1.0)
    stop, errs, counts = threading.Event(), [], [0, 0]

    def hammer(i):
        while not stop.is_set():
            x = np.zeros(2)
            try:
                lib.axpy(ap, x, 2.0)
                assert x.tolist() == [2.0, 2.0]
            except BaseException as e:  # noqa: BLE001 - reported below
                errs.append(e)
                return
            counts[i] += 1

    ts = [threading.Thread(target=hammer, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    try:
        for dt in (np.float32, np.complex128, np.complex64, np.int64):
            y = np.zeros(2, dt)
            lib.axpy(ap, y, dt(3))
            assert y.tolist() == [3, 3]
    finally:
        stop.set()
        for t in ts:
            t.join()
    assert errs == [] and min(counts) > 0 and len(lib.axpy.overloads) == 5


RUN = """\
import sys, numpy as np, bindthem
lib = bindthem.build(sys.argv[1])
x = np.zeros(2)
lib.axpy(np.array([2], np.int32), x, 3.0)
print(x.tolist(), len(lib.axpy.overloads))
"""


def test_a_second_process_takes_the_instantiation_from_the_cache(setup, tmp_path):
    header, log = setup
    env = python_env()
    env.update(CXX=os.environ["CXX"], BINDTHEM_CACHE=os.environ["BINDTHEM_CACHE"])
    outs = []
    for _ in range(2):
        before = compiles(log)
        r = subprocess.run([sys.executable, "-c", RUN, str(header)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        outs.append((r.stdout.strip(), compiles(log) - before))
    assert outs[0][0] == outs[1][0] == "[3.0, 3.0] 1"
    assert outs[0][1] >= 1 and outs[1][1] == 0  # the second run compiles nothing


UNPICKLE = """\
import pickle, sys, numpy as np
fn = pickle.loads(sys.stdin.buffer.read())
x = np.zeros(2, np.float32)
fn(np.array([1], np.int64), x, np.float32(4))
import bindthem
print(x.tolist(), fn.open, [s.split("(")[0] for s in fn.overloads])
"""


def test_pickled_function_instantiates_what_a_call_needs_in_a_fresh_process(setup, tmp_path):
    header, _ = setup
    lib = bindthem.build(header)
    lib.axpy(np.array([1], np.int32), np.zeros(1), 1.0)
    source = bindthem.info(lib).source
    assert source.on_demand == [["axpy", ["int", "double"]]]
    data = pickle.dumps(lib.axpy)
    env = python_env()
    env.update(BINDTHEM_CACHE=str(tmp_path / "other-cache"))  # a machine of its own
    header.rename(tmp_path / "moved.h")  # the worker builds the carried text
    r = subprocess.run([sys.executable, "-c", UNPICKLE], input=data, env=env,
                       capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().split("\n")[0] == "[4.0, 0.0] True ['void axpy<long, float>']"


def test_a_pickle_cannot_name_other_types_than_the_table(setup):
    header, _ = setup
    lib = bindthem.build(header)
    source = bindthem.info(lib).source
    fields = source.__reduce__()[1][0]
    for bad in ([["axpy", ["int); system(\"x\"); (int"]]], [["axpy", "int"]], "x"):
        forged = dict(fields, on_demand=bad)
        with pytest.raises(bindthem.PickleError, match="on_demand"):
            pickle.loads(_reduce_with(forged))


def _reduce_with(fields):
    from bindthem import _unpickle
    return pickle.dumps(_Call(_unpickle.source, fields))


class _Call:
    def __init__(self, fn, fields):
        self.fn, self.fields = fn, fields

    def __reduce__(self):
        return (self.fn, (self.fields,))


def test_yaml_build_is_closed_unless_asked(setup, tmp_path):
    header, _ = setup
    yml = tmp_path / "i.yml"
    yml.write_text("- types:\n    - [int, double]\n  functions: [axpy]\n"
                   "- types: null\n  functions: [plain]\n")
    closed = bindthem.build(header, yml)
    assert not closed.axpy.open
    with pytest.raises(TypeError, match="The overloads are"):
        closed.axpy(np.array([1], np.int64), np.zeros(1, np.float32), 1.0)
    opened = bindthem.build(header, yml, on_demand=True)
    assert opened.axpy.open and len(opened.axpy.overloads) == 1
    opened.axpy(np.array([1], np.int64), np.zeros(1, np.float32), 1.0)
    assert len(opened.axpy.overloads) == 2 and "twice" in opened.__all__


def test_stubs_list_the_instantiations_seen(setup, tmp_path):
    header, _ = setup
    lib = bindthem.build(header)
    lib.twice(2.0)
    out = tmp_path / "kern.pyi"
    r = subprocess.run([sys.executable, "-m", "bindthem.stubs", str(header), "--on-demand-seen",
                        "-o", str(out)], env=dict(python_env(), **{
                            "BINDTHEM_CACHE": os.environ["BINDTHEM_CACHE"]}),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "def twice(v: float) -> float:" in text, text
    assert "def zero" not in text and "def plain(a: int) -> int" in text
    r = subprocess.run([sys.executable, "-m", "bindthem.stubs", str(header), "--on-demand",
                        "zero:float", "--on-demand", "add:std::complex<double>"],
                       env=python_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "def zero(n: int) -> float:" in r.stdout and "def add(" in r.stdout
    assert "def twice" not in r.stdout


def test_notebook_magic_without_types_instantiates_on_demand(tmp_path):
    pytest.importorskip("nbclient")
    import jupyter_session as js

    kernels = tmp_path / "k"
    (kernels / "bindthem-test").mkdir(parents=True)
    env = {"PYTHONPATH": python_env()["PYTHONPATH"], "BINDTHEM_CACHE": str(tmp_path / "c"),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    import json
    (kernels / "bindthem-test" / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "t", "language": "python", "env": env}))
    import nbformat
    client = js.notebook_client(nbformat.v4.new_notebook(), str(kernels), tmp_path)
    with client.setup_kernel():
        s = js.Session(client)
        s.run("%load_ext bindthem")
        s.run("%%bindthem k\n" + KERNELS)
        out, _ = s.run("import numpy as np\nx = np.zeros(2)\n"
                       "k.axpy(np.array([2], np.int32), x, 1.5)\n"
                       "print(x.tolist(), k.axpy.overloads)")
        assert "[1.5, 1.5] ('void axpy<int, double>" in js.stdout(out)
        out, _ = s.run("k.fails_for_complex(np.zeros(1, complex))", ok=False)
        (err,) = js.errors(out)
        tb = "\n".join(js.ANSI.sub("", line) for line in err["traceback"])
        line = KERNELS.splitlines().index(
            "template <class T> void fails_for_complex(T x[], const int x_size) "
            "{ x[0] = x[0] < T(1); }") + 1
        assert err["ename"] == "BuildError" and "cell:%d:" % line in tb, tb


KEYWORDS = """\
import sys, numpy as np, bindthem
lib = bindthem.build(sys.argv[1])
x = np.zeros(2)
lib.axpy(Ap=np.array([2], np.int32), x=x, a=3.0)  # the first call, every argument by keyword
lib.axpy(np.array([1], np.int32), x, a=1.0)
try:
    lib.axpy(np.array([1], np.int32), x, b=1.0)
except TypeError as e:
    print(e)
print(x.tolist())
"""


def test_keyword_calls_of_an_open_function(setup):
    """An open Function's keyword map is there before its first overload
    (a subprocess: a missing map would crash)."""
    header, _ = setup
    env = python_env()
    env.update(CXX=os.environ["CXX"], BINDTHEM_CACHE=os.environ["BINDTHEM_CACHE"])
    r = subprocess.run([sys.executable, "-c", KEYWORDS, str(header)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    err, xs = r.stdout.strip().splitlines()
    assert "unexpected keyword argument 'b'" in err and "'Ap', 'x', 'a'" in err
    assert xs == "[4.0, 3.0]"
