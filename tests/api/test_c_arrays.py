"""Arrays the way C APIs pass them (issue 42): the `annotate:` section of the
YAML (csrc/core/bt_note.h, docs/arrays.rst). The annotation files of
examples/c-apis bind the system's OpenBLAS CBLAS, LAPACKE and zlib, checked
against NumPy, SciPy and Python's zlib on random inputs (fixed seeds):
strided and reversed views, Fortran-ordered arrays, sub-matrix views, the
four precisions; shape mismatches, checks and statuses; inputs left as they
were; the signatures; the fraction of each header bound. Then a small C
library of our own exercises each item of the vocabulary alone."""

import gc
import inspect
import os
import re
import shutil
import subprocess
import sys
import warnings
import weakref
import zlib

import numpy as np
import pytest

from sources import CC, CXX, ROOT, run, system_library
from support import python_env, random_array

import bindthem

EXAMPLES = os.path.join(ROOT, "examples", "c-apis")
CBLAS_H = "/usr/include/x86_64-linux-gnu/cblas.h"
LAPACKE_H = "/usr/include/lapacke.h"
ZLIB_H = "/usr/include/zlib.h"

# the fractions of each header's functions these files bind (measured, Debian 12)
TARGET = {"cblas": 0.90, "lapacke": 0.90, "zlib": 0.90}

F32, F64, C64, C128 = np.float32, np.float64, np.complex64, np.complex128
TOL = {F32: 1e-4, F64: 1e-11, C64: 1e-4, C128: 1e-11}


def load_quietly(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        return bindthem.load(*args, **kwargs)


def _system(soname, header, yml):
    return system_library(soname, header, os.path.join(EXAMPLES, yml), {
        CBLAS_H: "libopenblas-dev", LAPACKE_H: "liblapacke-dev", ZLIB_H: "zlib1g-dev"}[header])


@pytest.fixture(scope="module")
def blas():
    return _system("libopenblas.so.0", CBLAS_H, "cblas.yml")


@pytest.fixture(scope="module")
def lapack():
    return _system("liblapacke.so.3", LAPACKE_H, "lapacke.yml")


@pytest.fixture(scope="module")
def z():
    return _system("libz.so.1", ZLIB_H, "zlib.yml")


rand = random_array


def close(got, want, dtype):
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * 10)


def bound_fraction(lib):
    """(bound, declared): the functions bound against those the header declares
    (bound, left out with a reason, or missing from the library)."""
    info = bindthem.info(lib)
    names = set(lib.__all__)
    declared = names | {d["name"] for d in info.left_out}
    for d in getattr(info, "unexported", None) or ():
        name = d.get("name") if isinstance(d, dict) else str(d)
        declared.add(name.split("(")[0].split()[-1] if name else name)
    return len(names), len(declared)


# --- CBLAS ------------------------------------------------------------------------------

PREC = {"s": F32, "d": F64, "c": C64, "z": C128}


@pytest.mark.parametrize("p", "sdcz")
def test_dot_and_axpy_on_views(blas, p):
    dt = PREC[p]
    rng = np.random.default_rng(1)
    base_x, base_y = rand(rng, 20, dt), rand(rng, 20, dt)
    dot = getattr(blas, "cblas_%sdot" % p if p in "sd" else "cblas_%sdotu" % p)
    for x, y in ((base_x[:7], base_y[:7]), (base_x[::2], base_y[1::2]),
                 (base_x[::-1], base_y[:20]), (base_x[::-3], base_y[::3][::-1])):
        keep_x, keep_y = x.copy(), y.copy()
        close(dot(x, y), np.sum(x * y), dt)
        assert np.array_equal(x, keep_x) and np.array_equal(y, keep_y)  # `in`: untouched
    if p in "cz":
        x, y = base_x[::2], base_y[::-2]
        close(getattr(blas, "cblas_%sdotc" % p)(x, y), np.vdot(x, y), dt)
        close(getattr(blas, "cblas_%sdotc_sub" % p)(x, y), np.vdot(x, y), dt)
    # axpy: y in place, strided and reversed, nothing returned
    axpy = getattr(blas, "cblas_%saxpy" % p)
    alpha = dt(0.5) if p in "sd" else 0.5 - 0.25j
    y = base_y.copy()
    want = y.copy()
    want[::2] += alpha * base_x[::-2]
    assert axpy(alpha, base_x[::-2], y[::2]) is None
    close(y, want, dt)
    assert np.array_equal(y[1::2], base_y[1::2])  # the view's gaps untouched


@pytest.mark.parametrize("p", "sdcz")
def test_level1_reductions(blas, p):
    dt = PREC[p]
    rng = np.random.default_rng(2)
    x = rand(rng, 31, dt)[::3]
    r = {"s": "s", "d": "d", "c": "sc", "z": "dz"}[p]
    close(getattr(blas, "cblas_%snrm2" % r)(x), np.linalg.norm(x), dt)
    close(getattr(blas, "cblas_%sasum" % r)(x), np.sum(np.abs(x.real) + np.abs(x.imag)), dt)
    i = getattr(blas, "cblas_i%samax" % p)(x)
    assert i == int(np.argmax(np.abs(x.real) + np.abs(x.imag)))
    y = x.copy()
    getattr(blas, "cblas_%sscal" % p)(dt(2) if p in "sd" else 2 - 1j, y)
    close(y, x * (2 if p in "sd" else 2 - 1j), dt)
    a, b = x.copy(), rand(rng, len(x), dt)
    a0, b0 = a.copy(), b.copy()
    getattr(blas, "cblas_%sswap" % p)(a, b)
    assert np.array_equal(a, b0) and np.array_equal(b, a0)
    out = np.zeros_like(x)
    getattr(blas, "cblas_%scopy" % p)(x[::-1], out)
    assert np.array_equal(out, x[::-1])


