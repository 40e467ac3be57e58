"""Instructions per CUDA kernel launch on the host (callgrind), bindthem
against cuLaunchKernel called from C, with no GPU: both launch into the mock
driver (tests/cuda/mock/mock_cuda.c), whose cuLaunchKernel (it logs each
launch) costs the same for both, so the difference is what bindthem adds.

The device check (tests/cuda/gpu/test_gpu.py::test_launch_overhead) times
the same contenders on a GPU; its target is at most +0.5 us over the C loop.
These counts are repeatable where those times are not, and show where a
change moves the host's part.

Contenders, each in its own loop, (I(2n) - I(n)) / n as in bench_callgrind.py:
  C cuLaunchKernel      launch_floor.c's loop (tests/cuda/gpu/launch_floor.c)
  bindthem prepared     k = lib.tiny[1, 32]; k(y)       (the device check's figure)
  bindthem getitem      lib.tiny[1, 32](y)
  bindthem keywords     lib.tiny(y, grid=1, block=32)

Run: python benchmarks/bench_cuda_launch.py
"""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile

import common

ROOT = common.ROOT
N = 2000
MOCK_SRC = os.path.join(ROOT, "tests", "cuda", "mock", "mock_cuda.c")
FLOOR_SRC = os.path.join(ROOT, "tests", "cuda", "gpu", "launch_floor.c")
HEADER = """/* The launch-overhead kernel: next to no work. */
__global__ void tiny(float y[], const int y_size);
"""
MODULE = "bindthem-mock-module\nkernel _Z4tinyPfi 8 4\n"
LOOP = "def run(n, lib, k, y):\n    for _ in range(n):\n        %s\n"
LOOPS = {  # each compiled afresh: its own code, as CPython specializes each call site
    "bindthem prepared": LOOP % "k(y)",
    "bindthem getitem": LOOP % "lib.tiny[1, 32](y)",
    "bindthem keywords": LOOP % "lib.tiny(y, grid=1, block=32)",
}


def build(folder):
    """(mock driver, launch floor, module, header) built or written in folder."""
    mock, floor, module, header = build_paths(folder)
    subprocess.run(["gcc", "-std=c11", "-O1", "-shared", "-fPIC", MOCK_SRC, "-o", mock,
                    "-lpthread"], check=True)
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", FLOOR_SRC, "-o", floor, "-ldl"], check=True)
    with open(module, "w") as f:
        f.write(MODULE)
    with open(header, "w") as f:
        f.write(HEADER)
    return mock, floor, module, header


def worker(folder):
    import numpy as np

    import bindthem.cuda as cuda

    _, floor_path, module, header = build_paths(folder)
    fl = common.floor()
    c = ctypes.CDLL(floor_path)
    c.floor_error.restype = ctypes.c_char_p
    c.floor_burst.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                              ctypes.POINTER(ctypes.c_double)]
    if c.floor_open(module.encode(), b"_Z4tinyPfi") != 0:
        raise RuntimeError(c.floor_error().decode())
    host, ev = ctypes.c_double(), ctypes.c_double()
    lib = cuda.load(module, header)
    y = cuda.to_device(np.zeros(32, np.float32))
    k = lib.tiny[1, 32]
    runs = {"C cuLaunchKernel": lambda n: c.floor_burst(n, host, ev)}
    for label, src in LOOPS.items():
        ns = {}
        exec(compile(src, "<loop of %s>" % label, "exec"), ns)
        runs[label] = (lambda f: lambda n: f(n, lib, k, y))(ns["run"])
    for label, run in runs.items():
        run(200)
        for n in (-N, N, 2 * N):  # a first pair, discarded (one-off costs)
            fl.cg_zero()
            run(abs(n))
            fl.cg_dump("%s|%d" % (label, n))


def build_paths(folder):
    return tuple(os.path.join(folder, n)
                 for n in ("libcuda_mock.so", "launch_floor.so", "tiny.mock", "tiny.cuh"))


def measure():
    if not shutil.which("valgrind"):
        print("(valgrind not found: callgrind counts skipped)")
        return None
    folder = tempfile.mkdtemp(dir=common.CACHE)
    build(folder)
    dumps = os.path.join(folder, "dumps")
    os.makedirs(dumps)
    env = dict(common.env(), BINDTHEM_LIBCUDA=os.path.join(folder, "libcuda_mock.so"))
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/cg.out" % dumps,
           sys.executable, os.path.abspath(__file__), "--worker", folder]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=common.CACHE, env=env)
    if proc.returncode != 0:
        print(proc.stdout[-3000:], proc.stderr[-3000:])
        raise RuntimeError("callgrind run failed")
    res = common.callgrind_per_call(dumps, N)
    shutil.rmtree(folder, ignore_errors=True)
    return res


def main():
    res = measure()
    if res is None:
        return
    base = res["C cuLaunchKernel"]
    rows = [(label, "%.0f" % res[label],
             "%+.0f" % (res[label] - base) if label != "C cuLaunchKernel" else "")
            for label in ["C cuLaunchKernel"] + list(LOOPS)]
    common.table("Instructions per launch into the mock driver (callgrind)",
                       ["contender", "instructions", "over C"], rows,
                       "the mock's cuLaunchKernel is in every row; 'over C' is bindthem's "
                       "host work per launch, Python's loop included")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(sys.argv[2])
    else:
        main()
