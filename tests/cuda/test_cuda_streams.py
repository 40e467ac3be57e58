"""bindthem.cuda's stream ordering, events, async copies, pinned memory,
contexts and the GIL, against the mock driver (tests/cuda/mock/mock_cuda.c).

The mock holds work on a stream made with cuStreamCreate until something
waits for it (a synchronize, cuStreamWaitEvent on an event recorded there,
or legacy-stream work for a blocking stream), so a wait bindthem forgets
shows here as stale data: each test reads the memory behind bindthem's back
first, to show the data really is still pending.
"""

import ctypes
import os
import threading

import numpy as np
import pytest
from cuda_support import (
    HEADER,
    PRELUDE,
    YAML,
    FakeCAI,
    FakeDLPack,
    module_text,
    run_py,
)

import bindthem.cuda as cuda


@pytest.fixture
def clean(clean):
    """conftest's clean (logs cleared), then nothing left queued for the next test."""
    yield clean
    cuda.synchronize()


def raw(ptr, n, dtype=np.float32):
    """The memory at ptr now, as the device holds it, read past bindthem."""
    out = np.empty(n, dtype)
    ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
    return out


def waits(mock):
    return [line for line in mock.mock_sync_log().decode().splitlines()
            if line.startswith("wait ")]


@pytest.fixture
def side():
    return cuda.Stream.create(non_blocking=True)


def written_on(lib, stream, n=8):
    """(x, y, expected): y = 2 x + y queued on stream, not yet run."""
    x0 = np.arange(n, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(n, np.float32))
    lib.axpy[1, n, 0, stream](2.0, x, y)
    return x, y, 2 * x0 + 1


def test_copy_to_host_waits_for_the_writing_stream(lib, clean, side):
    x, y, want = written_on(lib, side)
    assert y.stream == side.handle and x.stream is None  # x is const: not written
    np.testing.assert_array_equal(raw(y.ptr, 8), np.ones(8, np.float32))  # still queued
    np.testing.assert_array_equal(y.copy_to_host(), want)
    assert y.stream is None  # the copy waited for the write: nothing pending


def test_stream_keyword_launches_record_and_wait_alike(lib, clean, side):
    """stream= given as a keyword (both call forms) is the launch's stream
    for the waits and the last-write record, as in the brackets."""
    other = cuda.Stream.create(non_blocking=True)
    for launch in (lambda *a: lib.axpy(*a, grid=1, block=8, stream=side),
                   lambda *a: lib.axpy[1, 8](*a, stream=side)):
        clean.mock_clear_logs()
        x0 = np.arange(8, dtype=np.float32)
        x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))
        launch(2.0, x, y)
        assert y.stream == side.handle
        np.testing.assert_array_equal(raw(y.ptr, 8), np.ones(8, np.float32))  # still queued
        z = cuda.to_device(np.zeros(8, np.float32))
        lib.axpy(1.0, y, z, grid=1, block=8, stream=other)  # reads y after side's write
        assert waits(clean) == ["wait %d %d" % (other.handle, side.handle)]
        other.synchronize()
        np.testing.assert_array_equal(raw(z.ptr, 8), 2 * x0 + 1)
        del x, y, z  # their frees wait for their writers: before the next clear


def test_copy_to_host_on_another_stream_waits_with_an_event(lib, clean, side):
    x, y, want = written_on(lib, side)
    np.testing.assert_array_equal(y.copy_to_host(stream=cuda.LEGACY), want)
    assert waits(clean) == ["wait 1 %d" % side.handle]


def test_launch_on_another_stream_waits_for_the_writer(lib, clean, side):
    other = cuda.Stream.create(non_blocking=True)
    x, y, want = written_on(lib, side)
    z = cuda.to_device(np.zeros(8, np.float32))
    lib.axpy[1, 8, 0, other](1.0, y, z)  # reads y: must come after side's write
    assert waits(clean) == ["wait %d %d" % (other.handle, side.handle)]
    other.synchronize()
    np.testing.assert_array_equal(raw(z.ptr, 8), want)
    assert z.stream == other.handle
    # arrays last written on the launch's own stream need no wait
    clean.mock_clear_logs()
    lib.axpy[1, 8, 0, other](1.0, z, z)
    assert waits(clean) == []