def test_rotg_and_rotmg_return_their_scalars(blas):
    from scipy.linalg import blas as sblas
    r, zz, c, s = blas.cblas_drotg(3.0, 4.0)
    c2, s2 = sblas.drotg(3.0, 4.0)
    assert abs(c - c2) < 1e-12 and abs(s - s2) < 1e-12 and abs(r - 5.0) < 1e-12
    r, c, s = blas.cblas_zrotg(1 + 2j, 3 - 1j)
    c2, s2 = sblas.zrotg(1 + 2j, 3 - 1j)
    assert abs(c - c2) < 1e-12 and abs(s - s2) < 1e-12
    d1, d2, b1, P = blas.cblas_drotmg(2.0, 3.0, 1.0, 4.0)
    assert P.shape == (5,) and P.dtype == np.float64
    x, y = np.array([1.0]), np.array([4.0])
    blas.cblas_drotm(x, y, P)
    assert abs(y[0]) < 1e-12  # the rotation zeroes the second component


def _layouts(a):
    """Copies of a: C-ordered, Fortran-ordered, and sub-matrix views of bigger
    C- and Fortran-ordered arrays."""
    big = np.zeros((a.shape[0] + 3, a.shape[1] + 5), a.dtype)
    big[1:1 + a.shape[0], 2:2 + a.shape[1]] = a
    bigf = np.asfortranarray(big)
    return [np.array(a, order="C"), np.array(a, order="F"),
            big[1:1 + a.shape[0], 2:2 + a.shape[1]], bigf[1:1 + a.shape[0], 2:2 + a.shape[1]]]


@pytest.mark.parametrize("p", "sdcz")
def test_gemv_in_every_layout(blas, p):
    dt = PREC[p]
    rng = np.random.default_rng(3)
    a0 = rand(rng, (4, 6), dt)
    gemv = getattr(blas, "cblas_%sgemv" % p)
    alpha, beta = (dt(1.5), dt(0.5)) if p in "sd" else (1.5 + 1j, 0.5)
    for a in _layouts(a0):
        keep = a.copy()
        x, y = rand(rng, 12, dt)[::2], rand(rng, 4, dt)
        want = alpha * a0 @ x + beta * y
        gemv(blas.CblasNoTrans, alpha, a, x, beta, y)
        close(y, want, dt)
        x, y = rand(rng, 4, dt)[::-1], rand(rng, 6, dt)
        want = alpha * a0.T @ x + beta * y
        gemv(blas.CblasTrans, alpha, a, x, beta, y)
        close(y, want, dt)
        assert np.array_equal(a, keep)
    with pytest.raises(ValueError, match="cblas_%sgemv" % p) as e:
        gemv(blas.CblasNoTrans, alpha, a0, rand(rng, 5, dt), beta, rand(rng, 4, dt))
    assert "x" in str(e.value)


@pytest.mark.parametrize("p", "sdcz")
def test_gemm_layouts_and_transposes(blas, p):
    dt = PREC[p]
    rng = np.random.default_rng(4)
    gemm = getattr(blas, "cblas_%sgemm" % p)
    alpha, beta = (dt(2), dt(-1)) if p in "sd" else (1 - 1j, 0.5j)
    N, T = blas.CblasNoTrans, blas.CblasTrans
    for ta, tb in ((N, N), (T, N), (N, T), (T, T)):
        A0 = rand(rng, (3, 5) if ta == N else (5, 3), dt)
        B0 = rand(rng, (5, 4) if tb == N else (4, 5), dt)
        opA = A0 if ta == N else A0.T
        opB = B0 if tb == N else B0.T
        for A, B, C in zip(_layouts(A0), _layouts(B0)[::-1], _layouts(rand(rng, (3, 4), dt))):
            want = alpha * opA @ opB + beta * C
            keepA, keepB = A.copy(), B.copy()
            assert gemm(ta, tb, alpha, A, B, beta, C) is None
            close(C, want, dt)
            assert np.array_equal(A, keepA) and np.array_equal(B, keepB)
    with pytest.raises(ValueError) as e:
        gemm(N, N, alpha, rand(rng, (3, 5), dt), rand(rng, (4, 4), dt), beta, rand(rng, (3, 4), dt))
    assert "cblas_%sgemm" % p in str(e.value) and "B" in str(e.value)


def test_level2_and_level3_against_numpy(blas):
    rng = np.random.default_rng(5)
    n = 5
    A = rand(rng, (n, n), F64) + n * np.eye(n)
    # trsv: X = A^-1 X, A's lower triangle
    for a in _layouts(A):
        x = rand(rng, n, F64)
        want = np.linalg.solve(np.tril(A), x)
        blas.cblas_dtrsv(blas.CblasLower, blas.CblasNoTrans, blas.CblasNonUnit, a, x)
        close(x, want, F64)
    # ger on a Fortran-ordered A with reversed vectors
    a = np.asfortranarray(rand(rng, (4, 3), F64))
    x, y = rand(rng, 4, F64)[::-1], rand(rng, 6, F64)[::2]
    want = a + 0.5 * np.outer(x, y)
    blas.cblas_dger(0.5, x, y, a)
    close(a, want, F64)
    # syrk, upper triangle of C
    A = rand(rng, (4, 6), C128)
    C = np.zeros((4, 4), C128)
    blas.cblas_zherk(blas.CblasUpper, blas.CblasNoTrans, 1.0, A, 0.0, C)
    close(np.triu(C), np.triu(A @ A.conj().T), C128)
    # trsm from the right
    B = rand(rng, (3, 4), F32)
    T = (rand(rng, (4, 4), F32) + 4 * np.eye(4, dtype=F32))
    want = B @ np.linalg.inv(np.triu(T))
    blas.cblas_strsm(blas.CblasRight, blas.CblasUpper, blas.CblasNoTrans, blas.CblasNonUnit,
                     np.float32(1), np.asfortranarray(T), B)
    close(B, want, F32)


