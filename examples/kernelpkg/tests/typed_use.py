"""Checked by mypy --strict against the installed stub kernels.pyi."""

import numpy as np
import numpy.typing as npt
from kernelpkg import kernels

x: npt.NDArray[np.float64] = np.zeros(3)
y: npt.NDArray[np.float64] = np.zeros(3)
kernels.axpy(x, y, 2.0)
s: float = kernels.total(x)
n: int = kernels.count_above(x, 0.5)
