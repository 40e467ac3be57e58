"""No C function in csrc/ over 80 lines, counted from the line of its name to
its closing brace: a longer one does several jobs, and is split into static
helpers by job (csrc/README.md).

The functions are read off the layout .clang-format gives the tree (Linux
braces, which tests/lint.sh holds): a definition's body opens with a line
that is `{` alone at column 0 and ends at the next line that is `}` alone at
column 0; its name is on the nearest line above the `{` that starts at
column 0 with an identifier (a long signature's continuation lines are
indented, and a return type clang-format broke off goes on the line above
the name). A function short enough for one line (`int f(void) { return 0; }`)
is far below the limit. test_the_layout_is_as_read checks that the tree
keeps to this, so that no definition escapes the count."""

import glob
import os
import re

from sources import ROOT

CSRC = os.path.join(ROOT, "csrc")
LIMIT = 80
SUFFIXES = (".c", ".h", ".cpp")

NAME_LINE = re.compile(r"^[A-Za-z_]")  # a line at column 0 that starts with an identifier
NAME = re.compile(r"(\w+)\s*(?:<[^<>()]*>\s*)?\(")  # the first identifier before a '('
# a column-0 line that opens a brace group on the same line but is no function:
# struct/union/enum heads, initializers, an extern "C" block
NOT_A_FUNCTION = re.compile(r"^(?:typedef\s+)?(?:static\s+)?(?:const\s+)?(?:struct|union|enum)\b"
                            r"|=\s*\{$|^extern \"C\" \{$")


def sources(csrc=CSRC):
    """Every C and C++ source and header under csrc/, sorted."""
    return sorted(p for ext in SUFFIXES
                  for p in glob.glob(os.path.join(csrc, "**", "*" + ext), recursive=True))


def functions(text):
    """[(name, name_line, close_line)] of the multi-line function definitions
    in one file's text (1-based lines); ValueError naming the line where the
    text is not laid out as the module docstring says."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        start = i - 1
        while start >= 0 and not NAME_LINE.match(lines[start]):
            start -= 1
        head = " ".join(lines[start:i]) if start >= 0 else ""
        m = NAME.search(head)
        if start < 0 or not m:
            raise ValueError("line %d: a '{' at column 0 with no function head above it" % (i + 1))
        end = i + 1
        while end < len(lines) and lines[end] != "}":
            if lines[end] == "{":
                raise ValueError("line %d: a '{' at column 0 inside the body of %s() (line %d)"
                                 % (end + 1, m.group(1), start + 1))
            end += 1
        if end == len(lines):
            raise ValueError("line %d: the body of %s() has no '}' at column 0"
                             % (i + 1, m.group(1)))
        out.append((m.group(1), start + 1, end + 1))
        i = end + 1
    return out


def too_long(text, limit=LIMIT):
    """[(name, name_line, length)] of the functions over limit lines."""
    return [(name, a, b - a + 1) for name, a, b in functions(text) if b - a + 1 > limit]


def braces_on_the_head(text):
    """Lines (1-based) at column 0 that open a brace group after a ')': a
    function whose '{' is not on a line of its own, which functions() would
    not see."""
    return [n for n, line in enumerate(text.split("\n"), 1)
            if NAME_LINE.match(line) and line.endswith("{") and ")" in line
            and not NOT_A_FUNCTION.search(line)]


def test_the_checker_sees_what_it_checks():
    text = "\n".join([
        "/* a file */",
        "static int one(void) { return 1; }",           # one line: not counted
        "typedef struct S {",
        "    int a;",
        "} S;",
        "static int f(int a,",                          # a signature over two lines
        "             int b)",
        "{",
        "    return a + b;",
        "}",
        "static inline PyObject *",                     # the return type broken off
        "g(void)",
        "{",
        "    if (x) {",
        "        y();",
        "    }",
        "    return NULL;",
        "}",
        'extern "C" {',
        "#include <x.h>",
        "}",
        "template <int V>",
        "static int site(const int *p)",
        "{",
        "#if A",
        "    return V;",
        "#endif",
        "}",
        "",
    ])
    assert functions(text) == [("f", 6, 10), ("g", 12, 18), ("site", 23, 28)]
    assert too_long(text, limit=6) == [("g", 12, 7)]
    assert too_long(text, limit=7) == []
    assert braces_on_the_head(text) == []
    assert braces_on_the_head("int h(void) {\n    return 0;\n}\n") == [1]
    for bad, why in (("int h(void)\n{\n{\n}\n", "inside the body of h()"),
                     ("int h(void)\n{\n    return 0;\n", "has no '}' at column 0"),
                     ("{\n}\n", "no function head")):
        try:
            functions(bad)
        except ValueError as e:
            assert why in str(e), e
        else:
            raise AssertionError(bad)


def test_the_layout_is_as_read():
    found = 0
    wrong = []
    for path in sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(path, ROOT)
        try:
            found += len(functions(text))
        except ValueError as e:
            wrong.append("%s: %s" % (rel, e))
        wrong += ["%s:%d: a function's '{' on its head's line (run clang-format)" % (rel, n)
                  for n in braces_on_the_head(text)]
    assert wrong == []
    assert found > 600, found  # the reader finds the tree's functions


def test_no_function_over_80_lines():
    long = []
    for path in sources():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        long += ["%s:%d: %s() is %d lines, from its name to its closing brace; split it into "
                 "static helpers by job (at most %d)"
                 % (os.path.relpath(path, ROOT), line, name, n, LIMIT)
                 for name, line, n in too_long(text)]
    assert long == []