def test_band_and_packed(blas):
    rng = np.random.default_rng(6)
    m, n, kl, ku = 5, 4, 1, 2
    dense = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            if -kl <= j - i <= ku:
                dense[i, j] = rng.standard_normal()
    # column-major band storage: (kl + ku + 1, n), band[ku + i - j, j] = A[i, j]
    band = np.zeros((kl + ku + 1, n), order="F")
    # row-major: (m, kl + ku + 1), band[i, kl + j - i] = A[i, j]
    rband = np.zeros((m, kl + ku + 1))
    for i in range(m):
        for j in range(n):
            if -kl <= j - i <= ku:
                band[ku + i - j, j] = dense[i, j]
                rband[i, kl + j - i] = dense[i, j]
    x = rng.standard_normal(n)
    for b in (band, rband):
        y = np.zeros(m)
        blas.cblas_dgbmv(blas.CblasNoTrans, m, n, kl, ku, 1.0, b, x, 0.0, y)
        close(y, dense @ x, F64)
    # packed upper triangle, column-major: ap[i + j (j + 1) / 2] = A[i, j], i <= j
    k = 4
    U = np.triu(rng.standard_normal((k, k)))
    ap = np.array([U[i, j] for j in range(k) for i in range(j + 1)])
    x = rng.standard_normal(k)
    want = U @ x
    blas.cblas_dtpmv(blas.CblasColMajor, blas.CblasUpper, blas.CblasNoTrans, blas.CblasNonUnit,
                     ap, x)
    close(x, want, F64)
    with pytest.raises(ValueError, match="Ap"):
        blas.cblas_dtpmv(blas.CblasColMajor, blas.CblasUpper, blas.CblasNoTrans,
                         blas.CblasNonUnit, ap[:-1], x)


def test_openblas_extensions(blas):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 5))
    for v in _layouts(a):
        b = blas.cblas_domatcopy(blas.CblasTrans, 2.0, v)
        close(b, 2 * a.T, F64)
    c = rng.standard_normal((3, 5))
    want = 2 * a + 0.5 * c
    blas.cblas_dgeadd(2.0, a, 0.5, c)
    close(c, want, F64)
    s = rng.standard_normal((4, 4))
    want = 3 * s.T
    blas.cblas_dimatcopy(blas.CblasTrans, 3.0, s)
    close(s, want, F64)


def test_cblas_signatures_show_only_visible_parameters(blas):
    sig = lambda f: list(inspect.signature(f).parameters)  # noqa: E731
    assert sig(blas.cblas_ddot) == ["x", "y"]
    assert sig(blas.cblas_daxpy) == ["alpha", "x", "y"]
    assert sig(blas.cblas_dgemm) == ["TransA", "TransB", "alpha", "A", "B", "beta", "C"]
    assert sig(blas.cblas_zgemv) == ["trans", "alpha", "a", "x", "beta", "y"]
    assert sig(blas.cblas_drotg) == ["a", "b"]


def test_cblas_fraction_bound(blas):
    bound, declared = bound_fraction(blas)
    print("cblas.h: %d of %d functions bound (%.1f%%)" % (bound, declared, 100 * bound / declared))
    assert bound / declared >= TARGET["cblas"]


# --- LAPACKE ----------------------------------------------------------------------------

@pytest.mark.parametrize("p", "sdcz")
def test_gesv_in_every_layout(lapack, p):
    dt = PREC[p]
    rng = np.random.default_rng(10)
    n = 5
    A0 = rand(rng, (n, n), dt) + n * np.eye(n, dtype=dt)
    B0 = rand(rng, (n, 3), dt)
    want = np.linalg.solve(A0.astype(C128), B0.astype(C128))
    gesv = getattr(lapack, "LAPACKE_%sgesv" % p)
    for i in range(4):
        for j in range(2):
            a = _layouts(A0)[i]  # fresh: gesv overwrites a with its LU factors
            b = _layouts(B0)[j]
            ipiv = gesv(a, b)
            assert ipiv.shape == (n,) and ipiv.dtype == np.int32
            close(b, want, dt)
    assert list(inspect.signature(gesv).parameters) == ["a", "b"]


def test_gesv_singular_raises_status_error(lapack):
    a = np.ones((3, 3))
    b = np.ones((3, 1))
    with pytest.raises(bindthem.StatusError) as e:
        lapack.LAPACKE_dgesv(a, b)
    assert e.value.status > 0 and e.value.function == "LAPACKE_dgesv"
    with pytest.raises(ValueError, match="LAPACKE_dgesv"):
        lapack.LAPACKE_dgesv(np.eye(3), np.ones((4, 1)))


@pytest.mark.parametrize("p", "sdcz")
def test_posv_syev_gels_gesvd(lapack, p):
    dt = PREC[p]
    rng = np.random.default_rng(11)
    n = 4
    M = rand(rng, (n, n), dt)
    S = (M @ M.conj().T + n * np.eye(n)).astype(dt)
    b = rand(rng, (n, 2), dt)
    want = np.linalg.solve(S.astype(C128), b.astype(C128))
    a = np.asfortranarray(S)
    getattr(lapack, "LAPACKE_%sposv" % p)("L", a, b)
    close(b, want, dt)
    # eigenvalues (syev for s, d; heev for c, z): w returned, ascending
    ev = getattr(lapack, "LAPACKE_%s%s" % (p, "syev" if p in "sd" else "heev"))
    a = S.copy()
    w = ev("N", "U", a)
    close(w, np.linalg.eigvalsh(S.astype(C128)), dt)
    # least squares, b with max(m, n) rows
    A = rand(rng, (6, 3), dt)
    B = rand(rng, (6, 2), dt)
    want = np.linalg.lstsq(A.astype(C128), B.astype(C128), rcond=None)[0]
    bb = B.copy()
    getattr(lapack, "LAPACKE_%sgels" % p)("N", A.copy(), bb)
    close(bb[:3], want, dt)
    # SVD of a sub-matrix view
    big = rand(rng, (8, 9), dt)
    view = big[1:4, 2:6]
    keep = big.copy()
    s, u, vt, superb = getattr(lapack, "LAPACKE_%sgesvd" % p)("S", "S", view.copy())
    close(s, np.linalg.svd(view.astype(C128), compute_uv=False), dt)
    close((u * s) @ vt, view, dt)
    s2, u2, vt2, _ = getattr(lapack, "LAPACKE_%sgesvd" % p)("A", "N", np.asfortranarray(view))
    assert u2.shape == (3, 3) and vt2.shape == (1, 1)
    assert np.array_equal(big, keep)


def test_lapacke_fraction_bound(lapack):
    bound, declared = bound_fraction(lapack)
    print("lapacke.h: %d of %d functions bound (%.1f%%)" % (bound, declared,
                                                            100 * bound / declared))
    assert bound / declared >= TARGET["lapacke"]


# --- zlib -------------------------------------------------------------------------------

