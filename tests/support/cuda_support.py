"""What the CUDA tests share (tests/cuda, and the tests of tests/core that
check a rule of the core on its CUDA side too): bindthem.cuda without a
GPU, through a mock libcuda (tests/cuda/mock/mock_cuda.c).

The mock is compiled once per session and reached through BINDTHEM_LIBCUDA.
It keeps "device" memory in host malloc, loads text "modules" listing
kernel names and parameter sizes, and records every cuGetProcAddress
request and every launch (kernel, grid, block, shared, stream, device, the
parameter bytes), read back here with ctypes. The driver is process-wide,
so its fixtures (mock_path, mock, lib, clean) are session-wide, registered
by tests/conftest.py (mock_path, mock) and tests/cuda/conftest.py (lib,
clean), and tests of other driver versions and failure modes run in a
subprocess (run_py). bindthem (and support, which imports it) is
imported inside the functions, so that importing this module (conftest does)
needs no built bindthem.
"""

import ctypes
import functools
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

from sources import DATA as _DATA
from sources import TESTS

HERE = os.path.dirname(os.path.abspath(__file__))  # tests/support: run_py's children import from it
DATA = os.path.join(_DATA, "cuda")
HEADER = os.path.join(DATA, "kernels.cuh")
YAML = os.path.join(DATA, "kernels.yml")
MOCK_SRC = os.path.join(TESTS, "cuda", "mock", "mock_cuda.c")
CC = os.environ.get("CC", "gcc")
SIZES = {"bool": 1, "float": 4, "double": 8, "int": 4, "long": 8, "unsigned int": 4}
RUN = {"_Z4axpyIfEvT_PKS0_iPS0_i": "axpy_f", "_Z4axpyIdEvT_PKS0_iPS0_i": "axpy_d"}


@pytest.fixture(scope="session", name="mock_path")
def mock_path_fixture(tmp_path_factory):
    from support import cuda_mock_path

    if not shutil.which(CC):
        pytest.skip("needs %s for the mock driver" % CC)
    return cuda_mock_path(tmp_path_factory, MOCK_SRC, CC)


# Stream handles the tests make up (cuda.Stream(0x4000), a CAI stream 77,
# protocol objects): the mock runs work on them at once; any other handle it
# did not make is invalid, as on a real driver.
FAKE_STREAMS = (77, 0x4000, 0x5000, 0x6000, 0x7000, 2 ** 64 - 1)


@pytest.fixture(scope="session", name="mock")
def mock_fixture(mock_path):
    """The mock, loaded as this process's driver; its ctypes handle."""
    os.environ["BINDTHEM_LIBCUDA"] = mock_path
    import bindthem.cuda as cuda

    info = cuda.driver()
    if info["path"] != mock_path:
        pytest.skip("this process already uses the driver %s; run the test_cuda_*.py files "
                    "on their own"
                    % info["path"])
    lib = mock_handle(mock_path)
    for h in FAKE_STREAMS:
        lib.mock_stream_adopt(h)
    return lib


def mock_handle(path):
    """The mock at path through ctypes, its logs, memory and context calls
    typed (also for a subprocess: mock_handle(os.environ["BINDTHEM_LIBCUDA"]))."""
    lib = ctypes.CDLL(path)
    for f in ("mock_proc_log", "mock_launch_log", "mock_sync_log", "mock_attr_log",
              "mock_mem_log", "mock_ex_log", "mock_gil_log"):
        getattr(lib, f).restype = ctypes.c_char_p
    lib.mock_malloc.restype = ctypes.c_ulonglong
    lib.mock_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    lib.mock_free.argtypes = [ctypes.c_ulonglong]
    lib.mock_ctx_create.restype = ctypes.c_void_p
    lib.mock_ctx_current.restype = ctypes.c_void_p
    lib.mock_ctx_set.argtypes = [ctypes.c_void_p]
    lib.mock_stream_adopt.argtypes = [ctypes.c_ulonglong]
    return lib


def launches(mock):
    return [json.loads(line) for line in mock.mock_launch_log().decode().splitlines()]


def last_launch(mock):
    return launches(mock)[-1]


def raw(ptr, n=8):
    """n float32 of mock device memory at ptr as they are now, read past
    bindthem (pending work shows as stale data)."""
    import numpy as np

    out = np.empty(n, np.float32)
    ctypes.memmove(out.ctypes.data, ptr, out.nbytes)
    return out


def in_thread(fn, *args):
    """fn(*args) in a new thread, joined."""
    import threading

    t = threading.Thread(target=fn, args=args)
    t.start()
    t.join()


@pytest.fixture(name="held")
def held_fixture():
    """held(fn, *args): fn(*args) in a new thread that then stays alive until
    the test ends, and with it the work fn queued on its per-thread stream
    (a thread that exits finishes that work first: bt_cudapy_ptds.c). An
    exception of fn is raised here."""
    import threading

    release = threading.Event()
    threads = []

    def start(fn, *args):
        done, error = threading.Event(), []

        def body():
            try:
                fn(*args)
            except BaseException as e:  # raised in the test's thread
                error.append(e)
            done.set()
            release.wait(120)

        t = threading.Thread(target=body, daemon=True)
        threads.append(t)
        t.start()
        done.wait(120)
        if error:
            raise error[0]

    yield start
    release.set()
    for t in threads:
        t.join(120)


