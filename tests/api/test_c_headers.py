"""Ordinary C headers (bindthem._services.preprocess): a header whose types,
enums and constants come through #include, #define and typedef, bound by
load() and build() with ``cpp="auto"``, ``True`` and ``False`` and
``cppflags``; the preprocessor chosen ($CPP, cc, c++) and its failures; the
Library's constants and enum classes (not over a kernel's name); a pickle of
a preprocessed Library bound where no preprocessor exists; a package that
ships the preprocessed Plan; the stub and ``bindthem show``; and zlib from
the system."""

import ast
import json
import os
import pickle
import shutil
import subprocess
import sys
import warnings
import zlib

import numpy as np
import pytest

from sources import CC, run
from support import python_env

import bindthem
from bindthem import stubs
from bindthem.__main__ import main as cli
from bindthem._services import preprocess

TYPES_H = """\
/* mylib's types, in a file of their own. */
#ifndef MYLIB_TYPES_H
#define MYLIB_TYPES_H
#include <stdint.h>
typedef int32_t my_int;
typedef double my_real;
typedef enum { MODE_FAST = 1, MODE_SAFE = 3 } my_mode;
enum shape_kind { SHAPE_POINT, SHAPE_LINE };
#define MYLIB_TYPES_LIMIT 7
#endif
"""

MYLIB_H = """\
/* mylib: a small C library, declared as ordinary C headers are. */
#ifndef MYLIB_H
#define MYLIB_H
#include <stddef.h>
#include "common_types.h"

#define MYLIB_VERSION "1.2.3"
#define MYLIB_MAX 64
#define MYLIB_MASK (1 << 4)
#define MYLIB_TWICE(x) ((x) * 2)

#ifdef __cplusplus
extern "C" {
#endif

enum color { RED, GREEN = 5, BLUE };
typedef enum { OPT_A = 1, OPT_B = 2, OPT_C = 4 } options_t;

/* Adds two integers. */
my_int mylib_add(my_int a, my_int b);
/* The sum of x. */
my_real mylib_sum(const my_real *x, size_t x_size);
/* The library's version. */
const char *mylib_version(void);
/* The length of s, in bytes. */
size_t mylib_length(const char *s);
/* Twice a color's value. */
int mylib_color(enum color c);
/* A mode's value. */
int mylib_mode(my_mode m);
/* The options set. */
int mylib_options(options_t o);
#ifdef MYLIB_EXTRA
/* Only with -DMYLIB_EXTRA. */
int mylib_extra(void);
#endif

#ifdef __cplusplus
}
#endif
#endif
"""

MYLIB_C = """\
#include <string.h>
#define MYLIB_EXTRA
#include "mylib.h"
my_int mylib_add(my_int a, my_int b) { return a + b; }
my_real mylib_sum(const my_real *x, size_t x_size)
{
    my_real s = 0;
    for (size_t i = 0; i < x_size; i++)
        s += x[i];
    return s;
}
const char *mylib_version(void) { return MYLIB_VERSION; }
size_t mylib_length(const char *s) { return strlen(s); }
int mylib_color(enum color c) { return 2 * (int)c; }
int mylib_mode(my_mode m) { return (int)m; }
int mylib_options(options_t o) { return (int)o; }
int mylib_extra(void) { return 42; }
"""

ALL = ["mylib_add", "mylib_color", "mylib_length", "mylib_mode", "mylib_options", "mylib_sum",
       "mylib_version"]


@pytest.fixture(scope="module")
def clib(tmp_path_factory):
    """(library, header): mylib compiled with cc, its headers beside it."""
    d = tmp_path_factory.mktemp("mylib")
    (d / "common_types.h").write_text(TYPES_H)
    (d / "mylib.h").write_text(MYLIB_H)
    (d / "mylib.c").write_text(MYLIB_C)
    lib = str(d / "libmylib.so")
    run([CC, "-shared", "-fPIC", "-O1", str(d / "mylib.c"), "-o", lib])
    return lib, str(d / "mylib.h")


@pytest.fixture(autouse=True)
def _no_cpp_variable(monkeypatch):
    monkeypatch.delenv("CPP", raising=False)


