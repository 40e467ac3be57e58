"""Malformed inputs: each error's type, message and location, through
bindthem.parse_header. Driven by tests/data/bad_headers/EXPECTED.txt (and
tests/data/bad_yaml/EXPECTED.txt, whose errors test_yaml.py checks: the same
tables the C drivers check)."""

import gc
import os
import shutil
import subprocess
import sys

import pytest

from sources import DATA, ROOT
from support import SCALE_ROWS_H as HDR
from support import check_located as check
from support import instantiate_error
from support import read_table as _table
from support import write_file as _write

import bindthem
from bindthem import BindError, HeaderError, InstantiateError

BAD_H = os.path.join(DATA, "bad_headers")
BAD_Y = os.path.join(DATA, "bad_yaml")
EXAMPLES = os.path.join(ROOT, "examples")


BAD_HEADERS = _table(os.path.join(BAD_H, "EXPECTED.txt"), 3)
BAD_YAML = _table(os.path.join(BAD_Y, "EXPECTED.txt"), 4)


def test_corpora_complete():
    """Every corpus file is in its EXPECTED.txt, and there are enough of them."""
    assert len(BAD_HEADERS) >= 15
    assert sorted(r[0] for r in BAD_HEADERS) == sorted(
        f for f in os.listdir(BAD_H) if f.endswith(".h"))
    listed = {r[0] for r in BAD_YAML}
    assert listed == {f for f in os.listdir(BAD_Y) if f.endswith(".yml")}
    headers = {r[1].split()[0] for r in BAD_YAML if r[1] != "-"}
    assert headers == {f for f in os.listdir(BAD_Y) if f.endswith(".h")}


@pytest.mark.parametrize("name,pos,msg", BAD_HEADERS, ids=[r[0] for r in BAD_HEADERS])
def test_bad_header(name, pos, msg):
    path = os.path.join(BAD_H, name)
    with pytest.raises(HeaderError) as ei:
        bindthem.parse_header(path, strict=True)
    check(ei.value, HeaderError, path, pos, msg)
    # a YAML that would be fine changes nothing: the header is read first
    with pytest.raises(HeaderError) as ei:
        bindthem.parse_header(path, os.path.join(BAD_Y, "near_miss.yml"), strict=True)
    check(ei.value, HeaderError, path, pos, msg)


@pytest.mark.parametrize("name,pos,msg", BAD_HEADERS, ids=[r[0] for r in BAD_HEADERS])
def test_bad_header_recorded_outside_strict(name, pos, msg):
    """Outside strict mode the same error is the reason of an unbindable
    declaration (the first one recorded), and the header is still read."""
    path = os.path.join(BAD_H, name)
    meta = bindthem.parse_header(path)
    bad = [d for d in meta["declarations"] if not d["bindable"]]
    assert bad, meta["declarations"]
    want = "cannot read the declaration: %s:%s: " % (path, pos)
    first = bad[0]["reason"].encode("utf-8", "backslashreplace").decode()
    assert first.startswith(want), (first, want)
    assert msg.encode("latin-1", "backslashreplace").decode("latin-1")[:10] in first or \
        msg[:10] in first
    skipped = {s["name"]: s["reason"] for s in meta["skipped"]}
    assert skipped[bad[0]["name"]] == "unbindable: " + bad[0]["reason"]


def test_loops_leave_nothing_behind():
    """Errors raise cleanly again and again: no partial result, no leaked
    references (the arena is freed on every exit)."""
    cases = [(os.path.join(BAD_H, r[0]), None) for r in BAD_HEADERS]
    cases += [(os.path.join(BAD_Y, "arity.h"), os.path.join(BAD_Y, r[0]))
              for r in BAD_YAML if r[1] == "-" or r[1] == "arity.h"]
    good = (os.path.join(EXAMPLES, "myheader.h"), os.path.join(EXAMPLES, "instantiate.yml"))

    def once():
        for h, y in cases:
            try:
                bindthem.parse_header(h, y, strict=True)
            except BindError:
                pass
            else:
                raise AssertionError("no error for %s %s" % (h, y))
        assert bindthem.parse_header(*good)["functions"][0]["name"] == "myfunc"

    for _ in range(3):   # warm up caches, interned strings, ...
        once()
    gc.collect()
    total = getattr(sys, "gettotalrefcount", None)
    before = total() if total else len(gc.get_objects())
    for _ in range(50):
        once()
    gc.collect()
    after = total() if total else len(gc.get_objects())
    assert after - before < 50, (before, after)


