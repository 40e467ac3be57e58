"""Helpers for tests that start Python subprocesses, for thread tests, and
for the located-error tests.

A subprocess must import the same bindthem the tests import: the installed
one in CI (the source folder has no compiled _core there), the in-place build
in a developer's checkout. So it gets that package's parent folder first on
PYTHONPATH, and must not run with the source folder as its working directory
(``python -c``/``-m`` put the working directory before PYTHONPATH).
"""

import os
import pickle
import subprocess
import sys
import threading

import numpy as np

import bindthem

BINDTHEM_PATH = os.path.dirname(os.path.dirname(os.path.abspath(bindthem.__file__)))
# typing.assert_type is new in 3.11; mypy reads typing_extensions' (a mypy
# dependency) as the same function on 3.10
ASSERT_TYPE_IMPORT = ("from typing import assert_type" if sys.version_info >= (3, 11)
                      else "from typing_extensions import assert_type")


def python_env(base=None, **extra):
    """os.environ (or base) with bindthem's folder first on PYTHONPATH."""
    env = dict(os.environ if base is None else base)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([BINDTHEM_PATH] + rest)
    env.update(extra)
    return env


_C_FACTS = r"""
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <wchar.h>
#define NAME(x) _Generic((x)0, char: "char", signed char: "signed char", \
    unsigned char: "unsigned char", short: "short", unsigned short: "unsigned short", \
    int: "int", unsigned: "unsigned int", long: "long", unsigned long: "unsigned long", \
    long long: "long long", unsigned long long: "unsigned long long")
#define TYPEDEF(t) printf("typedef %s %s\n", #t, NAME(t))
int main(void)
{
    printf("CHAR_MIN %d\nCHAR_MAX %d\nWCHAR_MIN %lld\n", CHAR_MIN, CHAR_MAX, (long long)WCHAR_MIN);
    printf("sizeof_long %zu\nsizeof_long_double %zu\nsizeof_wchar_t %zu\n", sizeof(long),
           sizeof(long double), sizeof(wchar_t));
    printf("LONG_MIN %ld\nLONG_MAX %ld\nULONG_MAX %lu\n", LONG_MIN, LONG_MAX, ULONG_MAX);
    TYPEDEF(int8_t); TYPEDEF(uint8_t); TYPEDEF(int16_t); TYPEDEF(uint16_t);
    TYPEDEF(int32_t); TYPEDEF(uint32_t); TYPEDEF(int64_t); TYPEDEF(uint64_t);
    TYPEDEF(size_t); TYPEDEF(ssize_t); TYPEDEF(ptrdiff_t); TYPEDEF(intptr_t); TYPEDEF(uintptr_t);
    return 0;
}
"""


def c_facts(outdir, cflags=()):
    """The platform's C facts, from a program the system cc compiles (with
    cflags) and runs: {"CHAR_MIN": -128, "sizeof_long": 8, ...,
    "typedefs": {"size_t": "unsigned long", ...}}."""
    src, exe = os.path.join(outdir, "facts.c"), os.path.join(outdir, "facts")
    with open(src, "w") as f:
        f.write(_C_FACTS)
    subprocess.run([os.environ.get("CC", "cc"), "-std=c11", *cflags, src, "-o", exe], check=True)
    out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    facts = {"typedefs": {}}
    for line in out.splitlines():
        if line.startswith("typedef "):
            _, alias, target = line.split(" ", 2)
            facts["typedefs"][alias] = target
        else:
            key, v = line.split()
            facts[key] = int(v)
    return facts


def spin_intervals(spin, n, ms, wrap=None):
    """Runs spin (c_spin) in two threads at once on arrays of n elements;
    returns the two (start, end) intervals. wrap() is entered around the
    call inside each thread (context options are per thread)."""
    xs = [np.ones(n) for _ in range(2)]
    ts = [np.zeros(2) for _ in range(2)]
    barrier = threading.Barrier(2)
    errors = []

    def work(i):
        try:
            barrier.wait()
            if wrap is None:
                spin(xs[i], ts[i], ms)
            else:
                with wrap():
                    spin(xs[i], ts[i], ms)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return ts


