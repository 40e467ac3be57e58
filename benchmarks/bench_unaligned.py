"""What an unaligned array costs a call: the same kernel on an aligned array
and on one at byte offset 1 (np.frombuffer over a bytearray, as a network
message hands it over), for 10, 10^4 and 10^6 doubles.

Kernels: ``total`` reads a const array (the call copies it into an aligned
temporary), ``scale`` writes one in place (copied in, and back after the
kernel). Columns: ns/call, best of several samples, and the difference.
The kernels' own work is in both columns; the difference is the copy (and,
for 10 elements, the temporary's malloc/free and the slow path).

Run: python benchmarks/bench_unaligned.py
"""

import os
import sys
import tempfile
import timeit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import common  # noqa: E402

SIZES = (10, 10 ** 4, 10 ** 6)

HEADER = """\
// Sum of x.
double total(const double x[], const int x_size)
{ double s = 0; for (int i = 0; i < x_size; i++) s += x[i]; return s; }

// x *= a, in place.
void scale(double x[], const int x_size, const double a)
{ for (int i = 0; i < x_size; i++) x[i] *= a; }
"""


def library():
    import bindthem
    d = os.path.join(common.CACHE, "unaligned")
    os.makedirs(d, exist_ok=True)
    h = os.path.join(d, "unaligned_bench.h")
    with open(h, "w") as f:
        f.write(HEADER)
    return bindthem.build(h, cache_dir=os.path.join(d, "cache"))


def at_offset(n, off):
    buf = bytearray(8 * n + 64)
    base = np.frombuffer(buf, np.uint8).ctypes.data
    a = np.frombuffer(buf, np.float64, n, (-base) % 64 + off)
    a[...] = 1.0
    return a


def best_ns(stmt, n):
    number = max(1, min(100000, 2 * 10 ** 6 // max(n, 1)))
    return min(timeit.repeat(stmt, number=number, repeat=7)) / number * 1e9


def main():
    lib = library()
    rows = []
    for n in SIZES:
        for name, call in (("total (const)", lambda x: lib.total(x)),
                           ("scale (in place)", lambda x: lib.scale(x, 1.0))):
            aligned, unaligned = at_offset(n, 0), at_offset(n, 1)
            assert aligned.flags.aligned and not unaligned.flags.aligned
            ta = best_ns(lambda: call(aligned), n)
            tu = best_ns(lambda: call(unaligned), n)
            rows.append([name, n, "%.0f" % ta, "%.0f" % tu, "%+.0f" % (tu - ta)])
    stats = {k: lib.total.stats[k] + lib.scale.stats[k] for k in lib.total.stats}
    common.table("Unaligned arrays: ns per call, aligned vs at byte offset 1",
                 ["kernel", "doubles", "aligned", "unaligned", "difference"], rows,
                 "Copies counted (Function.stats, both kernels): %s" % stats)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        print(common.machine())
        main()
