"""Import time of pyamg 5.4.1's amg_core: the stock wheel (pybind11, from
the index) against the wheel bindthem.setuptools builds from pyamg's sdist
(tests/api/pyamg/pyamg_wheel.py: each header compiled at wheel-build time, its
module written by the build and bound on first use by bindthem.load_package,
no compiler). The first use's binding is timed too.

Each row is the median, over ROUNDS fresh ``python -X importtime -c 'import
pyamg.amg_core'`` per venv (interleaved, after one warm-up each), of the
cumulative import time of that module. pyamg imports numpy and scipy before
amg_core, so neither counts; the bindthem wheel's import imports no
bindthem (its row stays empty) until the first call. Issue 26's
target: the packaged amg_core imports >= 3x faster than the stock one.

The venvs and the wheel are made once under
``$BINDTHEM_BENCH_CACHE/pyamg-wheel-<bindthem build>`` (pip, a cold build of
the 9 kernel libraries: about 2 minutes); later runs only measure.

Run: python benchmarks/bench_pyamg_import.py [--rounds N] [--fresh]
"""

import argparse
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.ROOT, "tests", "api", "pyamg"))
import pyamg_wheel as pw  # noqa: E402

del sys.path[0]


def setup(work):
    """{'stock': python, 'bindthem': python}, venvs made in ``work`` if new."""
    done = os.path.join(work, "done")
    pythons = {"stock": os.path.join(work, "stock", "bin", "python"),
               "bindthem": os.path.join(work, "venv", "bin", "python")}
    if os.path.exists(done):
        return pythons
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = pw.clean_env(BINDTHEM_CACHE=os.path.join(work, "build-cache"))
    folder = os.path.join(common.BINDTHEM, "bindthem")
    site = os.path.join(work, "bindthem-under-test")
    tools = pw.venv(os.path.join(work, "tools"), ["setuptools>=70.1", "numpy"], env)
    pw.add_bindthem(tools, folder, site)
    wheel = pw.build_wheel(tools, pw.make_project(os.path.join(work, "pyamg")),
                           os.path.join(work, "dist"), env)
    ours = pw.venv(os.path.join(work, "venv"), ["numpy", "scipy"], env)
    pw.add_bindthem(ours, folder, site)
    pw.run([ours, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], env=env)
    pw.venv(os.path.join(work, "stock"), ["--only-binary", "pyamg", "pyamg==%s" % pw.VERSION],
            env)
    open(done, "w").close()
    return pythons


# what the bindthem wheel's import defers: binding every kernel module (the
# first call of one of its kernels does it), in ms
FIRST_USE = """
import time
import pyamg.amg_core as core
t = time.perf_counter()
for m in %r:
    getattr(core, m)._bound()
print((time.perf_counter() - t) * 1e3)
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--fresh", action="store_true", help="remake the venvs and the wheel")
    args = ap.parse_args(argv)
    work = os.path.join(common.CACHE, "pyamg-wheel-" + os.path.basename(common.BINDTHEM))
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    pythons = setup(work)
    cwd = os.path.join(work, "cwd")
    os.makedirs(cwd, exist_ok=True)
    env = pw.clean_env(BINDTHEM_CACHE=os.path.join(work, "user-cache"))
    print("pyamg %s: import time of amg_core, stock wheel vs bindthem-built wheel; "
          "load average %.1f before" % (pw.VERSION, os.getloadavg()[0]))
    samples = {k: {} for k in pythons}
    for _ in range(args.rounds):  # interleaved: a busy machine weighs on both alike
        for which, py in pythons.items():
            for name, ms in pw.import_times(py, env, cwd, rounds=1).items():
                samples[which].setdefault(name, []).append(ms)
    med = {k: {n: statistics.median(v) for n, v in s.items()} for k, s in samples.items()}
    print(pw.report(med["stock"], med["bindthem"]))
    s, b = med["stock"][pw.CORE], med["bindthem"][pw.CORE]
    bt = med["bindthem"].get("bindthem", 0.0)
    print("import pyamg.amg_core: stock %.1f ms, bindthem %.1f ms (of it %.1f ms importing "
          "bindthem, %.1f ms the rest): stock/bindthem = %.2f (issue 26's target >= 3)"
          % (s, b, bt, b - bt, s / b))
    firsts = [float(pw.run([pythons["bindthem"], "-c", FIRST_USE % (pw.HEADERS,)], env=env,
                           cwd=cwd).stdout) for _ in range(args.rounds)]
    print("the first use of the bindthem wheel's 8 kernel modules (bound then, with "
          "load_package's checks): %.1f ms (median)" % statistics.median(firsts))
    print("median of %d rounds; load average %.1f after" % (args.rounds, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
