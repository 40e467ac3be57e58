"""DLPack 1.x against the mock driver (csrc/cuda/bt_cudapy_export.c and
bt_cudapy_args.c): DeviceArray.__dlpack__'s versioned capsule (its layout,
version and flags, max_version, dl_device and copy), the capsules'
destructors, read-only arrays (get_global(readonly=True), a READ_ONLY
tensor) at launches, and a launch's reading of foreign DLPack producers: the
versioned capsule asked for, the fallback for older producers, an unknown
major version refused, each producer's deleter called exactly once."""

import ctypes
import gc
import re
import sys

import numpy as np
import pytest
from cuda_support import (
    HEADER,
    YAML,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLTensor,
    module_text,
)

import bindthem
import bindthem.cuda as cuda

READ_ONLY, IS_COPIED = 1, 2


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def name_of(cap):
    return _api.PyCapsule_GetName(cap).decode()


def versioned(cap):
    """The DLManagedTensorVersioned a "dltensor_versioned" capsule holds."""
    assert name_of(cap) == "dltensor_versioned"
    return DLManagedTensorVersioned.from_address(
        _api.PyCapsule_GetPointer(cap, b"dltensor_versioned"))


def tensor_dict(t):
    shape = [t.shape[i] for i in range(t.ndim)]
    return {"device": (t.device.device_type, t.device.device_id), "ndim": t.ndim,
            "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes), "shape": shape,
            "strides": [t.strides[i] for i in range(t.ndim)] if t.strides else None,
            "byte_offset": t.byte_offset}


def call_deleter(mt):
    """What a consumer that took the capsule does when done: mt.deleter(&mt)."""
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(mt.deleter)(ctypes.addressof(mt))


class Producer:
    """A DLPack producer over mock device memory, each call a fresh managed
    tensor (its capsule has no destructor: the consumer must call the
    deleter), the deleter's calls counted. version None: an unversioned
    "dltensor" producer of before the array API's 2023.12 (no max_version
    keyword); else the version its "dltensor_versioned" tensors carry."""

    def __init__(self, ptr, shape, code=2, bits=32, flags=0, version=(1, 0), device_type=2):
        self.ptr, self.shape, self.code, self.bits = ptr, shape, code, bits
        self.flags, self.version, self.device_type = flags, version, device_type
        self.calls = []
        self.deleted = []
        self.live = {}
        self._deleter = DELETER(self._delete)  # kept alive: called from C

    def _delete(self, p):
        self.deleted.append(p)
        self.live.pop(p, None)

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def make(self):
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        mt = DLManagedTensor() if self.version is None else DLManagedTensorVersioned()
        t = mt.dl_tensor
        t.data = self.ptr
        t.device = DLDevice(self.device_type, 0)
        t.ndim = len(self.shape)
        t.dtype = DLDataType(self.code, self.bits, 1)
        t.shape = shape
        mt.deleter = ctypes.cast(self._deleter, ctypes.c_void_p)
        if self.version is not None:
            mt.version = DLPackVersion(*self.version)
            mt.flags = self.flags
        self.live[ctypes.addressof(mt)] = (mt, shape)
        name = b"dltensor" if self.version is None else b"dltensor_versioned"
        return _api.PyCapsule_New(ctypes.addressof(mt), name, None)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"stream": stream, "max_version": max_version})
        return self.make()


class OldProducer(Producer):
    """A producer that knows only __dlpack__(stream=None) (DLPack 0.x)."""

    def __init__(self, ptr, shape, **kw):
        super().__init__(ptr, shape, version=None, **kw)

    def __dlpack__(self, stream=None):
        self.calls.append({"stream": stream})
        return self.make()


class Via:
    """Hands on bindthem's own capsules, as a foreign producer: records what
    it was asked for."""

    def __init__(self, a):
        self.a = a
        self.asked = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.asked.append(max_version)
        cap = self.a.__dlpack__(stream=stream, max_version=max_version)
        self.names = getattr(self, "names", []) + [name_of(cap)]
        return cap

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.fixture(scope="module", name="glib")
def glib_fixture(mock):
    return cuda.load(module_text(extra=("global coef 16",)), HEADER, YAML)


