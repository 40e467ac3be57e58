"""C++ exceptions thrown by kernels become Python exceptions (pybind11's
mapping) instead of std::terminate killing the interpreter."""

import os

import numpy as np
import pytest

import bindthem

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "data", "kernels")


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
