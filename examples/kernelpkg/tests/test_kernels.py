"""kernelpkg's own tests: run against the installed package."""

import numpy as np
from kernelpkg import kernels


def test_axpy_every_type():
    for dtype in (np.float64, np.float32, np.int32):
        x = np.arange(5, dtype=dtype)
        y = np.ones(5, dtype=dtype)
        kernels.axpy(x, y, dtype(3))
        assert y.tolist() == (1 + 3 * np.arange(5)).tolist()


def test_total_and_count():
    x = np.array([0.5, 1.5, 2.5])
    assert kernels.total(x) == 4.5
    assert kernels.total(np.arange(10, dtype=np.int32)) == 45
    assert kernels.count_above(x, 1.0) == 2
