"""End to end: pyamg.smoothed_aggregation_solver setup + solve on
pyamg.gallery.poisson((500, 500)) (250,000 unknowns), stock pybind11
amg_core vs bindthem's.

Each backend runs in its own fresh subprocess (REPS times, interleaved;
medians). The bindthem child loads the 8 bindthem Libraries (already built)
into sys.modules as 'pyamg.amg_core.<sub>' before importing pyamg, so all of
pyamg runs on them (checked: pyamg.amg_core.relaxation.gauss_seidel is a
bindthem.Function). Same b (seeded), tolerance 1e-8, default cycle; the
residual and iteration count show the two agree.

Run: python benchmarks/bench_e2e.py
"""

import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

REPS = 4
SIZE = (500, 500)

CHILD = r"""
import json, sys, time
libs = json.loads(%(libs)r)
if libs:
    import bindthem
    for lib, h, y, name in libs:
        sys.modules[name] = bindthem.load(lib, h, y, name=name)
import numpy as np
import pyamg
import pyamg.amg_core as core
for lib, h, y, name in libs:
    setattr(core, name.rsplit(".", 1)[1], sys.modules[name])
backend = str(type(pyamg.amg_core.relaxation.gauss_seidel))
A = pyamg.gallery.poisson(%(size)r, format="csr")
b = np.random.default_rng(0).random(A.shape[0])
t0, c0 = time.perf_counter(), time.process_time()
ml = pyamg.smoothed_aggregation_solver(A)
t1, c1 = time.perf_counter(), time.process_time()
res = []
x = ml.solve(b, tol=1e-8, residuals=res)
t2, c2 = time.perf_counter(), time.process_time()
r = float(np.linalg.norm(b - A @ x) / np.linalg.norm(b))
print(json.dumps(dict(backend=backend, setup=t1 - t0, solve=t2 - t1, csetup=c1 - c0,
                      csolve=c2 - c1, iters=len(res) - 1, relres=r, levels=len(ml.levels))))
"""


def child(libs):
    code = CHILD % dict(libs=json.dumps(libs), size=SIZE)
    env = common.env()
    env["OPENBLAS_NUM_THREADS"] = "1"  # same for both; keeps CPU time = one thread's
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=common.CACHE, env=env)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-4000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    libs = common.library_paths()
    runs = {"stock": [], "bindthem": []}
    for _ in range(REPS):
        runs["stock"].append(child([]))
        runs["bindthem"].append(child(libs))
    rows = []
    best = {}
    for k, rs in runs.items():
        r = rs[0]
        vals = [min(x[f] for x in rs) for f in ("setup", "solve", "csetup", "csolve")]
        best[k] = vals
        rows.append(["%s %s" % (k, r["backend"].split("'")[1])] + ["%.3f" % v for v in vals]
                    + ["%.3f" % statistics.median(x["solve"] for x in rs),
                       r["levels"], r["iters"], "%.3e" % r["relres"]])
    rows.append(["bindthem / stock"] + ["%.3f" % (a / b) for a, b in
                                        zip(best["bindthem"], best["stock"])]
                + ["", "", "", ""])
    common.table("End to end: smoothed_aggregation_solver on poisson(%r), tol 1e-8, "
                 "fresh processes (s)" % (SIZE,),
                 ["backend", "setup wall", "solve wall", "setup CPU", "solve CPU",
                  "solve wall median", "levels", "iterations", "rel. residual"],
                 rows, "Best of %d unless marked median; CPU = process_time (robust to other "
                 "load on the machine). Target: bindthem solve <= 1.02x stock." % REPS)
    return runs


if __name__ == "__main__":
    print(common.machine())
    main()
