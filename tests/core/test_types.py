"""The dtype table (csrc/core/bt_types.c) against NumPy: every row's NumPy
number, kind, size, CUDA-array-interface typestr, DLPack code and Python
scalar type. A new row is checked here without a new test; its calls are
tests/core/test_call.py's, its mangling tests/core/test_mangle.py's."""

import ctypes

import numpy as np
import pytest

import bindthem
from bindthem import _core

ROWS = [t for t in _core.scalar_types() if t["c"] != "void"]


def test_void_row():
    (void,) = [t for t in _core.scalar_types() if t["c"] == "void"]
    assert (void["python"], void["kind"], void["size"], void["npy_type"]) == ("None", "v", 0, -1)


def _dtype(row):
    """The row's NumPy dtype; a user type (npy_type -1: bfloat16) through
    ml_dtypes, skipping without it."""
    if row["npy_type"] >= 0:
        return np.dtype(row["numpy"])
    ml_dtypes = pytest.importorskip("ml_dtypes")
    return np.dtype(getattr(ml_dtypes, row["numpy"]))


@pytest.mark.parametrize("row", ROWS, ids=[t["c"] for t in ROWS])
def test_row_matches_numpy(row):
    dt = _dtype(row)
    if row["npy_type"] >= 0:
        assert dt.num == row["npy_type"]
        assert (dt.kind, dt.itemsize) == (row["kind"], row["size"])
    else:  # NumPy numbers it at run time, kind 'V'; bindthem converts it as a float
        assert dt.num >= 256 and (dt.kind, row["kind"], dt.itemsize) == ("V", "f", row["size"])
    assert dt.newbyteorder("<").str == row["typestr"]
    # what a NumPy scalar of the dtype becomes in Python is the stub's type of a
    # returned one (NumPy's longdouble stays a numpy.longdouble: its precision)
    tp = type(dt.type(1).item())
    assert (tp.__name__ if tp.__module__ == "builtins" else "numpy." + tp.__name__
            ) == row["python_return"]


def _dlpack_dtype(array):
    """(code, bits, lanes) of the DLTensor that array.__dlpack__() exports."""
    cap = array.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    p = get(cap, b"dltensor")
    # DLTensor: void *data; DLDevice device (2 x int32); int32 ndim; DLDataType dtype
    raw = ctypes.string_at(p + 20, 4)
    return raw[0], raw[1], int.from_bytes(raw[2:4], "little")


@pytest.mark.parametrize("row", ROWS, ids=[t["c"] for t in ROWS])
def test_row_dlpack_code(row):
    try:
        got = _dlpack_dtype(np.zeros(2, _dtype(row)))
    except (BufferError, TypeError) as e:  # NumPy versions without DLPack for this dtype
        pytest.skip(str(e))
    assert got == (row["dlpack"], row["size"] * 8, 1)


def test_stub_names_come_from_the_table(tmp_path):
    header = tmp_path / "k.h"
    header.write_text("".join("void f%d(%s x);\n" % (i, t["c"]) for i, t in enumerate(ROWS)))
    meta = bindthem.parse_header(str(header))
    by_c = {t["c"]: t for t in ROWS}
    seen = set()
    for f in meta["functions"]:
        (p,) = f["overloads"][0]["params"]
        assert p["python"] == by_c[p["type"]]["python"]
        assert p["dtype"] == by_c[p["type"]]["numpy"]
        seen.add(p["type"])
    assert seen == set(by_c)
