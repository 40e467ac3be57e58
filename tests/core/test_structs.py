"""Structs and unions through a call: each struct the header lays out is a
NumPy structured dtype on the Library (its offsets and itemsize gcc's); a
struct parameter by pointer takes an array of that dtype (a numpy.void
record too when it is const), passed without a copy; a struct by value
takes a record and a struct returned by value comes back as a new
numpy.void, through libffi; anything else is a TypeError naming the
parameter, the struct and what was given (which field differs, for another
dtype). On both call paths (direct and libffi, where the direct call
applies); a union by value is refused at bind time; zlib's z_stream for
real."""

import ctypes.util
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from sources import CC, c_library
from support import python_env, untyped

import bindthem
import bindthem.stubs
from bindthem import _core

HEADER = """\
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { SHAPE_CIRCLE = 1, SHAPE_SQUARE = 2, SHAPE_BLOB = 7 } shape_t;
struct point { double x, y; };
typedef struct { float re, im; } cfloat2;
struct tiny { char c; };
struct trio { float a, b, c; };
struct mixed { double d; int i; };
/* A struct of every kind of field. */
struct body {
    struct point pos;
    double grid[2][3];
    char name[16];
    shape_t shape;
    const double *data;
    int n;
    struct point corners[2];
    unsigned char flag;
};
union value { int64_t i; double d; unsigned char bytes[8]; };
struct tagged { int kind; union value v; };

/* x*x + y*y. */
double norm2(const struct point *p);
void scale(struct point *p, double k);
double dot(struct point a, struct point b);
struct point midpoint(struct point a, struct point b);
/* Each record's x gets its index added, n records. */
void count_up(struct point *pts, int n);
double body_sum(const struct body *b);
void body_fill(struct body *b, double k);
double body_by_value(struct body b);
struct body body_make(double k);
struct tiny tiny_next(struct tiny t);
struct trio trio_scale(struct trio t, float k);
struct mixed mixed_swap(struct mixed m);
cfloat2 cmul(cfloat2 a, cfloat2 b);
double many(double a, double b, double c, double d, double e, double f, double g, double h,
            struct point p, struct mixed m, int tail);
double value_as_double(const union value *v);
void value_set(union value *v, double d);
int tagged_kind(const struct tagged *t);
double union_by_value(union value v);
struct tagged tagged_make(int k);
#ifdef __cplusplus
}
#endif
"""

SOURCE = """\
#include <string.h>
#include "structs.h"
double norm2(const struct point *p) { return p->x * p->x + p->y * p->y; }
void scale(struct point *p, double k) { p->x *= k; p->y *= k; }
double dot(struct point a, struct point b) { return a.x * b.x + a.y * b.y; }
struct point midpoint(struct point a, struct point b)
{
    struct point r = {(a.x + b.x) / 2, (a.y + b.y) / 2};
    return r;
}
void count_up(struct point *pts, int n) { for (int i = 0; i < n; i++) pts[i].x += i; }
double body_sum(const struct body *b)
{
    double s = b->pos.x + 10 * b->pos.y;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            s += (i * 3 + j + 1) * b->grid[i][j];
    s += 100.0 * (double)strlen(b->name) + 1000.0 * b->shape;
    for (int i = 0; i < b->n; i++)
        s += b->data[i];
    s += b->corners[0].x + b->corners[1].y * 3 + b->flag * 0.5;
    return s;
}
void body_fill(struct body *b, double k)
{
    b->pos.x = k;
    b->pos.y = -k;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            b->grid[i][j] = k * (i * 3 + j);
    strcpy(b->name, "filled");
    b->shape = SHAPE_BLOB;
    b->corners[1].y = k + 1;
    b->flag = 200;
}
double body_by_value(struct body b) { return body_sum(&b); }
struct body body_make(double k)
{
    struct body b;
    memset(&b, 0, sizeof b);
    body_fill(&b, k);
    return b;
}
struct tiny tiny_next(struct tiny t) { t.c += 1; return t; }
struct trio trio_scale(struct trio t, float k) { t.a *= k; t.b *= k; t.c *= k; return t; }
struct mixed mixed_swap(struct mixed m) { struct mixed r = {m.i, (int)m.d}; return r; }
cfloat2 cmul(cfloat2 a, cfloat2 b)
{
    cfloat2 r = {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    return r;
}
double many(double a, double b, double c, double d, double e, double f, double g, double h,
            struct point p, struct mixed m, int tail)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 10 * p.x + 20 * p.y +
           30 * m.d + 40 * m.i + 50 * tail;
}
double value_as_double(const union value *v) { return v->d; }
void value_set(union value *v, double d) { v->d = d; }
int tagged_kind(const struct tagged *t) { return t->kind; }
double union_by_value(union value v) { return v.d; }
struct tagged tagged_make(int k) { struct tagged t; t.kind = k; t.v.i = k; return t; }
"""

