"""What one launch asks of the driver, against the mock driver's counters:
no cuPointerGetAttributes for bindthem's own DeviceArrays, and a CUkernel's
CUfunction resolved once per (kernel, context), not per launch.
"""

import numpy as np
from cuda_support import HEADER, YAML, FakeCAI, launches, module_text

import bindthem.cuda as cuda


def test_own_device_arrays_are_not_queried(lib, clean):
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    y = cuda.to_device(np.ones(8, np.float32))
    before = clean.mock_ptr_queries()
    for _ in range(5):
        lib.axpy[1, 8](1.0, x, y)
    assert clean.mock_ptr_queries() == before
    # a foreign array is still asked about (its device, its context, host or not)
    lib.scale[1, 8](1.0, FakeCAI(y.ptr, (8,), "<f4"))
    assert clean.mock_ptr_queries() == before + 1


def test_function_resolved_once_per_kernel_and_context(mock, clean):
    fresh = cuda.load(module_text(), HEADER, YAML)
    x = cuda.to_device(np.arange(8, dtype=np.float32))
    y = cuda.to_device(np.ones(8, np.float32))
    before = clean.mock_get_functions()
    for _ in range(5):
        fresh.axpy[1, 8](1.0, x, y)
    assert clean.mock_get_functions() == before + 1
    fresh.scale[1, 8](1.0, y)  # another kernel: its own
    assert clean.mock_get_functions() == before + 2
    assert all(launch["function"] == 1 for launch in launches(clean))  # launched as a CUfunction
    np.testing.assert_array_equal(y.copy_to_host(), 1 + 5 * np.arange(8))
