"""long double: a row of the dtype table (NumPy's longdouble, the platform's C
long double: 80-bit x87 on x86-64, IEEE binary128 on aarch64), and its
complex (clongdouble: std::complex<long double>, C's long double _Complex,
`long double[2]`). GCC's _Float32/_Float64/_Float32x/_Float64x are their
standard types; _Float128 and __float128 are left out with why (NumPy has no
binary128 dtype on x86-64).

A long double scalar converts from a float exactly and from a numpy.longdouble
without going through a double; a returned one is a numpy.longdouble (a float
would round it). A complex long double is 32 bytes: arrays only, by value it
is refused at bind time. Calls that pass or return a long double go through
libffi (the direct call's registers have no x87 class); CUDA kernels of long
double are refused. Against a small C library, an instantiate.yml, the real
libm and, where installed, FFTW's long double library."""

import os
import warnings

import numpy as np
import pytest
from test_c_libraries import _c_library

import bindthem
import bindthem.stubs
from bindthem import _core

LD, CLD = np.longdouble, np.clongdouble
THIRD = LD(1) / 3  # all of long double's digits: a double would lose some

HEADER = """\
#include <stddef.h>
struct ldp { char tag; long double v; };
long double ld_add(long double a, long double b);
double ld_narrow(long double a);
long double ld_widen(double a);
float ld_to_float(long double a);
long double ld_sum(const long double *x, size_t x_size);
void ld_twice(long double *x, size_t x_size);
void ld_scale(long double *x, size_t x_size, long double k);
void cld_conj(long double _Complex *z, size_t z_size);
long double cld_abs2(const _Complex long double *z, size_t z_size);
long double ldp_get(const struct ldp *p);
struct ldp ldp_make(long double v);
size_t ldp_offset(void);
size_t ldp_size(void);
long double ld_apply(long double (*f)(long double, void *), long double x, void *ctx);
long double _Complex cld_make(long double re);
void cld_scale(long double _Complex z[], size_t z_size, long double _Complex k);
_Float64x f64x_half(_Float64x x);
_Float32 f32_half(_Float32 x);
_Float64 f64_half(_Float64 x);
_Float32x f32x_half(_Float32x x);
"""

SOURCE = """\
#include "ld.h"
#include <complex.h>
#include <stddef.h>
long double ld_add(long double a, long double b) { return a + b; }
double ld_narrow(long double a) { return (double)a; }
long double ld_widen(double a) { return a; }
float ld_to_float(long double a) { return (float)a; }
long double ld_sum(const long double *x, size_t n)
{
    long double s = 0;
    for (size_t i = 0; i < n; i++)
        s += x[i];
    return s;
}
void ld_twice(long double *x, size_t n) { for (size_t i = 0; i < n; i++) x[i] *= 2; }
void ld_scale(long double *x, size_t n, long double k)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= k;
}
void cld_conj(long double _Complex *z, size_t n)
{
    for (size_t i = 0; i < n; i++)
        z[i] = conjl(z[i]);
}
long double cld_abs2(const long double _Complex *z, size_t n)
{
    long double s = 0;
    for (size_t i = 0; i < n; i++)
        s += creall(z[i]) * creall(z[i]) + cimagl(z[i]) * cimagl(z[i]);
    return s;
}
long double ldp_get(const struct ldp *p) { return p->v; }
struct ldp ldp_make(long double v) { struct ldp r = {'x', v}; return r; }
size_t ldp_offset(void) { return offsetof(struct ldp, v); }
size_t ldp_size(void) { return sizeof(struct ldp); }
long double ld_apply(long double (*f)(long double, void *), long double x, void *ctx)
{
    return f(x, ctx);
}
long double _Complex cld_make(long double re) { return re; }
void cld_scale(long double _Complex z[], size_t n, long double _Complex k)
{
    for (size_t i = 0; i < n; i++)
        z[i] *= k;
}
_Float64x f64x_half(_Float64x x) { return x / 2; }
_Float32 f32_half(_Float32 x) { return x / 2; }
_Float64 f64_half(_Float64 x) { return x / 2; }
_Float32x f32x_half(_Float32x x) { return x / 2; }
"""


