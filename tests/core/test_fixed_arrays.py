"""Fixed-size C array parameters: `T x[N]`, `T m[N][M]` and array typedefs
(libuuid's `typedef unsigned char uuid_t[16]`, GMP's `typedef __mpz_struct
mpz_t[1]`), N an integer constant expression (a literal, an enum member, a
#define). Each is an array argument of exactly that shape, C-contiguous, of
the element type's dtype (a struct's dtype for an array of structs), read-only
accepted where const; the call passes its data pointer, as C passes an array
parameter. A wrong shape, dtype or layout is refused with the parameter's
name, and the caller's array is left as it was. `T x[]`, and `T x[N]`
followed by its `x_size`, stay the dialect's arrays. The shape shows in the
metadata ("shape"), the C signature, the stub; an annotation may make one an
out array. Then the real libuuid and, where installed, GMP."""

import ctypes
import math
import os
import shutil
import subprocess
import uuid
import warnings

import numpy as np
import pytest

from sources import c_library, system_library
from support import untyped

import bindthem
import bindthem.stubs
from bindthem import _core

HEADER = """\
#define N3 3
enum { FOUR = 4 };
typedef unsigned char id16[16];
typedef id16 id_pair[2];
typedef double mat3[N3][N3];
typedef struct { double x, y; } pt;
typedef struct { int alloc; int size; long *d; } big_t;
typedef big_t big_one[1];
/* All fields reserved: opaque by convention, but the caller holds one. */
typedef struct { int _n; int _pad; } _held_s;
typedef _held_s held_t[1];

/* The sum of v. */
double sum4(const float v[4]);
void fill_id(id16 out, unsigned char k);
int id_cmp(const id16 a, const id16 b);
double trace(const double m[3][3]);
void transpose(mat3 m);
long count_enum(const int v[FOUR]);
double diag_define(const double m[N3][N3]);
int pair_eq(const id_pair p);
void big_init(big_one b, int n);
int big_size(const big_one b);
void pts_shift(pt p[2], double dx);
void held_set(held_t h, int n);
int held_get(const _held_s *h);
double dial(const double x[], int x_size);
double dial_n(const double x[8], int x_size);
double mixed(const double w[3], const double x[], int x_size, double k);
int first_char(const char s[8]);
"""