def test_zlib_one_shot(z):
    rng = np.random.default_rng(20)
    data = bytes(rng.integers(0, 4, 5000, dtype=np.uint8)) + b"bindthem " * 300
    src = np.frombuffer(data, np.uint8)
    for level in (-1, 0, 1, 9):
        out = z.compress2(src, level)
        assert out.dtype == np.uint8 and zlib.decompress(out.tobytes()) == data
    out = z.compress(src)
    assert zlib.decompress(out.tobytes()) == data
    packed = np.frombuffer(zlib.compress(data), np.uint8)
    dest, n = z.uncompress(len(data) + 10, packed)
    assert n == len(data) and dest.tobytes() == data
    dest, n, used = z.uncompress2(len(data), packed, len(packed))
    assert dest.tobytes() == data and used == len(packed)
    assert z.compressBound(len(data)) >= len(out)
    view = src[::3]  # a strided view: copied to a temporary, as the function takes no stride
    assert z.crc32(0, view) == zlib.crc32(view.tobytes())
    assert z.adler32(1, src) == zlib.adler32(data)
    assert z.crc32_z(0, src) == zlib.crc32(data)
    assert list(inspect.signature(z.compress2).parameters) == ["source", "level"]
    assert list(inspect.signature(z.crc32).parameters) == ["crc", "buf"]


def test_zlib_statuses_and_checks(z):
    data = b"abc" * 1000
    packed = np.frombuffer(zlib.compress(data), np.uint8)
    with pytest.raises(bindthem.StatusError) as e:
        z.uncompress(10, packed)  # too small: Z_BUF_ERROR
    assert e.value.status == z.Z_BUF_ERROR and e.value.function == "uncompress"
    # named by the header's constant of that value, named like the ok one (Z_OK)
    assert e.value.name == "Z_BUF_ERROR"
    assert "status -5 (Z_BUF_ERROR); Z_OK is success" in str(e.value)
    bad = packed.copy()
    bad[5:15] ^= 0x55
    with pytest.raises(bindthem.StatusError) as e:
        z.uncompress(len(data), bad)
    assert e.value.status in (z.Z_DATA_ERROR, z.Z_BUF_ERROR)
    with pytest.raises(ValueError, match="level"):
        z.compress2(np.frombuffer(data, np.uint8), 10)


def test_zlib_streams_and_dictionaries(z):
    strm = np.zeros(1, z.z_stream)
    assert z.deflateInit_(strm, 6, z.zlibVersion(), z.z_stream.itemsize) == z.Z_OK
    dictionary = np.frombuffer(b"hello dictionary", np.uint8)
    assert z.deflateSetDictionary(strm, dictionary) is None
    got = z.deflateGetDictionary(strm)
    assert got.tobytes() == dictionary.tobytes()
    pending, bits = z.deflatePending(strm)
    assert pending == 0 and bits == 0
    z.deflateEnd(strm)


def test_zlib_gz_files(z, tmp_path):
    path = str(tmp_path / "a.gz")
    f = z.gzopen(path, "wb")
    data = np.frombuffer(b"0123456789" * 50, np.uint8)
    assert z.gzwrite(f, data) == len(data)
    assert z.gzfwrite(data[:40], 4, f) == 10
    msg, errnum = z.gzerror(f)
    assert errnum == z.Z_OK
    z.gzclose(f)
    f = z.gzopen(path, "rb")
    buf = np.zeros(600, np.uint8)
    assert z.gzread(f, buf) == 540
    assert buf[:500].tobytes() == data.tobytes()
    z.gzclose(f)


def test_zlib_fraction_bound(z):
    bound, declared = bound_fraction(z)
    print("zlib.h: %d of %d functions bound (%.1f%%)" % (bound, declared, 100 * bound / declared))
    assert bound / declared >= TARGET["zlib"]


# --- a C library of our own: each item of the vocabulary alone --------------------------

ARR_H = """\
#ifndef ARR_H
#define ARR_H
#define ARR_ROW 101
#define ARR_COL 102
#define ARR_LIMIT 100
/* sum of x: the size before the pointer */
double sum_n(int n, const double *x);
/* b += a: one size for two arrays */
void add_to(int n, const double *a, double *b);
/* sum of (i + 1) x_i, x read BLAS's way (incx < 0: from its far end) */
double weighted(int n, const double *x, int incx);
/* out[i] = sum_j a(i, j): a leading dimension and a layout */
void rowsum(int order, int m, int n, const double *a, int lda, double *out);
/* b += a, both m x n, b in a's layout */
void mat_add(int order, int m, int n, const double *a, int lda, double *b, int ldb);
/* st(j, 0), st(j, 1): the least and greatest of column j of a; st is n x 2,
 * stored in a's layout with no leading dimension */
void colrange(int order, int m, int n, const double *a, int lda, double *st);
/* a(i, j) += p(i, 0) p(j, 1): p is n x 2 in a's layout, no leading dimension */
void rank1(int order, int n, const double *p, double *a, int lda);
/* sum of f(x_i) over x: a callback in an annotated function */
double sum_of(double (*f)(double), int n, const double *x);
/* the length of s, -1 for NULL (which it takes); len_strict takes no NULL */
int len_or(const char *s);
int len_strict(const char *s);
/* y: x and its midpoints, 2 n - 1 of them */
void refine(int n, const double *x, double *y);
/* the smallest and largest of x, by pointer */
void minmax(int n, const double *x, double *lo, double *hi);
/* the positive x_i into y: *count is its room in, the count out */
void positives(int n, const double *x, double *y, int *count);
/* x[k] */
double nth(int n, const double *x, int k);
/* out = x / d; -1 when d is 0 */
int divide(int n, const double *x, double d, double *out);
/* z *= f, z complex, passed as void * */
void cscale(int n, void *z, double f);
/* a + b, no pointers at all */
int plain_add(int a, int b);
/* x[idx[k]] summed over k, the indices trusted (as LAPACK trusts its pivots). */
double gather(int nx, const double *x, int n, const int *idx);
/* The same with |idx[k]| - 1 (a signed, 1-based index, as a 2x2 pivot's). */
double gather_abs(int nx, const double *x, int n, const long long *idx);
#endif
"""

