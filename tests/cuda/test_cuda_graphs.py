"""CUDA graphs and stream capture, against the mock driver
(tests/cuda/mock/mock_cuda.c), which captures as a real driver does: work
queued on a capturing stream is recorded into a graph, not run; cuGraphLaunch
replays copies of it; what the driver refuses during capture fails with its
capture error and invalidates the capture. The mock's axpy runs on the host,
so a replay's effect is checked in the data.
"""

import ctypes
import gc
import threading

import numpy as np
import pytest
from cuda_support import raw

import bindthem.cuda as cuda


@pytest.fixture(name="m")
def typed_mock(clean):
    m = clean
    m.mock_capture_begin.argtypes = [ctypes.c_ulonglong, ctypes.c_int]
    m.mock_capture_end.argtypes = [ctypes.c_ulonglong, ctypes.POINTER(ctypes.c_void_p)]
    m.mock_graph_launch.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
    m.mock_graph_exec_destroy.argtypes = [ctypes.c_void_p]
    m.mock_capture_status.argtypes = [ctypes.c_ulonglong]
    yield m
    assert m.mock_open_captures() == 0  # every test leaves no capture open
    cuda.synchronize()


def arrays(x0=None):
    x0 = np.arange(8, dtype=np.float32) if x0 is None else x0
    return x0, cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))


def test_replay_n_times_gives_n_times_the_effect(lib, m):
    s = cuda.Stream.create()
    x0, x, y = arrays()
    with s.capture() as g:
        lib.axpy[1, 8, 0, s](2.0, x, y)
        assert m.mock_capture_status(s.handle) == 1
    # nothing ran during the capture, nor is anything queued
    np.testing.assert_array_equal(raw(y.ptr), np.ones(8))
    assert m.mock_pending() == 0 and y.stream is None
    assert g.ready and g.mode == "thread_local" and g.stream is s
    assert g.arrays == ((y,), (x,))
    for _ in range(3):
        g.launch(s)
    assert m.mock_graph_launches() >= 3
    np.testing.assert_array_equal(y.copy_to_host(), 1 + 3 * 2 * x0)
    g.launch()  # the legacy stream: once more
    np.testing.assert_array_equal(y.copy_to_host(), 1 + 4 * 2 * x0)


def test_copies_and_zeros_are_captured(lib, m):
    s = cuda.Stream.create(non_blocking=True)
    host = np.arange(8, dtype=np.float32)
    y = cuda.to_device(np.zeros(8, np.float32))
    m.mock_clear_logs()
    with s.capture(mode="global") as g:
        z = cuda.zeros(8, np.float32, stream=s)  # zeroed at each replay
        t = cuda.to_device(host, stream=s)  # copied from host at each replay
        lib.axpy[1, 8, 0, s](1.0, t, z)
        y.copy_from(z, stream=s)
    # the arrays' memory is made outside the capture (no graph allocation)
    assert "cuMemAllocAsync" not in m.mock_mem_log().decode()
    np.testing.assert_array_equal(raw(z.ptr), np.full(32, 0xab, np.uint8).view(np.float32))
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(raw(y.ptr), host)
    host[:] = 5  # the copy node reads the host array when it runs (the graph holds it)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(raw(y.ptr), np.full(8, 5, np.float32))


def test_legacy_stream_cannot_be_captured(m):
    for s in (cuda.LEGACY, cuda.Stream(0)):
        with pytest.raises(ValueError, match="legacy default stream cannot be captured"):
            with s.capture():
                pass
    with pytest.raises(ValueError, match="not a capture mode"):
        cuda.Stream.create().capture("local")


def test_nested_capture_is_refused(lib, m):
    s = cuda.Stream.create()
    live = m.mock_graphs_live()
    with pytest.raises(RuntimeError, match="already capturing"):
        with s.capture():
            with s.capture():
                pass
    assert m.mock_graphs_live() == live  # the outer capture was ended and dropped
    # a capture another library holds is refused the same way
    assert m.mock_capture_begin(s.handle, 1) == 0
    with pytest.raises(RuntimeError, match="already capturing"):
        with s.capture():
            pass
    ex = ctypes.c_void_p()
    assert m.mock_capture_end(s.handle, ctypes.byref(ex)) == 0
    m.mock_graph_exec_destroy(ex)


