"""Size parameters follow BindThem's generator: after an array ``p``,
``p_size`` gets ``p.shape[0]`` and ``p_sizeK`` gets ``p.shape[K]``
(tests/data/kernels/sizes.h). The CUDA launcher's side is in test_cuda_kernels.py."""

import ast
import inspect
import subprocess
import sys

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import python_env

import bindthem
from bindthem import InstantiateError
from bindthem.stubs import render

HEADER = kernel("sizes.h")
YAML = kernel("sizes.yml")


@pytest.fixture(scope="module")
def lib(libdir):
    return bindthem.load(compile_cxx(libdir, "sizes", HEADER, YAML), HEADER, YAML)


def csr(a):
    """CSR arrays (int32 indptr and indices) of dense matrix a."""
    rows, cols = np.nonzero(a)
    indptr = np.searchsorted(rows, np.arange(a.shape[0] + 1)).astype(np.int32)
    return indptr, cols.astype(np.int32), a[rows, cols]


def system(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (n, n)) * (rng.uniform(size=(n, n)) < 0.4)
    a[np.arange(n), np.arange(n)] = 4 + rng.uniform(size=n)
    a[2, 2] = 0  # a zero diagonal: that row is left alone
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_jacobi_is_numpy_jacobi(lib, dtype):
    n = 9
    a = system(n, dtype)
    ap, aj, ax = csr(a)
    rng = np.random.default_rng(1)
    x, b = rng.uniform(size=n).astype(dtype), rng.uniform(size=n).astype(dtype)
    d = np.diag(a)
    expected = x.copy()
    keep = d != 0
    off = (a - np.diag(d)) @ x
    expected[keep] = (1 - 0.75) * x[keep] + 0.75 * (b[keep] - off[keep]) / d[keep]
    lib.jacobi(ap, aj, ax, x, b, np.empty(n, dtype), 0, n, 1, 0.75)
    np.testing.assert_allclose(x, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sweep", [(0, 9, 1), (8, -1, -1), (1, 9, 2)])
@pytest.mark.parametrize("m", [1, 3, 5])
def test_jacobi_m_is_jacobi_column_by_column(lib, dtype, sweep, m):
    n = 9
    ap, aj, ax = csr(system(n, dtype))
    rng = np.random.default_rng(m)
    x = rng.uniform(size=(n, m)).astype(dtype)
    b = rng.uniform(size=(n, m)).astype(dtype)
    expected = x.copy()
    for c in range(m):
        col = np.ascontiguousarray(expected[:, c])
        # temp starts as a copy of x: a partial sweep reads rows it does not copy
        lib.jacobi(ap, aj, ax, col, np.ascontiguousarray(b[:, c]), col.copy(), *sweep, 0.5)
        expected[:, c] = col
    b_before = b.copy()
    lib.jacobi_m(ap, aj, ax, x, b, x.copy(), *sweep, 0.5)
    np.testing.assert_array_equal(x, expected)
    np.testing.assert_array_equal(b, b_before)
    assert not np.array_equal(x[:, 0], b[:, 0])  # the sweep did something


@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 5), (5, 3), (4, 1), (1, 4), (0, 3)])
def test_column_major_walk_uses_the_row_count(lib, rows, cols):
    x = np.arange(rows * cols, dtype=np.int32).reshape(rows, cols)
    out = np.full(rows * cols, -1, np.int32)
    lib.columns_to_rows(x, cols, out)
    expected = x.ravel().reshape((rows, cols), order="F")
    np.testing.assert_array_equal(out.reshape(rows, cols), expected)


@pytest.mark.parametrize("shape", [(2, 3, 4), (5, 1, 7), (0, 3, 2), (3, 2, 1, 6), (1, 1, 1, 1, 9)])
@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_each_size_parameter_gets_its_axis(lib, shape, dtype):
    out = np.zeros(4, np.int64)
    lib.extents3(np.zeros(shape, dtype), out)
    assert out.tolist() == list(shape[:3]) + [4]
    assert lib.third_extent(np.zeros(shape)) == shape[2]


def test_size_and_size1_together(lib):
    assert lib.first_and_second(np.zeros((7, 3), np.float32)) == 7003
    assert lib.first_and_second(np.zeros((2, 40, 5), np.float32)) == 2040


def test_template_size_type(lib):
    assert lib.sized_by(np.zeros((6, 255))) == 6255
    with pytest.raises(OverflowError, match=r"^sized_by\(\): argument 'x' has shape\[1\] = 256, "
                                            r"more than its 'x_size1' parameter \(unsigned char\) "
                                            r"can hold$"):
        lib.sized_by(np.zeros((6, 256)))


def test_one_d_behaviour_unchanged(lib):
    out = np.zeros(7, np.int32)
    lib.columns_to_rows(np.arange(7, dtype=np.int32), 1, out)
    assert out.tolist() == list(range(7))
    assert lib.first_and_second.parameters == ("x",)


