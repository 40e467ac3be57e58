"""One Function hammered from several threads: dispatch misses that grow the
cache while other threads probe it, the last-call memo rewritten by every
change of dtypes, libraries bound again, and pickling, with every result
checked. On free-threaded CPython (3.13t, PYTHON_GIL=0) the threads really
run at once; tests/run_tsan.sh runs this file under ThreadSanitizer; with the
GIL it runs quickly, as a check of the same code with a small switch interval."""

import gc
import os
import pickle
import subprocess
import sys
import sysconfig
import threading
import time
import weakref

import numpy as np
import pytest

from support import python_env

import bindthem

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
THREADS = 4
# seconds each hammering test runs its threads: with the GIL the threads only take
# turns, so a short run checks the same code
SECONDS = float(os.environ.get("BINDTHEM_FT_SECONDS", "1.0" if FREE_THREADED else "0.3"))

HEADER = """\
// y[i] = x[i] + s; returns the sum of y.
template <typename T>
double shift(const T x[], const int x_size, T s, T y[], const int y_size)
{
    double total = 0;
    for (int i = 0; i < x_size; i++) {
        y[i] = x[i] + s;
        total += (double)y[i];
    }
    return total;
}
"""
DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64"]
CTYPES = ["int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
          "uint64_t", "float", "double"]
YAML = "- types:\n" + "".join("    - [%s]\n" % t for t in CTYPES) + "  functions: [shift]\n"
# the scalar s as Python and NumPy give it: with the array's dtype, each a dispatch key
SCALARS = [lambda dt: 3, lambda dt: np.dtype(dt).type(3), lambda dt: np.int8(3)]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    d = tmp_path_factory.mktemp("ft")
    (d / "ft.h").write_text(HEADER)
    (d / "ft.yml").write_text(YAML)
    (d / "cache").mkdir()
    return d


def build(project):
    return bindthem.build(str(project / "ft.h"), str(project / "ft.yml"),
                          cache_dir=str(project / "cache"))


@pytest.fixture(scope="module")
def lib(project):
    return build(project)


def cases():
    """(dtype, scalar maker) pairs whose scalar fits the dtype's overload:
    10 dtypes x 3 scalars, 29 dispatch keys (the cache grows from 16 to 64)."""
    return [(dt, make) for dt in DTYPES for make in SCALARS]


def call_and_check(f, dt, make, n):
    x = np.arange(n, dtype=dt)
    y = np.zeros(n, dtype=dt)
    s = make(dt)
    got = f(x, s, y)
    want = x + np.asarray(s).astype(dt)
    if not np.array_equal(y, want) or got != float(want.astype(np.float64).sum()):
        raise AssertionError("%s with %r: got %r and %r, expected %r" % (dt, s, got, y, want))


def hammer(work, seconds=SECONDS, threads=THREADS):
    """Runs work(thread_index, round) in `threads` threads, started together,
    for `seconds`; re-raises the first failure. Returns the rounds run."""
    start = threading.Barrier(threads)
    errors, counts = [], [0] * threads
    deadline = [0.0]

    def run(i):
        try:
            start.wait()
            if i == 0:
                deadline[0] = time.monotonic() + seconds
            r = 0
            while not errors and (deadline[0] == 0.0 or time.monotonic() < deadline[0]):
                work(i, r)
                r += 1
            counts[i] = r
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # with the GIL: switch threads as often as it lets
    try:
        ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    if errors:
        raise errors[0]
    return sum(counts)


def test_dispatch_misses_from_threads_at_once(project):
    # a fresh Function: its cache starts empty, so the threads' first calls all miss,
    # insert and grow the table while the others probe it
    f = build(project).shift
    all_cases = cases()

    def work(i, r):
        for k in range(len(all_cases)):
            dt, make = all_cases[(k * (i + 1) + r) % len(all_cases)]
            call_and_check(f, dt, make, 3 + (k % 5))

    rounds = hammer(work)
    assert rounds >= THREADS
    info = f._dispatch_info
    # each key once: a thread that missed together with another does not add it twice
    assert info["cached"] == len({(dt, type(make(dt))) for dt, make in all_cases})
    assert info["scans"] >= info["cached"]


def test_the_last_call_memo_under_alternating_dtypes(lib):
    # each thread its own dtype, every call the same: the memo is rewritten by
    # each thread in turn, and a call must never take another thread's overload
    f = lib.shift

    def work(i, r):
        dt = DTYPES[(i * 3) % len(DTYPES)]
        for _ in range(20):
            call_and_check(f, dt, SCALARS[1], 4)

    hammer(work)


def test_binding_again_while_others_call(project, lib):
    # threads 1.. call the shared Function; thread 0 binds the library again and
    # again, calls the new Function, and drops it (its cache freed while others run)
    f = lib.shift

    def work(i, r):
        if i == 0:
            g = build(project).shift
            call_and_check(g, DTYPES[r % len(DTYPES)], SCALARS[0], 5)
            del g
        else:
            call_and_check(f, DTYPES[(i + r) % len(DTYPES)], SCALARS[r % 3], 6)

    hammer(work)


def test_pickling_while_others_call(lib):
    f = lib.shift
    data = pickle.dumps(f)

    def work(i, r):
        if i % 2 == 0:
            g = pickle.loads(data)
            assert g is f  # the live Function of this process
            assert pickle.loads(pickle.dumps(lib)) is lib
        call_and_check(f, DTYPES[(i + r) % len(DTYPES)], SCALARS[1], 3)

    hammer(work)


def test_options_blocks_in_threads(lib):
    # bindthem.options() is per thread (a context variable); its process-wide
    # count of open blocks changes from every thread at once
    f = lib.shift

    def work(i, r):
        policy = ("release", "keep")[i % 2]
        with bindthem.options(gil=policy):
            assert bindthem._core._options_get()[0] == policy
            call_and_check(f, "float64", SCALARS[0], 2)
        assert bindthem._core._options_get() == (None, None)

    hammer(work)
    assert bindthem._core._options_get() == (None, None)


def test_a_function_outlives_its_library_in_other_threads(project):
    # the Library dies while threads hold its Functions (no one assumes it dies at once),
    # except on CPython 3.13t, which makes every module object made after a thread
    # started (a Library is one) immortal: then it lives on
    lib = build(project)
    f = lib.shift
    ref = weakref.ref(lib)
    immortal = sys.getrefcount(lib) >= 1 << 30
    del lib

    def work(i, r):
        call_and_check(f, DTYPES[(i + r) % len(DTYPES)], SCALARS[0], 2)

    hammer(work, seconds=min(SECONDS, 0.5))
    for _ in range(50):
        gc.collect()
        if ref() is None or immortal:
            break
        time.sleep(0.01)
    assert (ref() is None and f.library is None) != immortal
    call_and_check(f, "int32", SCALARS[0], 3)


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython (3.13t)")
def test_import_keeps_the_gil_off():
    # bindthem._core declares Py_MOD_GIL_NOT_USED: importing it (and NumPy) leaves the
    # GIL disabled, with no RuntimeWarning, unless the user asked for the GIL
    code = ("import sys, warnings; warnings.simplefilter('error')\n"
            "import bindthem, bindthem._core, bindthem.cuda\n"
            "print(sys._is_gil_enabled())\n")
    env = python_env()
    env.pop("PYTHON_GIL", None)
    proc = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False", proc.stdout + proc.stderr
    assert "GIL" not in proc.stderr, proc.stderr
