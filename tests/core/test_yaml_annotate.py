"""instantiate.yml's `annotate:` section (csrc/core/bt_yaml_note.c; bt_note.h
says what it means), read by tests/core/c/dump_notes.c, which prints the
notes the reader keeps: bt_note.h's three functions, globs, check and
status, the mapping without `instantiate:`, the reader's limits, and errors
at their file:line:col, also as bindthem.parse_header raises them."""

import os
import re
import shutil
import subprocess

import pytest

import c_drivers
from c_drivers import CDIR
from support import SCALE_ROWS_H as HDR
from support import check_located, instantiate_error
from support import write_file as _write

from bindthem import InstantiateError


@pytest.fixture(scope="module")
def dump_notes(tmp_path_factory):
    """dump_notes, built as the other C drivers are (c_drivers.flags: -Werror, and
    ASan/UBSan when gcc has them) against csrc's pure layers."""
    if not shutil.which(c_drivers.CC):
        pytest.skip("no C compiler %r" % c_drivers.CC)
    exe = str(tmp_path_factory.mktemp("notes") / "dump_notes")
    cmd = [c_drivers.CC] + c_drivers.flags() + [os.path.join(CDIR, "dump_notes.c")] + \
        c_drivers.PURE_C + ["-lyaml", "-lffi", "-ldl", "-o", exe]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return exe


@pytest.fixture
def notes(dump_notes, tmp_path):
    """notes(text) -> (exit status, output): the YAML's notes, or its error
    with the file's path left out ("3:9: unknown key ...")."""
    def run(text):
        path = _write(tmp_path, "a.yml", text)
        r = subprocess.run([dump_notes, path], capture_output=True, text=True,
                           env=c_drivers.env(), timeout=120)
        assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
        assert r.returncode in (0, 1), r.stdout + r.stderr
        return r.returncode, r.stdout.replace(path + ":", "")
    return run


BT_NOTE_H = """\
annotate:
  cblas_ddot:              # a function name, or a glob (`cblas_?dot`, `*`)
    n: len(x)              # a hidden parameter: its value, an expression (bt_expr.h)
    incx: stride(x)
    y: {shape: [n]}        # an array: its shape, checked (in, inout) or allocated (out)
    incy: stride(y)
  LAPACKE_dgesv:
    matrix_layout: layout(a, LAPACK_ROW_MAJOR, LAPACK_COL_MAJOR)
    n: len(a)
    nrhs: shape(b, 1)
    a: {intent: inout, shape: [n, n]}
    lda: ld(a)
    ipiv: {intent: out, shape: [n]}
    b: {intent: inout, shape: [n, nrhs]}
    ldb: ld(b)
    status: {ok: [0]}      # the return is a status code: anything else raises
  compress2:
    dest: {intent: out, shape: ["sourceLen + (sourceLen >> 12) + 13"], trim: destLen}
    destLen: len(dest)     # a pointer given a value: its address is passed, read back
    sourceLen: len(source)
    check: [level >= -1]   # preconditions, each raised as a ValueError naming it
"""


def test_bt_note_h_example(notes):
    rc, out = notes(BT_NOTE_H)
    assert rc == 0, out
    assert out.splitlines() == [
        "plans_all 1, insts 0, remaps 0",
        "func cblas_ddot 2:3",
        "  arg n 3:5 value 'len(x)' @3:8",
        "  arg incx 4:5 value 'stride(x)' @4:11",
        "  arg y 5:5 intent - shape ['n' @5:17] trim - type -",
        "  arg incy 6:5 value 'stride(y)' @6:11",
        "func LAPACKE_dgesv 7:3",
        "  arg matrix_layout 8:5 value 'layout(a, LAPACK_ROW_MAJOR, LAPACK_COL_MAJOR)' @8:20",
        "  arg n 9:5 value 'len(a)' @9:8",
        "  arg nrhs 10:5 value 'shape(b, 1)' @10:11",
        "  arg a 11:5 intent inout shape ['n' @11:32, 'n' @11:35] trim - type -",
        "  arg lda 12:5 value 'ld(a)' @12:10",
        "  arg ipiv 13:5 intent out shape ['n' @13:33] trim - type -",
        "  arg b 14:5 intent inout shape ['n' @14:32, 'nrhs' @14:35] trim - type -",
        "  arg ldb 15:5 value 'ld(b)' @15:10",
        "  ok '0' @16:19",
        "func compress2 17:3",
        # a quoted expression is where its first character inside the quotes is
        "  arg dest 18:5 intent out shape ['sourceLen + (sourceLen >> 12) + 13' @18:34] "
        "trim destLen type -",
        "  arg destLen 19:5 value 'len(dest)' @19:14",
        "  arg sourceLen 20:5 value 'len(source)' @20:16",
        "  check 'level >= -1' @21:13",
    ]


