"""Kernel tasks on a Dask cluster of hosts that share nothing, against the
same task with np.sum.

A scheduler, two workers and a client, each on a host of its own: network
namespaces bridged on a private /24, a mount namespace per process with a
tmpfs over the author's folder and over each worker's BINDTHEM_CACHE
(tests/api/netns_hosts.py; root only). The client (tests/api/cluster_client.py)
builds the kernel and sends tasks pinned to one worker; times are client
round trips (submit to result).

Rows:
  first np.sum task              a worker's first task of the plain NumPy function
                                 (run before the kernel's first task on that worker)
  first kernel task: rebuild     lib.total of rows.h (2 functions x 2 types) on a
                                 worker that never saw it: unpickle, compile from the
                                 carried source into its own empty cache, bind, run
  later kernel task              lib.total(np.arange(1000.)), median (min) of REPS,
                                 interleaved with ...
  later np.sum task              np.sum(np.arange(1000.)), the same task without bindthem
  after a restart: np.sum,       the worker process restarted by its nanny (same host,
  then kernel                    its cache kept): binds from that cache
  pyamg relaxation.h rebuild     gauss_seidel of pyamg's relaxation.h (with linalg.h and
                                 graph.h, 16 functions x 8 types) on w0: its first task;
                                 and the "Event loop was unresponsive" lines w0 logged

Run (root; ~1 min): python benchmarks/bench_cluster.py [REPS]
Not in run_all.py: it needs root and network namespaces.
"""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.ROOT, "tests", "api"))
import cluster_client  # noqa: E402
import netns_hosts  # noqa: E402

del sys.path[0]

KERNELS = os.path.join(common.ROOT, "tests", "data", "kernels")
WORKERS = ("w0", "w1")


def run_client(hc, mode, *args):
    try:
        return cluster_client.run(hc, mode, *args, timeout=600)
    except RuntimeError as e:
        sys.exit(str(e))


def ms(seconds):
    return "%.0f ms" % (1e3 * seconds) if seconds < 1 else "%.1f s" % seconds


def med(times):
    t = sorted(times)
    return "%.1f (%.1f) ms" % (1e3 * t[len(t) // 2], 1e3 * t[0])


def main(reps=30):
    why = netns_hosts.unavailable()
    if why:
        print("\nbench_cluster: skipped: %s" % why)
        return None
    import bindthem
    author = tempfile.mkdtemp(prefix="bench-cluster-author-")
    src = os.path.join(author, "src")
    os.makedirs(src)
    for f in ("rows.h", "rows.yml"):
        shutil.copy(os.path.join(KERNELS, f), src)
    core = common.amg_core()
    pyamg_cache = os.path.join(common.CACHE, "bindthem")
    common.relaxation()  # the author's own build, before the clock runs
    try:
        with netns_hosts.HostCluster(WORKERS, hide=[author, core, pyamg_cache],
                                     env=common.env()) as hc:
            r = run_client(hc, "bench", os.path.join(src, "rows.h"),
                           os.path.join(src, "rows.yml"), os.path.join(author, "cache"),
                           reps, *WORKERS)
            before = len(hc.log("w0"))
            p = run_client(hc, "pyamg", core, pyamg_cache, "w0")["pyamg"]
            stalls = hc.log("w0")[before:].count("Event loop was unresponsive")
    finally:
        shutil.rmtree(author, ignore_errors=True)
    rows = [["first np.sum task"] + [ms(r["numpy_first"][w]) for w in WORKERS],
            ["first kernel task: rebuild from the pickle"] + [ms(r["first"][w])
                                                               for w in WORKERS],
            ["later kernel task, median (min)"] + [med(r["later"][w]) for w in WORKERS],
            ["later np.sum task, median (min)"] + [med(r["numpy"][w]) for w in WORKERS],
            ["after a restart: first np.sum task"] + [ms(r["numpy_restarted"][w])
                                                      for w in WORKERS],
            ["after a restart: first kernel task (own cache)"] + [ms(r["restarted"][w])
                                                                  for w in WORKERS],
            ["pyamg relaxation.h: first task (rebuild)",
             ms(p["seconds"]) if p["ok"] else "failed: " + p["error"][:60], "-"]]
    common.table("Kernel tasks on a cluster of hosts that share nothing (bindthem %s)"
                 % bindthem.__version__, ["task (client round trip)"] + list(WORKERS), rows,
                 "%d later tasks of each kind per worker, interleaved; 'Event loop was "
                 "unresponsive' lines in w0's log during the pyamg task: %d" % (reps, stalls))
    return r, p, stalls


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
