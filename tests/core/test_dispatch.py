"""Overload selection (tests/data/kernels/dispatch.h, dispatch.yml)."""

import numpy as np
import pytest

INT, LONG, DOUBLE, FLOAT = 40, 80, 81, 41  # 10 * sizeof + floating


def test_overloads_are_in_yaml_order(dispatch):
    assert dispatch.tag.overloads == ("int tag<int>(const int n)",
                                      "int tag<long>(const long n)",
                                      "int tag<double>(const double n)")
    assert dispatch.which.overloads[0].startswith("int which<double>")
    assert dispatch.which_rev.overloads[0].startswith("int which_rev<float>")


def test_scalar_only_template(dispatch):
    assert dispatch.tag(1) == INT
    assert dispatch.tag(1.5) == DOUBLE
    assert dispatch.tag(-(2**31)) == INT
    # an int is not range-checked into the next overload: int is exact for a Python int
    with pytest.raises(OverflowError, match="does not fit in int"):
        dispatch.tag(2**31)


def test_numpy_scalars_pick_by_dtype(dispatch):
    assert dispatch.tag(np.int32(1)) == INT
    assert dispatch.tag(np.int64(1)) == LONG
    assert dispatch.tag(np.longlong(1)) == LONG
    assert dispatch.tag(np.float64(1)) == DOUBLE
    # no exact overload: the conversion pass takes the first that converts
    assert dispatch.tag(np.int16(1)) == INT
    assert dispatch.tag(np.float32(1)) == DOUBLE


def test_first_overload_in_yaml_order_wins(dispatch):
    assert dispatch.which(1.5) == 8
    assert dispatch.which_rev(1.5) == 4
    assert dispatch.which(np.float32(1.5)) == 4
    assert dispatch.which_rev(np.float64(1.5)) == 8


def test_exact_pass_before_conversion_pass(dispatch):
    # prefer lists double first; an int still picks prefer<int> ...
    assert dispatch.prefer(1) == INT
    # ... and a float, which int cannot take, picks double
    assert dispatch.prefer(1.0) == DOUBLE
    # an int64 numpy scalar is exact for neither: converted to the first, double
    assert dispatch.prefer(np.int64(3)) == DOUBLE


@pytest.mark.parametrize("dtype,F,T", [(np.float32, 8, 4.0), (np.float64, 4, 8.0),
                                       (np.complex64, 4, 8.0)])
def test_template_parameter_from_the_tuple(dispatch, dtype, F, T):
    J = np.zeros(2, np.int32)
    x = np.zeros(3, dtype)
    assert dispatch.ftag(J, x) == F
    assert x[0] == T


def test_remaps_merge_functions_in_yaml_order(dispatch):
    assert "scale_real" not in dispatch.__all__
    assert "scale_complex" not in dispatch.__all__
    assert len(dispatch.scale.overloads) == 4
    assert [o.split("(")[0] for o in dispatch.scale.overloads] == [
        "int scale_real<float>", "int scale_real<double>",
        "int scale_complex<std::complex<float>>", "int scale_complex<std::complex<double>>"]
    x = np.array([1.0, 2.0])
    assert dispatch.scale(x, 3.0) == 1
    np.testing.assert_array_equal(x, [3.0, 6.0])
    z = np.array([1 + 1j], np.complex64)
    assert dispatch.scale(z, 2j) == 2
    assert z[0] == -2 + 2j
    z2 = np.array([1j])
    assert dispatch.scale(z2, 2) == 2
    assert z2[0] == 2j


def test_fourth_of_four_overloads_repeatedly(dispatch):
    for _ in range(50):
        x = np.zeros(1, np.float64)
        assert dispatch.pick4(x) == DOUBLE
        assert x[0] == DOUBLE


def test_mixed_calls_alternate(dispatch):
    arrays = [np.zeros(2, np.int32), np.zeros(2, np.int64), np.zeros(2, np.float32),
              np.zeros(2, np.float64)]
    tags = [INT, LONG, FLOAT, DOUBLE]
    for rep in range(30):
        order = range(4) if rep % 2 else reversed(range(4))
        for i in order:
            arrays[i][0] = 0
            assert dispatch.pick4(arrays[i]) == tags[i]
            assert arrays[i][0] == tags[i]
        # interleave a scalar function between, sharing nothing
        assert dispatch.tag(1 if rep % 3 else 1.0) == (INT if rep % 3 else DOUBLE)


