"""Instantiation on demand (issue 31), on pyamg's relaxation.h.

1. First-call latency: relaxation.h built without instantiate.yml (its
   templates open) into a fresh cache, then the first call of
   sor_gauss_seidel with int32/float64 arrays and a float omega: it deduces
   <int, double, double>, compiles that one instantiation and calls it.
   Then the same in a second process (the instantiation from the cache).
2. Later calls (callgrind, instructions per call as bench_callgrind.py
   measures them: (I(2N) - I(N)) / N): the on-demand overload against the
   same overload listed in pyamg's instantiate.yml.

Run: python benchmarks/bench_on_demand.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

N = 2000

FIRST = """
import os, sys, time
t0 = time.perf_counter()
import numpy as np, bindthem
lib = bindthem.build(os.path.join(sys.argv[1], "relaxation.h"), name="relaxation")
t1 = time.perf_counter()
Ap = np.array([0, 1, 2], np.int32); Aj = np.array([0, 1], np.int32)
Ax = np.array([2.0, 2.0]); x = np.zeros(2); b = np.ones(2)
lib.sor_gauss_seidel(Ap, Aj, Ax, x, b, 0, 2, 1, 1.0)
t2 = time.perf_counter()
lib.sor_gauss_seidel(Ap, Aj, Ax, x, b, 0, 2, 1, 1.0)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, lib.sor_gauss_seidel.overloads[0].split("(")[0])
"""

WORKER = """
import os, sys
import numpy as np, bindthem
sys.path.insert(0, sys.argv[2])
import common
fl = common.floor()
core = sys.argv[1]
listed = common.relaxation().sor_gauss_seidel
demand = bindthem.build(os.path.join(core, "relaxation.h"), name="relaxation").sor_gauss_seidel
Ap = np.array([0, 1, 2], np.int32); Aj = np.array([0, 1], np.int32)
Ax = np.array([2.0, 2.0]); x = np.zeros(2); b = np.ones(2)
demand(Ap, Aj, Ax, x, b, 0, 0, 1, 1.0)
def run(n, f):
    for _ in range(n):
        f(Ap, Aj, Ax, x, b, 0, 0, 1, 1.0)
for label, f in (("listed", listed), ("on demand", demand)):
    run(500, f)
    for n in (-%d, %d, %d):
        fl.cg_zero()
        run(abs(n), f)
        fl.cg_dump("%%s|%%d" %% (label, n))
""" % (N, N, 2 * N)


def first_calls():
    cache = tempfile.mkdtemp(dir=common.CACHE)
    env = dict(common.env(), BINDTHEM_CACHE=cache)
    rows = []
    try:
        for run in ("fresh cache", "second process"):
            out = subprocess.run([sys.executable, "-c", FIRST, common.amg_core()], env=env,
                                 capture_output=True, text=True, timeout=600, check=True)
            build, first, later, ov = out.stdout.split(None, 3)
            rows.append([run, "%.0f" % (float(build) * 1e3), "%.0f" % (float(first) * 1e3),
                         "%.1f" % (float(later) * 1e6), ov.strip()])
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    common.table("On demand: sor_gauss_seidel of pyamg's relaxation.h, built without "
                 "instantiate.yml", ["run", "import+build ms", "first call ms",
                                     "second call us", "instantiated"], rows,
                 "first call: deduction, compile of one translation unit (fresh cache) or "
                 "its cached library, binding, adding, the call.")
    return rows


def callgrind():
    if not shutil.which("valgrind"):
        print("\n(valgrind not found: callgrind counts skipped)")
        return None
    common.floor()  # built outside valgrind
    common.relaxation()
    folder = tempfile.mkdtemp(dir=common.CACHE)
    try:
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out"
                        % folder, sys.executable, "-c", WORKER, common.amg_core(),
                        os.path.dirname(os.path.abspath(__file__))],
                       capture_output=True, text=True, cwd=common.CACHE, env=common.env(),
                       check=True, timeout=1200)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_callgrind
        bench_callgrind.N = N
        res = bench_callgrind.parse(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    common.table("Callgrind: later calls, instructions per call (the Python loop included)",
                 ["overload", "instr/call"],
                 [[k, "%.0f" % v] for k, v in sorted(res.items())],
                 "sor_gauss_seidel<int, double, double> on a 2x2 CSR, empty sweep; 'listed': "
                 "pyamg's instantiate.yml (8 overloads), 'on demand': the one made by the call.")
    return res


def main():
    t = time.perf_counter()
    first_calls()
    callgrind()
    print("\n(%.0f s)" % (time.perf_counter() - t))


if __name__ == "__main__":
    main()