# ---- export: DeviceArray.__dlpack__ ----

def test_versioned_capsule_layout(mock):
    d = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    cap = d.__dlpack__(max_version=(1, 0))
    mt = versioned(cap)
    assert (mt.version.major, mt.version.minor) == (1, 0)
    assert mt.flags == 0 and mt.manager_ctx and mt.deleter
    assert mt.dl_tensor.data == d.ptr
    assert tensor_dict(mt.dl_tensor) == {"device": (2, 0), "ndim": 2, "dtype": (2, 32, 1),
                                         "shape": [2, 3], "strides": [3, 1], "byte_offset": 0}
    # the version asked for, up to 1.1 (what bindthem knows); a newer major gets 1.1
    for asked, got in (((1, 1), (1, 1)), ((1, 7), (1, 1)), ((2, 0), (1, 1))):
        cap = d.__dlpack__(max_version=asked)
        mt = versioned(cap)
        assert (mt.version.major, mt.version.minor) == got
    # no max_version, or a 0.x one: the unversioned capsule, as before DLPack 1.0
    for kw in ({}, {"max_version": None}, {"max_version": (0, 8)}):
        cap = d.__dlpack__(**kw)
        assert name_of(cap) == "dltensor"
        t = DLManagedTensor.from_address(_api.PyCapsule_GetPointer(cap, b"dltensor")).dl_tensor
        assert t.data == d.ptr and tensor_dict(t)["shape"] == [2, 3]
    assert d.__dlpack_device__() == (2, 0)
    for bad in ((1,), [1, 0], (1, "0"), "1.0"):
        with pytest.raises(TypeError, match="max_version must be a tuple of two ints"):
            d.__dlpack__(max_version=bad)


def test_0d_and_empty_arrays(mock):
    for a in (np.array(5.0), np.zeros((0, 3), np.int32)):
        d = cuda.to_device(a)
        cap = d.__dlpack__(max_version=(1, 0))
        t = tensor_dict(versioned(cap).dl_tensor)
        assert t["ndim"] == a.ndim and t["shape"] == list(a.shape)


def _refs(o):
    gc.collect()
    return sys.getrefcount(o)


def test_capsule_destructor_calls_the_deleter_once(mock):
    d = cuda.to_device(np.ones(4, np.float32))
    base = _refs(d)
    for version, name, kind in (((1, 0), "dltensor_versioned", DLManagedTensorVersioned),
                                (None, "dltensor", DLManagedTensor)):
        cap = d.__dlpack__(max_version=version)
        assert name_of(cap) == name
        assert _refs(d) == base + 1  # manager_ctx holds the array
        del cap  # never consumed: the capsule's destructor calls the deleter
        assert _refs(d) == base
        # a consumer takes it: renames it used_..., and the capsule leaves the
        # tensor alone; the consumer's one deleter call releases it
        cap = d.__dlpack__(max_version=version)
        mt = kind.from_address(_api.PyCapsule_GetPointer(cap, name.encode()))
        assert _api.PyCapsule_SetName(cap, ("used_" + name).encode()) == 0
        del cap
        assert _refs(d) == base + 1
        call_deleter(mt)
        assert _refs(d) == base


