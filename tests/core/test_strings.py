"""C strings through a call: a `const char *` parameter with no size after it
takes a str (its UTF-8) or bytes, NUL-terminated, and a `const char *`
return comes back as a str (surrogateescape: any bytes) or None for NULL;
on both call paths (direct and libffi), by keyword, beside arrays and
scalars, in overload dispatch, in the metadata and the Python signature;
a CUDA kernel with one is refused at bind time."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from sources import CXX, c_library
from support import python_env, untyped

import bindthem
from bindthem import _core

HEADER = """\
#ifdef __cplusplus
extern "C" {
#endif
/* How many bytes of s are c. */
int count(const char *s, int c);
/* The length of s in bytes. */
int blen(const char *s);
/* s itself. */
const char *echo(const char *s);
/* "yes", or NULL for k == 0. */
const char *maybe(int k);
/* A constant string with bytes that are not UTF-8. */
const char *raw(void);
/* strcmp's sign. */
int order(const char *a, const char *b);
/* a then b into out (NUL-terminated, cut to out_size); the length of a + b. */
int concat(const char *a, const char *b, char *out, int out_size);
/* The sum of x times w, plus the length of label. */
double weigh(const double *x, int x_size, const char *label, double w);
/* Its unnamed string's length. */
int unnamed(const char *);
#ifdef __cplusplus
}
#endif
"""

SOURCE = """\
#include <stdio.h>
#include <string.h>
#include "strs.h"
int count(const char *s, int c) { int n = 0; for (; *s; s++) n += *s == (char)c; return n; }
int blen(const char *s) { return (int)strlen(s); }
const char *echo(const char *s) { return s; }
const char *maybe(int k) { return k ? "yes" : NULL; }
const char *raw(void) { return "caf\\xc3\\xa9 \\xff\\xfe"; }
int order(const char *a, const char *b) { int r = strcmp(a, b); return (r > 0) - (r < 0); }
int concat(const char *a, const char *b, char *out, int out_size)
{
    return snprintf(out, (size_t)out_size, "%s%s", a, b);
}
double weigh(const double *x, int x_size, const char *label, double w)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s * w + (double)strlen(label);
}
int unnamed(const char *s) { return (int)strlen(s); }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "strs", HEADER, SOURCE)


@pytest.fixture(scope="module")
def strs(built):
    return bindthem.load(*built)


@pytest.fixture(params=["direct", "ffi"])
def lib(request, strs):
    """The library, called through each path (libffi where forced)."""
    old = _core.force_ffi(request.param == "ffi")
    yield strs
    _core.force_ffi(old)


def test_str_and_bytes_in(lib):
    assert lib.count("hello", ord("l")) == 2
    assert lib.count(b"hello", ord("l")) == 2
    assert lib.count("", ord("l")) == 0 and lib.blen(b"") == 0
    # a str passes its UTF-8 bytes
    assert lib.blen("héllo") == len("héllo".encode()) == 6
    assert lib.blen("日本") == 6 and lib.count("日本", 0xE6) == 2  # each starts with byte E6
    assert lib.blen(b"\xff\xfe") == 2


def test_subclasses_and_many_calls(lib):
    class S(str):
        pass

    class B(bytes):
        pass

    assert lib.count(S("aaa"), ord("a")) == 3 and lib.count(B(b"ab"), ord("a")) == 1
    # the memo's keys change from str to bytes and back
    for _ in range(3):
        assert lib.blen("abc") == 3 and lib.blen(b"abcd") == 4


def test_returns(lib):
    assert lib.maybe(1) == "yes" and lib.maybe(0) is None
    assert lib.echo("héllo") == "héllo" and lib.echo(b"abc") == "abc"
    # bytes that are not UTF-8 come back as surrogateescape decodes them, and
    # return as the same bytes
    r = lib.raw()
    assert r == "café \udcff\udcfe"
    assert r.encode("utf-8", "surrogateescape") == b"caf\xc3\xa9 \xff\xfe"
    assert lib.echo(r.encode("utf-8", "surrogateescape")) == r


def test_embedded_nul_refused(lib):
    with pytest.raises(ValueError, match=r"count\(\): argument 's' has a NUL character at "
                                         r"index 1, .*NUL-terminated string \(const char \*\)"):
        lib.count("a\0b", 1)
    with pytest.raises(ValueError, match=r"argument 'b' has a NUL byte at index 2"):
        lib.order("x", b"ab\0")


def test_no_utf8_refused(lib):
    with pytest.raises(ValueError, match=r"blen\(\): argument 's' = '\\udcff' cannot be passed "
                                         r"as a C string \(const char \*\): .*surrogates not "
                                         r"allowed; a str is passed as its UTF-8"):
        lib.blen("\udcff")


@pytest.mark.parametrize("value, given", [
    (3, "int"), (None, "NoneType"), (bytearray(b"x"), "bytearray"), (3.5, "float"),
    (np.zeros(2, np.int8), "numpy.ndarray of int8"), (np.int8(3), "numpy.int8")])