@pytest.mark.parametrize("call", ["copy_to_host", "synchronize", "to_device"])
def test_synchronous_call_inside_raises_and_leaves_no_capture(lib, m, call):
    s = cuda.Stream.create()
    x0, x, y = arrays()
    live = m.mock_graphs_live()
    # (the driver refuses a synchronous call, or the legacy stream's use while a
    # blocking stream captures; either invalidates the capture)
    refused = "CUDA_ERROR_STREAM_CAPTURE_(UNSUPPORTED|IMPLICIT)"
    with pytest.raises(cuda.CudaError, match=refused) as ei:
        with s.capture() as g:
            lib.axpy[1, 8, 0, s](2.0, x, y)
            {"copy_to_host": y.copy_to_host, "synchronize": s.synchronize,
             "to_device": lambda: cuda.to_device(x0)}[call]()
    assert ei.value.code in (900, 906)
    assert not g.ready and m.mock_capture_status(s.handle) == 0
    assert m.mock_graphs_live() == live
    with pytest.raises(RuntimeError, match="closed"):
        g.launch(s)
    lib.axpy[1, 8, 0, s](2.0, x, y)  # the stream works as before
    np.testing.assert_array_equal(y.copy_to_host(), 1 + 2 * x0)


def test_capture_invalidated_by_a_caught_error_raises_at_exit(lib, m):
    s = cuda.Stream.create()
    with pytest.raises(cuda.CudaError, match="INVALIDATED") as ei:
        with s.capture():
            with pytest.raises(cuda.CudaError):
                s.synchronize()
    assert ei.value.code == 901


def test_graph_freed_exactly_once(lib, m):
    s = cuda.Stream.create()
    x0, x, y = arrays()
    live, destroys = m.mock_graphs_live(), m.mock_graph_destroys()
    with s.capture() as g:
        lib.axpy[1, 8, 0, s](2.0, x, y)
    assert m.mock_graphs_live() == live + 2  # the graph and its executable graph
    g.close()
    assert m.mock_graphs_live() == live
    assert m.mock_graph_destroys() == destroys + 2
    g.close()
    del g
    gc.collect()
    assert m.mock_graph_destroys() == destroys + 2 and m.mock_bad_destroys() == 0
    with s.capture() as g:  # freed by its dealloc
        lib.axpy[1, 8, 0, s](2.0, x, y)
    del g
    gc.collect()
    assert m.mock_graphs_live() == live and m.mock_bad_destroys() == 0
    with pytest.raises(KeyError):  # a block that raised: nothing made is left
        with s.capture():
            lib.axpy[1, 8, 0, s](2.0, x, y)
            raise KeyError("mine")
    assert m.mock_graphs_live() == live and m.mock_graph_destroys() == destroys + 5


def test_launch_under_a_foreign_capture_is_captured(lib, m):
    """Another library (CuPy's cupy.cuda.graph, torch.cuda.graph) captures the
    stream; bindthem's launch on it becomes part of that graph, legally, and
    leaves the arrays' ordering state as it was."""
    s = cuda.Stream.create()
    other = cuda.Stream.create(non_blocking=True)
    x0, x, y = arrays()
    out = cuda.to_device(np.zeros(8, np.float32))  # made before: no legacy stream in capture
    lib.axpy[1, 8, 0, s](1.0, x, y)  # queued on s before the capture: in-stream order
    assert m.mock_capture_begin(s.handle, 0) == 0
    lib.axpy[1, 8, 0, s](2.0, x, y)
    assert m.mock_capture_status(s.handle) == 1  # still valid: nothing illegal was done
    assert y.stream == s.handle  # the pre-capture write, not the captured one
    # a launch on another stream cannot wait for y's pending work on the capturing
    # stream (it would join the capture): refused, nothing called, the capture intact
    with pytest.raises(cuda.CudaError, match="which is capturing now"):
        lib.axpy[1, 8, 0, other](1.0, y, out)
    # x was never written in the capture: used elsewhere at once, not captured
    lib.axpy[1, 8, 0, other](1.0, x, out)
    other.synchronize()
    np.testing.assert_array_equal(raw(out.ptr), x0)
    assert m.mock_capture_status(s.handle) == 1
    ex = ctypes.c_void_p()
    assert m.mock_capture_end(s.handle, ctypes.byref(ex)) == 0
    np.testing.assert_array_equal(raw(y.ptr), np.ones(8))
    for _ in range(2):
        assert m.mock_graph_launch(ex, s.handle) == 0
    s.synchronize()
    np.testing.assert_array_equal(raw(y.ptr), 1 + x0 + 2 * 2 * x0)
    m.mock_graph_exec_destroy(ex)


