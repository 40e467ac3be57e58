"""Stream-ordered allocation (cuMemAllocAsync from the device's pool, its
fallback to cuMemAlloc) and device-to-device copies, against the mock driver
(tests/cuda/mock)."""

import gc
import json

import numpy as np
import pytest
from cuda_support import PRELUDE, run_py

import bindthem.cuda as cuda


def mem_log(mock):
    return [json.loads(line) for line in mock.mock_mem_log().decode().splitlines()]


def ops(mock):
    return [(r["op"], r["stream"]) for r in mem_log(mock) if r["op"] != "cuMemPoolSetAttribute"]


def test_to_device_allocates_from_the_pool_on_its_stream(lib, clean):
    s = cuda.Stream.create()
    gc.collect()
    clean.mock_clear_logs()
    a = cuda.to_device(np.arange(4.0))
    b = cuda.to_device(np.arange(4.0), stream=s)
    c = cuda.empty(3, np.int32, stream=s)
    d = cuda.zeros(3, np.int32)
    assert ops(clean) == [("cuMemAllocAsync", 0), ("cuMemAllocAsync", s.handle),
                          ("cuMemAllocAsync", s.handle), ("cuMemAllocAsync", 0)]
    assert "cuMemAlloc" not in [op for op, _ in ops(clean)]  # no synchronous allocation
    assert a.stream is None  # synchronous copy: allocation and data done
    assert b.stream == s.handle and c.stream == s.handle  # others wait for the allocation
    assert d.stream == 1
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(4.0))


def test_pool_keeps_freed_memory(mock_path):
    rc, out = run_py(PRELUDE + """
        import os
        from cuda_support import mock_handle
        m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
        cuda.to_device(np.ones(3))
        print([l for l in m.mock_mem_log().decode().splitlines() if "Pool" in l])
        """, mock_path)
    assert rc == 0, out
    # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = UINT64_MAX, once
    assert out.count('"attr": 4, "value": 18446744073709551615') == 1, out


def test_free_is_queued_after_the_last_write(lib, clean):
    s = cuda.Stream.create(non_blocking=True)
    x = cuda.to_device(np.arange(8, dtype=np.float32), stream=s)
    y = cuda.zeros(8, np.float32, stream=s)
    lib.axpy[1, 8, 0, s](2.0, x, y)
    assert clean.mock_pending() > 0
    gc.collect()
    live = clean.mock_live_allocs()
    clean.mock_clear_logs()
    del x, y
    # no host wait; the frees go to the legacy stream after an event on s
    assert clean.mock_sync_log().decode().splitlines() == ["wait 1 %d" % s.handle] * 2
    assert [op for op, _ in ops(clean)] == ["cuMemFreeAsync", "cuMemFreeAsync"]
    assert {st for _, st in ops(clean)} == {1}
    assert clean.mock_live_allocs() == live - 2
    assert clean.mock_pending() == 0  # s ran first: the launch read live memory


@pytest.mark.parametrize("env", [{"MOCK_CUDA_POOLS": 0}, {"BINDTHEM_CUDA_NO_POOL": 1},
                                 {"MOCK_CUDA_NOT_FOUND": "cuMemAllocAsync"}])
def test_fallback_to_cuMemAlloc(mock_path, env):
    rc, out = run_py(PRELUDE + """
        import os, threading, time, ctypes
        from cuda_support import mock_handle
        m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
        m.mock_in_sync.restype = ctypes.c_int
        s = cuda.Stream.create()
        a = cuda.to_device(np.arange(3.0), stream=s)
        print(a.copy_to_host().tolist(), a.stream)
        os.environ["MOCK_CUDA_SLEEP_MS"] = "150"
        seen, stop = [], []
        def watch():
            while not stop:
                seen.append(m.mock_in_sync()); time.sleep(0.002)
        t = threading.Thread(target=watch); t.start(); time.sleep(0.01)
        del a
        stop.append(1); t.join()
        print("ran during the free", any(seen))
        print([l.split('"')[3] for l in m.mock_mem_log().decode().splitlines()])
        """, mock_path, **env)
    assert rc == 0, out
    assert "[0.0, 1.0, 2.0] None" in out, out
    assert "['cuMemAlloc', 'cuMemFree']" in out, out
    assert "ran during the free True" in out, out  # cuMemFree blocks without the GIL


def test_copy_device_to_device(lib, clean):
    a = cuda.to_device(np.arange(6, dtype=np.int32).reshape(2, 3))
    b = a.copy()
    assert b.ptr != a.ptr and b.shape == (2, 3) and b.dtype == np.int32
    np.testing.assert_array_equal(b.copy_to_host(), [[0, 1, 2], [3, 4, 5]])
    c = cuda.zeros((2, 3), np.int32)
    assert c.copy_from(b) is c
    np.testing.assert_array_equal(c.copy_to_host(), [[0, 1, 2], [3, 4, 5]])
    c.copy_from([[9, 9, 9], [8, 8, 8]])  # host data, through NumPy
    np.testing.assert_array_equal(c.copy_to_host(), [[9, 9, 9], [8, 8, 8]])


def test_copy_on_streams_waits_for_both_writers(lib, clean):
    s1 = cuda.Stream.create(non_blocking=True)
    s2 = cuda.Stream.create(non_blocking=True)
    x = cuda.to_device(np.arange(8, dtype=np.float32), stream=s1)
    y = cuda.zeros(8, np.float32, stream=s1)
    lib.axpy[1, 8, 0, s1](2.0, x, y)  # y = 2x, queued on s1
    z = cuda.empty(8, np.float32, stream=s2)
    z.copy_from(y, stream=s2)  # must wait for s1's write
    assert z.stream == s2.handle
    s2.synchronize()
    np.testing.assert_array_equal(z.copy_to_host(), 2 * np.arange(8))


def test_copy_errors(lib, clean):
    a = cuda.to_device(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="device array of float64, this one holds float32"):
        a.copy_from(cuda.to_device(np.zeros(4)))
    with pytest.raises(ValueError, match=r"shape \(5,\), this device array \(4,\)"):
        a.copy_from(cuda.zeros(5, np.float32))
    with pytest.raises(ValueError, match="stream"):
        a.copy_from(np.zeros(4, np.float32), stream=12345)
