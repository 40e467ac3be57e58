"""The platform-defined types (char's signedness, long's size, the <stdint.h>
and <stddef.h> typedefs) against the platform's own C facts.

The facts come from a small C program the system cc compiles and runs
(tests/support/support.py, c_facts), so the same test is right on x86-64 (char
signed, int8) and aarch64 Linux (char unsigned, uint8). Each type is checked
in bindthem's table and through real calls, on the direct path and on libffi.
BINDTHEM_TEST_CFLAGS (e.g. -funsigned-char) adds flags to the facts program
and the kernel library; test_unsigned_char_build uses it to run this file
against an extension and a library both built with gcc -funsigned-char.
"""

import os
import shutil
import subprocess
import sys
import tarfile

import numpy as np
import pytest

from sources import ROOT, SUPPORT
from support import c_facts, python_env

import bindthem
from bindthem import _core

CFLAGS = os.environ.get("BINDTHEM_TEST_CFLAGS", "").split()
CXX = os.environ.get("CXX", "g++")
ROWS = {t["c"]: t for t in _core.scalar_types()}
TYPEDEFS = ["int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
            "uint64_t", "size_t", "ssize_t", "ptrdiff_t", "intptr_t", "uintptr_t"]
SCALARS = ["char", "signed char", "unsigned char", "long", "unsigned long"] + TYPEDEFS

HEADER = """#include <cstddef>
#include <cstdint>
#include <sys/types.h>
int char_value(char c) { return c; }
char char_from_int(int v) { return (char)v; }
int char_at(const char *p, const int p_size, int i) { return i < p_size ? p[i] : -1000; }
long long widen_char(char c) { return c; }
""" + "".join("%s id_%s(%s a) { return a; }\n" % (t, t.replace(" ", "_"), t) for t in SCALARS)


@pytest.fixture(scope="module")
def facts(tmp_path_factory):
    return c_facts(str(tmp_path_factory.mktemp("facts")), CFLAGS)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    d = tmp_path_factory.mktemp("platform")
    h = d / "platform.h"
    h.write_text(HEADER)
    (d / "platform.cpp").write_text('#include "platform.h"\n')
    so = d / "libplatform.so"
    subprocess.run([CXX, "-std=c++17", "-O1", "-fPIC", "-shared", *CFLAGS,
                    str(d / "platform.cpp"), "-o", str(so)], check=True)
    return bindthem.load(str(so), str(h))


@pytest.fixture(params=["direct", "ffi"])
def path(request):
    """Each call test on both call paths (libffi only where a platform has no direct one)."""
    _core.force_ffi(request.param == "ffi")
    yield request.param
    _core.force_ffi(False)


def c_range(facts, t):
    """(min, max) of C type t on this platform."""
    t = facts["typedefs"].get(t, t)
    if t == "char":
        return facts["CHAR_MIN"], facts["CHAR_MAX"]
    if t in ("long", "unsigned long"):
        return (facts["LONG_MIN"], facts["LONG_MAX"]) if t == "long" else (0, facts["ULONG_MAX"])
    bits = 8 * {"signed char": 1, "unsigned char": 1, "short": 2, "unsigned short": 2, "int": 4,
                "unsigned int": 4, "long long": 8, "unsigned long long": 8}[t]
    return (0, 2**bits - 1) if t.startswith("unsigned") else (-2**(bits - 1), 2**(bits - 1) - 1)


def test_char_row_is_the_platforms(facts):
    row = ROWS["char"]
    signed = facts["CHAR_MIN"] < 0
    assert (row["kind"], row["numpy"], row["typestr"], row["dlpack"]) == (
        ("i", "int8", "|i1", 0) if signed else ("u", "uint8", "|u1", 1))
    assert row["npy_type"] == np.dtype(row["numpy"]).num and row["size"] == 1