@pytest.mark.parametrize("fname,shape,param,axis,need", [
    ("extents3", (4, 5), "x_size2", 2, "3 dimensions"),
    ("extents3", (4,), "x_size2", 2, "3 dimensions"),
    ("third_extent", (2, 2), "x_size2", 2, "3 dimensions"),
    ("first_and_second", (6,), "x_size1", 1, "2 dimensions"),
    ("first_and_second", (), "x_size1", 1, "2 dimensions"),
    ("columns_to_rows", (), "x_size", 0, "1 dimension"),
])
def test_rank_too_small_is_value_error_before_the_kernel(lib, fname, shape, param, axis, need):
    dtype = {"extents3": np.int32, "third_extent": np.float64, "first_and_second": np.float32,
             "columns_to_rows": np.int32}[fname]
    x = np.full(shape, 3, dtype)
    args = {"extents3": (x, np.zeros(4, np.int64)), "third_extent": (x,),
            "first_and_second": (x,), "columns_to_rows": (x, 1, np.zeros(4, np.int32))}[fname]
    before = [np.copy(a) for a in args if isinstance(a, np.ndarray)]
    with pytest.raises(ValueError) as e:
        getattr(lib, fname)(*args)
    assert str(e.value) == (
        "%s(): argument 'x' is a %d-d array, but the kernel's size parameter '%s' takes its "
        "shape[%d]: pass an array of at least %s" % (fname, len(shape), param, axis, need))
    for a, b in zip([a for a in args if isinstance(a, np.ndarray)], before):
        np.testing.assert_array_equal(a, b)


def test_rank_error_names_the_argument_and_the_highest_axis(lib):
    n = 4
    ap, aj, ax = csr(system(n, np.float64))
    x = np.ones((n, 2))
    with pytest.raises(ValueError, match=r"^jacobi_m\(\): argument 'temp' is a 1-d array, but "
                                         r"the kernel's size parameter 'temp_size1' takes its "
                                         r"shape\[1\]"):
        lib.jacobi_m(ap, aj, ax, x, np.ones((n, 2)), np.zeros(2 * n), 0, n, 1, 1.0)
    np.testing.assert_array_equal(x, np.ones((n, 2)))


@pytest.mark.parametrize("shape,axis,value,param,ctype", [
    ((2, 256), 1, 256, "x_size1", "unsigned char"),
    ((40000, 2), 0, 40000, "x_size0", "short"),
    ((32768, 1), 0, 32768, "x_size0", "short"),
])
def test_overflow_is_checked_per_axis(lib, shape, axis, value, param, ctype):
    with pytest.raises(OverflowError) as e:
        lib.narrow(np.zeros(shape, np.int8))
    assert str(e.value) == ("narrow(): argument 'x' has shape[%d] = %d, more than its '%s' "
                            "parameter (%s) can hold" % (axis, value, param, ctype))


def test_narrow_sizes_that_fit(lib):
    assert lib.narrow(np.zeros((32767, 255), np.int8)) == 32767 * 1000 + 255
    assert lib.narrow(np.zeros((3, 0), np.int8)) == 3000
    # total element count 32767 * 255 would not fit a short: only the extents count
    assert lib.narrow(np.zeros((300, 200), np.int8)) == 300200


def test_signature_stub_and_show_drop_every_size(lib):
    py = ["Ap", "Aj", "Ax", "x", "b", "temp", "row_start", "row_stop", "row_step", "omega"]
    assert list(inspect.signature(lib.jacobi_m).parameters) == py
    assert lib.jacobi_m.parameters == tuple(py)
    assert "_size" not in lib.jacobi_m.__text_signature__
    assert list(inspect.signature(lib.extents3).parameters) == ["x", "out"]
    stub = {f.name: [a.arg for a in f.args.args]
            for f in ast.parse(render(HEADER, YAML)).body if isinstance(f, ast.FunctionDef)}
    assert stub["jacobi_m"] == py
    assert stub["extents3"] == ["x", "out"]
    assert stub["narrow"] == stub["sized_by"] == stub["first_and_second"] == ["x"]
    r = subprocess.run([sys.executable, "-m", "bindthem", "show", HEADER, "-i", YAML],
                       capture_output=True, text=True, env=python_env(), timeout=120)
    assert (r.returncode, r.stderr) == (0, "")
    assert ("jacobi_m(Ap, Aj, Ax, x, b, temp, row_start, row_stop, row_step, omega)  "
            "(2 overloads)\n") in r.stdout
    assert "extents3(x, out)  (2 overloads)\n" in r.stdout
    # the C signatures under it are the kernel's, sizes included
    assert "const int x_size0, const int x_size1" in r.stdout


def test_metadata_marks_every_size(lib):
    meta = bindthem.parse_header(HEADER, YAML)
    decl = next(d for d in meta["declarations"] if d["name"] == "jacobi_m")
    sizes = {p["name"]: p["size_of"] for p in decl["params"] if p["size_of"]}
    assert sizes == {"Ap_size": "Ap", "Aj_size": "Aj", "Ax_size": "Ax", "x_size0": "x",
                     "x_size1": "x", "b_size0": "b", "b_size1": "b", "temp_size0": "temp",
                     "temp_size1": "temp"}


