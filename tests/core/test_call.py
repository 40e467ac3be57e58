"""Calling bound kernels: one test per ABI shape (tests/data/kernels/abi.h)."""

import re

import numpy as np
import pytest

# (function, argument, expected result, Python type of the result)
SCALARS = [
    ("not_bool", True, False, bool),
    ("not_bool", False, True, bool),
    ("next_char", 41, 42, int),
    ("next_char", 126, 127, int),  # both signs of char: tests/core/test_platform_types.py
    ("prev_schar", -128 + 1, -128, int),
    ("next_uchar", 254, 255, int),
    ("next_uchar", 255, 0, int),
    ("neg_short", 32767, -32767, int),
    ("next_ushort", 65535, 0, int),
    ("neg_int", 2**31 - 1, -(2**31 - 1), int),
    ("neg_int", -5, 5, int),
    ("next_uint", 2**32 - 1, 0, int),
    ("next_uint", 2**31, 2**31 + 1, int),
    ("neg_long", 2**63 - 1, -(2**63 - 1), int),
    ("next_ulong", 2**64 - 2, 2**64 - 1, int),
    ("neg_llong", -(2**62), 2**62, int),
    ("next_ullong", 2**63, 2**63 + 1, int),
    ("next_size", 2**40, 2**40 + 1, int),
    ("neg_int64", 2**40, -(2**40), int),
    ("half_float", 3.0, 1.5, float),
    ("half_double", 1e300, 5e299, float),
    ("conj2_cfloat", 1.5 + 2.5j, 3 - 5j, complex),
    ("conj2_cdouble", 1e200 + 0.25j, 2e200 - 0.5j, complex),
]


@pytest.mark.parametrize("fname,arg,expected,rtype", SCALARS,
                         ids=["%s(%r)" % (s[0], s[1]) for s in SCALARS])
def test_scalar_argument_and_return(abi, fname, arg, expected, rtype):
    r = getattr(abi, fname)(arg)
    assert type(r) is rtype
    assert r == expected


def test_float_is_rounded_to_single_precision(abi):
    assert abi.half_float(0.1) == float(np.float32(0.1) / np.float32(2))
    assert abi.conj2_cfloat(0.1 + 0j) == complex(np.complex64(0.1) * 2)


def test_narrow_returns_are_read_at_their_width(abi):
    assert abi.minus_one_short() == -1
    assert abi.big_uchar() == 200


def test_void_return_is_none(abi):
    out = np.zeros(1, np.int32)
    assert abi.store(out, 17) is None
    assert out[0] == 17


def test_integer_arguments_on_the_stack(abi):
    args = [1, -2, 3, -4, 5, -6, 7, 2**40]
    assert abi.weigh8(*args) == sum((i + 1) * a for i, a in enumerate(args))


def test_floating_arguments_on_the_stack(abi):
    args = [0.5 * (i + 1) * (-1) ** i for i in range(10)]
    assert abi.weigh10(*args) == pytest.approx(sum((i + 1) * a for i, a in enumerate(args)))


def test_interleaved_ints_and_floats_on_the_stack(abi):
    args = []
    for i in range(18):
        args.append(i + 1 if i % 2 == 0 else (i + 1) * 0.5)
    expected = sum((i + 1) * a for i, a in enumerate(args))
    assert abi.interleave(*args) == pytest.approx(expected)


def test_many_parameters_arrays_and_scalars(abi):
    a = np.array([1.0, 2.0, 3.5])
    b = np.array([10, 20], np.int32)
    c = np.zeros(4, np.float32)
    w = np.array([0.25 + 0.5j], np.complex64)
    out = np.zeros(5, np.int32)
    r = abi.many(a, 1, 2.0, b, 3, 4.0, c, 5, 6, 7 + 8j, w, 9, True, 10.0, out, 11, 12, 13.0)
    expected = (3.5 + 1 + 2 * 2.0 + 3 * 3 + 4 * 4.0 + 5 * 5 + 6 * 6 + 7 * 7 + 8 * 8 + 9 * 0.25
                + 10 * 0.5 + 11 * 9 + 12 * 1 + 13 * 10.0 + 14 * 11 + 15 * 12 + 16 * 13.0)
    assert r == pytest.approx(expected)
    assert out.tolist() == [3, 2, 4, 1, 5]
    assert c[0] == 11.0
    assert abi.many.parameters == ("a", "i1", "f1", "b", "l1", "d1", "c", "s1", "u1", "z1",
                                   "w", "ch", "flag", "d2", "out", "q", "uc", "f2")


DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
          np.longlong, np.uint64, np.ulonglong, np.float32, np.float64, np.complex64,
          np.complex128]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name + d.__name__)
def test_array_of_every_dtype_written_and_read_back(abi, dtype):
    x = np.zeros(7, dtype)
    assert abi.fill_seq(x) is None
    expected = np.arange(1, 8).astype(dtype)
    np.testing.assert_array_equal(x, expected)
    assert abi.count(x) == 7


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.complex64, np.bool_])
def test_zero_size_array(abi, dtype):
    x = np.zeros(0, dtype)
    assert abi.count(x) == 0
    abi.fill_seq(x)
    assert abi.sum_const(np.zeros(0)) == 0.0