def test_copy_on_the_device(mock):
    gc.collect()
    live = mock.mock_live_allocs()
    a = np.arange(4, dtype=np.float32)
    d = cuda.to_device(a)
    base = _refs(d)
    cap = d.__dlpack__(max_version=(1, 0), copy=True)
    mt = versioned(cap)
    assert mt.flags == IS_COPIED and mt.dl_tensor.data != d.ptr
    assert tensor_dict(mt.dl_tensor)["device"] == (2, 0)
    # mock device memory is host memory: the copy is done when __dlpack__ returns
    got = np.frombuffer(ctypes.string_at(mt.dl_tensor.data, 16), np.float32)
    np.testing.assert_array_equal(got, a)
    assert _refs(d) == base  # the capsule holds the copy, not the array
    assert mock.mock_live_allocs() == live + 2
    del cap, mt
    gc.collect()
    assert mock.mock_live_allocs() == live + 1  # the deleter freed the copy
    # copy=False and None never copy; dl_device naming the array's own device is accepted
    for kw in ({"copy": False}, {"copy": None}, {"dl_device": (2, 0)},
               {"dl_device": (2, 0), "copy": False}):
        cap = d.__dlpack__(max_version=(1, 0), **kw)
        mt = versioned(cap)
        assert mt.dl_tensor.data == d.ptr and mt.flags == 0, kw
    cap = d.__dlpack__(copy=True)  # an unversioned copy: no flags to say so
    assert name_of(cap) == "dltensor"
    assert DLManagedTensor.from_address(
        _api.PyCapsule_GetPointer(cap, b"dltensor")).dl_tensor.data != d.ptr


def test_copy_to_the_host(clean):
    a = np.arange(6, dtype=np.float64).reshape(3, 2)
    d = cuda.to_device(np.zeros_like(a))
    d.copy_from(a, stream=cuda.Stream(77))  # a pending write: the host copy comes after it
    clean.mock_clear_logs()
    cap = d.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True)
    assert clean.mock_sync_log().decode() == "stream 77\n"  # copied there, and waited for
    assert d.stream is None  # done: nothing pending
    mt = versioned(cap)
    assert mt.flags == IS_COPIED
    t = tensor_dict(mt.dl_tensor)
    assert t["device"] == (1, 0) and t["shape"] == [3, 2] and t["dtype"] == (2, 64, 1)
    np.testing.assert_array_equal(
        np.frombuffer(ctypes.string_at(mt.dl_tensor.data, 48), np.float64).reshape(3, 2), a)
    del cap, mt
    # NumPy, a DLPack 1.x consumer, asks the same
    h = np.from_dlpack(d, device="cpu", copy=True)
    np.testing.assert_array_equal(h, a)
    assert h.flags.writeable
    h[0, 0] = 99  # the capsule's own memory, not the device's
    np.testing.assert_array_equal(d.copy_to_host(), a)


def test_dl_device_and_copy_refusals(mock):
    d = cuda.to_device(np.ones(4, np.float32))
    with pytest.raises(BufferError, match=r"dl_device=\(1, 0\) \(the host\) needs copy=True, not "
                                          r"copy=None: bindthem copies device memory to the host "
                                          r"only when asked to"):
        d.__dlpack__(max_version=(1, 0), dl_device=(1, 0))
    with pytest.raises(BufferError, match=r"needs copy=True, not copy=False"):
        d.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    with pytest.raises(BufferError, match=r"stream must be None with dl_device=\(1, 0\)"):
        d.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True, stream=1)
    for dev in ((2, 1), (7, 0), (13, 0), (1, 1)):
        with pytest.raises(BufferError, match=r"dl_device=%s is not supported: this array "
                                              r"exports to its own device, \(2, 0\), or with "
                                              r"copy=True to the host, \(1, 0\)"
                                              % re.escape(repr(dev))):
            d.__dlpack__(max_version=(1, 0), dl_device=dev, copy=True)
    with pytest.raises(TypeError, match="dl_device must be a tuple of two ints"):
        d.__dlpack__(max_version=(1, 0), dl_device="cpu")