ARR_C = """\
#include "arr.h"
double sum_n(int n, const double *x)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s;
}
void add_to(int n, const double *a, double *b) { for (int i = 0; i < n; i++) b[i] += a[i]; }
double weighted(int n, const double *x, int incx)
{
    double s = 0;
    const double *p = incx < 0 ? x + (long)(1 - n) * incx : x;
    for (int i = 0; i < n; i++, p += incx) s += (i + 1) * *p;
    return s;
}
void rowsum(int order, int m, int n, const double *a, int lda, double *out)
{
    for (int i = 0; i < m; i++) {
        out[i] = 0;
        for (int j = 0; j < n; j++) out[i] += order == ARR_ROW ? a[i * lda + j] : a[i + j * lda];
    }
}
#define AT(o, x, i, j, ld) (x)[(o) == ARR_ROW ? (i) * (ld) + (j) : (i) + (j) * (ld)]
void colrange(int order, int m, int n, const double *a, int lda, double *st)
{
    for (int j = 0; j < n; j++) {
        double lo = AT(order, a, 0, j, lda), hi = lo;
        for (int i = 1; i < m; i++) {
            double v = AT(order, a, i, j, lda);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        AT(order, st, j, 0, order == ARR_ROW ? 2 : n) = lo;
        AT(order, st, j, 1, order == ARR_ROW ? 2 : n) = hi;
    }
}
void rank1(int order, int n, const double *p, double *a, int lda)
{
    int ldp = order == ARR_ROW ? 2 : n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            AT(order, a, i, j, lda) += AT(order, p, i, 0, ldp) * AT(order, p, j, 1, ldp);
}
int len_or(const char *s)
{
    int n = 0;
    if (!s) return -1;
    while (s[n]) n++;
    return n;
}
int len_strict(const char *s) { return len_or(s); }
double sum_of(double (*f)(double), int n, const double *x)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += f(x[i]);
    return s;
}
void mat_add(int order, int m, int n, const double *a, int lda, double *b, int ldb)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            if (order == ARR_ROW) b[i * ldb + j] += a[i * lda + j];
            else b[i + j * ldb] += a[i + j * lda];
        }
}
void refine(int n, const double *x, double *y)
{
    for (int i = 0; i < n; i++) {
        y[2 * i] = x[i];
        if (i + 1 < n) y[2 * i + 1] = (x[i] + x[i + 1]) / 2;
    }
}
void minmax(int n, const double *x, double *lo, double *hi)
{
    *lo = *hi = x[0];
    for (int i = 1; i < n; i++) { if (x[i] < *lo) *lo = x[i]; if (x[i] > *hi) *hi = x[i]; }
}
void positives(int n, const double *x, double *y, int *count)
{
    int k = 0;
    for (int i = 0; i < n && k < *count; i++) if (x[i] > 0) y[k++] = x[i];
    *count = k;
}
double nth(int n, const double *x, int k) { (void)n; return x[k]; }
int divide(int n, const double *x, double d, double *out)
{
    if (d == 0) return -1;
    for (int i = 0; i < n; i++) out[i] = x[i] / d;
    return 0;
}
void cscale(int n, void *z, double f) { double *p = z; for (int i = 0; i < 2 * n; i++) p[i] *= f; }
int plain_add(int a, int b) { return a + b; }
double gather(int nx, const double *x, int n, const int *idx)
{
    double s = 0;
    (void)nx;
    for (int k = 0; k < n; k++) s += x[idx[k]];
    return s;
}
double gather_abs(int nx, const double *x, int n, const long long *idx)
{
    double s = 0;
    (void)nx;
    for (int k = 0; k < n; k++) s += x[(idx[k] < 0 ? -idx[k] : idx[k]) - 1];
    return s;
}
"""

ARR_YML = """\
annotate:
  sum_n: {n: len(x)}
  add_to:
    n: len(a)
    b: {shape: [n]}
  weighted: {n: len(x), incx: stride(x)}
  rowsum:
    order: layout(a, ARR_ROW, ARR_COL)
    m: shape(a, 0)
    n: shape(a, 1)
    lda: ld(a)
    out: {intent: out, shape: [m]}
  mat_add:
    order: layout(a, ARR_ROW, ARR_COL)
    m: shape(a, 0)
    n: shape(a, 1)
    lda: ld(a)
    b: {intent: inout, shape: [m, n]}
    ldb: ld(b)
  colrange:
    order: layout(a, ARR_ROW, ARR_COL)
    m: shape(a, 0)
    n: shape(a, 1)
    lda: ld(a)
    st: {intent: out, shape: [n, 2]}
  rank1:
    order: layout(a, ARR_ROW, ARR_COL)
    n: shape(a, 0)
    lda: ld(a)
    p: {shape: [n, 2]}
    a: {intent: inout, shape: [n, n]}
  sum_of: {n: len(x)}
  len_or: {s: {nullable: true}}
  refine:
    n: len(x)
    y: {intent: out, shape: ["2 * n - 1"]}
  minmax:
    n: len(x)
    lo: {intent: out}
    hi: {intent: out}
    check: [n > 0]
  positives:
    n: len(x)
    count: {intent: inout}
    y: {intent: out, shape: [count], trim: count}
  nth:
    n: len(x)
    check: ["k >= 0 && k < n", "n <= ARR_LIMIT"]
  divide:
    n: len(x)
    out: {intent: out, shape: [n]}
    status: {ok: [0]}
  cscale:
    n: len(z)
    z: {intent: inout, type: complex128}
  gather:
    nx: len(x)
    n: len(idx)
    check: ["minval(idx) >= 0 && maxval(idx) < nx"]
  gather_abs:
    nx: len(x)
    n: len(idx)
    check: ["minabs(idx) >= 1 && maxabs(idx) <= nx"]
"""

REF_HPP = """\
// C++ scalar references
// v doubled, in place
void twice(double &v);
// adds by to v; returns v's old value
int bump(int &v, int by);
"""

REF_CPP = """\
#include "ref.hpp"
void twice(double &v) { v *= 2; }
int bump(int &v, int by) { int old = v; v += by; return old; }
"""


