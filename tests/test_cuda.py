"""bindthem.cuda without a GPU: a mock libcuda (tests/cuda_mock/mock_cuda.c).

The mock is compiled once per session and reached through BINDTHEM_LIBCUDA.
It keeps "device" memory in host malloc, loads text "modules" listing
kernel names and parameter sizes, and records every cuGetProcAddress
request and every launch (kernel, grid, block, shared, stream, device, the
parameter bytes), read back here with ctypes. The driver is process-wide,
so tests of other driver versions and failure modes run in a subprocess.
The nvcc tests compile tests/data/cuda/kernels.cuh for real (no GPU needed).
"""

import copy
import ctypes
import gc
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from support import cuda_mock_path, python_env

import bindthem
import bindthem.cuda as cuda
from bindthem import _core

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(HERE, "data", "cuda")
HEADER = os.path.join(DATA, "kernels.cuh")
YAML = os.path.join(DATA, "kernels.yml")
MOCK_SRC = os.path.join(HERE, "cuda_mock", "mock_cuda.c")
CC = os.environ.get("CC", "gcc")

SIZES = {"bool": 1, "float": 4, "double": 8, "int": 4, "long": 8, "unsigned int": 4}
RUN = {"_Z4axpyIfEvT_PKS0_iPS0_i": "axpy_f", "_Z4axpyIdEvT_PKS0_iPS0_i": "axpy_d"}

# What bindthem must ask cuGetProcAddress for: the version of the PFN typedef
# it calls through (cudaTypedefs.h), never the toolkit's or driver's version.
EXPECTED_VERSIONS = {
    "cuGetErrorName": 6000, "cuGetErrorString": 6000, "cuInit": 2000,
    "cuDeviceGetCount": 2000, "cuDeviceGet": 2000, "cuDeviceGetName": 2000,
    "cuDevicePrimaryCtxRetain": 7000, "cuCtxGetCurrent": 4000, "cuCtxSetCurrent": 4000,
    "cuCtxGetDevice": 2000, "cuCtxSynchronize": 2000, "cuMemAlloc": 3020, "cuMemFree": 3020,
    "cuMemcpyHtoD": 3020, "cuMemcpyDtoH": 3020, "cuPointerGetAttributes": 7000,
    "cuModuleLoadDataEx": 2010, "cuModuleGetFunction": 2000, "cuModuleUnload": 2000,
    "cuLaunchKernel": 4000, "cuStreamSynchronize": 2000,
    "cuLibraryLoadData": 12000, "cuLibraryUnload": 12000, "cuLibraryGetKernel": 12000,
    "cuKernelGetName": 12030, "cuFuncGetName": 12030, "cuLibraryGetKernelCount": 12040,
    "cuLibraryEnumerateKernels": 12040, "cuModuleGetFunctionCount": 12040,
    "cuModuleEnumerateFunctions": 12040, "cuKernelGetParamInfo": 12040,
    "cuFuncGetParamInfo": 12040,
    "cuMemcpyHtoDAsync": 3020, "cuMemcpyDtoHAsync": 3020, "cuMemsetD8Async": 3020,
    "cuMemHostAlloc": 2020, "cuMemFreeHost": 2000, "cuEventCreate": 2000, "cuEventRecord": 2000,
    "cuEventQuery": 2000, "cuEventSynchronize": 2000, "cuEventDestroy": 4000,
    "cuStreamWaitEvent": 3020, "cuEventElapsedTime": 12080, "cuStreamCreate": 2000,
    "cuStreamDestroy": 4000,
    "cuDeviceGetAttribute": 2000, "cuFuncGetAttribute": 2020, "cuFuncSetAttribute": 9000,
    "cuKernelGetAttribute": 12000, "cuKernelSetAttribute": 12000,
}


# ---- fixtures ----

@pytest.fixture(scope="session")
def mock_path(tmp_path_factory):
    if not shutil.which(CC):
        pytest.skip("needs %s for the mock driver" % CC)
    return cuda_mock_path(tmp_path_factory, MOCK_SRC, CC)


@pytest.fixture(scope="session")
def mock(mock_path):
    """The mock, loaded as this process's driver; its ctypes handle."""
    os.environ["BINDTHEM_LIBCUDA"] = mock_path
    info = cuda.driver()
    if info["path"] != mock_path:
        pytest.skip("this process already uses the driver %s; run test_cuda.py on its own"
                    % info["path"])
    lib = ctypes.CDLL(mock_path)
    for f in ("mock_proc_log", "mock_launch_log", "mock_sync_log"):
        getattr(lib, f).restype = ctypes.c_char_p
    lib.mock_malloc.restype = ctypes.c_ulonglong
    lib.mock_malloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
    lib.mock_free.argtypes = [ctypes.c_ulonglong]
    return lib


def launches(mock):
    return [json.loads(line) for line in mock.mock_launch_log().decode().splitlines()]


def last_launch(mock):
    return launches(mock)[-1]


def module_text(header=HEADER, instantiate=YAML, edit=None, drop=(), extra=()):
    """A mock module with the header's planned kernels (and their layouts).
    edit: {symbol: [param sizes]} overrides; drop: symbols left out."""
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


@pytest.fixture(scope="session")
def lib(mock):
    return cuda.load(module_text(), HEADER, YAML)


@pytest.fixture
def clean(mock):
    mock.mock_clear_logs()
    return mock


def run_py(code, mock_path=None, **env):
    """Runs code in a fresh interpreter; returns (returncode, stdout+stderr)."""
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
from test_cuda import module_text, HEADER, YAML
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


# ---- driver loading and entry points ----

def test_import_needs_no_driver(mock_path):
    rc, out = run_py("""
        import bindthem, bindthem.cuda
        maps = open("/proc/self/maps").read()
        print("loaded" if "libcuda_mock" in maps else "not loaded")
        print(bindthem.cuda.LEGACY, bindthem.cuda.PER_THREAD)
    """, mock_path)
    assert rc == 0, out
    assert "not loaded" in out
    assert "bindthem.cuda.LEGACY bindthem.cuda.PER_THREAD" in out


def test_no_libcuda():
    rc, out = run_py("""
        import bindthem.cuda as cuda
        print(cuda.device_count(), cuda.is_available())
        try:
            cuda.driver()
        except cuda.NoDriverError as e:
            print("NoDriverError:", e)
    """, "/nonexistent/libcuda.so.1")
    assert rc == 0, out
    assert "0 False" in out
    assert "NoDriverError: no CUDA driver: cannot load /nonexistent/libcuda.so.1" in out


def _stub():
    for p in ("/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so"):
        if os.path.exists(p):
            return p
    return None


@pytest.mark.skipif(_stub() is None, reason="no CUDA toolkit stub libcuda.so")
def test_stub_library_is_no_driver():
    rc, out = run_py("""
        import numpy as np, bindthem.cuda as cuda
        print(cuda.device_count())
        try:
            cuda.to_device(np.ones(3))
        except cuda.NoDriverError as e:
            print("code", e.code, "|", e)
    """, _stub())
    assert rc == 0, out
    assert out.startswith("0\n")
    assert "code 34 | no CUDA driver:" in out
    assert "stub library (CUDA_ERROR_STUB_LIBRARY" in out


def test_entry_point_versions(mock):
    log = [json.loads(line) for line in mock.mock_proc_log().decode().splitlines()]
    asked = {r["symbol"]: r["version"] for r in log}
    assert asked == EXPECTED_VERSIONS
    assert len(log) == len(EXPECTED_VERSIONS)  # each once
    assert {r["flags"] for r in log} == {1}  # CU_GET_PROC_ADDRESS_LEGACY_STREAM
    assert cuda.driver() == {"version": 12080, "path": os.environ["BINDTHEM_LIBCUDA"],
                             "library_api": True}


def test_driver_too_old(mock_path):
    rc, out = run_py(PRELUDE + """
        try:
            cuda.driver()
        except cuda.CudaError as e:
            print(type(e).__name__, e)
    """, mock_path, MOCK_CUDA_VERSION=11020)
    assert rc == 0, out
    assert "is version 11.2; bindthem needs 11.3 or newer (cuGetProcAddress)" in out


def test_symbol_not_found(mock_path):
    rc, out = run_py(PRELUDE + """
        try:
            cuda.to_device(np.ones(2))
        except cuda.CudaError as e:
            print(type(e).__name__, e.code, e)
    """, mock_path, MOCK_CUDA_NOT_FOUND="cuLaunchKernel")
    assert rc == 0, out
    assert "CudaError 500" in out
    assert ('cuGetProcAddress("cuLaunchKernel", cudaVersion=4000): '
            "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND") in out
    assert "older than CUDA 4.0, or the name is misspelled" in out


def test_version_not_sufficient(mock_path):
    rc, out = run_py(PRELUDE + """
        try:
            cuda.driver()
        except cuda.CudaError as e:
            print(type(e).__name__, e)
    """, mock_path, MOCK_CUDA_TOO_NEW="cuMemAlloc")
    assert rc == 0, out
    assert "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT" in out
    assert "has cuMemAlloc, but no version of it as old as the CUDA 3.2 ABI" in out


def test_no_device(mock_path):
    rc, out = run_py(PRELUDE + """
        print(cuda.device_count())
        try:
            cuda.driver()
        except cuda.NoDriverError as e:
            print(e)
    """, mock_path, MOCK_CUDA_DEVICES=0)
    assert rc == 0, out
    assert "0\nno CUDA device: cuInit: CUDA_ERROR_NO_DEVICE" in out


def test_load_when_the_primary_context_fails(mock_path):
    # the module handle is released on that error path: nothing to unload
    rc, out = run_py(PRELUDE + """
        try:
            cuda.load(%r, %r, %r)
        except cuda.CudaError as e:
            print("CudaError", e.code)
    """ % (module_text(), HEADER, YAML), mock_path, MOCK_CUDA_RETAIN_ERROR=2)
    assert rc == 0, out
    assert out.strip().endswith("CudaError 2")