def test_read_only_global(glib, clean):
    g = cuda.get_global(glib, "coef", np.float32, readonly=True)
    assert g.readonly and g.base is bindthem.info(glib).handle
    assert not cuda.get_global(glib, "coef", np.float32).readonly
    assert not cuda.to_device(np.ones(2)).readonly
    assert g.__cuda_array_interface__["data"] == (g.ptr, True)
    g.copy_from(np.array([1, 2, 3, 4], np.float32))  # the host sets a __constant__
    cap = g.__dlpack__(max_version=(1, 0))
    mt = versioned(cap)
    assert mt.flags == READ_ONLY and mt.dl_tensor.data == g.ptr
    # an unversioned capsule cannot say read-only: refused, as NumPy does
    with pytest.raises(BufferError, match=r"the array is read-only, which an unversioned DLPack "
                                          r"capsule cannot say: the consumer must pass "
                                          r"max_version=\(1, 0\) or newer"):
        g.__dlpack__()
    # a copy is the consumer's to write
    cap = g.__dlpack__(max_version=(1, 0), copy=True)
    mt = versioned(cap)
    assert mt.flags == IS_COPIED and mt.dl_tensor.data != g.ptr
    assert name_of(g.__dlpack__(copy=True)) == "dltensor"
    c = g.copy()
    assert not c.readonly
    np.testing.assert_array_equal(c.copy_to_host(), [1, 2, 3, 4])


def test_read_only_device_array_at_a_launch(glib, clean):
    g = cuda.get_global(glib, "coef", np.float32, readonly=True)
    g.copy_from(np.array([1, 2, 3, 4], np.float32))
    y = cuda.to_device(np.ones(4, np.float32))
    glib.axpy[1, 4](2.0, g, y)  # x is const: a read-only array is fine
    np.testing.assert_array_equal(y.copy_to_host(), [3, 5, 7, 9])
    with pytest.raises(ValueError, match=r"^axpy\(\): argument 'y' is a read-only array, but the "
                                         r"kernel writes to it \(the parameter is not const\); it "
                                         r"came read-only via DeviceArray, and bindthem never "
                                         r"copies device memory: pass a writable copy of it$"):
        glib.axpy[1, 4](2.0, y, g)
    glib.axpy[1, 4](2.0, y, g.copy())  # the remedy


# ---- import: a launch's DLPack arguments ----

def test_versioned_round_trip_through_a_launch(lib, clean):
    a = np.arange(4, dtype=np.float32)
    x, y = cuda.to_device(a), cuda.to_device(np.ones(4, np.float32))
    vx, vy = Via(x), Via(y)
    bx, by = _refs(x), _refs(y)
    lib.axpy[1, 4](3.0, vx, vy)
    np.testing.assert_array_equal(y.copy_to_host(), 3 * a + 1)
    assert vx.asked == vy.asked == [(1, 1)]  # DLPack 1.x asked for ...
    assert vx.names == vy.names == ["dltensor_versioned"]  # ... and given
    assert (_refs(x), _refs(y)) == (bx, by)  # each deleter ran, once


