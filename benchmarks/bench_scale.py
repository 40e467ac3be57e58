"""Hostile inputs at scale: time and memory of the shapes that were
quadratic (tests/core/test_scale.py checks them with generous bounds).

    .venv/bin/python benchmarks/bench_scale.py      # about a minute

The C stages run in tests/core/c/scale.c (-O2, no sanitizers; CPU seconds): "peak" is the
most bytes the metadata arena held at once, "x input" that over the input's
bytes. The Python rows start a fresh interpreter with the private -O2 build
of bindthem (common.py) and report its peak RSS, the interpreter and NumPy
(~40 MB) included.
"""

import os
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

sys.path.insert(0, os.path.join(common.ROOT, "tests", "core"))
import c_drivers  # noqa: E402
from scale_inputs import alias_header, alias_yaml, kernels_header, shared_object, untemplated_yaml  # noqa: E402

N = 100_000

PY = textwrap.dedent("""
    import resource, sys, time
    import bindthem
    what, args = sys.argv[1], [a if a != "-" else None for a in sys.argv[2:]]
    t = time.perf_counter()
    try:
        if what == "load":
            bindthem.load(*args)
        else:
            bindthem.parse_header(*args)
        r = "ok"
    except bindthem.BindError as e:
        r = type(e).__name__
    print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, r)
""")


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def c_stats(scale, *paths):
    out = subprocess.run([scale, "stats"] + list(paths), capture_output=True, text=True,
                         check=True).stdout.split()
    s = dict(zip(out[::2], map(float, out[1::2])))
    return ["%.2f s" % s["seconds"], "%.0f MB" % (s["peak"] / 1e6),
            "%.1f" % (s["peak"] / s["bytes"])]


def python_run(what, *args):
    out = subprocess.run([common.python(), "-c", PY, what] + list(args), capture_output=True,
                         text=True, env=common.env(), cwd=common.CACHE, check=True).stdout.split()
    return ["%.2f s" % float(out[0]), "%.0f MB RSS" % (int(out[1]) / 1024), out[2]]


def size(*paths):
    return "%.1f MB" % (sum(os.path.getsize(p) for p in paths) / 1e6)


def main():
    scale = c_drivers.build()["scale"]
    with tempfile.TemporaryDirectory() as d:
        h = write(d, "k.h", kernels_header(N, extern_c=False))
        hc = write(d, "kc.h", kernels_header(N))
        y = write(d, "k.yml", untemplated_yaml("f%d" % i for i in range(N)))
        one = write(d, "one.h", "void f0(int a);\n")
        semi = write(d, "semi.h", ";" * 5_000_000)
        tiny = write(d, "tiny.h", "".join("int f%d();\n" % i for i in range(N)))
        ah, ay = write(d, "g.h", alias_header(200)), write(d, "a.yml", alias_yaml(200, 100))
        deep = write(d, "deep.yml", "[" * N)
        lib = shared_object(os.path.join(d, "libk.so"), N)

        rows = [
            ["10^5 functions", size(h)] + c_stats(scale, h),
            ["10^5 functions + a YAML listing them", size(h, y)] + c_stats(scale, h, y),
            ["10^5 YAML entries, 1 function", size(one, y)] + c_stats(scale, one, y),
            ["5 MB of ';'", size(semi)] + c_stats(scale, semi),
            ["10^5 `int fN();`", size(tiny)] + c_stats(scale, tiny),
            ["an entry used by 100 aliases", size(ah, ay)] + c_stats(scale, ah, ay),
        ]
        common.table("C stages: parse + YAML + plan + mangle", [
            "input", "bytes", "time", "peak", "x input"], rows,
            "target: 10^5 functions in <= 2 s with the binding; memory <= 20x the input")

        out = subprocess.run([scale, "mangle-ns", str(N)], capture_output=True, text=True,
                             check=True).stdout.split()
        print("\nmangling a0::a1::...::a99999::f<int>: %s s, a %d-byte name"
              % (out[1], len(out[2])))

        rows = [
            ["load, 10^5 functions"] + python_run("load", lib, hc),
            ["load, 10^5 functions + YAML"] + python_run("load", lib, hc, y),
            ["parse_header (dicts), 10^5 functions"] + python_run("parse", hc),
            ["parse_header, '[' x 10^5 YAML"] + python_run("parse", one, deep),
            ["parse_header, 1000 aliases"] + python_run(
                "parse", ah, write(d, "b.yml", alias_yaml(200, 1000))),
        ]
        common.table("Python, fresh interpreter", ["what", "time", "peak", "result"], rows)


if __name__ == "__main__":
    print(common.machine())
    main()
