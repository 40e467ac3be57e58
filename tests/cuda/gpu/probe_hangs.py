"""Which step hangs, for the two device-check tests that hung on the H200
(driver 580, CUDA 13.0) and stopped the rest of test_gpu_findings.py:
test_per_thread_write_copied_from_another_thread (in ``y.copy_to_host()``)
and test_write_after_read_on_another_stream (in ``cuda.Stream.create()``).
Each case runs in its own process with a limit; one that passes its limit
has its native stacks taken (gdb or cuda-gdb, when there is one) and its
Python stacks (faulthandler on SIGUSR1, which needs no GIL), then is killed.
The cases tell apart: work still queued on the per-thread stream of a
thread that has exited (against a writer still alive, or one whose work
was done before it exited), bindthem's waits against the driver's own
calls (through ctypes), and lazy against eager module loading.

    python tests/cuda/gpu/probe_hangs.py OUTDIR [CASE ...]

OUTDIR is build_kernels.py's (it holds manifest.json); the results go to
stdout and, line by line, to $OUT/hangs.log when $OUT is set. Exit status
0 when every case passed, 1 otherwise. With the device tool, after
tests/cuda/gpu/prepare_device.sh here:
    carry:   ["bindthem/_core.cpython-312-x86_64-linux-gnu.so", "bindthem/_libs"]
    command: python3 tests/cuda/gpu/build_kernels.py build/gpu-check &&
             python3 tests/cuda/gpu/probe_hangs.py build/gpu-check
"""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

LIMIT = 15  # seconds a case may take: each one's GPU work is about 0.2 s

# a case's process: Python stacks on SIGUSR1 (faulthandler: no GIL needed)
PRELUDE = """
import ctypes, faulthandler, json, signal, sys, threading, time
import numpy as np
import bindthem.cuda as cuda
faulthandler.register(signal.SIGUSR1, all_threads=True)
"""
# what the cases (and test_gpu_findings.py's run()) use, `lib` bound: SPIN, N,
# step, check, raw_context, worker (a per-thread-stream writer) and copied
HELPERS = """
import ctypes, threading
cu = ctypes.CDLL(cuda.driver()["path"])
rate = ctypes.c_int()
cu.cuDeviceGetAttribute(ctypes.byref(rate), 13, 0)  # CLOCK_RATE, kHz
SPIN = (rate.value or 2000000) * 100  # 100 ms of clock64()
N = 4096


def step(what):
    print("step:", what, flush=True)


def check(rc, what):
    if rc:
        raise RuntimeError("%s: CUresult %d" % (what, rc))


def raw_context():
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")


def worker(y, hold=None, finish=False):
    # y = 7 after a 100 ms spin, then + 2, on the worker's per-thread stream
    launched = threading.Event()

    def work():
        lib.spin_then_set[1, 1, 0, cuda.PER_THREAD](y, 7, SPIN)
        lib.add_value[(N + 255) // 256, 256, 0, cuda.PER_THREAD](y, 2)
        if finish:
            cuda.PER_THREAD.synchronize()
        launched.set()
        if hold is not None:
            hold.wait(30)

    t = threading.Thread(target=work)
    t.start()
    launched.wait(30)
    step("worker launched" + (", its stream drained" if finish else ""))
    return t


def copied(y, want):
    got = y.copy_to_host()
    step("copied")
    assert (got == want).all(), got[:8]
"""
HEAD = PRELUDE + """
man = json.load(open(sys.argv[1]))
lib = cuda.load(man["module"], man["header"], man["instantiate"])
""" + HELPERS + """
y = cuda.to_device(np.zeros(N, np.int32))
step("set up")
"""

