"""Free-threaded CPython: N threads (1, 2, 4) calling one small kernel (an axpy
over 16 doubles, ~0.1 microseconds a call) through one Function, against one
thread. Every call runs bindthem's whole call path (dispatch memo, argument
walk, direct call) and the GIL policy keeps the GIL (arrays under
GIL_RELEASE_MIN_ELEMENTS), so only a free-threaded CPython (3.13t, GIL off)
can run the threads at once; with the GIL the ratio stays near 1. The
ceiling is min(N, os.cpu_count()).

Self-contained (the bindthem it imports, a kernel built into a temporary
folder; no pyamg): run it with a 3.13t interpreter, e.g. the one
tests/run_freethreaded.sh installs bindthem into:

    ~/.cache/bindthem-ci/py3.13t/venv/bin/python benchmarks/bench_freethreaded.py [SECONDS]
"""

import os
import sys
import sysconfig
import tempfile
import threading
import time

import numpy as np

import bindthem

HEADER = """\
// y = a x + y over n elements.
void axpy(const double x[], const int x_size, double a, double y[], const int y_size)
{
    for (int i = 0; i < x_size; i++)
        y[i] += a * x[i];
}
"""


def rate(f, threads, seconds):
    """Calls per second over all threads, each thread with its own arrays."""
    start = threading.Barrier(threads + 1)
    stop = threading.Event()
    counts = [0] * threads

    def run(i):
        x, y = np.ones(16), np.zeros(16)
        n = 0
        start.wait()
        while not stop.is_set():
            for _ in range(200):
                f(x, 0.5, y)
            n += 200
        counts[i] = n

    ts = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in ts:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main(seconds=2.0):
    gil = sys._is_gil_enabled() if hasattr(sys, "_is_gil_enabled") else True
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "axpy.h"), "w") as fh:
            fh.write(HEADER)
        f = bindthem.build(os.path.join(d, "axpy.h"), cache_dir=os.path.join(d, "cache")).axpy
        f(np.ones(16), 0.5, np.zeros(16))
        print("Python %s (%s, GIL %s), %d CPUs, load average %.2f; %.1f s per row"
              % (sys.version.split()[0],
                 "free-threaded" if sysconfig.get_config_var("Py_GIL_DISABLED") else "with GIL",
                 "on" if gil else "off", os.cpu_count(), os.getloadavg()[0], seconds))
        print("%-8s %14s %12s" % ("threads", "calls/s", "vs 1 thread"))
        one = None
        for n in (1, 2, 4):
            r = max(rate(f, n, seconds / 2) for _ in range(2))
            one = one or r
            print("%-8d %14.0f %12.2f" % (n, r, r / one))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