def test_exception_classes():
    assert issubclass(HeaderError, BindError) and issubclass(InstantiateError, BindError)
    assert not issubclass(HeaderError, InstantiateError)
    assert not issubclass(InstantiateError, HeaderError)


def test_nonexistent_files(tmp_path):
    missing = str(tmp_path / "nope.h")
    with pytest.raises(FileNotFoundError) as ei:
        bindthem.parse_header(missing)
    assert ei.value.filename == missing and ei.value.errno == 2
    good = os.path.join(EXAMPLES, "myheader.h")
    with pytest.raises(FileNotFoundError) as ei:
        bindthem.parse_header(good, str(tmp_path / "nope.yml"))
    assert ei.value.filename == str(tmp_path / "nope.yml")
    # a directory is not MemoryError
    with pytest.raises(IsADirectoryError) as ei:
        bindthem.parse_header(str(tmp_path))
    assert ei.value.filename == str(tmp_path)
    with pytest.raises(IsADirectoryError):
        bindthem.parse_header(good, str(tmp_path))
    # bytes and PathLike paths are accepted
    assert bindthem.parse_header(good.encode())["declarations"][0]["name"] == "myfunc"
    import pathlib
    assert bindthem.parse_header(pathlib.Path(good))["declarations"]
    with pytest.raises(TypeError):
        bindthem.parse_header(42)


def test_strict_missing_and_shared_near_miss(tmp_path):
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", "- types:\n    - [int, double]\n  functions:\n"
                                  "    - scale_rows\n    - other_header_fn\n")
    # shared YAML (default): the name another header declares is 'missing'
    m = bindthem.parse_header(h, y)
    assert m["missing"] == ["other_header_fn"]
    # the listed ones in YAML order, then the unlisted untemplated ones (as
    # BindThem's generator binds them)
    assert [f["name"] for f in m["functions"]] == ["scale_rows", "helper_function"]
    # strict: an error at the name in the YAML
    e = instantiate_error(h, y, strict=True)
    assert (e.filename, e.lineno, e.colno) == (y, 5, 7)
    assert "'other_header_fn' is listed in instantiate.yml but not declared in %s" % h in str(e)
    # near miss of a header function the YAML doesn't list: an error even
    # when shared (a typo would otherwise leave it silently unbound)
    y2 = _write(tmp_path, "k2.yml", "- types:\n    - [int, double]\n  functions:\n"
                                    "    - scale_rows\n- types: null\n  functions:\n"
                                    "    - Helper_functoin\n")
    e = instantiate_error(h, y2)
    assert (e.filename, e.lineno, e.colno) == (y2, 7, 7)
    assert "did you mean 'helper_function' (declared at %s:6:5)?" % h in str(e)
    # ... but not of a listed one: pyamg lists gauss_seidel_nr and _ne, and
    # each header declares some of the YAML's names only
    y3 = _write(tmp_path, "k3.yml", "- types:\n    - [int, double]\n  functions:\n"
                                    "    - scale_rows\n    - scale_rowz\n")
    assert bindthem.parse_header(h, y3)["missing"] == ["scale_rowz"]
    # a short name is a near miss at one edit only: byrf is two from by_ref
    y4 = _write(tmp_path, "k4.yml", "- types:\n    - [int, double]\n  functions:\n"
                                    "    - scale_rows\n- types: null\n  functions:\n"
                                    "    - byrf\n    - abc\n")
    assert bindthem.parse_header(h, y4)["missing"] == ["byrf", "abc"]


def test_unbindable_listed_gives_reason(tmp_path):
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", "- types: null\n  functions:\n    - by_ref\n")
    e = instantiate_error(h, y)
    assert (e.filename, e.lineno, e.colno) == (y, 3, 7)
    assert "lists 'by_ref', which the header declares at %s:4:6" % h in str(e)
    assert "parameter 'x' is a pointer to pointer (double **)" in str(e)


