"""The one argument store walk (bt_slot_walk) holds its invariants for every
back end: the direct call, the libffi frame, aligned temporaries and a CUDA
launch (against the mock driver, tests/cuda/mock/mock_cuda.c).

- Each value reaches its C parameter, whatever the interleaving of scalars,
  arrays and size parameters (the walk stores in its own order, the back
  end's writer puts each value where its parameter is).
- Scalars are converted before any array is checked: a conversion is
  Python code (__float__), and what it does to an array is what the checks
  and the kernel see; a scalar that does not convert wins over a misfit
  array, on every back end.
"""

import json
import struct

import numpy as np
import pytest

import bindthem
from bindthem import _core

# scalars and arrays interleaved, a size parameter after each array
MIX_H = """/* Records what it got: a, x_size, b, y_size, c, x[0], y[0]; y[0] = -1. */
extern "C" void mix(double a, const double x[], int x_size, long b, double y[], int y_size,
                    double c, double out[], int out_size)
{
    out[0] = a; out[1] = x_size; out[2] = (double)b; out[3] = y_size; out[4] = c;
    out[5] = x[0]; out[6] = y[0]; y[0] = -1;
}
"""

MIX_CUH = """/* Scalars, arrays and sizes interleaved. */
__global__ void mix(float a, const float x[], int x_size, long b, float y[], int y_size,
                    double c);
"""

SIZES = {"float": 4, "double": 8, "int": 4, "long": 8}


class Sneaky(int):
    """An int whose float conversion runs Python code: it makes `victim`
    read-only, as a resize or setflags from such code could."""

    def __new__(cls, value, victim):
        self = super().__new__(cls, value)
        self.victim = victim
        return self

    def __float__(self):
        self.victim.setflags(write=False)
        return float(int(self))


def unaligned(n):
    """A C-contiguous float64 array whose address is not 8-byte aligned."""
    buf = np.zeros(8 * n + 8, dtype=np.uint8)
    off = 1 if buf.ctypes.data % 8 == 0 else 0
    a = buf[off:off + 8 * n].view(np.float64)
    assert not a.flags.aligned and a.flags.c_contiguous
    return a


@pytest.fixture(scope="module")
def mix(tmp_path_factory):
    d = tmp_path_factory.mktemp("arg_order")
    h = d / "mix.h"
    h.write_text(MIX_H)
    return bindthem.build(str(h), cache_dir=str(d / "cache")).mix


@pytest.fixture(params=["direct", "ffi"])
def path(request):
    before = _core.force_ffi(request.param == "ffi")
    yield request.param
    _core.force_ffi(before)


@pytest.mark.parametrize("temps", [False, True], ids=["aligned", "temporary"])
def test_cpu_values_reach_their_parameters(mix, path, temps):
    x = np.array([5.5, 0, 0])
    y = unaligned(2) if temps else np.zeros(2)
    y[:] = [6.5, 1.0]
    out = np.zeros(7)
    stats = mix.stats if temps else None
    mix(1.25, x, 3, y, -2.5, out)
    assert out.tolist() == [1.25, 3, 3, 2, -2.5, 5.5, 6.5]
    assert y.tolist() == [-1, 1.0]  # the kernel's write reached the caller's array
    if temps:  # y went through an aligned temporary, and came back
        assert mix.stats["aligned_copies"] == stats["aligned_copies"] + 1
        assert mix.stats["copy_backs"] == stats["copy_backs"] + 1


def test_cpu_defaults_and_big_values(mix, path):
    x = np.array([0.0])
    y = np.zeros(1)
    out = np.zeros(7)
    mix(-0.0, x, -(2 ** 62), y, 1e300, out)
    assert out[2] == float(-(2 ** 62)) and out[4] == 1e300 and np.signbit(out[0])


@pytest.mark.parametrize("temps", [False, True], ids=["aligned", "temporary"])
def test_cpu_scalar_conversion_before_array_checks(mix, path, temps):
    """The scalar after every array (c) makes an earlier array (out) read-only
    while it converts: the call refuses out, and the kernel never runs."""
    x = np.array([1.0])
    y = unaligned(1) if temps else np.zeros(1)
    out = np.zeros(7)
    with pytest.raises(ValueError, match=r"mix\(\): argument 'out' is a read-only array"):
        mix(1.0, x, 2, y, Sneaky(3, out), out)
    assert not out.any() and y[0] == 0
    out.setflags(write=True)
    mix(1.0, x, 2, y, Sneaky(3, out), np.zeros(7))


def test_cpu_scalar_error_wins_over_array_misfit(mix, path):
    strided = np.zeros(4)[::2]
    with pytest.raises(OverflowError, match=r"mix\(\): argument 'b' = .* does not fit in long"):
        mix(1.0, strided, 2 ** 70, np.zeros(1), 1.0, np.zeros(7))


# ---- CUDA: the launch's parameter buffer ----

@pytest.fixture(scope="module")
def kmix(mock, tmp_path_factory):
    import bindthem.cuda as cuda
    h = tmp_path_factory.mktemp("arg_order_cuda") / "mix.cuh"
    h.write_text(MIX_CUH)
    (ov,) = bindthem.parse_header(str(h))["functions"][0]["overloads"]
    sizes = [8 if p["array"] else SIZES[p["type"]] for p in ov["params"]]
    text = "bindthem-mock-module\nkernel %s %s\n" % (ov["symbol"], " ".join(map(str, sizes)))
    return cuda.load(text.encode(), str(h)).mix


class StridedCAI:
    """Every other float32 of mock device memory at ptr: not C-contiguous."""

    def __init__(self, ptr):
        self.__cuda_array_interface__ = {
            "shape": (4,), "typestr": "<f4", "data": (ptr, False), "version": 3,
            "strides": (8,), "stream": None}


def last_params(mock):
    rec = json.loads(mock.mock_launch_log().decode().splitlines()[-1])
    return [bytes.fromhex(p) for p in rec["params"]]


def test_cuda_values_reach_their_parameters(mock, kmix):
    import bindthem.cuda as cuda
    x = cuda.to_device(np.arange(3, dtype=np.float32))
    y = cuda.to_device(np.zeros((2, 5), dtype=np.float32))
    kmix[1, 1](1.5, x, -(2 ** 40), y, 0.25)
    a, xp, xs, b, yp, ys, c = last_params(mock)
    assert struct.unpack("<f", a) == (1.5,)
    assert struct.unpack("<Q", xp) == (x.ptr,) and struct.unpack("<i", xs) == (3,)
    assert struct.unpack("<q", b) == (-(2 ** 40),)
    assert struct.unpack("<Q", yp) == (y.ptr,) and struct.unpack("<i", ys) == (2,)
    assert struct.unpack("<d", c) == (0.25,)


def test_cuda_scalar_error_wins_over_array_misfit(mock, kmix):
    """Scalars are stored first on a launch too: the later scalar's overflow
    is what a launch with a strided array before it reports."""
    import bindthem.cuda as cuda
    base = cuda.to_device(np.zeros(8, dtype=np.float32))
    strided = StridedCAI(base.ptr)
    with pytest.raises(OverflowError, match=r"mix\(\): argument 'b' = .* does not fit in long"):
        kmix[1, 1](1.0, strided, 2 ** 70, cuda.to_device(np.zeros(1, np.float32)), 1.0)
    with pytest.raises(ValueError, match=r"mix\(\): argument 'x' must be a C-contiguous array"):
        kmix[1, 1](1.0, strided, 1, cuda.to_device(np.zeros(1, np.float32)), 1.0)