def load_quietly(*args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib = bindthem.load(*args, **kwargs)
    return lib, [str(w.message) for w in caught if issubclass(w.category, bindthem.BindWarning)]


# --- which reading is bound -------------------------------------------------------------

def test_auto_reads_an_ordinary_header_through_the_preprocessor(clib):
    library, header = clib
    lib, warned = load_quietly(library, header)
    assert lib.__all__ == ALL and warned == []
    how = bindthem.info(lib).preprocessing
    assert how.used and how.mode == "auto" and how.failed is None
    assert how.command == ["cc", "-E", "-dD", "-C", header]
    assert bindthem.info(lib).preprocessed
    assert lib.metadata["preprocessed"] is True
    assert lib.mylib_add(2, 3) == 5
    assert lib.mylib_sum(np.arange(5.0)) == 10.0
    assert lib.mylib_version() == "1.2.3"
    assert lib.mylib_length("h\u00e9llo") == 6  # str: its UTF-8 bytes
    assert lib.mylib_length(b"ab") == 2
    assert lib.mylib_mode(3) == 3


def test_declarations_keep_their_own_lines_and_docs(clib):
    library, header = clib
    lib, _ = load_quietly(library, header)
    assert lib.mylib_add.__doc__.strip().endswith("Adds two integers.")
    src = bindthem.getsource(lib.mylib_add)
    assert "my_int mylib_add(my_int a, my_int b);" in src
    line = MYLIB_H.splitlines().index("my_int mylib_add(my_int a, my_int b);") + 1
    decl = [d for d in lib.metadata["declarations"] if d["name"] == "mylib_add"][0]
    assert decl["line"] == line
    assert bindthem.getsource(lib) == MYLIB_H


def test_cpp_false_reads_the_header_as_written(clib):
    library, header = clib
    lib, warned = load_quietly(library, header, cpp=False)
    assert set(lib.__all__) < set(ALL) | {"mylib_extra"}
    assert "mylib_add" not in lib.__all__  # my_int comes from the included file
    assert len(warned) == 1 and "my_int" in warned[0]
    how = bindthem.info(lib).preprocessing
    assert how.command is None and not how.used
    assert not bindthem.info(lib).preprocessed


def test_cpp_true_and_cppflags(clib):
    library, header = clib
    for flags, listed in (("-DMYLIB_EXTRA", ["-DMYLIB_EXTRA"]),
                          (["-D", "MYLIB_EXTRA"], ["-D", "MYLIB_EXTRA"])):
        lib, warned = load_quietly(library, header, cpp=True, cppflags=flags)
        assert lib.__all__ == sorted(ALL + ["mylib_extra"]) and warned == []
        assert lib.mylib_extra() == 42
        how = bindthem.info(lib).preprocessing
        assert how.mode is True and how.used and how.flags == listed
        assert how.command == ["cc", "-E", "-dD", "-C", *listed, header]


def test_a_header_that_binds_as_written_runs_no_preprocessor(clib, tmp_path, monkeypatch):
    library, _ = clib
    plain = tmp_path / "plain.h"
    plain.write_text("/* Adds. */\nint mylib_add(int a, int b);\n")
    monkeypatch.setenv("CPP", str(tmp_path / "no-such-preprocessor"))
    lib, warned = load_quietly(library, str(plain))
    assert lib.__all__ == ["mylib_add"] and warned == []
    assert bindthem.info(lib).preprocessing.command is None
    assert not bindthem.info(lib).preprocessed


def test_a_header_that_declares_nothing_as_written_is_preprocessed(clib, tmp_path):
    """fftw3.h's way: every declaration made by a macro. As written the
    header declares nothing (which binds "everything" vacuously); auto mode
    reads it after the preprocessor."""
    library, _ = clib
    macro = tmp_path / "macro.h"
    macro.write_text("#define API(name) int mylib_##name(int a, int b);\nAPI(add)\n")
    lib, _ = load_quietly(library, str(macro))
    assert lib.__all__ == ["mylib_add"] and lib.mylib_add(2, 3) == 5
    assert bindthem.info(lib).preprocessing.used


def test_a_macro_in_the_way_prefers_the_preprocessor(clib, tmp_path):
    """regex.h's way: as written, glibc's attribute macro after regcomp's
    parameters makes the declaration unreadable, while the #ifdef'd GNU
    extensions read fine, so the text as written binds more; auto mode still
    reads the header as a compiler does, where the POSIX function is read and
    the extensions need their -D, as in C."""
    library, _ = clib
    h = tmp_path / "posix.h"
    h.write_text("#define MY_ACCESS(spec)\n"
                 "#ifdef MY_GNU_SOURCE\n"
                 "int mylib_extra(void);\n"
                 "size_t mylib_length(const char *s);\n"
                 "#endif\n"
                 "/* Adds. */\n"
                 "int mylib_add(int a, int b) MY_ACCESS((__read_only__, 1, 2));\n")
    written = bindthem.parse_header(str(h))
    assert {s["name"]: s["unreadable"] for s in written["skipped"]} == {"mylib_add": True}
    lib, warned = load_quietly(library, str(h))
    assert lib.__all__ == ["mylib_add"] and lib.mylib_add(2, 3) == 5 and warned == []
    assert bindthem.info(lib).preprocessing.used
    lib, _ = load_quietly(library, str(h), cppflags=["-DMY_GNU_SOURCE", "-include", "stddef.h"])
    assert lib.__all__ == ["mylib_add", "mylib_extra", "mylib_length"]
    assert lib.mylib_extra() == 42 and lib.mylib_length("four") == 4


def test_a_type_the_header_does_not_declare_says_how_to_include_it(clib, tmp_path):
    """jpeglib.h's way: it uses stdio.h's FILE without including stdio.h
    (its users include it first). The reason says how; with it, it binds."""
    library, _ = clib
    h = tmp_path / "needs_stdio.h"
    h.write_text("#include <stddef.h>\n/* Adds. */\nint mylib_add(int a, int b);\n"
                 "/* Writes to f. */\nint mylib_write(FILE *f);\n")
    lib, _ = load_quietly(library, str(h), cpp=True)
    (why,) = [x["reason"] for x in bindthem.info(lib).left_out if x["name"] == "mylib_write"]
    assert why == ("unbindable: parameter 'f' has unknown type 'FILE', which neither the header "
                   "nor what it includes declares: include the header that does first "
                   "(cppflags=['-include', 'stdio.h'] for FILE)")
    lib, _ = load_quietly(library, str(h), cpp=True, cppflags=["-include", "stdio.h"])
    (why,) = [x["reason"] for x in bindthem.info(lib).left_out if x["name"] == "mylib_write"]
    assert why.startswith("not in ")  # read now: only the library lacks it


def test_argument_checks(clib):
    library, header = clib
    with pytest.raises(TypeError, match="cpp="):
        bindthem.load(library, header, cpp="yes")
    with pytest.raises(TypeError, match="cppflags="):
        bindthem.load(library, header, cppflags=3)


# --- the preprocessor -------------------------------------------------------------------

def test_which_preprocessor(monkeypatch):
    assert preprocess.command("/x/a.h", []) == ["cc", "-E", "-dD", "-C", "/x/a.h"]
    for ext in (".hpp", ".hh", ".hxx", ".H"):
        assert preprocess.command("/x/a" + ext, [])[:2] == ["c++", "-E"]
    assert preprocess.command("/x/a.h", ["-x", "c++"]) == [
        "c++", "-E", "-dD", "-C", "-x", "c++", "/x/a.h"]
    monkeypatch.setenv("CPP", "clang -E --target='x86_64 linux'")
    assert preprocess.command("/x/a.hpp", ["-DA=1"]) == [
        "clang", "-E", "--target=x86_64 linux", "-dD", "-C", "-DA=1", "/x/a.hpp"]
    assert preprocess.flag_list("-DA='1 2' -I inc") == ["-DA=1 2", "-I", "inc"]


def test_a_failing_preprocessor(clib, monkeypatch, tmp_path):
    library, header = clib
    monkeypatch.setenv("CPP", "cc -E -include %s" % (tmp_path / "missing.h"))
    with pytest.raises(bindthem.BuildError) as e:
        bindthem.load(library, header, cpp=True)
    assert "missing.h" in e.value.output and e.value.command[:4] == ["cc", "-E", "-include",
                                                                     str(tmp_path / "missing.h")]
    assert "missing.h" in str(e.value) and "cpp=True" in str(e.value)
    lib, warned = load_quietly(library, header)  # auto: as written, and the warning says why
    assert "mylib_add" not in lib.__all__
    assert len(warned) == 1 and "the C preprocessor" in warned[0] and "failed" in warned[0]
    assert "exited with status" in warned[0]
    assert "exited with status" in bindthem.info(lib).preprocessing.failed


def test_no_preprocessor(clib, monkeypatch, tmp_path):
    library, header = clib
    monkeypatch.setenv("CPP", str(tmp_path / "no-cpp"))
    lib, warned = load_quietly(library, header)
    assert "mylib_add" not in lib.__all__ and "not found" in warned[0]
    with pytest.raises(bindthem.BuildError, match="not found"):
        bindthem.load(library, header, cpp=True)


# --- constants and enums ----------------------------------------------------------------

def test_constants_and_enums_are_attributes(clib):
    library, header = clib
    lib, _ = load_quietly(library, header)
    assert (lib.MYLIB_VERSION, lib.MYLIB_MAX, lib.MYLIB_MASK) == ("1.2.3", 64, 16)
    for absent in ("MYLIB_TWICE", "MYLIB_TYPES_LIMIT", "MODE_FAST", "SHAPE_POINT", "shape_kind"):
        assert not hasattr(lib, absent), absent  # a macro, or the included file's own
    import enum

    assert issubclass(lib.color, enum.IntEnum) and not issubclass(lib.color, enum.IntFlag)
    assert [(m.name, m.value) for m in lib.color] == [("RED", 0), ("GREEN", 5), ("BLUE", 6)]
    assert lib.RED is lib.color.RED and lib.BLUE == 6
    assert issubclass(lib.options_t, enum.IntFlag)
    assert lib.OPT_A | lib.OPT_C == 5 and isinstance(lib.OPT_A | lib.OPT_C, lib.options_t)
    # an enum of an included file that a function takes: its class, not its members
    assert issubclass(lib.my_mode, enum.IntEnum) and lib.my_mode.MODE_SAFE == 3
    assert not issubclass(lib.my_mode, enum.IntFlag)
    assert lib.mylib_color(lib.BLUE) == 12
    assert lib.mylib_options(lib.OPT_A | lib.OPT_C) == 5
    assert lib.mylib_mode(lib.my_mode.MODE_SAFE) == 3
    names = dir(lib)
    for n in ("MYLIB_MAX", "RED", "color", "options_t", "my_mode", "mylib_add"):
        assert n in names
    assert "MYLIB_MAX" not in lib.__all__ and "color" not in lib.__all__
    assert pickle.loads(pickle.dumps(lib.BLUE)) == 6  # a member pickles as its int


def test_a_kernel_keeps_its_name(clib, tmp_path):
    library, _ = clib
    h = tmp_path / "clash.h"
    h.write_text("#include <stdint.h>\n/* Adds. */\nint32_t mylib_add(int32_t a, int32_t b);\n"
                 "#define mylib_add 7\n#define metadata 1\n#define OTHER 2\n")
    lib, _ = load_quietly(library, str(h), cpp=True)
    assert lib.mylib_add(1, 2) == 3 and lib.OTHER == 2
    assert isinstance(lib.metadata, dict)
    assert set(bindthem.info(lib).named) == {"OTHER"}


# --- pickles, packages, builds ----------------------------------------------------------

def test_pickle_binds_without_a_preprocessor(clib, tmp_path, cache_dir):
    library, header = clib
    lib, _ = load_quietly(library, header)
    blob = tmp_path / "lib.pickle"
    blob.write_bytes(pickle.dumps(lib))
    code = (
        "import pickle, shutil, sys, bindthem\n"
        "assert shutil.which('cc') is None and shutil.which('cpp') is None\n"
        "lib = pickle.loads(open(sys.argv[1], 'rb').read())\n"
        "assert lib.mylib_add(2, 3) == 5 and lib.mylib_version() == '1.2.3'\n"
        "assert lib.MYLIB_MAX == 64 and lib.color.BLUE == 6 and lib.OPT_B == 2\n"
        "assert bindthem.info(lib).preprocessed\n"
        "assert 'my_int mylib_add(my_int a, my_int b);' in bindthem.getsource(lib.mylib_add)\n"
        "print(sorted(lib.__all__))\n")
    env = python_env(PATH="", BINDTHEM_CACHE=cache_dir)
    r = subprocess.run([sys.executable, "-c", code, str(blob)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == repr(ALL)


KERN_TYPES_H = """\
#include <stdint.h>
typedef int32_t k_int;
typedef double k_real;
"""

KERN_H = """\
/* Kernels whose types come from another file. */
#include <stdlib.h>
#include <string.h>
#include "kern_types.h"
#define KERN_SCALE 3

/* Scales x by KERN_SCALE. */
k_int kern_scale(k_int x) { return x * KERN_SCALE; }

/* The sum of x. */
k_real kern_sum(const k_real *x, const int x_size)
{
    k_real s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

/* The length of s. */
int kern_len(const char *s) { return (int)strlen(s); }
"""


def _kern(folder):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kern_types.h").write_text(KERN_TYPES_H)
    (folder / "kern.h").write_text(KERN_H)
    return str(folder / "kern.h")


def test_build_preprocesses_as_cxx(tmp_path, cache_dir):
    header = _kern(tmp_path / "src")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no compiler warning, nothing left out
        lib = bindthem.build(header, cache_dir=cache_dir)
    assert lib.__all__ == ["kern_len", "kern_scale", "kern_sum"]
    assert lib.kern_scale(4) == 12 and lib.kern_sum(np.arange(5.0)) == 10.0
    assert lib.kern_len("abc") == 3 and lib.KERN_SCALE == 3
    how = bindthem.info(lib).preprocessing
    assert how.used and how.command[:2] == ["c++", "-E"]
    with pytest.warns(bindthem.BindWarning, match="k_int"):
        assert bindthem.build(header, cache_dir=cache_dir, cpp=False).__all__ == ["kern_len"]


def test_a_package_ships_the_preprocessed_plan(tmp_path, cache_dir):
    from bindthem.package import package_library

    pkg = tmp_path / "site" / "kpkg"
    _kern(pkg)
    (pkg / "__init__.py").write_text("")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        written = package_library(str(pkg), "kern.h", module="kpkg.kern")
    pre = pkg / "kern.bindthem.i"
    assert str(pre) in written and pre.read_bytes().startswith(b"# ")
    manifest = json.loads((pkg / "kern.bindthem.json").read_text())
    assert manifest["preprocessed"] == "kern.bindthem.i"
    stub = (pkg / "kern.pyi").read_text()
    assert "def kern_scale(x: int) -> int" in stub and "KERN_SCALE: Final[int]" in stub
    code = ("import shutil, bindthem\n"
            "assert shutil.which('cc') is None\n"
            "lib = bindthem.load_package('kpkg', 'kern.h')\n"
            "assert lib.kern_scale(2) == 6 and lib.KERN_SCALE == 3\n"
            "assert 'k_int kern_scale' in bindthem.getsource(lib.kern_scale)\n"
            "print(lib.__all__)\n")
    env = python_env(PATH="", BINDTHEM_CACHE=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(tmp_path / "site")])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == repr(["kern_len", "kern_scale", "kern_sum"])
    pre.write_bytes(pre.read_bytes() + b"\nint kern_more(int a);\n")  # edited: refused
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode != 0 and "stale" in r.stderr and "kern.bindthem.i" in r.stderr


# --- the stub and the command line ------------------------------------------------------

def test_stub_text(clib):
    _, header = clib
    text = stubs.render(header)
    ast.parse(text)
    assert "import enum\nfrom typing import Final, overload\n" in text
    assert "class color(enum.IntEnum):\n    RED = 0\n    GREEN = 5\n    BLUE = 6\n" in text
    assert "class options_t(enum.IntFlag):\n    OPT_A = 1\n    OPT_B = 2\n    OPT_C = 4\n" in text
    assert "class my_mode(enum.IntEnum):" in text
    for line in ("MYLIB_VERSION: Final[str]", "MYLIB_MAX: Final[int]", "RED: Final[color]",
                 "OPT_C: Final[options_t]", "def mylib_length(s: str | bytes) -> int:",
                 "def mylib_version() -> str | None:",
                 "def mylib_add(a: int, b: int) -> int:"):
        assert line in text, line
    assert "MODE_FAST: Final" not in text and "shape_kind" not in text
    with pytest.warns(bindthem.BindWarning, match="my_int"):
        assert stubs.render(header, cpp=False).count("def ") < text.count("def ")


def test_stub_of_a_dialect_header_is_unchanged(tmp_path):
    h = tmp_path / "k.h"
    h.write_text("/* Scales. */\nvoid scale(double x[], const int x_size, double a);\n")
    text = stubs.render(str(h))
    assert "\nfrom typing import overload\n\nimport numpy\n" in text
    assert "enum" not in text and "Final" not in text


def test_show_lists_constants_and_enums(clib, capsys):
    _, header = clib
    assert cli(["show", header]) == 0
    out = capsys.readouterr().out
    assert "mylib_add(a, b)" in out
    assert "constants:\n    MYLIB_VERSION = '1.2.3'  # line 7\n    MYLIB_MAX = 64" in out
    assert "enums:" in out and "IntEnum color (" in out and "IntFlag options_t (" in out
    assert "        GREEN = 5" in out
    assert "IntEnum my_mode (" in out and "shape_kind" not in out  # included: used, unused
    assert cli(["show", header, "--cpp", "never"]) == 0
    assert "mylib_add(a, b)" not in capsys.readouterr().out


def test_display_lists_constants_and_enums(clib):
    library, header = clib
    lib, _ = load_quietly(library, header)
    from bindthem._services import display

    text = display.library_text(lib)
    assert "through the C preprocessor" in text and "MYLIB_MAX = 64" in text
    assert "IntFlag options_t" in text and "shape_kind" not in text
    html = display.library_html(lib)
    assert "MYLIB_VERSION" in html and "OPT_C = 4" in html


# --- a system library -------------------------------------------------------------------

ZLIB_H = "/usr/include/zlib.h"


@pytest.mark.skipif(not os.path.exists(ZLIB_H) or shutil.which("cc") is None,
                    reason="needs zlib's header (zlib1g-dev) and cc")
def test_zlib():
    lib, _ = load_quietly("libz.so.1", ZLIB_H)
    assert bindthem.info(lib).preprocessing.used
    assert lib.zlibVersion() == zlib.ZLIB_RUNTIME_VERSION
    assert isinstance(lib.zlibCompileFlags(), int)
    assert lib.Z_OK == 0 and lib.Z_DEFLATED == 8 and isinstance(lib.ZLIB_VERSION, str)
    assert "zlibVersion" in bindthem.getsource(lib.zlibVersion)


INLINE_H = """\
/* a prototype, then GNU's extern inline definition (GMP's mpz_get_ui): one function */
long twice(long x);
extern __inline__ __attribute__((__gnu_inline__)) long twice(long x) { return 2 * x; }
/* only an extern inline definition: the library has the symbol */
extern __inline__ __attribute__((__gnu_inline__)) long thrice(long x) { return 3 * x; }
/* declared twice: one function */
long add1(long x);
long add1(long x);
/* a static inline helper: never exported, left out deliberately */
static inline long helper(long x) { return x; }
"""

INLINE_C = """\
long twice(long x) { return 2 * x; }
long thrice(long x) { return 3 * x; }
long add1(long x) { return x + 1; }
"""


def test_extern_inline_and_redeclared_functions(tmp_path):
    """`extern inline` (gnu_inline) is a definition whose symbol the library
    exports: bound; a function declared twice is one function, bound once
    (not two overloads of one C name, which neither would bind); a static
    inline helper stays out, as deliberate."""
    (tmp_path / "inl.h").write_text(INLINE_H)
    (tmp_path / "inl.c").write_text(INLINE_C)
    lib = str(tmp_path / "libinl.so")
    run([CC, "-shared", "-fPIC", "-O1", str(tmp_path / "inl.c"), "-o", lib])
    m, _ = load_quietly(lib, str(tmp_path / "inl.h"))
    assert (m.twice(4), m.thrice(4), m.add1(4)) == (8, 12, 5)
    assert len(m.twice.overloads) == 1 and len(m.add1.overloads) == 1
    left = {x["name"]: x for x in bindthem.info(m).left_out}
    assert set(left) == {"helper"} and left["helper"]["deliberate"]
