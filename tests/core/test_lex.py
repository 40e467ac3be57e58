"""The lexer's part of reading a header (csrc/core/bt_lex.c), through
bindthem.parse_header: comments become docstrings (every comment form, the
nearest comment, indentation kept), bytes that are not UTF-8 and a byte
order mark."""

import pytest

import bindthem

DOC_FORMS = [
    ("//\n// Testing docstring\n//", "Testing docstring"),
    ("// Testing docstring", "Testing docstring"),
    ("/*\n * Testing a docstring\n *\n */", "Testing a docstring"),
    ("/* Testing a docstring */", "Testing a docstring"),
    ("/** Testing a docstring */", "Testing a docstring"),
    ("/*! Testing a docstring */", "Testing a docstring"),
    ("//! Testing docstring", "Testing docstring"),
    ("/// Testing docstring", "Testing docstring"),
    ("/*\n   Testing\n     indented\n*/", "Testing\n  indented"),
    ("// first\n//   indented\n// last", "first\n  indented\nlast"),
    ("// banner, not a docstring\n", ""),   # a blank line separates it
    ("", ""),
]


@pytest.mark.parametrize("comment,doc", DOC_FORMS, ids=[repr(c) for c, _ in DOC_FORMS])
@pytest.mark.parametrize("template", ["", "template <class T>\n"])
def test_docstring_forms(tmp_path, comment, doc, template):
    h = tmp_path / "doc.h"
    sig = "void f(const T x[], const int x_size);" if template else "int f(const int n);"
    h.write_text("%s\n%s%s\n" % (comment, template, sig))
    (d,) = bindthem.parse_header(str(h))["declarations"]
    assert d["doc"].strip() == doc
    assert d["doc"] == doc    # stripped already


def test_doc_is_the_nearest_comment(tmp_path):
    h = tmp_path / "doc.h"
    h.write_text("// for a\nint a(int n);\nint b(int n);\n/* for c */\n\nint c(int n);\n"
                 "/* for d */ // and more\nint d(int n);\n")
    docs = [d["doc"] for d in bindthem.parse_header(str(h))["declarations"]]
    assert docs == ["for a", "", "", "for d\nand more"]


def test_comments_in_another_encoding(tmp_path, cache_dir):
    # a Latin-1 comment: the docstring keeps the rest, the odd byte becomes U+FFFD
    h = tmp_path / "latin1.h"
    h.write_bytes(b"// caf\xe9 au lait, na\xefve \xe2\x82\xac\n// \xed\xa0\x80 \xc0\xaf\n"
                  b"int twice(int x) { return 2 * x; }\n")
    (d,) = bindthem.parse_header(str(h))["declarations"]
    assert d["doc"] == "caf\ufffd au lait, na\ufffdve \u20ac\n\ufffd\ufffd\ufffd \ufffd\ufffd"
    assert d["doc"] == b"caf\xe9 au lait, na\xefve \xe2\x82\xac\n\xed\xa0\x80 \xc0\xaf".decode(
        "utf-8", errors="replace")
    lib = bindthem.build(str(h), cache_dir=cache_dir)
    assert lib.twice(4) == 8 and lib.twice.__doc__ == d["doc"]


def test_utf8_byte_order_mark(tmp_path):
    h = tmp_path / "bom.h"
    h.write_bytes(b"\xef\xbb\xbf// Doc.\nint f(int x);\n")
    (d,) = bindthem.parse_header(str(h))["declarations"]
    assert (d["name"], d["doc"], d["line"], d["col"]) == ("f", "Doc.", 2, 5)