def test_wrong_type_refused(lib, value, given):
    with pytest.raises(TypeError) as e:
        lib.count(value, 1)
    assert str(e.value).startswith(
        "count(): argument 's' (position 1) got %s, expected str or bytes (const char *)."
        % given)


def test_several_strings_arrays_and_scalars(lib):
    assert [lib.order(a, b) for a, b in (("a", "b"), ("b", "a"), ("é", b"\xc3\xa9"))] == [-1, 1, 0]
    out = np.zeros(8, np.int8)
    assert lib.concat("ab", b"cd", out) == 4
    assert bytes(out.tobytes()).rstrip(b"\0") == b"abcd"
    x = np.arange(4.0)
    assert lib.weigh(x, "abc", 2.0) == 15.0
    assert lib.weigh(x, w=0.5, label=b"") == 3.0
    with pytest.raises(TypeError, match=r"argument 'label' \(position 2\) got float, expected "
                                        r"str or bytes"):
        lib.weigh(x, 2.0, "abc")


def test_keywords_and_signature(strs):
    assert strs.count(s="hello", c=ord("l")) == 2
    assert strs.order(b="b", a="a") == -1
    assert untyped(strs.count) == "(s, c)"
    assert untyped(strs.weigh) == "(x, label, w)"
    assert untyped(strs.concat) == "(a, b, out)"
    # an unnamed string is positional-only, named by its position
    assert untyped(strs.unnamed) == "(arg0, /)"
    assert strs.unnamed("abcd") == 4
    with pytest.raises(TypeError, match="positional"):
        strs.unnamed(arg0="x")
    assert strs.count.overloads == ("int count(const char *s, int c)",)
    assert strs.maybe.overloads == ("const char *maybe(int k)",)


def test_gil_released(strs):
    with bindthem.options(gil="release"):
        assert strs.blen("x" * 10000) == 10000 and strs.echo("abc") == "abc"


def test_metadata(built):
    meta = bindthem.parse_header(built[1])
    ovs = {f["name"]: f["overloads"][0] for f in meta["functions"]}
    s, c = ovs["count"]["params"]
    assert (s["type"], s["const"], s["array"], s["string"], s["python"], s["enum"]) == \
        ("char", True, False, True, "str | bytes", None)
    assert (c["string"], c["python"]) == (False, "int")
    assert ovs["count"]["return"]["string"] is False
    assert ovs["maybe"]["return"] == {"type": "char", "dtype": "int8", "python": "str | None",
                                      "string": True, "enum": None, "handle": None,
                                      "callback": None, "struct": None, "voidp": False}
    assert ovs["count"]["signature"] == "int count(const char *s, int c)"
    assert ovs["echo"]["signature"] == "const char *echo(const char *s)"
    assert ovs["echo"]["name_expression"] == \
        "static_cast<const char * (*)(const char *)>(&::echo)"
    assert ovs["weigh"]["python_signature"] == "(x, label, w)"
    assert [p["string"] for p in ovs["weigh"]["params"]] == [False, False, True, False]
    assert ovs["unnamed"]["python_signature"] == "(arg0, /)"
    decls = {d["name"]: d for d in meta["declarations"]}
    assert decls["echo"]["return"] == {"type": "char", "const": True, "array": False,
                                       "string": True, "enum": None, "handle": None,
                                       "callback": None, "struct": None, "voidp": False}
    assert [(p["name"], p["string"]) for p in decls["concat"]["params"]] == [
        ("a", True), ("b", True), ("out", False), ("out_size", False)]


CXX_HEADER = """\
/* One name, three kinds of argument. */
int kind(const char *s);
int kind(double v);
int kind(const double *x, int x_size);
/* The sum of x, times the length of name. */
template <class T> T tally(const T *x, int x_size, const char *name);
template <class T> const char *type_name(const T *x, int x_size);
namespace ns { int inner(const char *s); }
"""

CXX_SOURCE = """\
#include <cstring>
#include "cxx.h"
int kind(const char *s) { return 1; }
int kind(double v) { return 2; }
int kind(const double *x, int x_size) { return 3; }
template <class T> T tally(const T *x, int x_size, const char *name)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s * (T)std::strlen(name);
}
template <class T> const char *type_name(const T *, int) { return sizeof(T) == 8 ? "f8" : "f4"; }
template double tally<double>(const double *, int, const char *);
template float tally<float>(const float *, int, const char *);
template const char *type_name<double>(const double *, int);
template const char *type_name<float>(const float *, int);
namespace ns { int inner(const char *s) { return (int)std::strlen(s); } }
"""

CXX_YAML = """\
- types:
    - [double]
    - [float]
  functions:
    - tally
    - type_name
"""


