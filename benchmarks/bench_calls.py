"""Per-call overhead and dispatch cost of gauss_seidel on tiny arrays.

All backends in this one process, interleaved (round-robin over repeats, the
minimum of each kept), so drift of the machine hits them alike:

  bindthem   bindthem.build of the sdist's relaxation.h + instantiate.yml
  pybind11   pyamg.amg_core.relaxation.gauss_seidel from the stock wheel
  floor      benchmarks/floor/floor.cpp: METH_FASTCALL, checks, direct call
  ctypes     the symbol of the bindthem-built library, ndpointer argtypes
  noop       floor.noop(8 args): the Python-side cost of any C call

Run: python benchmarks/bench_calls.py
"""

import os
import sys
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import common  # noqa: E402


def measure(cases, target_s=0.004, repeat=15, ffi=()):
    """{name: best ns/call} for cases {name: callable with no args}. Each
    sample times `number` calls, calibrated to about target_s; the best of
    `repeat` samples, taken round-robin over the cases, is kept. The cases
    named in ffi run with bindthem's direct call switched off
    (_core.force_ffi, set before each sample, outside the timing)."""
    from bindthem import _core
    force = getattr(_core, "force_ffi", bool)  # a tree from before the switch: libffi only
    timers = {k: timeit.Timer(v, setup=lambda k=k: force(k in ffi)) for k, v in cases.items()}
    number = {}
    for k, t in timers.items():  # warm-up (fills dispatch caches) and calibration
        dt = t.timeit(200) / 200
        number[k] = max(100, int(target_s / max(dt, 1e-9)))
    best = {k: float("inf") for k in cases}
    for _ in range(repeat):
        for k, t in timers.items():
            best[k] = min(best[k], t.timeit(number[k]) / number[k] * 1e9)
    force(False)
    return best


FFI = "bindthem (libffi)"


def setup():
    lib = common.relaxation()
    fl = common.floor()
    stock = common.stock_relaxation()
    return lib, fl, stock


def cases_overhead(lib, fl, stock, sweep):
    """sweep: (row_start, row_stop, row_step)."""
    bt, pb = lib.gauss_seidel, stock.gauss_seidel
    Ap, Aj, Ax, x, b = common.tiny(np.float64)
    r0, r1, r2 = sweep
    fd = fl.gauss_seidel_f64
    ct = common.ctypes_gauss_seidel(lib, 1)
    n = [len(a) for a in (Ap, Aj, Ax, x, b)]
    noop = fl.noop
    return {
        "bindthem": lambda: bt(Ap, Aj, Ax, x, b, r0, r1, r2),
        FFI: lambda: bt(Ap, Aj, Ax, x, b, r0, r1, r2),
        "pybind11 (stock pyamg)": lambda: pb(Ap, Aj, Ax, x, b, r0, r1, r2),
        "floor (hand-written C)": lambda: fd(Ap, Aj, Ax, x, b, r0, r1, r2),
        "ctypes + ndpointer": lambda: ct(Ap, n[0], Aj, n[1], Ax, n[2], x, n[3], b, n[4],
                                         r0, r1, r2),
        "noop (8 args, METH_FASTCALL)": lambda: noop(Ap, Aj, Ax, x, b, r0, r1, r2),
    }


def cases_dispatch(lib, fl, stock):
    bt, pb = lib.gauss_seidel, stock.gauss_seidel
    out = {}
    arrs = {}
    for tag, dt in (("f32", np.float32), ("c128", np.complex128)):
        arrs[tag] = common.tiny(dt)
    # 8th overload: int64 indices, complex128
    Ap, Aj, Ax, x, b = arrs["c128"]
    arrs["i64c128"] = (Ap.astype(np.int64), Aj.astype(np.int64), Ax, x, b)
    for tag, (Ap, Aj, Ax, x, b) in arrs.items():
        for name in ("bindthem", FFI):
            out[(name, tag)] = (lambda Ap=Ap, Aj=Aj, Ax=Ax, x=x, b=b:
                                bt(Ap, Aj, Ax, x, b, 0, 0, 1))
        out[("pybind11 (stock pyamg)", tag)] = (lambda Ap=Ap, Aj=Aj, Ax=Ax, x=x, b=b:
                                                pb(Ap, Aj, Ax, x, b, 0, 0, 1))
    for tag, which, fn in (("f32", 0, fl.gauss_seidel_f32), ("c128", 3, fl.gauss_seidel_c128)):
        Ap, Aj, Ax, x, b = arrs[tag]
        out[("floor (hand-written C)", tag)] = (lambda Ap=Ap, Aj=Aj, Ax=Ax, x=x, b=b, fn=fn:
                                                fn(Ap, Aj, Ax, x, b, 0, 0, 1))
        ct = common.ctypes_gauss_seidel(lib, which)
        out[("ctypes + ndpointer", tag)] = (lambda Ap=Ap, Aj=Aj, Ax=Ax, x=x, b=b, ct=ct:
                                            ct(Ap, 3, Aj, 2, Ax, 2, x, 2, b, 2, 0, 0, 1))
    return out


