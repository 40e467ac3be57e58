"""Call-time errors: each checked for its message, and for leaving the
caller's arrays untouched."""

import re

import numpy as np
import pytest

import bindthem

OVERLOADS = (
    "\nThe overloads are:\n"
    "    int errfunc<int, float>(const int J[], const int J_size, float x[], const int x_size, "
    "float y[], const int y_size, double a)\n"
    "    int errfunc<int, double>(const int J[], const int J_size, double x[], const int x_size, "
    "double y[], const int y_size, double a)")


def errfunc(J, x, y, a):
    """The Python twin of errfunc, for Python's own argument messages."""


@pytest.fixture
def args():
    J = np.arange(3, dtype=np.int32)
    x = np.arange(4, dtype=np.float32) + 1
    y = np.arange(5, dtype=np.float32) + 2
    return J, x, y


def check_untouched(arrays, copies):
    for a, c in zip(arrays, copies):
        np.testing.assert_array_equal(a, c)


def raises(exc, fn, *a, **kw):
    """Calls fn, expects exc, checks that no array argument changed; the message."""
    arrays = [v for v in list(a) + list(kw.values()) if isinstance(v, np.ndarray)]
    copies = [v.copy() for v in arrays]
    with pytest.raises(exc) as e:
        fn(*a, **kw)
    check_untouched(arrays, copies)
    return str(e.value)


def test_good_call_writes(abi, args):
    J, x, y = args
    assert abi.errfunc(J, x, y, 9.0) == 3
    assert x[0] == 9.0
    assert abi.errfunc(J=J, y=y, a=7, x=x) == 3
    assert x[0] == 7.0


def test_type_error_names_function_argument_given_and_overloads(abi, args):
    J, x, y = args
    msg = raises(TypeError, abi.errfunc, J, x, y, "a")
    assert msg == ("errfunc(): argument 'a' (position 4) got str, expected float (double) "
                   "(given the arguments before it)." + OVERLOADS)


def test_list_is_never_converted(abi, args):
    J, x, y = args
    msg = raises(TypeError, abi.errfunc, [0, 1, 2], x, y, 1.0)
    assert msg == "errfunc(): argument 'J' (position 1) got list, expected int32 array." + OVERLOADS
    msg = raises(TypeError, abi.errfunc, J, [1.0, 2.0], y, 1.0)
    assert msg.startswith("errfunc(): argument 'x' (position 2) got list, expected float32 "
                          "array or float64 array (given the arguments before it).")
    assert raises(TypeError, abi.sum_const, (1.0, 2.0)).startswith(
        "sum_const(): argument 'x' (position 1) got tuple, expected float64 array.")


@pytest.mark.parametrize("bad", [np.int8, np.int64, np.int16, np.uint32, np.float32])
def test_wrong_index_dtype(abi, args, bad):
    J, x, y = args
    Jb = J.astype(bad)
    msg = raises(TypeError, abi.errfunc, Jb, x, y, 1.0)
    assert msg == ("errfunc(): argument 'J' (position 1) got numpy.ndarray of %s, expected "
                   "int32 array.\nIf that is what you meant, convert it (a copy): "
                   "J.astype(np.int32)" % np.dtype(bad).name + OVERLOADS)


def test_the_conversion_suggested_is_one_that_matches(abi, args):
    """The hint's code, run as written, makes a call that binds; for an array the
    function writes, it says where the results are, and they are there."""
    J, x, y = args
    msg = raises(TypeError, abi.errfunc, J.astype(np.int64), x, y, 1.0)
    code = re.search(r"convert it \(a copy\): (.*)$", msg, re.M).group(1)
    assert abi.errfunc(eval(code, {"np": np, "J": J.astype(np.int64)}), x, y, 1.0) == 3
    y64 = y.astype(np.float64)  # x float32 picks the float32 overload: y must follow
    msg = raises(TypeError, abi.errfunc, J, x, y64, 5.0)
    assert ("(given the arguments before it).\nIf that is what you meant, convert it (a copy, "
            "which the function writes): y2 = y.astype(np.float32), pass y2 and read the "
            "results from it.\nThe overloads") in msg, msg
    y2 = y64.astype(np.float32)  # as the hint says (errfunc may write y: it is not const)
    assert abi.errfunc(J, x, y2, 5.0) == 3 and x[0] == 5.0
    # several dtypes would do, or no array was given: no hint
    assert "convert it" not in raises(TypeError, abi.errfunc, J, x.astype(np.int8), y, 1.0)
    assert "convert it" not in raises(TypeError, abi.errfunc, [0, 1, 2], x, y, 1.0)


