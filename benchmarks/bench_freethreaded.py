"""Free-threaded CPython: N threads (1, 2, 4) calling one small kernel (an axpy
over 16 doubles, ~0.1 microseconds a call), against one thread, two ways:
every thread calling one shared Function, and each thread calling a Function
of its own (the same kernel bound once per thread, as each Dask worker
thread or each of a pool's tasks that binds its library has). Every call runs
bindthem's whole call path (dispatch memo, argument walk, direct call) and
the GIL policy keeps the GIL (arrays under GIL_RELEASE_MIN_ELEMENTS), so only
a free-threaded CPython (3.13t, GIL off) can run the threads at once; with
the GIL the ratio stays near 1. The ceiling is min(N, os.cpu_count()).
bindthem's call writes no shared memory; CPython 3.13t's own reference
count of a callable that several threads call (each call takes and drops a
reference, an atomic add on the object's shared count from every thread but
its owner) is the one thing those threads share: the "shared" column
measures it, the "own" column what bindthem's call path allows.

Self-contained (the bindthem it imports, a kernel built into a temporary
folder; no pyamg): run it with a 3.13t interpreter, e.g. the one
tests/run_freethreaded.sh installs bindthem into:

    ~/.cache/bindthem-ci/py3.13t/venv/bin/python benchmarks/bench_freethreaded.py [SECONDS]

--callgrind [PYTHON...]: one call's instructions (callgrind) on each interpreter
(default: the CI cache's 3.13 and 3.13t, tests/run_pythons.sh and
tests/run_freethreaded.sh): the axpy, shapes.h's k1 and k63 through bindthem
and the floor (benchmarks/floor: the same checks by hand, METH_FASTCALL) and
the floor's noop (the Python loop and a call that does nothing: CPython's
share), then each row's ratio to the first interpreter's. Measured as
bench_callgrind.py measures ((I(2N) - I(N)) / N, after warm-up calls); each
interpreter builds its own private bindthem (benchmarks/common.py, -O2) and
floor (-O3), under $BINDTHEM_BENCH_CACHE/ft-<its ABI>. Needs valgrind and
pyamg's sdist headers (the floor's; fetched and cached by common.py).

    python benchmarks/bench_freethreaded.py --callgrind [PYTHON...]
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

import numpy as np

import bindthem

HEADER = """\
// y = a x + y over n elements.
void axpy(const double x[], const int x_size, double a, double y[], const int y_size)
{
    for (int i = 0; i < x_size; i++)
        y[i] += a * x[i];
}
"""


def rate(fs, threads, seconds):
    """Calls per second over all threads, thread i calling fs[i % len(fs)]
    with its own arrays."""
    start = threading.Barrier(threads + 1)
    stop = threading.Event()
    counts = [0] * threads

    def run(i):
        f = fs[i % len(fs)]
        x, y = np.ones(16), np.zeros(16)
        n = 0
        start.wait()
        while not stop.is_set():
            for _ in range(200):
                f(x, 0.5, y)
            n += 200
        counts[i] = n

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main(seconds=2.0):
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "axpy.h"), "w") as fh:
            fh.write(HEADER)
        # the kernel bound 4 times: 4 Libraries, 4 Functions of the one shared library
        fs = [bindthem.build(os.path.join(d, "axpy.h"), cache_dir=os.path.join(d, "cache"),
                             name="axpy%d" % i).axpy for i in range(4)]
        assert len({id(f) for f in fs}) == 4
        for f in fs:
            f(np.ones(16), 0.5, np.zeros(16))
        print("Python %s (%s, GIL %s), %d CPUs, load average %.2f; %.1f s per row"
              % (sys.version.split()[0],
                 "free-threaded" if sysconfig.get_config_var("Py_GIL_DISABLED") else "with GIL",
                 "on" if gil else "off", os.cpu_count(), os.getloadavg()[0], seconds))
        print("%-8s %14s %12s %14s %12s" % ("threads", "shared calls/s", "vs 1 thread",
                                            "own calls/s", "vs 1 thread"))
        one = None
        for n in (1, 2, 4):
            # interleaved, best of 3 (a 2-core machine's neighbours come and go)
            shared = own = 0.0
            for _ in range(3):
                shared = max(shared, rate(fs[:1], n, seconds / 6))
                own = max(own, rate(fs, n, seconds / 6))
            one = one or (shared, own)  # one thread: the same call either way
            print("%-8d %14.0f %12.2f %14.0f %12.2f"
                  % (n, shared, shared / one[0], own, own / one[1]))


# ---- --callgrind: one call's instructions, an interpreter against another ----

N = 2000
HERE = os.path.dirname(os.path.abspath(__file__))
# the axpy's loop; the others are bench_callgrind.py's (LOOP)
AXPY_LOOP = """
def run_axpy(n, f, x, y):
    for _ in range(n):
        f(x, 0.5, y)