def test_exports_the_last_write_stream(lib, clean, side):
    x, y, want = written_on(lib, side)
    assert y.__cuda_array_interface__["stream"] == side.handle
    assert y.__dlpack_device__() == (2, 0)
    cap = y.__dlpack__(stream=1)  # the consumer's stream (legacy) waits
    assert waits(clean) == ["wait 1 %d" % side.handle]
    assert "dltensor" in repr(cap)
    clean.mock_clear_logs()
    y.__dlpack__(stream=-1)  # -1: the consumer orders nothing
    assert waits(clean) == []
    del cap
    y.copy_to_host()
    assert y.__cuda_array_interface__["stream"] is None


def test_dlpack_export_round_trips_through_a_launch(lib, clean):
    # a DeviceArray's capsule, read back by bindthem's own DLPack reader
    class Via:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    a = np.arange(4, dtype=np.float32)
    x, y = cuda.to_device(a), cuda.to_device(np.ones(4, np.float32))
    lib.axpy[1, 4](3.0, Via(x), Via(y))
    np.testing.assert_array_equal(y.copy_to_host(), 3 * a + 1)


def test_dlpack_is_preferred_over_cai(lib, clean, mock, side):
    p = mock.mock_malloc(16, 0, 0)

    class Both(FakeDLPack):
        @property
        def __cuda_array_interface__(self):
            raise AssertionError("read CAI though DLPack is there")

    b = Both(p, (4,), 2, 32)
    lib.scale[1, 4, 0, side](1.0, b)
    assert b.streams == [side.handle]  # the producer was told the launch's stream
    mock.mock_free(p)


def test_cai_v3_stream_is_waited_on_not_synchronized(lib, clean, mock, side):
    p = mock.mock_malloc(16, 0, 0)
    lib.scale[1, 4](1.0, FakeCAI(p, (4,), "<f4", stream=side.handle))
    assert clean.mock_sync_log().decode() == "wait 1 %d\n" % side.handle
    mock.mock_free(p)


def test_to_device_on_a_stream(lib, clean, side):
    a = np.arange(6, dtype=np.float64)
    d = cuda.to_device(a, stream=side)
    assert d.stream == side.handle
    assert not np.array_equal(raw(d.ptr, 6, np.float64), a)  # queued
    np.testing.assert_array_equal(d.copy_to_host(), a)


def test_zeros(lib, clean, side):
    z = cuda.zeros((2, 3), np.int32)
    assert z.shape == (2, 3) and z.dtype == np.int32
    np.testing.assert_array_equal(z.copy_to_host(), np.zeros((2, 3), np.int32))
    assert cuda.empty(4, np.int32).copy_to_host().tolist() != [0] * 4  # empty is not zeroed
    z2 = cuda.zeros(4, np.float32, stream=side)
    assert z2.stream == side.handle and raw(z2.ptr, 4).tolist() != [0] * 4  # queued
    np.testing.assert_array_equal(z2.copy_to_host(), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="zeros"):
        cuda.zeros(3, object)


def test_pinned_memory_and_async_copy(lib, clean, mock, side):
    live = mock.mock_live_allocs()
    out = cuda.pinned_empty((8,), np.float32)
    assert out.shape == (8,) and out.dtype == np.float32 and out.flags.c_contiguous
    assert mock.mock_live_allocs() == live + 1
    x, y, want = written_on(lib, side)
    out[:] = -1
    assert y.copy_to_host(stream=side, out=out) is out  # returns at once
    assert (out == -1).all()  # the copy is queued behind the launch
    ev = cuda.Event().record(side)
    ev.synchronize()
    np.testing.assert_array_equal(out, want)
    view = out[2:]
    del out
    assert mock.mock_live_allocs() == live + 3  # x, y and the pinned memory (a view holds it)
    del view, x, y
    assert mock.mock_live_allocs() == live


