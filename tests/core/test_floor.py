"""The call path's cheap paths (issue 30) say and do what the general ones do:
the no-match error's dtype names (read once at import, not from NumPy per
call), defaults left out on the fast path, keyword calls."""

import re

import numpy as np
import pytest

from sources import compile_cxx, kernel

import bindthem

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.uint64, np.longlong, np.ulonglong, np.intc, np.float16, np.float32,
          np.longdouble, np.complex64, np.clongdouble, np.object_, np.datetime64, "S3", "U2",
          "V4", [("a", np.int32)]]


@pytest.fixture(scope="session")
def defaults(libdir):
    lib = compile_cxx(libdir, "defaults", kernel("defaults.h"), kernel("defaults.yml"))
    return bindthem.load(lib, kernel("defaults.h"), kernel("defaults.yml"))


@pytest.mark.parametrize("dt", DTYPES, ids=str)
def test_no_match_names_the_dtype_as_numpy_does(defaults, dt):
    a = np.zeros(11, dtype=dt)
    with pytest.raises(TypeError) as e:
        defaults.report(a)
    assert "argument 'out' (position 1) got numpy.ndarray of %s, expected float64 array" % (
        a.dtype,) in str(e.value)


def test_no_match_says_non_native_byte_order(defaults):
    a = np.zeros(11, dtype=np.dtype(np.float64).newbyteorder())
    with pytest.raises(TypeError, match=r"got numpy.ndarray of >f8 \(non-native byte order\), "
                                        "expected float64 array"):
        defaults.report(a)


def test_no_match_repeated_gives_the_same_text(defaults):
    """The overload list is built once, at bind time: every raise has it whole."""
    msgs = set()
    for _ in range(3):
        with pytest.raises(TypeError) as e:
            defaults.relax(np.zeros(3, np.int8), 1.0)
        msgs.add(str(e.value))
    (msg,) = msgs
    assert msg.count("\n    ") == 3 and "relax(" in msg


def test_defaults_left_out_equal_passing_them(defaults):
    """Each count of positional arguments (the rest left to their defaults,
    the fast path) writes what passing the defaults writes (the general path,
    by keyword)."""
    import inspect
    sig = inspect.signature(defaults.report)
    names = list(sig.parameters)[1:]
    given = [2.5, -1.25, 11, 7, False, "x", "y", 5, 9, 0.125, True]
    for k in range(len(names) + 1):
        fast, general = np.full(11, np.nan), np.full(11, np.nan)
        defaults.report(fast, *given[:k])
        kw = {n: (given[i] if i < k else sig.parameters[n].default) for i, n in enumerate(names)}
        defaults.report(general, **kw)
        np.testing.assert_array_equal(fast, general)
        assert not np.isnan(fast).any()


def test_defaults_left_out_errors_as_the_general_path(defaults):
    out = np.zeros(11)
    with pytest.raises(TypeError) as fast:
        defaults.report(out, "not a float")
    with pytest.raises(TypeError) as general:
        defaults.report(out, w="not a float")
    assert str(fast.value) == str(general.value)
    assert "argument 'w' (position 2) got str, expected float (double)" in str(fast.value)
    with pytest.raises(OverflowError) as fast:
        defaults.report(out, 1.0, 1.0, 1 << 70)
    with pytest.raises(OverflowError) as general:
        defaults.report(out, 1.0, 1.0, n=1 << 70)
    assert str(fast.value) == str(general.value)
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'out'"):
        defaults.report()


def test_keyword_calls_select_by_dtype_through_the_memo(defaults):
    """A keyword call with every argument given goes through the last-call
    memo: alternating dtypes, positional and keyword, each call gets its own
    overload (a stale memo would call the float64 kernel on float32 data)."""
    for _ in range(3):
        for dt in (np.float64, np.float32, np.int32):
            y, x = np.zeros(3, dt), np.arange(3, dtype=dt)
            r = defaults.relax(x=x, y=y, shift=1, omega=2)
            np.testing.assert_array_equal(y, 2 * x + 1)
            assert type(r) is (int if dt == np.int32 else float)
            y2 = np.zeros(3, dt)
            defaults.relax(y2, x, 2, 1)
            np.testing.assert_array_equal(y2, y)
    with pytest.raises(TypeError, match=r"argument 'x' \(position 2\) got numpy.ndarray of "
                                        "float32, expected float64 array"):
        defaults.relax(y=np.zeros(3), x=np.zeros(3, np.float32), omega=1.0, shift=0)


def test_keyword_errors_unchanged(defaults):
    y, x = np.zeros(3), np.zeros(3)
    defaults.relax(y, x, omega=1.0, shift=0)  # the memo holds this call
    with pytest.raises(TypeError, match=r"relax\(\) got multiple values for argument 'x'"):
        defaults.relax(y, x, x=x, omega=1.0, shift=0)
    with pytest.raises(TypeError, match=r"relax\(\) got an unexpected keyword argument 'Omega'"):
        defaults.relax(y, x, Omega=1.0, shift=0)
    with pytest.raises(TypeError, match=r"relax\(\) missing 1 required positional argument: 'x'"):
        defaults.relax(y, omega=1.0, shift=0)
    ro = np.zeros(3)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        defaults.relax(y=ro, x=x, omega=1.0, shift=0)
    with pytest.raises(OverflowError):
        defaults.relax(y=y, x=x, omega=1.0, shift=1 << 40)


