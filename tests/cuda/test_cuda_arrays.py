"""Device arrays against the mock driver (csrc/cuda/bt_cudapy_array.c and its
_export, _memory and _args files): array arguments from DeviceArray,
__cuda_array_interface__ and DLPack, pointer checks, to_device round trips,
a DeviceArray's limits, every dtype of the table through CAI and DLPack."""

import gc
import struct

import numpy as np
import pytest
from cuda_support import PRELUDE, FakeCAI, FakeDLPack, last_launch, run_py

import bindthem.cuda as cuda
from bindthem import _core

# ---- array arguments ----

def test_host_array_refused(lib):
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"axpy\(\): argument 'x' is an array in host memory; "
                                        r"CUDA kernels take device arrays: pass "
                                        r"bindthem.cuda.to_device\(x\)"):
        lib.axpy[1, 1](1.0, np.ones(3, dtype=np.float32), y)


def test_wrong_dtype(lib):
    x = cuda.to_device(np.ones(3, dtype=np.int64))
    with pytest.raises(TypeError) as ei:
        lib.scale[1, 1](1, x)
    assert str(ei.value).startswith(
        "scale(): argument 'y' (position 2) got bindthem.cuda.DeviceArray (a device array of "
        "int64, via DeviceArray), expected float32 device array or float64 device array or "
        "int32 device array (given the arguments before it).\nThe overloads are:\n    "
        "void scale<float>(")


def test_cai_arrays(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    x = FakeCAI(p, (4,), "<f4", readonly=True)
    y = FakeCAI(p + 16, (2, 2), "<f4")
    lib.axpy[1, 4](1.0, x, y)  # a read-only x is fine: const
    a, xp, xs, yp, ys = last_launch(clean)["params"]
    assert struct.unpack("<Q", bytes.fromhex(xp)) == (p,)
    assert struct.unpack("<Q", bytes.fromhex(yp)) == (p + 16,)
    assert struct.unpack("<i", bytes.fromhex(ys)) == (2,)  # shape[0]
    with pytest.raises(ValueError, match=r"argument 'y' is a read-only array, but the kernel "
                                         r"writes to it"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (4,), "<f4", readonly=True))
    with pytest.raises(ValueError, match=r"argument 'y' must be a C-contiguous array \(this one, "
                                         r"via __cuda_array_interface__, is strided\)"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f4", strides=(8,)))
    lib.axpy[1, 4](1.0, x, FakeCAI(p, (2, 1), "<f4", strides=(4, 99)))  # size-1 dims: any stride
    lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f4", version=2))
    with pytest.raises(TypeError, match=r"got FakeCAI \(a device array of float64, via "
                                        r"__cuda_array_interface__\), expected float32 device"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f8"))
    with pytest.raises(TypeError, match="an unsupported dtype"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), ">f4"))
    mock.mock_free(p)


def test_cai_stream_is_waited_on(lib, clean, mock):
    p = mock.mock_malloc(16, 0, 0)
    lib.scale[1, 1](1, FakeCAI(p, (4,), "<f4", stream=77))
    # an event recorded on 77 that the launch's (legacy) stream waits for:
    # no host synchronization
    assert clean.mock_sync_log().decode() == "wait 1 77\n"
    clean.mock_clear_logs()
    lib.scale[1, 1, 0, cuda.Stream(77)](1, FakeCAI(p, (4,), "<f4", stream=77))
    lib.scale[1, 1](1, FakeCAI(p, (4,), "<f4", stream=1))  # legacy, as the launch
    assert clean.mock_sync_log().decode() == ""
    mock.mock_free(p)


