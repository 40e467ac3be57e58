"""Stream-ordered frees, device-to-device copies and cuLaunchKernelEx under
the ordering rules of tests/cuda/test_cuda_ordering.py, against the mock driver:
a pooled free waits for the last write (its event, for the per-thread
stream) and for every pending read; a copy writes its destination and reads
its source; an attributed launch uses the per-context CUfunction and is
refused after a sticky fault; a forked child frees nothing. Each ordering
test first shows the work still pending, so a missing wait shows as stale
data.
"""


import numpy as np
import pytest
from cuda_support import PRELUDE, launches, raw, run_py

import bindthem.cuda as cuda


@pytest.fixture
def clean(clean):
    yield clean
    cuda.synchronize()


def waits(mock):
    return [line for line in mock.mock_sync_log().decode().splitlines() if line.startswith("wait")]


def test_pooled_free_waits_for_a_read_on_a_non_blocking_stream(lib, clean):
    s = cuda.Stream.create(non_blocking=True)
    x0 = np.arange(1024, dtype=np.float32)
    x = cuda.to_device(x0)
    out = cuda.pinned_empty(1024, np.float32)
    out[:] = 0
    x.copy_to_host(stream=s, out=out)  # a read of x, queued on s
    assert clean.mock_pending() > 0 and not out.any()
    clean.mock_clear_logs()
    del x  # legacy-stream work does not wait for a non-blocking stream by itself
    assert waits(clean) == ["wait 1 %d" % s.handle]
    s.synchronize()
    np.testing.assert_array_equal(out, x0)  # the copy read live memory


def test_pooled_free_after_a_per_thread_write_waits_for_its_event(lib, clean, held):
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    y = cuda.zeros(8, np.float32)
    args = [x, y]
    held(lambda: lib.axpy[1, 8, 0, cuda.PER_THREAD](2.0, *args))
    args.clear()  # the live worker holds no reference to y
    assert clean.mock_pending() > 0  # queued in the worker's per-thread stream
    clean.mock_clear_logs()
    del y
    # the legacy stream waits for the event the worker recorded (handle 2 in
    # the log: the stream it was recorded on), never for this thread's 2
    assert waits(clean) == ["wait 1 2"]
    assert "cuMemFreeAsync" in clean.mock_mem_log().decode()


def test_copy_from_a_per_thread_write_in_another_thread(lib, clean, held):
    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))
    s = cuda.Stream.create(non_blocking=True)
    z = cuda.empty(8, np.float32, stream=s)
    held(lambda: lib.axpy[1, 8, 0, cuda.PER_THREAD](2.0, x, y))
    np.testing.assert_array_equal(raw(y.ptr), np.ones(8))  # still queued in the worker
    z.copy_from(y, stream=s)  # after the worker's event, not this thread's stream 2
    s.synchronize()
    np.testing.assert_array_equal(raw(z.ptr), 2 * x0 + 1)


def test_copy_into_an_array_waits_for_its_pending_read(lib, clean):
    a = cuda.Stream.create(non_blocking=True)
    b = cuda.Stream.create(non_blocking=True)
    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))
    hundred = cuda.to_device(np.full(8, 100, np.float32))
    lib.axpy[1, 8, 0, a](2.0, x, y)  # reads x on a: queued
    x.copy_from(hundred, stream=b)  # writes x on b: after the read
    b.synchronize()
    np.testing.assert_array_equal(raw(x.ptr), np.full(8, 100))
    a.synchronize()
    np.testing.assert_array_equal(raw(y.ptr), 2 * x0 + 1)  # the read saw the old x


def test_a_copy_is_a_read_of_its_source(lib, clean):
    a = cuda.Stream.create(non_blocking=True)
    b = cuda.Stream.create(non_blocking=True)
    y0 = np.arange(8, dtype=np.float32)
    y = cuda.to_device(y0)
    z = cuda.empty(8, np.float32, stream=a)
    fifty = cuda.to_device(np.full(8, 50, np.float32))
    z.copy_from(y, stream=a)  # reads y on a: queued
    assert clean.mock_pending() > 0
    lib.axpy[1, 8, 0, b](1.0, fifty, y)  # writes y on b: after the copy
    b.synchronize()
    np.testing.assert_array_equal(raw(z.ptr), y0)
    np.testing.assert_array_equal(raw(y.ptr), y0 + 50)