"""
# (row, loop, who: bindthem (shapes.h's, or the axpy) or the floor, the function, what it does)
CG_CASES = (
    ("axpy", "run_axpy", "bindthem", "axpy", "axpy(x, 0.5, y), 16 doubles"),
    ("k1", "run_k1", "bindthem", "k1", "k1(x), 1 array"),
    ("k63", "run_k63", "bindthem", "k63", "k63: 6 arrays + 3 scalars"),
    ("k63 keywords", "run_k63kw", "bindthem", "k63", "k63, the 3 scalars by keyword"),
    ("kdef defaults", "run_kdef0", "bindthem", "kdef", "kdef(x): both defaults used"),
    ("k1 nomatch", "run_err", "bindthem", "k1", "k1(int32 array): TypeError"),
    ("floor k1", "run_k1", "floor", "k1", "the floor's k1"),
    ("floor k63", "run_k63", "floor", "k63", "the floor's k63"),
    ("floor kdef defaults", "run_kdef0", "floor", "kdef", "the floor's kdef(x)"),
    ("floor k1 nomatch", "run_err", "floor", "k1", "the floor's k1(int32 array)"),
    ("noop", "run_axpy", "floor", "noop", "the floor's noop(x, 0.5, y): loop + call"),
)

# bindthem's rows and the floor's that make the same call (the noop: the axpy's loop and call)
OWN = (("axpy", "noop"), ("k1", "floor k1"), ("k63", "floor k63"),
       ("kdef defaults", "floor kdef defaults"), ("k1 nomatch", "floor k1 nomatch"))


def cg_worker():
    """Runs under callgrind: each case warmed up, then N, N and 2N calls
    between CALLGRIND_ZERO_STATS and a dump named "row|calls" (the first
    discarded: one-off costs), as bench_callgrind.py does."""
    import numpy as np

    sys.path.insert(0, HERE)
    import bench_callgrind  # noqa: E402
    import common  # noqa: E402 (builds this checkout's bindthem for this interpreter)

    fl = common.floor()
    shapes = common.shapes()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "axpy.h"), "w") as fh:
            fh.write(HEADER)
        import bindthem
        axpy = bindthem.build(os.path.join(d, "axpy.h"), cache_dir=os.path.join(d, "cache")).axpy
        a = np.zeros(2)
        args = {"run_axpy": (np.ones(16), np.zeros(16)), "run_k1": (a,), "run_kdef0": (a,),
                "run_k63": (a, 0.5, 2, 3), "run_k63kw": (a, 0.5, 2, 3),
                "run_err": (np.zeros(2, np.int32),)}
        for row, loop, who, name, _ in CG_CASES:
            ns = {}  # each case its own code (bench_callgrind.loop_function says why)
            exec(compile(bench_callgrind.LOOP + AXPY_LOOP, "<loop of %s>" % row, "exec"), ns)
            f = getattr(fl if who == "floor" else shapes, name) if name != "axpy" else axpy
            run = ns[loop]
            run(500, f, *args[loop])
            for n in (-N, N, 2 * N):
                fl.cg_zero()
                run(abs(n), f, *args[loop])
                fl.cg_dump("%s|%d" % (row, n))


def cg_pythons(given):
    if given:
        return given
    ci = os.path.expanduser(os.environ.get("BINDTHEM_CI_CACHE") or "~/.cache/bindthem-ci")
    return [p for p in (os.path.join(ci, "py3.13", "bin", "python"),
                        os.path.join(ci, "py3.13t", "venv", "bin", "python")) if os.path.exists(p)]


def cg_describe(py):
    """Of interpreter py: its description ('3.13.15 free-threaded (-O3)'),
    SOABI, and whether it is free-threaded."""
    out = subprocess.run([py, "-c", "import sys, sysconfig as s; print(sys.version.split()[0], "
                          "bool(s.get_config_var('Py_GIL_DISABLED')), s.get_config_var('OPT'), "
                          "s.get_config_var('SOABI'), sep='|')"],
                         capture_output=True, text=True, check=True).stdout.strip().split("|")
    opt = " ".join(w for w in out[2].split() if w.startswith("-O"))
    ft = out[1] == "True"
    return "%s %s (%s)" % (out[0], "free-threaded" if ft else "GIL", opt), out[3], ft


def cg_measure(py, soabi, ft, keep=None):
    """{row: instructions per call} of interpreter py (a callgrind run of
    cg_worker); keep: a folder that keeps its dumps (--dump-instr=yes)."""
    cache = os.path.join(os.environ.get("BINDTHEM_BENCH_CACHE") or "/tmp/bindthem-bench",
                         "ft-" + soabi)
    os.makedirs(cache, exist_ok=True)
    folder = os.path.join(keep, soabi) if keep else tempfile.mkdtemp(dir=cache)
    os.makedirs(folder, exist_ok=True)
    env = dict(os.environ, BINDTHEM_BENCH_CACHE=cache)
    if ft:
        env["PYTHON_GIL"] = "0"
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out" % folder]
    if keep:
        cmd.append("--dump-instr=yes")
    proc = subprocess.run(cmd + [py, os.path.abspath(__file__), "--cg-worker"],
                          capture_output=True, text=True, cwd=cache, env=env)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise RuntimeError("callgrind run of %s failed" % py)
    sys.path.insert(0, HERE)
    import common  # noqa: E402
    res = common.callgrind_per_call(folder, N)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return res


def cg_main(pythons, keep=None):
    if not shutil.which("valgrind"):
        sys.exit("valgrind not found")
    cols = []
    for py in cg_pythons(pythons):
        text, soabi, ft = cg_describe(py)
        cols.append((text, cg_measure(py, soabi, ft, keep)))
    print("Instructions per call (callgrind, (I(%d)-I(%d))/%d, loop included)" % (2 * N, N, N))
    for i, (text, _) in enumerate(cols):
        print("  [%d] %s" % (i, text))
    if len({text[text.rfind("("):] for text, _ in cols}) > 1:
        print("  (built with other optimization levels: CPython's share differs by more than "
              "the GIL; compare interpreters built alike, benchmarks/README.md)")
    head = "%-44s" % "call" + "".join("%10s" % ("[%d]" % i) for i in range(len(cols)))
    head += "".join("%10s" % ("[%d]/[0]" % i) for i in range(1, len(cols)))
    print(head)
    for row, _, who, _, text in CG_CASES:
        vals = [res.get(row) for _, res in cols]
        line = "%-44s" % ("%s %s" % ("bindthem" if who == "bindthem" else "", text)).strip()
        line += "".join("%10.0f" % v for v in vals)
        line += "".join("%10.2f" % (v / vals[0]) for v in vals[1:])
        print(line)
    print("bindthem's own instructions (bindthem's call less the floor's same call):")
    for row, other in OWN:
        print("%-44s" % ("  %s - %s" % (row, other))
              + "".join("%10.0f" % (res[row] - res[other]) for _, res in cols))
    for i in range(1, len(cols)):  # issue 43's target: bindthem's calls within 1.2x
        worst = max((cols[i][1][row] / cols[0][1][row], row) for row, _, who, _, _ in CG_CASES
                    if who == "bindthem")
        print("bindthem on [%d] <= 1.2x [0], every row: %s (the most: %s, %.2f)"
              % (i, "yes" if worst[0] <= 1.2 else "NO", worst[1], worst[0]))
    return cols


if __name__ == "__main__":
    if sys.argv[1:2] == ["--cg-worker"]:
        cg_worker()
    elif sys.argv[1:2] == ["--callgrind"]:
        rest = sys.argv[2:]
        keep = rest[1] if rest[:1] == ["--keep"] else None
        cg_main(rest[2:] if keep else rest, keep and os.path.abspath(keep))
    else:
        main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
