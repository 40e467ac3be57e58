"""Threads: throughput of gauss_seidel sweeps on a big 2-D Poisson matrix
(1000x1000 grid, 10^6 unknowns, 5*10^6 nonzeros; A shared, read-only) from
one thread vs two threads, each thread with its own x and b.

Throughput = sweeps per second over all threads; the ratio is
throughput(2 threads) / throughput(1 thread). bindthem releases the GIL
around a kernel whose arrays hold >= GIL_RELEASE_MIN_ELEMENTS elements; so does ctypes (always)
and the floor; stock pybind11 amg_core never does, so its two threads take
turns. Note: os.cpu_count() is the ceiling (2 here), and two sweeps also
share the memory bandwidth and the last-level cache; a memory-bound sweep
scales less than 2x even with perfectly parallel binding code.

Run: python benchmarks/bench_threads.py
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import common  # noqa: E402

GRID = 1000
SWEEPS = 12


def poisson(n):
    """5-point Laplacian on an n x n grid, CSR with int32 indices."""
    N = n * n
    idx = np.arange(N).reshape(n, n)
    rows = [idx.ravel()]
    cols = [idx.ravel()]
    vals = [np.full(N, 4.0)]
    for a, b in ((idx[1:, :], idx[:-1, :]), (idx[:-1, :], idx[1:, :]),
                 (idx[:, 1:], idx[:, :-1]), (idx[:, :-1], idx[:, 1:])):
        rows.append(a.ravel())
        cols.append(b.ravel())
        vals.append(np.full(a.size, -1.0))
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    v = np.concatenate(vals)
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    Ap = np.zeros(N + 1, dtype=np.intc)
    np.cumsum(np.bincount(r, minlength=N), out=Ap[1:])
    return Ap, c.astype(np.intc), v


def run(call, nthreads, A):
    Ap, Aj, Ax = A
    N = len(Ap) - 1
    xs = [np.zeros(N) for _ in range(nthreads)]
    bs = [np.ones(N) for _ in range(nthreads)]
    go = threading.Barrier(nthreads + 1)

    def work(i):
        go.wait()
        for _ in range(SWEEPS):
            call(Ap, Aj, Ax, xs[i], bs[i], 0, N, 1)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    for t in ts:
        t.join()
    dt = time.perf_counter() - t0
    return nthreads * SWEEPS / dt


def main():
    lib = common.relaxation()
    fl = common.floor()
    stock = common.stock_relaxation()
    A = poisson(GRID)
    ct = common.ctypes_gauss_seidel(lib, 1)
    n = [len(A[0]), len(A[1]), len(A[2]), len(A[0]) - 1, len(A[0]) - 1]

    def ctcall(Ap, Aj, Ax, x, b, r0, r1, r2):
        ct(Ap, n[0], Aj, n[1], Ax, n[2], x, n[3], b, n[4], r0, r1, r2)

    backends = [("bindthem", lib.gauss_seidel), ("pybind11 (stock)", stock.gauss_seidel),
                ("floor", fl.gauss_seidel_f64), ("ctypes", ctcall)]
    res = {k: {1: 0.0, 2: 0.0} for k, _ in backends}
    for _ in range(3):  # interleaved, best of 3
        for name, f in backends:
            for k in (1, 2):
                res[name][k] = max(res[name][k], run(f, k, A))
    rows = [[name, "%.1f" % r[1], "%.1f" % r[2], "%.2f" % (r[2] / r[1])]
            for name, r in res.items()]
    common.table("Threads: gauss_seidel sweeps/s on a %dx%d Poisson (10^6 unknowns), "
                 "%d sweeps per thread, best of 3" % (GRID, GRID, SWEEPS),
                 ["backend", "1 thread", "2 threads", "2T / 1T"], rows,
                 "%d CPUs (os.cpu_count); load average now %s. Target: bindthem 2T/1T >= 1.8."
                 % (os.cpu_count(), " ".join("%.1f" % v for v in os.getloadavg())))
    return res


if __name__ == "__main__":
    print(common.machine())
    main()