def test_synchronous_copy_leaves_nothing_to_wait_for(lib, clean):
    s = cuda.Stream.create(non_blocking=True)
    x = cuda.to_device(np.arange(8, dtype=np.float32), stream=s)
    z = cuda.zeros(8, np.float32, stream=s)
    z.copy_from(x)
    assert z.stream is None
    np.testing.assert_array_equal(raw(z.ptr), np.arange(8))


def test_attributed_launch_uses_the_per_context_function(mock, clean):
    x = cuda.to_device(np.arange(64, dtype=np.float32))
    y = cuda.to_device(np.ones(64, np.float32))
    from cuda_support import HEADER, YAML, module_text

    fresh = cuda.load(module_text(), HEADER, YAML)
    before = clean.mock_get_functions()
    for _ in range(3):
        fresh.axpy[(4, 2), 16](1.0, x, y, cluster=(2, 2))
    fresh.axpy[4, 16](1.0, x, y, cooperative=True)
    assert clean.mock_get_functions() == before + 1  # resolved once, shared by both launch calls
    assert [rec["function"] for rec in launches(clean)] == [1] * 4
    np.testing.assert_array_equal(y.copy_to_host(), 1 + 4 * np.arange(64))


STICKY_EX = PRELUDE + """
    lib = cuda.load(module_text(), HEADER, YAML)
    y = cuda.to_device(np.ones(4, np.float32))
    x = cuda.to_device(np.ones(4, np.float32))
    lib.axpy[2, 2](1.0, x, y, cluster=2)  # its CUfunction resolved before the fault
    lib.scale[1, 4](2.0, y)  # faults on the device
    try:
        cuda.synchronize()
    except cuda.CudaError as e:
        print("sync", e.code)
    try:
        lib.axpy[2, 2](1.0, x, y, cluster=2)
        print("ex no error")
    except cuda.CudaError as e:
        print("ex", e.code, "|", e)
"""


def test_sticky_fault_refuses_an_attributed_launch(mock_path):
    rc, out = run_py(STICKY_EX, mock_path, MOCK_CUDA_FAULT_KERNEL="scale")
    assert rc == 0, out
    assert "sync 700" in out, out
    line = next(ln for ln in out.splitlines() if ln.startswith("ex "))
    assert line.startswith("ex 700 | an earlier kernel faulted"), out
    assert "cuLaunchKernelEx" in line and "axpy<float>" not in line, out


FORK_POOLED = PRELUDE + """
    import os, gc
    from cuda_support import mock_handle
    m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
    lib = cuda.load(module_text(), HEADER, YAML)
    s = cuda.Stream.create(non_blocking=True)
    x = cuda.to_device(np.ones(4, np.float32), stream=s)
    y = cuda.zeros(4, np.float32, stream=s)
    lib.axpy[1, 4, 0, s](1.0, x, y)  # pending: a free would wait for s
    out = cuda.pinned_empty(4, np.float32)
    x.copy_to_host(stream=cuda.Stream.create(non_blocking=True), out=out)
    pid = os.fork()
    if pid == 0:
        try:
            y.copy_from(x, stream=s)
            code = 1
        except cuda.CudaError as e:
            code = 0 if "forked" in str(e) else 2
        del x, y  # pooled, with pending work: no wait, no free from here
        gc.collect()
        os._exit(code or 10 + m.mock_calls_after_fork())
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    s.synchronize()
    print("parent", y.copy_to_host().tolist())
"""


def test_forked_child_neither_waits_nor_frees_pooled_arrays(mock_path):
    rc, out = run_py(FORK_POOLED, mock_path)
    assert rc == 0, out
    assert "child 10" in out, out  # no driver call reached the mock in the child
    assert "parent [1.0, 1.0, 1.0, 1.0]" in out, out
