"""CUDA failures as a real driver has them, against the mock driver: a
kernel's fault is asynchronous and sticky (every later call in the context
fails with it), a child of fork() can use none of its parent's CUDA state,
and lazy loading (CUDA_MODULE_LOADING=LAZY) runs a PTX JIT late. Each runs
in a subprocess: they break the driver for the rest of the process.
"""

from cuda_support import PRELUDE, run_py

FAULT = PRELUDE + """
    lib = cuda.load(module_text(), HEADER, YAML)
    y = cuda.to_device(np.ones(4, np.float32))
    x = cuda.to_device(np.ones(4, np.float32))
    lib.axpy[1, 4](1.0, x, y)  # fine
    lib.scale[1, 4](2.0, y)  # faults on the device: the launch itself succeeds
    print("queued")
    for what, call in [("launch", lambda: lib.axpy[1, 4](1.0, x, y)),
                       ("sync", cuda.synchronize),
                       ("again", lambda: lib.axpy[1, 4](1.0, x, y))]:
        try:
            call()
            print(what, "no error")
        except cuda.CudaError as e:
            print(what, e.code, "|", e)
"""


def test_a_fault_is_sticky_named_and_blamed_on_no_later_kernel(mock_path):
    rc, out = run_py(FAULT, mock_path, MOCK_CUDA_FAULT_KERNEL="scale")
    assert rc == 0, out
    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    assert "queued" in out
    for what in ("launch", "sync", "again"):
        sticky = "700 | an earlier kernel faulted: CUDA_ERROR_ILLEGAL_ADDRESS"
        assert lines[what].startswith(sticky), out
        assert "this CUDA context (device 0) is unusable until the process restarts" \
            in lines[what], out
        # the innocent launch is not named as the cause
        assert "axpy<float>" not in lines[what], out
    # remembered: the first report is named in every later one
    first = lines["launch"].split("first reported by ")[1].split(")")[0]
    assert first in lines["sync"] and first in lines["again"], out


PER_CONTEXT = PRELUDE + """
    lib = cuda.load(module_text(), HEADER, YAML)
    y0 = cuda.to_device(np.ones(4, np.float32), device=0)
    x1 = cuda.to_device(np.arange(4, dtype=np.float32), device=1)
    y1 = cuda.to_device(np.ones(4, np.float32), device=1)
    lib.scale[1, 4](2.0, y0)  # faults in device 0's context
    try:
        lib.axpy[1, 4](1.0, y0, y0)
    except cuda.CudaError as e:
        print("device 0:", e)
    lib.axpy[1, 4](1.0, x1, y1)  # device 1's context is untouched
    print("device 1:", y1.copy_to_host().tolist())
    try:
        lib.axpy[1, 4](1.0, y0, y0)
    except cuda.CudaError as e:
        print("device 0 again:", e.code)
"""


def test_a_fault_ends_its_context_not_the_others(mock_path):
    """Sticky errors are per context: a fault on device 0 refuses device 0's
    launches, while device 1 still computes."""
    rc, out = run_py(PER_CONTEXT, mock_path, MOCK_CUDA_FAULT_KERNEL="scale", MOCK_CUDA_DEVICES=2)
    assert rc == 0, out
    lines = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in lines["device 0"], out
    assert "this CUDA context (device 0) is unusable" in lines["device 0"], out
    assert "other contexts (other devices') still work" in lines["device 0"], out
    assert lines["device 1"] == "[1.0, 2.0, 3.0, 4.0]", out
    assert lines["device 0 again"] == "700", out


FORK = PRELUDE + """
    import os, gc
    from cuda_support import mock_handle
    m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
    lib = cuda.load(module_text(), HEADER, YAML)
    y = cuda.to_device(np.ones(4, np.float32))
    lib.scale[1, 4](2.0, y)
    pid = os.fork()
    if pid == 0:
        code = 0
        for call in (lambda: lib.scale[1, 4](2.0, y), lambda: cuda.to_device(np.ones(2)),
                     cuda.synchronize, lambda: y.copy_to_host()):
            try:
                call()
                code = code or 1
            except cuda.CudaError as e:
                if "forked" not in str(e) or "spawn" not in str(e):
                    print("child message:", e, flush=True)
                    code = code or 2
        del y  # the parent's memory: not freed from here
        gc.collect()
        os._exit(code or 10 + m.mock_calls_after_fork())
    _, status = os.waitpid(pid, 0)
    print("child", os.waitstatus_to_exitcode(status))
    lib.scale[1, 4](2.0, y)
    print("parent", y.copy_to_host().tolist())
"""


def test_a_forked_child_is_refused_clearly_and_frees_nothing(mock_path):
    rc, out = run_py(FORK, mock_path)
    assert rc == 0, out
    assert "child 10" in out, out  # every call refused by bindthem, none reached the driver
    assert "parent [1.0, 1.0, 1.0, 1.0]" in out, out  # (scale does not run in the mock)


LAZY = PRELUDE + """
    import os, threading, time
    from cuda_support import mock_handle
    m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
    ticks, done = [0], []

    def tick():
        while not done:
            if m.mock_in_jit():
                ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        cuda.load(module_text(extra=["jit-error ptx line 7; unknown symbol 'foo'"]), HEADER, YAML)
        print("loaded")
    except cuda.CudaError as e:
        print("error:", e)
    done.append(1)
    t.join()
    print("ticks during the JIT", ticks[0])
"""


def test_lazy_loading_keeps_the_jit_log_and_releases_the_gil(mock_path):
    rc, out = run_py(LAZY, mock_path, CUDA_MODULE_LOADING="LAZY",
                     MOCK_CUDA_SLEEP_MS=300)
    assert rc == 0, out
    assert "CUDA_ERROR_INVALID_PTX" in out, out
    assert "lazy loading" in out and "ptxas fatal   : ptx line 7; unknown symbol 'foo'" in out, out
    ticks = int(out.rsplit(" ", 1)[1])
    assert ticks > 20, out  # other threads ran while the deferred JIT did


def test_eager_loading_reports_the_jit_log_at_load(mock_path):
    rc, out = run_py(LAZY, mock_path, CUDA_MODULE_LOADING="EAGER")
    assert rc == 0, out
    assert "cuLibraryLoadData failed (PTX JIT log follows):" in out, out
    assert "ptxas fatal   : ptx line 7; unknown symbol 'foo'" in out, out
