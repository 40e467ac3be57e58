"""What the build cache's trust checks cost: a warm ``bindthem.build`` of
pyamg 5.4.1's 8 amg_core headers (the sdist's, with its instantiate.yml),
every library a cache hit, before and after the checks.

before  bindthem's Python package as it was before the checks (``git archive``
        of $BINDTHEM_BENCH_BEFORE, default ``git merge-base HEAD main``), with
        this checkout's compiled _core (the C code is the same)
after   this checkout

Both read copies of one cache, built once. Rows:
  fresh process   the 8 builds in a fresh interpreter (bindthem imported before
                  the clock starts): every hit checks the manifest, the size and,
                  the first time this process uses the library, its full SHA-256;
                  median (and minimum) of FRESH interpreters, before and after
                  interleaved
  warm process    the 8 builds again in a process that built them: size checks,
                  no hashing; median (and minimum) of WARM rounds

Target: under +10 % (docs/build.rst, the build cache).

Run: python benchmarks/bench_cache_checks.py
"""

import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

FRESH = 15
WARM = 15

CHILD = """
import os, sys, time, json
import bindthem
core, cache, warm = sys.argv[1], sys.argv[2], int(sys.argv[3])
yml = os.path.join(core, "instantiate.yml")
heads = %r

def once():
    t = time.perf_counter()
    for h in heads:
        bindthem.build(os.path.join(core, h + ".h"), yml, name="pyamg.amg_core." + h,
                       cache_dir=cache)
    return time.perf_counter() - t

first = once()
print(json.dumps({"fresh": first, "warm": [once() for _ in range(warm)],
                  "file": bindthem.__file__}))
""" % (common.HEADERS,)


def before_tree():
    """A copy of bindthem's Python package before the checks, with this
    checkout's _core."""
    rev = os.environ.get("BINDTHEM_BENCH_BEFORE") or subprocess.run(
        ["git", "merge-base", "HEAD", "main"], cwd=common.ROOT, capture_output=True, text=True,
        check=True).stdout.strip()
    dest = os.path.join(common.CACHE, "before-checks-" + rev[:12])
    if not os.path.isdir(os.path.join(dest, "bindthem")):
        data = subprocess.run(["git", "archive", rev, "bindthem"], cwd=common.ROOT,
                              capture_output=True, check=True).stdout
        tmp = dest + ".tmp%d" % os.getpid()
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp)
        core = [f for f in os.listdir(os.path.join(common.BINDTHEM, "bindthem"))
                if f.startswith("_core") and f.endswith(".so")]
        shutil.copy(os.path.join(common.BINDTHEM, "bindthem", core[0]),
                    os.path.join(tmp, "bindthem"))
        os.rename(tmp, dest)
    return dest, rev


def run(tree, cache, warm):
    env = dict(common.env())
    env["PYTHONPATH"] = tree
    out = subprocess.run([sys.executable, "-c", CHILD, common.amg_core(), cache, str(warm)],
                         cwd=common.CACHE, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(out.stderr)
    import json
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    before, rev = before_tree()
    caches = {}
    for side in ("after", "before"):
        caches[side] = os.path.join(common.CACHE, "cache-checks-" + side)
    warmup = run(common.BINDTHEM, caches["after"], 0)  # compiles the first time only
    assert warmup["file"].startswith(common.BINDTHEM), warmup
    shutil.rmtree(caches["before"], ignore_errors=True)
    shutil.copytree(caches["after"], caches["before"], symlinks=True)
    trees = {"before": before, "after": common.BINDTHEM}
    fresh = {s: [] for s in trees}
    warm = {s: [] for s in trees}
    for i in range(FRESH):
        for side in (("before", "after") if i % 2 else ("after", "before")):
            r = run(trees[side], caches[side], WARM if i == 0 else 0)
            assert r["file"].startswith(trees[side]), r
            fresh[side].append(r["fresh"])
            warm[side] += r["warm"]
    rows = []
    for what, d in (("fresh process", fresh), ("warm process", warm)):
        b, a = statistics.median(d["before"]), statistics.median(d["after"])
        bm, am = min(d["before"]), min(d["after"])
        rows.append([what, "%.1f (%.1f)" % (b * 1e3, bm * 1e3), "%.1f (%.1f)" % (a * 1e3, am * 1e3),
                     "%+.1f %% (%+.1f %%)" % ((a - b) / b * 100, (am - bm) / bm * 100)])
    sizes = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(caches["after"])
                for f in fs if f.endswith(".so"))
    print(common.machine())
    common.table("Warm bindthem.build of pyamg's 8 headers, ms: median (min); before = %s"
                 % rev[:12],
                 ["", "before", "after", "change"], rows,
                 "the 8 libraries hold %.1f MiB (hashed once per process)" % (sizes / 2**20))


if __name__ == "__main__":
    main()