def test_size_of_nd_array_is_its_first_extent(abi):
    # BindThem's generator passes p.shape[0] (tests/core/test_sizes.py has the rest)
    x = np.zeros((3, 5), np.float64)
    assert abi.count(x) == 3
    abi.fill_seq(x)
    expected = np.zeros(15)
    expected[:3] = [1, 2, 3]
    np.testing.assert_array_equal(x.ravel(), expected)
    assert abi.sizet_sized(np.zeros((2, 3, 4))) == 2


def test_small_size_types(abi):
    from bindthem import _core

    # char's dtype: int8 or uint8, the platform's (tests/core/test_platform_types.py)
    char = np.dtype([t["numpy"] for t in _core.scalar_types() if t["c"] == "char"][0])
    assert abi.short_sized(np.zeros(300, char)) == 300
    assert abi.uchar_sized(np.zeros(255, char)) == 255
    assert abi.uchar_sized(np.zeros(0, char)) == 0


@pytest.mark.parametrize("fname", ["sum_long", "sum_int64", "sum_llong"])
@pytest.mark.parametrize("dtype", [np.int64, np.longlong, np.intp])
def test_int64_and_longlong_arrays_both_accepted(abi, fname, dtype):
    x = np.array([2**40, -3, 5], dtype)
    assert getattr(abi, fname)(x) == 2**40 + 2


@pytest.mark.parametrize("fname,value,ctype", [
    ("neg_int", 2**31, "int"), ("neg_int", -(2**31) - 1, "int"),
    ("next_uint", -1, "unsigned int"), ("next_uint", 2**32, "unsigned int"),
    ("neg_long", 2**63, "long"), ("neg_long", 2**64, "long"),
    ("next_ulong", -1, "unsigned long"), ("next_ulong", 2**64, "unsigned long"),
    ("next_char", 256, "char"), ("next_uchar", 256, "unsigned char"),
    ("next_uchar", -1, "unsigned char"), ("neg_short", -32769, "short"),
    ("next_ushort", 65536, "unsigned short"), ("neg_llong", 2**63, "long long"),
    ("next_size", -1, "unsigned long"),
])
def test_int_out_of_range_is_overflow_error(abi, fname, value, ctype):
    with pytest.raises(OverflowError) as e:
        getattr(abi, fname)(value)
    msg = str(e.value)
    want = "%s(): argument 'x' = %d does not fit in %s" % (fname, value, ctype)
    if ctype == "char":  # then the platform's range (tests/core/test_platform_types.py)
        want += r" \(-?\d+\.\.\d+: char is (un)?signed on this platform\)"
    assert re.fullmatch(want.replace("(): ", r"\(\): "), msg), msg


def test_float_out_of_range_for_float_is_overflow_error(abi):
    with pytest.raises(OverflowError, match=r"half_float\(\): argument 'x' = 1e\+300 does not "
                                            r"fit in float"):
        abi.half_float(1e300)
    assert abi.half_float(float("inf")) == float("inf")
    with pytest.raises(OverflowError, match="does not fit in std::complex<float>"):
        abi.conj2_cfloat(1e300 + 0j)


@pytest.mark.parametrize("fname", ["neg_int", "next_uint", "neg_long", "next_char", "neg_short"])
def test_float_to_int_refused(abi, fname):
    with pytest.raises(TypeError, match=r"%s\(\): argument 'x' \(position 1\) got float, "
                                        r"expected int \(" % fname):
        getattr(abi, fname)(1.0)
    with pytest.raises(TypeError, match="got complex"):
        getattr(abi, fname)(1j)
    with pytest.raises(TypeError, match="got numpy.float64"):
        getattr(abi, fname)(np.float64(1.0))


def test_int_to_floating_and_float_to_complex_accepted(abi):
    assert abi.half_double(3) == 1.5
    assert type(abi.half_double(3)) is float
    assert abi.half_float(5) == 2.5
    assert abi.half_double(2**80) == 2.0**79
    assert abi.conj2_cdouble(1.5) == 3 + 0j
    assert abi.conj2_cdouble(2) == 4 + 0j
    assert abi.conj2_cfloat(0.5) == 1 + 0j
    with pytest.raises(TypeError, match="got complex"):
        abi.half_double(1j)


def test_bool_handling(abi):
    assert abi.bool_to_int(True) == 1
    assert abi.bool_to_int(False) == 0
    assert abi.bool_to_int(np.bool_(True)) == 1
    # bool is an int for integer parameters, never a float
    assert abi.neg_int(True) == -1
    assert abi.next_uint(False) == 1
    # an int (Python or NumPy) is a truth value in the conversion pass, as
    # pybind11 takes it (pyamg passes 0/1 for bool parameters); a float is not
    assert abi.bool_to_int(0) == 0
    assert abi.bool_to_int(7) == 1
    assert abi.bool_to_int(np.int32(1)) == 1
    with pytest.raises(TypeError, match=r"argument 'b' \(position 1\) got float, expected "
                                        r"bool \(bool\)"):
        abi.bool_to_int(1.0)