CASES = {
    "control: launched on this thread's per-thread stream, copied": """
        lib.spin_then_set[1, 1, 0, cuda.PER_THREAD](y, 7, SPIN)
        lib.add_value[(N + 255) // 256, 256, 0, cuda.PER_THREAD](y, 2)
        copied(y, 9)
    """,
    "writer exited with work queued, copied (the hung test)": """
        worker(y).join()
        step("worker exited")
        copied(y, 9)
    """,
    "writer exited with work queued, copied under CUDA_MODULE_LOADING=EAGER": """
        worker(y).join()
        step("worker exited")
        copied(y, 9)
    """,
    "writer still alive, copied": """
        hold = threading.Event()
        t = worker(y, hold)
        copied(y, 9)
        hold.set()
        t.join()
    """,
    "writer drained its stream, exited, copied": """
        worker(y, finish=True).join()
        step("worker exited")
        copied(y, 9)
    """,
    "writer exited with work queued, 1 s later copied": """
        worker(y).join()
        time.sleep(1)
        step("worker exited, 1 s passed")
        copied(y, 9)
    """,
    "writer exited with work queued, driver's cuCtxSynchronize, copied": """
        worker(y).join()
        raw_context()
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        step("cuCtxSynchronize returned")
        copied(y, 9)
    """,
    "writer exited with work queued, driver's cuStreamCreate": """
        worker(y).join()
        raw_context()
        s = ctypes.c_void_p()
        check(cu.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")
        step("cuStreamCreate returned")
        check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
        step("cuCtxSynchronize returned")
    """,
    "writer exited with work queued, Stream.create": """
        worker(y).join()
        cuda.Stream.create(non_blocking=True)
        step("Stream.create returned")
        cuda.synchronize()
        step("synchronized")
    """,
    "write after read on another stream (the other hung test), fresh process": """
        x = cuda.to_device(np.full(N, 3, np.int32))
        out = cuda.to_device(np.zeros(N, np.int32))
        a = cuda.Stream.create(non_blocking=True)
        step("stream a")
        b = cuda.Stream.create(non_blocking=True)
        step("stream b")
        lib.spin_then_copy[1, 1, 0, a](x, out, SPIN)
        lib.add_value[(N + 255) // 256, 256, 0, b](x, 10)
        b.synchronize()
        a.synchronize()
        step("synchronized")
        copied(out, 3)
        copied(x, 13)
    """,
    "write after read, after a writer that exited with work queued": """
        worker(y).join()
        cuda.LEGACY.synchronize()
        step("legacy stream synchronized")
        a = cuda.Stream.create(non_blocking=True)
        step("stream a")
    """,
}
EAGER = {"writer exited with work queued, copied under CUDA_MODULE_LOADING=EAGER"}


def say(line, log):
    print(line, flush=True)
    if log is not None:
        log.write(line + "\n")
        log.flush()


def native_stacks(pid):
    for gdb in ("cuda-gdb", "gdb"):
        path = shutil.which(gdb) or shutil.which(gdb, path="/usr/local/cuda/bin")
        if path:
            try:
                cmd = [path, "-p", str(pid), "-batch", "-ex", "thread apply all bt 25"]
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=40)
                return r.stdout[-12000:] + r.stderr[-2000:]
            except subprocess.TimeoutExpired:
                return "%s timed out" % gdb
    return "(no gdb or cuda-gdb here: no native stacks)"


def run_case(name, code, manifest, log):
    env = dict(os.environ)
    if name in EAGER:
        env["CUDA_MODULE_LOADING"] = "EAGER"
    start = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", HEAD + textwrap.dedent(code), manifest],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        out, _ = p.communicate(timeout=LIMIT)
        took = time.monotonic() - start
        verdict = "passed" if p.returncode == 0 else "failed (exit %d)" % p.returncode
        stacks = ""
    except subprocess.TimeoutExpired:
        took = time.monotonic() - start
        verdict = "HUNG (over %d s)" % LIMIT
        stacks = native_stacks(p.pid)
        p.send_signal(signal.SIGUSR1)  # Python stacks, through faulthandler
        time.sleep(1)
        p.kill()
        out, _ = p.communicate()
    steps = [ln[len("step: "):] for ln in out.splitlines() if ln.startswith("step: ")]
    say("%-80s %s in %.1f s; last step: %s" % (name, verdict, took,
                                               steps[-1] if steps else "(none)"), log)
    if verdict != "passed":
        say(textwrap.indent(out[-6000:], "    | "), log)
    if stacks:
        say(textwrap.indent(stacks, "    # "), log)
    return verdict == "passed"


def main(argv):
    manifest = os.path.join(argv[0], "manifest.json")
    names = argv[1:] or list(CASES)
    log = None
    if os.environ.get("OUT"):
        os.makedirs(os.environ["OUT"], exist_ok=True)
        log = open(os.path.join(os.environ["OUT"], "hangs.log"), "w")
    ok = all([run_case(n, CASES[n], manifest, log) for n in names])
    say("every case passed" if ok else "some cases did not pass", log)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
