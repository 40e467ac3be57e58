"""The annotations' expression language (csrc/core/bt_expr.h), without
Python: tests/core/c/expr_driver.c parses, binds and evaluates each line
against a function of a small header, with a fake env for the call's values.
Precedence (against a reference evaluator over random trees), C's division,
checked arithmetic, short-circuits, queries, and the errors with their
columns; hostile inputs fail cleanly, and time stays linear in the text."""

import random
import subprocess

import pytest

import c_drivers

HEADER = """\
enum order { RowMajor = 101, ColMajor = 102 };
#define LAPACK_ROW_MAJOR 101
#define LAPACK_COL_MAJOR 102
#define AXIS 1
#define NAME "text"
double ddot(int n, const double *x, int incx, const double *y, int incy);
void vp(void *p, const char *s, int k, long long len);
int none(void);
"""
COL = 10  # the driver's expressions start at column 10
LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


@pytest.fixture(scope="module")
def header(tmp_path_factory):
    try:
        c_drivers.build()
    except OSError as e:
        pytest.skip(str(e))
    path = tmp_path_factory.mktemp("expr") / "h.h"
    path.write_text(HEADER)
    return str(path)


def run(header, lines, func="ddot", *extra):
    """[(result, uses, calls)] for each line ("EXPR" or (EXPR, BINDINGS))."""
    text = "".join((x if isinstance(x, str) else "%s\t%s" % x) + "\n" for x in lines)
    r = subprocess.run([c_drivers.build()["expr_driver"], header, func, *extra], input=text,
                       capture_output=True, text=True, env=c_drivers.env(), timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stdout[-2000:] + r.stderr[-4000:]
    return [tuple(x.split("\t")) for x in r.stdout.splitlines()]


def values(header, lines, func="ddot"):
    """Each line's value (an int), or its message ("! ...")."""
    return [int(res[2:]) if res.startswith("= ") else res
            for res, *_ in run(header, lines, func)]


def test_precedence_and_associativity(header):
    cases = {
        "1 + 2 * 3": 7, "(1 + 2) * 3": 9, "10 - 2 - 3": 5, "100 / 10 / 5": 2,
        "1 << 2 + 1": 8, "1 < 2 == 1": 1, "2 == 2 < 3": 0, "1 || 0 && 0": 1,
        "0 ? 1 : 2 ? 3 : 4": 3, "1 ? 2 : 3 ? 4 : 5": 2, "-2 * -3": 6, "!0 + 1": 2,
        "- - 5": 5, "--5": 5, "+5": 5, "!!7": 1, "2 * 3 % 4": 2, "1 + 2 << 3 >> 1": 12,
        "3 > 2 > 1": 0, "1 != 2 == 1": 1, "0x1F + 0X10": 47, "10u + 5UL + 2ll + 1LLU": 18,
        "010": 8, "  ( ( 7 ) )  ": 7, "n+n*n": 6,
    }
    assert values(header, [(t, "n=2") for t in cases]) == list(cases.values())


C_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "<<": 5,
          ">>": 5, "+": 6, "-": 6, "*": 7, "/": 7, "%": 7}


class CError(Exception):
    pass


