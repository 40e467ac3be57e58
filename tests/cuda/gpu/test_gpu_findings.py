"""Issue 28's findings on a real GPU (the device check runs this file with
test_gpu.py; marked `gpu`, skipped as those are without a build or device).

The per-thread stream written in one thread and read in another without a
sync, a write on one stream after a slow read on another (and a pooled free
after one), the context of waits and events on a second device, a faulting
kernel (sticky, in a subprocess), a forked child, and a bad PTX under
CUDA_MODULE_LOADING=EAGER and LAZY. The mock tests (tests/cuda/test_cuda_ordering.py,
test_cuda_faults.py, test_cuda_traffic.py) show the same on any machine.
"""

import os
import sys
import textwrap
import threading

import numpy as np
import pytest
from isolation import run_limited, stacks_digest
from probe_hangs import HELPERS
from test_gpu import HAVE_BUILD, HAVE_DEVICE, MANIFEST, Driver, _spin_cycles

import bindthem.cuda as cuda

pytestmark = [pytest.mark.gpu, pytest.mark.isolated(limit=40),
              pytest.mark.skipif(not HAVE_BUILD,
                                 reason="no build: $BINDTHEM_GPU_BUILD/manifest.json missing "
                                        "(run tests/cuda/gpu/run_gpu_check.sh)"),
              pytest.mark.skipif(not HAVE_DEVICE, reason="no CUDA device (driver + GPU)")]

HEAD = """
import json, os, sys
import numpy as np
import bindthem.cuda as cuda
man = json.load(open(%r))
lib = cuda.load(man["module"], man["header"], man["instantiate"])
""" % MANIFEST


def run(code, timeout=15, prelude="", **env):
    """(exit status, output) of ``code`` run after HEAD and ``prelude`` in a
    new process; (None, what it printed) when it passed ``timeout`` s (hung:
    its stacks into stacks.log, killed; isolation.run_limited). Each test
    also runs in a process of its own, with a limit above this one."""
    e = dict(os.environ, **{k: str(v) for k, v in env.items()})
    done = run_limited([sys.executable, "-c", HEAD + prelude + textwrap.dedent(code)], timeout,
                       "a process of " + (os.environ.get("PYTEST_CURRENT_TEST") or "a test"),
                       env=e)
    if done.hung:
        return None, ("hung: killed after %d s (tests/cuda/gpu/probe_hangs.py finds the step)\n"
                      "%s\n%s" % (timeout, stacks_digest(done.stacks), done.output))
    return done.rc, done.output


@pytest.fixture(scope="module")
def lib():
    import json

    with open(MANIFEST) as f:
        man = json.load(f)
    return cuda.load(man["module"], man["header"], man["instantiate"])


