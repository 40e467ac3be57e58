"""Launch attributes through cuLaunchKernelEx (clusters, cooperative, priority),
kernel attributes and occupancy queries, and a launch path fit for stream
capture, against the mock driver (tests/cuda/mock)."""

import json

import numpy as np
import pytest
from cuda_support import PRELUDE, last_launch, launches, run_py

import bindthem.cuda as cuda


def ex_log(mock):
    return [json.loads(line) for line in mock.mock_ex_log().decode().splitlines()]


def mem_log(mock):
    return [json.loads(line) for line in mock.mock_mem_log().decode().splitlines()]


def arrays():
    return (cuda.to_device(np.arange(64, dtype=np.float32)),
            cuda.to_device(np.ones(64, dtype=np.float32)))


def test_plain_launch_keeps_cuLaunchKernel(lib, clean):
    x, y = arrays()
    lib.axpy[2, 32](2.0, x, y)
    assert ex_log(clean) == []
    assert len(launches(clean)) == 1


def test_cluster_goes_through_cuLaunchKernelEx(lib, clean):
    x, y = arrays()
    lib.axpy[(4, 2), 16](2.0, x, y, cluster=(2, 2))
    (rec,) = ex_log(clean)
    assert rec["has_cluster"] == 1 and rec["cluster"] == [2, 2, 1]
    assert rec["cooperative"] == 0 and rec["n_attrs"] == 1
    launch = last_launch(clean)  # the same launch, parameters and all
    assert launch["grid"] == [4, 2, 1] and launch["block"] == [16, 1, 1]
    np.testing.assert_array_equal(y.copy_to_host()[:5], [1, 3, 5, 7, 9])


def test_cooperative_and_priority(lib, clean):
    x, y = arrays()
    lib.axpy(2.0, x, y, grid=2, block=32, cooperative=True, priority=-1)
    (rec,) = ex_log(clean)
    got = (rec["has_cluster"], rec["cooperative"], rec["priority"], rec["n_attrs"])
    assert got == (0, 1, -1, 2)
    clean.mock_clear_logs()
    lib.axpy[2, 32](2.0, x, y, cooperative=False, cluster=None, priority=None)
    assert ex_log(clean) == []  # nothing asked: the plain launch


def test_cluster_must_divide_the_grid(lib, clean):
    x, y = arrays()
    with pytest.raises(ValueError, match=r"cluster=2 does not divide grid=\(3, 1, 1\)"):
        lib.axpy[3, 32](2.0, x, y, cluster=2)
    with pytest.raises(ValueError, match="every dimension must be at least 1"):
        lib.axpy[4, 32](2.0, x, y, cluster=0)
    assert launches(clean) == []


@pytest.mark.parametrize("kw, msg", [
    ({"cooperative": 1}, "cooperative must be True or False, not int"),
    ({"priority": 1.5}, "priority must be an int, not float"),
    ({"priority": 2**40}, "out of range"),
])
def test_attribute_types_refused(lib, clean, kw, msg):
    x, y = arrays()
    with pytest.raises(ValueError, match=msg):
        lib.axpy[2, 32](2.0, x, y, **kw)
    assert launches(clean) == []


def test_cooperative_grid_too_large_says_the_limit(lib, clean):
    x, y = arrays()
    per_sm = lib.axpy.max_active_blocks_per_sm(1024, overload=0)
    with pytest.raises(cuda.CudaError,
                       match="max_active_blocks_per_sm.*COOPERATIVE_LAUNCH_TOO_LARGE"):
        lib.axpy[per_sm * 132 + 1, 1024](2.0, x, y, cooperative=True)
    lib.axpy[per_sm * 132, 1024](2.0, x, y, cooperative=True)  # exactly fits