def test_pointer_checks(lib, mock):
    host = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"argument 'y' \(via __cuda_array_interface__\) points "
                                         r"at 0x[0-9a-f]+, which is not memory CUDA knows of "
                                         r"\(host memory\?\); kernels need device memory: copy "
                                         r"it with bindthem.cuda.to_device\(\)"):
        lib.scale[1, 1](1, FakeCAI(host.ctypes.data, (4,), "<f4"))
    p0 = mock.mock_malloc(16, 0, 0)
    p1 = mock.mock_malloc(16, 1, 0)
    with pytest.raises(ValueError, match=r"argument 'y' is on device 1, but 'x' is on device 0 "
                                         r"\(Mock GPU 0\); all arrays of a launch must be on one "
                                         r"device"):
        lib.axpy[1, 1](1.0, FakeCAI(p0, (4,), "<f4"), FakeCAI(p1, (4,), "<f4"))
    managed = mock.mock_malloc(16, 1, 1)
    lib.axpy[1, 1](1.0, FakeCAI(p0, (4,), "<f4"), FakeCAI(managed, (4,), "<f4"))
    lib.scale[1, 1](1, FakeCAI(0, (0,), "<f4"))  # empty: no pointer to check
    for p in (p0, p1, managed):
        mock.mock_free(p)


def test_dlpack(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    y = FakeDLPack(p, (3,), 2, 32, byte_offset=8)  # float32
    lib.scale[1, 4](2, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5scaleIfEvT_PS0_l"
    assert struct.unpack("<Q", bytes.fromhex(rec["params"][1])) == (p + 8,)
    assert struct.unpack("<q", bytes.fromhex(rec["params"][2])) == (3,)
    lib.scale[1, 4, 0, cuda.PER_THREAD](2, y)
    assert y.streams == [1, 2]  # the launch's stream, 1 for the legacy default
    lib.scale[1, 4](2, FakeDLPack(p, (3,), 0, 32))  # int32
    assert last_launch(clean)["kernel"] == "_Z5scaleIiEvT_PS0_l"
    lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=13))  # CUDA managed
    with pytest.raises(TypeError, match="argument 'y' is an array in host memory"):
        lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=1))
    with pytest.raises(TypeError, match="a DLPack array on device \\(7, 0\\), not a CUDA device"):
        lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=7))
    mock.mock_free(p)


def test_to_device_round_trip(mock):
    gc.collect()  # arrays of earlier tests that tracebacks kept alive
    live = mock.mock_live_allocs()
    for a in (np.arange(12, dtype=np.float64).reshape(3, 4), np.array([1, 2, 3], np.int8),
              np.zeros(0, np.float32), np.array(5.0), np.arange(10)[::2],
              np.array([1 + 2j], np.complex64), np.array([True, False])):
        d = cuda.to_device(a)
        assert d.shape == a.shape and d.dtype == a.dtype and d.size == a.size
        assert d.nbytes == a.nbytes and d.ndim == a.ndim and d.device == 0
        back = d.copy_to_host()
        np.testing.assert_array_equal(back, a)
        assert back.flags.c_contiguous and back.flags.writeable
        cai = d.__cuda_array_interface__
        assert cai == {"shape": a.shape, "typestr": a.dtype.str, "data": (d.ptr, False),
                       "version": 3, "strides": None, "stream": None}
    del d
    assert mock.mock_live_allocs() == live  # freed on dealloc
    e = cuda.empty((2, 3), np.int32)
    assert e.shape == (2, 3) and e.dtype == np.int32 and len(e) == 2
    assert repr(e) == "<bindthem.cuda.DeviceArray int32 (2, 3) on device 0>"
    with pytest.raises(TypeError, match="Python objects"):
        cuda.to_device(np.array([object()]))
    with pytest.raises(TypeError, match="cannot create"):
        type(e)()


