"""Hostile inputs at scale: the shapes that cost quadratic time or memory
before (10^5 functions, 10^5 YAML entries, aliases, deep nesting, 10^5
namespace names, 5 MB of ';'), each with a bound about complexity, not
speed: memory as a multiple of the input's bytes, and time as the process's
own CPU seconds (time.process_time, CLOCK_PROCESS_CPUTIME_ID in scale.c),
which other processes' load does not inflate as it does the wall clock, at
ten times the target, so that a slow machine passes and a quadratic
regression does not (it took 15 s to 5 min and gigabytes). Speed itself is
shown by benchmarks/bench_scale.py; tests/core/scale_inputs.py makes the inputs."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

import c_drivers
from scale_inputs import alias_header, alias_yaml, kernels_header, shared_object, untemplated_yaml
from support import python_env

import bindthem

N = 100_000
SLACK = 10  # bounds are this many times the targets, in CPU seconds


@pytest.fixture(scope="module")
def scale():
    try:
        return c_drivers.build()["scale"]
    except OSError as e:
        pytest.skip(str(e))


def run_scale(scale, *args):
    r = subprocess.run([scale] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=600)
    return r.returncode, r.stdout


def stats(scale, *paths):
    """{"bytes", "peak", "decls", "overloads", "seconds"} of `scale stats`."""
    rc, out = run_scale(scale, "stats", *paths)
    assert rc == 0, out
    words = out.split()
    return {k: float(v) for k, v in zip(words[::2], words[1::2])}


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return str(path)


# ---- the header reader and planner ----

# The C stages alone take ~0.5 s of the 2 s target for parse + plan + bind;
# 5 s is 10x that and well below the 15 s they took before.
C_STAGES = 5


def test_many_functions_parse_and_plan(scale, tmp_path):
    s = stats(scale, write(tmp_path / "k.h", kernels_header(N, extern_c=False)))
    assert s["decls"] == N and s["overloads"] == N
    assert s["seconds"] < C_STAGES
    assert s["peak"] <= 20 * s["bytes"], s


def test_many_functions_with_a_yaml_listing_them_all(scale, tmp_path):
    h = write(tmp_path / "k.h", kernels_header(N, extern_c=False))
    y = write(tmp_path / "k.yml", untemplated_yaml("f%d" % i for i in range(N)))
    s = stats(scale, h, y)
    assert s["overloads"] == N
    assert s["seconds"] < C_STAGES
    assert s["peak"] <= 20 * s["bytes"], s


def test_memory_of_a_header_of_semicolons(scale, tmp_path):
    # 50 MB of ';' took 6.2 GiB: 48-byte tokens in arrays doubled in the arena
    s = stats(scale, write(tmp_path / "semi.h", ";" * 5_000_000))
    assert s["peak"] <= 20 * s["bytes"], s
    s = stats(scale, write(tmp_path / "semi_nl.h", ";\n" * 2_500_000))
    assert s["peak"] <= 20 * s["bytes"], s


def test_many_missing_names_near_misses_are_bounded(scale, tmp_path):
    # every missing name is compared with every unlisted header name for a
    # typo; past a budget the rest are only reported missing
    n = 20_000
    h = write(tmp_path / "k.h", "".join("template <class T> void kernel_%05d(T a);\n" % i
                                        for i in range(n)))
    names = ["kernel_00000"] + ["other_%05d" % i for i in range(n)]
    y = "- types: [[int]]\n  functions:\n" + "".join("    - %s\n" % s for s in names)
    s = stats(scale, h, write(tmp_path / "k.yml", y))
    assert s["overloads"] == 1
    assert s["seconds"] < 1 * SLACK


def test_mangler_is_linear_in_namespace_names(scale):
    rc, out = run_scale(scale, "mangle-ns", 3)
    assert rc == 0 and out.split()[2] == "_ZN2a02a12a21fIiEEvT_"
    rc, out = run_scale(scale, "mangle-ns", N)
    assert rc == 0, out
    seconds, name = float(out.split()[1]), out.split()[2]
    # 788 KB of names took 17.7 s and 8.2 GiB
    assert seconds < 0.5 * SLACK
    assert name.startswith("_ZN2a02a1") and name.endswith("6a999991fIiEEvT_")
    assert len(name) == len("_ZN") + sum(len(str(len("a%d" % i))) + len("a%d" % i)
                                         for i in range(N)) + len("1fIiEEvT_")


def test_namespace_names_count_against_the_nesting_limit(tmp_path):
    names = "::".join("a%d" % i for i in range(N))
    h = write(tmp_path / "ns.h", "namespace %s {\nvoid f(int a);\n}\n" % names)
    t = time.process_time()
    with pytest.raises(bindthem.HeaderError, match="namespaces nested too deeply") as e:
        bindthem.parse_header(h, strict=True)
    assert time.process_time() - t < 1 * SLACK
    assert (e.value.lineno, e.value.colno) == (1, len("namespace ") + len(names) + 2)
    ok = write(tmp_path / "ok.h", "namespace %s {\nvoid f(int a);\n}\n"
               % "::".join("a%d" % i for i in range(200)))
    assert bindthem.parse_header(ok)["declarations"][0]["namespace"][-1] == "a199"


# ---- instantiate.yml ----

def test_many_distinct_yaml_entries(scale, tmp_path):
    h = write(tmp_path / "one.h", "void f0(int a);\n")
    y = write(tmp_path / "k.yml", untemplated_yaml("f%d" % i for i in range(N)))
    s = stats(scale, h, y)
    assert s["overloads"] == 1
    assert s["seconds"] < 1 * SLACK  # 24 s before


def test_aliases_are_counted_each_time_they_are_used(tmp_path):
    # one entry of 200 functions x 4 tuples, used 1000 times: 10^6 pairs
    y = write(tmp_path / "alias.yml", alias_yaml(200, 1000))
    h = write(tmp_path / "g.h", alias_header(200))
    t = time.process_time()
    with pytest.raises(bindthem.InstantiateError, match=r"\[\d+\] \(an alias of the node here\) "
                       r"takes instantiate.yml past 1000000") as e:
        bindthem.parse_header(h, y)
    assert time.process_time() - t < 1 * SLACK
    assert (e.value.lineno, e.value.colno) == (1, 3)  # where the anchored entry is
    # the same under the limit: 100 uses, repeats kept once
    meta = bindthem.parse_header(h, write(tmp_path / "under.yml", alias_yaml(200, 100)))
    assert len(meta["functions"]) == 200
    assert all(len(f["overloads"]) == 4 for f in meta["functions"])


@pytest.mark.parametrize("text, where", [
    ("[" * N, (1, 65)),                                      # flow
    ("".join("  " * i + "-\n" for i in range(N // 100)), (65, 129)),  # block
])
def test_nesting_depth_is_checked_before_libyaml_loads(tmp_path, text, where):
    h = write(tmp_path / "one.h", "void f0(int a);\n")
    y = write(tmp_path / "deep.yml", text)
    t = time.process_time()
    with pytest.raises(bindthem.InstantiateError, match="nests deeper than 64 levels") as e:
        bindthem.parse_header(h, y)
    assert time.process_time() - t < 0.5 * SLACK  # 18 s before
    assert (e.value.lineno, e.value.colno) == where


def test_anchors_and_aliases_are_limited(tmp_path):
    h = write(tmp_path / "one.h", "void f0(int a);\n")
    anchors = "- types: null\n  functions: [%s]\n" % ", ".join("&a%d f%d" % (i, i)
                                                             for i in range(1001))
    with pytest.raises(bindthem.InstantiateError, match="more than 1000 anchors") as e:
        bindthem.parse_header(h, write(tmp_path / "a.yml", anchors))
    assert e.value.lineno == 2
    aliases = "- types: null\n  functions: [&a f0, %s]\n" % ", ".join(["*a"] * 10001)
    with pytest.raises(bindthem.InstantiateError, match="more than 10000 aliases"):
        bindthem.parse_header(h, write(tmp_path / "b.yml", aliases))


def test_nodes_are_limited(tmp_path):
    # twice what the expansion limit lets through; refused before loading
    h = write(tmp_path / "one.h", "void f0(int a);\n")
    y = write(tmp_path / "big.yml", "- types: null\n  functions: [%s]\n" % ",".join(
        ["f0"] * 2_000_000))
    t = time.process_time()
    with pytest.raises(bindthem.InstantiateError, match="more than 2000000 nodes") as e:
        bindthem.parse_header(h, y)
    assert time.process_time() - t < 1 * SLACK
    assert e.value.lineno == 2


# ---- binding, end to end ----

BIND = textwrap.dedent("""
    import sys, time, resource
    import numpy, bindthem
    lib, header, yml = sys.argv[1:4]
    t = time.process_time()
    m = bindthem.load(lib, header, yml if yml != "-" else None)
    print(time.process_time() - t, len(m.__all__), m.f7(numpy.zeros(3), 2.0))
""")


def test_many_functions_bind(tmp_path):
    """10^5 functions bind (parse, plan, dlsym, call frames, Function
    objects) in 2 s: 15 s without a YAML and 57 s with one before."""
    lib = shared_object(tmp_path / "libk.so", N)
    h = write(tmp_path / "k.h", kernels_header(N))
    y = write(tmp_path / "k.yml", untemplated_yaml("f%d" % i for i in range(N)))
    for yml in ("-", y):
        r = subprocess.run([sys.executable, "-c", BIND, lib, h, yml], capture_output=True,
                           text=True, env=python_env(), timeout=600)
        assert r.returncode == 0, r.stderr
        seconds, count, result = r.stdout.split()
        assert int(count) == N and int(result) == 0
        assert float(seconds) < 2 * SLACK, (yml, seconds)


def test_metadata_is_built_when_asked_for(tmp_path):
    h = write(tmp_path / "one.h", 'extern "C" int abs(int j);\n')
    lib = bindthem.load("libc.so.6", h)
    assert lib.metadata == bindthem.parse_header(h)
    assert lib.metadata is lib.metadata
    assert os.path.basename(lib.metadata["header"]) == "one.h"