def test_long_rows_are_the_platforms(facts):
    n = facts["sizeof_long"]
    for c, kind in (("long", "i"), ("unsigned long", "u")):
        row = ROWS[c]
        assert (row["kind"], row["size"]) == (kind, n)
        assert np.dtype(row["numpy"]) == np.dtype("%s%d" % (kind, n))
        assert np.dtype(row["numpy"]).num == row["npy_type"]  # NumPy's long is C's long


@pytest.mark.parametrize("alias", TYPEDEFS)
def test_typedef_is_the_type_the_c_library_declares(lib, facts, alias):
    target = facts["typedefs"][alias]
    assert getattr(lib, "id_" + alias).overloads == ("%s id_%s(%s a)" % (target, alias, target),)


@pytest.mark.parametrize("t", SCALARS)
def test_range_ends_round_trip(lib, facts, path, t):
    f = getattr(lib, "id_" + t.replace(" ", "_"))
    lo, hi = c_range(facts, t)
    for v in (lo, hi, (lo + hi) // 2):
        r = f(v)
        assert r == v and type(r) is int, (t, v, r)
    for v in (lo - 1, hi + 1):
        with pytest.raises(OverflowError, match="does not fit in"):
            f(v)
    assert _core.force_ffi() == (path == "ffi")


def test_kernel_sees_char_as_it_holds_it(lib, facts, path):
    lo, hi = facts["CHAR_MIN"], facts["CHAR_MAX"]
    signed = lo < 0
    assert lib.char_value(lo) == lo and lib.char_value(hi) == hi
    assert lib.widen_char(lo) == lo  # the kernel widens what it was passed
    # the byte 0xff, from a 1-character str, bytes or int: what a char holding it is
    byte_ff = -1 if signed else 255
    assert lib.char_value("\xff") == lib.char_value(b"\xff") == byte_ff
    assert lib.char_value("A") == 65
    # returns widen as the platform's char does
    assert lib.char_from_int(0xFF) == byte_ff
    assert lib.char_from_int(0x80) == (-128 if signed else 128)
    assert type(lib.char_from_int(0x80)) is int
    # the other sign's end is refused, naming the platform's range
    other = 255 if signed else -128
    with pytest.raises(OverflowError, match=r"char \(%d\.\.%d: char is %s on this platform\)"
                       % (lo, hi, "signed" if signed else "unsigned")):
        lib.char_value(other)


def test_char_array_is_the_platforms_dtype(lib, facts):
    dt = np.dtype(np.int8 if facts["CHAR_MIN"] < 0 else np.uint8)
    a = np.array([facts["CHAR_MIN"], 7, facts["CHAR_MAX"]], dt)
    assert [lib.char_at(a, i) for i in range(3)] == [facts["CHAR_MIN"], 7, facts["CHAR_MAX"]]
    wrong = np.zeros(3, np.uint8 if dt == np.int8 else np.int8)
    with pytest.raises(TypeError, match=dt.name):
        lib.char_at(wrong, 0)


@pytest.mark.parametrize("t", ["wchar_t"])
def test_unportable_types_are_refused(tmp_path, t):
    """wchar_t (signed on x86-64, unsigned on aarch64) is no row of the table:
    refused by name. (long double is one: NumPy's longdouble is the platform's
    C long double on both, tests/core/test_long_double.py.)"""
    h = tmp_path / "u.h"
    h.write_text("%s f(%s a);\nint g(int a);\n" % (t, t))
    with pytest.warns(bindthem.BindWarning, match="f: .*%s" % t):
        lib = bindthem.load(_lib_of_g(tmp_path), str(h))
    with pytest.raises(AttributeError, match=t):
        lib.f


def _lib_of_g(tmp_path):
    src = tmp_path / "u.cpp"
    src.write_text("int g(int a) { return a; }\n")
    so = tmp_path / "libu.so"
    subprocess.run([CXX, "-fPIC", "-shared", str(src), "-o", str(so)], check=True)
    return str(so)


@pytest.mark.skipif(CFLAGS != [] or not shutil.which(os.environ.get("CC", "gcc")),
                    reason="the child run itself, or no C compiler")
def test_unsigned_char_build(tmp_path, facts):
    """This file, against an extension and a kernel library built with
    gcc -funsigned-char (aarch64's char on x86-64)."""
    if facts["CHAR_MIN"] == 0:
        pytest.skip("char is unsigned here already: the run itself is that build")
    build = tmp_path / "uc"
    env = python_env(CFLAGS="-funsigned-char")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "-b", str(build), "-t",
                           str(tmp_path / "uc.o")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with tarfile.open(tmp_path / "py.tar", "w") as tar:  # the Python side beside _core
        tar.add(os.path.join(ROOT, "bindthem"), "bindthem",
                filter=lambda ti: None if ti.name.endswith(".so") or "__pycache__" in ti.name
                else ti)
    with tarfile.open(tmp_path / "py.tar") as tar:
        tar.extractall(build)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(build), SUPPORT]),
               BINDTHEM_TEST_CFLAGS="-funsigned-char", BINDTHEM_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           os.path.abspath(__file__), "-k", "not unsigned_char_build"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]
    out = subprocess.run([sys.executable, "-c", "from bindthem import _core; print("
                          "[t['numpy'] for t in _core.scalar_types() if t['c'] == 'char'][0])"],
                         cwd=str(tmp_path), env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "uint8", out.stderr


C_WIDE = """#include <stddef.h>
#include <uchar.h>
#include <wchar.h>
wchar_t wide_max(void);
wchar_t wide_min(void);
wchar_t wide_id(wchar_t c);
char16_t c16_id(char16_t c);
char32_t c32_id(char32_t c);
/* The sum of the n wide characters of s. */
long wide_sum(const wchar_t *s, const int s_size);
"""


def test_c_wide_character_typedefs(tmp_path):
    """C's wchar_t, char16_t and char32_t are typedefs of the C library
    (stddef.h, uchar.h; wchar_t signed on x86-64, unsigned on aarch64):
    each binds as the integer type it names, in full range, arrays too."""
    h = tmp_path / "wide.h"
    h.write_text(C_WIDE)
    src = tmp_path / "wide.c"
    src.write_text('#include "wide.h"\n'
                   "wchar_t wide_max(void) { return WCHAR_MAX; }\n"
                   "wchar_t wide_min(void) { return WCHAR_MIN; }\n"
                   "wchar_t wide_id(wchar_t c) { return c; }\n"
                   "char16_t c16_id(char16_t c) { return c; }\n"
                   "char32_t c32_id(char32_t c) { return c; }\n"
                   "long wide_sum(const wchar_t *s, const int s_size)\n"
                   "{ long t = 0; for (int i = 0; i < s_size; i++) t += s[i]; return t; }\n")
    so = tmp_path / "libwide.so"
    subprocess.run(["cc", "-std=c11", "-fPIC", "-shared", str(src), "-o", str(so)], check=True)
    lib = bindthem.load(str(so), str(h))
    hi, lo = lib.wide_max(), lib.wide_min()
    assert hi in (2**31 - 1, 2**32 - 1) and lo in (-2**31, 0)
    assert lib.wide_id(hi) == hi and lib.wide_id(lo) == lo
    with pytest.raises(OverflowError):
        lib.wide_id(hi + 1)
    assert lib.c16_id(0xFFFF) == 0xFFFF and lib.c32_id(0xFFFFFFFF) == 0xFFFFFFFF
    with pytest.raises(OverflowError):
        lib.c16_id(-1)
    wide = np.dtype(np.int32 if lo else np.uint32)
    assert lib.wide_sum(np.array([1, 2, 40], wide)) == 43
    with pytest.raises(TypeError):
        lib.wide_sum(np.array([1, 2, 40], np.int64))
