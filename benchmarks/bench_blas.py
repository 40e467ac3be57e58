"""Instructions per call (callgrind) of one BLAS call on 8 doubles: cblas_ddot
and cblas_daxpy of OpenBLAS bound by bindthem with examples/c-apis/cblas.yml
(n and the increments hidden, computed from the arrays), against SciPy's f2py
wrappers (scipy.linalg.blas.ddot, daxpy) and ctypes (argtypes set, the
pointers taken from x.ctypes.data in each call).

Measured as bench_callgrind.py measures: one valgrind process runs every
case; per case 500 warm-up calls, then CALLGRIND_ZERO_STATS, N calls,
CALLGRIND_DUMP_STATS_AT, with N calls (discarded), N, 2N; instructions per
call = (I(2N) - I(N)) / N, the Python loop included. The client requests come
from a small C library compiled into the cache (valgrind/callgrind.h), called
through ctypes outside the counted loop.

The BLAS itself runs in every row: OpenBLAS's ddot and daxpy on 8 doubles (a
few hundred instructions, the same in each row: scipy's wrappers call the
Fortran ddot_/daxpy_ of the BLAS SciPy links, which may be another build).

Run: python benchmarks/bench_blas.py   (needs valgrind, libopenblas-dev, SciPy)
"""

import ctypes
import ctypes.util
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

N = 2000
CBLAS_H = "/usr/include/x86_64-linux-gnu/cblas.h"
CBLAS_YML = os.environ.get("BINDTHEM_BENCH_CBLAS_YML") or os.path.join(
    common.ROOT, "examples", "c-apis", "cblas.yml")
OPENBLAS = "libopenblas.so.0"

CG_C = r"""
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *s) { CALLGRIND_DUMP_STATS_AT(s); }
"""

LOOP = """
def run2(n, f, a, b):
    for _ in range(n):
        f(a, b)

def run3(n, f, a, b, c):
    for _ in range(n):
        f(a, b, c)

def run_scipy_axpy(n, f, x, y, a):
    for _ in range(n):
        f(x, y, a=a)

def run_ct_dot(n, f, x, y):
    for _ in range(n):
        f(8, x.ctypes.data, 1, y.ctypes.data, 1)

def run_ct_axpy(n, f, a, x, y):
    for _ in range(n):
        f(8, a, x.ctypes.data, 1, y.ctypes.data, 1)
"""


def client_requests():
    """ctypes handle of the cache's libbtcg.so (cg_zero, cg_dump)."""
    folder = os.path.join(common.CACHE, "cgreq")
    lib = os.path.join(folder, "libbtcg.so")
    if not os.path.exists(lib):
        os.makedirs(folder, exist_ok=True)
        src = os.path.join(folder, "cg.c")
        with open(src, "w") as f:
            f.write(CG_C)
        tmp = lib + ".tmp%d" % os.getpid()
        subprocess.run([os.environ.get("CC") or "cc", "-O2", "-fPIC", "-shared", src, "-o", tmp],
                       check=True)
        os.replace(tmp, lib)
    cg = ctypes.CDLL(lib)
    cg.cg_dump.argtypes = [ctypes.c_char_p]
    return cg


def cases():
    import warnings

    import numpy as np
    from scipy.linalg import blas as sblas

    import bindthem

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        blas = bindthem.load(OPENBLAS, CBLAS_H, CBLAS_YML)
    ob = ctypes.CDLL(OPENBLAS)
    ddot = ob.cblas_ddot
    ddot.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
    ddot.restype = ctypes.c_double
    daxpy = ob.cblas_daxpy
    daxpy.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_void_p, ctypes.c_int,
                      ctypes.c_void_p, ctypes.c_int]
    daxpy.restype = None

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(8), rng.standard_normal(8)
    # the same value from each (daxpy: y grows by 1e-9 x per call, far from overflow)
    want = float(x @ y)
    assert abs(blas.cblas_ddot(x, y) - want) < 1e-12
    assert abs(sblas.ddot(x, y) - want) < 1e-12
    assert abs(ddot(8, x.ctypes.data, 1, y.ctypes.data, 1) - want) < 1e-12
    a = 1e-9
    return [
        ("bindthem ddot", "run2", blas.cblas_ddot, (x, y)),
        ("scipy f2py ddot", "run2", sblas.ddot, (x, y)),
        ("ctypes ddot", "run_ct_dot", ddot, (x, y)),
        ("bindthem daxpy", "run3", blas.cblas_daxpy, (a, x, y.copy())),
        ("scipy f2py daxpy", "run_scipy_axpy", sblas.daxpy, (x, y.copy(), a)),
        ("ctypes daxpy", "run_ct_axpy", daxpy, (a, x, y.copy())),
    ]


def worker():
    cg = client_requests()
    ns = {}
    exec(LOOP, ns)
    for label, loop, f, args in cases():
        run = ns[loop]
        run(500, f, *args)
        # a first pair, discarded (its first dump carries one-off costs)
        for n in (-N, N, 2 * N):
            cg.cg_zero()
            run(abs(n), f, *args)
            cg.cg_dump(("%s|%d" % (label, n)).encode())


def measure():
    if not shutil.which("valgrind"):
        print("\n(valgrind not found: callgrind counts skipped)")
        return None
    folder = tempfile.mkdtemp(dir=common.CACHE)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out" % folder,
           sys.executable, os.path.abspath(__file__), "--worker"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=common.CACHE,
                          env=common.env())
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise RuntimeError("callgrind run failed")
    res = common.callgrind_per_call(folder, N)
    shutil.rmtree(folder, ignore_errors=True)
    return res


def main():
    if not os.path.exists(CBLAS_H):
        print("\n(%s not found: install libopenblas-dev; BLAS counts skipped)" % CBLAS_H)
        return None
    res = measure()
    if res is None:
        return None
    rows = []
    for op in ("ddot", "daxpy"):
        base = res.get("ctypes %s" % op)
        for who in ("bindthem", "scipy f2py", "ctypes"):
            v = res.get("%s %s" % (who, op))
            if v is None:
                continue
            rows.append(["%s %s" % (who, op), "%.0f" % v,
                         "%.2f" % (v / base) if base else "-"])
    common.table("Callgrind: one BLAS call on 8 doubles (instructions per call, the Python "
                 "loop and the BLAS included)", ["case", "instr/call", "x ctypes"], rows,
                 note="bindthem: cblas.yml (n, incx, incy hidden); scipy: f2py's "
                      "scipy.linalg.blas; ctypes: argtypes set, x.ctypes.data per call")
    return res


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        main()
