"""Plain C libraries: a header of C prototypes (no extern "C") and a library
compiled as C by gcc and by clang bind by the functions' C names.

The header spells its types as C headers do (_Bool, <stdbool.h>'s bool,
size_t, ptrdiff_t, ssize_t, intN_t/uintN_t as scalars and as _size
parameters); a function's C++ symbol still wins where the library has it,
and a C name is taken only from the library itself (never libc's)."""

import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from sources import kernel

import bindthem
from bindthem._services import display as _display

COMPILERS = ["gcc", "clang"]


def _cc(compiler, out, *sources, lang="c"):
    if not shutil.which(compiler):
        pytest.skip("needs %s" % compiler)
    cmd = [compiler, "-x", lang, "-std=c11" if lang == "c" else "-std=c++17", "-O1", "-fPIC",
           "-shared", *sources, "-o", out]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def _c_library(tmp_path, stem, header, source):
    """tmp_path/<stem>.h holding header and lib<stem>.so built by gcc from source: their paths."""
    h = tmp_path / (stem + ".h")
    h.write_text(header)
    c = tmp_path / (stem + ".c")
    c.write_text(source)
    return str(h), _cc("gcc", str(tmp_path / ("lib%s.so" % stem)), str(c))


@pytest.fixture(scope="module", params=COMPILERS)
def vec(request, tmp_path_factory):
    lib = _cc(request.param, str(tmp_path_factory.mktemp(request.param) / "libvec.so"),
              kernel("vec.c"))
    syms = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                          text=True).stdout
    assert " dot\n" in syms and "_Z3dot" not in syms  # a C library: C names only
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every function binds: nothing to say
        return bindthem.load(lib, kernel("vec.h"))


def test_c_library_binds_by_c_names(vec):
    assert vec.__all__ == ["all_pos", "any_neg", "byte_sum", "count_pos", "dot", "negate16",
                           "scale"]
    assert bindthem.info(vec).unexported == [] and bindthem.info(vec).left_out == []
    for name in vec.__all__:
        assert getattr(vec, name).symbols == (name,)
    # the metadata keeps the C++ name the header spells; the display says which was found
    (ov,) = [f for f in vec.metadata["functions"] if f["name"] == "dot"][0]["overloads"]
    assert ov["symbol"] == "_Z3dotPKdiS0_i"
    assert "[C name dot]" in _display.function_text(vec.dot)
    assert "[C name dot]" in vec._repr_html_()


def test_c_library_computes(vec):
    x, y = np.arange(5.0), np.arange(5.0) + 1
    assert vec.dot(x, y) == float(x @ y) == 40.0
    assert vec.dot(x, y[:3]) == 8.0  # each array's own length
    vec.scale(x, 2.5)
    np.testing.assert_array_equal(x, np.arange(5.0) * 2.5)
    v = np.array([3, -1, 0, 2**40], dtype=np.int64)
    assert vec.count_pos(v) == 2 and type(vec.count_pos(v)) is int
    assert vec.all_pos(np.array([1.0, 2.0])) is True
    assert vec.all_pos(np.array([1.0, -2.0])) is False
    assert vec.any_neg(np.array([1.0, -2.0])) is True and vec.any_neg(np.zeros(3)) is False
    assert vec.byte_sum(np.array([200, 100, 1], dtype=np.uint8)) == 45
    b = np.array([1, -2, 32767], dtype=np.int16)
    vec.negate16(b)
    np.testing.assert_array_equal(b, [-1, 2, -32767])
    # the C types are the table's: int64_t takes int64 arrays, uint8_t uint8, int16_t int16
    with pytest.raises(TypeError):
        vec.count_pos(np.zeros(2, dtype=np.int32))
    with pytest.raises(TypeError):
        vec.negate16(np.zeros(2, dtype=np.float64))