def test_arrays_written_in_a_foreign_capture_keep_their_state(lib, m):
    """A write captured (not run) is not recorded: another stream's launch
    during the capture neither waits on the capturing stream (it would join
    the capture) nor is captured; it runs now, on the data as it is."""
    s = cuda.Stream.create()
    other = cuda.Stream.create(non_blocking=True)
    x0, x, y = arrays()
    out = cuda.to_device(np.zeros(8, np.float32))
    assert m.mock_capture_begin(s.handle, 1) == 0
    lib.axpy[1, 8, 0, s](2.0, x, y)  # captured
    assert y.stream is None
    lib.axpy[1, 8, 0, other](1.0, y, out)  # y as it is now: ones
    other.synchronize()
    np.testing.assert_array_equal(raw(out.ptr), np.ones(8))
    ex = ctypes.c_void_p()
    assert m.mock_capture_end(s.handle, ctypes.byref(ex)) == 0  # nothing joined it
    m.mock_graph_exec_destroy(ex)


def test_foreign_capture_refuses_a_wait_across_its_boundary(lib, m):
    s = cuda.Stream.create()
    other = cuda.Stream.create(non_blocking=True)
    x0, x, y = arrays()
    lib.axpy[1, 8, 0, other](1.0, x, y)  # y pending on another stream
    assert m.mock_capture_begin(s.handle, 1) == 0
    before = m.mock_sync_log()
    with pytest.raises(cuda.CudaError, match="outside the capture") as ei:
        lib.axpy[1, 8, 0, s](2.0, x, y)
    assert ei.value.code == 905
    assert m.mock_sync_log() == before  # no wait was made: the capture is intact
    assert m.mock_capture_status(s.handle) == 1
    ex = ctypes.c_void_p()
    assert m.mock_capture_end(s.handle, ctypes.byref(ex)) == 0
    m.mock_graph_exec_destroy(ex)


def test_replay_is_ordered_with_other_streams(lib, m):
    """The replay waits for the arrays' work pending elsewhere; later work
    on other streams waits for the replay."""
    a, s, b = (cuda.Stream.create(non_blocking=True) for _ in range(3))
    x0, x, y = arrays()
    z, out = cuda.to_device(np.zeros(8, np.float32)), cuda.to_device(np.zeros(8, np.float32))
    with s.capture() as g:
        lib.axpy[1, 8, 0, s](1.0, y, z)  # reads y, writes z
    lib.axpy[1, 8, 0, a](1.0, x, y)  # y = x + 1, queued on a after the capture
    np.testing.assert_array_equal(raw(y.ptr), np.ones(8))
    g.launch(s)  # must wait for a's write of y
    assert z.stream == s.handle and y.stream == a.handle
    lib.axpy[1, 8, 0, b](1.0, z, out)  # must wait for the replay on s
    b.synchronize()
    np.testing.assert_array_equal(raw(out.ptr), x0 + 1)
    # write after read: the graph's write of z waits for a read of z pending on a
    lib.axpy[1, 8, 0, a](1.0, z, out)  # reads z on a: queued
    g.launch(s)
    s.synchronize()
    a.synchronize()
    np.testing.assert_array_equal(raw(out.ptr), 2 * (x0 + 1))


def test_captures_on_per_thread_streams_in_eight_threads(lib, m):
    """thread_local captures of each thread's PER_THREAD stream at once: each
    launch goes to its own thread's capture."""
    n = 8
    data = [arrays(np.arange(8, dtype=np.float32) + i) for i in range(n)]
    ready, done = threading.Barrier(n), threading.Barrier(n)
    results, errors = [None] * n, []

    def worker(i):
        try:
            x0, x, y = data[i]
            ready.wait()
            with cuda.PER_THREAD.capture() as g:
                for _ in range(i + 1):
                    lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y)
            done.wait()  # every capture ended before anyone's legacy-stream copy
            for _ in range(2):
                g.launch(cuda.PER_THREAD)
            results[i] = y.copy_to_host()
            g.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            ready.abort()
            done.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, (x0, _, _) in enumerate(data):
        np.testing.assert_array_equal(results[i], 1 + 2 * (i + 1) * x0)
