"""Zero-copy check: call overhead of gauss_seidel for arrays of 10 .. 10^7
elements, with row_start == row_stop so the kernel does no work whatever the
size, and the memory a call allocates.

Per size n: Ap (n+1 int32), Aj (n int32), Ax, x, b (n float64), all made by
numpy.zeros (pages untouched, so a copy would also show as RSS growth).
Columns: ns/call (best of several samples) for bindthem, the floor and
pybind11; for bindthem, the tracemalloc peak during 200 calls (NumPy reports
its data buffers to tracemalloc, so a copy of an array would show) and the
RSS delta over those calls (/proc/self/statm). The floor's tracemalloc peak
for the same loop is the baseline (tracemalloc's own bookkeeping of the loop
and frames): a copy of an array would add its size to bindthem's.

bindthem releases the GIL when the arrays hold >= GIL_RELEASE_MIN_ELEMENTS
(bindthem._core) elements in all, so from n = 1000 (5001 elements) on each
call also pays one release/re-acquire of the GIL (the floor does the same;
pybind11 never releases it). That is a constant step, not growth with n.

Run: python benchmarks/bench_sizes.py
"""

import os
import resource
import sys
import tracemalloc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import common  # noqa: E402
from bench_calls import measure  # noqa: E402

from bindthem import _core  # noqa: E402

SIZES = (10, 100, 1000, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7)
PAGE = resource.getpagesize()


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def arrays(n):
    return (np.zeros(n + 1, dtype=np.intc), np.zeros(n, dtype=np.intc), np.zeros(n),
            np.zeros(n), np.zeros(n))


def traced(f, Ap, Aj, Ax, x, b):
    """tracemalloc peak and net over 200 calls of f, and RSS before/after."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    cur0, _ = tracemalloc.get_traced_memory()
    r0 = rss()
    for _ in range(200):
        f(Ap, Aj, Ax, x, b, 0, 0, 1)
    r1 = rss()
    cur1, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - cur0, cur1 - cur0, r0, r1


def main():
    lib = common.relaxation()
    fl = common.floor()
    stock = common.stock_relaxation()
    bt, fd, pb = lib.gauss_seidel, fl.gauss_seidel_f64, stock.gauss_seidel
    rows = []
    for n in SIZES:
        Ap, Aj, Ax, x, b = arrays(n)
        t = measure({
            "bt": lambda: bt(Ap, Aj, Ax, x, b, 0, 0, 1),
            "floor": lambda: fd(Ap, Aj, Ax, x, b, 0, 0, 1),
            "pb": lambda: pb(Ap, Aj, Ax, x, b, 0, 0, 1),
        }, target_s=0.003, repeat=9)
        peak0 = traced(fd, Ap, Aj, Ax, x, b)[0]
        peak, after, r0, r1 = traced(bt, Ap, Aj, Ax, x, b)
        data = sum(a.nbytes for a in (Ap, Aj, Ax, x, b))
        rows.append(["%d" % n, "%.1f MB" % (data / 1e6), "%.0f" % t["bt"], "%.0f" % t["floor"],
                     "%.0f" % t["pb"], "%d B" % peak, "%d B" % peak0, "%d B" % after,
                     "%d kB" % ((r1 - r0) // 1024)])
        Ap = Aj = Ax = x = b = None  # free this size's arrays before the next
    common.table("Overhead vs array size: gauss_seidel float64, row_start == row_stop "
                 "(ns/call) and memory of 200 bindthem calls",
                 ["n", "arrays", "bindthem", "floor", "pybind11", "bt traced peak",
                  "floor traced peak", "bt traced after", "RSS delta"], rows,
                 "Arrays of >= %d elements in all (n >= 1000 here) make bindthem and the "
                 "floor release the GIL around the kernel: a constant step, not growth."
                 % _core.GIL_RELEASE_MIN_ELEMENTS)
    return rows


if __name__ == "__main__":
    print(common.machine())
    main()
