"""The client side of the host-cluster checks: run on the client host of a
tests/api/netns_hosts.py cluster (the kernel author's machine: it sees the
header, the workers do not), it builds the kernels, sends them to the
workers and prints one JSON object of what happened.

    python cluster_client.py MODE SCHEDULER ARGS...

Modes (each check is {"ok": bool, "error": text} or numbers):
  facts   HEADER WORKER...          what each worker sees: the header, its cache
  closure HEADER YML CACHE WORKER...  submit of a closure that runs a kernel in place;
                                    first-task and later-task latency per worker
  map     HEADER YML CACHE WORKER...  Client.map of a kernel over chunks, map_blocks
  nocc    HEADER YML CACHE WORKER CARRY [KIND]   a task on a worker without a compiler, of
                                    a built kernel, a loaded one, an open one or a
                                    packaged one (KIND: build, load, ondemand, package)
  pyamg   CORE CACHE WORKER         gauss_seidel of pyamg's relaxation.h on a worker
  bench   HEADER YML CACHE REPS WORKER...  first and later kernel tasks vs np.sum tasks,
                                    and the first after a restart

Functions defined here travel by value (cloudpickle pickles __main__'s
functions whole), so the workers need nothing of this file.
"""

import json
import os
import sys
import time
import traceback

import numpy as np
from distributed import Client, wait

import bindthem


def connect(scheduler, workers):
    client = Client(scheduler, timeout="60s")
    client.wait_for_workers(len(workers), timeout=120)
    return client


def check(fn):
    """{"ok": True, **what fn returns} or {"ok": False, "error": ...}."""
    try:
        got = fn() or {}
        return dict(ok=True, **got)
    except Exception as e:
        return {"ok": False, "error": "%s: %s" % (type(e).__name__, e),
                "traceback": traceback.format_exc()[-3000:]}


def _scaled(scale):
    def scaled(x, a):  # a closure that runs a kernel in place on a copy it made
        y = x.copy()
        scale(y, a)
        return y
    return scaled


def timed_tasks(client, fn, args, worker, reps):
    """Seconds of each of reps round trips of fn(*args) pinned to worker."""
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        client.submit(fn, *args, workers=[worker], allow_other_workers=False,
                      pure=False).result(timeout=120)
        times.append(time.perf_counter() - t)
    return times


def first_tasks(client, fn, args, workers, expect=None):
    """{worker: seconds} of the first round trip of fn(*args) on each worker,
    all submitted at once (each worker unpickles, and rebuilds, on its own);
    each result is checked with expect(result) when given."""
    t = time.perf_counter()
    pending = {w: client.submit(fn, *args, workers=[w], allow_other_workers=False, pure=False)
               for w in workers}
    firsts = {}
    while pending:  # each worker's own time, whichever finishes first
        done = wait(list(pending.values()), return_when="FIRST_COMPLETED", timeout=300).done
        now = time.perf_counter() - t
        for w, f in list(pending.items()):
            if f in done:
                got = f.result()
                if expect is not None:
                    expect(got)
                firsts[w] = now
                del pending[w]
    return firsts


def mode_facts(scheduler, header, *workers):
    client = connect(scheduler, workers)

    host = scheduler.split("://")[1].rsplit(":", 1)[0]

    def facts():
        import shutil
        import socket
        cache = os.environ["BINDTHEM_CACHE"]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect((host, 9))  # no packet: picks the source address towards the scheduler
        return {"sees_header": os.path.exists(header),
                "sees_folder": (os.listdir(os.path.dirname(header))
                                if os.path.isdir(os.path.dirname(header)) else None),
                "cache": os.listdir(cache), "cache_path": cache,
                "addr": s.getsockname()[0], "links": sorted(os.listdir("/sys/class/net")),
                "cxx": os.environ.get("CXX"),
                "compilers_on_path": [c for c in ("c++", "g++", "cc", "gcc", "clang")
                                      if shutil.which(c)]}

    out = {w: client.submit(facts, workers=[w], pure=False).result(timeout=60)
           for w in workers}
    out["_addresses"] = {i["name"]: a for a, i in client.scheduler_info(
        n_workers=-1)["workers"].items()}
    return out


