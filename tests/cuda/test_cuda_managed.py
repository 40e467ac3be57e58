"""Managed (unified) memory and peer access, against the mock driver
(tests/cuda/mock/mock_cuda.c): cuMemAllocManaged is host memory any context
may launch on; prefetches, advice, peer enables and peer copies are logged
(mock_managed_log); a launch's pointer into another context's memory faults
unless peer access from the launching context to that one is enabled.
Two-device cases run in a fresh process (MOCK_CUDA_DEVICES=2)."""

import ctypes
import json
import textwrap

import numpy as np
import pytest
from cuda_support import PRELUDE, raw, run_py

import bindthem.cuda as cuda


def managed_log(mock):
    mock.mock_managed_log.restype = ctypes.c_char_p
    return [json.loads(line) for line in mock.mock_managed_log().decode().splitlines()]


@pytest.fixture
def um(clean):
    clean.mock_managed_clear()
    yield clean
    cuda.synchronize()


def test_managed_allocation_and_its_attributes(um):
    a = cuda.managed_zeros((2, 3), np.float32)
    b = cuda.managed_empty(4, attach="host")
    assert a.managed and b.managed and not cuda.empty(4).managed
    assert a.shape == (2, 3) and a.dtype == np.float32 and b.dtype == np.float64
    assert a.__cuda_array_interface__["data"][0] == a.ptr
    allocs = [r for r in managed_log(um) if r["op"] == "cuMemAllocManaged"]
    assert [(r["bytes"], r["flags"]) for r in allocs] == [(24, 1), (32, 2)]  # GLOBAL, HOST
    assert a.host_view().tolist() == [[0, 0, 0], [0, 0, 0]]


def test_host_view_waits_for_the_pending_write(lib, um):
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    y = cuda.managed_zeros(8, np.float32)
    s = cuda.Stream.create(non_blocking=True)
    lib.axpy[1, 8, 0, s](2.0, x, y)
    assert raw(y.ptr).tolist() == [0] * 8  # still queued on s
    v = y.host_view()
    assert v.tolist() == (2 * np.arange(8)).tolist()
    assert v.base is y  # the view keeps the memory alive
    v[:] = 7  # the host writes it, the device reads it
    lib.axpy[1, 8, 0, s](1.0, x, y)
    np.testing.assert_array_equal(np.asarray(y), 7 + np.arange(8))
    del y
    assert v.tolist() == (7 + np.arange(8)).tolist()


def test_host_view_waits_for_pending_reads(lib, um):
    y = cuda.managed_zeros(8, np.float32)
    y.host_view()[:] = 1
    z = cuda.to_device(np.zeros(8, np.float32))
    s = cuda.Stream.create(non_blocking=True)
    lib.axpy[1, 8, 0, s](1.0, y, z)  # reads y, queued
    y.host_view()[:] = 5  # the host may write: the read ran first
    assert z.copy_to_host().tolist() == [1] * 8


def test_prefetch_and_advise_reach_the_driver(um):
    a = cuda.managed_zeros(16, np.float32)
    um.mock_managed_clear()
    s = cuda.Stream.create(non_blocking=True)
    a.prefetch(0, stream=s)
    a.prefetch("host")
    a.advise("read_mostly")
    a.advise(cuda.MemAdvise.PREFERRED_LOCATION, "host")
    a.advise("accessed_by", 0)
    a.advise("unset_accessed_by", 0)
    log = managed_log(um)
    assert [(r["op"], r["abi"], r["bytes"], r["advice"], r["location"]) for r in log] == [
        ("cuMemPrefetchAsync", 12020, 64, 0, [1, 0]),
        ("cuMemPrefetchAsync", 12020, 64, 0, [2, 0]),
        ("cuMemAdvise", 12020, 64, 1, [1, 0]),
        ("cuMemAdvise", 12020, 64, 3, [2, 0]),
        ("cuMemAdvise", 12020, 64, 5, [1, 0]),
        ("cuMemAdvise", 12020, 64, 6, [1, 0]),
    ]
    assert log[0]["stream"] == s.handle and all(r["ptr"] == a.ptr for r in log)
    assert a.stream is None or a.stream != s.handle  # a prefetch is no write


def test_refusals(um):
    d = cuda.empty(4, np.float32)
    a = cuda.managed_empty(4, np.float32)
    with pytest.raises(ValueError, match="not managed memory.*managed_empty"):
        d.prefetch(0)
    with pytest.raises(ValueError, match="not managed memory"):
        d.host_view()
    with pytest.raises(TypeError, match="copy_to_host"):
        np.asarray(d)
    with pytest.raises(ValueError, match="'sideways' is not an advice.*read_mostly"):
        a.advise("sideways")
    with pytest.raises(ValueError, match="is not an advice"):
        a.advise(9)
    with pytest.raises(ValueError, match="needs a location"):
        a.advise("preferred_location")
    with pytest.raises(ValueError, match="'gpu' is neither a device ordinal nor 'host'"):
        a.prefetch("gpu")
    with pytest.raises(ValueError, match="5 is not a device ordinal"):
        a.advise("accessed_by", 5)
    with pytest.raises(ValueError, match="attach='device' is neither 'global'"):
        cuda.managed_empty(4, attach="device")
    assert [r["op"] for r in managed_log(um)] == ["cuMemAllocManaged"]  # nothing reached it