def written_in_a_worker(lib, n=4096):
    """y set to 7 then + 2 on a worker thread's per-thread stream, slowly,
    and never synchronized there."""
    y = cuda.to_device(np.zeros(n, np.int32))

    def work():
        lib.spin_then_set[1, 1, 0, cuda.PER_THREAD](y, 7, _spin_cycles(Driver(), ms=100))
        lib.add_value[(n + 255) // 256, 256, 0, cuda.PER_THREAD](y, 2)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    return y


def test_per_thread_write_copied_from_another_thread():
    # hung on the H200 (driver 580) in copy_to_host: run apart, with a limit,
    # so that a hang fails this test only (tests/cuda/gpu/probe_hangs.py: which step)
    rc, out = run(prelude=HELPERS, code="""
        y = cuda.to_device(np.zeros(N, np.int32))
        worker(y).join()  # the writer exits, its work still queued
        print("copied", (y.copy_to_host() == 9).all())
    """)
    assert rc == 0 and "copied True" in out, out


def test_per_thread_write_launched_on_from_another_thread(lib):
    y = written_in_a_worker(lib)
    side = cuda.Stream.create(non_blocking=True)
    lib.add_value[16, 256, 0, side](y, 1)
    side.synchronize()
    assert (y.copy_to_host() == 10).all()


def test_per_thread_write_exported_to_another_thread(lib):
    y = written_in_a_worker(lib)
    assert y.__cuda_array_interface__["stream"] != cuda.PER_THREAD.handle
    cuda.LEGACY.synchronize()  # the exported stream: the write is done after it
    assert (y.copy_to_host() == 9).all()


def test_waits_after_an_exited_writer_return():
    """The cause of both H200 hangs: work an exited thread left on its
    per-thread stream. bindthem has the thread wait for it as it exits, so
    a free (cuMemFree waits for the whole device), a device synchronize and
    a new stream after it all return (tests/cuda/test_cuda_thread_exit.py:
    the mock's model of it)."""
    rc, out = run(prelude=HELPERS, code="""
        import gc
        y = cuda.to_device(np.zeros(N, np.int32))
        x = cuda.to_device(np.ones(N, np.int32))
        worker(y).join()  # the writer exits: its work is done first
        del x
        gc.collect()
        cuda.synchronize()
        cuda.Stream.create()
        print("done", (y.copy_to_host() == 9).all())
    """, BINDTHEM_CUDA_NO_POOL=1)
    assert rc == 0 and "done True" in out, out


def test_write_after_read_on_another_stream():
    """A slow kernel reads x on stream a; a write of x queued on stream b
    right after must wait for it (non-blocking streams order nothing by
    themselves): the read sees the old x. Hung on the H200 (driver 580) in
    Stream.create after other tests: run apart, with a limit."""
    rc, out = run(prelude=HELPERS, code="""
        n = 4096
        x = cuda.to_device(np.full(n, 3, np.int32))
        out = cuda.to_device(np.zeros(n, np.int32))
        a = cuda.Stream.create(non_blocking=True)
        b = cuda.Stream.create(non_blocking=True)
        lib.spin_then_copy[1, 1, 0, a](x, out, SPIN)
        lib.add_value[(n + 255) // 256, 256, 0, b](x, 10)
        b.synchronize()
        a.synchronize()
        print("read", (out.copy_to_host() == 3).all(), "written", (x.copy_to_host() == 13).all())
        # a pooled free of an array read on a non-blocking stream waits for the read
        y = cuda.to_device(np.full(n, 5, np.int32))
        lib.spin_then_copy[1, 1, 0, a](y, out, SPIN)
        del y
        z = cuda.to_device(np.zeros(n, np.int32))  # may reuse y's memory from the pool
        lib.add_value[(n + 255) // 256, 256](z, 1)
        a.synchronize()
        print("pooled", (out.copy_to_host() == 5).all())
    """)
    assert rc == 0, out
    assert "read True" in out, "the write on b overtook the read on a:\n" + out
    assert "written True" in out, out
    assert "pooled True" in out, "the memory was reused before the read ran:\n" + out


def test_a_faulting_kernel_is_sticky_and_blames_no_later_launch():
    rc, out = run("""
        y = cuda.to_device(np.zeros(4, np.int32))
        n = 1 << 28  # far past the 16 bytes behind the pointer: unmapped memory
        big = type("Big", (), {"__cuda_array_interface__": {
            "shape": (n,), "typestr": "<i4", "data": (y.ptr, False), "version": 3,
            "strides": None, "stream": None}})()
        lib.add_value[n // 256, 256](big, 1)
        for what, call in [("sync", cuda.synchronize),
                           ("launch", lambda: lib.add_value[1, 4](y, 1))]:
            try:
                call()
                print(what, "no error")
            except cuda.CudaError as e:
                print(what, e.code, "|", e)
    """)
    assert rc == 0, out
    for what in ("sync", "launch"):
        line = [x for x in out.splitlines() if x.startswith(what + " ")][0]
        assert "an earlier kernel faulted" in line and "unusable" in line, out
        assert "add_value(" not in line.split("|")[1].split("refused")[0], out


def test_a_fault_on_one_device_leaves_the_other_working():
    """Sticky errors are per context: device 0's fault refuses device 0's
    launches; device 1 still computes."""
    if cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices (optional hardware not installed)")
    rc, out = run("""
        y = cuda.to_device(np.zeros(4, np.int32), device=0)
        y1 = cuda.to_device(np.zeros(4, np.int32), device=1)
        n = 1 << 28  # far past the 16 bytes behind the pointer: unmapped memory
        big = type("Big", (), {"__cuda_array_interface__": {
            "shape": (n,), "typestr": "<i4", "data": (y.ptr, False), "version": 3,
            "strides": None, "stream": None}})()
        lib.add_value[n // 256, 256](big, 1)
        try:
            cuda.synchronize()
        except cuda.CudaError as e:
            print("device 0", e.code)
        lib.add_value[1, 4](y1, 3)
        print("device 1", y1.copy_to_host().tolist())
    """)
    assert rc == 0, out
    assert "device 0 7" in out and "device 1 [3, 3, 3, 3]" in out, out


def test_a_forked_child_is_refused_clearly():
    rc, out = run("""
        y = cuda.to_device(np.zeros(4, np.int32))
        lib.add_value[1, 4](y, 1)
        pid = os.fork()
        if pid == 0:
            try:
                lib.add_value[1, 4](y, 1)
                os._exit(1)
            except cuda.CudaError as e:
                os._exit(0 if "forked" in str(e) else 2)
        _, st = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(st))
        lib.add_value[1, 4](y, 1)
        print("parent", y.copy_to_host().tolist())
    """)
    assert rc == 0, out
    assert "child 0" in out and "parent [2, 2, 2, 2]" in out, out


@pytest.mark.parametrize("mode", ["EAGER", "LAZY"])
def test_bad_ptx_reports_its_jit_log(mode):
    rc, out = run("""
        ptx = open(man["ptx"], "rb").read().replace(b".entry", b".entryy", 1)
        try:
            cuda.load(ptx, man["header"], man["instantiate"])
            print("loaded")
        except Exception as e:
            print(type(e).__name__, "|", e)
    """, CUDA_MODULE_LOADING=mode)
    assert rc == 0, out
    assert "CudaError" in out and ("log follows" in out or "ptxas" in out), out


def test_waits_and_events_on_a_second_device(lib):
    if cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA devices (optional hardware not installed)")
    cuda.synchronize()  # device 0's context current
    s1 = cuda.Stream.create(device=1, non_blocking=True)
    y = cuda.to_device(np.ones(4, np.float32), device=1, stream=s1)
    y.__dlpack__(stream=1)
    ev = cuda.Event()
    ev.record(s1)
    ev.synchronize()
    assert (y.copy_to_host() == 1).all()
