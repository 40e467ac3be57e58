"""Instructions per call (callgrind), for the cases of bench_calls.py and the
call shapes of benchmarks/shapes/shapes.h (one array, 6 arrays + 3 scalars,
by keyword, NumPy scalars, 12 arrays, defaults, each error), each against
the floor's hand-written function and, in one table, nanobind, pybind11, cffi
and ctypes (bench_peers.py builds them and prints that table).

One valgrind process runs every case. Per case: 500 warm-up calls, then
CALLGRIND_ZERO_STATS, N calls, CALLGRIND_DUMP_STATS_AT, three times: with N
calls (discarded: the first dump of a case carries one-off costs), N, 2N
(the peers' cases: 100 warm-up calls, N = 200).
Instructions per call = (I(2N) - I(N)) / N, which cancels the fixed costs
(the client requests, loop set-up). What remains per call is the Python loop
iteration plus the call; the `noop` row (an 8-argument METH_FASTCALL function
that does nothing) is that Python-side cost, and the last column subtracts
it. The client requests come from the floor extension (valgrind/callgrind.h).

Counts are repeatable to a few instructions where wall times are not.

Run: [BENCH_SHAPES_ONLY=1] python benchmarks/bench_callgrind.py [--keep DIR]   (DIR keeps the
dumps, made with --dump-instr=yes, for callgrind_annotate / kcachegrind)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers  # noqa: E402
import common  # noqa: E402

N = 2000
OVERLOADS = ("f64", "f32", "c128", "i64c128")
# the floor function each overload is held against (the floor has no int64-index one)
FLOOR_OF = {"f64": "f64", "f32": "f32", "c128": "c128", "i64c128": "c128"}

LOOP = """
def run(n, f, Ap, Aj, Ax, x, b):
    for _ in range(n):
        f(Ap, Aj, Ax, x, b, 0, 0, 1)

def run_k1(n, f, x):
    for _ in range(n):
        f(x)

def run_k63(n, f, a, w, i, j):
    for _ in range(n):
        f(a, a, a, a, a, a, w, i, j)

def run_k63kw(n, f, a, w, i, j):
    for _ in range(n):
        f(a, a, a, a, a, a, w=w, n=i, m=j)

def run_k12(n, f, a):
    for _ in range(n):
        f(a, a, a, a, a, a, a, a, a, a, a, a)

def run_kz(n, f, z, c):
    for _ in range(n):
        f(z, c)

def run_kdef(n, f, x, w, i):
    for _ in range(n):
        f(x, w, i)

def run_kdef0(n, f, x):
    for _ in range(n):
        f(x)

def run_err(n, f, x):
    for _ in range(n):
        try:
            f(x)
        except (TypeError, ValueError):
            pass

def run_gserr(n, f, Ap, Aj, Ax, x, b):
    for _ in range(n):
        try:
            f(Ap, Aj, Ax, x, b, 0, 0, 1)
        except TypeError:
            pass

def run_errkw(n, f, x):
    for _ in range(n):
        try:
            f(x, y=1)
        except TypeError:
            pass

def run_alt(n, f, g, A, B):
    Ap, Aj, Ax, x, b = A
    Bp, Bj, Bx, y, c = B
    for _ in range(n):
        f(Ap, Aj, Ax, x, b, 0, 0, 1)
        g(Bp, Bj, Bx, y, c, 0, 0, 1)

def run_ct(n, f, Ap, Aj, Ax, x, b):
    n0, n1, n2, n3, n4 = len(Ap), len(Aj), len(Ax), len(x), len(b)
    for _ in range(n):
        f(Ap, n0, Aj, n1, Ax, n2, x, n3, b, n4, 0, 0, 1)