@pytest.mark.parametrize("scalar,fname,expected", [
    (np.int8(-3), "neg_int", 3), (np.int16(7), "neg_int", -7), (np.int32(-9), "neg_int", 9),
    (np.int64(5), "neg_long", -5), (np.longlong(5), "neg_llong", -5),
    (np.uint8(200), "next_uchar", 201), (np.uint32(2**32 - 1), "next_uint", 0),
    (np.uint64(2**64 - 2), "next_ulong", 2**64 - 1), (np.int32(4), "half_double", 2.0),
    (np.float32(3.0), "half_float", 1.5), (np.float64(3.0), "half_double", 1.5),
    (np.float32(3.0), "half_double", 1.5), (np.complex64(1 + 1j), "conj2_cfloat", 2 - 2j),
    (np.complex128(1 + 1j), "conj2_cdouble", 2 - 2j), (np.float64(0.5), "conj2_cdouble", 1),
])
def test_numpy_scalars(abi, scalar, fname, expected):
    r = getattr(abi, fname)(scalar)
    assert r == expected


def test_numpy_bool_for_integer_parameters(abi):
    # numpy.bool has no __index__; it converts as Python's bool does
    assert abi.neg_int(np.True_) == -1
    assert abi.next_uint(np.False_) == 1
    assert abi.next_uchar(np.True_) == 2
    assert abi.neg_long(np.bool_(True)) == -1


BIG = 2 ** 2000


@pytest.mark.parametrize("fname, value, ctype", [
    ("half_double", BIG, "double"), ("half_float", BIG, "float"),
    ("conj2_cdouble", BIG, "std::complex<double>"), ("conj2_cfloat", BIG, "std::complex<float>"),
    ("neg_int", BIG, "int"), ("neg_long", -BIG, "long"), ("next_ulong", BIG, "unsigned long"),
])
def test_huge_int_message_names_argument_and_is_short(abi, fname, value, ctype):
    with pytest.raises(OverflowError) as e:
        getattr(abi, fname)(value)
    text = str(value)
    assert str(e.value) == "%s(): argument 'x' = %s... (%d digits) does not fit in %s" % (
        fname, text[:30], len(text.lstrip("-")), ctype)


class StubbornInt(int):
    def __float__(self):
        raise ValueError("no float for you")

    def __complex__(self):
        raise ValueError("no complex either")


def test_conversion_error_names_function_and_argument(abi):
    with pytest.raises(ValueError, match=r"^half_double\(\): argument 'x' = 3 cannot be converted "
                                         r"to double: no float for you$"):
        abi.half_double(StubbornInt(3))
    with pytest.raises(ValueError, match=r"^conj2_cdouble\(\): argument 'x' = 3 cannot be "
                                         r"converted to std::complex<double>: no complex either$"):
        abi.conj2_cdouble(StubbornInt(3))


def test_numpy_scalar_range_checked(abi):
    with pytest.raises(OverflowError, match="does not fit in int"):
        abi.neg_int(np.int64(2**40))
    with pytest.raises(OverflowError, match="does not fit in unsigned int"):
        abi.next_uint(np.int32(-1))


def test_kernel_writes_are_visible_and_scalars_are_by_value(abi):
    x = np.array([1.0, 2.0, 3.0])
    abi.scale(x, 2.5)
    np.testing.assert_array_equal(x, [2.5, 5.0, 7.5])
    view = x[1:]
    abi.scale(view, 2)
    np.testing.assert_array_equal(x, [2.5, 10.0, 15.0])


def test_c_library(ckernels):
    x = np.array([1.0, 2.0, 3.0])
    assert ckernels.c_dot(x, x) == 14.0
    assert ckernels.c_add(2, -5) == -3
    f = np.zeros(4, np.float32)
    assert ckernels.c_fill(f, 1.25) is None
    np.testing.assert_array_equal(f, 1.25)
    assert ckernels.c_odd(3) is True
    assert ckernels.c_odd(-4) is False


def test_namespaces_and_extern_c(names):
    assert names.twice(21) == 42
    assert names.twice(1.25) == 2.5
    assert names.twice(1 + 2j) == 2 + 4j
    x = np.zeros(3, np.float32)
    names.deep_fill(x, 1.5)
    np.testing.assert_array_equal(x, 1.5)
    y = np.zeros(2, np.int64)
    names.deep_fill(y, 2**40)
    np.testing.assert_array_equal(y, 2**40)
    assert names.nested_plain(1) == 101
    assert names.outer_half(3) == 1.5
    assert names.c_block(2) == 6
    assert names.c_block_sum(np.arange(5.0)) == 10.0
    assert names.c_prefix(2) == 10
    assert names.c_in_ns(2) == 14
    assert names.twice.symbols[0] == "_ZN5outer5inner5twiceIiEET_S2_"
    assert names.c_block.symbols == ("c_block",)