def test_driver_12_0_asks_only_for_what_it_has(mock_path):
    rc, out = run_py(PRELUDE + """
        import ctypes, os
        m = ctypes.CDLL(os.environ["BINDTHEM_LIBCUDA"])
        m.mock_proc_log.restype = ctypes.c_char_p
        print(cuda.driver())
        log = [json.loads(l) for l in m.mock_proc_log().decode().splitlines()]
        print(sorted({r["version"] for r in log}))
        print("elapsed", [r["version"] for r in log if r["symbol"] == "cuEventElapsedTime"])
        # no cuFuncGetParamInfo: a wrong layout goes unnoticed
        lib = cuda.load(module_text(edit={"fill_i": [8, 8, 4]}), HEADER, YAML)
        try:
            cuda.load(module_text(drop={"_Z4axpyIfEvT_PKS0_iPS0_i"}), HEADER, YAML)
        except bindthem.SymbolError as e:
            print(e)
    """, mock_path, MOCK_CUDA_VERSION=12000)
    assert rc == 0, out
    assert "'library_api': True" in out
    assert "[2000, 2010, 2020, 3020, 4000, 6000, 7000, 9000, 12000]" in out
    # 12.8's cuEventElapsedTime ABI is not asked of it; the 2.0 one is
    assert "elapsed [2000]" in out
    assert "(the CUDA 12.0 driver cannot list a module's kernels (12.4+ can))" in out


def test_driver_11_8_uses_modules(mock_path):
    rc, out = run_py(PRELUDE + """
        import threading
        print(cuda.driver()["library_api"])
        lib = cuda.load(module_text(), HEADER, YAML)
        x = cuda.to_device(np.arange(4, dtype=np.float64))
        y = cuda.to_device(np.ones(4))
        lib.axpy[1, 4](3, x, y)
        t = threading.Thread(target=lambda: lib.axpy[1, 4](1, x, y))
        t.start(); t.join()
        print(y.copy_to_host().tolist())
    """, mock_path, MOCK_CUDA_VERSION=11080)
    assert rc == 0, out
    assert out.endswith("False\n[1.0, 5.0, 9.0, 13.0]\n")


# ---- loading ----

def test_library(lib):
    assert lib.__all__ == ["axpy", "fill_i", "negate", "scale"]
    assert lib.__file__ == "<bytes>"
    assert lib.scale.overloads == (
        "void scale<float>(const float s, float y[], const long y_size)",
        "void scale<double>(const double s, double y[], const long y_size)",
        "void scale<int>(const int s, int y[], const long y_size)")
    assert lib.negate.symbols == ("_ZN3ops6negateIfEEvPT_j",)
    assert lib.fill_i.symbols == ("fill_i",)  # extern "C": the plain name
    assert lib.axpy.parameters == ("a", "x", "y")
    assert "y = a * x + y" in lib.axpy.__doc__
    assert repr(lib.axpy) == "<bindthem.cuda kernel kernels.axpy with 2 overloads>"
    # a host function the YAML doesn't list is left out, not an error
    assert lib.not_kernels == ["int host_count(const int x[], const int x_size)"]


def test_load_from_file_without_yaml(mock, tmp_path):
    p = tmp_path / "k.fatbin"
    p.write_bytes(module_text(instantiate=None))
    lib = cuda.load(str(p), HEADER)
    assert lib.__file__ == str(p)
    assert lib.__all__ == ["fill_i"]  # untemplated kernels only
    assert lib.not_kernels == ["int host_count(const int x[], const int x_size)"]
    assert lib.unexported == []


def test_kernels_named_like_library_attributes(mock, tmp_path):
    h = tmp_path / "taken.cuh"
    h.write_text("// a\n__global__ void not_kernels(int n) {}\n"
                 "// b\n__global__ void metadata(int n) {}\n"
                 "// c\n__global__ void __name__(int n) {}\n"
                 "// d\nint host(int n) { return n; }\n")
    lib = cuda.load(module_text(str(h), None), str(h))
    assert isinstance(lib.not_kernels, cuda.Kernel) and isinstance(lib.metadata, cuda.Kernel)
    assert lib.__all__ == ["metadata", "not_kernels"] and lib.__name__ == "taken"
    info = lib.__bindthem__
    assert info.not_kernels == ["int host(int n)"] and info.unexported == []
    assert [s["name"] for s in info.metadata["skipped"]] == ["__name__"]
    assert {"metadata", "not_kernels", "unexported", "__bindthem__"} <= set(dir(lib))
    assert lib.unexported == []  # no kernel of that name: bindthem's list


def test_missing_files_are_worded_alike(mock, tmp_path):
    # the module, the header and the YAML: one wording, the path named
    for args in ((str(tmp_path / "k.fatbin"), HEADER), (module_text(), str(tmp_path / "k.cuh")),
                 (module_text(), HEADER, str(tmp_path / "k.yml"))):
        missing = next(a for a in args if isinstance(a, str) and a.startswith(str(tmp_path)))
        with pytest.raises(FileNotFoundError) as ei:
            cuda.load(*args)
        assert str(ei.value) == ("[Errno 2] cannot open: No such file or directory: %r"
                                 % missing)


def test_host_function_listed(mock):
    with pytest.raises(bindthem.BindError, match=r"lists 'host_count' \(.*kernels.cuh:\d+\), "
                                                 r"which is not a __global__ kernel"):
        cuda.load(module_text(), HEADER, os.path.join(DATA, "host.yml"))


def test_device_function_unbindable(mock):
    meta = bindthem.parse_header(HEADER, YAML)
    assert {"name": "twice", "line": meta["skipped"][0]["line"],
            "reason": "unbindable: __device__ function is not a kernel",
            "deliberate": False} in meta["skipped"]


def test_missing_kernel_lists_what_the_module_has(mock):
    with pytest.raises(bindthem.SymbolError) as ei:
        cuda.load(module_text(drop={"_Z4axpyIfEvT_PKS0_iPS0_i"}), HEADER, YAML)
    msg = str(ei.value)
    assert msg.startswith("axpy: kernel axpy<float> (symbol _Z4axpyIfEvT_PKS0_iPS0_i) is not "
                          "in <bytes>; the module has axpy<double>(double, double const*, int, "
                          "double*, int), ")
    assert "ops::negate<float>(float*, unsigned int), fill_i" in msg
    assert "did you mean axpy<double>?" in msg
    assert "template __global__ void axpy<float>(" in msg


def test_missing_kernel_near_miss(mock):
    text = module_text(drop={"_Z5scaleIiEvT_PS0_l"}, extra=["kernel _Z6scalesIiEvT_PS0_l 4 8 8"])
    with pytest.raises(bindthem.SymbolError, match=r"did you mean scale<float> or "
                                                   r"scale<double>\?"):
        cuda.load(text, HEADER, YAML)
    text = module_text(drop={"_Z5scaleIiEvT_PS0_l", "_Z5scaleIfEvT_PS0_l",
                             "_Z5scaleIdEvT_PS0_l"}, extra=["kernel _Z6scalesIiEvT_PS0_l 4 8 8"])
    with pytest.raises(bindthem.SymbolError, match=r"did you mean scales<int>\?"):
        cuda.load(text, HEADER, YAML)