def mode_closure(scheduler, header, yml, cache, *workers):
    client = connect(scheduler, workers)
    lib = bindthem.build(header, yml, cache_dir=cache)
    scaled = _scaled(lib.scale)
    x = np.arange(1000.0)
    out = {}

    def run():
        firsts = first_tasks(client, scaled, (x, 3.0), workers,
                             lambda y: np.testing.assert_array_equal(y, 3 * x))
        later = {w: timed_tasks(client, scaled, (x, 3.0), w, 10) for w in workers}
        return {"first": firsts, "later": later}

    out["closure"] = check(run)
    return out


def _offset(x):
    """The array's data address modulo its item size: 0 when aligned."""
    return x.ctypes.data % x.itemsize


def mode_map(scheduler, header, yml, cache, *workers):
    import dask.array as da
    client = connect(scheduler, workers)
    lib = bindthem.build(header, yml, cache_dir=cache)  # default options
    out = {}

    def mapped():
        sizes = [10, 11, 12, 13, 55, 100, 999, 1000, 4097, 10 ** 4 + 3, 10 ** 5, 10 ** 6]
        chunks = [np.random.default_rng(n).random(n) for n in sizes]
        got = client.gather(client.map(lib.total, chunks, workers=list(workers), pure=False))
        np.testing.assert_allclose(got, [c.sum() for c in chunks], rtol=1e-9)
        # how the same chunks arrive (another delivery, the same framing)
        offsets = client.gather(client.map(_offset, chunks, workers=list(workers), pure=False))
        return {"chunks": len(chunks), "offsets": offsets}

    def blocks():
        rowsum = lib.rowsum

        def block(b):
            out = np.empty(b.shape[0])
            rowsum(b, out)
            return out[:, None]

        A = np.random.default_rng(0).random((2000, 300))
        d = da.from_array(A, chunks=(250, 300))  # row blocks: C-contiguous
        got = client.compute(d.map_blocks(block, chunks=(250, 1), dtype=float),
                             workers=list(workers)).result(timeout=300)
        np.testing.assert_allclose(got[:, 0], A.sum(axis=1), rtol=1e-12)
        return {"blocks": 8}

    out["map"] = check(mapped)
    out["map_blocks"] = check(blocks)
    return out


def mode_nocc(scheduler, header, yml, cache, worker, carry, kind="build"):
    """carry "0": the pickles carry the source alone (BINDTHEM_CARRY_LIBRARY=0),
    "1": with the library built here (the default). kind: a built kernel, one
    compiled here and loaded (its file is in the author's folder, which the
    worker does not see), an open one whose float64 instantiation was made
    here on demand, or examples/kernelpkg's, which the worker has not
    installed."""
    os.environ["BINDTHEM_CARRY_LIBRARY"] = carry
    client = connect(scheduler, [worker])
    # a Library of its own per mode (the name is in its key): the worker has not seen it
    name = "rows_carry%s_%s" % (carry, kind)
    if kind == "load":
        so = bindthem.compile_library(header, yml, output=os.path.join(cache, "lib%s.so" % name),
                                      cache_dir=cache)
        lib = bindthem.load(so, header, yml)
    elif kind == "ondemand":
        lib = bindthem.build(header, cache_dir=cache, name=name)
        lib.total(np.ones(2))
    elif kind == "package":  # examples/kernelpkg, built in the author's folder (pkg/)
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(header)), "pkg"))
        from kernelpkg import kernels as lib
    else:
        lib = bindthem.build(header, yml, cache_dir=cache, name=name)
    total = lib.total
    addr = {i["name"]: a for a, i in client.scheduler_info(n_workers=-1)["workers"].items()}
    pid = client.run(os.getpid, workers=[addr[worker]])[addr[worker]]
    t = time.perf_counter()
    fut = client.submit(total, np.arange(10.0), workers=[worker], allow_other_workers=False,
                        pure=False)
    out = {"expected": float(total(np.arange(10.0)))}
    try:
        got = fut.result(timeout=60)
        out["task"] = {"raised": None, "result": float(got)}
    except Exception as e:
        out["task"] = {"raised": type(e).__name__, "module": type(e).__module__,
                       "message": str(e)}
    out["seconds"] = time.perf_counter() - t
    time.sleep(2)  # a worker that dies takes a moment to leave
    now = {i["name"]: a for a, i in client.scheduler_info(n_workers=-1)["workers"].items()}
    out["listed"] = now.get(worker) == addr[worker]

    def after():
        f = client.submit(os.getpid, workers=[worker], allow_other_workers=False, pure=False)
        return {"same_pid": f.result(timeout=30) == pid}

    out["after"] = check(after)
    return out


