"""Launch attributes, occupancy, module globals, stream-ordered allocation and
device-to-device copies on a real GPU (tests/cuda/gpu/run_gpu_check.sh builds
gpu_features.cuh into $BINDTHEM_GPU_BUILD first). Marked `gpu`; skipped, as
test_gpu.py is, without that build or a device."""

import json
import os

import numpy as np
import pytest
from test_gpu import HAVE_DEVICE, MANIFEST, pytestmark  # noqa: F401  (the same marks)

import bindthem.cuda as cuda

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module", name="flib")
def flib_fixture():
    with open(MANIFEST) as f:
        man = json.load(f)
    return cuda.load(man["features"], os.path.join(HERE, "gpu_features.cuh"),
                     os.path.join(HERE, "gpu_features.yml"))


def _cc():
    import ctypes
    lib = ctypes.CDLL(cuda.driver()["path"])
    v = ctypes.c_int()
    assert lib.cuDeviceGetAttribute(ctypes.byref(v), 75, 0) == 0  # COMPUTE_CAPABILITY_MAJOR
    return v.value


def test_constant_written_from_python(flib):
    coef = cuda.get_global(flib, "coef", np.float32)
    coef.copy_from(np.array([1.5, -2, 3, 4], np.float32))
    out = cuda.zeros(10, np.float32)
    flib.use_coef[1, 32](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.tile([1.5, -2, 3, 4], 3)[:10])
    np.testing.assert_array_equal(coef.copy_to_host(), [1.5, -2, 3, 4])


def test_cluster_launch(flib):
    out = cuda.zeros(8, np.uint32)
    if _cc() < 9:
        with pytest.raises(cuda.CudaError, match="cuLaunchKernelEx"):
            flib.cluster_rank[8, 32](out, cluster=2)
        return
    flib.cluster_rank[8, 32](out, cluster=2)
    np.testing.assert_array_equal(out.copy_to_host(), [0, 1] * 4)
    flib.cluster_rank[8, 32](out, cluster=4)
    np.testing.assert_array_equal(out.copy_to_host(), [0, 1, 2, 3] * 2)


def test_cooperative_grid_sync(flib):
    counter = cuda.get_global(flib, "counter", np.int32)
    per_sm = flib.grid_count.max_active_blocks_per_sm(128)
    assert per_sm >= 1
    blocks = min(per_sm * 2, 64)
    counter.copy_from(np.zeros(1, np.int32))
    out = cuda.zeros(blocks, np.int32)
    flib.grid_count[blocks, 128](out, cooperative=True)
    np.testing.assert_array_equal(out.copy_to_host(), [blocks] * blocks)  # all after the sync


def test_attributes_and_occupancy(flib):
    a = flib.use_coef.attributes()
    assert 1 <= a["num_regs"] <= 255 and a["max_threads_per_block"] >= 256
    grid, block = flib.use_coef.max_potential_block_size()
    assert grid >= 1 and 32 <= block <= 1024


def test_async_alloc_and_d2d_copy():
    s = cuda.Stream.create(non_blocking=True)
    host = np.arange(1 << 20, dtype=np.float32)
    for _ in range(3):  # allocations reused from the pool, stream-ordered
        a = cuda.to_device(host, stream=s)
        b = cuda.empty(host.shape, np.float32, stream=s)
        b.copy_from(a, stream=s)
        c = b.copy()
        np.testing.assert_array_equal(c.copy_to_host(), host)
        del a, b, c