STRUCTS = ["point", "cfloat2", "tiny", "trio", "mixed", "body", "value", "tagged"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "structs", HEADER, SOURCE)


@pytest.fixture(scope="module")
def structs(built):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the union by value, left out
        return bindthem.load(*built)


@pytest.fixture(params=["direct", "ffi"])
def lib(request, structs):
    """The library, called through each path (libffi where forced)."""
    old = _core.force_ffi(request.param == "ffi")
    yield structs
    _core.force_ffi(old)


def test_dtypes_are_the_compilers_layouts(built, structs, tmp_path):
    """Each dtype's offsets and itemsize are what gcc's offsetof and sizeof
    say, field by field, nested fields too."""
    c_name = {"point": "struct point", "tiny": "struct tiny", "trio": "struct trio",
              "mixed": "struct mixed", "body": "struct body", "value": "union value",
              "tagged": "struct tagged", "cfloat2": "cfloat2"}
    prog = ['#include <stddef.h>', '#include <stdio.h>', '#include "%s"' % built[1],
            "int main(void) {"]
    mine = {}

    def walk(name, dt, path):
        mine["%s size %s" % (name, path or "-")] = dt.itemsize
        for f, (fdt, off) in (dt.fields or {}).items():
            whole = path + "." + f if path else f
            base = mine.get("%s %s" % (name, path), 0) if path else 0
            mine["%s %s" % (name, whole)] = base + off
            prog.append('printf("%s %s %%zu\\n", offsetof(%s, %s));' % (name, whole, c_name[name],
                                                                        whole))
            prog.append('printf("%s size %s %%zu\\n", sizeof(((%s *)0)->%s));'
                        % (name, whole, c_name[name], whole))
            mine["%s size %s" % (name, whole)] = fdt.itemsize
            if fdt.fields:
                walk(name, fdt, whole)

    for name in STRUCTS:
        dt = getattr(structs, name)
        assert isinstance(dt, np.dtype) and dt.isalignedstruct
        prog.append('printf("%s size - %%zu\\n", sizeof(%s));' % (name, c_name[name]))
        walk(name, dt, "")
    prog.append("return 0; }")
    (tmp_path / "layout.c").write_text("\n".join(prog))
    subprocess.run([CC, "-std=c11", "-o", str(tmp_path / "layout"), str(tmp_path / "layout.c")],
                   check=True)
    out = subprocess.run([str(tmp_path / "layout")], capture_output=True, text=True,
                         check=True).stdout
    gcc = {line.rsplit(" ", 1)[0]: int(line.rsplit(" ", 1)[1]) for line in out.splitlines()}
    assert gcc == mine


def test_dtype_formats(structs):
    body = structs.body
    assert body.names == ("pos", "grid", "name", "shape", "data", "n", "corners", "flag")
    assert body["pos"] == structs.point
    assert body["grid"].shape == (2, 3) and body["grid"].base == np.float64
    assert body["name"].shape == (16,) and body["name"].base.itemsize == 1
    assert body["shape"] == np.uint32  # the enum's integer type
    assert body["data"] == np.uintp  # a pointer is an address
    assert body["corners"].shape == (2,) and body["corners"].base == structs.point
    value = structs.value  # a union: every field at offset 0
    assert [off for _, off in value.fields.values()] == [0, 0, 0] and value.itemsize == 8
    assert structs.cfloat2.names == ("re", "im")