def test_copy_to_host_out_is_checked(lib, clean):
    y = cuda.to_device(np.ones(4, np.float32))
    for bad in (np.empty(4, np.float64), np.empty(5, np.float32), np.empty(8, np.float32)[::2]):
        with pytest.raises(ValueError, match=r"copy_to_host\(\): out must be a writable "
                                             r"C-contiguous array of shape \(4,\)"):
            y.copy_to_host(out=bad)
    with pytest.raises(TypeError, match="out must be a NumPy array"):
        y.copy_to_host(out=[0.0] * 4)
    with pytest.raises(ValueError, match=r"copy_to_host\(\): stream=12345: a bare int other "
                                         r"than 0, 1 or 2 is not taken as a stream; pass "
                                         r"bindthem.cuda.LEGACY.* for a CUstream handle you own$"):
        y.copy_to_host(stream=12345)  # no launch-order hint outside a launch
    with pytest.raises(ValueError, match=r"copy_to_host\(\): stream must be None"):
        y.copy_to_host(stream="s")
    out = np.zeros(4, np.float32)
    assert y.copy_to_host(out=out) is out and (out == 1).all()


def test_events_time_and_query(lib, clean, side):
    start, end = cuda.Event(), cuda.Event()
    start.record(side)
    for _ in range(3):
        written_on(lib, side)
    end.record(side)
    assert not end.query()  # the mock runs side's work only when waited for
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) == pytest.approx(3.0)  # the mock's 1 ms per launch
    with pytest.raises(ValueError, match="both events need timing"):
        start.elapsed_time(cuda.Event(timing=False).record())
    with pytest.raises(ValueError, match="record both events first"):
        start.elapsed_time(cuda.Event())
    with pytest.raises(TypeError, match="end must be an Event"):
        start.elapsed_time(3)


def test_event_wait(lib, clean, side):
    other = cuda.Stream.create(non_blocking=True)
    x, y, want = written_on(lib, side)
    ev = cuda.Event(timing=False).record(side)
    ev.wait(other)
    assert waits(clean) == ["wait %d %d" % (other.handle, side.handle)]
    np.testing.assert_array_equal(raw(y.ptr, 8), want)  # the mock ran it for the wait


def test_stream_create_and_destroy(clean):
    s = cuda.Stream.create()
    assert s.handle > 2 and "Stream.create(non_blocking=False)" in repr(s)
    s.synchronize()
    assert "stream %d" % s.handle in clean.mock_sync_log().decode()
    fin = s._destroy
    del s
    assert not fin.alive


def test_user_context_is_given_back(lib, clean, mock):
    own = mock.mock_ctx_create(0)
    before = mock.mock_ctx_current()
    try:
        mock.mock_ctx_set(own)
        x, y = cuda.to_device(np.ones(4, np.float32)), cuda.zeros(4, np.float32)
        lib.axpy[1, 4](2.0, x, y)  # in the primary context, where x and y are
        np.testing.assert_array_equal(y.copy_to_host(), 2 * np.ones(4, np.float32))
        del x, y
        assert mock.mock_ctx_current() == own
    finally:
        mock.mock_ctx_set(before)


def test_memory_of_another_context_launches_there(lib, clean, mock):
    own = mock.mock_ctx_create(0)
    before = mock.mock_ctx_current()
    try:
        mock.mock_ctx_set(own)
        p = mock.mock_malloc(16, 0, 0)  # belongs to `own`
        mock.mock_ctx_set(before)
        host = np.arange(4, dtype=np.float32)
        ctypes.memmove(p, host.ctypes.data, 16)
        # the mock faults a launch whose memory is another context's
        lib.axpy[1, 4](2.0, FakeCAI(p, (4,), "<f4"), FakeCAI(p, (4,), "<f4"))
        np.testing.assert_array_equal(raw(p, 4), 3 * host)
        assert mock.mock_ctx_current() == before
        y = cuda.to_device(np.ones(4, np.float32))
        with pytest.raises(ValueError, match=r"argument 'y' belongs to another CUDA context than "
                                             r"'x' \(on the same device\)"):
            lib.axpy[1, 4](1.0, FakeCAI(p, (4,), "<f4"), y)
        mock.mock_free(p)
    finally:
        mock.mock_ctx_set(before)


