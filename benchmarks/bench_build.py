"""Build times of pyamg 5.4.1's 8 amg_core headers (the sdist's, with its
instantiate.yml), each row in fresh interpreters with bindthem (and its build
module, which ``import bindthem`` no longer loads) imported before the clock
starts:

  cold, default   bindthem.build of the 8 headers into an empty cache, jobs
                  not given: each header's build counts the idle cores
                  (bindthem/_services/compile/cores.py); the jobs it chose
                  per header are printed
  cold, 1 job     the same with jobs=1: one compiler process per header
  cold, N jobs    the same with jobs=N (default N: the usable cores), each
                  header's instantiations split over N units compiled at once
  warm build      bindthem.build of the 8 headers, every one a cache hit
  load            bindthem.load of the 8 cached libraries (no cache check)

The cold rows run twice per round, interleaved: on the machine as it is, and
with the other core loaded (--busy: a busy-loop process pinned to the last
usable CPU, started before and stopped after each such build). The compiler
is $CXX or c++ (no ccache unless $CXX names it); every cold build starts
from an empty cache. Wall and CPU seconds (the compilers' CPU: the
children's rusage) for the cold rows, median (min-max) of the rounds; ratios
of the medians: cold default / cold 1 job (target <= 1.0 busy, < 1 idle)
and cold N jobs / cold 1 job. Warm rows: median (min) of WARM fresh
processes, and their own CPU time (user + system), which the machine's other
work does not lengthen as it does the wall time; ratio warm build / load
(target <= 1.5). pyamg's own sdist build (meson + ninja) took 117 s wall and
202 CPU s on the machine of issue 26, for reference.

Run: python benchmarks/bench_build.py [--jobs N] [--cold-rounds R] [--busy]
[--no-warm] [--warm-cache DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

WARM = 21

CHILD = """
import json, os, resource, sys, time
import bindthem
import bindthem._services.compile.kernels  # loaded on first use: imported before the clock
from bindthem._services.compile import cores
core, cache, mode, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) or None
chosen = []
default_jobs = cores.default_jobs
cores.default_jobs = lambda: chosen.append(default_jobs()) or chosen[-1]
yml = os.path.join(core, "instantiate.yml")
heads = %r
paths = {}
if mode == "load":
    import glob
    paths = {h: glob.glob(os.path.join(cache, h + "-*", "lib%%s-*.so" %% h))[0] for h in heads}
t, c = time.perf_counter(), time.process_time()
for h in heads:
    hh = os.path.join(core, h + ".h")
    if mode == "load":
        bindthem.load(paths[h], hh, yml, name="pyamg.amg_core." + h)
    else:
        bindthem.build(hh, yml, name="pyamg.amg_core." + h, cache_dir=cache, jobs=jobs)