def test_param_layout_mismatch(mock):
    sym = "_Z4axpyIfEvT_PKS0_iPS0_i"
    with pytest.raises(bindthem.BindError, match=r"parameter 1 'a' of void axpy<float>\(.*\) is "
                                                 r"4 bytes at offset 0 by the header, but 8 bytes "
                                                 r"at offset 0 in the module's kernel"):
        cuda.load(module_text(edit={sym: [8, 8, 4, 8, 4]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError,
                       match=r"takes 4 parameters, but the header declares "
                             r"5: .* \(parameter 'y_size' has no counterpart\)"):
        cuda.load(module_text(edit={sym: [4, 8, 4, 8]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError, match="takes more than the 5 parameters"):
        cuda.load(module_text(edit={sym: [4, 8, 4, 8, 4, 4]}), HEADER, YAML)
    with pytest.raises(bindthem.BindError, match=r"parameter 3 'x_size' .* 4 bytes at offset 16 "
                                                 r"by the header, but 8 bytes at offset 16"):
        cuda.load(module_text(edit={sym: [4, 8, 8, 8, 4]}), HEADER, YAML)


def test_jit_error_log(mock):
    with pytest.raises(cuda.CudaError) as ei:
        cuda.load(b"bindthem-mock-module\njit-error ptxas: syntax error at line 3\n", HEADER)
    assert ei.value.code == 218
    assert "cuLibraryLoadData failed (PTX JIT log follows):\nptxas fatal   : ptxas: syntax " \
           "error at line 3" in str(ei.value)


def test_invalid_image(mock):
    with pytest.raises(cuda.CudaError, match="cuLibraryLoadData failed: CUDA_ERROR_INVALID_IMAGE"):
        cuda.load(b"\x7fELF not really", HEADER)


# ---- launches ----

def test_axpy_round_trip(lib, clean):
    x = cuda.to_device(np.arange(5, dtype=np.float32))
    y = cuda.to_device(np.ones(5, dtype=np.float32))
    assert lib.axpy[1, 32](2.0, x, y) is None
    np.testing.assert_array_equal(y.copy_to_host(), [1, 3, 5, 7, 9])
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z4axpyIfEvT_PKS0_iPS0_i"
    assert rec["grid"] == [1, 1, 1] and rec["block"] == [32, 1, 1]
    a, xp, xs, yp, ys = (bytes.fromhex(p) for p in rec["params"])
    assert struct.unpack("<f", a) == (2.0,)
    assert struct.unpack("<Q", xp) == (x.ptr,) and struct.unpack("<Q", yp) == (y.ptr,)
    assert struct.unpack("<i", xs) == (5,) and struct.unpack("<i", ys) == (5,)


def test_dispatch_by_dtype(lib, clean):
    for dt, sym, fmt in ((np.float32, "_Z5scaleIfEvT_PS0_l", "<f"),
                         (np.float64, "_Z5scaleIdEvT_PS0_l", "<d"),
                         (np.int32, "_Z5scaleIiEvT_PS0_l", "<i")):
        y = cuda.to_device(np.ones(7, dtype=dt))
        lib.scale[1, 8](3, y)
        rec = last_launch(clean)
        assert rec["kernel"] == sym
        s, _, n = (bytes.fromhex(p) for p in rec["params"])
        assert struct.unpack(fmt, s) == (3,)
        assert struct.unpack("<q", n) == (7,)  # long y_size


def test_size_types(lib, clean):
    x = cuda.to_device(np.zeros((3, 4), dtype=np.float32))
    lib.negate[1, 16](x)
    assert last_launch(clean)["kernel"] == "_ZN3ops6negateIfEEvPT_j"
    # x_size is shape[0], as on the CPU (BindThem's generator)
    assert struct.unpack("<I", bytes.fromhex(last_launch(clean)["params"][1])) == (3,)
    huge = FakeCAI(x.ptr, (2 ** 33,), "<f4")
    with pytest.raises(OverflowError, match=r"negate\(\): argument 'x' has 8589934592 elements, "
                                            r"more than its 'x_size' parameter \(unsigned int\)"):
        lib.negate[1, 1](huge)


PLANE = """
/* x_size0 rows of x_size1 values each. */
template <class T>
__global__ void plane(T x[], const int x_size0, const long x_size1, const unsigned int x_size2,
                      const int s)
{
}
"""


@pytest.fixture(scope="module")
def plane(mock, tmp_path_factory):
    d = tmp_path_factory.mktemp("plane")
    h, y = d / "plane.cuh", d / "plane.yml"
    h.write_text(PLANE)
    y.write_text("- functions: [plane]\n  types: [[float]]\n")
    return cuda.load(module_text(str(h), str(y)), str(h), str(y))


def test_size_parameters_get_each_axis(plane, clean, mock):
    """x_sizeK gets shape[K] from every kind of device array."""
    p = mock.mock_malloc(4 * 60, 0, 0)
    dev = cuda.to_device(np.zeros((3, 5, 2), dtype=np.float32))
    for x, shape in ((dev, (3, 5, 2)), (FakeCAI(p, (2, 7, 4), "<f4"), (2, 7, 4)),
                     (FakeDLPack(p, (6, 2, 5), 2, 32), (6, 2, 5)),
                     (FakeCAI(p, (1, 3, 4, 5), "<f4"), (1, 3, 4, 5)),
                     (FakeCAI(p, (4, 0, 9), "<f4"), (4, 0, 9))):
        plane.plane[1, 1](x, 7)
        params = [bytes.fromhex(v) for v in last_launch(clean)["params"]]
        got = (struct.unpack("<i", params[1]) + struct.unpack("<q", params[2])
               + struct.unpack("<I", params[3]))
        assert got == shape[:3]
        assert struct.unpack("<i", params[4]) == (7,)
    mock.mock_free(p)


def test_size_parameter_rank_and_overflow_before_launch(plane, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    n = len(launches(clean))
    for x, nd in ((cuda.to_device(np.zeros((4, 2), dtype=np.float32)), 2),
                  (FakeCAI(p, (4,), "<f4"), 1), (FakeDLPack(p, (), 2, 32), 0)):
        with pytest.raises(ValueError) as e:
            plane.plane[1, 1](x, 1)
        assert str(e.value) == (
            "plane(): argument 'x' is a %d-d array, but the kernel's size parameter 'x_size2' "
            "takes its shape[2]: pass an array of at least 3 dimensions" % nd)
    with pytest.raises(OverflowError) as e:
        plane.plane[1, 1](FakeCAI(p, (2 ** 31, 1, 1), "<f4"), 1)
    assert str(e.value) == ("plane(): argument 'x' has shape[0] = 2147483648, more than its "
                            "'x_size0' parameter (int) can hold")
    with pytest.raises(OverflowError, match=r"has shape\[2\] = 4294967296, more than its "
                                            r"'x_size2' parameter \(unsigned int\)"):
        plane.plane[1, 1](FakeCAI(p, (1, 1, 2 ** 32), "<f4"), 1)
    assert len(launches(clean)) == n
    mock.mock_free(p)


def test_scalar_rules(lib, clean):
    y = cuda.to_device(np.ones(2, dtype=np.int32))
    with pytest.raises(OverflowError, match=r"argument 's' = 1099511627776 does not fit in int"):
        lib.scale[1, 1](2 ** 40, y)
    # 2.5 fits scale<float> and scale<double>, which then refuse an int32 y
    with pytest.raises(TypeError, match=r"argument 'y' \(position 2\) got .* int32, via "
                                        r"DeviceArray\), expected float32 device array or float64 "
                                        r"device array \(given the arguments before it\)"):
        lib.scale[1, 1](2.5, y)
    lib.scale[1, 1](np.int32(4), y)
    assert last_launch(clean)["params"][0] == "04000000"
    f = cuda.to_device(np.ones(2, dtype=np.float32))
    lib.scale[1, 1](np.float32(0.5), f)
    assert last_launch(clean)["params"][0] == struct.pack("<f", 0.5).hex()


def test_keywords_and_binding(lib, clean):
    x = cuda.to_device(np.ones(3))
    y = cuda.to_device(np.ones(3))
    lib.axpy(a=1, x=x, y=y, grid=(1,), block=[4], shared_mem=np.int64(64))
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z4axpyIdEvT_PKS0_iPS0_i" and rec["shared"] == 64
    with pytest.raises(TypeError, match=r"needs grid= and block= \(or launch it as "
                                        r"axpy\[grid, block\]"):
        lib.axpy(1, x, y)
    with pytest.raises(TypeError, match=r"axpy\(\) missing 1 required positional argument: 'y'"):
        lib.axpy[1, 1](1, x)
    with pytest.raises(TypeError, match=r"axpy\[...\]\(\): grid given both in the brackets "
                                        r"and as grid="):
        lib.axpy[1, 1](1, x, y, grid=1)
    with pytest.raises(TypeError, match="multiple values for argument 'a'"):
        lib.axpy[1, 1](1, x, y, a=2)
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4 were given"):
        lib.axpy[1, 1](1, x, y, 4)


@pytest.mark.parametrize("grid, block, want", [
    (4, 128, ([4, 1, 1], [128, 1, 1])),
    ((2, 3), (8, 8), ([2, 3, 1], [8, 8, 1])),
    ([2, 3, 4], (4, 4, 4), ([2, 3, 4], [4, 4, 4])),
    (np.int64(5), (np.int32(2),), ([5, 1, 1], [2, 1, 1])),
    (2 ** 31 - 1, 1024, ([2 ** 31 - 1, 1, 1], [1024, 1, 1])),
])
def test_grid_block(lib, clean, grid, block, want):
    y = cuda.to_device(np.ones(1, dtype=np.float32))
    lib.scale[grid, block](1, y)
    rec = last_launch(clean)
    assert (rec["grid"], rec["block"]) == want
    launch = lib.scale[grid, block]
    assert (list(launch.grid), list(launch.block)) == want


@pytest.mark.parametrize("key, msg", [
    ((0, 32), r"grid=0: every dimension must be at least 1"),
    ((1, (32, 0)), r"block=\(32, 0\): every dimension must be at least 1"),
    ((1, (1, 2, 3, 4)), r"block=\(1, 2, 3, 4\) has 4 dimensions; give 1 to 3"),
    ((1, ()), r"block=\(\) has 0 dimensions"),
    ((2.5, 32), r"grid must be an int or a tuple of 1 to 3 ints, not float \(2.5\); round up"),
    ((1, "32"), r"block must be an int or a tuple of 1 to 3 ints, not str"),
    ((1, (64, 32)), r"block=\(64, 32\) has 2048 threads; a block holds at most 1024"),
    ((1, (1, 1, 65)), r"block=\(1, 1, 65\): dimension z may be at most 64"),
    (((1, 70000), 1), r"grid=\(1, 70000\): dimension y may be at most 65535"),
    ((2 ** 31, 1), r"grid=2147483648: dimension x may be at most 2147483647"),
    ((1, 1, -1), r"shared_mem=-1 is out of range"),
    ((1, 1, 0, "s"), r"stream must be None, bindthem.cuda.LEGACY / PER_THREAD, a stream "
                     r"object \(__cuda_stream__\) or bindthem.cuda.Stream\(handle\) for a "
                     r"CUstream handle you own, not str"),
    # numba's order (grid, block, stream, shared) puts the shared size last
    ((1, 32, 0, 4096), r"stream=4096: a bare int other than 0, 1 or 2 is not taken as a "
                       r"stream; pass bindthem.cuda.LEGACY .* \(the launch order is \[grid, "
                       r"block, shared_mem, stream\]; numba's puts the stream third\)"),
    ((1, 1, 0, -1), r"stream=-1: a bare int"),
    ((1, 1, 0, 2 ** 64), r"stream=18446744073709551616: a bare int"),
    ((1, True), r"block must be an int or a tuple of 1 to 3 ints, not bool \(True\)"),
])
def test_launch_config_errors(lib, key, msg):
    with pytest.raises(ValueError, match=r"^scale\[grid, block\]: .*" + msg):
        lib.scale[key]


def test_getitem_arity(lib):
    with pytest.raises(ValueError, match=r"give 2 to 4 items"):
        lib.scale[1]
    with pytest.raises(ValueError, match=r"give 2 to 4 items"):
        lib.scale[1, 2, 3, 4, 5]


class TorchLikeStream:
    cuda_stream = 0x5000


class CuPyLikeStream:
    ptr = 0x6000


class ProtocolStream:
    def __cuda_stream__(self):
        return (0, 0x7000)


@pytest.mark.parametrize("stream, handle", [
    (None, 0), (0, 0), (1, 1), (2, 2), (cuda.LEGACY, 1), (cuda.PER_THREAD, 2),
    (cuda.Stream(0x4000), 0x4000), (cuda.Stream(np.uint64(2 ** 64 - 1)), 2 ** 64 - 1),
    (TorchLikeStream(), 0x5000), (CuPyLikeStream(), 0x6000), (ProtocolStream(), 0x7000),
])
def test_streams(lib, clean, stream, handle):
    y = cuda.to_device(np.ones(1, dtype=np.float32))
    lib.scale[1, 1, 0, stream](1, y)
    assert last_launch(clean)["stream"] == handle
    lib.scale(1, y, grid=1, block=1, stream=stream)
    assert last_launch(clean)["stream"] == handle


class OtherProtocolVersion:
    def __cuda_stream__(self):
        return (1, 0x7000)


class BadProtocol:
    def __cuda_stream__(self):
        return 0x7000


def test_stream_refusals_reach_no_driver(lib, clean):
    y = cuda.to_device(np.ones(1, dtype=np.float32))
    for stream, msg in [
            (0x1234, r"stream=4660: a bare int"),
            (y, r"not bindthem.cuda.DeviceArray"),  # has .ptr, but is no stream
            (OtherProtocolVersion(), r"__cuda_stream__\(\) gave version 1; bindthem knows "
                                     r"version 0"),
            (BadProtocol(), r"__cuda_stream__\(\) must return \(version, handle\), not 28672"),
            (True, r"not bool")]:
        with pytest.raises(ValueError, match=r"^scale\[grid, block\]: .*" + msg):
            lib.scale[1, 1, 0, stream](1, y)
        with pytest.raises(ValueError, match=msg):
            lib.scale(1, y, grid=1, block=1, stream=stream)
    assert launches(clean) == []
    with pytest.raises(ValueError, match=r"Stream\(handle\): 18446744073709551616 is not a "
                                         r"64-bit CUstream value"):
        cuda.Stream(2 ** 64)
    with pytest.raises(ValueError, match="is not a 64-bit"):
        cuda.Stream(-1)
    with pytest.raises(TypeError):
        cuda.Stream(1.5)
    with pytest.raises(TypeError, match="not bool"):
        cuda.Stream(True)


def test_primary_context_in_new_thread(lib, clean):
    y = cuda.to_device(np.ones(4, dtype=np.float32))
    seen = {}

    def work():
        seen["before"] = clean.mock_current_device()
        lib.scale[1, 4](2, y)
        seen["after"] = clean.mock_current_device()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == {"before": -1, "after": 0}
    assert last_launch(clean)["device"] == 0


# ---- array arguments ----

def test_host_array_refused(lib):
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"axpy\(\): argument 'x' is an array in host memory; "
                                        r"CUDA kernels take device arrays: pass "
                                        r"bindthem.cuda.to_device\(x\)"):
        lib.axpy[1, 1](1.0, np.ones(3, dtype=np.float32), y)


def test_wrong_dtype(lib):
    x = cuda.to_device(np.ones(3, dtype=np.int64))
    with pytest.raises(TypeError) as ei:
        lib.scale[1, 1](1, x)
    assert str(ei.value).startswith(
        "scale(): argument 'y' (position 2) got bindthem.cuda.DeviceArray (a device array of "
        "int64, via DeviceArray), expected float32 device array or float64 device array or "
        "int32 device array (given the arguments before it).\nThe overloads are:\n    "
        "void scale<float>(")


def test_cai_arrays(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    x = FakeCAI(p, (4,), "<f4", readonly=True)
    y = FakeCAI(p + 16, (2, 2), "<f4")
    lib.axpy[1, 4](1.0, x, y)  # a read-only x is fine: const
    a, xp, xs, yp, ys = last_launch(clean)["params"]
    assert struct.unpack("<Q", bytes.fromhex(xp)) == (p,)
    assert struct.unpack("<Q", bytes.fromhex(yp)) == (p + 16,)
    assert struct.unpack("<i", bytes.fromhex(ys)) == (2,)  # shape[0]
    with pytest.raises(ValueError, match=r"argument 'y' is a read-only array, but the kernel "
                                         r"writes to it"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (4,), "<f4", readonly=True))
    with pytest.raises(ValueError, match=r"argument 'y' must be a C-contiguous array \(this one, "
                                         r"via __cuda_array_interface__, is strided\)"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f4", strides=(8,)))
    lib.axpy[1, 4](1.0, x, FakeCAI(p, (2, 1), "<f4", strides=(4, 99)))  # size-1 dims: any stride
    lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f4", version=2))
    with pytest.raises(TypeError, match=r"got FakeCAI \(a device array of float64, via "
                                        r"__cuda_array_interface__\), expected float32 device"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), "<f8"))
    with pytest.raises(TypeError, match="an unsupported dtype"):
        lib.axpy[1, 4](1.0, x, FakeCAI(p, (2,), ">f4"))
    mock.mock_free(p)


def test_cai_stream_is_waited_on(lib, clean, mock):
    p = mock.mock_malloc(16, 0, 0)
    lib.scale[1, 1](1, FakeCAI(p, (4,), "<f4", stream=77))
    # an event recorded on 77 that the launch's (legacy) stream waits for:
    # no host synchronization
    assert clean.mock_sync_log().decode() == "wait 1 77\n"
    clean.mock_clear_logs()
    lib.scale[1, 1, 0, cuda.Stream(77)](1, FakeCAI(p, (4,), "<f4", stream=77))
    lib.scale[1, 1](1, FakeCAI(p, (4,), "<f4", stream=1))  # legacy, as the launch
    assert clean.mock_sync_log().decode() == ""
    mock.mock_free(p)


def test_pointer_checks(lib, mock):
    host = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match=r"argument 'y' \(via __cuda_array_interface__\) points "
                                         r"at 0x[0-9a-f]+, which is not memory CUDA knows of "
                                         r"\(host memory\?\); kernels need device memory: copy "
                                         r"it with bindthem.cuda.to_device\(\)"):
        lib.scale[1, 1](1, FakeCAI(host.ctypes.data, (4,), "<f4"))
    p0 = mock.mock_malloc(16, 0, 0)
    p1 = mock.mock_malloc(16, 1, 0)
    with pytest.raises(ValueError, match=r"argument 'y' is on device 1, but 'x' is on device 0 "
                                         r"\(Mock GPU 0\); all arrays of a launch must be on one "
                                         r"device"):
        lib.axpy[1, 1](1.0, FakeCAI(p0, (4,), "<f4"), FakeCAI(p1, (4,), "<f4"))
    managed = mock.mock_malloc(16, 1, 1)
    lib.axpy[1, 1](1.0, FakeCAI(p0, (4,), "<f4"), FakeCAI(managed, (4,), "<f4"))
    lib.scale[1, 1](1, FakeCAI(0, (0,), "<f4"))  # empty: no pointer to check
    for p in (p0, p1, managed):
        mock.mock_free(p)


def test_dlpack(lib, clean, mock):
    p = mock.mock_malloc(64, 0, 0)
    y = FakeDLPack(p, (3,), 2, 32, byte_offset=8)  # float32
    lib.scale[1, 4](2, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5scaleIfEvT_PS0_l"
    assert struct.unpack("<Q", bytes.fromhex(rec["params"][1])) == (p + 8,)
    assert struct.unpack("<q", bytes.fromhex(rec["params"][2])) == (3,)
    lib.scale[1, 4, 0, cuda.PER_THREAD](2, y)
    assert y.streams == [1, 2]  # the launch's stream, 1 for the legacy default
    lib.scale[1, 4](2, FakeDLPack(p, (3,), 0, 32))  # int32
    assert last_launch(clean)["kernel"] == "_Z5scaleIiEvT_PS0_l"
    lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=13))  # CUDA managed
    with pytest.raises(TypeError, match="argument 'y' is an array in host memory"):
        lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=1))
    with pytest.raises(TypeError, match="a DLPack array on device \\(7, 0\\), not a CUDA device"):
        lib.scale[1, 4](2, FakeDLPack(p, (3,), 2, 32, device_type=7))
    mock.mock_free(p)


