"""bindthem.cuda's objects shared by threads, against the mock driver
(tests/cuda/mock/mock_cuda.c): 4 threads launch on the same DeviceArrays
(reads and writes, on streams of their own, shared streams, the legacy and
the per-thread stream), copy them, export __cuda_array_interface__ and drop
arrays, and every result the mock computes is checked. On free-threaded
CPython (3.13t, PYTHON_GIL=0) the threads really run at once (each array's
ordering state under its critical section); tests/run_tsan.sh runs this file
under ThreadSanitizer; with the GIL it is a quick check of the same code.
The first sticky fault and the pool question, met by threads at once, run
in a subprocess (they change the driver for the rest of the process)."""

import os
import sysconfig
import threading
import time

import numpy as np
from cuda_support import PRELUDE, run_py

import bindthem.cuda as cuda

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
THREADS = 4
SECONDS = float(os.environ.get("BINDTHEM_FT_SECONDS", "1.0" if FREE_THREADED else "0.3"))
N = 8
X0 = np.arange(N, dtype=np.float32)


def hammer(work):
    """work(t, stop) in THREADS threads at once; re-raises the first failure."""
    errors, start = [], threading.Barrier(THREADS)
    stop = time.monotonic() + SECONDS

    def run(t):
        try:
            start.wait()
            work(t, stop)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def test_threads_share_device_arrays(lib, clean):
    x = cuda.to_device(X0)  # read by every thread, never written
    shared = cuda.to_device(np.ones(N, np.float32))  # written by all (y = 0 x + y: unchanged)
    copied = cuda.to_device(np.zeros(N, np.float32))  # copied into by all (the same values)
    common = [cuda.Stream.create(non_blocking=True) for _ in range(2)]
    sums, reads, counts = {}, {}, {}
    handles = {cuda.LEGACY.handle, cuda.PER_THREAD.handle} | {s.handle for s in common}

    def work(t, stop):
        own = cuda.Stream.create(non_blocking=True)
        streams = [own, cuda.PER_THREAD, cuda.LEGACY] + common
        handles.add(own.handle)
        acc = cuda.to_device(np.zeros(N, np.float32))  # acc += x per launch
        got = cuda.to_device(np.zeros(N, np.float32))  # got += shared per launch
        n = m = k = i = 0
        while time.monotonic() < stop or i < 10:
            s = streams[i % len(streams)]
            lib.axpy[1, N, 0, s](1.0, x, acc)  # reads x, writes acc
            n += 1
            lib.axpy[1, N, 0, streams[(i + 1) % len(streams)]](0.0, x, shared)  # writes shared
            lib.axpy[1, N, 0, streams[(i + 2) % len(streams)]](1.0, shared, got)  # reads it
            m += 1
            if i % 3 == 0:  # a copy of x on a stream, its result checked
                c = x.copy(stream=s)
                np.testing.assert_array_equal(c.copy_to_host(), X0)
                del c  # dropped: freed after its pending work
            if i % 3 == 1:
                copied.copy_from(x, stream=s if i % 2 else None)
                tmp = cuda.to_device(X0, stream=s)
                if i % 2:  # tmp read, shared written (0 tmp + shared: unchanged)
                    lib.axpy[1, N, 0, s](0.0, tmp, shared)
                else:
                    lib.axpy[1, N, 0, s](1.0, tmp, got)
                k += i % 2 == 0
                del tmp
            if i % 3 == 2:
                cai = shared.__cuda_array_interface__
                assert cai["data"][0] == shared.ptr
                # None: a synchronous copy in another thread waited for the last write
                assert cai["stream"] is None or cai["stream"] in handles, cai
                np.testing.assert_array_equal(shared.copy_to_host(stream=s), np.ones(N))
            i += 1
        cuda.PER_THREAD.synchronize()
        sums[t], reads[t], counts[t] = acc.copy_to_host(), got.copy_to_host(), (n, m, k)
        own.synchronize()

    hammer(work)
    cuda.synchronize()
    assert sorted(sums) == list(range(THREADS))
    for t in range(THREADS):
        n, m, k = counts[t]
        np.testing.assert_array_equal(sums[t], n * X0)
        np.testing.assert_array_equal(reads[t], m + k * X0)
    np.testing.assert_array_equal(shared.copy_to_host(), np.ones(N))
    np.testing.assert_array_equal(copied.copy_to_host(), X0)
    np.testing.assert_array_equal(x.copy_to_host(), X0)


MEANWHILE = PRELUDE + """
    import os, threading, time, ctypes
    from cuda_support import mock_handle
    m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
    m.mock_in_sync.restype = ctypes.c_int
    lib = cuda.load(module_text(), HEADER, YAML)
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    a = cuda.to_device(np.zeros(8, np.float32))
    side = cuda.Stream.create(non_blocking=True)

    def writer():  # while the copy below waits: a = x + a queued on side
        while not m.mock_in_sync():
            time.sleep(0.001)
        lib.axpy[1, 8, 0, side](1.0, x, a)

    t = threading.Thread(target=writer)
    t.start()
    a.copy_to_host()  # synchronous (the mock sleeps in it)
    t.join()
    print(a.stream == side.handle, a.copy_to_host().tolist() == list(range(8)))
"""


def test_a_synchronous_copy_keeps_a_write_made_meanwhile(mock_path):
    """copy_to_host() (no stream) forgets the last write it waited for; not
    a write another thread recorded while the copy ran: a later copy must
    still wait for that one (else it reads stale data)."""
    rc, out = run_py(MEANWHILE, mock_path, MOCK_CUDA_SLEEP_MS=300)
    assert rc == 0, out
    assert out.split()[-2:] == ["True", "True"], out


STICKY = PRELUDE + """
    import threading
    lib = cuda.load(module_text(), HEADER, YAML)
    ys = [cuda.to_device(np.ones(4, np.float32)) for _ in range(4)]
    x = cuda.to_device(np.ones(4, np.float32))
    go = threading.Barrier(4)
    seen = []

    def work(t):
        go.wait()
        for _ in range(50):
            try:
                lib.scale[1, 4](2.0, ys[t])  # faults when it runs
                cuda.synchronize()
            except cuda.CudaError as e:
                seen.append(str(e).split("first reported by ")[1].split(")")[0])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    print(len(seen), len(set(seen)))
"""

POOLS = PRELUDE + """
    import threading
    go = threading.Barrier(8)
    arrays = []

    def work():
        go.wait()
        arrays.append(cuda.empty(16, np.float32, stream=cuda.PER_THREAD))
        cuda.PER_THREAD.synchronize()

    threads = [threading.Thread(target=work) for _ in range(8)]
    [th.start() for th in threads]
    [th.join() for th in threads]
    from cuda_support import mock_handle
    import os
    log = mock_handle(os.environ["BINDTHEM_LIBCUDA"]).mock_mem_log().decode()
    print(len(arrays), log.count('"cuMemAllocAsync"'), log.count('"cuMemAlloc"'))
"""


def test_threads_that_fault_at_once_name_one_first_fault(mock_path):
    rc, out = run_py(STICKY, mock_path, MOCK_CUDA_FAULT_KERNEL="scale")
    assert rc == 0, out
    n, distinct = map(int, out.split()[-2:])
    assert n >= 4 and distinct == 1, out  # every thread names the same first report


def test_threads_that_allocate_first_at_once_all_use_the_pool(mock_path):
    rc, out = run_py(POOLS, mock_path)
    assert rc == 0, out
    assert out.split()[-3:] == ["8", "8", "0"], out