def test_by_pointer_reads_and_writes(lib):
    p = np.zeros(1, lib.point)
    p["x"], p["y"] = 3.0, 4.0
    assert lib.norm2(p) == 25.0
    assert lib.norm2(p[0]) == 25.0  # const: a numpy.void record too
    assert lib.norm2(np.array((1.0, 2.0), lib.point)) == 5.0  # 0-d
    lib.scale(p, 2.0)
    assert (p["x"][0], p["y"][0]) == (6.0, 8.0)
    pts = np.zeros(4, lib.point)
    lib.count_up(pts, 4)  # a pointer to the first of several records
    assert pts["x"].tolist() == [0.0, 1.0, 2.0, 3.0]
    lib.scale(pts[2:3], 10.0)  # a view: its first record
    assert pts["x"].tolist() == [0.0, 1.0, 20.0, 3.0]


def test_every_kind_of_field(lib):
    data = np.array([1.0, 2.0, 4.0])
    b = np.zeros(1, lib.body)
    b["pos"] = (1.5, 2.0)
    b["grid"] = np.arange(6.0).reshape(2, 3)
    b["name"][0, :5] = np.frombuffer(b"hello", np.int8)
    b["shape"] = lib.SHAPE_SQUARE
    b["data"], b["n"] = data.ctypes.data, 3
    b["corners"] = [(5.0, 0.0), (0.0, 6.0)]
    b["flag"] = 3
    grid = sum((i + 1) * float(i) for i in range(6))
    expect = 1.5 + 20.0 + grid + 500.0 + 2000.0 + 7.0 + 5.0 + 18.0 + 1.5
    assert lib.body_sum(b) == expect
    assert lib.body_by_value(b[0]) == expect  # by value: 240 bytes, in memory
    lib.body_fill(b, 2.0)
    r = b[0]
    assert (r["pos"]["x"], r["pos"]["y"]) == (2.0, -2.0)
    assert r["grid"].tolist() == [[0.0, 2.0, 4.0], [6.0, 8.0, 10.0]]
    assert r["name"].tobytes().rstrip(b"\0") == b"filled"
    assert r["shape"] == lib.SHAPE_BLOB and r["corners"][1]["y"] == 3.0 and r["flag"] == 200


def test_by_value_and_returned(lib):
    a = np.array((1.0, 2.0), lib.point)
    b = np.zeros(1, lib.point)
    b[0] = (3.0, 5.0)
    assert lib.dot(a[()], b[0]) == 13.0
    assert lib.dot(a, b) == 13.0  # a 0-d and a 1-element array
    m = lib.midpoint(a[()], b[0])
    assert type(m) is np.void and m.dtype == lib.point
    assert (m["x"], m["y"]) == (2.0, 3.5)
    # each way the C ABI returns a small struct: one byte, three floats (SSE
    # 8 + 4 bytes), double + int (SSE + integer register), two floats, and
    # in memory (240 bytes)
    t = lib.tiny_next(np.array((ord("a"),), lib.tiny)[()])
    assert int(t["c"]) == ord("b")
    t = lib.trio_scale(np.array((1.0, 2.0, 3.0), lib.trio)[()], 2.0)
    assert (t["a"], t["b"], t["c"]) == (2.0, 4.0, 6.0)
    t = lib.mixed_swap(np.array((7.0, 9), lib.mixed)[()])
    assert (t["d"], t["i"]) == (9.0, 7)
    c = lib.cmul(np.array((1.0, 2.0), lib.cfloat2)[()], np.array((3.0, 4.0), lib.cfloat2)[()])
    assert (c["re"], c["im"]) == (-5.0, 10.0)
    body = lib.body_make(3.0)
    assert body.dtype == lib.body and body["name"].tobytes().rstrip(b"\0") == b"filled"
    assert body["grid"][1, 2] == 15.0 and body["flag"] == 200
    # a returned record is the caller's: writing it touches nothing else
    body["pos"]["x"] = 99.0
    assert lib.body_make(3.0)["pos"]["x"] == 3.0