"""


def cases():
    """[(label, loop, callable, arrays)]"""
    import numpy as np
    lib = common.relaxation()
    fl = common.floor()
    stock = common.stock_relaxation()
    arr = {t: common.tiny(dt) for t, dt in (("f32", np.float32), ("f64", np.float64),
                                            ("c128", np.complex128))}
    Ap, Aj, Ax, x, b = arr["c128"]
    arr["i64c128"] = (Ap.astype(np.int64), Aj.astype(np.int64), Ax, x, b)
    out = []
    if os.environ.get("BENCH_SHAPES_ONLY"):  # the shapes' rows only (a quicker run)
        return shape_cases() + bench_peers.cases(shape_list()) + [
            ("noop", "run", fl.noop, arr["f64"])]
    for name, f in (("bindthem", lib.gauss_seidel), ("bindthem-ffi", lib.gauss_seidel),
                    ("pybind11", stock.gauss_seidel)):
        for t in OVERLOADS:
            out.append(("%s %s" % (name, t), "run", f, arr[t]))
    for t, f in (("f64", fl.gauss_seidel_f64), ("f32", fl.gauss_seidel_f32),
                 ("c128", fl.gauss_seidel_c128)):
        out.append(("floor %s" % t, "run", f, arr[t]))
    # a float64 call, then a float32 one, in turn: per pair (the two overloads the memo keeps)
    out.append(("bindthem f64/f32 in turn", "run_alt", lib.gauss_seidel,
                (lib.gauss_seidel, arr["f64"], arr["f32"])))
    out.append(("floor f64/f32 in turn", "run_alt", fl.gauss_seidel_f64,
                (fl.gauss_seidel_f32, arr["f64"], arr["f32"])))
    out.append(("ctypes f64", "run_ct", common.ctypes_gauss_seidel(lib, 1), arr["f64"]))
    out.append(("ctypes c128", "run_ct", common.ctypes_gauss_seidel(lib, 3), arr["c128"]))
    out.append(("noop", "run", fl.noop, arr["f64"]))
    return out + shape_cases() + bench_peers.cases(shape_list())


# (shape, loop, args, text): the call shapes of shapes.h, each through bindthem
# and the floor's hand-written function ("gs nomatch": gauss_seidel's 8 overloads)
def shape_list():
    import numpy as np
    a = np.zeros(2)
    return [
        ("k1", "run_k1", (a,), "k1(x), 1 array"),
        ("k63", "run_k63", (a, 0.5, 2, 3), "k63: 6 arrays + 3 scalars"),
        ("k63 keywords", "run_k63kw", (a, 0.5, 2, 3), "k63, the 3 scalars by keyword"),
        ("k63 numpy", "run_k63", (a, np.float64(0.5), np.int64(2), np.int64(3)),
         "k63, NumPy scalars (float64, int64, int64)"),
        ("k12", "run_k12", (a,), "k12: 12 arrays (24 C arguments)"),
        ("kdef all", "run_kdef", (a, 0.5, 2), "kdef(x, 0.5, 2): all given"),
        ("kdef defaults", "run_kdef0", (a,), "kdef(x): both defaults used"),
        ("k2d", "run_k1", (np.zeros((2, 2)),), "k2d(x), a 2-D array (x_size0, x_size1)"),
        ("kz", "run_kz", (np.zeros(2, np.complex128), 1 + 2j), "kz(z, 1+2j), a complex scalar"),
        ("k1 nomatch", "run_err", (np.zeros(2, np.int32),), "k1(int32 array): TypeError"),
        ("gs nomatch", "run_gserr", common.tiny(np.float16),
         "gauss_seidel(float16 arrays): TypeError, 8 overloads"),
        ("k1 0-d", "run_err", (np.zeros(()),), "k1(0-d array): ValueError"),
        ("k1 keyword", "run_errkw", (a,), "k1(x, y=1): unknown keyword, TypeError"),
        ("k1 strided", "run_err", (np.zeros(4)[::2],),
         "k1(strided x): bindthem copies it, the floor refuses it"),
        ("k1 unaligned", "run_err", (unaligned(2),),
         "k1(x at byte offset 1, 2 doubles): bindthem copies it in and back, the floor refuses it"),
        ("k1 unaligned 64", "run_err", (unaligned(64),),
         "k1(x at byte offset 1, 64 doubles): the same"),
    ]


def unaligned(n):
    """n float64 at byte offset 1 of a buffer (as np.frombuffer hands a network message
    over): NumPy calls it unaligned."""
    import numpy as np
    return np.frombuffer(bytearray(8 * n + 1), np.float64, n, 1)


def shape_cases():
    """[(label, loop, callable, args)] of the shapes: each kernel held in a
    local ("bindthem k1") and reached through its Library on every call
    ("bindthem lib.k1": loop "run_k1@k1"), and the floor's function held and
    reached through its module (an exact module, which CPython specializes)."""
    lib = common.shapes()
    fl = common.floor()
    rel = common.relaxation()
    out = []
    for shape, loop, args, _ in shape_list():
        fname = shape.split()[0]
        owner, name = (rel, "gauss_seidel") if fname == "gs" else (lib, fname)
        out.append(("bindthem %s" % shape, loop, getattr(owner, name), args))
        out.append(("bindthem lib.%s" % shape, "%s@%s" % (loop, name), owner, args))
        if fname != "gs" and "keyword" not in shape:  # the floor takes positional arguments only
            out.append(("floor %s" % shape, loop, getattr(fl, fname), args))
            out.append(("floor lib.%s" % shape, "%s@%s" % (loop, fname), fl, args))
    return out


def loop_function(loop, label):
    """LOOP's function `loop`, compiled afresh for one case: its own code, as
    CPython specializes each call site for what it calls, and a loop shared
    by cases carries one case's specialization into the next. "run_k1@k1" is
    run_k1 calling f.k1(...) where it calls f(...): the kernel looked up on
    its Library (or module) at every call."""
    name, _, attr = loop.partition("@")
    ns = {}
    src = LOOP + bench_peers.LOOP
    exec(compile(src.replace(" f(", " f.%s(" % attr) if attr else src,
                 "<loop of %s>" % label, "exec"), ns)
    return ns[name]


def worker():
    from bindthem import _core
    fl = common.floor()
    todo = cases()
    for label, loop, f, arrays, *calls in todo:
        run = loop_function(loop, label)
        # "bindthem-ffi": the same Function with the direct call switched off
        # (a tree from before the switch has libffi calls only)
        getattr(_core, "force_ffi", bool)(label.startswith("bindthem-ffi"))
        # a case may name fewer calls (the peers': up to a million instructions each)
        warm, k = calls[0] if calls else (500, N)
        run(warm, f, *arrays)
        # a first pair, discarded (its first dump carries one-off costs)
        for n in (-k, k, 2 * k):
            fl.cg_zero()
            run(abs(n), f, *arrays)
            fl.cg_dump("%s|%d" % (label, n))


def measure(keep=None):
    if not shutil.which("valgrind"):
        print("\n(valgrind not found: callgrind counts skipped)")
        return None
    folder = keep or tempfile.mkdtemp(dir=common.CACHE)
    os.makedirs(folder, exist_ok=True)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out" % folder]
    if keep:
        cmd.append("--dump-instr=yes")
    cmd += [sys.executable, os.path.abspath(__file__), "--worker"]
    env = common.env()
    env[bench_peers.ENV] = json.dumps(bench_peers.prepare())  # built here, not under valgrind
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=common.CACHE, env=env)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise RuntimeError("callgrind run failed")
    res = common.callgrind_per_call(folder, N)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    return res


def main(keep=None):
    res = measure(keep)
    if res is None:
        return None
    base = res.get("noop", 0)
    rows = []
    order = [c[0] for c in cases_labels()]
    for k in order:
        if k in res:
            rows.append([k, "%.0f" % res[k], "%.0f" % (res[k] - base)])
    common.table("Callgrind: instructions per call, gauss_seidel on a 2x2 CSR, empty sweep "
                 "((I(%d)-I(%d))/%d)" % (2 * N, N, N),
                 ["case", "instr/call", "minus noop"], rows,
                 "f32 = 1st overload <int,float,float>, f64 = 2nd, c128 = 4th "
                 "<int,complex<double>,double>, i64c128 = 8th <int64_t,complex<double>,double>.")
    if "bindthem f64" in res:
        summary(res)
    shapes_table(res)
    bench_peers.table(res, shape_list())
    targets_table(res)
    if "bindthem f64" in res:  # not in BENCH_SHAPES_ONLY's run
        chart(res)
    return res


def shapes_table(res, walls=None):
    """The call shapes: bindthem against the floor, in instructions per call
    (loop included), with wall ns per call (interleaved) and the same call
    through the Library (the floor's through its module) as further rows."""
    walls = walls if walls is not None else wall_times()

    def row(text, b, f):
        return [text, "%.0f" % b if b else "-", "%.0f" % f if f else "-",
                "%.2f" % (b / f) if b and f else "-"]

    rows = []
    for shape, _, _, text in shape_list():
        rows.append(row(text, res.get("bindthem " + shape), res.get("floor " + shape)))
        rows.append(row("  wall ns", walls.get("bindthem " + shape), walls.get("floor " + shape)))
        rows.append(row("  lib.%s(...), looked up at each call" % shape.split()[0],
                        res.get("bindthem lib." + shape), res.get("floor lib." + shape)))
    common.table("Callgrind: call shapes (benchmarks/shapes/shapes.h), instructions per call "
                 "with the loop, and wall ns per call", ["shape", "bindthem", "floor", "ratio"],
                 rows, "floor = a hand-written METH_FASTCALL function (benchmarks/floor) that "
                 "checks the same; it takes no keywords. Each case runs its own loop code. "
                 "lib.f: the kernel looked up on its Library at every call (the floor's on its "
                 "module). Wall: best of 5, bindthem and the floor interleaved in one process.")


# issue 30's targets, each (text, bindthem's instructions, the bound); nanobind
# 3.1 -O3's no-match count as the issue gave it, where bench_peers.py has none
NANOBIND_NO_MATCH = 12179


def targets(res):
    """[(target, value, bound)] of issue 30 that res (instructions per call)
    has the rows for."""
    out = []

    def add(text, a, b, times=1.0):
        if a in res and b in res:
            out.append((text, res[a], times * res[b]))

    add("gauss_seidel f64 <= 1.2x the floor", "bindthem f64", "floor f64", 1.2)
    add("k1 <= 1.8x the floor", "bindthem k1", "floor k1", 1.8)
    for shape in ("k63", "k63 numpy", "k12", "kdef all", "kdef defaults", "k1 nomatch",
                  "k1 strided"):
        add("%s <= 2x the floor" % shape, "bindthem " + shape, "floor " + shape, 2.0)
    add("defaults left out <= all given", "bindthem kdef defaults", "bindthem kdef all")
    add("keywords <= 1.3x positional", "bindthem k63 keywords", "bindthem k63", 1.3)
    if "bindthem k1 nomatch" in res:
        nb = res.get("nanobind k1 nomatch")  # measured (bench_peers.py) where nanobind installs
        out.append(("no-match <= nanobind's (%s)" % ("measured" if nb else "issue: %d"
                                                     % NANOBIND_NO_MATCH),
                    res["bindthem k1 nomatch"], nb or NANOBIND_NO_MATCH))
    return out


def targets43(res):
    """[(target, value, bound)] of issue 43 that res has the rows for."""
    out = []

    def add(text, a, b, times):
        if a in res and b in res:
            out.append((text, res[a], times * res[b]))

    for shape in ("k1", "k63", "k12", "k2d", "kz"):
        add("lib.%s <= 1.1x %s" % (shape, shape), "bindthem lib." + shape, "bindthem " + shape,
            1.1)
    add("f64/f32 in turn <= 1.2x f64 repeated (per pair)", "bindthem f64/f32 in turn",
        "bindthem f64", 2 * 1.2)
    for shape in ("k2d", "kz", "k1 0-d", "k1 nomatch"):
        add("%s <= 1.5x the floor" % shape, "bindthem " + shape, "floor " + shape, 1.5)
    for shape in ("k1 unaligned", "k1 unaligned 64"):
        add("%s <= 2x k1 aligned" % shape, "bindthem " + shape, "bindthem k1", 2.0)
    return out


def targets_table(res):
    for title, rows in (("Issue 30's targets", targets(res)), ("Issue 43's targets",
                                                                targets43(res))):
        common.table(title + " (instructions per call, loop included)",
                     ["target", "bindthem", "bound", "met"],
                     [[t, "%.0f" % v, "%.0f" % b, "yes" if v <= b else "NO"] for t, v, b in rows])


def wall_times(n=20000, repeat=5):
    """{label: ns per call} for the shape cases, best of `repeat`, every
    case's runs interleaved (so that drifts of the machine hit all alike)."""
    import time
    todo = [(label, loop_function(loop, label), f, args) for label, loop, f, args in shape_cases()]
    best = {}
    for label, run, f, args in todo:
        run(100, f, *args)
    for _ in range(repeat):
        for label, run, f, args in todo:
            t = time.perf_counter()
            run(n, f, *args)
            t = (time.perf_counter() - t) / n * 1e9
            best[label] = min(best.get(label, t), t)
    return best


def ratios(res):
    """{overload: (bindthem/floor, bindthem-ffi/floor, bindthem/pybind11)}, in
    instructions per call with the Python loop included (the issue's measure)."""
    return {t: (res["bindthem " + t] / res["floor " + FLOOR_OF[t]],
                res["bindthem-ffi " + t] / res["floor " + FLOOR_OF[t]],
                res["bindthem " + t] / res["pybind11 " + t]) for t in OVERLOADS}


def summary(res):
    rows = [[t, "%.0f" % res["bindthem " + t], "%.0f" % res["bindthem-ffi " + t],
             "%.0f" % res["floor " + FLOOR_OF[t]], "%.2f" % d, "%.2f" % f, "%.3f" % p]
            for t, (d, f, p) in ratios(res).items()]
    common.table("Callgrind: bindthem against the floor and pybind11 (instructions per call, "
                 "loop included)",
                 ["overload", "direct", "libffi", "floor", "direct/floor", "libffi/floor",
                  "direct/pybind11"], rows,
                 "libffi = the same build with bindthem._core.force_ffi(True) (the call path "
                 "before the direct call). i64c128 is held against the floor's c128 function. "
                 "Targets: direct/floor <= 2.0 (f64, 1st, 4th, 8th); direct/pybind11 <= 0.2 "
                 "on the 1st (f32).")
    print("bindthem direct, 4th/1st: %.3f, 8th/1st: %.3f; pybind11 4th/1st: %.2f"
          % (res["bindthem c128"] / res["bindthem f32"],
             res["bindthem i64c128"] / res["bindthem f32"],
             res["pybind11 c128"] / res["pybind11 f32"]))


def chart(res, path=None):
    """A bar chart (PNG) of instructions per call per overload and backend;
    returns its path, or None without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not found: no chart)")
        return None
    path = path or os.path.join(common.CACHE, "callgrind_instructions.png")
    names = [("bindthem", "bindthem (direct)"), ("bindthem-ffi", "bindthem (libffi)"),
             ("floor", "floor (hand-written C)"), ("pybind11", "pybind11 (stock pyamg)"),
             ("ctypes", "ctypes + ndpointer")]
    titles = {"f64": "float64 (2nd)", "f32": "float32 (1st)", "c128": "complex128 (4th)",
              "i64c128": "int64 + complex128 (8th)"}
    fig, ax = plt.subplots(figsize=(10, 5))
    w = 0.16
    for j, (key, label) in enumerate(names):
        xs, ys = [], []
        for i, t in enumerate(OVERLOADS):
            k = "%s %s" % (key, FLOOR_OF[t] if key == "floor" else t)
            if k in res:
                xs.append(i + (j - 2) * w)
                ys.append(res[k])
        bars = ax.bar(xs, ys, w, label=label)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, rotation=90, padding=2)
    ax.set_xticks(range(len(OVERLOADS)), [titles[t] for t in OVERLOADS])
    ax.set_yscale("log")
    ax.set_ylim(top=max(res.values()) * 6)  # room for the labels above the tallest bar
    ax.set_ylabel("instructions per call (callgrind, loop included)")
    ax.set_title("gauss_seidel on a 2x2 CSR, empty sweep: instructions per call by overload")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("chart: %s" % path)
    return path


def cases_labels():
    labels = []
    for name in ("bindthem", "bindthem-ffi", "pybind11"):
        for t in OVERLOADS:
            labels.append(("%s %s" % (name, t),))
    labels += [("floor f64",), ("floor f32",), ("floor c128",), ("ctypes f64",),
               ("ctypes c128",), ("noop",)]
    labels += [("bindthem f64/f32 in turn",), ("floor f64/f32 in turn",)]
    for shape, _, _, _ in shape_list():
        labels += [("bindthem " + shape,), ("floor " + shape,), ("bindthem lib." + shape,),
                   ("floor lib." + shape,)]
    return labels


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
        main(keep)