def test_c_spellings_are_scalar_and_size_types(tmp_path):
    m = bindthem.parse_header(kernel("vec.h"))
    params = {f["name"]: f["overloads"][0]["params"] for f in m["functions"]}
    rets = {f["name"]: f["overloads"][0]["return"]["type"] for f in m["functions"]}
    assert rets["all_pos"] == rets["any_neg"] == "bool"  # _Bool and stdbool's bool
    assert rets["byte_sum"] == "unsigned char" and rets["count_pos"] == "long"
    sizes = {name: [(p["name"], p["type"]) for p in ps if p["size_of"]]
             for name, ps in params.items()}
    assert sizes["count_pos"] == [("v_size", "unsigned long")]  # size_t
    assert sizes["all_pos"] == [("v_size", "long")]  # ptrdiff_t
    assert sizes["negate16"] == [("b_size", "long")]  # ssize_t
    assert sizes["byte_sum"] == [("b_size", "unsigned int")]  # uint32_t
    assert m["skipped"] == []


@pytest.mark.parametrize("compiler", COMPILERS)
def test_cxx_symbol_wins_over_the_c_name(tmp_path, compiler):
    # one library with both: the C++ definition returns 1, the C one 2
    if not shutil.which(compiler):
        pytest.skip("needs %s" % compiler)
    h = tmp_path / "both.h"
    h.write_text("int which(const int n);\n")
    c = tmp_path / "c.c"
    c.write_text("int which(const int n) { return 2; }\n")
    cxx = tmp_path / "cxx.cpp"
    cxx.write_text('#include "both.h"\nint which(const int n) { return 1; }\n')
    cobj, cxxobj = str(tmp_path / "c.o"), str(tmp_path / "cxx.o")
    for src, obj, lang in ((c, cobj, "c"), (cxx, cxxobj, "c++")):
        proc = subprocess.run([compiler, "-x", lang, "-fPIC", "-c", str(src), "-o", obj],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    lib = str(tmp_path / "libboth.so")
    proc = subprocess.run([compiler, "-shared", cobj, cxxobj, "-o", lib], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    both = bindthem.load(lib, str(h))
    assert both.which.symbols == ("_Z5whichi",) and both.which(0) == 1


def test_c_name_only_from_the_library_itself(tmp_path):
    # libc exports stat and abs, libm cos: a header declaring them for a C
    # library that lacks them must not bind libc's
    h, lib = _c_library(
        tmp_path, "libcnames",
        "int mine(const int n);\nint abs(const int n);\nint stat(const int n);\n",
        "#include <stdlib.h>\nint mine(const int n) { return abs(n) + 1; }\n")
    with pytest.warns(bindthem.BindWarning) as rec:
        got = bindthem.load(lib, h)
    assert got.__all__ == ["mine"] and got.mine(-3) == 4
    assert sorted(x["name"] for x in bindthem.info(got).left_out) == ["abs", "stat"]
    (w,) = rec
    assert "stat: not in %s: it exports neither the C++ symbol _Z4stati nor the C name stat" \
        % os.path.realpath(lib) in str(w.message)
    with pytest.raises(AttributeError, match=r"libcnames.h:3 declares 'stat', but this Library "
                       r"does not bind it: not in .*C name stat"):
        got.stat


def test_overloaded_name_never_falls_back(tmp_path):
    # two C++ overloads cannot both be the one C function `f`
    h, lib = _c_library(
        tmp_path, "ov",
        "int f(const int n);\ndouble f(const double x);\nint g(const int n);\n",
        "int f(const int n) { return n; }\nint g(const int n) { return -n; }\n")
    with pytest.warns(bindthem.BindWarning, match=r"binds 1 function; 2 declarations"):
        got = bindthem.load(lib, h)
    assert got.__all__ == ["g"] and got.g(3) == -3
    assert bindthem.info(got).unexported == ["int f(const int n)", "double f(const double x)"]


def test_build_compiles_a_c_header_as_cxx(tmp_path):
    # build compiles C++, so a C header with definitions still builds and binds
    h = tmp_path / "cdefs.h"
    h.write_text("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n"
                 "bool has_zero(const int64_t v[], const size_t v_size) {\n"
                 "    for (size_t i = 0; i < v_size; i++) if (v[i] == 0) return true;\n"
                 "    return false;\n}\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lib = bindthem.build(str(h), cache_dir=str(tmp_path / "cache"))
    assert lib.has_zero(np.array([1, 0], dtype=np.int64)) is True
    assert lib.has_zero.symbols == ("_Z8has_zeroPKlm",)