def test_structs_after_the_argument_registers(lib):
    """Eight doubles fill the floating registers: the structs go on the stack."""
    p = np.array((1.0, 2.0), lib.point)[()]
    m = np.array((3.0, 4), lib.mixed)[()]
    assert lib.many(1, 1, 1, 1, 1, 1, 1, 1, p, m, 2) == 36 + 10 + 40 + 90 + 160 + 100


def test_unions_by_pointer_but_not_by_value(structs, lib):
    v = np.zeros(1, lib.value)
    lib.value_set(v, 2.5)
    assert v["d"][0] == 2.5 and lib.value_as_double(v) == 2.5
    assert v["i"][0] == np.array(2.5).view(np.int64)
    t = np.zeros(1, lib.tagged)
    t["kind"] = 4
    assert lib.tagged_kind(t) == 4
    left = {x["name"]: x for x in bindthem.info(structs).left_out}
    assert "union_by_value" not in structs.__all__ and "tagged_make" not in structs.__all__
    assert left["union_by_value"]["reason"].startswith(
        "a function whose parameter 'v' is union value (by value): libffi, which calls a "
        "function taking or returning a struct by value, has no unions")
    assert left["tagged_make"]["reason"].startswith(
        "a function that returns struct tagged by value: it holds a union")
    assert not left["tagged_make"]["deliberate"]


def test_equivalent_dtypes_are_taken(lib):
    mine = np.dtype([("x", "<f8"), ("y", "<f8")])  # not the Library's object, the same layout
    p = np.zeros(1, mine)
    p[0] = (3.0, 4.0)
    assert lib.norm2(p) == 25.0 and lib.dot(p, p) == 25.0
    lib.scale(p, 2.0)
    assert p["x"][0] == 6.0


@pytest.mark.parametrize("dtype, why", [
    ([("x", "<f4"), ("y", "<f8")], "its field 'x' is float32, the struct's is float64"),
    ([("x", "<f8"), ("z", "<f8")], "it has no field 'y'"),
    ([("y", "<f8"), ("x", "<f8")], "its field 0 is 'y', where the struct has 'x' (its fields "
                                   "are in another order)"),
    ([("x", "<f8")], "it has no field 'y'"),
    ([("x", "<f8"), ("y", "<f8"), ("z", "<f8")], "it has a field 'z', which the struct has not"),
    ({"names": ["x", "y"], "formats": ["<f8", "<f8"], "offsets": [0, 8], "itemsize": 24},
     "its records are 24 bytes, the struct's 16"),
    ([("x", ">f8"), ("y", ">f8")], "its field 'x' is >f8, the struct's is float64"),
    (np.float64, None),
])
def test_another_dtype_is_refused_saying_which_field(lib, dtype, why):
    with pytest.raises(TypeError) as e:
        lib.scale(np.zeros(2, dtype), 2.0)
    text = str(e.value)
    if np.dtype(dtype).names:
        assert text.startswith("scale(): argument 'p' is a numpy.ndarray of dtype ")
        assert text.endswith("which is not the dtype of struct point (the Library's 'point'): "
                             + why)
    else:  # no record at all: the dispatcher's refusal
        assert text.startswith("scale(): argument 'p' (position 1) got numpy.ndarray of float64, "
                               "expected an array of struct point (the Library's dtype 'point')")