def c_eval(t):
    """A tree's value by C's rules on long long, or CError(what)."""
    kind = t[0]
    if kind == "int":
        return t[1]
    if kind == "un":
        v = c_eval(t[2])
        if t[1] == "!":
            return int(not v)
        if v == LLONG_MIN:
            raise CError("overflow")
        return -v
    if kind == "cond":
        return c_eval(t[2]) if c_eval(t[1]) else c_eval(t[3])
    op, a = t[1], c_eval(t[2])
    if op == "&&":
        return int(bool(a) and bool(c_eval(t[3])))
    if op == "||":
        return int(bool(a) or bool(c_eval(t[3])))
    b = c_eval(t[3])
    if op in ("/", "%"):
        if b == 0:
            raise CError("division by zero")
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        r = q if op == "/" else a - q * b
    elif op in ("<<", ">>"):
        if b < 0 or b >= 63:
            raise CError("shift count out of range")
        if op == "<<" and a < 0:
            raise CError("left shift of a negative value")
        r = a << b if op == "<<" else a >> b
    else:
        r = {"+": a + b, "-": a - b, "*": a * b, "==": a == b, "!=": a != b, "<": a < b,
             "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    r = int(r)
    if not LLONG_MIN <= r <= LLONG_MAX:
        raise CError("overflow")
    return r


def prec(t):
    return {"int": 9, "un": 8, "cond": 0}.get(t[0]) if t[0] != "bin" else C_PREC[t[1]]


def c_text(t):
    """The tree in C with only the parentheses C's precedence needs."""
    def wrap(x, paren):
        s = c_text(x)
        return "(" + s + ")" if paren else s

    if t[0] == "int":
        return str(t[1])
    if t[0] == "un":
        return t[1] + " " + wrap(t[2], prec(t[2]) < 8)
    if t[0] == "cond":
        return "%s ? %s : %s" % (wrap(t[1], prec(t[1]) <= 0), c_text(t[2]), c_text(t[3]))
    p = C_PREC[t[1]]
    return "%s %s %s" % (wrap(t[2], prec(t[2]) < p), t[1], wrap(t[3], prec(t[3]) <= p))


def random_tree(rng, depth):
    if depth == 0 or rng.random() < 0.2:
        return ("int", rng.choice([0, 1, 2, 3, 5, 7, 62, 63, 64, 1000, 3037000500,
                                   LLONG_MAX]))
    k = rng.random()
    if k < 0.15:
        return ("un", rng.choice("-!"), random_tree(rng, depth - 1))
    if k < 0.25:
        return ("cond",) + tuple(random_tree(rng, depth - 1) for _ in range(3))
    return ("bin", rng.choice(list(C_PREC)), random_tree(rng, depth - 1),
            random_tree(rng, depth - 1))


def test_random_trees_match_c(header):
    rng = random.Random(20240611)
    trees = [random_tree(rng, rng.randint(1, 6)) for _ in range(3000)]
    texts = [c_text(t) for t in trees]
    got = values(header, texts)
    errors = 0
    for t, text, g in zip(trees, texts, got):
        try:
            want = c_eval(t)
        except CError as e:
            errors += 1
            assert g == "! %s in '%s'" % (e, text if len(text) <= 200 else text[:200] + "..."), \
                text
        else:
            assert g == want, text
    assert 100 < errors < 2000, errors  # both kinds of outcome are exercised


def test_c_division(header):
    assert values(header, ["7 / 2", "-7 / 2", "7 / -2", "-7 / -2", "-7 % 2", "7 % -2",
                           "-7 % -2", "-8 >> 1", "-1 >> 62"]) == [3, -3, -3, 3, -1, 1, -1, -4, -1]


def test_checked_arithmetic(header):
    big = "9223372036854775807"
    lmin = "(-%s - 1)" % big
    cases = [
        (big + " + 1", "overflow"), ("-" + big + " - 2", "overflow"),
        ("3037000500 * 3037000500", "overflow"), (lmin + " / -1", "overflow"),
        (lmin + " % -1", "overflow"), ("-" + lmin, "overflow"), ("n / 0", "division by zero"),
        ("n % (n - n)", "division by zero"), ("1 << 63", "shift count out of range"),
        ("1 >> 63", "shift count out of range"), ("1 << -1", "shift count out of range"),
        ("-1 << 1", "left shift of a negative value"), ("2 << 62", "overflow"),
        ("4611686018427387904 << 1", "overflow"),
    ]
    got = values(header, [(t, "n=5") for t, _ in cases])
    assert got == ["! %s in '%s'" % (why, t) for t, why in cases]
    assert values(header, [lmin, "1 << 62", big, lmin + " / 1", "2147483647 * 2147483647"]) == [
        LLONG_MIN, 1 << 62, LLONG_MAX, LLONG_MIN, 2147483647 ** 2]


def test_short_circuit(header):
    # the skipped operand's errors, and its env reads, do not happen
    rows = run(header, [("n != 0 && 10 / n > 1", "n=0"), ("0 && len(x)", ""),
                        ("1 || 1 / 0", ""), ("n ? 1 : 1 / 0", "n=1"), ("n ? 1 / 0 : 2", "n=0"),
                        ("n > 0 ? len(x) : 0", "n=0"), ("0 && incx", ""),
                        ("n == 0 || 100 / n > 3", "n=0"), ("7 && 9", ""), ("0 || -3", ""),
                        ("1 && incx", "")])
    assert [(r, c) for r, _, c in rows] == [
        ("= 0", "1"), ("= 0", "0"), ("= 1", "0"), ("= 1", "1"), ("= 2", "1"), ("= 0", "1"),
        ("= 0", "0"), ("= 1", "1"), ("= 1", "0"), ("= 1", "0"),
        ("! no value for 'incx'", "1")]


def test_min_max(header):
    assert values(header, [("min(3, 1, 2)", ""), ("max(n, 1)", "n=0"),
                           ("max(-5, -7) + min(n, 4, 9)", "n=2"),
                           ("min(max(n, 1), max(2, incx))", "n=0 incx=7")]) == [1, 1, -3, 1]
    got = values(header, ["min(1)", "max()", "min(1, 2"])
    assert got[0] == "! notes.yml:1:%d: min() takes two arguments or more in 'min(1)'" % COL
    assert got[1] == "! notes.yml:2:%d: unexpected ')' in 'max()'" % (COL + 4)
    assert got[2] == "! notes.yml:3:%d: expected ')' in 'min(1, 2'" % (COL + 8)


def test_queries(header):
    rows = run(header, [
        ("len(x) * stride(x) + ndim(y)", "x=[4] x.stride=-2 y=[3,5]"),
        ("shape(y, 0) + 10 * shape(y, 1) + 100 * shape(y, AXIS + 1)", "y=[3,5]"),
        ("ld(x)", "x=[2,6] x.ld=6"), ("ld(x)", "x=[2,6]"), ("len(x)", ""),
        ("n * incx + len(x)", "n=2 incx=3 x=[9]"),
    ])
    assert rows == [("= -6", "x?,x?,y?", "3"), ("= 153", "y?,y?,y?", "3"),
                    ("= 6", "x?", "1"), ("! no leading dimension", "-", "1"),
                    ("! no array", "-", "1"), ("= 15", "n,incx,x?", "3")]


def test_layout_and_pointer_arrays(header):
    rows = run(header, [
        ("layout(p, LAPACK_ROW_MAJOR, LAPACK_COL_MAJOR)", "p=[2,2]"),
        ("layout(p, LAPACK_ROW_MAJOR, LAPACK_COL_MAJOR)", "p=[2,2] p.layout=F"),
        ("layout(s, RowMajor, ColMajor + 0)", "s=[2,2] s.layout=F"),
        ("len(p) + len(s) + len", "p=[3] s=[4] len=10"),  # len is a parameter, too
        ("k", "k=-1"),
    ], "vp")
    assert [r for r, _, _ in rows] == ["= 101", "= 102", "= 102", "= 17", "= -1"]


def test_bind_errors(header):
    got = values(header, ["len(x) + nn", "N + 1", "zzz", "len(q)", "stride(n)",
                          "shape(y, 32)", "shape(y, -1)", "shape(y, n)", "shape(y, len(x))",
                          "shape(y, 1 / 0)", "LAPACK_ROW_MAJR"])
    params = "; the parameters are n, x, incx, y, incy"
    assert got == [
        "! notes.yml:1:%d: unknown name 'nn' in 'len(x) + nn'%s; did you mean 'n'?"
        % (COL + 9, params),
        "! notes.yml:2:%d: unknown name 'N' in 'N + 1'%s; did you mean 'n'?" % (COL, params),
        "! notes.yml:3:%d: unknown name 'zzz' in 'zzz'%s" % (COL, params),
        "! notes.yml:4:%d: unknown parameter 'q' in 'len(q)'%s" % (COL + 4, params),
        "! notes.yml:5:%d: stride(n): 'n' is not an array in 'stride(n)'" % (COL + 7),
        "! notes.yml:6:%d: shape(y): axis 32 is out of range (0 to 31) in 'shape(y, 32)'"
        % (COL + 9),
        "! notes.yml:7:%d: shape(y): axis -1 is out of range (0 to 31) in 'shape(y, -1)'"
        % (COL + 9),
        "! notes.yml:8:%d: shape(y): its axis must be a constant ('n' is a parameter) in "
        "'shape(y, n)'" % (COL + 9),
        "! notes.yml:9:%d: shape(y): its axis must be a constant (len(x) is not a constant) in "
        "'shape(y, len(x))'" % (COL + 9),
        "! notes.yml:10:%d: shape(y): its axis must be a constant (division by zero) in "
        "'shape(y, 1 / 0)'" % (COL + 11),
        "! notes.yml:11:%d: unknown name 'LAPACK_ROW_MAJR' in 'LAPACK_ROW_MAJR'%s; did you "
        "mean 'LAPACK_ROW_MAJOR'?" % (COL, params),
    ]
    assert values(header, ["n", "len(n)"], "none") == [
        "! notes.yml:1:%d: unknown name 'n' in 'n'; it has no parameters" % COL,
        "! notes.yml:2:%d: unknown parameter 'n' in 'len(n)'; it has no parameters" % (COL + 4)]
    # a string #define is no integer constant
    assert values(header, ["NAME"])[0].startswith("! notes.yml:1:%d: unknown name 'NAME'" % COL)


def test_parse_errors_and_columns(header):
    cases = [
        ("len(x", 5, "expected ')'"), ("", 0, "expected an expression"),
        ("n +", 3, "expected an expression"), ("n m", 2, "unexpected 'm'"),
        ("(n", 2, "expected ')'"), ("n ? 1", 5, "expected ':'"), ("n = 1", 2, "unexpected '='"),
        ("n & 1", 2, "unexpected '&'"), ("1.5", 0, "'1.5' is not an integer"),
        ("2n", 0, "'2n' is not an integer"), ("0x", 0, "'0x' is not an integer"),
        ("9223372036854775808", 0, "integer 9223372036854775808 is out of range"),
        ("foo(n)", 0, "unknown function 'foo' (the functions are len, shape, stride, ld, "
                      "ndim, layout, min and max)"),
        ("len(3)", 4, "len() takes an array parameter's name"),
        ("len(x, 1)", 5, "len() takes 1 argument"), ("shape(x)", 7, "shape() takes 2 arguments"),
        ("shape(x, 1, 2)", 10, "shape() takes 2 arguments"),
        ("layout(x, 1)", 11, "layout() takes 3 arguments"), ("n $ 1", 2, "unexpected '$'"),
        ("n \x01", 2, "unexpected byte 0x01"), ("min (1, ", 8, "expected an expression"),
    ]
    got = values(header, [t for t, _, _ in cases])
    assert got == ["! notes.yml:%d:%d: %s in '%s'" % (i + 1, COL + off, why, t)
                   for i, (t, off, why) in enumerate(cases)]


def test_names_that_are_function_names(header):
    # a function's name is a name unless '(' follows it (spaces allowed between)
    assert values(header, [("len + 1", "len=4"), ("len (p)", "p=[6]"), "min"], "vp") == [
        5, 6,
        "! notes.yml:3:%d: unknown name 'min' in 'min'; the parameters are p, s, k, len" % COL]


def test_nesting_limit(header):
    deep = 2048
    lines = ["(" * deep + "1" + ")" * deep, "-" * 4095 + "1", "!" * 4095 + "1",
             "min(1, " * 500 + "1" + ")" * 500, "1 ? " * 500 + "1" + " : 1" * 500,
             "0 ? 1 : " * 500 + "1", "(" * 63 + "7" + ")" * 63, "- (" * 31 + "7" + ")" * 31]
    got = values(header, lines)
    assert len(lines[0]) == 4097 and got[0] == (
        "! notes.yml:1:%d: an expression of 4097 characters (at most 4096) in '%s...'"
        % (COL, lines[0][:200]))
    for i in (1, 2, 3, 4, 5):
        assert len(lines[i]) <= 4096 and got[i].startswith("! notes.yml:%d:" % (i + 1)), got[i]
        assert "nested more than 64 deep in '" in got[i], got[i]
    lines[0] = "(" * 2047 + "1" + ")" * 2047  # 4095 characters: nesting, not length
    assert values(header, lines[:1])[0] == (
        "! notes.yml:1:%d: nested more than 64 deep in '%s...'" % (COL + 64, lines[0][:200]))
    assert got[6:] == [7, -7]


def test_long_flat_input_is_linear(header):
    def ns(terms, op="+"):
        text = op.join(["n"] * terms)
        (res, _, calls), (tag, t) = run(header, [(text, "n=1")], "ddot", "-t", "30")
        assert tag == "ns" and calls == str(terms), (res, calls)
        assert res == ("= %d" % terms if op == "+" else "= 1")
        return float(t)

    small, large = ns(200), ns(2000)  # 3999 characters
    assert large < 40 * small, (small, large)  # linear: about 10; quadratic: 100
    small, large = ns(130, "&&"), ns(1300, "&&")  # 3898 characters
    assert large < 40 * small, (small, large)
    # the longest text, flat, with constants: parsed, bound and evaluated
    text = "+".join(["RowMajor"] * 455)
    assert len(text) <= 4096 and values(header, [text]) == [101 * 455]
    text = "min(" + ", ".join(["1"] * 1300) + ")"
    assert len(text) <= 4096 and values(header, [text]) == [1]