def test_to_device_round_trip(mock):
    gc.collect()  # arrays of earlier tests that tracebacks kept alive
    live = mock.mock_live_allocs()
    for a in (np.arange(12, dtype=np.float64).reshape(3, 4), np.array([1, 2, 3], np.int8),
              np.zeros(0, np.float32), np.array(5.0), np.arange(10)[::2],
              np.array([1 + 2j], np.complex64), np.array([True, False])):
        d = cuda.to_device(a)
        assert d.shape == a.shape and d.dtype == a.dtype and d.size == a.size
        assert d.nbytes == a.nbytes and d.ndim == a.ndim and d.device == 0
        back = d.copy_to_host()
        np.testing.assert_array_equal(back, a)
        assert back.flags.c_contiguous and back.flags.writeable
        cai = d.__cuda_array_interface__
        assert cai == {"shape": a.shape, "typestr": a.dtype.str, "data": (d.ptr, False),
                       "version": 3, "strides": None, "stream": None}
    del d
    assert mock.mock_live_allocs() == live  # freed on dealloc
    e = cuda.empty((2, 3), np.int32)
    assert e.shape == (2, 3) and e.dtype == np.int32 and len(e) == 2
    assert repr(e) == "<bindthem.cuda.DeviceArray int32 (2, 3) on device 0>"
    with pytest.raises(TypeError, match="Python objects"):
        cuda.to_device(np.array([object()]))
    with pytest.raises(TypeError, match="cannot create"):
        type(e)()


DEVICE_ARRAY_LIMITS = PRELUDE + """
    cuda.driver()
    maxdims = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
    def refused(exc, f, *a, **kw):
        try:
            f(*a, **kw)
        except exc as e:
            print(type(e).__name__, e)
        else:
            print("accepted", a, kw)
    # at most NPY_MAXDIMS dimensions: copy_to_host sizes its buffer by it
    refused(ValueError, cuda.empty, (1,) * (maxdims + 1), np.float32)
    refused(ValueError, cuda.empty, (1,) * 200, np.float32)
    d = cuda.empty((1,) * maxdims, np.float32)
    assert d.copy_to_host().shape == (1,) * maxdims
    # nbytes must not wrap
    refused(ValueError, cuda.empty, (2 ** 62,), np.complex128)
    refused(ValueError, cuda.empty, (2 ** 31, 2 ** 31, 4), np.float64)
    refused(ValueError, cuda.empty, (3, -1))
    refused(TypeError, cuda.empty, (2.0,))
    e = cuda.empty((np.int64(2), np.uint8(3)), np.int32)
    assert e.shape == (2, 3) and all(type(n) is int for n in e.shape) and e.nbytes == 24
    # device ordinals do not wrap onto device 0
    x = np.arange(3.0)
    refused(ValueError, cuda.to_device, x, device=2 ** 32)
    refused(ValueError, cuda.to_device, x, device=2 ** 64 + 1)
    refused(ValueError, cuda.empty, 3, device=-1)
    refused(TypeError, cuda.to_device, x, device=True)
    refused(TypeError, cuda.to_device, x, device=0.0)
    refused(cuda.CudaError, cuda.to_device, x, device=5)
    assert cuda.to_device(x, device=np.int64(0)).device == 0
    print("done")
"""


def test_device_array_limits(mock_path):
    # a regression here overflowed a stack buffer: run it in a subprocess
    rc, out = run_py(DEVICE_ARRAY_LIMITS, mock_path)
    assert rc == 0, out
    lines = out.splitlines()
    assert lines[-1] == "done" and not any(line.startswith("accepted") for line in lines), out
    assert lines[:-1] == [
        "ValueError shape has %d dimensions; arrays have at most %d" % (n, MAXDIMS)
        for n in (MAXDIMS + 1, 200)] + [
        "ValueError array is too big: 4611686018427387904 elements of 16 bytes",
        "ValueError array is too big",
        "ValueError negative dimensions are not allowed",
        "TypeError 'float' object cannot be interpreted as an integer",
        "ValueError device=4294967296 is not a device ordinal (0 to 63)",
        "ValueError device=18446744073709551617 is not a device ordinal (0 to 63)",
        "ValueError device=-1 is not a device ordinal (0 to 63)",
        "TypeError device must be an int (a device ordinal), not bool",
        "TypeError device must be an int (a device ordinal), not float",
        "CudaError there is no CUDA device 5 (1 device)"], out


MAXDIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32