@pytest.mark.parametrize("bad", [np.float16, np.int32, np.complex64, np.longdouble])
def test_wrong_value_dtype(abi, args, bad):
    J, x, y = args
    msg = raises(TypeError, abi.errfunc, J, x.astype(bad), y, 1.0)
    assert msg.startswith("errfunc(): argument 'x' (position 2) got numpy.ndarray of %s, "
                          "expected float32 array or float64 array (given the arguments before "
                          "it)." % np.dtype(bad).name)
    # float32 x, float64 y: the overloads disagree at y
    msg = raises(TypeError, abi.errfunc, J, x, y.astype(np.float64), 1.0)
    assert msg.startswith("errfunc(): argument 'y' (position 3) got numpy.ndarray of float64, "
                          "expected float32 array (given the arguments before it).")
    assert msg.endswith(OVERLOADS)


def test_non_contiguous_arrays_are_copies(abi, args):
    """A strided, reversed or Fortran-ordered array is passed as a C-contiguous
    copy (counted in stats["layout_copies"]); a written one is copied back
    (stats["copy_backs"]), into its own elements only."""
    J, x, y = args
    before = abi.errfunc.stats
    xx = np.arange(8, dtype=np.float32)
    assert abi.errfunc(J, xx[::2], y, 5.0) == len(J)
    assert xx.tolist() == [5.0, 1, 2, 3, 4, 5, 6, 7]  # x[0] written through the copy
    rev = np.arange(4, dtype=np.float32)
    abi.errfunc(J, rev[::-1], y, 9.0)
    assert rev.tolist() == [0, 1, 2, 9.0]
    JJ = np.zeros(6, np.int32)
    assert abi.errfunc(JJ[::2], x, y, 1.0) == 3
    f = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    abi.errfunc(J, f, y, 7.0)
    assert f[0, 0] == 7.0 and f.flags.f_contiguous
    after = abi.errfunc.stats
    assert after["layout_copies"] - before["layout_copies"] == 4
    assert after["copy_backs"] - before["copy_backs"] == 3  # JJ is const: not copied back
    # 1-D and column vectors are both C and F contiguous: no copy
    assert abi.count(np.asfortranarray(np.zeros((4, 1)))) == 4


def test_copies_of_views_that_share_memory(abi, args):
    J, x, y = args
    A = np.arange(24.0).reshape(2, 3, 4)
    for view in (A.transpose(2, 0, 1), A[:, ::-1, ::2], A[..., 1]):
        n = view.shape[0]  # sum_const's x_size: shape[0], of the C-ordered copy
        assert abi.sum_const(view) == np.ascontiguousarray(view).ravel()[:n].sum()
    # interleaved views of one buffer, both written: their extents meet, refused
    z = np.zeros(8, np.float32)
    msg = raises(ValueError, abi.errfunc, J, z[::2], z[1::2], 1.0)
    assert msg.startswith("errfunc(): argument 'x' (position 2) is a non-C-contiguous array "
                          "that shares memory with argument 'y' (position 3), and the kernel "
                          "writes both")
    assert not z.any()  # nothing written
    # const views that share memory are copied and passed
    assert abi.sum_const(np.arange(8.0)[::2]) == 12.0


def test_read_only_refused_for_non_const(abi, args):
    J, x, y = args
    x.setflags(write=False)
    msg = raises(ValueError, abi.errfunc, J, x, y, 1.0)
    assert msg == ("errfunc(): argument 'x' is a read-only array, but the kernel writes to it "
                   "(the parameter is not const)")


def test_read_only_fine_for_const(abi, args):
    J, x, y = args
    J.setflags(write=False)
    assert abi.errfunc(J, x, y, 5.0) == 3
    assert x[0] == 5.0
    ro = np.arange(4.0)
    ro.setflags(write=False)
    assert abi.sum_const(ro) == 6.0
    b = np.broadcast_to(np.float64(2.0), (3,))  # read-only, zero strides: a const copy
    assert abi.sum_const(b) == 6.0