@pytest.fixture(scope="module")
def arr(tmp_path_factory):
    if shutil.which(CC) is None:
        pytest.skip("needs %s" % CC)
    d = tmp_path_factory.mktemp("arr")
    (d / "arr.h").write_text(ARR_H)
    (d / "arr.c").write_text(ARR_C)
    (d / "arr.yml").write_text(ARR_YML)
    lib = str(d / "libarr.so")
    run([CC, "-shared", "-fPIC", "-O1", str(d / "arr.c"), "-o", lib])
    return load_quietly(lib, str(d / "arr.h"), str(d / "arr.yml"))


def test_size_before_pointer(arr):
    x = np.arange(6.0)
    assert arr.sum_n(x) == 15.0
    assert arr.sum_n(x[::2]) == 6.0  # no stride taken: a copy of the view
    assert list(inspect.signature(arr.sum_n).parameters) == ["x"]
    # typed as the stub is, though the library binds the C name, not the C++ symbol
    sig = inspect.signature(arr.sum_n)
    assert "NDArray[numpy.float64]" in str(sig.parameters["x"].annotation)
    assert str(sig.return_annotation) == "float"


def test_one_size_for_two_arrays(arr):
    a, b = np.arange(4.0), np.ones(4)
    arr.add_to(a, b)
    assert b.tolist() == [1, 2, 3, 4]
    b2 = np.ones(8)
    arr.add_to(a, b2[::2])  # a written view without a stride: copied back
    assert b2.tolist() == [1, 1, 2, 1, 3, 1, 4, 1]
    with pytest.raises(ValueError) as e:
        arr.add_to(a, np.ones(3))
    msg = str(e.value)
    assert "add_to" in msg and re.search(r"\bb\b", msg) and "4" in msg and "3" in msg


def test_stride(arr):
    base = np.arange(1.0, 11.0)
    for x in (base, base[::2], base[::-1], base[7:1:-3]):
        want = float(np.sum((np.arange(len(x)) + 1) * x))
        assert arr.weighted(x) == want


def test_ld_and_layout(arr):
    rng = np.random.default_rng(30)
    a = rng.standard_normal((3, 4))
    for v in _layouts(a):
        close(arr.rowsum(v), a.sum(axis=1), F64)
    for va in _layouts(a):
        for b0 in _layouts(rng.standard_normal((3, 4))):
            want = b0 + a
            arr.mat_add(va, b0)  # b made to follow a's layout, copied back where it did not
            close(b0, want, F64)
    assert list(inspect.signature(arr.rowsum).parameters) == ["a"]


def test_matrix_without_leading_dimension_follows_the_layout(arr):
    """A 2-D array with no leading dimension, in a function with a layout():
    stored contiguous in the call's layout (LAPACKE's err_bnds_norm). An out
    one is allocated in it; a caller's one in the other order (or a view) is
    copied into it, counted, and the call's layout stays the one layout()'s
    array decided, though the follower comes first."""
    rng = np.random.default_rng(31)
    a = rng.standard_normal((5, 3))
    want = np.stack([a.min(axis=0), a.max(axis=0)], axis=1)
    for by_columns, v in zip([False, True, False, True], _layouts(a)):
        st = arr.colrange(v)
        assert st.shape == (3, 2)
        close(st, want, F64)
        assert (st.flags.f_contiguous, st.flags.c_contiguous) == (by_columns, not by_columns)
    p = rng.standard_normal((4, 2))
    wide = np.zeros((4, 5))
    wide[:, 1:3] = p
    a0 = rng.standard_normal((4, 4))
    want = a0 + np.outer(p[:, 0], p[:, 1])
    for by_columns, va in zip([False, True, False, True], _layouts(a0)):
        for vp in (p, np.asfortranarray(p), wide[:, 1:3]):
            before = arr.rank1.stats["layout_copies"]
            arr.rank1(vp, va)
            close(va, want, F64)
            copied = arr.rank1.stats["layout_copies"] - before
            # a is never copied (its layout decides); p only where it is not in a's
            fits = vp.flags.f_contiguous if by_columns else vp.flags.c_contiguous
            assert copied == (0 if fits else 1), (by_columns, vp.flags)
            va -= np.outer(p[:, 0], p[:, 1])
    with pytest.raises(ValueError, match="rank1.*'p'"):
        arr.rank1(np.ones((4, 3)), a0.copy())
    assert list(inspect.signature(arr.rank1).parameters) == ["p", "a"]


def test_callback_in_an_annotated_function(arr):
    """A function pointer parameter of an annotated function takes what it
    takes without notes: a Python callable (a closure for the call) or a C
    function pointer; the callable's exception is raised after the call."""
    import ctypes
    x = np.arange(1.0, 5.0)
    assert arr.sum_of(lambda v: v * v, x) == 30.0
    assert arr.sum_of(lambda v: v, x[::-2]) == 6.0        # the view copied: no stride taken
    sq = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(lambda v: 2 * v)
    assert arr.sum_of(sq, x) == 20.0
    assert list(inspect.signature(arr.sum_of).parameters) == ["f", "x"]

    def bad(v):
        raise KeyError("from the callable")
    with pytest.raises(KeyError, match="from the callable"):
        arr.sum_of(bad, x)
    with pytest.raises(TypeError, match="'f'"):
        arr.sum_of(None, x)


def test_nullable_string(arr, tmp_path):
    """`nullable: true`: a `const char *` that takes None, passed as NULL, for a
    function that documents NULL; without it None is refused. Stated on
    anything else, or not a bool, it is an error at its file:line:col."""
    assert arr.len_or("abc") == 3 and arr.len_or(b"xy") == 2
    assert arr.len_or(None) == -1
    with pytest.raises(TypeError, match="str, bytes or None"):
        arr.len_or(3)
    with pytest.raises(TypeError, match="str or bytes"):
        arr.len_strict(None)
    ann = inspect.signature(arr.len_or).parameters["s"].annotation
    assert "None" in str(ann) and "None" not in str(
        inspect.signature(arr.len_strict).parameters["s"].annotation)
    h = tmp_path / "n.h"
    h.write_text("int len_or(const char *s);\ndouble first(const double *x, int x_size);\n")
    for note, where in (("first: {x: {nullable: true}}", "nullable"),
                        ("len_or: {s: {nullable: maybe}}", "true or false")):
        y = tmp_path / "n.yml"
        y.write_text("annotate:\n  " + note + "\n")
        with pytest.raises(bindthem.BindError, match=where) as e:
            bindthem.parse_header(str(h), str(y))
        assert "n.yml:2:" in str(e.value)


