"""Per-thread streams that cannot hang: a thread's work on cuda.PER_THREAD is
finished before the thread is gone, and no blocking driver call is made with
the GIL held.

The mock driver (tests/cuda/mock/mock_cuda.c) models what a device does
when a thread exits with work on its per-thread stream: that work never runs,
and whatever waits for it (an event recorded there, a free or a device
synchronize, which wait for all the device's work) would wait forever; the
mock says "mock_cuda: hang" and ends the process with status 86. So each case
runs in a subprocess. Without the sentinel of bt_cudapy_ptds.c every case
below hangs.
"""

import textwrap

import pytest
from cuda_support import PRELUDE, run_py

HANG = 86

WRITER = PRELUDE + textwrap.dedent("""
    import gc, threading, time
    from cuda_support import mock_handle
    lib = cuda.load(module_text(), HEADER, YAML)
    _mock = mock_handle(cuda.driver()["path"])

    def join(t, n):
        # join() returns before the thread's pthread is gone: wait until the
        # mock saw n threads exit (their per-thread streams dead), so that what
        # follows meets the dead stream, never a live one that still runs its work
        t.join()
        end = time.monotonic() + 30
        while _mock.mock_threads_exited() < n and time.monotonic() < end:
            time.sleep(0.001)
        assert _mock.mock_threads_exited() >= n, "the worker's pthread did not exit"

    x0 = np.arange(8, dtype=np.float32)
    x, y = cuda.to_device(x0), cuda.to_device(np.ones(8, np.float32))

    def worker():  # queues y = 2 x + y on its per-thread stream, and exits
        lib.axpy[1, 8, 0, cuda.PER_THREAD](2.0, x, y)

    t = threading.Thread(target=worker)
    t.start()
    join(t, 1)
""")


def run_case(mock_path, code, **env):
    rc, out = run_py(WRITER + textwrap.dedent(code), mock_path, **env)
    assert rc != HANG, "a wait hung on an exited thread's per-thread stream:\n" + out
    assert rc == 0, out
    return out


def test_an_exited_writer_finished_its_work(mock_path):
    out = run_case(mock_path, """
        from cuda_support import mock_handle, raw
        m = mock_handle(cuda.driver()["path"])
        print(m.mock_pending(), raw(y.ptr).tolist())
        print(y.copy_to_host().tolist())
    """)
    want = [float(2 * i + 1) for i in range(8)]
    assert out.splitlines() == ["0 %s" % want, str(want)]


@pytest.mark.parametrize("then", [
    "del x; gc.collect()",  # cuMemFree (no pool) waits for the whole device
    "cuda.synchronize()",  # cuCtxSynchronize
    "y.copy_to_host()",  # the write's event, recorded on the dead thread's stream
    "cuda.Stream.create(); del x; gc.collect(); cuda.Stream.create()",
    "lib.axpy[1, 8, 0, cuda.Stream.create(non_blocking=True)](1.0, y, x); cuda.synchronize()",
])
def test_waits_after_an_exited_writer_return(mock_path, then):
    out = run_case(mock_path, then + "\nprint('done')", BINDTHEM_CUDA_NO_POOL=1)
    assert out.endswith("done\n")


def test_an_exited_threads_event_is_reached(mock_path):
    run_case(mock_path, """
        box = []
        def recorder():
            lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y)
            box.append(cuda.Event().record(cuda.PER_THREAD))
        t = threading.Thread(target=recorder)
        t.start()
        join(t, 2)
        box[0].synchronize()
        assert box[0].query()
    """)


def test_the_thread_drains_once_with_the_gil_released(mock_path):
    """The exiting thread synchronizes its per-thread stream itself (the
    mock's log), once however often it used cuda.PER_THREAD, and not with
    the GIL held."""
    out = run_case(mock_path, """
        from cuda_support import mock_handle
        m = mock_handle(cuda.driver()["path"])
        m.mock_clear_logs()

        def worker():
            lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y)
            lib.axpy[1, 8, 0, cuda.PER_THREAD](1.0, x, y)

        t = threading.Thread(target=worker)
        t.start()
        join(t, 2)
        print([l for l in m.mock_sync_log().decode().splitlines() if l.startswith("stream")])
        print(repr(m.mock_gil_log().decode()))
    """)
    syncs, gil = out.splitlines()
    assert syncs == "['stream 2']"  # one drain: stream 2, in the one device's context
    assert gil == "''"


def test_no_blocking_call_holds_the_gil(mock_path):
    """Synchronizes, copies, frees (also of pooled, pinned and managed
    memory), event waits, module unloads, a managed array's host view, a
    DLPack copy to the host, a graph's capture and replay: the mock logs each
    blocking call made with the GIL held, and there is none."""
    out = run_case(mock_path, """
        from cuda_support import mock_handle
        m = mock_handle(cuda.driver()["path"])
        m.mock_clear_logs()
        s = cuda.Stream.create()
        z = cuda.zeros(8, np.float32, stream=s)
        lib.axpy[1, 8, 0, s](1.0, x, z)
        s.synchronize()
        cuda.Event().record(s).synchronize()
        z.copy_to_host()
        z.copy_from(np.ones(8, np.float32))
        p = cuda.pinned_empty(8, np.float32)
        cuda.to_device(p)
        u = cuda.managed_zeros(8, np.float32)  # managed memory read on the host
        lib.axpy[1, 8, 0, s](1.0, x, u)
        u.host_view()
        u.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=True)
        c = cuda.Stream.create(non_blocking=True)  # a graph captured and replayed
        with c.capture() as g:
            lib.axpy[1, 8, 0, c](1.0, x, u)
        g.launch(c)
        c.synchronize()
        g.close()
        del p, z, x, y, u, lib
        gc.collect()
        cuda.synchronize()
        print(repr(m.mock_gil_log().decode()))
        print(m.mock_live_allocs())
    """)
    assert out.splitlines()[0] == "''", out