def test_device_count_and_synchronize(clean):
    assert cuda.device_count() == 1 and cuda.is_available()
    cuda.synchronize()
    assert "ctx 0" in clean.mock_sync_log().decode()


# ---- nvcc ----

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)


def needs_nvcc(test):
    """Skipped without nvcc; marked `nvcc` (tests/run_asan.sh leaves these out:
    nvcc's own processes would start with libasan preloaded)."""
    return pytest.mark.nvcc(pytest.mark.skipif(NVCC is None, reason="needs nvcc")(test))


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


@needs_nvcc
def test_build_fatbin(tmp_path):
    out = cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress"])
    blob = open(out, "rb").read()
    meta = bindthem.parse_header(HEADER, YAML)
    kernels = {d["name"] for d in meta["declarations"] if d["global"]}
    want = {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]
            if ov["function"] in kernels}
    assert len(want) > 5
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump:
        syms = subprocess.run([cuobjdump, "-symbols", out], capture_output=True,
                              text=True).stdout
        assert all(s in syms for s in want), syms
    else:
        assert want <= elf_function_symbols(blob)
    # cached: a second build is the same file, untouched
    mtime = os.path.getmtime(out)
    assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                               cxxflags=["-O3", "--no-compress"]) == out
    assert os.path.getmtime(out) == mtime
    # bindthem.build's option names: extra_cxxflags= is appended to -O3, so
    # this is the same command line, hence the same cached fatbin
    assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                               extra_cxxflags="--no-compress") == out
    # flags=, the old name of cxxflags=, still works for one release
    with pytest.warns(DeprecationWarning, match=r"bindthem.cuda.compile_fatbin\(flags=...\) is "
                                                r"deprecated: the option is called cxxflags=") as w:
        assert cuda.compile_fatbin(HEADER, YAML, arch=75, cache_dir=str(tmp_path),
                                   flags=["-O3", "--no-compress"]) == out
    assert w[0].filename == __file__  # points at the caller's line
    with pytest.raises(TypeError, match="cxxflags= and flags= both given"):
        cuda.compile_fatbin(HEADER, YAML, cxxflags="-O2", flags="-O3")
    assert os.path.getmtime(out) == mtime


@needs_nvcc
def test_default_archs():
    _, supported = cuda._nvcc_info(NVCC)
    chosen = cuda._archs(None, supported)
    assert chosen and set(chosen) <= set(cuda.DEFAULT_ARCHS) and set(chosen) <= set(supported)
    assert cuda._archs(["sm_80", 86, "compute_90"], supported) == [80, 86, 90]
    with pytest.raises(bindthem.BindValueError):  # also a ValueError
        cuda._archs("ampere", supported)
    assert issubclass(bindthem.BindValueError, ValueError)
    with pytest.raises(bindthem.BuildError, match="does not support sm_10"):
        cuda._archs(10, supported)


def bad_header(tmp_path):
    """A header whose kernel k<float> uses an undeclared name on line 4, and its YAML."""
    bad = tmp_path / "bad.cuh"
    bad.write_text("/* k */\ntemplate <class T>\n__global__ void k(T y[], const int y_size)\n"
                   "{ y[0] = undeclared_name; }\n")
    yml = tmp_path / "bad.yml"
    yml.write_text("instantiate:\n  - functions: [k]\n    types:\n      - [float]\n")
    return str(bad), str(yml)


@needs_nvcc
def test_build_error(tmp_path):
    bad, yml = bad_header(tmp_path)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.build(str(bad), str(yml), arch=75, cache_dir=str(tmp_path / "cache"))
    with pytest.warns(DeprecationWarning, match=r"cuda.build\(flags=...\)") as w, \
            pytest.raises(bindthem.BuildError):
        cuda.build(str(bad), str(yml), arch=75, cache_dir=str(tmp_path / "cache"), flags="-O2")
    assert w[0].filename == __file__
    assert "nvcc failed (exit" in str(ei.value)
    assert "undeclared_name" in ei.value.output
    assert ei.value.command[0].endswith("nvcc")


@needs_nvcc
def test_build_then_load_reaches_the_driver(mock, clean, tmp_path):
    # the mock reads a real fatbin's cubin (names and parameter layouts)
    lib = cuda.build(HEADER, YAML, arch=75, cache_dir=str(tmp_path), compiler="nvcc")
    assert lib.__file__.endswith(".fatbin")
    d = cuda.to_device(np.ones(3, np.int32))
    lib.scale[1, 4](3, d)
    assert last_launch(clean)["kernel"] == "_Z5scaleIiEvT_PS0_l"
    # a compressed fatbin is beyond the mock: the load gets as far as the driver
    with pytest.raises(cuda.CudaError, match="CUDA_ERROR_INVALID_IMAGE"):
        cuda.load(b"\x50\xed\x55\xba\x01\x00\x10\x00" + bytes(64), HEADER, YAML)


# ---- parameter lists and defaults ----

OVL_HEADER = os.path.join(DATA, "overloads.cuh")
OVL_YAML = os.path.join(DATA, "overloads.yml")


def test_remapped_kernels_with_other_parameters_and_defaults(mock, clean):
    lib = cuda.load(module_text(OVL_HEADER, OVL_YAML), OVL_HEADER, OVL_YAML)
    k = lib.apply
    assert k.signatures == ("apply(y, s=2.0)", "apply(y, s=2.0)", "apply(src, dst)")
    assert k.__doc__.startswith("Overloaded function.\n\n1. apply(y, s=2.0)\n\ny *= s\n\n")
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    k[1, 4](y)  # s left out: the default, as float
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z8scale_byIfEvPT_iS0_"
    assert rec["params"][2] == struct.pack("<f", 2.0).hex()
    yd = cuda.to_device(np.ones(3))
    k(yd, 0.5, grid=1, block=4)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z8scale_byIdEvPT_iS0_"
    assert rec["params"][2] == struct.pack("<d", 0.5).hex()
    src = cuda.to_device(np.arange(3, dtype=np.float32))
    for call in (lambda: k[1, 4](src, y), lambda: k(dst=y, src=src, grid=1, block=4)):
        call()
        rec = last_launch(clean)
        assert rec["kernel"] == "_Z9copy_fromIfEvPKT_iPS0_i"
        assert [bytes.fromhex(p) for p in rec["params"]] == [
            struct.pack("<Q", src.ptr), struct.pack("<i", 3),
            struct.pack("<Q", y.ptr), struct.pack("<i", 3)]
    with pytest.raises(TypeError, match=r"^apply\(\): no overload takes 0 positional arguments;"
                                        r" the overloads are:\n    apply\(y, s=2.0\): void "
                                        r"scale_by<float>\("):
        k[1, 1]()
    with pytest.raises(TypeError, match=r"apply\(\): argument 'dst' is an array in host memory"):
        k[1, 1](src, dst=np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"apply\(\): argument 's' \(position 2\) got bindthem."
                                        r"cuda.DeviceArray \(a device array of float32, via "
                                        r"DeviceArray\), expected float \(double\)"):
        k[1, 1](yd, y)
    with pytest.raises(TypeError, match=r"needs grid= and block="):
        k(y)


# ---- one Library class; pickling ----

def test_one_library_class_for_cpu_and_cuda(lib):
    assert cuda.Library is bindthem.Library and isinstance(lib, bindthem.Library)
    assert repr(lib) == "<bindthem.Library 'kernels' from '<bytes>' (4 CUDA kernels)>"
    assert lib.__doc__.startswith("CUDA kernels of kernels.cuh, bound by bindthem.\n\n"
                                  "Methods\n-------\n")
    assert lib.__doc__.split("-------\n")[1].split() == lib.__all__
    info = lib.__bindthem__
    assert info.backend.name == "cuda" and info.library is lib
    assert info.header == HEADER and info.metadata["header"] == HEADER
    assert set(dir(lib)) == set(lib.__all__) | {
        "__all__", "__bindthem__", "__doc__", "__file__", "__name__", "metadata",
        "unexported", "not_kernels"}
    assert bindthem.library.library_of(lib.axpy) is lib
    # the same display as a CPU Library's, kernels by their Python signatures
    html = lib._repr_html_()
    assert "<b>bindthem.Library</b> <code>kernels</code>: 4 CUDA kernels from" in html
    assert "<code>axpy(a, x, y)</code>" in html
    assert "void axpy&lt;float&gt;(const float a" in html
    text = bindthem._display.library_text(lib)
    assert text.startswith("bindthem.Library 'kernels': 4 CUDA kernels\n")
    assert "\naxpy(a, x, y)  # line " in text
    assert bindthem.getsource(lib.axpy).count("axpy(") == 1
    assert "__global__ void axpy" in bindthem.getsource(lib.axpy)


def test_cuda_library_pickles_by_value(mock, mock_path, tmp_path, clean):
    src = tmp_path / "src"
    src.mkdir()
    h, y = src / "k.cuh", src / "k.yml"
    shutil.copy(HEADER, h)
    shutil.copy(YAML, y)
    image = tmp_path / "k.fatbin"
    image.write_bytes(module_text())
    lib = cuda.load(str(image), str(h), str(y))
    # in this process: the live Library, and each kernel alone
    assert pickle.loads(pickle.dumps(lib)) is lib
    assert pickle.loads(pickle.dumps(lib.axpy)) is lib.axpy
    assert copy.copy(lib) is lib and copy.deepcopy(lib.scale) is lib.scale
    data = pickle.dumps((lib, lib.axpy))
    assert module_text() in data  # the image travels, not its path
    shutil.rmtree(src)
    image.unlink()
    # another process, without the files: the carried header, YAML and image
    p = tmp_path / "lib.pickle"
    p.write_bytes(data)
    rc, out = run_py(PRELUDE + """
        import pickle
        lib, axpy = pickle.load(open(%r, "rb"))  # bound on first use (bindthem._lazy)
        x = cuda.to_device(np.arange(4, dtype=np.float32))
        y = cuda.to_device(np.ones(4, dtype=np.float32))
        axpy[1, 4](2.0, x, y)
        print(repr(lib), lib.__file__ == %r, axpy.library is lib)
        print(lib.__bindthem__.header.startswith(%r), lib.__all__)
        print(y.copy_to_host().tolist())
        print(pickle.loads(pickle.dumps(axpy)) is lib.axpy)
    """ % (str(p), str(image), str(tmp_path / "cache")), mock_path,
        BINDTHEM_CACHE=tmp_path / "cache")
    assert rc == 0, out
    assert out.splitlines() == [
        "<bindthem.Library 'k' from %r (4 CUDA kernels)> True True" % str(image),
        "True ['axpy', 'fill_i', 'negate', 'scale']",
        "[1.0, 3.0, 5.0, 7.0]", "True"]