def test_out_array_with_a_formula(arr):
    y = arr.refine(np.array([0.0, 2.0, 4.0]))
    assert y.tolist() == [0, 1, 2, 3, 4]


def test_scalar_out(arr):
    assert arr.minmax(np.array([3.0, -1.0, 7.0])) == (-1.0, 7.0)
    with pytest.raises(ValueError, match="n > 0"):
        arr.minmax(np.zeros(0))


def test_inout_scalar_and_trim(arr):
    x = np.array([1.0, -2.0, 3.0, 4.0, -5.0])
    y, count = arr.positives(x, 10)
    assert y.tolist() == [1, 3, 4] and count == 3
    y, count = arr.positives(x, 2)
    assert y.tolist() == [1, 3] and count == 2
    assert list(inspect.signature(arr.positives).parameters) == ["x", "count"]


def test_check(arr):
    x = np.arange(5.0)
    assert arr.nth(x, 4) == 4.0
    with pytest.raises(ValueError, match=r"k >= 0 && k < n"):
        arr.nth(x, 5)
    with pytest.raises(ValueError, match="ARR_LIMIT"):
        arr.nth(np.zeros(101), 0)


def test_the_values_of_an_index_array_are_checked(arr):
    """minval/maxval (minabs/maxabs) read an integer array's values at each
    call: an index out of x is refused before the C function reads it; an
    empty array passes; a strided view is read as it is."""
    x = np.arange(10.0)
    idx = np.array([0, 9, 3], np.int32)
    assert arr.gather(x, idx) == 12.0
    assert arr.gather(x, idx[::-2]) == 3.0
    assert arr.gather(x, np.zeros(0, np.int32)) == 0.0
    for bad in ([0, 10], [-1, 2], [2**31 - 1]):
        with pytest.raises(ValueError, match=r"minval\(idx\) >= 0 && maxval\(idx\) < nx") as e:
            arr.gather(x, np.array(bad, np.int32))
        assert ("gather(): a check failed: minval(idx) = %d, maxval(idx) = %d, nx = 10 "
                % (min(bad), max(bad))) in str(e.value)
    signed = np.array([1, -10, 3], np.int64)
    assert arr.gather_abs(x, signed) == 0.0 + 9.0 + 2.0
    for bad in ([0], [11], [-11], [np.iinfo(np.int64).min]):
        with pytest.raises(ValueError, match=r"minabs\(idx\) >= 1"):
            arr.gather_abs(x, np.array(bad, np.int64))


def test_a_value_query_of_a_float_array_is_refused_at_bind(tmp_path):
    (tmp_path / "v.h").write_text("double first(int n, const double *x);\n")
    (tmp_path / "v.yml").write_text("annotate:\n  first:\n    n: len(x)\n"
                                    "    check: [\"minval(x) >= 0\"]\n")
    with pytest.raises(bindthem.InstantiateError,
                       match=r"v.yml:4:21: minval\(x\): 'x' is not an array of integers"):
        bindthem.parse_header(str(tmp_path / "v.h"), str(tmp_path / "v.yml"))


PIVOTS = r"""
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np, bindthem
lap = bindthem.load("liblapacke.so.3", sys.argv[1], sys.argv[2])
rng = np.random.default_rng(3)
n = 5
a = rng.standard_normal((n, n)) + n * np.eye(n)
m = np.random.default_rng(1).standard_normal((n, n))
s = m + m.T
s[0, 0] = s[1, 1] = 0.0  # 2x2 pivots: negative entries in sytrf's ipiv
b = rng.standard_normal((n, 2))
lu = a.copy(); piv = lap.LAPACKE_dgetrf(lu)
x = b.copy(); lap.LAPACKE_dgetrs("N", lu, piv, x); assert np.allclose(a @ x, b)
ld = s.copy(); spiv = lap.LAPACKE_dsytrf("U", ld)
assert (spiv < 0).any(), spiv
y = b.copy(); lap.LAPACKE_dsytrs("U", ld, spiv, y); assert np.allclose(s @ y, b)
refused = 0
for bad in ([0] * n, [1, 2, 3, 4, n + 1], [1, 2, 3, 4, 2**31 - 1], [-1, 2, 3, 4, 5]):
    for f, args in ((lap.LAPACKE_dgetrs, ("N", lu)), (lap.LAPACKE_dgetri, (lu.copy(),)),
                    (lap.LAPACKE_dsytrs, ("U", ld)), (lap.LAPACKE_dsytri, ("U", ld.copy()))):
        p = np.array(bad, piv.dtype)
        signed = "sy" in f.__name__
        if signed and bad[0] == -1:
            continue  # a negative pivot is a 2x2 block's in the signed family
        try:
            f(*args, p, b.copy()) if "trs" in f.__name__ else f(*args, p)
        except ValueError as e:
            assert "a check failed" in str(e) and "ipiv" in str(e), e
            refused += 1
print("refused", refused)
"""


