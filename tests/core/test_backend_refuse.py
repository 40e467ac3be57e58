"""The binder names no back end: each back end's BtBackend.refuse sees the
overload. The CPU's refuses an overload of a CUDA-only type (not
deliberate: the header may be meant for both), CUDA's a declaration that
is not a __global__ kernel (deliberate); both show in left_out with why."""

import warnings

import pytest

import bindthem

CPU_H = """/* Twice x. */
extern "C" float twice(float x) { return 2 * x; }
/* Not for a CPU: __half has no C equivalent. */
extern "C" __half htwice(__half x);
"""


def left_out(lib):
    return {x["name"]: (x["reason"], x["deliberate"]) for x in bindthem.info(lib).left_out}


def test_cpu_refuses_a_cuda_only_overload(tmp_path):
    h = tmp_path / "twice.h"
    h.write_text(CPU_H.replace("extern \"C\" __half htwice(__half x);\n", ""))
    so = bindthem.build(str(h), cache_dir=str(tmp_path / "cache")).__file__
    h.write_text(CPU_H.replace("{ return 2 * x; }", ";"))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lib = bindthem.load(so, str(h))
    assert lib.twice(1.5) == 3.0
    reason, deliberate = left_out(lib)["htwice"]
    assert reason.startswith("a function of a CUDA-only type (__half and __nv_bfloat16")
    assert deliberate is False
    with pytest.raises(AttributeError, match="htwice.*CUDA-only type"):
        lib.htwice


def test_cuda_refuses_a_host_function(tmp_path, mock):
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("__global__ void fill(float y[], int y_size);\nfloat host(float x);\n")
    (ov,) = bindthem.parse_header(str(h))["functions"][0]["overloads"]
    text = "bindthem-mock-module\nkernel %s 8 4\n" % ov["symbol"]
    lib = cuda.load(text.encode(), str(h))
    assert "fill" in lib.__all__ and "host" not in lib.__all__
    reason, deliberate = left_out(lib)["host"]
    assert reason.startswith("not a __global__ kernel")
    assert deliberate is True