def test_nested_field_differences(lib):
    bad = lib.body.descr
    bad[0] = ("pos", [("x", "<f8"), ("w", "<f8")])
    wrong = np.dtype({"names": list(lib.body.names),
                      "formats": [np.dtype(bad[0][1])] + [lib.body[n] for n in lib.body.names[1:]],
                      "offsets": [lib.body.fields[n][1] for n in lib.body.names],
                      "itemsize": lib.body.itemsize})
    with pytest.raises(TypeError, match=r"body_sum\(\): argument 'b' .*: it has no field "
                                        r"'pos.y'$"):
        lib.body_sum(np.zeros(1, wrong))


def test_what_else_is_refused(lib):
    p = np.zeros(1, lib.point)
    with pytest.raises(TypeError, match=r"^scale\(\): argument 'p' \(position 1\) got list, "
                                        r"expected an array of struct point \(the Library's "
                                        r"dtype 'point'\)"):
        lib.scale([1.0, 2.0], 2.0)
    # a record for a pointer to non-const: only an array (its bytes are the caller's)
    with pytest.raises(TypeError, match=r"got numpy.void, expected an array of struct point"):
        lib.scale(p[0], 2.0)
    with pytest.raises(TypeError, match=r"got NoneType, expected an array or numpy.void record "
                                        r"of struct point"):
        lib.norm2(None)
    ro = np.zeros(1, lib.point)
    ro.flags.writeable = False
    with pytest.raises(TypeError, match=r"^scale\(\): argument 'p' is a read-only array of "
                                        r"struct point, but the function may write to it \(the "
                                        r"parameter is not const\)"):
        lib.scale(ro, 2.0)
    assert lib.norm2(ro) == 0.0  # const: read-only is fine
    with pytest.raises(TypeError, match=r"^norm2\(\): argument 'p' is an empty array, but the "
                                        r"function takes a pointer to at least one struct point"):
        lib.norm2(np.zeros(0, lib.point))
    with pytest.raises(TypeError, match=r"^count_up\(\): argument 'pts' is an array of struct "
                                        r"point that is not C-contiguous"):
        lib.count_up(np.zeros(4, lib.point)[::2], 2)
    raw = np.zeros(17 + 16, np.uint8)[1:17].view(lib.point)  # misaligned
    with pytest.raises(TypeError, match=r"argument 'p' holds struct point records at an address "
                                        r"that is not a multiple of their alignment \(8 bytes\)"):
        lib.norm2(raw)
    with pytest.raises(TypeError, match=r"^dot\(\): argument 'a' holds 2 records of struct "
                                        r"point, but the function takes one, by value"):
        lib.dot(np.zeros(2, lib.point), p[0])
    with pytest.raises(TypeError, match=r"got float, expected a numpy.void record of struct "
                                        r"point"):
        lib.dot(1.0, p[0])
    # nothing ran: the caller's records are as they were
    assert p["x"][0] == 0.0


def test_signatures_and_stubs(structs, built):
    assert structs.norm2.overloads == ("double norm2(const struct point *p)",)
    assert structs.midpoint.overloads == (
        "struct point midpoint(struct point a, struct point b)",)
    assert structs.cmul.overloads == ("cfloat2 cmul(cfloat2 a, cfloat2 b)",)
    assert untyped(structs.count_up) == "(pts, n)"
    assert structs.scale(p=np.zeros(1, structs.point), k=2.0) is None
    # the dtype attributes, beside the header's enum members; each the C core's object
    assert {"point", "body", "value", "SHAPE_BLOB"} <= set(dir(structs))
    dtypes = bindthem.info(structs).handle.struct_dtypes
    assert all(getattr(structs, n) is dtypes[n] for n in STRUCTS)
    stub = bindthem.stubs.render(built[1])
    assert "\npoint: numpy.dtype[numpy.void]\n" in stub
    assert "def norm2(p: numpy.typing.NDArray[numpy.void] | numpy.void) -> float:" in stub
    assert "def scale(p: numpy.typing.NDArray[numpy.void], k: float) -> None: ..." in stub
    assert "def body_make(k: float) -> numpy.void: ..." in stub