DEVICE_ARRAY_LIMITS = PRELUDE + """
    cuda.driver()
    maxdims = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
    def refused(exc, f, *a, **kw):
        try:
            f(*a, **kw)
        except exc as e:
            print(type(e).__name__, e)
        else:
            print("accepted", a, kw)
    # at most NPY_MAXDIMS dimensions: copy_to_host sizes its buffer by it
    refused(ValueError, cuda.empty, (1,) * (maxdims + 1), np.float32)
    refused(ValueError, cuda.empty, (1,) * 200, np.float32)
    d = cuda.empty((1,) * maxdims, np.float32)
    assert d.copy_to_host().shape == (1,) * maxdims
    # nbytes must not wrap
    refused(ValueError, cuda.empty, (2 ** 62,), np.complex128)
    refused(ValueError, cuda.empty, (2 ** 31, 2 ** 31, 4), np.float64)
    refused(ValueError, cuda.empty, (3, -1))
    refused(TypeError, cuda.empty, (2.0,))
    e = cuda.empty((np.int64(2), np.uint8(3)), np.int32)
    assert e.shape == (2, 3) and all(type(n) is int for n in e.shape) and e.nbytes == 24
    # device ordinals do not wrap onto device 0
    x = np.arange(3.0)
    refused(ValueError, cuda.to_device, x, device=2 ** 32)
    refused(ValueError, cuda.to_device, x, device=2 ** 64 + 1)
    refused(ValueError, cuda.empty, 3, device=-1)
    refused(TypeError, cuda.to_device, x, device=True)
    refused(TypeError, cuda.to_device, x, device=0.0)
    refused(cuda.CudaError, cuda.to_device, x, device=5)
    assert cuda.to_device(x, device=np.int64(0)).device == 0
    print("done")
"""


def test_device_array_limits(mock_path):
    # a regression here overflowed a stack buffer: run it in a subprocess
    rc, out = run_py(DEVICE_ARRAY_LIMITS, mock_path)
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[-1] == "done" and not any(line.startswith("accepted") for line in lines), out
    assert lines[:-1] == [
        "ValueError shape has %d dimensions; arrays have at most %d" % (n, MAXDIMS)
        for n in (MAXDIMS + 1, 200)] + [
        "ValueError array is too big: 4611686018427387904 elements of 16 bytes",
        "ValueError array is too big",
        "ValueError negative dimensions are not allowed",
        "TypeError 'float' object cannot be interpreted as an integer",
        "ValueError device=4294967296 is not a device ordinal (0 to 63)",
        "ValueError device=18446744073709551617 is not a device ordinal (0 to 63)",
        "ValueError device=-1 is not a device ordinal (0 to 63)",
        "TypeError device must be an int (a device ordinal), not bool",
        "TypeError device must be an int (a device ordinal), not float",
        "CudaError there is no CUDA device 5 (1 device)"], out


MAXDIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32


# ---- one Library class; pickling ----

def test_every_table_dtype_through_cai_and_dlpack(lib, clean, mock):
    """Each row of the dtype table, as a __cuda_array_interface__ typestr and
    as a DLPack code, reads as that dtype: scale<float>/<double>/<int> take
    theirs, any other is named in the no-match message by its dtype (the
    first row of its kind, size and DLPack code: int64 and longlong are
    one). bfloat16 has no typestr of its own ("<V2" is any 2-byte record):
    only DLPack carries it; long double has no DLPack code (dlpack -1): only
    its typestr carries it."""
    rows = [t for t in _core.scalar_types() if t["c"] != "void"]
    canonical = {(t["kind"], t["size"], t["dlpack"]): t["numpy"] for t in reversed(rows)}
    kernels = {"float32": "_Z5scaleIfEvT_PS0_l", "float64": "_Z5scaleIdEvT_PS0_l",
               "int32": "_Z5scaleIiEvT_PS0_l"}
    p = mock.mock_malloc(64, 0, 0)
    for t in rows:
        name = canonical[(t["kind"], t["size"], t["dlpack"])]
        cai = FakeCAI(p, (3,), t["typestr"])
        dlpack = (FakeDLPack(p, (3,), t["dlpack"], t["size"] * 8),) if t["dlpack"] >= 0 else ()
        for arr in (cai,) + dlpack:  # long double has no DLPack code
            if arr is cai and t["npy_type"] < 0:
                with pytest.raises(TypeError, match=r"\(a device array of an unsupported "
                                                    r"dtype, via __cuda_array_interface__\)"):
                    lib.scale[1, 4](2, arr)
            elif name in kernels:
                lib.scale[1, 4](2, arr)
                assert last_launch(clean)["kernel"] == kernels[name], (t, arr)
            else:
                with pytest.raises(TypeError, match=r"\(a device array of %s, via " % name):
                    lib.scale[1, 4](2, arr)
    mock.mock_free(p)
