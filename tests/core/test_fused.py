"""The fused entry (csrc/py/bt_call.h, issue 30): a call whose arguments have
the last call's keys goes to its overload in one pass over them. Whatever
it takes must come out as the general path does it (bindthem.options() and
libffi force that path), and whatever it does not take (another dtype, a
misfit array, an extent too large, a scalar out of the quick range) must
reach the general path's error or conversion. Also: the guard's call
sites (one per direct-call variant), and the no-match error kept per
Function."""

import contextlib

import numpy as np
import pytest

import bindthem
from bindthem import _core

HEADER = r"""
#pragma once
#include <stdexcept>

/// x's first, the extent and the scalars folded into one number.
template <class T, class S>
double fold(const T x[], const S x_size, const double w, const int n, const bool flag)
{
    return (double)x[0] + 1000.0 * x_size + w * n + (flag ? 0.5 : 0.0);
}

/// One array, extents by axis.
template <class T>
long rows_cols(const T x[], const int x_size0, const int x_size1)
{
    return 1000L * x_size0 + x_size1;
}

/// Defaults, written into out.
template <class T>
void put(T out[], const int out_size, const double w = 0.25, const int n = 3, const float f = 1.5f)
{
    out[0] = (T)w; out[1] = (T)n; out[2] = (T)f;
}

/// Returns of each class.
template <class T>
float ret_float(const T x[], const int x_size) { return (float)x[0] * 0.5f; }
template <class T>
bool ret_bool(const T x[], const int x_size) { return x[0] > 0; }
template <class T>
short ret_short(const T x[], const int x_size) { return (short)x[0]; }

/// Throws when x[0] is negative: general registers only, then with doubles
/// and stack slots (other call sites of the guard).
template <class T>
int throw0(const T x[], const int x_size)
{
    if (x[0] < 0) throw std::invalid_argument("negative");
    return 7;
}
template <class T>
double throw_fp(const T x[], const int x_size, const double a, const double b)
{
    if (x[0] < 0) throw std::out_of_range("negative fp");
    return a + b;
}
template <class T>
long throw_stack(const T a[], const int a_size, const T b[], const int b_size,
                 const T c[], const int c_size, const T d[], const int d_size,
                 const T e[], const int e_size, const double s)
{
    if (a[0] < 0) throw std::overflow_error("negative stack");
    return a_size + b_size + c_size + d_size + e_size + (long)s;
}

/// Extents by axis into sizes of one byte: 255 fits, 256 does not.
template <class T>
long rows_cols8(const T x[], const unsigned char x_size0, const unsigned char x_size1)
{
    return 1000L * x_size0 + x_size1;
}

/// y += a x, each of n elements; throws when a is negative, after writing y.
template <class T>
void axpy(const T x[], const int x_size, T y[], const int y_size, const double a)
{
    for (int i = 0; i < x_size && i < y_size; i++) y[i] += (T)a * x[i];
    if (a < 0) throw std::domain_error("negative a");
}

/// A complex scalar (two words for a complex double, one for a complex float).
template <class T>
void zaxpy(T z[], const int z_size, const T a, const double w)
{
    for (int i = 0; i < z_size; i++) z[i] = a * z[i] + (T)w;
}
"""

