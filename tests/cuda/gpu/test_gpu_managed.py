"""Managed memory and peer access on a real GPU (tests/cuda/gpu/run_gpu_check.sh
builds gpu_kernels.cuh into $BINDTHEM_GPU_BUILD first): managed arrays
written by a kernel and read on the host, prefetch and advice accepted by the
driver, and, with two GPUs, peer access, a launch taking the other device's
array and a copy between devices. Marked `gpu`; skipped, as test_gpu.py is,
without that build or a device (the two-device cases without a second GPU)."""

import json

import numpy as np
import pytest
from test_gpu import HAVE_DEVICE, MANIFEST, pytestmark  # noqa: F401  (the same marks)

import bindthem.cuda as cuda


@pytest.fixture(scope="module", name="glib")
def glib_fixture():
    with open(MANIFEST) as f:
        man = json.load(f)
    return cuda.load(man["module"], man["header"], man["instantiate"])


def _managed_or_skip():
    a = None
    try:
        a = cuda.managed_zeros(4, np.float32)
    except cuda.CudaError as e:
        pytest.skip("no managed memory: %s" % e)
    return a


def _two_gpus():
    if cuda.device_count() < 2:
        pytest.skip("needs two GPUs")


def test_managed_written_by_a_kernel_read_on_the_host(glib):
    _managed_or_skip()
    n = 1 << 20
    x = cuda.to_device(np.arange(n, dtype=np.float32))
    y = cuda.managed_zeros(n, np.float32)
    s = cuda.Stream.create(non_blocking=True)
    glib.scale_copy[(n + 255) // 256, 256, 0, s](3.0, x, y)
    v = y.host_view()  # waits for the kernel on s
    np.testing.assert_array_equal(v, 3 * np.arange(n, dtype=np.float32))
    v[:] = 1  # the host writes, a kernel reads
    glib.axpy[(n + 255) // 256, 256](2.0, x, y)
    np.testing.assert_array_equal(np.asarray(y), 2 * np.arange(n, dtype=np.float32) + 1)


def test_prefetch_and_advise_accepted(glib):
    a = _managed_or_skip()
    a.advise("read_mostly")
    a.advise("unset_read_mostly")
    a.advise(cuda.MemAdvise.PREFERRED_LOCATION, 0)
    a.advise("accessed_by", 0)
    a.advise("unset_preferred_location")
    s = cuda.Stream.create(non_blocking=True)
    try:
        a.prefetch(0, stream=s)
    except ValueError as e:  # no concurrent managed access (Windows, older GPUs)
        assert "concurrent managed access" in str(e)
    a.prefetch("host", stream=s)
    assert a.host_view().tolist() == [0, 0, 0, 0]


def test_peer_launch_and_copy(glib):
    _two_gpus()
    n = 4096
    x1 = cuda.to_device(np.arange(n, dtype=np.float32), device=1)
    y0 = cuda.to_device(np.ones(n, np.float32), device=0)
    d1 = cuda.empty(n, np.float32, device=1)
    d1.copy_from(y0)  # no peer access needed
    np.testing.assert_array_equal(d1.copy_to_host(), np.ones(n))
    if not cuda.can_access_peer(1, 0):
        with pytest.raises(ValueError, match="enable_peer_access"):
            glib.axpy[n // 256, 256](2.0, x1, y0)
        pytest.skip("device 1 cannot access device 0's memory")
    cuda.enable_peer_access(0, device=1)
    cuda.enable_peer_access(0, device=1)  # idempotent
    s1 = cuda.Stream.create(device=1, non_blocking=True)
    glib.axpy[n // 256, 256, 0, s1](2.0, x1, y0)  # on device 1, writes device 0's y0
    np.testing.assert_array_equal(y0.copy_to_host(), 2 * np.arange(n, dtype=np.float32) + 1)
    d1.copy_from(y0, stream=s1)
    np.testing.assert_array_equal(d1.copy_to_host(stream=s1), y0.copy_to_host())
