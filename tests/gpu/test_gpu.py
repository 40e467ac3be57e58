"""bindthem.cuda on a real GPU: nvcc-built kernels launched through the driver.

Marked `gpu`; skipped unless a CUDA driver and a device are present. Run with
tests/gpu/run_gpu_check.sh (or `pytest -m gpu tests/gpu`), in a process of
its own: the driver is process-wide and tests/test_cuda.py points it at a
mock.
"""

import os
import shutil
import subprocess
import threading

import numpy as np
import pytest

import bindthem
import bindthem.cuda as cuda

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "cuda")
HEADER = os.path.join(DATA, "kernels.cuh")
YAML = os.path.join(DATA, "kernels.yml")


def _available():
    if os.environ.get("BINDTHEM_LIBCUDA", "").endswith("libcuda_mock.so"):
        return False
    try:
        return cuda.device_count() > 0
    except cuda.CudaError:
        return False


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not _available(), reason="needs a CUDA driver and device"),
              pytest.mark.skipif(shutil.which("nvcc") is None and
                                 not os.path.exists("/usr/local/cuda/bin/nvcc"),
                                 reason="needs nvcc")]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cuda_cache"))


@pytest.fixture(scope="module")
def lib(cache):
    # on 12.4+ drivers this also checks every kernel's parameter layout
    # (cuKernelGetParamInfo) against the header
    return cuda.build(HEADER, YAML, cache_dir=cache)


def test_driver():
    info = cuda.driver()
    print(info)
    assert info["version"] >= 11030


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_axpy(lib, dtype):
    n = 100_003
    x = np.random.default_rng(0).random(n).astype(dtype)
    y = np.random.default_rng(1).random(n).astype(dtype)
    dx, dy = cuda.to_device(x), cuda.to_device(y)
    lib.axpy[(n + 255) // 256, 256](dtype(2.5), dx, dy)
    cuda.synchronize()
    np.testing.assert_allclose(dy.copy_to_host(), 2.5 * x + y, rtol=1e-6)


def test_dispatch_and_kinds(lib):
    for dt in (np.float32, np.float64, np.int32):
        d = cuda.to_device(np.arange(10, dtype=dt))
        lib.scale(3, d, grid=1, block=32)
        np.testing.assert_array_equal(d.copy_to_host(), 3 * np.arange(10, dtype=dt))
    d = cuda.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    lib.negate[1, 32](d)  # x_size is shape[0]: the first 2 values
    expected = np.arange(6, dtype=np.float32)
    expected[:2] *= -1
    np.testing.assert_array_equal(d.copy_to_host(), expected.reshape(2, 3))
    out = cuda.empty(1000, np.int32)
    lib.fill_i[4, 256](7, out)
    assert (out.copy_to_host() == 7).all()


ROW_SUMS = """
/* out[i] = the sum of row i of the x_size0-by-x_size1 array x. */
template <class T>
__global__ void row_sums(const T x[], const int x_size0, const long x_size1, T out[],
                         const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= x_size0 || i >= out_size)
        return;
    T s = 0;
    for (long j = 0; j < x_size1; j++)
        s += x[i * x_size1 + j];
    out[i] = s;
}
"""


def test_size_parameters_get_each_axis(cache, tmp_path):
    h, y = tmp_path / "rows.cuh", tmp_path / "rows.yml"
    h.write_text(ROW_SUMS)
    y.write_text("- functions: [row_sums]\n  types: [[float], [double]]\n")
    rows = cuda.build(str(h), str(y), cache_dir=cache)
    for dt, shape in ((np.float64, (37, 5)), (np.float32, (3, 1000)), (np.float64, (300, 1))):
        x = np.random.default_rng(2).random(shape).astype(dt)
        out = cuda.empty(shape[0], dt)
        rows.row_sums[(shape[0] + 127) // 128, 128](cuda.to_device(x), out)
        np.testing.assert_allclose(out.copy_to_host(), x.sum(axis=1), rtol=1e-5)
    with pytest.raises(ValueError, match="'x_size1' takes its shape\\[1\\]"):
        rows.row_sums[1, 1](cuda.to_device(np.ones(4)), cuda.empty(4, np.float64))


def test_streams_and_threads(lib):
    d = cuda.to_device(np.ones(512, dtype=np.float32))
    lib.scale[2, 256, 0, cuda.PER_THREAD](2, d)
    lib.scale[2, 256, 0, cuda.LEGACY](2, d)
    errors = []

    def work():
        try:
            lib.scale[2, 256](2, d)  # a new thread: no context until bindthem sets one
            cuda.synchronize()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert not errors
    cuda.synchronize()
    assert (d.copy_to_host() == 8).all()


def test_refusals(lib):
    d = cuda.to_device(np.ones(4, dtype=np.float32))
    with pytest.raises(TypeError, match="to_device"):
        lib.axpy[1, 4](1.0, np.ones(4, dtype=np.float32), d)
    with pytest.raises(cuda.CudaError):
        lib.scale[1, 1, 1 << 30](1, d)  # 1 GiB of dynamic shared memory


def test_missing_kernel_lists_module(cache, tmp_path):
    fatbin = cuda.compile_fatbin(HEADER, YAML, cache_dir=cache)
    yml = tmp_path / "more.yml"
    yml.write_text("instantiate:\n  - functions: [axpy]\n    types:\n      - [int]\n")
    with pytest.raises(bindthem.SymbolError) as ei:
        cuda.load(fatbin, HEADER, str(yml))
    if cuda.driver()["version"] >= 12040:
        assert "did you mean axpy<float> or axpy<double>?" in str(ei.value)


def test_ptx_jit(tmp_path):
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    src = tmp_path / "k.cu"
    src.write_text(cuda.kernel_source(HEADER, YAML))
    ptx = tmp_path / "k.ptx"
    subprocess.run([nvcc, "-ptx", "-arch=compute_75", str(src), "-o", str(ptx)], check=True)
    lib = cuda.load(str(ptx), HEADER, YAML)
    d = cuda.to_device(np.ones(3))
    lib.scale[1, 32](4.0, d)
    assert (d.copy_to_host() == 4).all()
    with pytest.raises(cuda.CudaError, match="PTX JIT log follows|CUDA_ERROR"):
        cuda.load(ptx.read_bytes().replace(b".entry", b".entryy", 1), HEADER, YAML)


def test_interop_cupy(lib):
    cp = pytest.importorskip("cupy")
    x = cp.arange(10, dtype=cp.float32)
    y = cp.ones(10, dtype=cp.float32)
    lib.axpy[1, 32](2.0, x, y)  # __cuda_array_interface__
    cp.cuda.runtime.deviceSynchronize()
    assert cp.allclose(y, 2 * cp.arange(10) + 1)


def test_interop_torch(lib):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    y = torch.ones(10, device="cuda", dtype=torch.float64)
    lib.scale[1, 32, 0, torch.cuda.current_stream()](3.0, y)  # DLPack / CAI
    torch.cuda.synchronize()
    assert bool((y == 3).all())