def test_foreign_context_refused_for_context_bound_modules(mock_path):
    rc, out = run_py(PRELUDE + """
        import os
        from cuda_support import FakeCAI, mock_handle
        m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
        lib = cuda.load(module_text(), HEADER, YAML)   # cuModuleLoadDataEx: a pre-12.0 driver
        before = m.mock_ctx_current()
        m.mock_ctx_set(m.mock_ctx_create(0))
        p = m.mock_malloc(16, 0, 0)
        m.mock_ctx_set(before)
        try:
            lib.scale[1, 4](2.0, FakeCAI(p, (4,), "<f4"))
        except ValueError as e:
            print(e)
    """, mock_path, MOCK_CUDA_VERSION=11080)
    assert rc == 0, out
    assert ("scale(): argument 'y' is memory of a CUDA context that is not device 0's primary "
            "one (cuCtxCreate, PyCUDA's make_context)") in out


def test_blocking_calls_release_the_gil(lib, clean, mock, side):
    """While the driver blocks (MOCK_CUDA_SLEEP_MS), other threads run."""
    mock.mock_in_sync.restype = ctypes.c_int
    y = cuda.to_device(np.ones(4, np.float32))
    calls = {
        "synchronize": cuda.synchronize,
        "Stream.synchronize": side.synchronize,
        "Event.synchronize": lambda: cuda.Event().record(side).synchronize(),
        "copy_to_host": lambda: y.copy_to_host(stream=side),
        "to_device": lambda: cuda.to_device(np.ones(4)),
        # a pooled DeviceArray's free (cuMemFreeAsync) does not block: the
        # blocking cuMemFree is checked in test_cuda_alloc.py
        "load": lambda: cuda.load(module_text(), HEADER, YAML),
    }
    os.environ["MOCK_CUDA_SLEEP_MS"] = "150"
    try:
        for name, call in calls.items():
            seen, stop = [], threading.Event()

            def watch():
                while not stop.is_set():
                    if mock.mock_in_sync():
                        seen.append(1)
                        return

            t = threading.Thread(target=watch)
            t.start()
            call()
            stop.set()
            t.join()
            assert seen, "%s held the GIL while the driver blocked" % name
    finally:
        del os.environ["MOCK_CUDA_SLEEP_MS"]


def test_an_array_keeps_the_stream_of_its_last_write_alive(lib, clean):
    # a stream object destroys its CUstream when it goes: an array that may
    # still be waited on holds it (a launch, to_device and zeros alike)
    for write in ("launch", "to_device", "zeros"):
        s = cuda.Stream.create(non_blocking=True)
        fin = s._destroy
        if write == "launch":  # (x, read on s, would hold s as a pending reader)
            y, want = written_on(lib, s)[1:]
        elif write == "to_device":
            y, want = cuda.to_device(np.arange(8, dtype=np.float32), stream=s), np.arange(8)
        else:
            y, want = cuda.zeros(8, np.float32, stream=s), np.zeros(8)
        del s
        assert fin.alive, write
        np.testing.assert_array_equal(y.copy_to_host(), want)  # done: the stream is let go
        assert not fin.alive, write
    s = cuda.Stream.create()
    fin = s._destroy
    y = cuda.zeros(8, np.float32)
    lib.scale[1, 8, 0, s](1.0, y)
    lib.scale[1, 8](1.0, y)  # the last write is on the legacy stream: s is let go
    del s
    assert not fin.alive
