"""C++ exceptions thrown by kernels become Python exceptions (pybind11's
mapping) instead of std::terminate killing the interpreter."""

import os

import numpy as np
import pytest

from sources import KERNELS

import bindthem


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return bindthem.build(os.path.join(KERNELS, "throws.h"), os.path.join(KERNELS, "throws.yml"),
                          cache_dir=str(tmp_path_factory.mktemp("cache")))


@pytest.mark.parametrize("kind, exc, text", [
    (1, RuntimeError, "boom"),
    (2, IndexError, "index 9 out of range"),
    (3, ValueError, "bad argument"),
    (4, OverflowError, "too big"),
    (5, MemoryError, "bad_alloc"),
    (6, RuntimeError, "unknown C++ exception"),
])
@pytest.mark.parametrize("n", [4, 1 << 16])  # keeps the GIL / releases it
def test_exception_becomes_python_error(lib, kind, exc, text, n):
    x = np.zeros(n)
    with pytest.raises(exc) as info:
        lib.thrower(x, kind)
    assert str(info.value).startswith("thrower(): the kernel threw a C++ exception: ")
    assert text in str(info.value)
    assert x[0] == 1.0  # the kernel ran up to its throw


def test_no_exception_returns(lib):
    x = np.zeros(3)
    assert lib.thrower(x, 0) == 7


# --- one exception root: bindthem.errors makes every class, the CUDA ones too ---

NO_DRIVER = """
import pickle
import bindthem
from bindthem import cuda
try:
    cuda.driver()
except bindthem.BindError as e:
    again = pickle.loads(pickle.dumps(e))
    print(type(e).__name__, type(e).__module__, isinstance(e, RuntimeError), e.code,
          type(again) is type(e), again.code == e.code, "libcuda" in str(e))
"""


def test_cuda_errors_share_bindthems_root():
    from bindthem import cuda, errors

    assert cuda.CudaError is errors.CudaError and cuda.NoDriverError is errors.NoDriverError
    assert issubclass(cuda.CudaError, bindthem.BindError)
    assert issubclass(cuda.CudaError, RuntimeError)  # as before it had the root
    assert issubclass(cuda.NoDriverError, cuda.CudaError)
    assert cuda.CudaError("x").code is None
    assert {"CudaError", "NoDriverError"} <= set(errors.__all__)


def test_a_cuda_error_raised_by_the_core_is_caught_as_a_bind_error(tmp_path):
    import subprocess
    import sys

    from support import python_env

    # no driver: the core raises NoDriverError, a class errors.py made
    env = python_env(BINDTHEM_LIBCUDA=str(tmp_path / "no-libcuda.so.1"))
    r = subprocess.run([sys.executable, "-c", NO_DRIVER], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["NoDriverError", "bindthem.errors", "True", "None", "True",
                                "True", "True"], r.stdout