def test_cxx_mangling_and_dispatch(tmp_path):
    for name, text in (("cxx.h", CXX_HEADER), ("cxx.cpp", CXX_SOURCE), ("cxx.yml", CXX_YAML)):
        (tmp_path / name).write_text(text)
    so = tmp_path / "libcxx.so"
    subprocess.run([CXX, "-O1", "-fPIC", "-shared", str(tmp_path / "cxx.cpp"), "-o", str(so)],
                   check=True)
    lib = bindthem.load(str(so), str(tmp_path / "cxx.h"), str(tmp_path / "cxx.yml"))
    # g++'s names: a C string is PKc
    assert lib.inner.symbols == ("_ZN2ns5innerEPKc",)
    assert lib.tally.symbols == ("_Z5tallyIdET_PKS0_iPKc", "_Z5tallyIfET_PKS0_iPKc")
    assert lib.type_name.symbols == ("_Z9type_nameIdEPKcPKT_i", "_Z9type_nameIfEPKcPKT_i")
    assert lib.inner("abc") == 3
    # a string is a fixed type in dispatch, beside a template's
    assert lib.tally(np.ones(3), "ab") == 6.0
    assert lib.tally(np.ones(3, np.float32), b"abc") == 9.0
    assert lib.type_name(np.ones(2)) == "f8" and lib.type_name(np.ones(2, np.float32)) == "f4"
    assert [lib.kind("x"), lib.kind(b"x"), lib.kind(2.0), lib.kind(np.ones(2))] == [1, 1, 2, 3]
    with pytest.raises(TypeError, match=r"kind\(\): argument 's' \(position 1\) got list"):
        lib.kind([1])
    meta = bindthem.parse_header(str(tmp_path / "cxx.h"), str(tmp_path / "cxx.yml"))
    tally = [f for f in meta["functions"] if f["name"] == "tally"][0]["overloads"][0]
    assert tally["instantiation"] == \
        "template double tally<double>(const double x[], int x_size, const char *name);"


def test_open_function_instantiates_with_a_string(tmp_path):
    """A templated function without instantiate.yml binds open: the string is
    no template parameter, the array fixes T."""
    h = tmp_path / "open.h"
    h.write_text("template <class T> T tally(const T *x, int x_size, const char *name)\n"
                 "{\n    T s = 0;\n    for (int i = 0; i < x_size; i++)\n        s += x[i];\n"
                 "    int n = 0;\n    while (name[n])\n        n++;\n    return s * (T)n;\n}\n")
    lib = bindthem.build(str(h), cache_dir=str(tmp_path / "cache"))
    assert lib.tally.open
    assert lib.tally(np.ones(4, np.float32), "abc") == 12.0
    assert lib.tally(name=b"ab", x=np.ones(2, np.float32)) == 4.0
    with pytest.raises(TypeError, match="str or bytes"):
        lib.tally(np.ones(4, np.float32), 3)


def test_cuda_kernel_with_a_string_is_refused(tmp_path, mock):
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("__global__ void fill(float y[], int y_size);\n"
                 "__global__ void tagged(float y[], int y_size, const char *name);\n")
    syms = {f["name"]: f["overloads"][0]["symbol"]
            for f in bindthem.parse_header(str(h))["functions"]}
    assert syms["tagged"] == "_Z6taggedPfiPKc"
    text = "bindthem-mock-module\nkernel %s 8 4\nkernel %s 24 4\n" % (syms["fill"],
                                                                     syms["tagged"])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lib = cuda.load(text.encode(), str(h))
    assert "fill" in lib.__all__ and "tagged" not in lib.__all__
    (out,) = [x for x in bindthem.info(lib).left_out if x["name"] == "tagged"]
    assert out["reason"].startswith("a function whose parameter 'name' is a C string "
                                    "(const char *): a kernel cannot read")
    assert out["deliberate"] is False


THREADS = """
import sys, threading
import bindthem
lib = bindthem.load(sys.argv[1], sys.argv[2])
bad = []
def run(k):
    for i in range(2000):
        s = ("é%d" % (i * k)) * (1 + i % 50)
        with bindthem.options(gil="release"):
            if lib.blen(s) != len(s.encode()) or lib.echo(s) != s:
                bad.append(s)
        b = s.encode()
        if lib.count(b, b[-1] - 256 * (b[-1] > 127)) < 1:
            bad.append(b)
ts = [threading.Thread(target=run, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("bad", len(bad))
"""


def test_threads_with_the_gil_released(built, tmp_path):
    """Strings made and dropped while other threads call without the GIL: a
    kernel reads only the string of its own call (a subprocess: a dangling
    pointer would crash it)."""
    (tmp_path / "threads.py").write_text(textwrap.dedent(THREADS))
    r = subprocess.run([sys.executable, str(tmp_path / "threads.py"), *built],
                       capture_output=True, text=True, timeout=300, env=python_env(),
                       cwd=os.fspath(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["bad", "0"]
