"""The quick call of annotated functions (csrc/py/bt_note_quick.h): the
conventions CBLAS's level 1 uses (n hidden as len(x), the increments as
stride(x), y's shape stated as [n], a scalar by value or by pointer) are
compiled at bind time, and a call that fits them takes one pass and the direct
call: Function._quick_calls counts those calls (with the last call's argument
types, before the dispatcher, as the dialect's fused entry: not counted in
Function._general_calls). Whatever the quick call cannot
take as it is (an unaligned or oddly strided view, a wrong shape, a read-only
array the function writes, libffi forced) goes the general way from the start,
with its copies, results and messages unchanged. benchmarks/bench_blas.py
measures what the quick call costs."""

import os

import numpy as np
import pytest

from sources import ROOT, system_library

from bindthem import _core

CBLAS_H = "/usr/include/x86_64-linux-gnu/cblas.h"


@pytest.fixture(scope="module")
def blas():
    return system_library("libopenblas.so.0", CBLAS_H,
                          os.path.join(ROOT, "examples", "c-apis", "cblas.yml"), "libopenblas-dev")


def counts(f):
    return f._quick_calls, f._general_calls


def unaligned(n):
    """n float64s at an odd address (contiguous, not aligned)."""
    buf = np.zeros(8 * n + 1, np.uint8)
    a = buf[1:].view(np.float64)
    a[:] = np.arange(1.0, n + 1)
    assert not a.flags.aligned
    return a


def test_ddot_and_daxpy_take_the_quick_call(blas):
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(8), rng.standard_normal(8)
    ddot, daxpy = blas.cblas_ddot, blas.cblas_daxpy
    q, g = counts(ddot)
    assert ddot(x, y) == pytest.approx(x @ y, rel=1e-12)
    # the first call: the dispatcher chose the overload, then the quick call took it
    assert counts(ddot) == (q + 1, g + 1)
    q, g = counts(ddot)
    for _ in range(5):
        assert ddot(x, y) == pytest.approx(x @ y, rel=1e-12)
    # strided and reversed views: BLAS's increments, negative ones with the lowest address
    assert ddot(x[::2], y[::-2]) == pytest.approx(x[::2] @ y[::-2], rel=1e-12)
    assert ddot(x[:0], y[:0]) == 0.0 and ddot(x[:1], y[3:4]) == pytest.approx(x[0] * y[3])
    assert counts(ddot) == (q + 8, g)  # every call the quick one, none the general path

    yy, want = y.copy(), y + 0.5 * x
    q = daxpy._quick_calls
    assert daxpy(0.5, x, yy) is None
    np.testing.assert_allclose(yy, want, rtol=1e-13)
    z = np.zeros(16)
    daxpy(2.0, x[::-1], z[::2])
    np.testing.assert_allclose(z[::2], 2.0 * x[::-1], rtol=1e-13)
    assert (z[1::2] == 0).all()
    assert daxpy._quick_calls == q + 2
    # an int alpha (another key than the last call's; the quick conversion leaves it to
    # the general path's), then arrays large enough to release the GIL
    z = np.zeros(8)
    daxpy(3, x, z)
    np.testing.assert_allclose(z, 3.0 * x, rtol=1e-13)
    big_x, big_y = rng.standard_normal(5000), rng.standard_normal(5000)
    q = ddot._quick_calls
    assert ddot(big_x, big_y) == pytest.approx(big_x @ big_y, rel=1e-10)
    assert ddot._quick_calls == q + 1


def test_what_it_declines_goes_the_general_way(blas):
    ddot, daxpy = blas.cblas_ddot, blas.cblas_daxpy
    x, y = np.arange(1.0, 9.0), np.ones(8)
    q, g = counts(ddot)
    copies = ddot.stats["layout_copies"]
    # an unaligned array, a stride of 0 over 8 elements: copied by the general path
    assert ddot(unaligned(8), y) == pytest.approx(36.0)
    assert ddot(np.broadcast_to(np.float64(2.0), (8,)), y) == pytest.approx(16.0)
    assert ddot.stats["layout_copies"] == copies + 2
    # its errors, as the general path raises them
    with pytest.raises(ValueError, match=r"'y' must have shape \(8,\), .*it has \(3,\)"):
        ddot(x, y[:3])
    with pytest.raises(ValueError, match="'x' must be a 1-D array"):
        ddot(x.reshape(2, 4), y)
    ro = y.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="'y' is read-only, and the function writes it"):
        daxpy(1.0, x, ro)
    assert counts(ddot) == (q, g + 4)
    # libffi forced: the general path
    old = _core.force_ffi(True)
    try:
        assert ddot(x, y) == pytest.approx(36.0)
    finally:
        _core.force_ffi(old)
    assert counts(ddot) == (q, g + 5)
    assert ddot(x, y) == pytest.approx(36.0) and ddot._quick_calls == q + 1


def test_which_conventions_have_a_quick_call(blas):
    x = np.arange(1.0, 5.0)
    z = (np.arange(4) + 1j).astype(np.complex128)
    zz = z.copy()
    # a complex alpha by pointer (`const void *alpha`, type: complex128)
    q = blas.cblas_zaxpy._quick_calls
    blas.cblas_zaxpy(2j, z, zz)
    np.testing.assert_allclose(zz, z + 2j * z)
    assert blas.cblas_zaxpy._quick_calls == q + 1
    # an integer return (idamax), a float one (dnrm2)
    assert blas.cblas_idamax(x) == 3 and blas.cblas_idamax._quick_calls >= 1
    assert blas.cblas_dnrm2(x) == pytest.approx(np.linalg.norm(x))
    assert blas.cblas_dnrm2._quick_calls >= 1
    # a leading dimension and a layout (gemv): the general path only
    a, y = np.ones((3, 4)), np.zeros(3)
    q, g = counts(blas.cblas_dgemv)
    blas.cblas_dgemv(blas.CblasNoTrans, 1.0, a, x, 0.0, y)
    np.testing.assert_allclose(y, a @ x)
    assert counts(blas.cblas_dgemv) == (q, g + 1)