def test_foreign_versioned_producer(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    y = Producer(p, (4,), version=(1, 1))
    lib.scale[1, 4](2, y)
    assert y.calls == [{"stream": 1, "max_version": (1, 1)}]
    assert len(y.deleted) == 1 and not y.live  # taken and released after the launch
    lib.scale[1, 4, 0, cuda.PER_THREAD](2, y)
    assert y.calls[-1] == {"stream": 2, "max_version": (1, 1)}
    assert len(y.deleted) == 2
    mock.mock_free(p)


def test_read_only_tensor_refused_for_a_non_const_parameter(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    ro = Producer(p, (4,), flags=READ_ONLY)
    rw = Producer(p + 32, (4,))
    lib.axpy[1, 4](1.0, ro, rw)  # x is const: accepted
    assert len(ro.deleted) == len(rw.deleted) == 1
    with pytest.raises(ValueError, match=r"^axpy\(\): argument 'y' is a read-only array, but the "
                                         r"kernel writes to it \(the parameter is not const\); it "
                                         r"came read-only via DLPack, and bindthem never copies "
                                         r"device memory: pass a writable copy of it$"):
        lib.axpy[1, 4](1.0, rw, ro)
    assert len(ro.deleted) == len(rw.deleted) == 2  # released after a refusal too
    # IS_COPIED alone is no reason to refuse: bindthem asked for no copy
    lib.axpy[1, 4](1.0, rw, Producer(p, (4,), flags=IS_COPIED))
    mock.mock_free(p)


def test_old_producers_fall_back(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    old = OldProducer(p, (4,))
    lib.scale[1, 4](2, old)
    # max_version=(1, 1) was refused (TypeError: no such keyword), then stream= alone
    assert old.calls == [{"stream": 1}]
    assert len(old.deleted) == 1 and not old.live  # "dltensor" renamed, its deleter called

    class Oldest(OldProducer):
        def __dlpack__(self):  # not even stream=
            self.calls.append({})
            return self.make()

    oldest = Oldest(p, (4,))
    lib.scale[1, 4](2, oldest)
    assert oldest.calls == [{}] and len(oldest.deleted) == 1

    class Asked(OldProducer):
        def __dlpack__(self, stream=None, **kw):
            self.calls.append(dict(kw, stream=stream))
            if kw:
                raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
            return self.make()

    asked = Asked(p, (4,))
    lib.scale[1, 4](2, asked)
    assert asked.calls == [{"stream": 1, "max_version": (1, 1)}, {"stream": 1}]
    assert len(asked.deleted) == 1
    mock.mock_free(p)


def test_unknown_major_version_refused(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    v2 = Producer(p, (4,), version=(2, 3))
    with pytest.raises(TypeError, match=r"^scale\(\): argument 'y': __dlpack__\(\) gave a DLPack "
                                        r"2\.3 tensor; bindthem reads DLPack 1\.x \(major version "
                                        r"1\), the newest it knows$"):
        lib.scale[1, 4](2, v2)
    assert len(v2.deleted) == 1 and not v2.live  # its deleter called, once
    assert clean.mock_launch_log().decode() == ""
    mock.mock_free(p)


def test_not_a_dlpack_capsule(lib, clean, mock):
    class Bad:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kw):
            return _api.PyCapsule_New(8, b"something", None)

    with pytest.raises(TypeError, match=r"__dlpack__\(\) did not return a \"dltensor_versioned\" "
                                        r"or \"dltensor\" capsule"):
        lib.scale[1, 4](2, Bad())


def test_read_only_export_round_trip(glib, clean):
    # bindthem's READ_ONLY capsule, read back by bindthem: const accepted, non-const refused
    g = cuda.get_global(glib, "coef", np.float32, readonly=True)
    g.copy_from(np.array([1, 2, 3, 4], np.float32))
    y = cuda.to_device(np.zeros(4, np.float32))
    vg = Via(g)
    base = _refs(g)
    glib.axpy[1, 4](1.0, vg, Via(y))
    np.testing.assert_array_equal(y.copy_to_host(), [1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"argument 'y' is a read-only array, .* via DLPack"):
        glib.axpy[1, 4](1.0, Via(y), vg)
    assert vg.names == ["dltensor_versioned"] * 2
    assert _refs(g) == base


def test_managed_memory_is_exported_as_cuda_managed(lib, clean):
    """kDLCUDAManaged (13) for cuda.managed_empty's memory, in
    __dlpack_device__ and the capsule; such a tensor is taken back as an
    argument (a launch reads DLPack's managed memory too)."""
    a = cuda.managed_zeros(4, np.float32)
    assert a.__dlpack_device__() == (13, 0)
    assert cuda.empty(4, np.float32).__dlpack_device__() == (2, 0)
    t = versioned(a.__dlpack__(max_version=(1, 0))).dl_tensor
    assert tensor_dict(t)["device"] == (13, 0) and t.data == a.ptr
    assert a.__dlpack__(dl_device=(13, 0)) is not None
    with pytest.raises(BufferError):
        a.__dlpack__(dl_device=(2, 0))
    x = cuda.to_device(np.arange(4, dtype=np.float32))
    lib.axpy[1, 4](2.0, x, a)
    np.testing.assert_array_equal(a.host_view(), 2 * np.arange(4))
