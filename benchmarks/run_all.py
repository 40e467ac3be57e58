"""Runs every benchmark and prints the tables.

    .venv/bin/python benchmarks/run_all.py [--quick] [--no-callgrind] [--no-e2e]

The call benchmarks (bench_calls, bench_sizes, bench_threads) run in this one
process, all backends side by side; bench_callgrind, bench_startup,
bench_unpickle and bench_e2e start their own subprocesses (valgrind, fresh
interpreters).
First run: fetches pyamg's sdist (tests/support/pyamg_sdist.py), builds a private
-O2 copy of bindthem from this checkout, the 8 amg_core libraries and the
floor extension under /tmp/bindthem-bench (~2 minutes); later runs take
about 3-4 minutes (callgrind ~1 min, end to end ~1.5 min).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    args = set(sys.argv[1:])
    t0 = time.perf_counter()
    print(common.machine())
    print("load average at start: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    common.build_libraries()
    common.floor()
    print("(built/cached in %.0f s)" % (time.perf_counter() - t0))

    import bench_calls
    import bench_sizes
    import bench_startup
    import bench_threads
    import bench_unpickle
    wall = bench_calls.main()
    instr = None
    if "--no-callgrind" not in args:
        import bench_callgrind
        instr = bench_callgrind.main()
    bench_sizes.main()
    if "--quick" in args:
        bench_startup.REPS = 3
    bench_startup.main()
    bench_unpickle.main()
    import bench_carried
    bench_carried.main()
    if "--no-e2e" not in args:
        import bench_e2e
        if "--quick" in args:
            bench_e2e.REPS = 1
        bench_e2e.main()
    bench_threads.main()
    targets(wall, instr)
    print("\nload average at end: %s; total %.0f s"
          % (" ".join("%.2f" % v for v in os.getloadavg()), time.perf_counter() - t0))


def targets(wall, instr):
    """The per-call targets in one table: bindthem (direct call) over the
    floor and over pybind11's 1st overload, in instructions (callgrind) and
    in wall time (bench_calls' interleaved rounds)."""
    empty, d = wall
    fl, pb = "floor (hand-written C)", "pybind11 (stock pyamg)"
    rows = [["wall time / floor",
             "%.2f" % (empty["bindthem"] / empty[fl])]
            + ["%.2f" % (d[("bindthem", t)] / d[(fl, "c128" if t == "i64c128" else t)])
               for t in ("f32", "c128", "i64c128")]
            + ["%.3f" % (d[("bindthem", "f32")] / d[(pb, "f32")]), "<= 2.0 / <= 0.2"]]
    if instr:
        import bench_callgrind
        r = bench_callgrind.ratios(instr)
        rows.insert(0, ["instructions / floor"]
                    + ["%.2f" % r[t][0] for t in bench_callgrind.OVERLOADS]
                    + ["%.3f" % r["f32"][2], "<= 2.0 / <= 0.2"])
    common.table("Targets: bindthem (direct call) per call",
                 ["measure", "f64", "1st (f32)", "4th (c128)", "8th (i64c128)", "1st / pybind11",
                  "target"], rows,
                 "instructions: callgrind, loop included; wall time: best of 15 interleaved "
                 "rounds of bench_calls. The 8th overload is held against the floor's "
                 "complex128 function.")


if __name__ == "__main__":
    main()
