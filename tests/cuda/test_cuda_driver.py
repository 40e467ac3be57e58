"""bindthem.cuda's driver layer (csrc/driver/bt_cuda*.c) through the mock
libcuda: importing without a driver, loading one, the entry points and the
versions asked for, drivers too old, missing symbols, no device, a failing
primary context; each driver that differs runs in a subprocess of its own."""

import json
import os

import pytest
from cuda_support import HEADER, PRELUDE, YAML, module_text, run_py

import bindthem.cuda as cuda

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
    "cuKernelGetFunction": 12000, "cuStreamGetCtx": 9020,
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": 6050, "cuOccupancyMaxPotentialBlockSize": 6050,
    "cuModuleGetGlobal": 3020, "cuMemcpyAsync": 4000, "cuLaunchKernelEx": 11060,
    "cuMemAllocAsync": 11020, "cuMemFreeAsync": 11020, "cuDeviceGetDefaultMemPool": 11020,
    "cuMemPoolSetAttribute": 11020, "cuLibraryGetGlobal": 12000,
    # graphs and stream capture (bt_cuda_graph.c)
    "cuStreamBeginCapture": 10010, "cuStreamEndCapture": 10000, "cuStreamIsCapturing": 10000,
    "cuStreamGetCaptureInfo": 11030, "cuGraphInstantiateWithFlags": 11040,
    "cuGraphLaunch": 10000, "cuGraphExecDestroy": 10000, "cuGraphDestroy": 10000,
    "cuThreadExchangeStreamCaptureMode": 10010,
}
# managed memory and peer access (bt_cuda_managed.c, bt_cuda_peer.c)
EXPECTED_VERSIONS.update({
    "cuMemAllocManaged": 6000, "cuMemPrefetchAsync": 12020, "cuMemAdvise": 12020,
    "cuDeviceCanAccessPeer": 4000, "cuCtxEnablePeerAccess": 4000, "cuCtxDisablePeerAccess": 4000,
    "cuMemcpyPeerAsync": 4000,
})


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


def driver_error(mock_path, **env):
    """What cuda.driver() raises in a fresh process on the mock run with env."""
    rc, out = run_py(PRELUDE + """
        try:
            cuda.driver()
        except cuda.CudaError as e:
            print(type(e).__name__, e)
    """, mock_path, **env)
    assert rc == 0, out
    return out


def test_driver_too_old(mock_path):
    out = driver_error(mock_path, MOCK_CUDA_VERSION=11020)
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
    out = driver_error(mock_path, MOCK_CUDA_TOO_NEW="cuMemAlloc")
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
        import os
        from cuda_support import mock_handle
        m = mock_handle(os.environ["BINDTHEM_LIBCUDA"])
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
    # (8000: cuMemPrefetchAsync's and cuMemAdvise's device-ordinal ABIs, before 12.2's)
    assert ("[2000, 2010, 2020, 3020, 4000, 6000, 6050, 7000, 8000, 9000, 9020, 10000, 10010, "
            "11020, 11030, 11040, 11060, 12000]" in out)
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


# ---- array arguments ----

def test_device_count_and_synchronize(clean):
    assert cuda.device_count() == 1 and cuda.is_available()
    cuda.synchronize()
    assert "ctx 0" in clean.mock_sync_log().decode()
