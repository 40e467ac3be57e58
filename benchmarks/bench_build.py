"""Build times of pyamg 5.4.1's 8 amg_core headers (the sdist's, with its
instantiate.yml), each row in fresh interpreters with bindthem (and its build
module, which ``import bindthem`` no longer loads) imported before the clock
starts:

  cold, 1 job     bindthem.build of the 8 headers into an empty cache, jobs=1:
                  one compiler process per header, as before jobs=
  cold, N jobs    the same with jobs=N (default: the usable cores), each
                  header's instantiations split over N units compiled at once
  warm build      bindthem.build of the 8 headers, every one a cache hit
  load            bindthem.load of the 8 cached libraries (no cache check)

Wall and CPU seconds (the compilers' CPU: the children's rusage) for the
cold rows, median (min) of WARM fresh processes for the warm rows, and
their own CPU time (user + system), which the machine's other work does not
lengthen as it does the wall time. Ratios:
cold N jobs / cold 1 job (target <= 0.6 on 2 cores) and warm build / load
(target <= 1.5). pyamg's own sdist build (meson + ninja) took 117 s wall and
202 CPU s on the machine of issue 26, for reference.

Run: python benchmarks/bench_build.py [--jobs N] [--cold-rounds R] [--warm-cache DIR]
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
core, cache, mode, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
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
print(json.dumps({"wall": wall, "cpu": r.ru_utime + r.ru_stime, "own": own}))
""" % (common.HEADERS,)


def child(core, cache, mode, jobs=1):
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--cold-rounds", type=int, default=1)
    ap.add_argument("--warm-cache", metavar="DIR",
                    help="only the warm rows, against this cache (built once if empty)")
    args = ap.parse_args(argv)
    core = common.amg_core()
    print("pyamg %s amg_core, %d headers; %d usable cores; load average %.1f before"
          % (common.pyamg_sdist.VERSION, len(common.HEADERS), len(os.sched_getaffinity(0)),
             load_average()))
    work = tempfile.mkdtemp(prefix="bench-build-")
    try:
        cold = {1: [], args.jobs: []}
        for r in range(0 if args.warm_cache else args.cold_rounds):
            for jobs in cold:  # interleaved: a busy machine weighs on both alike
                cache = os.path.join(work, "cold-%d-%d" % (jobs, r))
                cold[jobs].append(child(core, cache, "build", jobs))
        for jobs, runs in cold.items() if not args.warm_cache else ():
            best = min(runs, key=lambda x: x["wall"])
            print("cold, %2d job%s  %7.1f s wall  %7.1f CPU s" % (
                jobs, "s" if jobs > 1 else " ", best["wall"], best["cpu"]))
        if args.warm_cache:
            cache = args.warm_cache
            child(core, cache, "build", args.jobs)  # fills it when empty
        else:
            one, many = (min(x["wall"] for x in cold[j]) for j in (1, args.jobs))
            cpu1, cpun = (min(x["cpu"] for x in cold[j]) for j in (1, args.jobs))
            print("cold ratio (N jobs / 1 job): %.2f wall, %.2f CPU (target <= 0.6 wall on 2 "
                  "cores)" % (many / one, cpun / cpu1))
            cache = os.path.join(work, "cold-1-0")
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