def test_no_managed_memory_and_no_concurrent_access(mock_path):
    rc, out = run_py(PRELUDE + """
        try:
            cuda.managed_empty(4)
        except cuda.CudaError as e:
            print("refused:", e)
    """, mock_path, MOCK_CUDA_MANAGED=0)
    assert rc == 0, out
    assert "refused: device 0 (Mock GPU 0) has no managed memory" in out, out
    rc, out = run_py(PRELUDE + """
        a = cuda.managed_empty(4)
        a.prefetch("host")
        try:
            a.prefetch(0)
        except ValueError as e:
            print("refused:", e)
    """, mock_path, MOCK_CUDA_CONCURRENT_MANAGED=0)
    assert rc == 0, out
    assert "refused: prefetch(): device 0 has no concurrent managed access" in out, out


PEER = PRELUDE + """
from cuda_support import raw
lib = cuda.load(module_text(), HEADER, YAML)
x1 = cuda.to_device(np.arange(8, dtype=np.float32), device=1)
y0 = cuda.to_device(np.ones(8, np.float32), device=0)
"""


def peer(code):
    """PEER's two devices, their arrays and the kernels, then code."""
    return PEER + textwrap.dedent(code)


def test_peer_launch_refused_then_accepted(mock_path):
    rc, out = run_py(peer("""
        print("can", cuda.can_access_peer(1, 0), cuda.can_access_peer(0, 0))
        try:
            lib.axpy[1, 8](2.0, x1, y0)  # runs on device 1 (x1's), writes device 0's y0
        except ValueError as e:
            print("refused:", e)
        cuda.enable_peer_access(0, device=1)
        cuda.enable_peer_access(0, device=1)  # again: no error
        lib.axpy[1, 8](2.0, x1, y0)
        print("result", y0.copy_to_host().tolist())
        cuda.disable_peer_access(0, device=1)
        try:
            lib.axpy[1, 8](2.0, x1, y0)
        except ValueError as e:
            print("again refused")
    """), mock_path, MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    assert "can True False" in out
    assert ("refused: axpy(): argument 'y' is on device 0 (Mock GPU 0), but 'x' is on device 1 "
            "(Mock GPU 1); all arrays of a launch must be on one device") in out, out
    assert "call bindthem.cuda.enable_peer_access(0, device=1) first" in out
    assert "result %s" % (2 * np.arange(8.0) + 1).tolist() in out
    assert "again refused" in out


def test_peer_launch_is_ordered_after_the_peers_write(mock_path):
    rc, out = run_py(peer("""
        cuda.enable_peer_access(0, device=1)
        s0 = cuda.Stream.create(device=0, non_blocking=True)
        lib.axpy[1, 8, 0, s0](1.0, y0, y0)  # y0 = 2 on device 0, held on s0
        print("pending", raw(y0.ptr).tolist())
        s1 = cuda.Stream.create(device=1, non_blocking=True)
        lib.axpy[1, 8, 0, s1](1.0, x1, y0)  # on device 1, after s0's write
        print("result", y0.copy_to_host().tolist())
    """), mock_path, MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    assert "pending [1.0, 1.0" in out
    assert "result %s" % (np.arange(8) + 2.0).tolist() in out, out


def test_peer_enable_unsupported(mock_path):
    rc, out = run_py(PRELUDE + """
        print("can", cuda.can_access_peer(1, 0))
        try:
            cuda.enable_peer_access(0, device=1)
        except cuda.CudaError as e:
            print("refused:", e)
        try:
            cuda.enable_peer_access(1, device=1)
        except ValueError as e:
            print("self:", e)
    """, mock_path, MOCK_CUDA_DEVICES=2, MOCK_CUDA_PEER=0)
    assert rc == 0, out
    assert "can False" in out
    assert "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED" in out and "copy_from" in out, out
    assert "self: enable_peer_access(1, device=1): a device reaches its own memory" in out


def test_copy_from_across_devices_is_a_queued_peer_copy(mock_path):
    rc, out = run_py(peer("""
        from cuda_support import mock_handle
        import os, ctypes
        m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
        m.mock_managed_log.restype = ctypes.c_char_p
        s0 = cuda.Stream.create(device=0, non_blocking=True)
        lib.axpy[1, 8, 0, s0](1.0, y0, y0)  # y0 = 2, held on s0
        d1 = cuda.empty(8, np.float32, device=1)
        s1 = cuda.Stream.create(device=1, non_blocking=True)
        d1.copy_from(y0, stream=s1)  # after s0's write, queued on s1
        print("copied", d1.copy_to_host().tolist())
        e1 = cuda.empty(8, np.float32, device=1)
        e1.copy_from(y0)  # synchronous
        print("sync", raw(e1.ptr).tolist())
        log = [json.loads(l) for l in m.mock_managed_log().decode().splitlines()]
        print([(r["src_device"], r["dst_device"], r["stream"] == s1.handle)
               for r in log if r["op"] == "cuMemcpyPeerAsync"])
    """), mock_path, MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    assert "copied [2.0, 2.0" in out, out
    assert "sync [2.0, 2.0" in out
    assert "[(0, 1, True), (0, 1, False)]" in out, out


def test_managed_array_launched_on_another_device(mock_path):
    code = peer("""
        y = cuda.managed_zeros(8, np.float32, device=0)
        try:
            lib.axpy[1, 8](1.0, x1, y)  # on device 1, no peer access needed
            print("result", y.host_view().tolist())
        except ValueError as e:
            print("refused:", e)
    """)
    rc, out = run_py(code, mock_path, MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    assert "result %s" % np.arange(8, dtype=float).tolist() in out, out
    rc, out = run_py(code, mock_path, MOCK_CUDA_DEVICES=2, MOCK_CUDA_CONCURRENT_MANAGED=0)
    assert rc == 0, out
    assert "refused: a launch on device 1 takes managed memory of device 0" in out, out