def test_unaligned_is_copied_not_refused(abi):
    # alignment alone is never refused (tests/core/test_unaligned.py: every dtype and offset)
    buf = np.zeros(8 * 5 + 1, np.uint8)
    x = np.frombuffer(buf.data, dtype=np.float64, count=5, offset=1)
    x[...] = np.arange(5.0)
    assert not x.flags.aligned
    assert abi.sum_const(x) == 10.0
    J, xs = np.arange(3, dtype=np.int32), np.zeros(3)
    buf = np.zeros(8 * 3 + 1, np.uint8)
    yu = np.frombuffer(buf.data, dtype=np.float64, count=3, offset=1)
    assert abi.errfunc(J, xs, yu, 1.0) == 3


def test_non_native_byte_order_refused(abi, args):
    J, x, y = args
    xs = x.astype(x.dtype.newbyteorder())
    msg = raises(TypeError, abi.errfunc, J, xs, y, 1.0)
    assert msg.startswith("errfunc(): argument 'x' (position 2) got numpy.ndarray of >f4 "
                          "(non-native byte order), expected float32 array or float64 array")
    Js = J.astype(">i4")
    msg = raises(TypeError, abi.errfunc, Js, x, y, 1.0)
    assert "got numpy.ndarray of >i4 (non-native byte order), expected int32 array" in msg


def python_message(*a, **kw):
    with pytest.raises(TypeError) as e:
        errfunc(*a, **kw)
    return str(e.value)


@pytest.mark.parametrize("call", [
    lambda J, x, y: ((), {}),
    lambda J, x, y: ((J,), {}),
    lambda J, x, y: ((J, x), {}),
    lambda J, x, y: ((J, x, y), {}),
    lambda J, x, y: ((), {"a": 1.0}),
    lambda J, x, y: ((J,), {"y": y}),
    lambda J, x, y: ((J, x, y, 1.0, 2.0), {}),
    lambda J, x, y: ((J, x, y, 1.0, 2.0, 3.0), {"a": 1}),
    lambda J, x, y: ((J, x, y, 1.0), {"a": 2.0}),
    lambda J, x, y: ((J, x, y), {"J": J, "a": 1.0}),
], ids=["none", "J", "J,x", "J,x,y", "a=", "J,y=", "5 args", "6 args+kw", "dup a", "dup J"])
def test_arity_and_keywords_match_python(abi, args, call):
    J, x, y = args
    a, kw = call(J, x, y)
    expected = python_message(*a, **kw)
    msg = raises(TypeError, abi.errfunc, *a, **kw)
    assert msg == expected


@pytest.mark.parametrize("call, kw", [
    (lambda J, x, y: ((J, x, y, 1.0), {"b": 1}), "b"),
    (lambda J, x, y: ((J, x, y, 1.0, 2.0, 3.0), {"b": 1}), "b"),  # before the arity, as CPython
    (lambda J, x, y: ((J, x, y), {"a": 1.0, "x_size": 3}), "x_size"),
    (lambda J, x, y: ((J, x, y), {"A": 1.0}), "A"),
    (lambda J, x, y: ((), {"J": J, "x": x, "y": y, "a": 1.0, "alpha": 2.0}), "alpha"),
], ids=["unknown b", "6 args+unknown", "unknown x_size", "unknown A", "unknown alpha"])
def test_unknown_keyword_names_the_keywords_taken(abi, args, call, kw):
    # bindthem's own text, the same on every CPython (3.13's adds "Did you mean ...?")
    J, x, y = args
    a, kws = call(J, x, y)
    msg = raises(TypeError, abi.errfunc, *a, **kws)
    assert msg == (f"errfunc() got an unexpected keyword argument '{kw}'; the keywords it takes "
                   "are 'J', 'x', 'y', 'a' (spelled exactly, case included)")


def neg_int(x):
    """Python twin of abi.neg_int."""


def big_uchar():
    """Python twin of abi.big_uchar."""