def load_quietly(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        return bindthem.load(*args, **kwargs)


@pytest.fixture(scope="module")
def ld(tmp_path_factory):
    h, so = _c_library(tmp_path_factory.mktemp("ld"), "ld", HEADER, SOURCE)
    return load_quietly(so, h)


def left_out(lib):
    return {x["name"]: x["reason"] for x in bindthem.info(lib).left_out}


def test_table_rows():
    rows = {t["c"]: t for t in _core.scalar_types()}
    ld_row, cld_row = rows["long double"], rows["std::complex<long double>"]
    assert (ld_row["mangle"], ld_row["npy_type"], ld_row["kind"], ld_row["size"]) == (
        "e", np.dtype(LD).num, "f", np.dtype(LD).itemsize)
    assert (ld_row["numpy"], ld_row["python"], ld_row["python_return"]) == (
        "longdouble", "float", "numpy.longdouble")
    assert (ld_row["dlpack"], ld_row["typestr"]) == (-1, np.dtype(LD).newbyteorder("<").str)
    assert (cld_row["mangle"], cld_row["npy_type"], cld_row["kind"], cld_row["size"]) == (
        "St7complexIeE", np.dtype(CLD).num, "c", np.dtype(CLD).itemsize)
    assert (cld_row["numpy"], cld_row["python_return"], cld_row["dlpack"]) == (
        "clongdouble", "numpy.clongdouble", -1)


def test_spellings(tmp_path):
    h = tmp_path / "s.h"
    h.write_text(HEADER)
    m = bindthem.parse_header(str(h))
    types = {f["name"]: ([p["type"] for p in f["overloads"][0]["params"]],
                         f["overloads"][0]["return"]["type"]) for f in m["functions"]}
    cld = "std::complex<long double>"
    assert types["cld_conj"] == ([cld, "unsigned long"], "void")
    assert types["cld_abs2"] == ([cld, "unsigned long"], "long double")  # _Complex long double
    assert types["f64x_half"] == (["long double"], "long double")
    assert types["f32_half"] == (["float"], "float")
    assert types["f64_half"] == types["f32x_half"] == (["double"], "double")
    ret = {f["name"]: f["overloads"][0]["return"] for f in m["functions"]}
    assert ret["ld_add"]["python"] == "numpy.longdouble" and ret["ld_add"]["dtype"] == "longdouble"


def test_an_array_typedef_of_two_long_doubles_is_a_complex(tmp_path):
    h = tmp_path / "fl.h"
    h.write_text("typedef long double cl[2];\nvoid f(cl *z, int z_size);\n")
    (f,) = bindthem.parse_header(str(h))["functions"]
    assert f["overloads"][0]["params"][0]["type"] == "std::complex<long double>"


def test_float128_is_left_out_with_why(tmp_path):
    h = tmp_path / "q.h"
    h.write_text("_Float128 q1(_Float128 x);\nvoid q2(__float128 x);\n__ibm128 q3(void);\n"
                 "void q4(const _Float128 *x, int x_size);\n")
    m = bindthem.parse_header(str(h))
    why = {s["name"]: s["reason"] for s in m["skipped"]}
    binary128 = np.finfo(LD).nmant == 112  # aarch64: long double is binary128, _Float128 is it
    assert set(why) == ({"q2", "q3"} if binary128 else {"q1", "q2", "q3", "q4"})
    assert all("unknown type" not in r and "NumPy has no dtype" in r for r in why.values()), why
    assert "IBM's double-double" in why["q3"]
    if not binary128:  # x86-64: long double is x87's, not binary128
        assert "'__float128', IEEE binary128" in why["q2"]
        assert "return value has type '_Float128', IEEE binary128" in why["q1"]


def test_scalars_and_returns(ld):
    r = ld.ld_add(THIRD, THIRD)
    assert type(r) is LD and r == THIRD + THIRD  # no double in between, either way
    assert ld.ld_add(0.1, 1) == LD(0.1) + 1  # a float and an int convert exactly
    assert ld.ld_add(np.float32(0.5), np.float64(0.25)) == LD(0.75)
    assert type(ld.ld_narrow(THIRD)) is float and ld.ld_narrow(THIRD) == float(THIRD)
    assert ld.ld_widen(0.1) == LD(0.1) and type(ld.ld_widen(0.1)) is LD
    assert ld.ld_to_float(THIRD) == float(np.float32(THIRD))
    for v in (2**63 + 1, 2**64 - 1, -2**63, np.uint64(2**64 - 1), np.int64(2**62 + 1)):
        assert int(ld.ld_add(v, 0)) == int(v), v  # 64-bit integers exactly, not via a double
    with pytest.raises(OverflowError, match="does not fit in long double"):
        ld.ld_add(10**400, 0)  # beyond 64 bits an int goes by its double
    assert ld.f64x_half(THIRD) == THIRD / 2 and type(ld.f64x_half(THIRD)) is LD
    assert ld.f32_half(3.0) == 1.5 and ld.f64_half(3.0) == ld.f32x_half(3.0) == 1.5
    with pytest.raises(TypeError, match="expected float \\(long double\\)"):
        ld.ld_add("1", 2)
    # an x87 value (or a binary128 one) has no register class in the direct call
    assert ld.ld_add._call_paths == ("ffi",) and ld.ld_scale._call_paths == ("ffi",)
    assert ld.ld_twice._call_paths == ("ffi" if _core.DIRECT_ABI is None else "direct",)


def test_arrays(ld):
    x = np.arange(5, dtype=LD) / 3
    assert ld.ld_sum(x) == x.sum()
    want = x * THIRD
    ld.ld_scale(x, THIRD)
    np.testing.assert_array_equal(x, want)
    ld.ld_twice(x)
    np.testing.assert_array_equal(x, want * 2)
    with pytest.raises(TypeError, match="longdouble array"):
        ld.ld_sum(np.zeros(3))  # float64: no copy into another dtype
    z = (np.arange(4) + 1j * np.arange(4, 8)).astype(CLD) / 3
    conj = z.conj()
    ld.cld_conj(z)
    np.testing.assert_array_equal(z, conj)
    assert ld.cld_abs2(z) == (z.real * z.real + z.imag * z.imag).sum()


def test_complex_long_double_by_value_is_refused(ld):
    why = left_out(ld)
    assert why["cld_make"].startswith("a function that returns a std::complex<long double>")
    assert "parameter 'k' is a std::complex<long double> (long double _Complex) by value: " \
           "32 bytes" in why["cld_scale"]
    assert "pass it in a clongdouble array" in why["cld_scale"]


def test_struct_field(ld):
    offset, size = ld.ldp_offset(), ld.ldp_size()
    assert ld.ldp.fields["v"] == (np.dtype(LD), offset) and ld.ldp.itemsize == size
    assert ld.ldp.alignment == np.dtype(LD).alignment == 16
    recs = np.zeros(2, ld.ldp)
    recs["v"] = THIRD
    assert ld.ldp_get(recs) == THIRD
    made = ld.ldp_make(THIRD)  # a struct returned by value: libffi's
    assert made["tag"] == ord("x") and made["v"] == THIRD


def test_callback(ld):
    seen = []

    def f(v, ctx):
        seen.append(type(v))
        return v * 2

    assert ld.ld_apply(f, THIRD, None) == THIRD * 2 and seen == [LD]
    assert ld.ld_apply(lambda v, ctx: 0.5, THIRD, None) == LD(0.5)


def test_stub(tmp_path):
    h = tmp_path / "ld.h"
    h.write_text(HEADER)
    stub = bindthem.stubs.render(str(h))
    assert "def ld_add(a: float, b: float) -> numpy.longdouble:" in stub
    assert "def ld_narrow(a: float) -> float:" in stub
    assert "def cld_conj(z: numpy.typing.NDArray[numpy.clongdouble]) -> None:" in stub
    assert "f: Callable[[numpy.longdouble, int | None], float]" in stub


TEMPLATES = """\
#include <complex>
#include <cstddef>
template <typename T> T total(const T *x, std::size_t x_size)
{
    T s = 0;
    for (std::size_t i = 0; i < x_size; i++)
        s += x[i];
    return s;
}
template <typename T> void twice(T *x, std::size_t x_size)
{
    for (std::size_t i = 0; i < x_size; i++)
        x[i] = x[i] + x[i];
}
template <typename T> T half(T v) { return v / T(2); }
"""

TEMPLATES_YML = """\
instantiate:
- types: [[double], [long double], ["std::complex<long double>"]]
  functions: [twice]
- types: [[float], [long double]]
  functions: [total, half]
"""


def test_instantiate_yml_dispatches_long_double(tmp_path):
    (tmp_path / "t.h").write_text(TEMPLATES)
    (tmp_path / "t.yml").write_text(TEMPLATES_YML)
    lib = bindthem.build(str(tmp_path / "t.h"), str(tmp_path / "t.yml"),
                         cache_dir=str(tmp_path / "cache"))
    assert bindthem.info(lib).left_out == []
    syms = {ov["symbol"] for f in bindthem.parse_header(str(tmp_path / "t.h"),
                                                        str(tmp_path / "t.yml"))["functions"]
            for ov in f["overloads"]}
    assert {"_Z5twiceIeEvPT_m", "_Z5twiceISt7complexIeEEvPT_m", "_Z4halfIeET_S0_"} <= syms
    x = np.arange(4, dtype=LD) / 3
    assert lib.total(x) == x.sum() and type(lib.total(x)) is LD
    assert type(lib.total(x.astype(np.float32))) is float
    assert lib.half(THIRD) == THIRD / 2 and type(lib.half(THIRD)) is LD
    assert type(lib.half(np.float32(3))) is float  # the float overload, first
    lib.twice(x)
    np.testing.assert_array_equal(x, np.arange(4, dtype=LD) / 3 * 2)
    z = np.full(2, 1 + 1j, CLD) / 3
    lib.twice(z)
    np.testing.assert_array_equal(z, np.full(2, 1 + 1j, CLD) / 3 * 2)


def test_cuda_refuses_a_long_double_kernel(tmp_path, mock):
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("__global__ void fill(float y[], int y_size);\n"
                 "__global__ void fill_ld(long double y[], int y_size);\n"
                 "__global__ void set_ld(float y[], int y_size, long double v);\n")
    syms = {f["name"]: f["overloads"][0]["symbol"] for f in bindthem.parse_header(str(h))[
        "functions"]}
    text = "bindthem-mock-module\n" + "".join("kernel %s 8 4\n" % s for s in syms.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        lib = cuda.load(text.encode(), str(h))
    assert lib.__all__ == ["fill"]
    for name in ("fill_ld", "set_ld"):
        assert left_out(lib)[name].startswith("a kernel of long double: CUDA device code has "
                                              "no long double")


# ---- the system's libraries ----

MATH_H = "/usr/include/math.h"
# frexpl's and modfl's pointers are one scalar each, returned (docs/arrays.rst)
MATH_YML = """\
annotate:
  frexpl:
    __exponent: {intent: out}
  modfl:
    __iptr: {intent: out}
"""


@pytest.fixture(scope="module")
def libm(tmp_path_factory):
    if not os.path.exists(MATH_H):
        pytest.skip("needs the C library's headers (%s)" % MATH_H)
    yml = tmp_path_factory.mktemp("libm") / "m.yml"
    yml.write_text(MATH_YML)
    return load_quietly("libm.so.6", MATH_H, str(yml))


def test_libm_long_double_functions_agree_with_numpy(libm):
    x = LD("0.1")
    for name, ref in (("sinl", np.sin), ("cosl", np.cos), ("expl", np.exp), ("sqrtl", np.sqrt),
                      ("log1pl", np.log1p), ("atanl", np.arctan)):
        got = getattr(libm, name)(x)
        assert type(got) is LD and got == ref(x), name
    assert libm.sinl(LD("0.1")) == np.sin(LD("0.1")) != np.sin(0.1)
    assert libm.ldexpl(THIRD, 5) == np.ldexp(THIRD, 5)
    assert libm.fmal(THIRD, THIRD, THIRD) == THIRD * THIRD + THIRD or np.finfo(LD).nmant != 63
    assert libm.fmal(LD(2), LD(3), LD(1)) == LD(7)
    mant, exp = libm.frexpl(THIRD * 10)
    assert (mant, exp) == tuple(np.frexp(THIRD * 10)) and type(mant) is LD
    frac, whole = libm.modfl(THIRD * 10)
    assert (frac, whole) == tuple(np.modf(THIRD * 10)) and type(whole) is LD
    assert libm.hypotl(LD(3), LD(4)) == LD(5)


def test_libm_leaves_out_only_binary128(libm):
    why = left_out(libm)
    assert not [n for n, r in why.items() if "unknown type" in r], why
    f128 = {n: r for n, r in why.items() if "_Float128" in r}
    if np.finfo(LD).nmant == 63:  # x86-64: _Float128 is no long double
        assert f128 and all(n.endswith("f128") for n in f128), f128
        assert all("IEEE binary128, for which NumPy has no dtype" in r for r in f128.values())
    for name in ("sinl", "cosl", "fmal", "ldexpl", "frexpl", "modfl", "nextafterl", "copysignl"):
        assert name in libm.__all__, name


def test_libm_gnu_float_n_functions():
    """_GNU_SOURCE declares sinf32 ... sinf128: each _FloatN of the same format
    as a standard type binds as that type; _Float128's are left out saying why."""
    if not os.path.exists(MATH_H):
        pytest.skip("needs the C library's headers (%s)" % MATH_H)
    lib = load_quietly("libm.so.6", MATH_H, cppflags=["-D_GNU_SOURCE"])
    assert {"sinf32", "sinf64", "sinf32x", "sinf64x"} <= set(lib.__all__)
    assert type(lib.sinf32(0.5)) is float and lib.sinf32x(0.5) == np.sin(0.5)
    assert lib.sinf64x(LD("0.1")) == np.sin(LD("0.1"))
    why = left_out(lib)
    assert not [n for n, r in why.items() if "unknown type" in r], why
    if np.finfo(LD).nmant == 63:
        assert "binary128, for which NumPy has no dtype" in why["sinf128"]


FFTW_H = "/usr/include/fftw3.h"
FFTWL = "/usr/lib/%s-linux-gnu/libfftw3l.so.3" % os.uname().machine
FFTW_YML = """\
annotate:
  fftwl_plan_dft_1d:
    n: len(in)
    out: {intent: out, shape: [n]}
"""


def test_fftwl_complex_dft_against_numpy(tmp_path):
    if not (os.path.exists(FFTW_H) and os.path.exists(FFTWL)):
        pytest.skip("needs FFTW's long double library (Debian: libfftw3-dev)")
    (tmp_path / "fftw.yml").write_text(FFTW_YML)
    f = load_quietly("libfftw3l.so.3", FFTW_H, str(tmp_path / "fftw.yml"),
                     handles={"fftwl_plan": "fftwl_destroy_plan"})
    n = 16
    x = np.zeros(n, CLD)
    plan, out = f.fftwl_plan_dft_1d(x, f.FFTW_FORWARD, f.FFTW_ESTIMATE)
    assert out.dtype == CLD and out.shape == (n,)
    rng = np.random.default_rng(7)
    x[:] = (rng.random(n) + 1j * rng.random(n)) / LD(3)
    f.fftwl_execute(plan)
    want = np.fft.fft(x)
    err = np.abs(out - want).max()
    assert want.dtype == CLD and err < 1e-17  # long double's precision, not a double's
    assert np.abs(np.fft.fft(x.astype(np.complex128)) - want).max() > err
    plan.close()