def test_defaults_left_out_select_by_dtype_through_the_memo(defaults):
    """A call that leaves defaults out asks the last-call memo too (an omitted
    argument has a key of its own): alternating dtypes and how many arguments
    are given, positional and keyword, each call gets its own overload and its
    own defaults; the int overload, which has no default for omega, still
    refuses a call that leaves it out, right after the float ones took it."""
    for _ in range(3):
        for dt in (np.float64, np.float32):
            x = np.arange(3, dtype=dt)
            for call in (lambda y: defaults.relax(y, x), lambda y: defaults.relax(y, x, 0.5),
                         lambda y: defaults.relax(y=y, x=x), lambda y: defaults.relax(y, x, 0.5, 0),
                         lambda y: defaults.relax(y, x, omega=0.5)):
                y = np.zeros(3, dt)
                assert call(y) == 0.5
                np.testing.assert_array_equal(y, x * dt(0.5))
            y = np.zeros(3, dt)
            assert defaults.relax(y, x, 2.0) == 2.0
            np.testing.assert_array_equal(y, 2 * x)
        yi, xi = np.zeros(3, np.int32), np.arange(3, dtype=np.int32)
        with pytest.raises(TypeError, match=r"argument 'omega' \(position 3\) got nothing \(it "
                                            r"was left out\), expected int"):
            defaults.relax(yi, xi)
        with pytest.raises(TypeError, match=r"argument 'omega' \(position 3\) got nothing"):
            defaults.relax(y=yi, x=xi, shift=1)
        assert defaults.relax(yi, xi, 3) == 3
        np.testing.assert_array_equal(yi, 3 * xi)


NP_INTS = [np.int8, np.uint8, np.int16, np.uint16, np.intc, np.uintc, np.int32, np.uint32,
           np.int64, np.uint64, np.longlong, np.ulonglong, np.bool_]
INT_FUNCS = ["next_char", "prev_schar", "next_uchar", "neg_short", "next_ushort", "neg_int",
             "next_uint", "neg_long", "next_ulong", "neg_llong", "next_ullong", "next_size",
             "neg_int64", "half_float", "half_double"]


def outcome(f, v):
    try:
        r = f(v)
        return ("ok", type(r), repr(r))
    except Exception as e:  # noqa: BLE001 - the outcome is compared whole
        # messages name the argument's type (numpy.int8 or int) and its repr
        # (np.float64(3.5e+38) or 3.5e+38): all else alike
        msg = re.sub(r"got [\w.]+, expected", "got T, expected", str(e))
        return ("exc", type(e), re.sub(r"np\.\w+\(([^()]*)\)", r"\1", msg))


@pytest.mark.parametrize("fname", INT_FUNCS)
def test_numpy_integer_scalars_as_python_ints(abi, fname):
    """NumPy integers are read in place (no __index__): every type's edge
    values give what the same value as a Python int gives, result or error
    (the range messages name the value the same way)."""
    f = getattr(abi, fname)
    for t in NP_INTS:
        info = np.iinfo(t) if t is not np.bool_ else None
        values = [0, 1] if info is None else sorted(
            {info.min, info.max, 0, 1, -1 if info.min < 0 else 2, info.max // 2 + 1,
             info.min // 2 - 1 if info.min < 0 else 3})
        for v in values:
            want = outcome(f, bool(v) if t is np.bool_ else int(v))
            assert outcome(f, t(v)) == want, (fname, t, v)


@pytest.mark.parametrize("fname", ["half_float", "half_double", "conj2_cdouble", "neg_int"])
def test_numpy_float_scalars_as_python_floats(abi, fname):
    f = getattr(abi, fname)
    for t in (np.float32, np.float64):
        for v in (0.0, -0.0, 0.1, 3.0, -2.5, 1e38, 3.5e38, 1e300, -1e300, np.inf, -np.inf, np.nan):
            with np.errstate(over="ignore"):
                s = t(v)
            got, want = outcome(f, s), outcome(f, float(s))
            if "nan" in want[2]:
                assert got[:2] == want[:2] and "nan" in got[2]
            else:
                assert got == want, (fname, t, v)


def test_keywords_not_interned_bind_as_interned_ones(defaults):
    """The keyword map compares interned pointers first; a name built at run
    time (not interned: another object) binds by value as before, and gives
    the same errors."""
    y, x = np.zeros(3), np.arange(3.0)
    om, sh = "".join(["ome", "ga"]), "".join(["shi", "ft"])
    assert om == "omega" and om is not "omega"  # noqa: F632 - the point: another object
    assert defaults.relax(y, x, **{om: 2.0, sh: 1}) == 2.0
    np.testing.assert_array_equal(y, 2 * x + 1)
    with pytest.raises(TypeError, match=r"relax\(\) got multiple values for argument 'omega'"):
        defaults.relax(y, x, 1.0, **{om: 2.0})
    with pytest.raises(TypeError, match=r"relax\(\) got an unexpected keyword argument 'omegA'"):
        defaults.relax(y, x, **{om[:-1] + "A": 2.0})
    y2 = np.zeros(3)
    defaults.relax(y2, x, omega=2.0, shift=1)
    np.testing.assert_array_equal(y2, y)


def test_unknown_keyword_text_kept_and_whole(defaults):
    """The keyword list of the unknown-keyword TypeError is built once and
    kept: every raise has the same, whole text."""
    msgs = set()
    for _ in range(3):
        with pytest.raises(TypeError) as e:
            defaults.relax(np.zeros(3), np.zeros(3), Omega=1.0)
        msgs.add(str(e.value))
    assert msgs == {"relax() got an unexpected keyword argument 'Omega'; the keywords it takes "
                    "are 'y', 'x', 'omega', 'shift' (spelled exactly, case included)"}
