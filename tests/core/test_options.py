"""Call options: the GIL policy (per Library, per Function, per call) and
copy_const, which no longer changes anything: every array that is not
C-contiguous or aligned is the call's copy (tests/core/test_unaligned.py)."""

import threading

import numpy as np
import pytest

from sources import kernel
from support import overlap, spin_intervals

import bindthem
from bindthem import _core


@pytest.fixture(scope="module")
def ck(c_lib):
    return {policy: bindthem.load(c_lib, kernel("ckernels.h"), gil=policy)
            for policy in ("auto", "release", "keep")}


def test_gil_policy_attribute(ck):
    assert ck["auto"].c_spin.gil == "auto"
    assert ck["release"].c_spin.gil == "release"
    assert ck["keep"].c_dot.gil == "keep"
    assert ck["auto"].c_spin.copy_const is False


def test_gil_release_per_library_runs_small_calls_in_parallel(ck):
    # 8 elements: "auto" keeps the GIL (see test_library), "release" drops it
    assert overlap(spin_intervals(ck["release"].c_spin, 8, 150))


def test_gil_keep_per_library_serialises_large_calls(ck):
    # 4096 elements: "auto" would release the GIL; "keep" never does
    assert not overlap(spin_intervals(ck["keep"].c_spin, 4096, 60))


def test_gil_per_function(c_lib):
    lib = bindthem.load(c_lib, kernel("ckernels.h"), gil={"c_spin": "release"})
    assert lib.c_spin.gil == "release" and lib.c_dot.gil == "auto"
    assert overlap(spin_intervals(lib.c_spin, 8, 150))


def test_gil_per_call(ck):
    spin = ck["auto"].c_spin
    assert overlap(spin_intervals(spin, 8, 150, lambda: bindthem.options(gil="release")))
    # and "keep" for one call beats a Library's "release"
    assert not overlap(spin_intervals(ck["release"].c_spin, 4096, 60,
                                      lambda: bindthem.options(gil="keep")))


def test_options_nest_and_restore():
    assert bindthem.options.current() == {"gil": None, "copy_const": None}
    with bindthem.options(gil="release"):
        assert bindthem.options.current() == {"gil": "release", "copy_const": None}
        with bindthem.options(copy_const=True):
            assert bindthem.options.current() == {"gil": "release", "copy_const": True}
            with bindthem.options(gil="keep", copy_const=False):
                assert bindthem.options.current() == {"gil": "keep", "copy_const": False}
            assert bindthem.options.current() == {"gil": "release", "copy_const": True}
    assert bindthem.options.current() == {"gil": None, "copy_const": None}
    seen = []
    with bindthem.options(gil="keep"):
        t = threading.Thread(target=lambda: seen.append(bindthem.options.current()))
        t.start()
        t.join()
    assert seen == [{"gil": None, "copy_const": None}]  # per thread


@pytest.mark.parametrize("kwargs, err, msg", [
    ({"gil": "always"}, ValueError, r"gil='always': expected 'auto' \(release the GIL when the "
     r"arrays hold %d elements or more\), 'release' \(always\) or 'keep' \(never\)"
     % _core.GIL_RELEASE_MIN_ELEMENTS),
    ({"gil": {"c_spin": True}}, ValueError, r"gil\['c_spin'\]=True: expected 'auto'"),
    ({"gil": {"nope": "keep"}}, ValueError, r"gil= names 'nope', which this Library does not "
     r"bind \(it binds c_add, c_dot, c_fill, c_odd, c_spin\)"),
    ({"copy_const": 1}, TypeError, r"copy_const=1: expected True or False"),
])
def test_bad_options(c_lib, kwargs, err, msg):
    with pytest.raises(err, match=msg) as e:
        bindthem.load(c_lib, kernel("ckernels.h"), **kwargs)
    # a refusal at load time is a BindError, and still the builtin it was
    assert isinstance(e.value, bindthem.BindError)
    assert type(e.value) is {ValueError: bindthem.BindValueError,
                             TypeError: bindthem.BindTypeError}[err]


def test_bad_per_call_options():
    with pytest.raises(ValueError, match="gil='sometimes'"):
        bindthem.options(gil="sometimes")
    with pytest.raises(TypeError, match="copy_const='yes': expected True, False or None"):
        bindthem.options(copy_const="yes")


# --- const copies ------------------------------------------------------------


def unaligned(values):
    values = np.asarray(values, dtype=np.float64)
    buf = np.zeros(values.nbytes + 1, np.uint8)
    a = np.frombuffer(buf.data, dtype=np.float64, count=len(values), offset=1)
    a[...] = values
    assert not a.flags.aligned
    return a


@pytest.fixture(scope="module")
def copying(abi_lib):
    return bindthem.load(abi_lib, kernel("abi.h"), kernel("abi.yml"), copy_const=True)


def strided(values):
    return np.repeat(np.asarray(values, dtype=np.float64), 2)[::2]


def test_strided_arrays_are_copies_with_or_without_copy_const(abi, copying):
    """Every array that is not C-contiguous is the call's C-contiguous copy
    (stats["layout_copies"]; a written one copied back): copy_const, which once
    opted in to it for const arrays, is accepted and changes nothing."""
    assert copying.sum_const.copy_const is True
    x = strided([1.5, 2.0, 4.0])
    for lib in (abi, copying):
        before = lib.sum_const.stats
        assert lib.sum_const(x) == 7.5
        assert lib.sum_const(x=x) == 7.5  # keywords take the general path: the same
        after = lib.sum_const.stats
        assert after["layout_copies"] == before["layout_copies"] + 2
        assert after["const_copies"] == before["const_copies"] == 0
    f = np.asfortranarray(np.arange(6.0).reshape(2, 3))  # x_size is shape[0]: 2 rows
    assert abi.sum_const(f) == np.ascontiguousarray(f).ravel()[:2].sum()
    assert list(x) == [1.5, 2.0, 4.0]  # the caller's array as it was
    for copy in (True, False):
        with bindthem.options(copy_const=copy):
            assert abi.sum_const(np.arange(6.0)[::2]) == 6.0
            assert copying.sum_const(strided([1.0, 2.0])) == 3.0
    # an unaligned one is the call's aligned copy
    u = unaligned([1.0, 2.0])
    stats = abi.sum_const.stats
    assert abi.sum_const(u) == 3.0
    assert abi.sum_const.stats == dict(stats, aligned_copies=stats["aligned_copies"] + 1)


def test_written_strided_arrays_are_copied_back(abi, copying):
    # errfunc(const I J[], T x[], T y[], double a): x and y are written, x[0] = a
    for lib in (abi, copying):
        x = np.zeros(6)
        assert lib.errfunc(np.arange(3, dtype=np.int32), x[::2], np.zeros(3), 1.0) == 3
        assert x.tolist() == [1.0, 0, 0, 0, 0, 0]
        x = np.zeros(2)
        assert lib.errfunc(np.arange(8, dtype=np.int32)[::2], x, np.zeros(2), 6.5) == 4
        assert x[0] == 6.5
        # an unaligned writable one: the kernel writes an aligned copy, copied back
        x = unaligned([0.0, 0.0])
        assert lib.errfunc(np.arange(8, dtype=np.int32)[::2], x, np.zeros(2), 2.5) == 4
        assert list(x) == [2.5, 0.0]
        # a read-only written one no copy makes right: refused
        ro = np.zeros(2)
        ro.setflags(write=False)
        with pytest.raises(ValueError, match=r"argument 'x' is a read-only array"):
            lib.errfunc(np.arange(3, dtype=np.int32), ro, np.zeros(2), 1.0)