def module_text(header=HEADER, instantiate=YAML, edit=None, drop=(), extra=()):
    """A mock module with the header's planned kernels (and their layouts).
    edit: {symbol: [param sizes]} overrides; drop: symbols left out."""
    import bindthem

    meta = bindthem.parse_header(header, instantiate)
    lines = ["bindthem-mock-module"]
    for f in meta["functions"]:
        for ov in f["overloads"]:
            sym = ov["symbol"]
            if sym in drop:
                continue
            sizes = [8 if p["array"] else SIZES[p["type"]] for p in ov["params"]]
            sizes = (edit or {}).get(sym, sizes)
            run = " run=" + RUN[sym] if sym in RUN else ""
            lines.append("kernel %s %s%s" % (sym, " ".join(map(str, sizes)), run))
    lines += list(extra)
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture(scope="session", name="lib")
def lib_fixture(mock):
    import bindthem.cuda as cuda

    return cuda.load(module_text(), HEADER, YAML)


@pytest.fixture(name="clean")
def clean_fixture(mock):
    mock.mock_clear_logs()
    return mock


def run_py(code, mock_path=None, **env):
    """Runs code in a fresh interpreter; returns (returncode, stdout+stderr)."""
    from support import python_env

    e = python_env()
    e.pop("BINDTHEM_LIBCUDA", None)
    if mock_path:
        e["BINDTHEM_LIBCUDA"] = mock_path
    e.update({k: str(v) for k, v in env.items()})
    if code.startswith(PRELUDE):
        code = PRELUDE + textwrap.dedent(code[len(PRELUDE):])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, env=e, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


PRELUDE = """
import sys, json
sys.path.insert(0, %r)
import numpy as np
import bindthem, bindthem.cuda as cuda
from cuda_support import module_text, HEADER, YAML
""" % HERE


class FakeCAI:
    """A __cuda_array_interface__ producer over mock device memory."""

    def __init__(self, ptr, shape, typestr, readonly=False, strides=None, stream=None,
                 version=3):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": typestr, "data": (ptr, readonly),
            "version": version, "strides": strides, "descr": [("", typestr)]}
        if version >= 3:
            self.__cuda_array_interface__["stream"] = stream


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New


_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeDLPack:
    """A DLPack producer over mock device memory (no deleter: it owns it)."""

    def __init__(self, ptr, shape, code, bits, device_type=2, byte_offset=0):
        self.shape = (ctypes.c_int64 * len(shape))(*shape)
        self.mt = DLManagedTensor()
        t = self.mt.dl_tensor
        t.data = ptr
        t.device = DLDevice(device_type, 0)
        t.ndim = len(shape)
        t.dtype = DLDataType(code, bits, 1)
        t.shape = self.shape
        t.strides = None
        t.byte_offset = byte_offset
        self.device_type = device_type
        self.streams = []

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return _capsule_new(ctypes.addressof(self.mt), b"dltensor", None)


NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def needs_nvcc(test):
    """Skipped without nvcc; marked `nvcc` (tests/run_asan.sh leaves these out:
    nvcc's own processes would start with libasan preloaded)."""
    return pytest.mark.nvcc(pytest.mark.skipif(NVCC is None, reason="needs nvcc")(test))


@functools.lru_cache(maxsize=None)
def libnvrtc():
    """The libnvrtc bindthem.cuda finds here, or None."""
    import bindthem
    import bindthem.cuda as cuda

    try:
        return cuda.find_nvrtc()[0]
    except bindthem.BuildError:
        return None


def needs_nvrtc(test):
    """Skipped without libnvrtc."""
    return pytest.mark.skipif(libnvrtc() is None,
                              reason="no libnvrtc (CUDA toolkit or nvidia-cuda-nvrtc)")(test)


def elf_function_symbols(blob):
    """STT_FUNC names of every ELF (cubin) embedded in a fatbin."""
    names = set()
    start = 0
    while (start := blob.find(b"\x7fELF", start)) >= 0:
        e = blob[start:]
        try:
            shoff, = struct.unpack_from("<Q", e, 0x28)
            shentsize, shnum = struct.unpack_from("<HH", e, 0x3A)
            secs = [struct.unpack_from("<IIQQQQIIQQ", e, shoff + i * shentsize)
                    for i in range(shnum)]
            for s in secs:
                if s[1] != 2:  # SHT_SYMTAB
                    continue
                strtab = secs[s[6]]
                for k in range(s[5] // 24):
                    name, info = struct.unpack_from("<IB", e, s[4] + k * 24)
                    if info & 0xF == 2:  # STT_FUNC
                        end = e.index(b"\0", strtab[4] + name)
                        names.add(e[strtab[4] + name:end].decode())
        except (struct.error, ValueError, IndexError):
            pass
        start += 4
    return names


OVL_HEADER = os.path.join(DATA, "overloads.cuh")
OVL_YAML = os.path.join(DATA, "overloads.yml")


def kernel_symbols(header, instantiate):
    """bindthem's mangled names of the header's __global__ overloads."""
    import bindthem

    meta = bindthem.parse_header(header, instantiate)
    kernels = {d["name"] for d in meta["declarations"] if d["global"]}
    return {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]
            if ov["function"] in kernels}


HALF_HEADER = os.path.join(DATA, "half.cuh")
HALF_YAML = os.path.join(DATA, "half.yml")