def overlap(ts):
    """Whether two (start, end) intervals overlap."""
    (s0, e0), (s1, e1) = ts
    assert s0 < e0 and s1 < e1
    return s0 < e1 and s1 < e0


def cuda_mock_path(tmp_path_factory, src, cc):
    """The mock libcuda (tests/cuda/mock/mock_cuda.c), built once per process:
    the driver is process-wide, so every test file that uses the mock reuses
    the one BINDTHEM_LIBCUDA already names."""
    have = os.environ.get("BINDTHEM_LIBCUDA", "")
    if have.endswith("libcuda_mock.so") and os.path.exists(have):
        return have
    out = str(tmp_path_factory.mktemp("cuda_mock") / "libcuda_mock.so")
    subprocess.run([cc, "-std=c11", "-O1", "-shared", "-fPIC", src, "-o", out, "-lpthread"],
                   check=True)
    return out


# ---- located errors (test_errors.py, test_yaml.py) ----

def read_table(path, ncols):
    """The rows of a tab-separated EXPECTED.txt (tests/data/bad_*): ncols columns each."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                cols = line.split("\t")
                assert len(cols) == ncols, line
                rows.append(cols)
    return rows


def _loc(pos):
    if pos == "-":
        return None, None
    line, col = pos.split(":")
    return int(line), int(col)


def check_located(exc, cls, path, pos, msg):
    """A located error: its class, file, line:col and message, kept through pickling."""
    assert type(exc) is cls
    assert isinstance(exc, bindthem.BindError)
    line, col = _loc(pos)
    assert exc.filename == path
    assert (exc.lineno, exc.colno) == (line, col)
    prefix = "%s:%s: " % (path, pos) if pos != "-" else "%s: " % path
    assert str(exc).startswith(prefix)
    assert msg in str(exc)
    # the located message survives pickling (multiprocessing, pytest-xdist)
    back = pickle.loads(pickle.dumps(exc))
    assert (type(back), str(back), back.filename, back.lineno, back.colno) == \
        (cls, str(exc), exc.filename, exc.lineno, exc.colno)


def instantiate_error(header, instantiate, **kw):
    """The InstantiateError bindthem.parse_header(header, instantiate, **kw) raises."""
    import pytest

    with pytest.raises(bindthem.InstantiateError) as ei:
        bindthem.parse_header(header, instantiate, **kw)
    return ei.value


def write_file(tmp_path, name, text):
    """Writes text to tmp_path/name; its path."""
    p = tmp_path / name
    p.write_text(text)
    return str(p)


# a header of the error tests: a template, a reference parameter, a plain function
# total and scale, templated on T: the kernels of tests that need a header
# with a few instantiations (test_build_jobs, test_pch, test_lazy_package)
TOTAL_SCALE_H = """\
// The sum of x.
template <class T>
T total(const T x[], const int x_size)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// x scaled by a, in place.
template <class T>
void scale(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}
"""


SCALE_ROWS_H = """\
template <class I, class T>
void scale_rows(const I n, T x[], const int x_size);

void by_ref(double **x);

int helper_function(const int n);
"""


def random_array(rng, shape, dtype):
    """Standard normal values of shape in dtype (a complex one with an imaginary
    part of its own): the random inputs compared against NumPy and SciPy."""
    a = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def untyped(f):
    """str(inspect.signature(f)) without its annotations (the types the
    overloads take: tests/core/test_signature_types.py checks those): the
    parameters, their kinds and defaults."""
    import inspect

    sig = inspect.signature(f)
    return str(sig.replace(
        parameters=[p.replace(annotation=p.empty) for p in sig.parameters.values()],
        return_annotation=sig.empty))
