"""Launching kernels (csrc/cuda/bt_cudapy_kernel.c) against the mock driver:
dispatch by dtype, size parameters, scalars, keywords, grid and block,
streams, the launch API and its errors, shared memory, kernels that behave
like CPU Functions, __half, static kernels, __nv_bfloat16."""

import copy
import json
import pickle
import struct
import threading

import numpy as np
import pytest
from cuda_support import (
    HALF_HEADER,
    HALF_YAML,
    NVCC,
    PRELUDE,
    FakeCAI,
    FakeDLPack,
    elf_function_symbols,
    last_launch,
    launches,
    module_text,
    needs_nvcc,
    run_py,
)

import bindthem
import bindthem.cuda as cuda

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


# ---- the launch API: configuration, launch errors, shared memory ----

def attr_sets(mock):
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
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'shared'; the keywords it "
                                        r"takes are 'a', 'x', 'y', 'grid', 'block', 'shared_mem', "
                                        r"'stream', 'cluster', 'cooperative', 'priority' \("):
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
    assert str(sig) == ("(a, x, y, *, grid, block, shared_mem=0, stream=None, cluster=None, "
                        "cooperative=False, priority=None)")
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
    assert lib.axpy.__dask_tokenize__() == bindthem.info(lib)._token("axpy")
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


def test_shared_memory_opt_in_on_modules(mock_path):
    # drivers before 12.0: CUfunctions, so cuFuncSetAttribute (the mock
    # refuses it for a CUkernel)
    rc, out = run_py(PRELUDE + """
        from cuda_support import mock_handle
        m = mock_handle(%r)
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
