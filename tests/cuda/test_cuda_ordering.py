"""Ordering across threads, streams and devices, against the mock driver
(tests/cuda/mock/mock_cuda.c), which runs as a real driver does where this
depends on it: the per-thread stream (2) is each thread's own queue, held
until that thread waits for it; work on a stream made with cuStreamCreate is
held until something waits for it; events and streams belong to a context,
and an event recorded on another context's stream fails. Each test first
shows the data still pending, so a missing wait shows as stale data.
"""


import numpy as np
import pytest
from cuda_support import PRELUDE, in_thread, raw, run_py

import bindthem.cuda as cuda


@pytest.fixture
def clean(clean):
    yield clean
    cuda.synchronize()


def per_thread_write(lib, held):
    """(x, y, want): y = 2 x + y queued on a worker thread's per-thread
    stream, which that thread, alive, never synchronizes. (Keep x: freeing
    memory waits for all work, which would hide a missing wait.)"""
    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))
    held(lambda: lib.axpy[1, 8, 0, cuda.PER_THREAD](2.0, x, y))
    np.testing.assert_array_equal(raw(y.ptr), np.ones(8))  # still queued in the worker's stream
    return x, y, 2 * x0 + 1


def test_per_thread_write_copied_in_another_thread(lib, clean, held):
    x, y, want = per_thread_write(lib, held)
    # the copy runs on the legacy stream (never on another thread's handle
    # 2), after the writer's event
    np.testing.assert_array_equal(y.copy_to_host(), want)


def test_per_thread_write_launched_on_in_another_thread(lib, clean, held):
    # (made first: legacy-stream work, as a synchronous to_device, waits for
    # every blocking stream, the per-thread ones included)
    z = cuda.to_device(np.zeros(8, np.float32))
    side = cuda.Stream.create(non_blocking=True)
    x, y, want = per_thread_write(lib, held)
    lib.axpy[1, 8, 0, side](1.0, y, z)  # reads y on a stream of this thread
    np.testing.assert_array_equal(z.copy_to_host(), want)


def test_per_thread_write_exported_to_another_thread(lib, clean, held):
    x, y, want = per_thread_write(lib, held)
    cai = y.__cuda_array_interface__
    # never the raw 2 (this thread's own stream): the legacy stream, made to
    # wait for the write's event
    assert cai["stream"] == cuda.LEGACY.handle
    assert raw(y.ptr).tolist() == want.tolist()  # the wait ran the worker's queue
    # in the writing thread itself, 2 means the writer's stream: exported as is
    seen = []
    x = cuda.to_device(np.arange(8, dtype=np.float32))

    def worker():
        lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y)
        seen.append(y.__cuda_array_interface__["stream"])
        cuda.PER_THREAD.synchronize()

    in_thread(worker)
    assert seen == [cuda.PER_THREAD.handle]


def test_write_after_read_on_another_stream_waits_for_the_read(lib, clean):
    a = cuda.Stream.create(non_blocking=True)
    b = cuda.Stream.create(non_blocking=True)
    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))
    z = cuda.to_device(np.full(8, 100, np.float32))
    lib.axpy[1, 8, 0, a](2.0, x, y)  # reads x on a: queued
    lib.axpy[1, 8, 0, b](1.0, z, x)  # writes x on b: must wait for the read on a
    b.synchronize()
    np.testing.assert_array_equal(x.copy_to_host(), x0 + 100)
    np.testing.assert_array_equal(y.copy_to_host(), 2 * x0 + 1)  # the read saw the old x


def test_many_reader_streams_are_all_waited_for(lib, clean):
    """More reading streams than the array remembers: each one past the
    limit waits for the oldest, so the writer still waits for every read."""
    x0 = np.arange(8, dtype=np.float32)
    x = cuda.to_device(x0)
    streams = [cuda.Stream.create(non_blocking=True) for _ in range(7)]
    outs = [cuda.to_device(np.zeros(8, np.float32)) for _ in streams]
    for s, o in zip(streams, outs):
        lib.axpy[1, 8, 0, s](1.0, x, o)
    w = cuda.Stream.create(non_blocking=True)
    fifty = cuda.to_device(np.full(8, 50, np.float32))
    lib.axpy[1, 8, 0, w](1.0, fifty, x)
    w.synchronize()
    for o in outs:
        np.testing.assert_array_equal(raw(o.ptr), x0)


def test_per_thread_read_then_write_elsewhere(lib, clean, held):
    """A read on a worker's per-thread stream is ordered before a later
    write on another stream (through the read's event)."""
    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.zeros(8, np.float32))
    seven = cuda.to_device(np.full(8, 7, np.float32))
    w = cuda.Stream.create(non_blocking=True)
    held(lambda: lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y))
    np.testing.assert_array_equal(raw(y.ptr), np.zeros(8))  # the read is still queued
    lib.axpy[1, 8, 0, w](1.0, seven, x)
    w.synchronize()
    np.testing.assert_array_equal(raw(y.ptr), x0)


def test_waits_and_events_in_the_arrays_context(mock_path):
    """Two devices, device 0's context current: the DLPack wait and an Event
    recorded on a device-1 stream are made in device 1's context."""
    rc, out = run_py(PRELUDE + """
        cuda.synchronize()  # device 0's primary context is current
        s1 = cuda.Stream.create(device=1, non_blocking=True)
        y = cuda.to_device(np.ones(4, np.float32), device=1, stream=s1)
        cap = y.__dlpack__(stream=1)
        print("dlpack", type(cap).__name__)
        start, end = cuda.Event(), cuda.Event()
        start.record(s1)
        end.record(s1)
        end.synchronize()
        print("elapsed", end.query(), start.elapsed_time(end) >= 0)
        other = cuda.Stream.create(device=0, non_blocking=True)
        end.wait(other)  # a wait may cross contexts
        start.record(other)  # and the event follows a stream of device 0 back
        print("back", start.query() in (True, False))
    """, mock_path, MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    assert "dlpack PyCapsule" in out and "elapsed True True" in out and "back True" in out, out


def test_a_destroyed_streams_handle_is_refused_not_run(lib, clean):
    """The mock, as a driver, knows only the streams it made: a handle kept
    past its stream's destruction fails (a real driver may crash)."""
    s = cuda.Stream.create(non_blocking=True)
    handle = s.handle
    del s
    y = cuda.to_device(np.ones(4, np.float32))
    with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_HANDLE"):
        lib.scale[1, 4, 0, cuda.Stream(handle)](2.0, y)
