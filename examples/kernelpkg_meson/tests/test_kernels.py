"""mesonkernels' own tests: run against the installed package."""

import numpy as np
from mesonkernels import kernels


def test_scale_each_type():
    for dtype in (np.float64, np.float32):
        x = np.arange(5, dtype=dtype)
        kernels.scale(x, dtype(2.5))
        assert x.tolist() == (2.5 * np.arange(5)).tolist()


def test_dot_on_every_thread():
    x = np.arange(100000, dtype=np.float64)
    assert kernels.dot(x, x) == float(np.dot(x, x))
    assert kernels.dot(np.ones(3, np.float32), np.ones(2, np.float32)) == 2.0


def test_argmax():
    assert kernels.argmax(np.array([1.0, 7.0, 7.0, -2.0])) == 1
    assert kernels.argmax(np.zeros(0)) == -1
