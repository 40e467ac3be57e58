"""A worker without a compiler: pyamg's ``relaxation.gauss_seidel`` (built by
bindthem.build from the sdist's relaxation.h) reaching a fresh process whose
build cache is empty, with the library the pickle carries, against the
rebuild a pickle of the source alone needs; and the per-task cost of a
kernel task on a process pool against a plain NumPy task.

Rows:
  pickle size ...               bytes of pickle.dumps(f): with the library's bytes
                                (the default up to $BINDTHEM_CARRY_BYTES), with its
                                path and SHA-256 only (a bigger library), and the
                                source alone (BINDTHEM_CARRY_LIBRARY=0), and after
                                bindthem.send_to_workers sent its bytes to the workers
  first use, carried bytes      pickle.loads and the first call in a fresh interpreter
                                with no compiler, an empty cache and no author's file:
                                the bytes verified, written to the cache, loaded
  first use, carried path       the same where the builder's file is readable (a worker
                                of the same machine): verified and loaded, no copy
  first use, rebuild            the same with the source alone and a compiler: the
                                rebuild every worker process pays without the library
  per task, kernel / numpy      ProcessPoolExecutor(2, spawn).map of 400 tasks, after
                                a warm-up: f(x) on 1,000 doubles against np.sum(x)

Run: python benchmarks/bench_carried.py
"""

import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

FRESH = 5
TASKS = 400

CHILD = """
import pickle, sys, time
import numpy as np
import bindthem
data = sys.stdin.buffer.read()
t0 = time.perf_counter()
f = pickle.loads(data)
n = 100
indptr = np.arange(n + 1, dtype=np.int32)
f(indptr, np.zeros(n, np.int32), np.full(n, 2.0), np.zeros(n), np.ones(n), 0, n, 1)
t1 = time.perf_counter()
sys.stdout.write("%.9f" % (t1 - t0))
"""


def _first_use(data, compiler):
    times = []
    for _ in range(FRESH):
        folder = tempfile.mkdtemp()
        env = common.env()
        env["BINDTHEM_CACHE"] = os.path.join(folder, "cache")
        if not compiler:
            env["CXX"] = os.path.join(folder, "no-c++")
        out = subprocess.run([sys.executable, "-c", CHILD], input=data, capture_output=True,
                             cwd=folder, env=env)
        shutil.rmtree(folder)
        if out.returncode != 0:
            raise RuntimeError(out.stderr.decode())
        times.append(float(out.stdout))
    return statistics.median(times)


def kernel_task(f, x):
    return f(x)


def numpy_task(x):
    import numpy as np

    return np.sum(x)


def _per_task(fn, args):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(2, mp_context=mp.get_context("spawn")) as ex:
        list(ex.map(fn, *[a[:20] for a in args]))  # start and warm both workers
        t = time.perf_counter()
        list(ex.map(fn, *args, chunksize=1))
        return (time.perf_counter() - t) / len(args[0])


def main():
    import numpy as np

    import bindthem

    lib = common.relaxation()
    f = lib.gauss_seidel
    sizes = {}
    data = {}
    for label, env in (("bytes", {}), ("path", {"BINDTHEM_CARRY_BYTES": "0"}),
                       ("source", {"BINDTHEM_CARRY_LIBRARY": "0"})):
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            data[label] = pickle.dumps(f)
        finally:
            for k, v in old.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        sizes[label] = len(data[label])
    # the bytes sent once per worker ahead (bindthem.send_to_workers): the hash alone
    from bindthem._services import carry

    sha = f.library._bindthem_.source.binary["sha256"]
    carry.SENT.add(sha)
    try:
        sizes["sent"] = len(pickle.dumps(f))
    finally:
        carry.SENT.discard(sha)
    # the bytes alone reach a worker that cannot read the builder's file
    moved = dict(f.library._bindthem_.source.binary, path="/nonexistent/" + "x" * 8)
    source = f.library._bindthem_.source
    source.binary, kept = moved, source.binary
    try:
        data["moved"] = pickle.dumps(f)
    finally:
        source.binary = kept
    carried_bytes = _first_use(data["moved"], compiler=False)
    carried_path = _first_use(data["path"], compiler=False)
    rebuild = _first_use(data["source"], compiler=True)
    rows_lib = bindthem.build(os.path.join(common.ROOT, "tests", "data", "kernels", "rows.h"),
                              os.path.join(common.ROOT, "tests", "data", "kernels", "rows.yml"))
    xs = [np.random.rand(1000) for _ in range(TASKS)]
    kernel = _per_task(kernel_task, ([rows_lib.total] * TASKS, xs))
    plain = _per_task(numpy_task, (xs,))
    size = os.path.getsize(f.library.__file__)
    rows = [["library", "%d bytes" % size],
            ["pickle size, with its bytes", "%d bytes" % sizes["bytes"]],
            ["pickle size, its path and SHA-256", "%d bytes" % sizes["path"]],
            ["pickle size, the source alone", "%d bytes" % sizes["source"]],
            ["pickle size, its bytes sent ahead (send_to_workers)", "%d bytes" % sizes["sent"]],
            ["first use, carried bytes, no compiler (median of %d)" % FRESH,
             "%.1f ms" % (carried_bytes * 1e3)],
            ["first use, carried path, no compiler", "%.1f ms" % (carried_path * 1e3)],
            ["first use, rebuild from the source", "%.1f ms" % (rebuild * 1e3)],
            ["rebuild / carried bytes", "%.0fx" % (rebuild / carried_bytes)],
            ["per task, rows.total on a process pool", "%.0f us" % (kernel * 1e6)],
            ["per task, np.sum on the same pool", "%.0f us" % (plain * 1e6)]]
    common.table("A worker without a compiler: relaxation.gauss_seidel", ["", ""], rows)
    return {"carried": carried_bytes, "rebuild": rebuild, "kernel": kernel, "numpy": plain}


if __name__ == "__main__":
    print(common.machine())
    main()