def test_integer_scalars_types_and_block_style(notes):
    rc, out = notes("annotate:\n"
                    "  zaxpy:\n"
                    "    n: 3\n"
                    "    alpha: {intent: in, type: 'std::complex<double>'}\n"
                    "    x:\n"
                    "      intent: inout\n"
                    "      shape: n\n"
                    "      type: double\n"
                    "    incx: '1'\n")
    assert rc == 0, out
    assert out.splitlines()[1:] == [
        "func zaxpy 2:3",
        "  arg n 3:5 value '3' @3:8",
        "  arg alpha 4:5 intent in shape - trim - type std::complex<double>",
        "  arg x 5:5 intent inout shape ['n' @7:14] trim - type double",
        "  arg incx 9:5 value '1' @9:12",
    ]


def test_globs(notes):
    rc, out = notes("annotate:\n"
                    "  cblas_?dot: {n: len(x)}\n"
                    "  cblas_*: {incx: stride(x)}\n"
                    "  '*': {lda: ld(a)}\n"
                    '  "*_?gesv": {ldb: ld(b)}\n'
                    "  cblas_sdot: {n: len(y)}\n")
    assert rc == 0, out
    funcs = [line for line in out.splitlines() if line.startswith("func ")]
    assert funcs == ["func cblas_?dot 2:3 glob", "func cblas_* 3:3 glob", "func * 4:3 glob",
                     "func *_?gesv 5:3 glob", "func cblas_sdot 6:3"]


def test_check_and_status(notes):
    rc, out = notes("annotate:\n"
                    "  f:\n"
                    "    check: n > 0\n"
                    "    status: {ok: 0}\n"
                    "  g:\n"
                    "    check: ['m >= n', n % 2 == 0]\n"
                    "    status:\n"
                    "      ok: [0, 1]\n")
    assert rc == 0, out
    assert out.splitlines()[1:] == [
        "func f 2:3",
        "  check 'n > 0' @3:12",
        "  ok '0' @4:18",
        "func g 5:3",
        "  check 'm >= n' @6:14",
        "  check 'n % 2 == 0' @6:23",
        "  ok '0' @8:12",
        "  ok '1' @8:15",
    ]


@pytest.mark.parametrize("text, first", [
    # annotations alone: every bindable untemplated function is planned
    ("annotate:\n  f: {n: len(x)}\n", "plans_all 1, insts 0, remaps 0"),
    ("annotate:\n  f: {n: len(x)}\nremaps:\n  - f: g\n", "plans_all 1, insts 0, remaps 1"),
    ("annotate:\n", "plans_all 1, insts 0, remaps 0"),
    ("instantiate:\n  - types: null\n    functions: [f]\nannotate:\n  f: {n: len(x)}\n",
     "plans_all 0, insts 1, remaps 0"),
    ("instantiate:\n  - types: null\n    functions: [f]\n", "plans_all 0, insts 1, remaps 0"),
    ("- types: null\n  functions: [f]\n", "plans_all 0, insts 1, remaps 0"),
])
def test_the_mapping_without_instantiate(notes, text, first):
    rc, out = notes(text)
    assert rc == 0, out
    assert out.splitlines()[0] == first


