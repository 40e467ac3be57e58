"""Module globals (cuLibraryGetGlobal / cuModuleGetGlobal): a __constant__ or
__device__ variable read and written from Python as a DeviceArray view,
against the mock driver (tests/cuda/mock)."""

import ctypes
import gc

import numpy as np
import pytest
from cuda_support import HEADER, PRELUDE, YAML, module_text, run_py

import bindthem
import bindthem.cuda as cuda

EXTRA = ("global coef 16", "global counter 8")


@pytest.fixture(scope="module", name="glib")
def glib_fixture(mock):
    return cuda.load(module_text(extra=EXTRA), HEADER, YAML)


def test_write_then_read_a_constant(glib, clean):
    coef = cuda.get_global(glib, "coef", np.float32)
    assert coef.shape == (4,) and coef.dtype == np.float32 and coef.nbytes == 16
    assert coef.base is bindthem.info(glib).handle
    np.testing.assert_array_equal(coef.copy_to_host(), [0, 0, 0, 0])  # zeroed, as a module's are
    assert coef.copy_from(np.array([1.5, 2, 3, 4], np.float32)) is coef
    # the bytes landed in the module's own variable (mock device memory is host memory)
    raw = ctypes.string_at(coef.ptr, 16)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), [1.5, 2, 3, 4])
    again = cuda.get_global(glib, "coef", "f4")
    assert again.ptr == coef.ptr
    np.testing.assert_array_equal(again.copy_to_host(), [1.5, 2, 3, 4])


def test_default_dtype_is_bytes(glib, clean):
    raw = cuda.get_global(glib, "counter")
    assert raw.dtype == np.uint8 and raw.shape == (8,)
    assert cuda.get_global(glib, "counter", np.int64).shape == (1,)


def test_errors(glib, clean):
    with pytest.raises(KeyError, match="no __device__ or __constant__ variable named .*nope"):
        cuda.get_global(glib, "nope", np.float32)
    with pytest.raises(ValueError,
                       match=r"16 bytes are not a whole number of \(.<f8., \(3,\)\) elements"
                       ) as e:
        cuda.get_global(glib, "coef", np.dtype((np.float64, 3)))
    del e
    with pytest.raises(TypeError, match="object dtypes"):
        cuda.get_global(glib, "coef", object)
    coef = cuda.get_global(glib, "coef", np.float32)
    with pytest.raises(ValueError, match=r"the source has shape \(3,\), this device array \(4,\)"):
        coef.copy_from(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="Cannot cast"):  # float64 -> float32 loses: refused
        coef.copy_from(np.zeros(4, np.float64))
    with pytest.raises(cuda.CudaError, match=r"there is no CUDA device 3 \(1 device\)"):
        cuda.get_global(glib, "coef", np.float32, device=3)


def test_view_keeps_the_module_and_frees_nothing(clean):
    lib = cuda.load(module_text(extra=EXTRA), HEADER, YAML)
    g = cuda.get_global(lib, "coef", np.float32)
    g.copy_from(np.arange(4, dtype=np.float32))
    gc.collect()
    live = clean.mock_live_allocs()
    del lib
    gc.collect()
    np.testing.assert_array_equal(g.copy_to_host(), [0, 1, 2, 3])  # module still loaded
    del g
    gc.collect()
    assert clean.mock_live_allocs() == live  # a view frees nothing
    assert "cuMemFree" not in clean.mock_mem_log().decode()


def test_module_api_before_12(mock_path):
    rc, out = run_py(PRELUDE + """
        lib = cuda.load(module_text(extra=("global coef 16",)), HEADER, YAML)
        print("library_api", cuda.driver()["library_api"])
        g = cuda.get_global(lib, "coef", np.int32)
        g.copy_from(np.array([7, 8, 9, 10], np.int32))
        print(g.copy_to_host().tolist(), g.device)
        """, mock_path, MOCK_CUDA_VERSION=11080)
    assert rc == 0, out
    assert "library_api False" in out and "[7, 8, 9, 10] 0" in out, out