def test_lapack_pivots_out_of_the_matrix_are_refused(lapack):
    """LAPACK swaps row k with row ipiv[k] unchecked: a pivot of 0, past n
    or negative (where LU's are rows) wrote outside the matrix and killed
    the interpreter. Every one is refused before the call, in ?getrs,
    ?getri, ?sytrs and ?sytri; a subprocess, should one still crash."""
    r = subprocess.run([sys.executable, "-c", PIVOTS, LAPACKE_H,
                        os.path.join(ROOT, "examples", "c-apis", "lapacke.yml")],
                       capture_output=True, text=True, timeout=300, env=python_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["refused", str(4 * 3 + 2)], r.stdout


def test_status(arr):
    assert arr.divide(np.array([2.0, 4.0]), 2.0).tolist() == [1.0, 2.0]
    with pytest.raises(bindthem.StatusError) as e:
        arr.divide(np.array([2.0]), 0.0)
    assert e.value.status == -1 and e.value.function == "divide"


def test_void_pointer_with_a_type(arr):
    zz = np.array([1 + 1j, 2 - 3j])
    arr.cscale(zz, 2.0)
    assert zz.tolist() == [2 + 2j, 4 - 6j]
    with pytest.raises(TypeError):
        arr.cscale(np.ones(2), 2.0)  # float64 is not complex128: dtypes match exactly


def test_annotate_alone_binds_every_function(arr):
    assert arr.plain_add(2, 3) == 5
    assert "plain_add" in arr.__all__


def test_cpp_references(tmp_path):
    if shutil.which(CXX) is None:
        pytest.skip("needs %s" % CXX)
    (tmp_path / "ref.hpp").write_text(REF_HPP)
    (tmp_path / "ref.cpp").write_text(REF_CPP)
    (tmp_path / "ref.yml").write_text("annotate:\n  bump:\n    check: [by >= 0]\n")
    lib = str(tmp_path / "libref.so")
    run([CXX, "-shared", "-fPIC", "-O1", str(tmp_path / "ref.cpp"), "-o", lib])
    ref = load_quietly(lib, str(tmp_path / "ref.hpp"), str(tmp_path / "ref.yml"))
    assert ref.twice(3.5) == 7.0
    assert ref.bump(5, 2) == (5, 7)
    with pytest.raises(ValueError, match="by >= 0"):
        ref.bump(5, -1)


def test_stubs_say_what_annotated_calls_return(arr, tmp_path):
    """The stub's parameters are the call's (hidden ones absent) and its
    return is what the call returns: the out arrays and scalars, a tuple of
    several, None for an in-place function (the metadata's "results")."""
    (tmp_path / "arr.h").write_text(ARR_H)
    (tmp_path / "arr.yml").write_text(ARR_YML)
    out = tmp_path / "arr.pyi"
    r = subprocess.run([sys.executable, "-m", "bindthem.stubs", "-i", str(tmp_path / "arr.yml"),
                        str(tmp_path / "arr.h"), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    stub = out.read_text()
    f64 = "numpy.typing.NDArray[numpy.float64]"
    assert "def refine(x: %s) -> %s:" % (f64, f64) in stub
    assert "def minmax(x: %s) -> tuple[float, float]:" % f64 in stub
    assert "def sum_n(x: %s) -> float:" % f64 in stub
    assert re.search(r"def add_to\(\s*a: %s,\s*b: %s,?\s*\) -> None:" % (re.escape(f64),
                                                                       re.escape(f64)), stub)
    # the runtime agrees with the stub
    x = np.array([3.0, -1.0, 2.0])
    assert arr.minmax(x) == (-1.0, 3.0)
    assert isinstance(arr.refine(x), np.ndarray) and arr.add_to(x, x.copy()) is None


FFTW_H = "/usr/include/fftw3.h"
FFTW_YML = """\
annotate:
  fftw_plan_dft_r2c_1d:
    n: len(in)
    out: {intent: out, shape: ["n / 2 + 1"]}
"""


def test_fftw_plan_keeps_its_arrays(tmp_path):
    """A returned handle (an FFTW plan) with an out array: the plan keeps the
    arrays it points to alive; an array that would need a copy is refused
    (the plan would keep the copy's pointer)."""
    if not os.path.exists(FFTW_H):
        pytest.skip("needs libfftw3-dev")
    (tmp_path / "fftw.yml").write_text(FFTW_YML)
    f = load_quietly("libfftw3.so.3", FFTW_H, str(tmp_path / "fftw.yml"),
                     handles={"fftw_plan": "fftw_destroy_plan"})
    assert list(inspect.signature(f.fftw_plan_dft_r2c_1d).parameters) == ["in_", "flags"]
    x = np.zeros(16)
    plan, out = f.fftw_plan_dft_r2c_1d(x, f.FFTW_ESTIMATE)
    assert isinstance(plan, bindthem.Handle) and out.shape == (9,) and out.dtype == C128
    rng = np.random.default_rng(5)
    x[:] = rng.random(16)
    f.fftw_execute(plan)
    np.testing.assert_allclose(out, np.fft.rfft(x), atol=1e-12)
    ref = weakref.ref(out)
    del out
    gc.collect()
    assert ref() is not None  # the plan holds it: fftw_execute writes there
    f.fftw_execute(plan)
    plan.close()
    del plan
    gc.collect()
    assert ref() is None
    with pytest.raises(ValueError, match="keeps its pointer"):
        f.fftw_plan_dft_r2c_1d(rng.random(32)[::2], f.FFTW_ESTIMATE)


def test_intent_in_outranks_a_missing_const_and_shapes_are_bounded(tmp_path):
    """`intent: in` on a `double *` the function only reads takes a read-only
    array and copies nothing back (the header's const, which a C++ name
    encodes, is left as declared); a shape of more axes than bindthem passes
    is an InstantiateError at its file:line:col, never a call past a buffer."""
    if shutil.which(CC) is None:
        pytest.skip("needs %s" % CC)
    (tmp_path / "first.h").write_text("double first(int n, double *x);\n")
    (tmp_path / "first.c").write_text("double first(int n, double *x) { return n ? x[0] : 0; }\n")
    (tmp_path / "first.yml").write_text("annotate:\n  first:\n    n: len(x)\n"
                                        "    x: {intent: in}\n")
    lib = str(tmp_path / "libfirst.so")
    run([CC, "-shared", "-fPIC", "-O1", str(tmp_path / "first.c"), "-o", lib])
    m = load_quietly(lib, str(tmp_path / "first.h"), str(tmp_path / "first.yml"))
    x = np.arange(3.0, 6.0)
    x.setflags(write=False)
    assert m.first(x) == 3.0 and m.first(x[::-1]) == 5.0
    assert m.first.stats["copy_backs"] == 0 and m.first.stats["layout_copies"] == 1
    axes = ", ".join(["n"] * 33)
    (tmp_path / "deep.yml").write_text("annotate:\n  first:\n    n: len(x)\n"
                                       "    x: {shape: [%s]}\n" % axes)
    with pytest.raises(bindthem.InstantiateError, match="33 axes; bindthem passes at most 32") as e:
        bindthem.load(lib, str(tmp_path / "first.h"), str(tmp_path / "deep.yml"))
    assert (e.value.lineno, e.value.colno) == (4, 5)