def test_a_kernel_name_keeps_its_name(tmp_path):
    """A function named as a struct keeps the name: the dtype is not set."""
    (tmp_path / "n.h").write_text("struct stat { long size; };\n"
                                  "int stat(const char *path, struct stat *out);\n"
                                  "long size_of(const struct stat *s);\n")
    (tmp_path / "n.c").write_text('#include "n.h"\n'
                                  "int stat(const char *path, struct stat *out) "
                                  "{ out->size = path[0]; return 0; }\n"
                                  "long size_of(const struct stat *s) { return s->size; }\n")
    so = tmp_path / "libn.so"
    subprocess.run([CC, "-std=c11", "-fPIC", "-shared", str(tmp_path / "n.c"), "-o", str(so)],
                   check=True)
    lib = bindthem.load(str(so), str(tmp_path / "n.h"))
    assert isinstance(lib.stat, bindthem.Function)
    dt = bindthem.info(lib).handle.struct_dtypes["stat"]
    rec = np.zeros(1, dt)
    assert lib.stat("A", rec) == 0 and lib.size_of(rec) == ord("A")


def test_gil_released_and_many_calls(structs):
    p = np.zeros(1, structs.point)
    p[0] = (1.0, 1.0)
    with bindthem.options(gil="release"):
        for _ in range(1000):
            assert structs.norm2(p) == 2.0 and structs.dot(p[0], p[0]) == 2.0
            assert structs.midpoint(p[0], p[0])["x"] == 1.0


def test_cuda_kernel_with_a_struct_is_refused(tmp_path, mock):
    import bindthem.cuda as cuda

    h = tmp_path / "k.cuh"
    h.write_text("struct point { float x, y; };\n"
                 "__global__ void fill(float y[], int y_size);\n"
                 "__global__ void move(float y[], int y_size, struct point p);\n")
    syms = {f["name"]: f["overloads"][0]["symbol"]
            for f in bindthem.parse_header(str(h))["functions"]}
    text = "bindthem-mock-module\nkernel %s 8 4\nkernel %s 24 4 8\n" % (syms["fill"],
                                                                       syms["move"])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        lib = cuda.load(text.encode(), str(h))
    assert "fill" in lib.__all__ and "move" not in lib.__all__
    (out,) = [x for x in bindthem.info(lib).left_out if x["name"] == "move"]
    assert out["reason"].startswith("a function whose parameter 'p' is struct point (by value): "
                                    "bindthem passes structs to C functions on the CPU only")


ZLIB = """
import sys, zlib
import numpy as np
import bindthem
lib = bindthem.load("libz.so.1", sys.argv[1])
strm = np.zeros(1, lib.z_stream)
assert lib.deflateInit_(strm, lib.Z_BEST_COMPRESSION, lib.zlibVersion(),
                        lib.z_stream.itemsize) == lib.Z_OK
data = bytes(range(256)) * 64 + b"bindthem " * 500
src = np.frombuffer(data, np.uint8)
out = np.zeros(len(data) + 1024, np.uint8)
strm["next_in"], strm["avail_in"] = src.ctypes.data, src.size
strm["next_out"], strm["avail_out"] = out.ctypes.data, out.size
assert lib.deflate(strm, lib.Z_FINISH) == lib.Z_STREAM_END
n = int(strm["total_out"][0])
assert 0 < n < len(data) and int(strm["total_in"][0]) == len(data)
assert zlib.decompress(out[:n].tobytes()) == data
assert lib.deflateEnd(strm) == lib.Z_OK
print("ok", n)
"""


def test_zlib_z_stream():
    """Debian's zlib.h (preprocessed by load()) and libz.so.1: deflate into
    a buffer through a z_stream record, read back by Python's zlib."""
    header = "/usr/include/zlib.h"
    if not os.path.exists(header) or not ctypes.util.find_library("z"):
        pytest.skip("needs zlib.h and libz.so.1")
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", ZLIB, header], capture_output=True,
                       text=True, env=python_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok ")
