"""Remapped overloads with different parameter lists
(tests/data/kernels/overloads.h, overloads.yml): dispatch by the number of
arguments, the keywords and the dtypes, in YAML order, cached."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import python_env, untyped

import bindthem
from bindthem import stubs

HEADER, YAML = kernel("overloads.h"), kernel("overloads.yml")


@pytest.fixture(scope="session")
def ovl(libdir):
    return bindthem.load(compile_cxx(libdir, "overloads", HEADER, YAML), HEADER, YAML)


@pytest.fixture
def arrays():
    x = np.array([1.0, 2.0, 3.0])
    return x, x.astype(np.float32), np.array([0.5, 0.0, 2.0]), np.array([4, 0, 7], np.int32)


def test_one_function_with_every_list(ovl):
    f = ovl.summary
    assert [o.split("(")[0] for o in f.overloads] == [
        "double total<double>", "double total<float>", "double weighted<double>",
        "double weighted<float>", "double scaled", "double count"]
    assert f.signatures == ("summary(x)", "summary(x)", "summary(x, w)", "summary(x, w)",
                            "summary(v, by=10.0)", "summary(idx)")
    # inspect.signature shows the first overload's parameters
    assert untyped(f) == "(x)" and f.parameters == ("x",)
    assert repr(f) == "<bindthem function overloads.summary with 6 overloads>"


def test_docstring_lists_every_signature(ovl):
    doc = ovl.summary.__doc__
    assert doc.startswith("Overloaded function.\n\n1. summary(x)\n\nSum of x.\n\n"
                          "2. summary(x, w)\n\nSum of x[i] * w[i].\n\n")
    assert "3. summary(v, by=10.0)\n\nSum of v, times `by`." in doc
    assert doc.endswith("4. summary(idx)\n\nNumber of nonzero indices, negated (so that a test "
                        "sees which ran).")


def test_dispatch_by_count_keywords_and_dtype(ovl, arrays):
    x, x32, w, idx = arrays
    f = ovl.summary
    assert f(x) == x.sum()                          # total<double>
    assert f(x32) == x32.sum(dtype=np.float64)      # total<float>
    assert f(x, w) == x @ w                         # weighted<double>: by count
    assert f(x=x, w=w) == x @ w
    assert f(w=w, x=x) == x @ w
    assert f(x, 2.0) == 2 * x.sum()                 # (x, w) refuses a float: scaled
    assert f(v=x) == 10 * x.sum()                   # by keyword: scaled, with its default
    assert f(x, by=3) == 3 * x.sum()
    assert f(idx) == -np.count_nonzero(idx)         # dtype: no float overload takes int32
    assert f(idx=idx) == -np.count_nonzero(idx)


def test_exact_pass_over_all_lists_first(ovl):
    # half(v: double) comes first, but an int is exact only for half_int(n: long)
    assert ovl.half.signatures == ("half(v)", "half(n)")
    assert ovl.half(3) == 3 // 2 + 1000
    assert ovl.half(3.0) == 1.5
    assert ovl.half(v=3) == 1.5                     # a keyword rules half_int out
    assert ovl.half(np.float32(3)) == 1.5           # converted, as no list takes it exactly
    assert ovl.half(True) == 1000                   # bool -> long converts; -> double does not


def test_no_overload_takes_the_call(ovl, arrays):
    x, _, w, idx = arrays
    listing = "; the overloads are:\n    summary(x): double total<double>(const double x[], "
    with pytest.raises(TypeError) as e:
        ovl.summary()
    assert str(e.value).startswith("summary(): no overload takes 0 positional arguments" + listing)
    # every overload, with its Python and C signatures
    lines = str(e.value).split("\n")[1:]
    assert [line.split(": ")[0].strip() for line in lines] == list(ovl.summary.signatures)
    assert [line.split(": ", 1)[1] for line in lines] == list(ovl.summary.overloads)
    with pytest.raises(TypeError, match=r"^summary\(\): no overload takes 3 positional arguments;"):
        ovl.summary(x, w, w)
    with pytest.raises(TypeError, match=r"^summary\(\): no overload takes 1 positional argument "
                                        r"and keyword 'x';"):
        ovl.summary(x, x=x)
    with pytest.raises(TypeError, match=r"^summary\(\): no overload takes 1 positional argument "
                                        r"and keywords 'w', 'by';"):
        ovl.summary(x, w=w, by=2.0)
    with pytest.raises(TypeError, match=r"^summary\(\) got an unexpected keyword argument 'q'; "
                                        r"the keywords it takes are 'x', 'w', 'v', 'by', 'idx' \("):
        ovl.summary(x, q=1)


def test_no_overload_takes_the_dtypes(ovl, arrays):
    x = arrays[0]
    with pytest.raises(TypeError) as e:
        ovl.summary(np.zeros(3, np.int16))
    msg = str(e.value)
    assert msg.startswith("summary(): argument 'x' (position 1) got numpy.ndarray of int16, "
                          "expected float64 array or float32 array.\nThe overloads are:\n")
    assert msg.split("\n")[2:] == ["    %s: %s" % (s, o) for s, o in
                                   zip(ovl.summary.signatures, ovl.summary.overloads)]
    with pytest.raises(TypeError, match=r"summary\(\): argument 'by' \(position 2\) got str, "
                                        r"expected float \(double\) \(given the arguments"):
        ovl.summary(x, by="2")
    with pytest.raises(TypeError, match=r"half\(\): argument 'n' \(position 1\) got float"):
        ovl.half(n=4.5)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_dispatch_cost_is_flat(ovl, arrays):
    x, x32, w, idx = arrays
    calls = [lambda: ovl.summary(x), lambda: ovl.summary(x32), lambda: ovl.summary(x, w),
             lambda: ovl.summary(w=w, x=x), lambda: ovl.summary(v=x), lambda: ovl.summary(idx),
             lambda: ovl.summary(idx=idx), lambda: ovl.summary(x, by=2.0)]
    for c in calls:
        c()
    before = ovl.summary._dispatch_info
    results = [[c() for c in calls] for _ in range(25)]
    after = ovl.summary._dispatch_info
    # every call after the first of its shape is one cache lookup: no scan
    assert after == before and before["cached"] >= len(calls)
    assert all(r == results[0] for r in results)
    # the last overload, reached by dtype, scans only on its first call
    ovl.half(7)
    scans = ovl.half._dispatch_info["scans"]
    for _ in range(10):
        assert ovl.half(7) == 1003
    assert ovl.half._dispatch_info["scans"] == scans


def test_pickling(ovl, arrays, tmp_path):
    x, _, w, idx = arrays
    f = pickle.loads(pickle.dumps(ovl.summary))
    assert f(x, w) == x @ w and f(idx=idx) == -2
    lib = pickle.loads(pickle.dumps(ovl))
    assert lib.summary.signatures == ovl.summary.signatures
    # and in a fresh process
    path = tmp_path / "f.pkl"
    path.write_bytes(pickle.dumps(ovl.summary))
    code = ("import pickle, sys, numpy as np; f = pickle.load(open(sys.argv[1], 'rb')); "
            "print(f(np.ones(2), np.ones(2)), f(v=np.ones(2)), f(idx=np.ones(3, np.int32)))")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       env=python_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2.0", "20.0", "-3.0"]


def test_stub_has_an_overload_per_list():
    """The stub's overloads, one per parameter list; mypy --strict picks them by
    count, keyword and dtype in api/test_stubs.py (test_overload_per_parameter_list,
    in its one mypy run)."""
    text = stubs.render(HEADER, YAML, "ovl")
    assert text.count("def summary(") == 6 and text.count("def half(") == 2
    assert ("def summary(v: numpy.typing.NDArray[numpy.float64], by: float = 10.0) -> float:"
            in text)
    assert "def half(n: int) -> int:" in text