def test_wrong_tuple_arity(tmp_path):
    h = _write(tmp_path, "k.h", HDR)
    y = _write(tmp_path, "k.yml", "- types:\n    - [int, double]\n    - [int, double, float]\n"
                                  "  functions:\n    - scale_rows\n")
    e = instantiate_error(h, y)
    assert (e.lineno, e.colno) == (3, 7)
    assert ("'scale_rows' takes 2 template parameters <class I, class T> but "
            "[0].types[1] gives 3: [int, double, float] (declared at %s:2:6)" % h) in str(e)


ODD_FILES = """\
import os, sys
import bindthem, bindthem.cuda
d = sys.argv[1]
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo)
good_h, good_y = sys.argv[2], sys.argv[3]
for f, args in [(bindthem.parse_header, (fifo,)), (bindthem.parse_header, (good_h, fifo)),
                (bindthem.parse_header, ("/dev/null",)), (bindthem.load, (fifo, good_h)),
                (bindthem.build, (fifo,)), (bindthem.cuda.load, (fifo, good_h))]:
    try:
        f(*args)
    except OSError as e:
        print(type(e).__name__, e.errno, e.filename == args[-1] or e.filename == args[0], e)
    else:
        print("accepted", args)
"""


def test_fifo_and_devices_are_refused(tmp_path):
    # in a subprocess: a regression would hang on the FIFO, not the suite
    import subprocess

    from support import python_env
    proc = subprocess.run([sys.executable, "-c", ODD_FILES, str(tmp_path),
                           os.path.join(EXAMPLES, "myheader.h"),
                           os.path.join(EXAMPLES, "instantiate.yml")],
                          capture_output=True, text=True, timeout=60, env=python_env())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 6, proc.stdout
    regular = ("cannot read: the file is a %s; bindthem reads headers and instantiate.yml from "
               "regular files")
    for line, what in zip(lines, ["FIFO", "FIFO", "character device", None, "FIFO", None]):
        assert line.startswith("OSError 22 True "), line
        if what:
            assert regular % what in line, line
        else:
            assert "cannot load: the file is not a regular file (a FIFO)" in line, line


NEAR_HDR = """\
int total(const int n);
int sum(const int n);
int ab(const int n);
"""


@pytest.mark.parametrize("typo,meant", [
    ("totl", "total"),   # 4 characters: one edit
    ("Total", "total"),  # case only
    ("totle", "total"),  # 5 characters: two edits
    ("smu", "sum"),      # a transposition is one edit
    ("sun", "sum"),
    ("ac", "ab"),
])
def test_yaml_near_miss_at_every_length(tmp_path, typo, meant):
    h = _write(tmp_path, "near.h", NEAR_HDR)
    y = _write(tmp_path, "near.yml", "- types: null\n  functions: [%s]\n" % typo)
    for strict in (False, True):  # an error either way: a typo never drops a function silently
        e = instantiate_error(h, y, strict=strict)
        assert "'%s' is listed in instantiate.yml but not declared in %s; did you mean '%s'" \
            % (typo, h, meant) in str(e)


@pytest.mark.parametrize("far", ["tot", "x", "abcd", "summary"])
def test_yaml_far_names_are_not_near_misses(tmp_path, far):
    # two edits from a name of 4 characters or fewer, three from a longer one
    h = _write(tmp_path, "near.h", NEAR_HDR)
    y = _write(tmp_path, "near.yml", "- types: null\n  functions: [total, %s]\n" % far)
    assert bindthem.parse_header(h, y)["missing"] == [far]


def test_symbol_near_miss_of_a_short_name(tmp_path):
    if not shutil.which("gcc"):
        pytest.skip("needs gcc")
    h = _write(tmp_path, "sym.h", 'extern "C" int totl(const int n);\n')
    y = _write(tmp_path, "sym.yml", "- types: null\n  functions: [totl]\n")
    c = _write(tmp_path, "sym.c", "int total(const int n) { return n; }\n")
    lib = str(tmp_path / "libsym.so")
    subprocess.run(["gcc", "-x", "c", "-fPIC", "-shared", c, "-o", lib], check=True)
    with pytest.raises(bindthem.SymbolError, match=r"totl: totl \(symbol totl\) is not in .*; it "
                       r"has no function of that name; did you mean total\?"):
        bindthem.load(lib, h, y)