ERRORS = [
    # unknown keys, with a near miss
    ("annotate:\n  f:\n    x: {shap: [n]}\n", "3:9",
     "unknown key 'shap' in annotate.f.x (expected 'intent', 'shape', 'trim', 'type' or "
     "'nullable'); "
     "did you mean 'shape'?"),
    ("annotate:\n  f:\n    status: {okk: 0}\n", "3:14",
     "unknown key 'okk' in annotate.f.status (expected 'ok'); did you mean 'ok'?"),
    ("annotat:\n  f: {n: 1}\n", "1:1",
     "unknown top-level key 'annotat' (expected 'instantiate', 'annotate' and 'remaps'; a "
     "single entry is written '- types: ...'); did you mean 'annotate'?"),
    ("- types: null\n  function: [f]\n", "2:3",
     "unknown key 'function' in entry [0] (expected 'types' and 'functions'); "
     "did you mean 'functions'?"),
    # values
    ("annotate:\n  f:\n    x: {intent: outt}\n", "3:17",
     "annotate.f.x.intent must be in, out or inout, not 'outt'; did you mean 'out'?"),
    ("annotate:\n  f:\n    x: {type: doubel}\n", "3:15",
     "unknown type 'doubel' in annotate.f.x.type; known: NumPy's names (complex128) and "
     "void, bool"),
    ("annotate:\n  f:\n    x: {type: void}\n", "3:15",
     "'void' in annotate.f.x.type is no element type"),
    ("annotate:\n  f:\n    x: {trim: 3x}\n", "3:15",
     "annotate.f.x.trim must name a parameter"),
    ("annotate:\n  f:\n    x: {shape: []}\n", "3:16",
     "annotate.f.x.shape is empty; list one expression or more, or leave the key out"),
    ("annotate:\n  f:\n    n:\n", "3:7",
     "annotate.f.n must be an expression such as 'len(x)' or 'n * 2', not null"),
    ("annotate:\n  f:\n    n: [1]\n", "3:8", "annotate.f.n must be an expression"),
    ("annotate:\n  f:\n    x: {shape: [n, {a: 1}]}\n", "3:20",
     "annotate.f.x.shape[1] must be an expression such as 'len(x)' or 'n * 2', not a mapping"),
    # check and status are the function's: no parameter note
    ("annotate:\n  f:\n    check: {intent: in}\n", "3:12",
     "annotate.f.check must be an expression such as 'len(x)' or 'n * 2', not a mapping"),
    ("annotate:\n  f:\n    status: 0\n", "3:13",
     "annotate.f.status must be a mapping such as {ok: [0]}"),
    ("annotate:\n  f:\n    status: {}\n", "3:13", "annotate.f.status has no 'ok' key"),
    ("annotate:\n  f:\n    check: []\n", "3:12", "annotate.f.check is empty"),
    # duplicates name both places
    ("annotate:\n  f:\n    n: len(x)\n    m: 1\n    n: 2\n", "5:5",
     "parameter 'n' of annotate.f is annotated twice, at lines 3 and 5; keep one note"),
    ("annotate:\n  f: {n: 1}\n  g: {}\n  f: {m: 2}\n", "4:3",
     "'f' is annotated twice, at lines 2 and 4; merge its notes into one entry"),
    ("annotate:\n  f:\n    check: [1]\n    check: 2\n", "4:5",
     "duplicate key 'check' in annotate.f, at lines 3 and 4"),
    ("annotate:\n  f:\n    x: {intent: in, intent: out}\n", "3:21",
     "duplicate key 'intent' in annotate.f.x, at line 3, columns 9 and 21"),
    # names
    ("annotate:\n  f-g:\n    n: 1\n", "2:3",
     "'f-g' in annotate is neither a function name nor a glob"),
    ("annotate:\n  2f:\n    n: 1\n", "2:3", "'2f' in annotate is neither a function name"),
    ("annotate:\n  f:\n    2n: 1\n", "3:5", "'2n' is no parameter name in annotate.f"),
    ("annotate:\n  f:\n", "2:5", "annotate.f must be a mapping of its parameters' notes"),
    ("annotate: [f]\n", "1:11", "annotate must be a mapping of function names"),
    ("remaps: []\n", "1:1",
     "instantiate.yml has no 'instantiate' key (the templates to instantiate) and no "
     "'annotate' key (notes on C functions); give one or both"),
    # an expression's fault, where it is in the file: quoted, at the quotes' inside
    ("annotate:\n  f:\n    n: 2 * )\n", "3:12", "unexpected ')'"),
    ("annotate:\n  f:\n    n: \"2 * )\"\n", "3:13", "unexpected ')'"),
    ("annotate:\n  f:\n    x: {shape: [n, '2 * )']}\n", "3:25", "unexpected ')'"),
    ("annotate:\n  f:\n    check: len(x\n", "3:17", "expected ')'"),
]


@pytest.mark.parametrize("text, pos, msg", ERRORS, ids=range(len(ERRORS)))
def test_errors(notes, text, pos, msg):
    rc, out = notes(text)
    assert rc == 1, out
    assert out.startswith(pos + ": "), out
    assert msg in out, out


@pytest.mark.parametrize("k", [0, 4, 16, 19, 26, 28])
def test_errors_through_parse_header(tmp_path, k):
    text, pos, msg = ERRORS[k]
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", text)
    check_located(instantiate_error(h, y), InstantiateError, y, pos, msg)


def test_aliases_count_against_the_budget(notes):
    # 100 notes, each a 400-character expression (a part per 4 characters):
    # ~10^4 each time the anchored note is used; used 100 times
    expr = " + ".join(["n"] * 100)[:400]
    note = "{%s}" % ", ".join("p%d: %s" % (i, expr) for i in range(100))
    text = "annotate:\n  f0: &a %s\n%s" % (note, "".join("  f%d: *a\n" % i for i in range(1, 101)))
    rc, out = notes(text)
    assert rc == 1, out
    # at the expression that went past, in the anchored note
    assert re.match(r"2:\d+: annotate\.f9\d\.p\d+ \(an alias of the node here\) takes "
                    r"instantiate\.yml past 1000000 ", out), out
    # the same under the limit
    rc, out = notes(text.rsplit("  f90:", 1)[0])
    assert rc == 0, out[-2000:]
    assert out.count("\nfunc ") == 90