def check(lib, fl, stock):
    """All four backends compute the same sweep on a small 1-D Poisson."""
    n = 50
    Ap = np.concatenate([[0], np.cumsum([2] + [3] * (n - 2) + [2])]).astype(np.intc)
    Aj = np.concatenate([[0, 1]] + [[i - 1, i, i + 1] for i in range(1, n - 1)]
                        + [[n - 2, n - 1]]).astype(np.intc)
    Ax = np.where(Aj == np.repeat(np.arange(n), np.diff(Ap)), 2.0, -1.0)
    b = np.ones(n)
    xs = []
    ct = common.ctypes_gauss_seidel(lib, 1)
    for call in (lambda x: lib.gauss_seidel(Ap, Aj, Ax, x, b, 0, n, 1),
                 lambda x: stock.gauss_seidel(Ap, Aj, Ax, x, b, 0, n, 1),
                 lambda x: fl.gauss_seidel_f64(Ap, Aj, Ax, x, b, 0, n, 1),
                 lambda x: ct(Ap, n + 1, Aj, len(Aj), Ax, len(Ax), x, n, b, n, 0, n, 1)):
        x = np.zeros(n)
        for _ in range(3):
            call(x)
        xs.append(x)
    for x in xs[1:]:
        assert np.array_equal(x, xs[0]), "backends disagree"


def main():
    lib, fl, stock = setup()
    check(lib, fl, stock)
    empty = measure(cases_overhead(lib, fl, stock, (0, 0, 1)), ffi=(FFI,))
    sweep = measure(cases_overhead(lib, fl, stock, (0, 2, 1)), ffi=(FFI,))
    pb = empty["pybind11 (stock pyamg)"]
    fl_ = empty["floor (hand-written C)"]
    rows = []
    for k in empty:
        rows.append([k, "%.0f" % empty[k], "%.0f" % sweep[k], "%.3f" % (empty[k] / pb),
                     "%.2f" % (empty[k] / fl_)])
    common.table("Per-call overhead, gauss_seidel float64, 2x2 CSR (ns/call, best of 15)",
                 ["backend", "empty sweep", "2-row sweep", "/pybind11", "/floor"], rows,
                 "empty sweep: row_start == row_stop (the kernel returns at once). bindthem "
                 "(libffi): the direct call switched off (bindthem._core.force_ffi). "
                 "Targets: bindthem <= 0.2x pybind11, <= 2x floor.")

    d = measure(cases_dispatch(lib, fl, stock), ffi=[(FFI, t) for t in ("f32", "c128", "i64c128")])
    rows = []
    for name in ("bindthem", FFI, "pybind11 (stock pyamg)", "floor (hand-written C)",
                 "ctypes + ndpointer"):
        f32, c128 = d[(name, "f32")], d[(name, "c128")]
        i64 = d.get((name, "i64c128"))
        rows.append([name, "%.0f" % f32, "%.0f" % c128, "%.3f" % (c128 / f32),
                     "%.0f" % i64 if i64 else "-", "%.3f" % (i64 / f32) if i64 else "-"])
    common.table("Dispatch: 1st vs 4th (and 8th) overload of gauss_seidel, empty sweep (ns/call)",
                 ["backend", "1st <int,float>", "4th <int,cdouble>", "4th/1st",
                  "8th <int64,cdouble>", "8th/1st"], rows,
                 "floor and ctypes have no dispatch: one entry point per dtype. "
                 "Target: bindthem 4th/1st <= 1.1.")
    floor_ratios(empty, d)
    return empty, d


def floor_ratios(empty, d):
    """Wall time per call over the floor's, from the interleaved rounds above
    (the 8th overload against the floor's complex128 function)."""
    fl = "floor (hand-written C)"
    rows = []
    for name in ("bindthem", FFI):
        rows.append([name, "%.2f" % (empty[name] / empty[fl]),
                     "%.2f" % (d[(name, "f32")] / d[(fl, "f32")]),
                     "%.2f" % (d[(name, "c128")] / d[(fl, "c128")]),
                     "%.2f" % (d[(name, "i64c128")] / d[(fl, "c128")]),
                     "%.3f" % (d[(name, "f32")] / d[("pybind11 (stock pyamg)", "f32")])])
    common.table("Wall time per call over the floor's (interleaved rounds, best of 15)",
                 ["backend", "f64/floor", "1st/floor", "4th/floor", "8th/floor",
                  "1st/pybind11"], rows, "Targets: <= 2.0x the floor; <= 0.2x pybind11 on "
                 "its 1st overload.")


if __name__ == "__main__":
    print(common.machine())
    main()