def test_two_dtypes_in_turn_are_both_remembered(dispatch):
    """The memo keeps the last call and the one before it: calls alternating
    between two overloads (float64, float32, float64, ...) are answered by it
    (no select after the first two; _dispatch_info["selects"] counts the calls
    it did not answer), each with its own overload; with a third dtype in
    the rotation some calls are selected again, and every answer stays
    right."""
    a, b, c = (np.zeros(2, t) for t in (np.float64, np.float32, np.int32))
    f = dispatch.pick4
    assert (f(a), f(b)) == (DOUBLE, FLOAT)
    before = f._dispatch_info["selects"]
    for _ in range(20):
        assert (f(a), f(b)) == (DOUBLE, FLOAT)
        assert a[0] == DOUBLE and b[0] == FLOAT
    assert f._dispatch_info["selects"] == before
    for _ in range(5):
        assert (f(a), f(b), f(c)) == (DOUBLE, FLOAT, INT)
        assert a[0] == DOUBLE and b[0] == FLOAT and c[0] == INT
    assert f._dispatch_info["selects"] > before  # three in turn: more than the memo holds


def test_many_distinct_keys_then_the_first_again(dispatch):
    # fill the cache with failing and succeeding keys; the answers must not change
    bad = [np.zeros(1, t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.uint32,
                                    np.uint64, np.complex64, np.complex128, np.bool_)]
    for _ in range(3):
        for b in bad:
            with pytest.raises(TypeError):
                dispatch.pick4(b)
        assert dispatch.pick4(np.zeros(1, np.int32)) == INT
        assert dispatch.pick4(np.zeros(1, np.float32)) == FLOAT


def test_longlong_array_uses_long_overload(dispatch):
    x = np.zeros(1, np.longlong)
    assert dispatch.pick4(x) == LONG
    assert x[0] == LONG


def test_same_dtypes_as_last_call_keep_every_check(dispatch):
    # the check in front of the cache (same descriptor, same type as the last
    # call) must not skip what the arrays and scalars are checked for
    x = np.zeros(4, np.float64)
    assert dispatch.pick4(x) == DOUBLE
    assert dispatch.pick4(x) == DOUBLE
    strided = np.zeros(8, np.float64)[::2]  # a copy: counted, whichever way it came
    copies = dispatch.pick4.stats["layout_copies"]
    assert dispatch.pick4(strided) == DOUBLE
    assert dispatch.pick4.stats["layout_copies"] == copies + 1
    ro = np.zeros(4, np.float64)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only array"):
        dispatch.pick4(ro)
    # a non-native float64 is another dtype to the dispatcher, warm or not
    with pytest.raises(TypeError):
        dispatch.pick4(np.zeros(4, np.dtype(np.float64).newbyteorder()))
    assert dispatch.pick4(x) == DOUBLE


def test_ndarray_subclass_and_numpy_scalars_after_a_hit(dispatch):
    class Sub(np.ndarray):
        pass

    x = np.zeros(2, np.float32)
    assert dispatch.pick4(x) == FLOAT
    s = np.zeros(2, np.float32).view(Sub)
    assert dispatch.pick4(s) == FLOAT
    assert s[0] == FLOAT
    assert dispatch.pick4(np.zeros(2, np.int64).view(Sub)) == LONG
    assert dispatch.tag(np.int32(1)) == INT
    assert dispatch.tag(np.int64(1)) == LONG
    assert dispatch.tag(np.int32(1)) == INT


def test_quick_scalar_conversions_keep_ranges_and_messages(dispatch):
    for _ in range(3):
        assert dispatch.tag(-(2**31)) == INT
        assert dispatch.tag(2**31 - 1) == INT
        with pytest.raises(OverflowError, match=r"argument 'n' = 2147483648 does not fit in int"):
            dispatch.tag(2**31)
        with pytest.raises(OverflowError, match="does not fit in int"):
            dispatch.tag(2**100)
    x = np.ones(3, np.float32)
    assert dispatch.scale(x, 2.0) == 1
    np.testing.assert_array_equal(x, np.full(3, 2, np.float32))
    with pytest.raises(OverflowError, match=r"argument 'a' = 1e\+300 does not fit in float"):
        dispatch.scale(x, 1e300)
    # inf and nan are floats (the full conversion takes them)
    dispatch.scale(x, float("inf"))
    assert np.isinf(x).all()