def _reason(tmp_path, text):
    h = tmp_path / "h.h"
    h.write_text(text)
    (d,) = bindthem.parse_header(str(h))["declarations"]
    return d["reason"]


@pytest.mark.parametrize("decl,reason", [
    ("void f(double x[], const int x_size0, const int x_size31);", None),
    ("void f(double x[], const int x_size1, const int x_size);", None),
    ("void f(double x[], const int x_size32);",
     "parameter 'x_size32' names an axis of 'x' past the last one bindthem passes ('x_size31')"),
    ("void f(double x[], const int x_size99999999999999999999);",
     "parameter 'x_size99999999999999999999' names an axis of 'x' past the last one"),
    ("void f(double x[], const int x_size0, const double x_size1);",
     "parameter 'x_size1' (size of 'x') is not an integer"),
    ("void f(double x[], const int n, const int x_size1);",
     "parameter 'x' is a pointer with no 'x_size' after it"),
    ("void f(double x[], const int x_sizes);",
     "parameter 'x' is a pointer with no 'x_size' after it"),
    ("void f(double x[], const int x_size0, double y[]);",
     "parameter 'y' is a pointer with no 'y_size' after it"),
])
def test_size_parameter_rule(tmp_path, decl, reason):
    r = _reason(tmp_path, decl + "\n")
    assert r == reason if reason is None else r.startswith(reason)


@pytest.mark.parametrize("stype,kind", [("double", "double"), ("bool", "bool"),
                                        ("float", "float"),
                                        ("std::complex<double>", "std::complex<double>")])
def test_template_size_type_must_stay_an_integer(tmp_path, stype, kind):
    h = tmp_path / "t.h"
    h.write_text("template <class S>\nlong f(const double x[], const S x_size) { return 0; }\n")
    y = tmp_path / "t.yml"
    y.write_text("- types:\n    - [int]\n    - [%s]\n  functions: [f]\n" % stype)
    with pytest.raises(InstantiateError) as e:
        bindthem.parse_header(str(h), str(y))
    assert (e.value.filename, e.value.lineno, e.value.colno) == (str(y), 3, 7)
    assert str(e.value) == (
        "%s:3:7: S = %s in [0].types[1] makes 'x_size', the size of 'x' in 'f', a %s; a size "
        "parameter must be an integer type (declared at %s:2:34) (see docs/dialect.rst#sizes)"
        % (y, kind, kind, h))


# ---- untemplated functions need no YAML entry (BindThem's generator) ----

SHARED_YML = """instantiate:
- types:
    - [int, double]
  functions:
    - scaled_copy
"""

UNLISTED_H = """// Prints nothing: adds i to v[i].
void bump(double v[], int v_size, int i) { v[i] += i; }

/* A templated one the YAML lists. */
template <class I, class T>
void scaled_copy(const T x[], const int x_size, T y[], const int y_size, const I k)
{ for (int i = 0; i < x_size; i++) y[i] = k * x[i]; }

template <class T>
void unlisted_template(T x[], const int x_size) { x[0] = 1; }
"""


def test_untemplated_functions_bind_without_a_yaml_entry(tmp_path, cache_dir):
    h = tmp_path / "unlisted.h"
    h.write_text(UNLISTED_H)
    y = tmp_path / "instantiate.yml"
    y.write_text(SHARED_YML)
    lib = bindthem.build(str(h), str(y), cache_dir=cache_dir)
    assert lib.__all__ == ["bump", "scaled_copy"]
    v = np.zeros(4)
    lib.bump(v, 3)
    x, out = np.arange(4.0), np.zeros(4)
    lib.scaled_copy(x, out, 3)
    np.testing.assert_array_equal(v, [0, 0, 0, 3])
    np.testing.assert_array_equal(out, 3 * x)
    skipped = {s["name"]: s["reason"] for s in lib.metadata["skipped"]}
    assert skipped == {"unlisted_template": "not listed in instantiate.yml"}


def test_a_yaml_for_another_header_still_binds_its_untemplated_functions(tmp_path, cache_dir):
    # a YAML shared by several headers: this one declares none of its names
    h = tmp_path / "just_bump.h"
    h.write_text(UNLISTED_H.split("/*")[0])
    y = tmp_path / "instantiate.yml"
    y.write_text(SHARED_YML)
    meta = bindthem.parse_header(str(h), str(y))
    assert [f["name"] for f in meta["functions"]] == ["bump"]
    assert meta["missing"] == ["scaled_copy"]


def test_a_yaml_that_lists_none_of_a_headers_templates_says_what_to_add(tmp_path):
    h = tmp_path / "templates.h"
    h.write_text("// Sets the first entry.\ntemplate <class T>\nvoid first(T x[], const int x_size)"
                 " { x[0] = 1; }\n")
    y = tmp_path / "instantiate.yml"
    y.write_text(SHARED_YML)
    with pytest.raises(bindthem.InstantiateError) as ei:
        bindthem.parse_header(str(h), str(y))
    assert (ei.value.lineno, ei.value.colno) == (5, 7)
    assert str(ei.value).endswith("its templates, such as 'first' (line 3), need an entry "
                                  "with their types")