def test_cuda_unpickle_without_a_driver_is_no_driver_error(lib, tmp_path):
    p = tmp_path / "lib.pickle"
    p.write_bytes(pickle.dumps(lib.scale))
    rc, out = run_py(PRELUDE + """
        import pickle
        for what, f in (("load", lambda: cuda.load(module_text(), HEADER, YAML)),
                        ("unpickle", lambda: pickle.load(open(%r, "rb")).library)):
            try:
                f()
            except cuda.NoDriverError as e:
                print(what, type(e).__name__, e)
    """ % str(p), "/nonexistent/libcuda.so.1")
    assert rc == 0, out
    load, unpickle = out.splitlines()
    assert load.startswith("load NoDriverError no CUDA driver: cannot load "
                           "/nonexistent/libcuda.so.1")
    assert unpickle == load.replace("load", "unpickle", 1)


def test_cuda_library_of_templates_without_yaml_warns(mock, tmp_path):
    h = tmp_path / "t.cuh"
    h.write_text("// Scale.\ntemplate <class T>\n__global__ void sc(T y[], const int y_size) {}\n"
                 "// host\nint host(int n) { return n; }\n")
    with pytest.warns(bindthem.BindWarning, match=r"t\.cuh binds no functions: its functions "
                                                  r"are templates \(sc<T>\)"):
        lib = cuda.load(b"bindthem-mock-module\n", str(h))
    assert lib.__all__ == [] and lib.not_kernels == ["int host(int n)"]

def test_every_table_dtype_through_cai_and_dlpack(lib, clean, mock):
    """Each row of the dtype table, as a __cuda_array_interface__ typestr and
    as a DLPack code, reads as that dtype: scale<float>/<double>/<int> take
    theirs, any other is named in the no-match message by its dtype (the
    first row of its kind, size and DLPack code: int64 and longlong are
    one). bfloat16 has no typestr of its own ("<V2" is any 2-byte record):
    only DLPack carries it."""
    rows = [t for t in _core.scalar_types() if t["c"] != "void"]
    canonical = {(t["kind"], t["size"], t["dlpack"]): t["numpy"] for t in reversed(rows)}
    kernels = {"float32": "_Z5scaleIfEvT_PS0_l", "float64": "_Z5scaleIdEvT_PS0_l",
               "int32": "_Z5scaleIiEvT_PS0_l"}
    p = mock.mock_malloc(64, 0, 0)
    for t in rows:
        name = canonical[(t["kind"], t["size"], t["dlpack"])]
        cai = FakeCAI(p, (3,), t["typestr"])
        for arr in (cai, FakeDLPack(p, (3,), t["dlpack"], t["size"] * 8)):
            if arr is cai and t["npy_type"] < 0:
                with pytest.raises(TypeError, match=r"\(a device array of an unsupported "
                                                    r"dtype, via __cuda_array_interface__\)"):
                    lib.scale[1, 4](2, arr)
            elif name in kernels:
                lib.scale[1, 4](2, arr)
                assert last_launch(clean)["kernel"] == kernels[name], (t, arr)
            else:
                with pytest.raises(TypeError, match=r"\(a device array of %s, via " % name):
                    lib.scale[1, 4](2, arr)
    mock.mock_free(p)


# ---- std::complex, the prelude, NVRTC ----

CPLX_HEADER = os.path.join(DATA, "complex.cuh")
CPLX_YAML = os.path.join(DATA, "complex.yml")


def kernel_symbols(header, instantiate):
    """bindthem's mangled names of the header's __global__ overloads."""
    meta = bindthem.parse_header(header, instantiate)
    kernels = {d["name"] for d in meta["declarations"] if d["global"]}
    return {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]
            if ov["function"] in kernels}


def test_kernel_source_has_the_cpu_prelude():
    from bindthem.build import PRELUDE
    src = cuda.kernel_source(CPLX_HEADER, CPLX_YAML)
    assert src.startswith(PRELUDE) and "#include <complex>" in src
    assert "template __global__ void zaxpy<std::complex<float>>(" in src
    nv = cuda.kernel_source(CPLX_HEADER, CPLX_YAML, compiler="nvrtc")
    assert nv.startswith(cuda.NVRTC_PRELUDE) and "#include <complex>" not in nv
    with pytest.raises(ValueError, match="compiler='gcc': expected 'nvcc' or 'nvrtc'") as ei:
        cuda.kernel_source(CPLX_HEADER, CPLX_YAML, compiler="gcc")
    assert isinstance(ei.value, bindthem.BindValueError)


