"""Binding time of all of amg_core: bindthem.load of the 8 already-built
libraries vs importing the stock pybind11 extension modules.

Each measurement is a fresh interpreter (subprocess), repeated; medians.
Two numbers per row:
  in-process   perf_counter around the binding step only, in the child
  wall - base  the child's whole wall time minus that of the baseline child
               (`import numpy` and nothing else): interpreter + NumPy
               start-up cancel out

Rows:
  baseline                     python -c "import numpy"
  bindthem.load x8             import bindthem; bindthem.load(lib, header, yml) for
                               the 8 headers (parses header + YAML, resolves symbols,
                               prepares the libffi frames)
  stock: 8 extension modules   the wheel's 8 pybind11 .so files imported by path
                               (what binding costs pybind11: dlopen + module init)
  stock: import pyamg.amg_core the literal import, which runs pyamg/__init__.py
                               (scipy, all of pyamg's Python) first

Run: python benchmarks/bench_startup.py
"""

import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

REPS = 9

BASE = "import numpy, time; t0 = time.perf_counter(); t1 = time.perf_counter()"
BINDTHEM = """
import numpy, time, json
libs = json.loads(%r)
t0 = time.perf_counter()
import bindthem
mods = [bindthem.load(lib, h, y, name=n) for lib, h, y, n in libs]
t1 = time.perf_counter()
assert sum(len(m.__all__) for m in mods) > 50
"""
STOCK_SO = """
import numpy, time, importlib.util, glob, os
spec = importlib.util.find_spec("pyamg")
folder = os.path.join(spec.submodule_search_locations[0], "amg_core")
t0 = time.perf_counter()
for h in %r:
    p = glob.glob(os.path.join(folder, h + ".*.so"))[0]
    s = importlib.util.spec_from_file_location("pyamg.amg_core." + h, p)
    m = importlib.util.module_from_spec(s)
    s.loader.exec_module(m)
t1 = time.perf_counter()
"""
STOCK_IMPORT = """
import numpy, time
t0 = time.perf_counter()
import pyamg.amg_core
t1 = time.perf_counter()
"""
TAIL = "\nimport sys; sys.stdout.write('%.9f' % (t1 - t0))\n"


def child(code):
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code + TAIL], capture_output=True, text=True,
                         cwd=common.CACHE, env=common.env())
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return wall, float(out.stdout)


def main():
    libs = json.dumps(common.library_paths())
    progs = [("baseline (import numpy)", BASE),
             ("bindthem.load x8", BINDTHEM % libs),
             ("stock: 8 extension modules", STOCK_SO % (common.HEADERS,)),
             ("stock: import pyamg.amg_core", STOCK_IMPORT)]
    for _, code in progs:  # warm the page cache
        child(code)
    res = {name: [] for name, _ in progs}
    for _ in range(REPS):  # interleaved
        for name, code in progs:
            res[name].append(child(code))
    base = statistics.median(w for w, _ in res[progs[0][0]])
    rows = []
    out = {}
    for name, _ in progs:
        wall = statistics.median(w for w, _ in res[name])
        inproc = statistics.median(i for _, i in res[name])
        out[name] = (inproc, wall - base)
        rows.append([name, "%.1f" % (inproc * 1e3), "%.1f" % (wall * 1e3),
                     "%.1f" % ((wall - base) * 1e3)])
    common.table("Binding time, all of amg_core, fresh process each, median of %d (ms)" % REPS,
                 ["", "in-process", "wall", "wall - baseline"], rows,
                 "Target: bindthem.load x8 <= the stock import.")
    return out


if __name__ == "__main__":
    print(common.machine())
    main()
