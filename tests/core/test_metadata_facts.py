"""The facts the C core derives and Python only reads (issue 25): each
overload's Python names, positional-only count and signature, its
declaration, its explicit instantiation and address expression; the header's
`#pragma omp` and `#include "..."` lines as the lexer sees them; the C
tables (Python's keywords, the GIL policies)."""

import keyword
import typing
import warnings

import numpy
import pytest

import bindthem
from bindthem import _core, library
from bindthem.__main__ import _python_signatures
from bindthem._base import types as _types
from bindthem._services.compile.source import instantiation_source
from bindthem._services.cuda import nvrtc as _nvrtc
from bindthem.stubs import render

KEYWORDS = """\
// Keyword-named parameters.
extern "C" void kw(const double in[], const int in_size, double lambda, double match,
                   double scale = 2.0) {}
// An unnamed parameter.
extern "C" void un(int, double x) {}
// Sizes only.
extern "C" double plain(const double type[], const int type_size, int print) { return 0; }
"""

TEMPLATES = """\
namespace ns {
// y = a x
template <class T>
void axpy(const T x[], const int x_size, T y[], const int y_size, const T a) {}
}
// c = 1
template <class T> T one() { return 1; }
int untemplated(int a) { return a; }
"""

KERNELS = """\
namespace ns {
template <class T>
__global__ void scale(const T x[], const int x_size, T y[], const int y_size) {}
}
"""


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def overloads(meta):
    return {fn["name"]: fn["overloads"] for fn in meta["functions"]}


# ---- the C tables ----

def test_python_keywords_are_pythons():
    assert _core.PYTHON_KEYWORDS == tuple(keyword.kwlist)
    assert not set(_core.PYTHON_KEYWORDS) & set(keyword.softkwlist)


def test_gil_policies_are_the_c_table():
    assert _core.GIL_POLICIES == ("auto", "release", "keep")  # BT_GIL_AUTO, _RELEASE, _KEEP
    assert library.GIL_POLICIES is _core.GIL_POLICIES
    # the static alias mypy reads stays in step with C's table
    assert typing.get_args(_types.GilPolicy) == _core.GIL_POLICIES
    assert isinstance(_core.GIL_RELEASE_MIN_ELEMENTS, int) and _core.GIL_RELEASE_MIN_ELEMENTS > 0


def test_gil_message_names_the_threshold():
    with pytest.raises(ValueError, match="when the arrays hold %d elements or more"
                       % _core.GIL_RELEASE_MIN_ELEMENTS):
        bindthem.options(gil="sometimes")


# ---- the Python signature rule, once ----

def test_python_names_positional_only_and_signature(tmp_path):
    ovs = overloads(_core.parse_header(write(tmp_path, "kw.h", KEYWORDS)))
    kw, = ovs["kw"]
    assert [p["python_name"] for p in kw["params"]] == ["in_", None, "lambda_", "match", "scale"]
    assert kw["positional_only"] == 2  # up to lambda_; match is a soft keyword: a name
    assert kw["python_signature"] == "(in_, lambda_, /, match, scale=2.0)"
    un, = ovs["un"]
    assert [p["python_name"] for p in un["params"]] == ["arg0", "x"]
    assert (un["positional_only"], un["python_signature"]) == (1, "(arg0, /, x)")
    plain, = ovs["plain"]
    assert (plain["positional_only"], plain["python_signature"]) == (0, "(type, print)")


def test_every_reader_shows_the_c_signature(tmp_path, cache_dir):
    h = write(tmp_path, "kw.h", KEYWORDS)
    meta = _core.parse_header(h)
    lib = bindthem.build(h, cache_dir=cache_dir)
    for fn in meta["functions"]:
        ov, = fn["overloads"]
        assert getattr(lib, fn["name"]).__text_signature__ == ov["python_signature"]
    stub = render(h)
    assert "def kw(\n    in_: numpy.typing.NDArray[numpy.float64],\n    lambda_: float,\n" \
           "    /,\n    match: float,\n    scale: float = 2.0,\n) -> None:" in stub
    assert "def un(arg0: int, /, x: float) -> None:" in stub
    assert _python_signatures(meta["functions"][0]) == "kw(in_, lambda_, match, scale)"
    lib.kw(numpy.ones(2), 1.0, match=2.0)  # match by keyword: a name
    with pytest.raises(TypeError):
        lib.kw(numpy.ones(2), lambda_=1.0, match=2.0)  # positional-only


# ---- declaration, instantiation, address ----

def test_declaration_index_instantiation_and_address(tmp_path):
    h = write(tmp_path, "t.h", TEMPLATES)
    y = write(tmp_path, "t.yml", "- types: [[float], [double]]\n  functions: [axpy, one]\n")
    meta = _core.parse_header(h, y)
    ovs = overloads(meta)
    decls = meta["declarations"]
    for name, group in ovs.items():
        for ov in group:
            d = decls[ov["declaration"]]
            assert (d["name"], d["line"]) == (ov["function"], ov["line"])
    f, d = ovs["axpy"]
    assert f["declaration"] == d["declaration"]
    assert f["instantiation"] == ("template void ns::axpy<float>(const float x[], const int "
                                  "x_size, float y[], const int y_size, const float a);")
    assert f["name_expression"] == ("static_cast<void (*)(const float *, int, float *, int, "
                                    "float)>(&::ns::axpy<float>)")
    assert ovs["one"][1]["instantiation"] == "template double one<double>();"
    assert ovs["one"][1]["name_expression"] == "static_cast<double (*)()>(&::one<double>)"
    u, = ovs["untemplated"]
    assert u["instantiation"] is None
    # the build's source is the header and exactly these lines
    src = instantiation_source(h, y)
    assert src.splitlines()[-4:] == [ov["instantiation"] for ov in ovs["axpy"] + ovs["one"]]