def test_arity_with_one_parameter(abi):
    for a, kw in [((), {}), ((1, 2), {}), ((1,), {"x": 1})]:
        with pytest.raises(TypeError) as e:
            neg_int(*a, **kw)
        assert raises(TypeError, abi.neg_int, *a, **kw) == str(e.value)
    assert raises(TypeError, abi.neg_int, y=1) == (
        "neg_int() got an unexpected keyword argument 'y'; the keyword it takes is 'x' "
        "(spelled exactly, case included)")


def test_arity_with_no_parameters(abi):
    with pytest.raises(TypeError) as e:
        big_uchar(1)
    assert raises(TypeError, abi.big_uchar, 1) == str(e.value)
    assert raises(TypeError, abi.big_uchar, x=1) == (
        "big_uchar() got an unexpected keyword argument 'x'; it takes no arguments")


def test_keyword_names_are_compared_by_value(abi, args):
    J, x, y = args
    kw = {"".join(["J"]): J, "x": x, "y": y, "a" + "": 1.0}
    assert abi.errfunc(**kw) == 3


@pytest.mark.parametrize("fname,n,ctype", [("short_sized", 2**15, "short"),
                                           ("uchar_sized", 256, "unsigned char")])
def test_size_parameter_overflow(abi, fname, n, ctype):
    x = np.ones(n, np.int8)
    msg = raises(OverflowError, getattr(abi, fname), x)
    assert msg == ("%s(): argument 'x' has %d elements, more than its 'x_size' parameter (%s) "
                   "can hold" % (fname, n, ctype))
    assert getattr(abi, fname)(x[: n - 1]) == n - 1


def test_scalar_errors_leave_earlier_arrays_untouched(abi, args):
    J, x, y = args
    # the scalar is checked after the arrays were marshalled: nothing may run
    msg = raises(TypeError, abi.errfunc, J, x, y, None)
    assert "argument 'a' (position 4) got NoneType" in msg
    a = np.zeros(1, np.float64)
    b = np.zeros(1, np.int32)
    c = np.zeros(1, np.float32)
    w = np.zeros(1, np.complex64)
    out = np.zeros(5, np.int32)
    msg = raises(OverflowError, abi.many, a, 1, 2.0, b, 3, 4.0, c, 5, 6, 7 + 8j, w, 9, True,
                 10.0, out, 11, 256, 13.0)
    assert msg == "many(): argument 'uc' = 256 does not fit in unsigned char"


def test_errors_do_not_poison_the_dispatch_cache(abi, args):
    J, x, y = args
    for _ in range(3):
        with pytest.raises(TypeError):
            abi.errfunc(J.astype(np.int64), x, y, 1.0)
        assert abi.errfunc(J, x, y, 2.0) == 3
        ro = np.zeros(4, np.float32)
        ro.setflags(write=False)
        with pytest.raises(ValueError):
            abi.errfunc(J, ro, y, 1.0)
    assert re.match(r"<bindthem function abi\.errfunc with 2 overloads>", repr(abi.errfunc))


FILL_H = """/* Fill x with a. */
extern "C" void fill(double x[], const int x_size, double a)
{ for (int i = 0; i < x_size; i++) x[i] = a; }
"""


@pytest.mark.parametrize("ffi", [False, True])
def test_scalar_conversion_runs_before_the_array_checks(tmp_path, cache_dir, ffi):
    """A scalar's __float__ is Python code: it runs before the arrays are
    checked, so what it does to an array (here: make it read-only) is seen,
    and the kernel never writes into it."""
    from bindthem import _core
    h = tmp_path / "fill.h"
    h.write_text(FILL_H)
    lib = bindthem.build(str(h), cache_dir=cache_dir)
    x = np.zeros(4)

    class Sneaky(int):
        def __float__(self):
            x.setflags(write=False)
            return 7.0

    before = _core.force_ffi(ffi)
    try:
        with pytest.raises(ValueError, match="read-only|writeable|writable"):
            lib.fill(x, Sneaky(1))
        np.testing.assert_array_equal(x, np.zeros(4))
        x.setflags(write=True)
        lib.fill(x, 7.0)
        np.testing.assert_array_equal(x, np.full(4, 7.0))
    finally:
        _core.force_ffi(before)