YAML = """\
- functions: [fold]
  types: [[double, int], [float, "unsigned char"]]
- functions: [rows_cols, rows_cols8, put, ret_float, ret_bool, ret_short, throw0, throw_fp,
              throw_stack, axpy]
  types: [[double], [float]]
- functions: [zaxpy]
  types: [[std::complex<double>], [std::complex<float>]]
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("fused")
    (d / "fused.h").write_text(HEADER)
    (d / "fused.yml").write_text(YAML)
    return bindthem.build(str(d / "fused.h"), str(d / "fused.yml"), cache_dir=str(d / "cache"))


def both_paths(f, *args, **kwargs):
    """f's result twice through the fused entry (the first call sets the
    memo), then through the general path: bindthem.options() and forced
    libffi each send calls there."""
    got = [f(*args, **kwargs), f(*args, **kwargs)]
    with bindthem.options(gil="keep"):
        got.append(f(*args, **kwargs))
    before = _core.force_ffi(True)
    try:
        got.append(f(*args, **kwargs))
    finally:
        _core.force_ffi(before)
    return got


def test_the_overloads_take_the_fused_entry(lib):
    assert lib.fold._call_paths == ("direct", "direct")


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_fused_equals_general(lib, dt):
    x = np.arange(1, 6, dtype=dt)
    a, b, c, d = both_paths(lib.fold, x, 0.5, 4, True)
    assert a == b == c == d == 1.0 + 5000 + 2.0 + 0.5


def test_keywords_and_defaults_fused_equal_general(lib):
    out = np.zeros(3)
    for call in (lambda: lib.put(out), lambda: lib.put(out, 2.0), lambda: lib.put(out, n=9),
                 lambda: lib.put(out=out, f=0.75, w=-1.0, n=2),
                 lambda: lib.put(out, 2.0, 5, 0.125)):
        seen = []
        for _ in range(2):
            out[:] = 0
            call()
            seen.append(out.copy())
        with bindthem.options(gil="keep"):
            out[:] = 0
            call()
            seen.append(out.copy())
        assert all((s == seen[0]).all() for s in seen), seen
    out[:] = 0
    lib.put(out)
    np.testing.assert_array_equal(out, [0.25, 3, 1.5])


def test_an_extent_over_the_size_type_reaches_the_general_error(lib):
    """fold<float, unsigned char>: 255 elements fit its x_size, 256 do not;
    the second call has the first's keys (the memo), so the fused entry sees
    it first and must hand it on."""
    assert lib.fold(np.zeros(255, np.float32), 0.0, 0, False) == 255000
    texts = []
    for general in (False, True):
        with bindthem.options(gil="keep") if general else contextlib.nullcontext():
            with pytest.raises(OverflowError) as e:
                lib.fold(np.zeros(256, np.float32), 0.0, 0, False)
        texts.append(str(e.value))
    assert texts[0] == texts[1]
    assert "'x_size' parameter (unsigned char)" in texts[0]


def test_scalars_out_of_the_quick_range_reach_the_general_conversion(lib):
    x = np.ones(2)
    lib.fold(x, 1.0, 1, True)
    with pytest.raises(OverflowError):
        lib.fold(x, 1.0, 2**31, True)
    with pytest.raises(OverflowError):
        lib.fold(x, 1.0, 2**70, True)
    assert lib.fold(x, 1.0, np.int64(3), True) == lib.fold(x, 1.0, 3, True)
    # an int for a bool converts in pass 2: other keys than the memo's
    assert both_paths(lib.fold, x, 1.0, 3, 2) == [1.0 + 2000 + 3.0 + 0.5] * 4
    assert lib.fold(x, np.float32(0.5), 2, False) == 1.0 + 2000 + 1.0


def test_misfit_arrays_reach_the_general_path(lib):
    x = np.arange(10.0)
    lib.fold(x, 1.0, 1, False)
    # strided: passed as a C-contiguous copy by the general path, the same result
    assert lib.fold(x[::2], 1.0, 1, False) == lib.fold(x[::2].copy(), 1.0, 1, False)
    # unaligned: passed as an aligned copy by the general path, the same result
    buf = np.zeros(8 * 4 + 1, np.uint8)
    u = buf[1:].view(np.float64)
    u[:] = [3.0, 1.0, 2.0, 5.0]
    assert not u.flags.aligned
    assert lib.fold(u, 1.0, 1, False) == 3.0 + 4000 + 1.0
    # a subclass has no memo key: the general path
    class Sub(np.ndarray):
        pass
    assert lib.fold(x.view(Sub), 1.0, 1, False) == 10000 + 1.0


def test_rank_checks_on_the_fused_entry(lib):
    m = np.zeros((4, 7))
    assert both_paths(lib.rows_cols, m) == [4007] * 4
    with pytest.raises(ValueError, match="x_size1"):
        lib.rows_cols(np.zeros(4))  # 1-D: fewer dimensions than its sizes name
    # 2-D into a one-size parameter: shape[0] (not the fused 1-D way)
    assert lib.fold(np.full((3, 2), 2.0), 0.0, 0, False) == 2.0 + 3000


@pytest.mark.parametrize("name,want", [("ret_float", 1.5), ("ret_bool", True),
                                       ("ret_short", 3)])
def test_returns_of_each_class(lib, name, want):
    got = both_paths(getattr(lib, name), np.array([3.0]))
    assert got == [want] * 4 and all(type(g) is type(want) for g in got)


@pytest.mark.parametrize("call,exc,text", [
    (lambda lib, x: lib.throw0(x), ValueError, "negative"),
    (lambda lib, x: lib.throw_fp(x, 1.0, 2.0), IndexError, "negative fp"),
    (lambda lib, x: lib.throw_stack(x, x, x, x, x, 0.0), OverflowError, "negative stack"),
])
def test_exceptions_through_each_call_site(lib, call, exc, text):
    ok = np.ones(2)
    call(lib, ok)
    call(lib, ok)  # the memo set: the next one is fused
    for force in (False, True):
        before = _core.force_ffi(force)
        try:
            with pytest.raises(exc, match="the kernel threw a C\\+\\+ exception: " + text):
                call(lib, -ok)
        finally:
            _core.force_ffi(before)
    assert call(lib, ok) is not None


def test_no_match_kept_per_arguments(lib):
    """The kept message is the one of the same keys: alternating failures
    each get their own text, and a call that matches is not disturbed."""
    texts = {}
    for _ in range(3):
        for dt in (np.int8, np.int16, np.complex128):
            with pytest.raises(TypeError) as e:
                lib.rows_cols(np.zeros((2, 2), dt))
            texts.setdefault(dt, set()).add(str(e.value))
        assert lib.rows_cols(np.zeros((2, 2))) == 2002
    for dt, t in texts.items():
        (msg,) = t
        assert "got numpy.ndarray of %s," % np.dtype(dt) in msg


def test_2d_arrays_and_complex_scalars_take_the_fused_entry(lib):
    """Several size parameters (a 2-D array's) and complex double and float
    scalars are fused."""
    direct = _core.DIRECT_ABI is not None
    assert lib.rows_cols._fused == (direct, direct)
    assert lib.zaxpy._fused == (direct, direct)


@pytest.mark.parametrize("shape", [(4, 7), (1, 1), (3, 5, 2), (0, 3)])
def test_2d_fused_equals_general(lib, shape):
    assert both_paths(lib.rows_cols, np.zeros(shape)) == [1000 * shape[0] + shape[1]] * 4


@pytest.mark.parametrize("shape,bad", [((255, 256), "shape[1] = 256"),
                                       ((256, 3), "shape[0] = 256")])
def test_2d_extent_over_the_size_type_reaches_the_general_error(lib, shape, bad):
    """rows_cols8: each extent must fit its byte; the second call has the
    memo's keys, so the fused entry sees the misfit first and hands it on."""
    assert lib.rows_cols8(np.zeros((255, 255))) == 255255
    texts = []
    for general in (False, True):
        with bindthem.options(gil="keep") if general else contextlib.nullcontext():
            with pytest.raises(OverflowError) as e:
                lib.rows_cols8(np.zeros(shape))
        texts.append(str(e.value))
    assert texts[0] == texts[1] and bad in texts[0], texts


def test_2d_rank_error_same_on_both_paths(lib):
    lib.rows_cols(np.zeros((2, 2)))
    texts = []
    for general in (False, True):
        with bindthem.options(gil="keep") if general else contextlib.nullcontext():
            for x in (np.zeros(3), np.zeros(())):
                with pytest.raises(ValueError) as e:
                    lib.rows_cols(x)
                texts.append(str(e.value))
    assert texts[:2] == texts[2:]
    assert texts[1] == ("rows_cols(): argument 'x' is a 0-d array, but the kernel's size "
                        "parameter 'x_size1' takes its shape[1]: pass an array of at least 2 "
                        "dimensions")


@pytest.mark.parametrize("dt", [np.complex128, np.complex64])
@pytest.mark.parametrize("a", [1 + 2j, -0.5j, 2.5, complex(3, -4), np.complex128(1 - 1j), 7,
                               np.float64(0.25), complex(float("inf"), 1)])
def test_complex_scalars_fused_equal_general(lib, dt, a):
    z = np.array([1 + 1j, 2 - 3j], dt)

    def call(z=z):
        out = z.copy()
        lib.zaxpy(out, a, 0.5)
        return out.tobytes()

    got = both_paths(call)
    assert len(set(got)) == 1
    want = (np.complex128(a) * z.astype(np.complex128) + 0.5).astype(dt)
    np.testing.assert_array_equal(np.frombuffer(got[0], dt), want)


def test_complex_float_out_of_range_reaches_the_general_error(lib):
    z = np.ones(2, np.complex64)
    lib.zaxpy(z, 1j, 0.0)
    texts = []
    for general in (False, True):
        for a in (complex(1e39, 0), complex(0, -1e39)):
            with bindthem.options(gil="keep") if general else contextlib.nullcontext():
                with pytest.raises(OverflowError) as e:
                    lib.zaxpy(z, a, 0.0)
            texts.append(str(e.value))
    assert texts[:2] == texts[2:] and "does not fit" in texts[0], texts
    np.testing.assert_array_equal(z, np.full(2, 1j, np.complex64))


def general(f, call, n=5):
    """How many of n calls of call() the general path made."""
    before = f._general_calls
    for _ in range(n):
        call()
    return f._general_calls - before


def test_the_fused_entry_takes_what_it_should(lib):
    """Function._general_calls counts the calls the general path made: after
    the first call of each argument types (the memo's miss), the fused entry
    takes every call of those types (1-D and 2-D arrays, float, int, bool and
    complex scalars, defaults left out, keywords, two dtypes in turn), and
    the general path what it must (a strided view too large for the call's
    own bytes, an options() block, an int for a bool, a scalar out of the
    quick range)."""
    if _core.DIRECT_ABI is None:
        pytest.skip("no direct call on this platform: no fused entry")
    x, x32, m = np.arange(1.0, 6.0), np.arange(1, 6, dtype=np.float32), np.zeros((3, 4))
    z = np.ones(2, np.complex128)
    cases = [
        (lib.fold, lambda: lib.fold(x, 0.5, 4, True)),
        (lib.rows_cols, lambda: lib.rows_cols(m)),
        (lib.zaxpy, lambda: lib.zaxpy(z.copy(), 1 + 2j, 0.5)),
        (lib.put, lambda: lib.put(np.zeros(3))),
        (lib.put, lambda: lib.put(np.zeros(3), n=9)),
        (lib.fold, lambda: lib.fold(x, w=0.5, n=4, flag=True)),
    ]
    for f, call in cases:
        assert general(f, call) <= 1 and general(f, call) == 0, f
    # two overloads in turn: the memo keeps both
    general(lib.fold, lambda: (lib.fold(x, 0.5, 4, True), lib.fold(x32, 0.5, 4, True)))
    assert general(lib.fold, lambda: (lib.fold(x, 0.5, 4, True),
                                      lib.fold(x32, 0.5, 4, True))) == 0
    # a strided view: its aligned copy in the call's own bytes (test_..._small_unaligned_arrays)
    assert general(lib.fold, lambda: lib.fold(np.arange(10.0)[::2], 0.5, 4, True)) == 0
    # what the general path must take, every time: a copy larger than the call's own bytes
    assert general(lib.fold, lambda: lib.fold(np.arange(1200.0)[::2], 0.5, 4, True)) == 5
    assert general(lib.fold, lambda: lib.fold(x, 0.5, 4, 2)) == 5  # an int for a bool
    assert general(lib.fold, lambda: pytest.raises(OverflowError, lib.fold, x, 0.5, 2**40,
                                                   True)) == 5
    with bindthem.options(gil="keep"):
        assert general(lib.fold, lambda: lib.fold(x, 0.5, 4, True)) == 5


def unaligned(values):
    """values in a writable C-contiguous array at an odd address (as a network
    buffer hands them over)."""
    values = np.asarray(values)
    a = np.frombuffer(bytearray(values.nbytes + 1), values.dtype, len(values), 1)
    a[...] = values
    assert not a.flags.aligned and a.flags.c_contiguous and a.flags.writeable
    return a


@pytest.mark.parametrize("n", [1, 2, 64, 256, 257])
def test_the_fused_entry_takes_small_unaligned_arrays(lib, n):
    """Unaligned arrays whose copies fit in the call's own 4 KiB (bt_call.h's
    BT_TEMP_SMALL) take the fused entry: passed as aligned copies, the
    written one copied back, each counted in stats as the general path
    counts them; results bit for bit the aligned call's."""
    if _core.DIRECT_ABI is None:
        pytest.skip("no direct call on this platform: no fused entry")
    f = lib.axpy
    x0, y0 = np.arange(1.0, n + 1), np.linspace(-1.0, 1.0, n)
    x, y = unaligned(x0), unaligned(y0)
    want = y0.copy()
    f(x0, want, 0.5)  # the memo's keys; aligned
    before = dict(f.stats)
    assert general(f, lambda: f(x, y, 0.5), n=3) == (3 if 16 * n > 4096 else 0)
    for _ in range(2):
        f(x0, want, 0.5)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(x, x0)  # const: not written
    after = f.stats
    assert after["aligned_copies"] - before["aligned_copies"] == 6  # x and y, 3 calls
    assert after["copy_backs"] - before["copy_backs"] == 3  # y only


def test_the_fused_entry_takes_small_strided_views(lib):
    """A strided view (a column, every other element, a reversed one) whose
    copy fits the call's own bytes takes the fused entry: gathered into an
    aligned copy, the written one scattered back, counted as layout copies."""
    if _core.DIRECT_ABI is None:
        pytest.skip("no direct call on this platform: no fused entry")
    f = lib.axpy
    m, y = np.arange(12.0).reshape(4, 3), np.zeros(8)
    f(np.ones(4), np.zeros(4), 1.0)
    before = dict(f.stats)
    assert general(f, lambda: f(m[:, 1], y[::2], 1.0), n=2) == 0
    np.testing.assert_array_equal(y, [2.0, 0, 8.0, 0, 14.0, 0, 20.0, 0])
    assert general(f, lambda: f(m[::-1, 0], y[1::2], 2.0), n=1) == 0
    np.testing.assert_array_equal(y[1::2], [18.0, 12.0, 6.0, 0.0])
    after = f.stats
    assert after["layout_copies"] - before["layout_copies"] == 6
    assert after["copy_backs"] - before["copy_backs"] == 3


def test_unaligned_arrays_on_the_fused_entry_as_on_the_general_path(lib):
    """What the general path does with an unaligned array, the fused entry does
    too: a copy-back when the kernel throws, the ValueError when a copy would
    change what the kernel sees (shared memory, one written), one aligned
    and one unaligned array, float32, and two overloads in turn."""
    if _core.DIRECT_ABI is None:
        pytest.skip("no direct call on this platform: no fused entry")
    f = lib.axpy
    x, y = unaligned(np.ones(4)), unaligned(np.zeros(4))
    f(np.ones(4), np.zeros(4), 1.0)
    with pytest.raises(ValueError, match="negative a"):
        f(x, y, -2.0)
    np.testing.assert_array_equal(y, [-2.0] * 4)  # written before the throw: copied back
    buf = unaligned(np.arange(8.0))
    assert general(f, lambda: pytest.raises(ValueError, f, buf[:4], buf[2:6], 1.0), n=2) == 0
    with pytest.raises(ValueError, match="shares memory with argument 'y'"):
        f(buf[:4], buf[2:6], 1.0)
    np.testing.assert_array_equal(buf, np.arange(8.0))  # refused before the kernel ran
    y = unaligned(np.zeros(4))
    assert general(f, lambda: f(np.ones(4), y, 1.0), n=2) == 0
    np.testing.assert_array_equal(y, [2.0] * 4)
    y32 = unaligned(np.zeros(3, np.float32))
    f(np.ones(3, np.float32), np.zeros(3, np.float32), 1.0)
    assert general(f, lambda: f(unaligned(np.ones(3, np.float32)), y32, 0.5), n=2) == 0
    np.testing.assert_array_equal(y32, np.ones(3, np.float32))
    # the two overloads in turn, each with an unaligned array: the memo keeps both
    assert general(f, lambda: (f(x, y, 1.0), f(np.ones(3, np.float32), y32, 1.0)), n=3) == 0
    np.testing.assert_array_equal(y32, np.full(3, 4.0, np.float32))