wall, own = time.perf_counter() - t, time.process_time() - c
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "cpu": r.ru_utime + r.ru_stime, "own": own, "chosen": chosen}))
""" % (common.HEADERS,)


def child(core, cache, mode, jobs=1):  # jobs 0: not given
    env = dict(os.environ, PYTHONPATH=common.BINDTHEM)
    out = subprocess.run([sys.executable, "-c", CHILD, core, cache, mode, str(jobs)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("the %s run failed:\n%s" % (mode, out.stderr[-3000:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


# a busy loop on one CPU, killed with the benchmark (prctl PR_SET_PDEATHSIG, SIGKILL)
LOADER = ("import ctypes, os, sys; ctypes.CDLL(None).prctl(1, 9)\n"
          "os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile 1: pass")


def loaded(busy, fn):
    """fn() with the last usable CPU kept busy by a process of its own (busy)."""
    if not busy:
        return fn()
    cpu = max(os.sched_getaffinity(0))
    loader = subprocess.Popen([sys.executable, "-c", LOADER, str(cpu)])
    try:
        return fn()
    finally:
        loader.kill()
        loader.wait()


def spread(runs, key):
    xs = [x[key] for x in runs]
    return statistics.median(xs), min(xs), max(xs)


def cold_rows(core, work, jobs, rounds, busy):
    """The cold rows, interleaved round by round (a busy machine weighs on all
    alike); returns the 1-job runs as is, for the warm rows' cache."""
    variants = (("default", 0), ("1 job", 1), ("%d jobs" % jobs, jobs))
    conditions = ("as is", "busy") if busy else ("as is",)
    cold = {(c, v): [] for c in conditions for v, _ in variants}
    for r in range(rounds):  # each round in another order: no variant always runs first
        for c in conditions[(r + 1) % 2:] + conditions[:(r + 1) % 2]:
            for v, j in variants[(r + 1) % 3:] + variants[:(r + 1) % 3]:
                cache = os.path.join(work, "cold-%s-%d-%d" % (c[0], j, r))
                cold[c, v].append(loaded(c == "busy", lambda: child(core, cache, "build", j)))
                x = cold[c, v][-1]
                print("  round %d, %s, %s: %.1f s, %.1f CPU s, load average %.1f after%s" % (
                    r + 1, c, v, x["wall"], x["cpu"], load_average(),
                    "  (chose %s)" % x["chosen"] if j == 0 else ""), flush=True)
    for c in conditions:
        for v, j in variants:
            w, c_ = spread(cold[c, v], "wall"), spread(cold[c, v], "cpu")
            print("cold, %-7s %-8s %6.1f s wall (%.1f-%.1f)  %6.1f CPU s (%.1f-%.1f)"
                  % (c, v, *w, *c_))
        one = spread(cold[c, "1 job"], "wall")[0]
        print("cold, %-7s default / 1 job %.2f, %d jobs / 1 job %.2f (medians; target: "
              "default <= 1.0 busy, < 1 idle)" % (
                  c, spread(cold[c, "default"], "wall")[0] / one, jobs,
                  spread(cold[c, variants[2][0]], "wall")[0] / one))
    return "cold-a-1-0"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--cold-rounds", type=int, default=1)
    ap.add_argument("--busy", action="store_true",
                    help="each cold build once more with the last usable CPU kept busy")
    ap.add_argument("--no-warm", action="store_true", help="the cold rows only")
    ap.add_argument("--warm-cache", metavar="DIR",
                    help="only the warm rows, against this cache (built once if empty)")
    args = ap.parse_args(argv)
    core = common.amg_core()
    print("pyamg %s amg_core, %d headers; %d usable cores; load average %.1f before"
          % (common.pyamg_sdist.VERSION, len(common.HEADERS), len(os.sched_getaffinity(0)),
             load_average()))
    work = tempfile.mkdtemp(prefix="bench-build-")
    try:
        if not args.warm_cache:
            cache = os.path.join(work, cold_rows(core, work, args.jobs, args.cold_rounds,
                                                 args.busy))
        if args.no_warm:
            print("load average %.1f after" % load_average())
            return
        if args.warm_cache:
            cache = args.warm_cache
            child(core, cache, "build", args.jobs)  # fills it when empty
        warm, load, warm_cpu, load_cpu = [], [], [], []
        for _ in range(WARM):
            for xs, cpu, mode in ((warm, warm_cpu, "build"), (load, load_cpu, "load")):
                r = child(core, cache, mode)
                xs.append(r["wall"] * 1e3)
                cpu.append(r["own"] * 1e3)
        for name, xs, cpu in (("warm build", warm, warm_cpu), ("load", load, load_cpu)):
            print("%-11s %7.1f ms median (%.1f min) of %d fresh processes; its CPU %.1f ms "
                  "median" % (name, statistics.median(xs), min(xs), len(xs),
                              statistics.median(cpu)))
        print("warm ratio (build / load): %.2f median, %.2f min (target <= 1.5); by the "
              "process's own CPU time (user + system: not the time others take from it) "
              "%.2f median" % (statistics.median(warm) / statistics.median(load),
                               min(warm) / min(load),
                               statistics.median(warm_cpu) / statistics.median(load_cpu)))
        print("load average %.1f after (the machine's other work slows every row)"
              % load_average())
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
