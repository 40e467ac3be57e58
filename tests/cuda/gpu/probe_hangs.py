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

    python tests/cuda/gpu/probe_hangs.py --list     the cases' names

OUTDIR is build_kernels.py's (it holds manifest.json). The results go to
stdout and, line by line, to hangs.log in $BINDTHEM_GPU_BUILD and $OUT
(where set), each case's verdict into OUTDIR/hangs.json (summarize.py's
"Hang probe" section). A case is limited to $BINDTHEM_GPU_PROBE_LIMIT s
(default 10), cut to what is left before $BINDTHEM_GPU_DEADLINE; one that
would start with too little left is "not run". Exit status 0 when every
case passed, 1 otherwise. run_gpu_check.sh runs it after the tests, in the
same call.
"""

import json
import os
import sys
import textwrap
import time

from isolation import DEADLINE_ENV, MIN_START, STACKS_LIMIT, log_append, run_limited, stacks_digest

# seconds a case may take: each one's GPU work is about 0.2 s, its process
# start (Python, NumPy, bindthem, a CUDA context) about 1 s
LIMIT = float(os.environ.get("BINDTHEM_GPU_PROBE_LIMIT", "10"))

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
# the driver's own calls, through ctypes: a hang there is the driver's, shown
# but not counted against bindthem (summarize.py)
DRIVER_ONLY = {"writer exited with work queued, driver's cuCtxSynchronize, copied",
               "writer exited with work queued, driver's cuStreamCreate"}


def say(line):
    print(line, flush=True)
    log_append("hangs.log", line + "\n")


def _left():
    deadline = os.environ.get(DEADLINE_ENV)
    return float(deadline) - time.time() if deadline else None


def run_case(name, code, manifest):
    """One case in a process of its own: its verdict, said and returned."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if name in EAGER:
        env["CUDA_MODULE_LOADING"] = "EAGER"
    limit, left = LIMIT, _left()
    res = {"case": name, "counts": name not in DRIVER_ONLY}
    if left is not None and left < MIN_START + STACKS_LIMIT + 2:
        res.update(verdict="not run: the check's budget is spent", took=0, last_step="")
        say("%-80s %s" % (name, res["verdict"]))
        return res
    if left is not None:
        limit = min(limit, left - STACKS_LIMIT - 2)
    done = run_limited([sys.executable, "-c", HEAD + textwrap.dedent(code), manifest], limit,
                       "hang probe: " + name, env=env)
    if done.hung:
        verdict = "HUNG (over %.0f s)" % limit
    else:
        verdict = "passed" if done.rc == 0 else "failed (exit %d)" % done.rc
    steps = [ln[len("step: "):] for ln in done.output.splitlines() if ln.startswith("step: ")]
    res.update(verdict=verdict, took=round(done.took, 2), last_step=steps[-1] if steps else "")
    say("%-80s %s in %.1f s; last step: %s" % (name, verdict, done.took,
                                               res["last_step"] or "(none)"))
    if verdict != "passed":
        say(textwrap.indent(done.output[-6000:], "    | "))
    if done.stacks:
        say(textwrap.indent(stacks_digest(done.stacks), "    # "))
    return res


def main(argv):
    if argv == ["--list"]:
        print("\n".join(CASES))
        return 0
    manifest = os.path.join(argv[0], "manifest.json")
    names = argv[1:] or list(CASES)
    for d in filter(None, (os.environ.get("BINDTHEM_GPU_BUILD"), os.environ.get("OUT"))):
        if os.path.isdir(d):
            open(os.path.join(d, "hangs.log"), "w").close()
    results = [run_case(n, CASES[n], manifest) for n in names]
    with open(os.path.join(argv[0], "hangs.json"), "w") as f:
        json.dump(results, f, indent=1)
    ok = all(r["verdict"] == "passed" for r in results)
    say("every case passed" if ok else "some cases did not pass")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
