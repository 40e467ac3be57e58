"""DLPack 1.x on a real GPU (tests/cuda/gpu/run_gpu_check.sh runs it with
test_gpu.py): DeviceArray's versioned capsule into CuPy and PyTorch
(``from_dlpack`` asks for max_version) and their tensors back into a
bindthem launch, which asks for (1, 1); the host copy of
``__dlpack__(dl_device=(1, 0), copy=True)`` after a pending write. Marked
`gpu`; skipped, as test_gpu.py is, without that build or a device, and a
library's tests without it ("CuPy not installed", "PyTorch not
installed"). tests/cuda/test_cuda_dlpack.py checks the protocol on the mock."""

import ctypes
import gc
import json
import sys

import numpy as np
import pytest
from test_gpu import MANIFEST, Driver, _cupy, _spin_cycles, _torch, pytestmark  # noqa: F401

import bindthem.cuda as cuda

_name = ctypes.pythonapi.PyCapsule_GetName
_name.restype = ctypes.c_char_p
_name.argtypes = [ctypes.py_object]
_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_pointer.restype = ctypes.c_void_p
_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@pytest.fixture(scope="module", name="lib")
def lib_fixture():
    with open(MANIFEST) as f:
        man = json.load(f)
    return cuda.load(man["module"], man["header"], man["instantiate"])


class Spy:
    """Hands a producer's capsules on, recording what the consumer asked for
    (max_version) and what it got (the capsule's name)."""

    def __init__(self, obj):
        self.obj = obj
        self.asked = []
        self.names = []

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        kw = {"stream": stream}
        for k, v in (("max_version", max_version), ("dl_device", dl_device), ("copy", copy)):
            if v is not None:  # an older producer knows stream= alone: its TypeError goes back
                kw[k] = v
        cap = self.obj.__dlpack__(**kw)
        self.asked.append(max_version)
        self.names.append(_name(cap).decode())
        return cap

    def __dlpack_device__(self):
        return self.obj.__dlpack_device__()


def _consumer(which):
    return _cupy() if which == "cupy" else _torch()


@pytest.mark.parametrize("which", ["cupy", "torch"])
def test_versioned_round_trip(lib, which):
    xp = _consumer(which)
    n = 1000
    d = cuda.to_device(np.arange(n, dtype=np.float32))
    gc.collect()
    base = sys.getrefcount(d)
    spy = Spy(d)
    t = xp.from_dlpack(spy)  # bindthem's capsule, zero-copy
    asked = spy.asked[-1]
    # a consumer that asks for DLPack 1.x gets the versioned capsule
    assert spy.names[-1] == ("dltensor_versioned" if asked and asked[0] >= 1 else "dltensor")
    ptr = t.data.ptr if which == "cupy" else t.data_ptr()
    assert ptr == d.ptr
    t *= 2  # written by the consumer, on its stream
    # and back: bindthem asks the consumer's tensor for DLPack 1.x
    y = xp.ones(n, dtype=xp.float32) if which == "cupy" else xp.ones(n, dtype=xp.float32,
                                                                       device="cuda")
    sy = Spy(y)
    lib.axpy[4, 256](np.float32(3), Spy(t), sy)
    assert sy.asked[0] == (1, 1)
    assert sy.names[-1] in ("dltensor_versioned", "dltensor")
    if which == "cupy":
        xp.cuda.runtime.deviceSynchronize()
    else:
        xp.cuda.synchronize()
    expect = 3 * 2 * np.arange(n, dtype=np.float32) + 1
    got = xp.asnumpy(y) if which == "cupy" else y.cpu().numpy()
    np.testing.assert_array_equal(got, expect)
    print("%s asked %r, got %s; gave bindthem %s" % (which, asked, spy.names[-1], sy.names[-1]))
    del t, spy
    gc.collect()
    assert sys.getrefcount(d) == base  # the consumer called the capsule's deleter


def test_host_copy_after_a_pending_write(lib):
    s = cuda.Stream.create(non_blocking=True)
    y = cuda.zeros(256, np.int32, stream=s)
    lib.spin_then_set[1, 1, 0, s](y, 5, _spin_cycles(Driver()))
    cap = y.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True)  # after the spin
    assert _name(cap) == b"dltensor_versioned"
    p = _pointer(cap, b"dltensor_versioned")
    # DLManagedTensorVersioned: version (8 bytes), manager_ctx, deleter, flags, then DLTensor
    flags = ctypes.c_uint64.from_address(p + 24).value
    data = ctypes.c_void_p.from_address(p + 32).value
    device = (ctypes.c_int32.from_address(p + 40).value, ctypes.c_int32.from_address(p + 44).value)
    assert flags == 2 and device == (1, 0)  # IS_COPIED, kDLCPU
    host = np.frombuffer(ctypes.string_at(data, 256 * 4), np.int32)
    assert (host == 5).all(), "the host copy did not wait for the write on the side stream"