def mode_pyamg(scheduler, core, cache, worker):
    client = connect(scheduler, [worker])
    relax = bindthem.build(os.path.join(core, "relaxation.h"),
                           os.path.join(core, "instantiate.yml"), cache_dir=cache)
    gauss_seidel = relax.gauss_seidel

    def sweep(n):  # one forward sweep on the 1-D Poisson matrix
        Ap = np.r_[0, np.arange(2, 3 * n - 2, 3), 3 * n - 2].astype(np.intc)
        Aj = np.concatenate([[0, 1]] + [[i - 1, i, i + 1] for i in range(1, n - 1)]
                            + [[n - 2, n - 1]]).astype(np.intc)
        Ax = np.concatenate([[2.0, -1.0]] + [[-1.0, 2.0, -1.0]] * (n - 2) + [[-1.0, 2.0]])
        x = np.zeros(n)
        b = np.ones(n)
        gauss_seidel(Ap, Aj, Ax, x, b, 0, n, 1)
        return x

    want = sweep(50)

    def run():
        t = time.perf_counter()
        got = client.submit(sweep, 50, workers=[worker], allow_other_workers=False,
                            pure=False).result(timeout=300)
        np.testing.assert_array_equal(got, want)
        return {"seconds": time.perf_counter() - t}

    return {"pyamg": check(run)}


def mode_bench(scheduler, header, yml, cache, reps, *workers):
    """A kernel task (lib.total of an array the task makes) against the same
    task with np.sum: the first on each worker (it rebuilds from the pickle),
    later ones interleaved, and the first after the worker restarted (it
    binds from its own cache)."""
    client = connect(scheduler, workers)
    total = bindthem.build(header, yml, cache_dir=cache).total

    def kernel_task(n):
        return total(np.arange(float(n)))

    def numpy_task(n):
        return np.sum(np.arange(float(n)))

    reps, n = int(reps), 1000
    # each worker's first np.sum task first, so that the kernel's first task pays for
    # the kernel only, not for the worker's own first-task costs
    out = {"numpy_first": first_tasks(client, numpy_task, (n,), workers)}
    out["first"] = first_tasks(client, kernel_task, (n,), workers)
    out["later"], out["numpy"] = {}, {}
    for w in workers:  # interleaved, so that load on the machine hits both alike
        k, p = [], []
        for _ in range(reps):
            k += timed_tasks(client, kernel_task, (n,), w, 1)
            p += timed_tasks(client, numpy_task, (n,), w, 1)
        out["later"][w], out["numpy"][w] = k, p
    client.restart_workers(list(workers), timeout=120)
    client.wait_for_workers(len(workers), timeout=120)
    out["numpy_restarted"] = first_tasks(client, numpy_task, (n,), workers)
    out["restarted"] = first_tasks(client, kernel_task, (n,), workers)
    return out


def run(hosts, mode, *args, timeout=300):
    """Runs this script's MODE on the client host of hosts (a
    netns_hosts.HostCluster); its result, or RuntimeError with its output."""
    r = hosts.client([sys.executable, os.path.abspath(__file__), mode, hosts.scheduler]
                     + [str(a) for a in args], timeout=timeout)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        raise RuntimeError("cluster_client.py %s failed (exit status %d):\n%s\n%s"
                           % (mode, r.returncode, r.stdout[-3000:], r.stderr[-6000:]))
    return json.loads(lines[-1][len("RESULT "):])


def main():
    mode, scheduler, *args = sys.argv[1:]
    out = globals()["mode_" + mode](scheduler, *args)
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