def test_cluster_on_a_pre_hopper_device_is_the_drivers_error(mock_path):
    rc, out = run_py(PRELUDE + """
        lib = cuda.load(module_text(), HEADER, YAML)
        x = cuda.to_device(np.zeros(8, np.float32)); y = cuda.to_device(np.zeros(8, np.float32))
        try:
            lib.axpy[2, 8](1.0, x, y, cluster=2)
        except cuda.CudaError as e:
            print("ERR", e)
        lib.axpy[2, 8](1.0, x, y)
        print("plain ok")
        """, mock_path, MOCK_CUDA_CC=80)
    assert rc == 0, out
    assert "cuLaunchKernelEx(grid=(2, 1, 1)" in out and "cluster=(2, 1, 1)" in out, out
    assert "CUDA_ERROR_NOT_SUPPORTED" in out, out
    assert "plain ok" in out


def test_attributes_need_a_116_driver(mock_path):
    rc, out = run_py(PRELUDE + """
        lib = cuda.load(module_text(), HEADER, YAML)
        x = cuda.to_device(np.zeros(8, np.float32)); y = cuda.to_device(np.zeros(8, np.float32))
        lib.axpy[1, 8](1.0, x, y)
        try:
            lib.axpy[1, 8](1.0, x, y, priority=0)
        except cuda.CudaError as e:
            print("ERR", e)
        """, mock_path, MOCK_CUDA_NOT_FOUND="cuLaunchKernelEx")
    assert rc == 0, out
    assert "ERR" in out and "needs a CUDA 11.6 or newer driver" in out, out


def test_kernel_attributes(lib, clean):
    a = lib.axpy.attributes(0)
    assert a == {"max_threads_per_block": 1024, "shared_size_bytes": 0, "const_size_bytes": 0,
                 "local_size_bytes": 0, "num_regs": 32, "ptx_version": 90, "binary_version": 90,
                 "max_dynamic_shared_size_bytes": 48 * 1024}
    sig = lib.axpy.overloads[1]
    assert lib.axpy.attributes(sig) == lib.axpy.attributes(1)
    assert lib.fill_i.attributes()["num_regs"] == 32  # one overload: no need to name it


@pytest.mark.parametrize("ov, exc, msg", [
    (None, TypeError, "has 2 overloads; name one with overload="),
    (5, IndexError, "overload=5 is out of range"),
    ("void axpy<int>()", ValueError, "is not one of"),
])
def test_overload_choice_errors(lib, ov, exc, msg):
    with pytest.raises(exc, match=msg):
        lib.axpy.attributes(ov)


def test_occupancy(lib, clean):
    assert lib.fill_i.max_active_blocks_per_sm(256) == 8
    assert lib.fill_i.max_active_blocks_per_sm((16, 16)) == 8  # a block shape counts its threads
    assert lib.fill_i.max_active_blocks_per_sm(64, shared_mem=100_000) == 2
    assert lib.fill_i.max_potential_block_size() == (2 * 132, 1024)
    assert lib.fill_i.max_potential_block_size(block_size_limit=256) == (8 * 132, 256)
    with pytest.raises(ValueError, match=r"block=\(64, 32\) has 2048 threads"):
        lib.fill_i.max_active_blocks_per_sm((64, 32))
    with pytest.raises(ValueError, match="block_size_limit=2000"):
        lib.fill_i.max_potential_block_size(block_size_limit=2000)
    assert launches(clean) == []


def test_launch_path_is_capture_safe(lib, clean):
    """What stream capture forbids (a synchronize, an allocation or free, work
    on another stream) never happens in a launch whose arrays were last
    written on its own stream: only the launch reaches that stream."""
    s = cuda.Stream.create(non_blocking=True)
    x = cuda.to_device(np.arange(64, dtype=np.float32), stream=s)
    y = cuda.zeros(64, np.float32, stream=s)
    clean.mock_clear_logs()
    lib.axpy[2, 32, 0, s](2.0, x, y)
    lib.axpy[(2, 1), 32](2.0, x, y, stream=s, cluster=2)
    assert clean.mock_sync_log().decode() == ""
    assert mem_log(clean) == []
    assert [r["stream"] for r in launches(clean)] == [s.handle, s.handle]
    assert clean.mock_pending() > 0  # queued, not run: nothing waited
    s.synchronize()
    np.testing.assert_array_equal(y.copy_to_host()[:3], [0, 4, 8])