@needs_nvcc
def test_nvcc_builds_std_complex_and_binds(mock, clean, tmp_path):
    out = cuda.compile_fatbin(CPLX_HEADER, CPLX_YAML, arch=75, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress"])
    want = kernel_symbols(CPLX_HEADER, CPLX_YAML)
    assert len(want) == 3 and want <= elf_function_symbols(open(out, "rb").read())
    # the mock reads the fatbin's cubin: kernels and parameter layouts (checked
    # against the header at load), launched with the bytes bindthem packs
    lib = cuda.load(out, CPLX_HEADER, CPLX_YAML)
    assert lib.__all__ == ["sqnorm", "zaxpy"]
    x = cuda.to_device(np.ones(3, np.complex64))
    y = cuda.to_device(np.zeros(3, np.complex64))
    lib.zaxpy[1, 32](np.complex64(1.5 - 2j), x, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5zaxpyISt7complexIfEEvT_PKS2_iPS2_i"
    assert rec["params"][0] == struct.pack("<ff", 1.5, -2.0).hex()
    assert rec["params"][1:] == [struct.pack("<Q", x.ptr).hex(), struct.pack("<i", 3).hex(),
                                 struct.pack("<Q", y.ptr).hex(), struct.pack("<i", 3).hex()]


@needs_nvcc
def test_nvcc_flags_for_std_complex(tmp_path):
    bad, yml = bad_header(tmp_path)
    for flags, std in ((None, "-std=c++20"), (["-O2", "-std=c++17"], "-std=c++17")):
        with pytest.raises(bindthem.BuildError) as ei:
            cuda.compile_fatbin(bad, yml, arch=75, cxxflags=flags,
                                cache_dir=str(tmp_path / "cache"))
        cmd = ei.value.command
        assert "--expt-relaxed-constexpr" in cmd
        assert [f for f in cmd if f.startswith("-std")] == [std]


def _libnvrtc():
    try:
        return cuda.find_nvrtc()[0]
    except bindthem.BuildError:
        return None


LIBNVRTC = _libnvrtc()
needs_nvrtc = pytest.mark.skipif(LIBNVRTC is None,
                                 reason="no libnvrtc (CUDA toolkit or nvidia-cuda-nvrtc)")


@needs_nvrtc
@pytest.mark.parametrize("arch, magic", [(75, b"\x7fELF"), ("compute_75", b"//")])
def test_nvrtc_names_match_bindthem(mock, clean, tmp_path, arch, magic):
    out = cuda.compile_nvrtc(HEADER, YAML, arch=arch, cache_dir=str(tmp_path))
    blob = open(out, "rb").read()
    assert blob.startswith(magic)
    want = kernel_symbols(HEADER, YAML)
    if magic == b"//":
        import re
        assert want == set(re.findall(r"\.entry (\w+)\(", blob.decode()))
    else:
        assert want <= elf_function_symbols(blob)
    lib = cuda.load(out, HEADER, YAML)
    assert lib.__all__ == ["axpy", "fill_i", "negate", "scale"]
    x = cuda.to_device(np.arange(4, dtype=np.float64))
    y = cuda.to_device(np.ones(4))
    lib.axpy[1, 4](2.0, x, y)
    assert last_launch(clean)["kernel"] == "_Z4axpyIdEvT_PKS0_iPS0_i"
    # cached: the same file, untouched
    mtime = os.path.getmtime(out)
    assert cuda.compile_nvrtc(HEADER, YAML, arch=arch, cache_dir=str(tmp_path)) == out
    assert os.path.getmtime(out) == mtime


@needs_nvrtc
def test_nvrtc_std_complex_and_remapped_overloads(mock, clean, tmp_path):
    lib = cuda.build(CPLX_HEADER, CPLX_YAML, compiler="nvrtc", arch=80,
                     cache_dir=str(tmp_path))
    assert lib.__file__.endswith(".cubin")
    assert kernel_symbols(CPLX_HEADER, CPLX_YAML) <= elf_function_symbols(
        open(lib.__file__, "rb").read())
    x = cuda.to_device(np.ones(2, np.complex128))
    out = cuda.to_device(np.zeros(2))
    lib.sqnorm[1, 32](x, out, 0.25)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z6sqnormISt7complexIdEdEvPKT_iPT0_iS5_"
    assert rec["params"][4] == struct.pack("<d", 0.25).hex()
    # overloads of one remapped name with other parameter lists
    ovl = cuda.build(OVL_HEADER, OVL_YAML, compiler="nvrtc", cache_dir=str(tmp_path))
    assert ovl.__file__.endswith(".ptx") and ovl.__all__ == ["apply"]


@needs_nvrtc
def test_nvrtc_standard_includes_are_stand_ins(tmp_path):
    """A header written for the CPU build includes <complex>, <algorithm>,
    <cmath>: under NVRTC they are empty stand-ins, the prelude's libcu++
    names doing the work."""
    h = tmp_path / "std.cuh"
    h.write_text("#include <complex>\n#include <algorithm>\n#include <cmath>\n"
                 "/* clamp */\n"
                 "template <class T>\n"
                 "__global__ void clamp(std::complex<T> x[], const int x_size, const T r)\n"
                 "{ int i = threadIdx.x; if (i < x_size) x[i] *= std::min(r, std::abs(x[i])); }\n")
    y = tmp_path / "std.yml"
    y.write_text("instantiate:\n  - functions: [clamp]\n    types:\n      - [float]\n")
    out = cuda.compile_nvrtc(str(h), str(y), cache_dir=str(tmp_path / "cache"))
    text = open(out).read()
    want = kernel_symbols(str(h), str(y))
    assert len(want) == 1 and all(".entry " + w in text for w in want), (want, text[:2000])


@needs_nvrtc
def test_nvrtc_lowered_name_mismatch_names_both(monkeypatch, tmp_path):
    real = cuda._nvrtc._kernel_overloads

    def wrong(meta):
        for ov, d in real(meta):
            if ov["symbol"] == "_Z4axpyIfEvT_PKS0_iPS0_i":
                ov = dict(ov, symbol="_Z4axpyIfEvT_PKS0_iPS0_l")
            yield ov, d

    monkeypatch.setattr(cuda._nvrtc, "_kernel_overloads", wrong)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.compile_nvrtc(HEADER, YAML, cache_dir=str(tmp_path))
    assert ("void axpy<float>(const float a, const float x[], const int x_size, float y[], "
            "const int y_size): NVRTC lowers it to _Z4axpyIfEvT_PKS0_iPS0_i, bindthem mangles "
            "it _Z4axpyIfEvT_PKS0_iPS0_l") in str(ei.value)


@needs_nvrtc
def test_nvrtc_header_error_shows_its_log(tmp_path):
    bad, yml = bad_header(tmp_path)
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.build(bad, yml, compiler="nvrtc", cache_dir=str(tmp_path / "c"))
    msg = str(ei.value)
    assert msg.startswith("NVRTC failed to compile %s: nvrtcCompileProgram: "
                          "NVRTC_ERROR_COMPILATION" % bad)
    assert '%s:4: error: identifier "undeclared_name" is undefined' % bad in msg
    assert "%s(4): error" % bad in ei.value.output  # NVRTC's own log, as it wrote it


@needs_nvrtc
def test_nvrtc_host_only_include_says_why(tmp_path):
    h = tmp_path / "vec.cuh"
    h.write_text("#include <vector>\n/* k */\n__global__ void k(float y[], const int y_size)\n"
                 "{ y[0] = 1; }\n")
    with pytest.raises(bindthem.BuildError) as ei:
        cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert 'cannot open source file "vector"' in str(ei.value)
    assert "<vector>, <string>, <iostream> have no device version (build with nvcc" in str(
        ei.value)


@needs_nvrtc
def test_nvrtc_tracks_local_includes(tmp_path):
    (tmp_path / "inc.h").write_text("#define SCALE 2\n")
    h = tmp_path / "k.cuh"
    h.write_text('#include "inc.h"\n/* k */\n__global__ void k(float y[], const int y_size)\n'
                 "{ y[0] = SCALE; }\n")
    first = cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c")) == first
    (tmp_path / "inc.h").write_text("#define SCALE 3\n")
    second = cuda.compile_nvrtc(str(h), cache_dir=str(tmp_path / "c"))
    assert second != first
    assert "%d;" % 0x40000000 in open(first).read()  # 2.0f's bits in the PTX
    assert "%d;" % 0x40400000 in open(second).read()  # 3.0f's


@needs_nvrtc
def test_nvrtc_arch_choices(tmp_path):
    with pytest.raises(ValueError, match="NVRTC compiles for one architecture at a time"):
        cuda.compile_nvrtc(HEADER, YAML, arch=[75, 80], cache_dir=str(tmp_path))
    with pytest.raises(bindthem.BuildError, match="this NVRTC does not support sm_20"):
        cuda.compile_nvrtc(HEADER, YAML, arch="sm_20", cache_dir=str(tmp_path))
    assert cuda._pick_compiler(None, "/nonexistent/nvcc") == "nvrtc"
    assert cuda._pick_compiler("nvrtc", None) == "nvrtc"


def test_no_libnvrtc_names_what_to_install(tmp_path):
    rc, out = run_py(PRELUDE + """
        for call in (lambda: cuda.compile_nvrtc(HEADER, YAML, cache_dir=%r),
                     lambda: cuda.build(HEADER, YAML, compiler="nvrtc", cache_dir=%r)):
            try:
                call()
            except bindthem.BuildError as e:
                print(e)
    """ % (str(tmp_path), str(tmp_path)), BINDTHEM_LIBNVRTC="/nonexistent/libnvrtc.so.13")
    assert rc == 0, out
    assert out.count("cannot find libnvrtc (NVRTC, CUDA's run-time compiler): install the "
                     "CUDA toolkit") == 2, out
    assert "`pip install nvidia-cuda-nvrtc` (CUDA 13" in out
    assert "cannot load /nonexistent/libnvrtc.so.13" in out


# ---- the launch API: configuration, launch errors, shared memory ----

def attr_sets(mock):
    mock.mock_attr_log.restype = ctypes.c_char_p
    return [json.loads(line) for line in mock.mock_attr_log().decode().splitlines()]


def test_launch_configuration_as_keywords_everywhere(lib, clean):
    x = cuda.to_device(np.ones(3, dtype=np.float32))
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    lib.axpy[1, 4](1, x, y, stream=cuda.PER_THREAD, shared_mem=np.uint16(8))
    rec = last_launch(clean)
    assert (rec["stream"], rec["shared"], rec["block"]) == (2, 8, [4, 1, 1])
    lib.axpy[1, 4, np.int32(16)](1, x, y, stream=cuda.PER_THREAD)
    assert (last_launch(clean)["shared"], last_launch(clean)["stream"]) == (16, 2)
    lib.axpy(1, x, y, grid=2, block=4, shared_mem=np.int64(32), stream=cuda.PER_THREAD)
    rec = last_launch(clean)
    assert (rec["grid"], rec["shared"], rec["stream"]) == ([2, 1, 1], 32, 2)
    launch = lib.axpy[1, 4, np.uint64(24)]
    assert launch.shared_mem == 24 and launch.stream is None
    with pytest.raises(TypeError, match=r"shared_mem given both in the brackets and as "
                                        r"shared_mem="):
        lib.axpy[1, 4, 0](1, x, y, shared_mem=8)
    with pytest.raises(TypeError, match=r"stream given both"):
        lib.axpy[1, 4, 0, None](1, x, y, stream=None)
    with pytest.raises(ValueError, match=r"shared_mem must be an int .* not float"):
        lib.axpy[1, 4](1, x, y, shared_mem=8.0)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'shared'"):
        lib.axpy[1, 4](1, x, y, shared=8)


def test_launch_error_names_kernel_overload_grid_and_block(lib, clean, monkeypatch):
    x = cuda.to_device(np.ones(3, dtype=np.float32))
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    monkeypatch.setenv("MOCK_CUDA_LAUNCH_ERROR", "1")
    with pytest.raises(cuda.CudaError) as e:
        lib.axpy[(3, 2), 64](1, x, y)
    sig = lib.axpy.overloads[0]
    assert "axpy<float>" in sig
    assert str(e.value).startswith(sig + " launch with grid=(3,2,1) block=(64,1,1): "
                                   "cuLaunchKernel(")
    assert "CUDA_ERROR_INVALID_VALUE" in str(e.value) and e.value.code == 1
    with pytest.raises(cuda.CudaError, match=r"block=\(64,1,1\) shared_mem=100: "):
        lib.axpy[1, 64, 100](1, x, y)


def test_dynamic_shared_memory_above_48k_is_opted_in(lib, clean, monkeypatch):
    y = cuda.to_device(np.ones(3, dtype=np.float32))
    lib.scale[1, 32, 48 * 1024](1, y)
    assert attr_sets(clean) == []  # 48 KiB needs no opt-in
    lib.scale[1, 32, 64 * 1024](1, y)
    lib.scale[1, 32, 64 * 1024](1, y)  # once per size increase
    lib.scale[1, 32, 50 * 1024](1, y)
    lib.scale[1, 32, 100 * 1024](1, y)
    sets = attr_sets(clean)
    assert [(s["attr"], s["value"], s["device"]) for s in sets] == [(8, 65536, 0), (8, 102400, 0)]
    assert {s["kernel"] for s in sets} == {lib.scale.symbols[0]}
    assert [r["shared"] for r in launches(clean)] == [49152, 65536, 65536, 51200, 102400]
    monkeypatch.setenv("MOCK_CUDA_STATIC_SHARED", "1024")
    with pytest.raises(ValueError, match=r"scale<float>.* launch with grid=\(1,1,1\) "
                                         r"block=\(32,1,1\) shared_mem=232448: shared_mem=232448 "
                                         r"bytes is more than .* allows: at most 232448 bytes "
                                         r".* uses 1024 statically, so shared_mem may be at most "
                                         r"231424"):
        lib.scale[1, 32, 232448](1, y)
    assert len(launches(clean)) == 5


def test_missing_arguments_read_as_for_cpu_functions(lib):
    x = cuda.to_device(np.ones(3))
    with pytest.raises(TypeError) as e:
        lib.axpy[1, 1](1)
    assert str(e.value) == "axpy() missing 2 required positional arguments: 'x' and 'y'"
    with pytest.raises(TypeError) as e:
        lib.axpy(1, x, grid=1, block=1)
    assert str(e.value) == "axpy() missing 1 required positional argument: 'y'"


# ---- kernels behave like CPU Functions ----

def test_kernel_signature_and_descriptor(lib):
    import inspect
    sig = inspect.signature(lib.axpy)
    assert str(sig) == "(a, x, y, *, grid, block, shared_mem=0, stream=None)"
    assert lib.axpy.__text_signature__ == str(sig)

    class Holder:
        k = lib.axpy
    assert Holder().k is lib.axpy  # no binding, as a Function stored on a class


def test_kernel_pickles_through_its_reduce(lib, mock):
    assert lib.axpy.library is lib
    fn, args = lib.axpy.__reduce__()
    assert args[1] == "axpy"
    k = pickle.loads(pickle.dumps(lib.axpy))
    assert k is lib.axpy  # the live Library is reused
    assert lib.axpy.__dask_tokenize__() == lib.__bindthem__._token("axpy")
    assert lib.axpy.__dask_tokenize__() != lib.scale.__dask_tokenize__()
    assert copy.copy(lib.axpy) is lib.axpy and copy.deepcopy(lib.axpy) is lib.axpy


def test_kernel_display_as_a_function(lib):
    html = lib.axpy._repr_html_()
    assert "<b>bindthem CUDA kernel</b> <code>kernels.axpy</code>" in html
    assert "<code>axpy(a, x, y)</code>" in html and "void axpy&lt;float&gt;(" in html

    class P:
        def __init__(self):
            self.out = []

        def text(self, t):
            self.out.append(t)
    p = P()
    lib.axpy._repr_pretty_(p, False)
    lines = p.out[0].splitlines()
    assert lines[0] == "axpy(a, x, y)  # bindthem CUDA kernel kernels.axpy, 2 overloads"
    assert lines[2].startswith("    void axpy<float>(")


# ---- __half, static kernels ----

HALF_HEADER = os.path.join(DATA, "half.cuh")
HALF_YAML = os.path.join(DATA, "half.yml")


@pytest.fixture(scope="module")
def half_lib(mock, tmp_path_factory):
    """half.cuh compiled by nvcc (one uncompressed cubin, which the mock reads)."""
    if NVCC is None:
        pytest.skip("needs nvcc")
    out = cuda.compile_fatbin(HALF_HEADER, HALF_YAML, arch=90,
                              cache_dir=str(tmp_path_factory.mktemp("half")),
                              cxxflags=["-O3", "--no-compress"])
    return cuda.load(out, HALF_HEADER, HALF_YAML), open(out, "rb").read()


@needs_nvcc
def test_half_names_are_nvccs(half_lib):
    lib, blob = half_lib
    built = elf_function_symbols(blob)
    assert set(lib.haxpy.symbols) | set(lib.mix.symbols) | set(lib.hscale.symbols) <= built
    assert "_Z5haxpyI6__halfEvT_PKS1_iPS1_i" in lib.haxpy.symbols
    assert "_ZN2ns3mixI6__halfS1_EEvT_T0_PS2_i" in lib.mix.symbols  # __half twice: S1_
    assert lib.hscale.symbols == ("_Z6hscale6__halfPS_iS_",)  # `half` is __half


@needs_nvcc
def test_half_arrays_and_scalars(half_lib, clean):
    lib, _ = half_lib
    x = cuda.to_device(np.arange(4, dtype=np.float16))
    y = cuda.to_device(np.ones(4, dtype=np.float16))
    lib.haxpy[1, 4](np.float16(0.5), x, y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5haxpyI6__halfEvT_PKS1_iPS1_i"
    assert rec["params"][0] == np.float16(0.5).tobytes().hex()
    lib.haxpy[1, 4](1 / 3, x, y)  # a Python float converts, rounded as NumPy rounds
    assert last_launch(clean)["params"][0] == np.float16(1 / 3).tobytes().hex()
    xf = cuda.to_device(np.arange(4, dtype=np.float32))
    lib.haxpy[1, 4](0.5, xf, cuda.to_device(np.ones(4, dtype=np.float32)))
    assert last_launch(clean)["kernel"] == "_Z5haxpyIfEvT_PKS0_iPS0_i"
    with pytest.raises(TypeError, match=r"float16"):
        lib.haxpy[1, 4](0.5, x, cuda.to_device(np.ones(4, dtype=np.float32)))
    lib.mix[1, 4](np.float16(1), np.float32(2), y)
    assert last_launch(clean)["kernel"] == "_ZN2ns3mixI6__halffEEvT_T0_PS2_i"


@needs_nvcc
def test_half_conversion_rounds_like_numpy(half_lib, clean):
    lib, _ = half_lib
    y = cuda.to_device(np.ones(2, dtype=np.float16))
    rng = np.random.default_rng(7)
    tiny = np.ldexp(1.0, -24)  # the smallest subnormal
    values = [0.0, -0.0, 1.0, 65504.0, 65519.99, -65519.99, tiny, tiny / 2, tiny * 1.5,
              tiny * 0.75, np.ldexp(1.0, -14), 1 + np.ldexp(1.0, -11), 1 + 3 * np.ldexp(1.0, -11),
              2049.0, 2051.0, 1e-30, float("inf"), float("-inf"), 6.1e-5, 0.1]
    values += list(rng.standard_normal(300) * np.exp2(rng.integers(-26, 16, 300)))
    for v in values:
        lib.hscale[1, 2](v, y, -v)
        s, _, _, t = last_launch(clean)["params"]
        assert s == np.float16(v).tobytes().hex(), v
        assert t == np.float16(-v).tobytes().hex(), -v
    lib.hscale[1, 2](float("nan"), y, 0)
    assert np.isnan(np.frombuffer(bytes.fromhex(last_launch(clean)["params"][0]), np.float16))
    # a finite value that rounds to inf is refused, as for float
    for v in (65520.0, -1e6, 1e300):
        with pytest.raises(OverflowError, match=r"hscale\(\): argument 's' = .* does not fit "
                                                r"in __half"):
            lib.hscale[1, 2](v, y, 0)


def test_half_is_refused_on_the_cpu(mock_path, tmp_path):
    h = tmp_path / "twice.h"
    h.write_text("template <class T>\nT twice(const T x);\n")
    y = tmp_path / "twice.yml"
    y.write_text("instantiate:\n  - functions: [twice]\n    types:\n      - [__half]\n")
    with pytest.raises(bindthem.BindError, match=r"instantiate.yml lists 'twice' \(.*twice.h:2\), "
                                                 r"which is a function of a CUDA-only type "
                                                 r"\(__half and __nv_bfloat16 have no C "
                                                 r"equivalent\); bindthem.cuda binds it as a "
                                                 r"kernel"):
        bindthem.load(mock_path, str(h), str(y))


@needs_nvcc
def test_static_kernel_found_by_name(half_lib, clean):
    lib, blob = half_lib
    assert "sfill" in lib.__all__ and "_Z5sfilliPii" in elf_function_symbols(blob)
    out = cuda.to_device(np.zeros(3, dtype=np.int32))
    lib.sfill[1, 3](7, out)
    assert last_launch(clean)["kernel"] == "_Z5sfilliPii"


@needs_nvcc
def test_static_kernel_of_relocatable_device_code(mock, clean, tmp_path):
    # -rdc=true renames a static kernel __nv_static_<file hash>_<its name>
    out = cuda.compile_fatbin(HALF_HEADER, HALF_YAML, arch=90, cache_dir=str(tmp_path),
                              cxxflags=["-O3", "--no-compress", "-rdc=true"])
    names = elf_function_symbols(open(out, "rb").read())
    (renamed,) = [n for n in names if n.endswith("_Z5sfilliPii")]
    assert renamed.startswith("__nv_static_")
    lib = cuda.load(out, HALF_HEADER, HALF_YAML)
    lib.sfill[1, 3](7, cuda.to_device(np.zeros(3, dtype=np.int32)))
    assert last_launch(clean)["kernel"] == renamed


@needs_nvrtc
def test_nvrtc_builds_half_and_static_kernels(mock, clean, tmp_path):
    # NVRTC finds cuda_fp16.h in the toolkit; its lowered names are checked
    # against bindthem's (a mismatch is a BuildError)
    out = cuda.compile_nvrtc(HALF_HEADER, HALF_YAML, arch=90, cache_dir=str(tmp_path))
    lib = cuda.load(out, HALF_HEADER, HALF_YAML)
    lib.hscale[1, 2](0.5, cuda.to_device(np.ones(2, np.float16)), 1)
    assert last_launch(clean)["kernel"] == "_Z6hscale6__halfPS_iS_"
    lib.sfill[1, 3](7, cuda.to_device(np.zeros(3, dtype=np.int32)))
    assert last_launch(clean)["kernel"] == "_Z5sfilliPii"


def test_shared_memory_opt_in_on_modules(mock_path):
    # drivers before 12.0: CUfunctions, so cuFuncSetAttribute (the mock
    # refuses it for a CUkernel)
    rc, out = run_py(PRELUDE + """
        import ctypes
        m = ctypes.CDLL(%r)
        m.mock_attr_log.restype = ctypes.c_char_p
        lib = cuda.load(module_text(), HEADER, YAML)
        y = cuda.to_device(np.ones(4, dtype=np.float32))
        lib.scale[1, 4, 60000](2, y)
        lib.scale[1, 4, 60000](2, y)
        print([json.loads(l)["value"] for l in m.mock_attr_log().decode().splitlines()])
    """ % mock_path, mock_path, MOCK_CUDA_VERSION=11080)
    assert rc == 0, out
    assert out.endswith("[60000]\n")


# ---- __nv_bfloat16 (NumPy's through ml_dtypes, when installed) ----

@needs_nvcc
def test_bfloat16_names_and_dlpack_arrays(half_lib, clean, mock):
    lib, blob = half_lib
    assert lib.bscale.symbols == ("_Z6bscale13__nv_bfloat16PS_iS_",)
    assert "_Z5haxpyI13__nv_bfloat16EvT_PKS1_iPS1_i" in lib.haxpy.symbols
    assert "_ZN2ns3mixI13__nv_bfloat166__halfEEvT_T0_PS3_i" in lib.mix.symbols
    assert set(lib.bscale.symbols) | set(lib.mix.symbols) <= elf_function_symbols(blob)
    p = mock.mock_malloc(8, 0, 0)
    try:
        # DLPack's kDLBfloat (4), as PyTorch exports torch.bfloat16; a float16
        # array (kDLFloat, 16 bits) is another dtype
        lib.bscale[1, 4](2.0, FakeDLPack(p, (4,), 4, 16), 1.0)
        s, _, n, t = last_launch(clean)["params"]
        assert (s, t, n) == ("0040", "803f", "04000000")  # bfloat16 2.0 and 1.0
        with pytest.raises(TypeError, match=r"float16"):
            lib.bscale[1, 4](2.0, FakeDLPack(p, (4,), 2, 16), 1.0)
        lib.haxpy[1, 4](1.0, FakeDLPack(p, (4,), 4, 16), FakeDLPack(p, (4,), 4, 16))
        assert last_launch(clean)["kernel"] == "_Z5haxpyI13__nv_bfloat16EvT_PKS1_iPS1_i"
    finally:
        mock.mock_free(p)


@needs_nvcc
def test_bfloat16_with_ml_dtypes(half_lib, clean):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    lib, _ = half_lib
    y = cuda.to_device(np.ones(4, dtype=bf16))
    assert y.dtype == np.dtype(bf16)
    lib.haxpy[1, 4](bf16(0.5), cuda.to_device(np.arange(4, dtype=bf16)), y)
    rec = last_launch(clean)
    assert rec["kernel"] == "_Z5haxpyI13__nv_bfloat16EvT_PKS1_iPS1_i"
    assert rec["params"][0] == bf16(0.5).tobytes().hex()
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(4, dtype=bf16))
    rng = np.random.default_rng(11)
    big = float(np.finfo(bf16).max)
    values = [0.0, -0.0, 1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 2 ** -133, 2 ** -134, 1e-40, big,
              -big, float("inf"), 0.1, 3.0e38]
    values += list(rng.standard_normal(300) * np.exp2(rng.integers(-135, 127, 300)))
    for v in values:
        lib.bscale[1, 4](v, y, -v)
        s, _, _, t = last_launch(clean)["params"]
        assert s == bf16(v).tobytes().hex(), v
        assert t == bf16(-v).tobytes().hex(), -v
    with pytest.raises(OverflowError, match=r"'s' = .* does not fit in __nv_bfloat16"):
        lib.bscale[1, 4](3.5e38, y, 0)