def test_kernel_instantiation_and_nvrtc_name(tmp_path):
    h = write(tmp_path, "k.cuh", KERNELS)
    y = write(tmp_path, "k.yml", "- types: [[float]]\n  functions: [scale]\n")
    meta = _core.parse_header(h, y)
    (ov, d), = _nvrtc._kernel_overloads(meta)
    assert d["global"] and d["name"] == "scale"
    assert ov["instantiation"] == ("template __global__ void ns::scale<float>(const float x[], "
                                   "const int x_size, float y[], const int y_size);")
    assert ov["name_expression"] == ("static_cast<void (*)(const float *, int, float *, int)>"
                                     "(&::ns::scale<float>)")
    assert _nvrtc._source_of(h, meta, "").endswith(ov["instantiation"] + "\n")


# ---- preprocessor facts from the lexer ----

DIRECTIVES = b"""\
#include "real.h"
#include <vector>
  #  include   "spaced.h"
// #include "in_line_comment.h"
/* #include "in_block_comment.h"
#pragma omp parallel for
*/
const char *s = "#pragma omp in a string";
const char *r = R"x(
#pragma omp in a raw string
#include "in_raw_string.h"
)x";
int z; #pragma omp after a token
#pragma ompx not omp
#pragma once
/* a comment first */ #pragma omp parallel for   \r
#include "unterminated.h
#pragma omp simd \xff
"""


def test_directives_are_the_lexers():
    got = _core.header_directives(DIRECTIVES)
    assert got["includes"] == [{"name": "real.h", "line": 1}, {"name": "spaced.h", "line": 3}]
    assert got["openmp"] == [
        {"line": 16, "text": "#pragma omp parallel for"},
        {"line": 18, "text": "#pragma omp simd \ufffd"},
    ]


def test_metadata_carries_the_headers_directives(tmp_path):
    p = tmp_path / "d.h"
    p.write_bytes(DIRECTIVES + b"extern \"C\" void f(int a) {}\n")
    meta = _core.parse_header(str(p))
    assert {k: meta[k] for k in ("openmp", "includes")} == _core.header_directives(
        p.read_bytes())


def test_directives_of_odd_input():
    assert _core.header_directives(b"") == {"openmp": [], "includes": []}
    assert _core.header_directives(b"#") == {"openmp": [], "includes": []}
    assert _core.header_directives(b'#include "') == {"openmp": [], "includes": []}
    assert _core.header_directives(b'#include "a.h"')["includes"] == [{"name": "a.h", "line": 1}]
    assert _core.header_directives(b"#pragma omp\0for\n")["openmp"] == [
        {"line": 1, "text": "#pragma omp"}]  # the text stops at a NUL byte
    assert _core.header_directives(b"/* unterminated\n#pragma omp\n") == {"openmp": [],
                                                                          "includes": []}
    assert _core.header_directives(b"#pragma omp")["openmp"] == [{"line": 1,
                                                                  "text": "#pragma omp"}]
    with pytest.raises(TypeError):
        _core.header_directives("#pragma omp")


def test_pragma_in_a_comment_does_not_warn(tmp_path, cache_dir):
    h = write(tmp_path, "c.h", "/* no longer:\n#pragma omp parallel for\n*/\n"
              "// #pragma omp simd\nextern \"C\" int f(int a) { return a; }\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bindthem.build(h, cache_dir=cache_dir).f(3) == 3


def test_nvrtc_local_includes_skip_commented_ones(tmp_path):
    write(tmp_path, "real.h", '#include "deeper.h"\n')
    write(tmp_path, "deeper.h", "// end\n")
    write(tmp_path, "fake.h", "")
    h = write(tmp_path, "k.cuh", '#include "real.h"\n/* not now:\n#include "fake.h"\n*/\n'
              '__global__ void k(float y[]) {}\n')
    meta = _core.parse_header(h)
    assert [i["name"] for i in meta["includes"]] == ["real.h"]
    got = _nvrtc._local_includes(h, meta, [])
    assert got == [h, str(tmp_path / "real.h"), str(tmp_path / "deeper.h")]


def test_gil_policy_text_is_the_c_table():
    """Python's messages, bind()'s and the gil docstring say the same, from
    one C text naming each policy of the table in order."""
    text = _core.GIL_POLICY_TEXT
    at = [text.index("'%s'" % p) for p in _core.GIL_POLICIES]
    assert at == sorted(at)
    assert str(_core.GIL_RELEASE_MIN_ELEMENTS) in text
    with pytest.raises(ValueError) as py_side:
        bindthem.options(gil="sometimes")
    assert str(py_side.value).endswith("expected " + text)
    assert text in _core.Function.gil.__doc__
