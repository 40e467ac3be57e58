"""CUDA graphs and stream capture on a real GPU: bindthem's Stream.capture()
replaying real kernels (gpu_kernels.cuh, built into $BINDTHEM_GPU_BUILD by
tests/cuda/gpu/run_gpu_check.sh), and bindthem launches under CuPy's and
PyTorch's graph capture when those are installed. Marked `gpu`; skipped, as
test_gpu.py is, without that build or a device."""

import json

import numpy as np
import pytest
from test_gpu import HAVE_DEVICE, MANIFEST, pytestmark  # noqa: F401  (the same marks)

import bindthem.cuda as cuda


@pytest.fixture(scope="module", name="lib")
def lib_fixture():
    with open(MANIFEST) as f:
        man = json.load(f)
    return cuda.load(man["module"], man["header"], man["instantiate"])


def test_capture_and_replay_real_kernels(lib):
    s = cuda.Stream.create(non_blocking=True)
    n = 1 << 16
    x0 = np.random.default_rng(0).random(n, dtype=np.float32)
    x = cuda.to_device(x0)
    y = cuda.to_device(np.ones(n, np.float32))
    with s.capture() as g:
        lib.axpy[(n + 255) // 256, 256, 0, s](2.0, x, y)
        lib.axpy[(n + 255) // 256, 256, 0, s](-1.0, x, y)
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(n))  # nothing ran
    for _ in range(5):
        g.launch(s)
    np.testing.assert_allclose(y.copy_to_host(), 1 + 5 * x0, rtol=1e-5)
    g.close()
    g.close()


def test_capture_on_the_per_thread_stream_with_copies(lib):
    n = 1024
    host = np.arange(n, dtype=np.int32)
    with cuda.PER_THREAD.capture() as g:
        y = cuda.zeros(n, np.int32, stream=cuda.PER_THREAD)
        t = cuda.to_device(host, stream=cuda.PER_THREAD)
        lib.add_value[(n + 255) // 256, 256, 0, cuda.PER_THREAD](y, 3)
        lib.add_value[(n + 255) // 256, 256, 0, cuda.PER_THREAD](t, 1)
    g.launch(cuda.PER_THREAD)
    g.launch(cuda.PER_THREAD)
    np.testing.assert_array_equal(y.copy_to_host(), np.full(n, 3))  # zeroed at each replay
    np.testing.assert_array_equal(t.copy_to_host(), host + 1)


def test_synchronous_call_in_a_capture_raises(lib):
    s = cuda.Stream.create()
    y = cuda.to_device(np.zeros(8, np.int32))
    with pytest.raises(cuda.CudaError) as ei:
        with s.capture():
            lib.add_value[1, 8, 0, s](y, 1)
            s.synchronize()
    assert ei.value.code in (900, 901, 906)
    lib.add_value[1, 8, 0, s](y, 1)  # the stream works after
    np.testing.assert_array_equal(y.copy_to_host(), np.ones(8))


def test_launch_under_cupy_graph_capture(lib):
    cp = pytest.importorskip("cupy")
    n = 1024
    x = cp.arange(n, dtype=cp.float32)
    y = cp.ones(n, dtype=cp.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        lib.axpy[(n + 255) // 256, 256, 0, stream](2.0, x, y)
        graph = stream.end_capture()
    for _ in range(3):
        graph.launch(stream)
    stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(y), 1 + 3 * 2 * np.arange(n, dtype=np.float32))


def test_launch_under_torch_graph_capture(lib):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    n = 1024
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    y = torch.ones(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        lib.axpy[(n + 255) // 256, 256, 0, torch.cuda.current_stream()](2.0, x, y)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    np.testing.assert_allclose(y.cpu().numpy(), 1 + 3 * 2 * np.arange(n, dtype=np.float32))