SOURCE = """\
#include "fixed.h"
double sum4(const float v[4]) { return v[0] + v[1] + v[2] + v[3]; }
void fill_id(id16 out, unsigned char k) { for (int i = 0; i < 16; i++) out[i] = k + i; }
int id_cmp(const id16 a, const id16 b) {
    for (int i = 0; i < 16; i++) if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}
double trace(const double m[3][3]) { return m[0][0] + m[1][1] + m[2][2]; }
void transpose(mat3 m) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < i; j++) { double t = m[i][j]; m[i][j] = m[j][i]; m[j][i] = t; }
}
long count_enum(const int v[FOUR]) { return v[0] + 10 * v[3]; }
double diag_define(const double m[N3][N3]) { return m[0][0] * m[2][2]; }
int pair_eq(const id_pair p) { return id_cmp(p[0], p[1]) == 0; }
void big_init(big_one b, int n) { b->alloc = 2 * n; b->size = n; b->d = 0; }
int big_size(const big_one b) { return b[0].size; }
void pts_shift(pt p[2], double dx) { p[0].x += dx; p[1].x += dx; }
void held_set(held_t h, int n) { h->_n = n; }
int held_get(const _held_s *h) { return h->_n; }
double dial(const double x[], int x_size) {
    double s = 0;
    for (int i = 0; i < x_size; i++) s += x[i];
    return s;
}
double dial_n(const double x[8], int x_size) { return dial(x, x_size); }
double mixed(const double w[3], const double x[], int x_size, double k) {
    return k * (w[0] + w[1] + w[2]) + dial(x, x_size);
}
int first_char(const char s[8]) { return s[0] + s[7]; }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "fixed", HEADER, SOURCE)


@pytest.fixture(scope="module")
def lib(built):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every function binds
        return bindthem.load(*built)


def _params(meta, name):
    d = next(d for d in meta["declarations"] if d["name"] == name)
    assert d["bindable"], d["reason"]
    return {p["name"]: p for p in d["params"]}


def test_shapes_in_the_metadata(built):
    meta = bindthem.parse_header(built[1])
    assert _params(meta, "sum4")["v"]["shape"] == (4,)
    assert _params(meta, "fill_id")["out"]["shape"] == (16,)
    assert _params(meta, "trace")["m"]["shape"] == (3, 3)
    assert _params(meta, "transpose")["m"]["shape"] == (3, 3)  # a typedef, #define-sized
    assert _params(meta, "count_enum")["v"]["shape"] == (4,)  # an enum member
    assert _params(meta, "diag_define")["m"]["shape"] == (3, 3)
    assert _params(meta, "pair_eq")["p"]["shape"] == (2, 16)  # a typedef of a typedef
    big = _params(meta, "big_init")["b"]
    assert big["shape"] == (1,) and big["struct"] == "big_t" and big["array"]
    assert _params(meta, "first_char")["s"]["shape"] == (8,)  # an array, not a string
    # the dialect's arrays: no shape; `x[8]` with its x_size after it too
    for name in ("dial", "dial_n"):
        p = _params(meta, name)
        assert p["x"]["shape"] is None and p["x_size"]["size_of"] == "x"
    assert _params(meta, "mixed")["w"]["shape"] == (3,)
    ov = next(f for f in meta["functions"] if f["name"] == "trace")["overloads"][0]
    assert ov["params"][0]["shape"] == (3, 3)
    assert ov["signature"] == "double trace(const double m[3][3])"


def test_signatures_show_the_shape(lib):
    assert lib.fill_id.overloads == ("void fill_id(unsigned char out[16], unsigned char k)",)
    assert lib.id_cmp.overloads == (
        "int id_cmp(const unsigned char a[16], const unsigned char b[16])",)
    assert lib.pair_eq.overloads == ("int pair_eq(const unsigned char p[2][16])",)
    assert lib.big_init.overloads == ("void big_init(big_t b[1], int n)",)
    # Python's __text_signature__ takes no annotations: the names only
    assert untyped(lib.fill_id) == "(out, k)"


def test_one_dimension(lib):
    assert lib.sum4(np.array([1, 2, 3, 4], np.float32)) == 10.0
    out = np.zeros(16, np.uint8)
    assert lib.fill_id(out, 7) is None
    assert out.tolist() == list(range(7, 23))
    other = out.copy()
    assert lib.id_cmp(out, other) == 0
    other[5] += 1
    assert lib.id_cmp(out, other) == -1
    assert lib.count_enum(np.array([1, 2, 3, 4], np.int32)) == 41
    char = {t["c"]: t["numpy"] for t in _core.scalar_types()}["char"]  # uint8 on aarch64
    assert lib.first_char(np.frombuffer(b"abcdefgh", char)) == ord("a") + ord("h")


def test_two_dimensions(lib):
    m = np.arange(9.0).reshape(3, 3)
    assert lib.trace(m) == 12.0
    assert lib.diag_define(m) == 0.0 * 8.0
    t = m.copy()
    lib.transpose(t)
    assert (t == m.T).all()
    ids = np.zeros((2, 16), np.uint8)
    assert lib.pair_eq(ids) == 1
    ids[1, 3] = 1
    assert lib.pair_eq(ids) == 0


def test_const_takes_read_only(lib):
    m = np.eye(3)
    m.flags.writeable = False
    assert lib.trace(m) == 3.0
    v = np.ones(4, np.float32)
    v.flags.writeable = False
    assert lib.sum4(v) == 4.0


def _refused(call, arr, exc, *words):
    before = arr.copy()
    with pytest.raises(exc) as e:
        call(arr)
    for w in words:
        assert w in str(e.value), str(e.value)
    assert np.array_equal(arr, before)  # the caller's array is untouched
    return str(e.value)


@pytest.mark.parametrize("shape", [(15,), (17,), (4, 4), (1, 16), ()])
def test_wrong_shape_is_refused(lib, shape):
    msg = _refused(lambda a: lib.fill_id(a, 1), np.full(shape, 9, np.uint8), ValueError,
                   "fill_id()", "'out'", "must have shape (16,)")
    assert "unsigned char[16]" in msg and "it has shape %s" % (shape,) in msg


def test_wrong_2d_shape_is_refused(lib):
    msg = _refused(lib.transpose, np.ones((3, 2)), ValueError, "transpose()", "'m'",
                   "must have shape (3, 3)", "it has shape (3, 2)")
    assert "double[3][3]" in msg
    _refused(lib.transpose, np.ones(9), ValueError, "must have shape (3, 3)", "(9,)")


def test_wrong_dtype_is_refused(lib):
    _refused(lambda a: lib.fill_id(a, 1), np.zeros(16, np.int8), TypeError, "'out'", "uint8")
    _refused(lib.trace, np.eye(3, dtype=np.float32), TypeError, "'m'", "float64")


def test_layout_copies_and_writability(lib):
    # a strided or Fortran-ordered array is the call's C-contiguous copy, copied back
    a = np.zeros(32, np.uint8)
    lib.fill_id(a[::2], 1)
    assert a[::2].tolist() == list(range(1, 17)) and not a[1::2].any()
    m = np.asfortranarray(np.arange(9.0).reshape(3, 3))
    lib.transpose(m)
    assert m.tolist() == np.arange(9.0).reshape(3, 3).T.tolist() and m.flags.f_contiguous
    ro = np.zeros(16, np.uint8)
    ro.flags.writeable = False
    _refused(lambda a: lib.fill_id(a, 1), ro, ValueError, "'out'", "read-only")
    _refused(lambda a: lib.fill_id(a, 1), list(range(16)), TypeError, "'out'")


def test_arrays_of_structs(lib):
    b = np.zeros(1, lib.big_t)
    lib.big_init(b, 5)
    assert b["size"][0] == 5 and b["alloc"][0] == 10 and lib.big_size(b) == 5
    zero_d = np.zeros((), lib.big_t)  # one record: a 0-d array stands for shape (1,)
    lib.big_init(zero_d, 3)
    assert zero_d["size"] == 3 and lib.big_size(zero_d[()]) == 3  # const: a numpy.void too
    pts = np.zeros(2, lib.pt)
    lib.pts_shift(pts, 1.5)
    assert pts["x"].tolist() == [1.5, 1.5]
    msg = _refused(lambda a: lib.pts_shift(a, 1.0), np.zeros(3, lib.pt), ValueError,
                   "'p'", "must have shape (2,)", "it has shape (3,)")
    assert "pt[2]" in msg
    _refused(lambda a: lib.big_init(a, 1), np.zeros(2, lib.big_t), ValueError, "shape (1,)")
    _refused(lambda a: lib.big_init(a, 1), np.zeros(1, [("alloc", "i4")]), TypeError, "'b'")
    _refused(lambda a: lib.big_init(a, 1), np.zeros(1, np.float64), TypeError, "'b'")


def test_a_struct_the_caller_holds_is_a_record(lib):
    # every field reserved (opaque by convention), but `held_t` is an array of it:
    # callers hold one, so a pointer to it is a record too, not a handle
    h = np.zeros(1, lib._held_s)
    lib.held_set(h, 42)
    assert lib.held_get(h) == 42


def test_the_dialect_stays(lib):
    assert lib.dial(np.arange(5.0)) == 10.0  # `x[]`: any length, its size passed
    assert lib.dial_n(np.arange(3.0)) == 3.0  # `x[8]` sized by x_size: the dialect's
    assert lib.dial_n(np.arange(11.0)) == 55.0
    assert untyped(lib.mixed) == "(w, x, k)"
    assert lib.mixed(np.ones(3), np.arange(4.0), 2.0) == 12.0
    _refused(lambda a: lib.mixed(a, np.arange(4.0), 2.0), np.ones(4), ValueError,
             "'w'", "must have shape (3,)")


def test_stub_says_the_shape(built):
    stub = bindthem.stubs.render(built[1])
    assert ("def trace(\n    m: numpy.ndarray[tuple[int, int], numpy.dtype[numpy.float64]],\n"
            ") -> float: ...  # shape: m (3, 3)\n") in stub
    assert "def sum4(v: numpy.ndarray[tuple[int], numpy.dtype[numpy.float32]]) -> float:" \
           "  # shape: v (4,)\n" in stub
    assert "out: numpy.ndarray[tuple[int], numpy.dtype[numpy.uint8]]" in stub
    assert "# shape: out (16,)" in stub
    assert "def dial(x: numpy.typing.NDArray[numpy.float64]) -> float: ..." in stub
    assert "big_t: numpy.dtype[numpy.void]" in stub


def test_an_annotation_makes_it_an_out_array(built, tmp_path):
    yml = tmp_path / "fixed.yml"
    yml.write_text("annotate:\n  fill_id:\n    out: {intent: out}\n")
    lib = bindthem.load(built[0], built[1], str(yml))
    assert untyped(lib.fill_id) == "(k)"
    out = lib.fill_id(3)
    assert out.dtype == np.uint8 and out.shape == (16,) and out.tolist() == list(range(3, 19))
    # an annotated function's other fixed arrays are checked as without notes
    yml.write_text("annotate:\n  mixed:\n    x_size: len(x)\n")
    lib = bindthem.load(built[0], built[1], str(yml))
    assert lib.mixed(np.ones(3), np.arange(4.0), 2.0) == 12.0
    _refused(lambda a: lib.mixed(a, np.arange(4.0), 2.0), np.ones(4), ValueError,
             "'w'", "must have shape (3,)")
    assert lib.mixed(np.ones(6)[::2], np.arange(4.0), 2.0) == lib.mixed(
        np.ones(3), np.arange(4.0), 2.0)  # a strided w: its C-contiguous copy


CXX_HEADER = """\
namespace ns {
double tr(double m[3][3]);
double tr2(const double m[3][3], const double n[3][3]);
float cube(float c[2][3][4], float d[3][4]);
void one(int v[4], int w[4]);
}
"""

CXX_SOURCE = """\
#include "m.hpp"
namespace ns {
double tr(double m[3][3]) { return m[0][0] + m[1][1] + m[2][2]; }
double tr2(const double m[3][3], const double n[3][3]) { return m[0][0] + n[2][2]; }
float cube(float c[2][3][4], float d[3][4]) { return c[1][2][3] + d[2][3]; }
void one(int v[4], int w[4]) { v[0] = w[3]; }
}
"""


def test_cxx_names_of_multi_dimensional_arrays(tmp_path):
    if not shutil.which("g++"):
        pytest.skip("needs g++")
    (tmp_path / "m.hpp").write_text(CXX_HEADER)
    (tmp_path / "m.cpp").write_text(CXX_SOURCE)
    so = str(tmp_path / "libm.so")
    subprocess.run(["g++", "-shared", "-fPIC", str(tmp_path / "m.cpp"), "-o", so], check=True)
    syms = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                          text=True).stdout.split()
    meta = bindthem.parse_header(str(tmp_path / "m.hpp"))
    ours = [ov["symbol"] for f in meta["functions"] for ov in f["overloads"]]
    assert sorted(ours) == sorted(s for s in syms if s.startswith("_Z"))  # PA3_d, PA3_A4_f...
    lib = bindthem.load(so, str(tmp_path / "m.hpp"))
    assert lib.tr(np.eye(3)) == 3.0
    c = np.zeros((2, 3, 4), np.float32)
    c[1, 2, 3] = 5
    assert lib.cube(c, np.ones((3, 4), np.float32)) == 6.0


# ---- the system's libuuid ----

UUID_H = "/usr/include/uuid/uuid.h"


@pytest.fixture(scope="module")
def libuuid():
    # uuid_unparse and kin are left out: `char *out` has no size
    return system_library("libuuid.so.1", UUID_H, package="uuid-dev")


def test_uuid_binds(libuuid):
    assert {"uuid_generate", "uuid_parse", "uuid_compare", "uuid_clear", "uuid_copy",
            "uuid_is_null"} <= set(libuuid.__all__)
    left = {d["name"]: d["reason"] for d in bindthem.info(libuuid).left_out}
    assert "uuid_unparse" in left and "'out'" in left["uuid_unparse"]  # char *out: no size
    assert "array type" in left["uuid_get_template"]  # an array returned: C has none
    assert libuuid.uuid_generate.overloads == ("void uuid_generate(unsigned char out[16])",)


def test_uuid_calls(libuuid):
    out = np.zeros(16, np.uint8)
    libuuid.uuid_generate(out)
    assert out.any() and uuid.UUID(bytes=out.tobytes()).version == 4
    text = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    uu = np.zeros(16, np.uint8)
    assert libuuid.uuid_parse(text, uu) == 0
    assert uu.tobytes() == uuid.UUID(text).bytes
    assert libuuid.uuid_compare(uu, uu.copy()) == 0
    bigger = uu.copy()
    bigger[0] += 1
    assert libuuid.uuid_compare(uu, bigger) < 0 < libuuid.uuid_compare(bigger, uu)
    assert libuuid.uuid_is_null(np.zeros(16, np.uint8)) == 1
    _refused(libuuid.uuid_generate, np.zeros(15, np.uint8), ValueError, "'out'", "(16,)")
    _refused(libuuid.uuid_generate, np.zeros(16, np.int64), TypeError, "'out'")


def test_uuid_unparse_with_an_annotation(tmp_path):
    if not os.path.exists(UUID_H):
        pytest.skip("needs uuid-dev")
    yml = tmp_path / "uuid.yml"
    yml.write_text("annotate:\n  uuid_unparse*:\n    out: {intent: out, shape: [37]}\n"
                   "  uuid_generate:\n    out: {intent: out}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lib = bindthem.load("libuuid.so.1", UUID_H, str(yml))
    text = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
    uu = np.frombuffer(uuid.UUID(text).bytes, np.uint8)  # read-only: uu is const
    assert lib.uuid_unparse(uu).tobytes()[:36].decode() == text
    assert uuid.UUID(bytes=lib.uuid_generate().tobytes()).version == 4


# ---- GMP, where installed ----

GMP_H = next((h for h in ("/usr/include/gmp.h", "/usr/include/x86_64-linux-gnu/gmp.h",
                          "/usr/include/aarch64-linux-gnu/gmp.h") if os.path.exists(h)), None)


def test_gmp_factorial():
    if GMP_H is None:
        pytest.skip("needs libgmp-dev (gmp.h)")
    # variadic and inline functions, limbs without sizes are left out
    gmp = system_library("libgmp.so.10", GMP_H, package="libgmp-dev")
    # mpz_t is `typedef __mpz_struct mpz_t[1]`; its functions take mpz_ptr
    # (`__mpz_struct *`): records of the struct's dtype (MP_INT, its typedef)
    assert gmp.__gmp_randinit_default.overloads == (
        "void __gmp_randinit_default(__gmp_randstate_struct arg0[1])",)
    z = np.zeros(1, gmp.MP_INT)
    gmp.__gmpz_init(z)
    try:
        gmp.__gmpz_set_ui(z, 1)
        for k in range(2, 21):
            gmp.__gmpz_mul_ui(z, z, k)
        assert math.factorial(20) < 2**64
        assert gmp.__gmpz_cmp_ui(z, math.factorial(20)) == 0
        assert z["_mp_size"][0] == 1  # one limb, read where _mp_d points
        assert ctypes.c_uint64.from_address(int(z["_mp_d"][0])).value == math.factorial(20)
        if "__gmpz_get_ui" in gmp.__all__:  # gmp.h defines it `extern __inline__`
            assert gmp.__gmpz_get_ui(z) == math.factorial(20)
    finally:
        gmp.__gmpz_clear(z)
    state = np.zeros((), gmp.__gmp_randstate_struct)  # gmp_randstate_t: a 0-d record too
    gmp.__gmp_randinit_default(state)
    gmp.__gmp_randseed_ui(state, 7)
    assert 0 <= gmp.__gmp_urandomm_ui(state, 100) < 100
    gmp.__gmp_randclear(state)
