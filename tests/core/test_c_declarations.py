"""C headers as they are, read by the C core (csrc/core/bt_parse_typedef.c,
bt_parse_const.c, bt_cpp.c): typedefs, enums, #define constants, strings,
handles, callbacks, and the C preprocessor's output with its line markers.

Each test parses a header (or what `cc -E -dD -C` made of it) with
_core.parse and checks what the C core read: which declarations bind, with
which parameter types, and why the others are left out."""

import os
import shutil
import subprocess
import textwrap

import pytest

from bindthem import _core
from bindthem.errors import HeaderError


def parse(tmp_path, text, name="lib.h", cpp=False, flags=()):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    if not cpp:
        return _core.parse(str(path)).metadata()
    if not shutil.which("cc"):
        pytest.skip("needs cc")
    out = subprocess.run(["cc", "-E", "-dD", "-C", *flags, str(path)], capture_output=True,
                         check=True).stdout
    return _core.parse(str(path), header_text=out).metadata()


def decls(meta):
    return {d["name"]: d for d in meta["declarations"]}


def types(d):
    return [p["type"] for p in d["params"]]


def test_typedefs_resolve_through_chains_and_orders(tmp_path):
    m = decls(parse(tmp_path, """
        typedef float real_t;
        typedef unsigned long uLong;
        typedef uLong uLongf;
        typedef long unsigned int size_like;
        typedef double _Complex zcomplex;
        typedef float fcomplex[2];
        using index_t = int;
        /* Mean of x. */
        real_t mean(const real_t *x, int x_size);
        uLongf flags(size_like n, index_t k);
        zcomplex first(const zcomplex *z, int z_size, const fcomplex *w, int w_size);
    """))
    assert m["mean"]["bindable"] and types(m["mean"]) == ["float", "int"]
    assert m["mean"]["return"]["type"] == "float" and m["mean"]["doc"] == "Mean of x."
    assert m["flags"]["bindable"] and types(m["flags"]) == ["unsigned long", "int"]
    assert m["flags"]["return"]["type"] == "unsigned long"
    assert m["first"]["bindable"], m["first"]["reason"]
    assert types(m["first"]) == ["std::complex<double>", "int", "std::complex<float>", "int"]


def test_what_a_typedef_cannot_be_says_so(tmp_path):
    m = decls(parse(tmp_path, """
        typedef int triple[3];
        typedef int fn_t(int);
        typedef wchar_t wc;
        typedef long double ld;
        void a(triple *t);
        void b(fn_t *f);
        wc c(void);
        ld d(void);
    """))
    assert "'triple', an array type" in m["a"]["reason"]  # a pointer to one (`triple t`: a
    # fixed-size array, test_fixed_arrays.py)
    assert m["b"]["bindable"]  # a pointer to a function type: a callback
    assert "unknown type 'wchar_t'" in m["c"]["reason"]
    assert m["d"]["bindable"] and m["d"]["return"]["type"] == "long double"


def test_enums_are_integers_of_their_c_size(tmp_path):
    m = decls(parse(tmp_path, """
        enum color { RED, GREEN = 5, BLUE };
        typedef enum { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_ORDER;
        typedef enum { NEG = -1, POS = 1 } sign_t;
        enum wide { BIG = 0x100000000 };
        enum class small : unsigned char { A, B };
        int paint(enum color c, CBLAS_ORDER o, sign_t s, enum wide w);
        CBLAS_ORDER order(void);
    """))
    assert m["paint"]["bindable"], m["paint"]["reason"]
    assert types(m["paint"]) == ["unsigned int", "unsigned int", "int", "unsigned long"]
    assert m["order"]["return"]["type"] == "unsigned int"


def test_an_enum_member_it_cannot_evaluate_leaves_the_enum_unknown(tmp_path):
    m = decls(parse(tmp_path, """
        enum odd { A = sizeof(int), B };
        int f(enum odd x);
    """))
    assert not m["f"]["bindable"] and "enum" in m["f"]["reason"]


def test_const_char_pointers_are_strings(tmp_path):
    m = decls(parse(tmp_path, """
        const char *name(void);
        int count(const char *s, int c);
        int unnamed(const char *);
        int buffer(const char *s, int s_size);
        char *owned(void);
        unsigned char *bytes_of(void);
        char *const *names(void);
    """))
    assert m["name"]["bindable"] and m["count"]["bindable"] and m["unnamed"]["bindable"]
    assert m["buffer"]["bindable"] and m["buffer"]["params"][0]["array"]
    assert not m["count"]["params"][0]["array"]
    # a `char *` return is a string too (copied into a str, never freed: docs/c-libraries.rst)
    assert m["owned"]["bindable"] and m["owned"]["return"]["string"]
    # an unsigned char * is bytes of a length the header does not say; char *const * an array
    assert "pointer (unsigned char *)" in m["bytes_of"]["reason"]
    assert not m["names"]["bindable"]


def test_pointers_to_handles_and_strings_wait_for_an_annotation(tmp_path):
    """`H **` and `char **` are one value by address or an array of them, which
    the header does not say: left out as a pointer with no size, until an
    annotation names one ({intent: out}); `T *const *` is an array. A struct
    written by address is a handle type, as one returned is."""
    m = decls(parse(tmp_path, """
        typedef struct db db;
        struct point { double x, y; };
        int open_db(const char *path, db **out);
        int free_all(void **p);
        double parse_num(const char *s, char **end);
        double parse_const(const char *s, const char **end);
        int arr(db *const *dbs, int n);
        int many(db **dbs, int dbs_size);
        int pts(struct point **p);
        int argv_like(char *argv[]);
    """))
    for f, p in [("open_db", "out"), ("free_all", "p"), ("parse_num", "end"),
                 ("parse_const", "end"), ("pts", "p")]:
        r = m[f]["reason"]
        assert f"parameter '{p}' is a pointer to a" in r and "annotate it" in r, (f, r)
    assert "pointer to pointer" in m["arr"]["reason"]
    assert "array of handles (not bound yet)" in m["many"]["reason"]
    assert "pointer to pointer" in m["argv_like"]["reason"]


def test_struct_pointers_are_handles_unless_they_are_structs(tmp_path):
    m = decls(parse(tmp_path, """
        typedef struct gzFile_s *gzFile;
        struct opaque;
        struct point { double x, y; };
        typedef struct { int _a; int _b; } reserved_t;
        gzFile gzopen(const char *path, const char *mode);
        int gzclose(gzFile f);
        void use(struct opaque *o);
        double norm(const struct point *p);
        struct point *make(void);
        void reserved(reserved_t *r);
        void twice(struct opaque **o);
    """))
    for name in ("gzopen", "gzclose", "use", "make", "norm", "reserved"):
        assert m[name]["bindable"], (name, m[name]["reason"])
    assert not m["twice"]["bindable"]


def dump(tmp_path, text, cpp=False):
    """What tests/core/c/dump_header.c prints of the header (its enums,
    constants, handles, callbacks and structs after the declarations)."""
    import c_drivers
    try:
        c_drivers.build()
    except OSError as e:
        pytest.skip(str(e))
    path = tmp_path / "dumped.h"
    path.write_text(textwrap.dedent(text))
    if cpp:
        out = subprocess.run(["cc", "-E", "-dD", "-C", str(path)], capture_output=True,
                             check=True).stdout
        path = tmp_path / "dumped.i"
        path.write_bytes(out)
    r = c_drivers.run("dump_header", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_struct_nothing_returns_is_a_record_by_pointer(tmp_path):
    out = dump(tmp_path, """
        struct point { double x, y; };
        typedef struct gz *gzFile;
        double norm(const struct point *p);
        gzFile open_it(void);
        int close_it(gzFile f);
    """)
    assert "param p: const void [] struct=point @" in out
    assert "return: void handle=gzFile" in out and "param f: void handle=gzFile" in out
    assert "handle gzFile (struct gz) returned\n" in out
    assert "handle point" not in out  # a struct by pointer is no handle type


LAYOUT = """
    #include <stdint.h>
    #include <stddef.h>
    typedef struct { double re, im; } cplx;
    struct inner { char c; int64_t v; };
    typedef struct point { float x; double y; char tag[3]; struct inner in; cplx z[2];
                           int (*cb)(int); void *p; short grid[2][3]; } point_t;
    union u { char c; double d; int a[3]; };
    typedef enum { A, B } ab_t;
    struct with_enum { ab_t e; short s; _Bool flag; };
    struct nested { struct { int a; char b; } anon_named; long tail; unsigned char last; };
    struct packed_one { char c; int i; } __attribute__((packed));
    struct bits { int a : 3; int b; };
    struct flex { int n; double d[]; };
    struct bits_cross { char c; unsigned x : 5; unsigned y : 30; short s; };
    struct bits_wide { char c; unsigned long long w : 40; unsigned : 0; char d; };
    struct bits_zero { unsigned char a : 1; unsigned : 0; unsigned char b; };
    struct bits_unnamed { char c; unsigned long long : 60; char d; };
    struct bits_only { unsigned a : 3; unsigned b : 5; };
    struct bits_align { char c; long l : 3; };
    struct bits_enum { ab_t e : 2; _Bool f : 1; signed char k : 7; char after; };
    struct bits_nested { struct bits_cross bc; char tail; };
    union bits_u { unsigned a : 20; char c; };
"""
CHECKED = {"point_t": ["x", "y", "tag", "in", "z", "cb", "p", "grid"], "cplx": ["re", "im"],
           "struct inner": ["c", "v"], "union u": ["c", "d", "a"],
           "struct with_enum": ["e", "s", "flag"], "struct nested": ["anon_named", "tail", "last"],
           "struct bits": ["b"], "struct bits_cross": ["c", "s"], "struct bits_wide": ["c", "d"],
           "struct bits_zero": ["b"], "struct bits_unnamed": ["c", "d"], "struct bits_only": [],
           "struct bits_align": ["c"], "struct bits_enum": ["after"],
           "struct bits_nested": ["bc", "tail"], "union bits_u": ["c"]}


def test_struct_layouts_are_the_compilers(tmp_path):
    """Every offset and size the C core computes is what gcc's offsetof and
    sizeof say; what it cannot lay out says why."""
    if not shutil.which("cc"):
        pytest.skip("needs cc")
    out = dump(tmp_path, LAYOUT, cpp=True)
    mine, name = {}, None
    for line in out.splitlines():
        if line.startswith("struct "):
            name = line.split()[1]
            mine[name] = {"size": line.split("size=")[1].split()[0] if "size=" in line else line,
                          "align": line.split("align=")[1].split()[0] if "align=" in line else line}
        elif line.startswith("  field ") and name:
            f = line.split()
            mine[name][f[1]] = f[2][1:]
    prog = ['#include "%s"' % (tmp_path / "dumped.h"), "#include <stdio.h>", "int main(void) {"]
    for t, fields in CHECKED.items():
        key = t.split()[-1]
        prog.append('printf("%s size %%zu\\n", sizeof(%s));' % (key, t))
        prog.append('printf("%s align %%zu\\n", _Alignof(%s));' % (key, t))
        for f in fields:
            prog.append('printf("%s %s %%zu\\n", offsetof(%s, %s));' % (key, f, t, f))
    prog.append("return 0; }")
    (tmp_path / "chk.c").write_text("\n".join(prog))
    subprocess.run(["cc", "-o", str(tmp_path / "chk"), str(tmp_path / "chk.c")], check=True)
    for line in subprocess.run([str(tmp_path / "chk")], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        key, what, value = line.split()
        assert mine[key][what] == value, (key, what, mine[key])
    assert "struct packed_one (struct packed_one): an attribute may change its layout" in out
    assert "bits" not in "".join(x for x in out.splitlines() if "):" in x)  # all laid out
    assert "field 'd': a flexible array member" in out


def test_pragma_pack_leaves_every_layout_out(tmp_path):
    out = dump(tmp_path, """
        #pragma pack(push, 1)
        struct s { char c; int i; };
        #pragma pack(pop)
    """)
    assert "struct s (struct s): a #pragma pack is in effect" in out


def test_a_struct_bindthem_cannot_lay_out_is_a_handle_by_pointer(tmp_path):
    """Its fields are never read, so a pointer to it is passed as a handle
    (a flexible array member, a #pragma pack, a field of an unknown type); by
    value it stays out, with the reason."""
    m = parse(tmp_path, """
        struct fam { int n; double d[]; };
        struct fam *fam_new(void);
        int fam_get(const struct fam *b);
        int fam_sum(struct fam *b, int n);
        int fam_value(struct fam b);
    """)
    d = decls(m)
    assert d["fam_get"]["bindable"] and d["fam_get"]["params"][0]["handle"] == "fam"
    assert d["fam_sum"]["bindable"] and d["fam_new"]["return"]["handle"] == "fam"
    assert "flexible array member" in d["fam_value"]["reason"]
    assert [h["name"] for h in m["handles"]] == ["fam"]


def test_a_struct_with_bit_fields_is_a_record_by_pointer(tmp_path):
    """glibc's regex_t: laid out (its size and alignment the compiler's),
    its bit-fields no fields of the dtype; by pointer a record the caller
    allocates."""
    m = parse(tmp_path, """
        struct bits { char *p; unsigned a : 3; unsigned b : 5; };
        typedef struct bits bits_t;
        int bits_init(bits_t *b);
    """)
    d = decls(m)
    assert d["bits_init"]["bindable"], d["bits_init"]["reason"]
    assert d["bits_init"]["params"][0]["struct"] == "bits_t"
    # by value: left out when bound (tests/api/test_c_headers.py), libffi's affair
    st = {s["name"]: s for s in m["structs"]}["bits_t"]
    assert (st["size"], st["align"], st["bitfields"]) == (16, 8, True)
    assert [f["name"] for f in st["fields"]] == ["p", "a,b"]  # the bits: one field of bytes
    assert not m["handles"]


def test_function_pointers_are_callbacks(tmp_path):
    m = decls(parse(tmp_path, """
        typedef double (*fn)(double x, void *data);
        double integrate(fn f, void *data, double a, double b);
        int sort(int (*cmp)(int, int), int n);
        void nested(void (*outer)(void (*inner)(int)));
        fn get(void);
        void vp(void *buf, int buf_size);
    """))
    assert m["integrate"]["bindable"], m["integrate"]["reason"]
    assert m["sort"]["bindable"], m["sort"]["reason"]
    assert m["nested"]["bindable"], m["nested"]["reason"]
    # a returned one is its address, a bindthem.FunctionPointer of its type
    assert m["get"]["bindable"] and m["get"]["return"]["callback"] == "fn", m["get"]
    assert "void pointer" in m["vp"]["reason"]


def test_integer_constants_evaluate_as_c_does(tmp_path):
    meta = parse(tmp_path, """
        #define A 4
        #define B (A << 3)
        #define C (B | 0x3) - 1
        #define D ((1 > 0) ? 7 : 8)
        #define UNSIGNED_NEG ((unsigned)-1 > 0)
        #define LATER E + 1
        #define E 10
        #define NAME "stats 1.0"
        #define FN(x) x
        #define SELF SELF
        #define HUGE (1LL << 63)
        #define FLOAT 1.5
        #define EMPTY
        #define DIVZERO (1 / 0)
        enum { M1 = A * 2, M2 };
        #define FROM_ENUM (M2 + 1)
        void f(void);
    """)
    consts = {c["name"]: c["value"] for c in meta.get("constants", [])}
    if "constants" not in meta:
        pytest.skip("metadata has no constants yet")
    # UNSIGNED_NEG mixes unsigned and negative values: C's conversions, not evaluated
    assert consts == {"A": 4, "B": 32, "C": 34, "D": 7, "LATER": 11, "E": 10,
                      "NAME": "stats 1.0", "FROM_ENUM": 10}


def test_preprocessed_header_keeps_its_own_lines_and_docs(tmp_path):
    (tmp_path / "types.h").write_text(
        "typedef unsigned long uLong;\n"
        "typedef struct handle_s *handle;\n"
        "int helper_from_include(int x);\n")
    meta = parse(tmp_path, """
        #include <stddef.h>
        #include "types.h"
        #define EXPORT
        #define PROTO(args) args

        /* Checksum of n bytes. */
        EXPORT uLong checksum PROTO((uLong seed, size_t n));

        /* Opens one. */
        handle open_one(const char *name);
    """, cpp=True)
    m = decls(meta)
    assert set(m) == {"checksum", "open_one"}  # nothing from the files it includes
    assert m["checksum"]["bindable"] and types(m["checksum"]) == ["unsigned long", "unsigned long"]
    assert (m["checksum"]["line"], m["checksum"]["doc"]) == (8, "Checksum of n bytes.")
    # a line without macros keeps its columns (one with them has the preprocessor's)
    assert (m["open_one"]["line"], m["open_one"]["col"]) == (11, len("handle ") + 1)
    assert m["open_one"]["doc"] == "Opens one."
    assert m["open_one"]["bindable"]


def test_a_short_stem_owns_the_files_named_stem_underscore(tmp_path):
    """z3.h includes z3_api.h, which declares its functions: with a stem of two
    characters the header owns the names that start with it and an '_', not
    every name that starts with its letters (z3x.h)."""
    (tmp_path / "z3_api.h").write_text("int z3_version(void);\n")
    (tmp_path / "z3x.h").write_text("int not_mine(void);\n")
    meta = parse(tmp_path, '#include "z3_api.h"\n#include "z3x.h"\n', name="z3.h", cpp=True)
    assert set(decls(meta)) == {"z3_version"}


def test_preprocessor_flags_choose_declarations(tmp_path):
    text = """
        #ifdef WITH_EXTRA
        int extra(int x);
        #endif
        int always(int x);
    """
    assert set(decls(parse(tmp_path, text, cpp=True))) == {"always"}
    assert set(decls(parse(tmp_path, text, cpp=True, flags=["-DWITH_EXTRA"]))) == {
        "always", "extra"}


def test_macro_generated_declarations_are_seen(tmp_path):
    m = decls(parse(tmp_path, """
        #define DEFINE_API(X, R) R X##_sum(const R *x, int x_size); \\
            R X##_max(const R *x, int x_size);
        DEFINE_API(d, double)
        DEFINE_API(f, float)
    """, cpp=True))
    assert set(m) == {"d_sum", "d_max", "f_sum", "f_max"}
    assert all(d["bindable"] for d in m.values())
    assert all(d["line"] == 4 for d in m.values() if d["name"].startswith("d_"))


def test_a_line_marker_past_what_the_text_holds_is_refused(tmp_path):
    path = tmp_path / "h.h"
    text = b'# 1 "h.h"\nint a(int x);\n# 2000000000 "h.h"\nint b(int x);\n'
    with pytest.raises(HeaderError, match="line marker names line 2000000000"):
        _core.parse(str(path), header_text=text)


def test_a_header_as_written_may_hold_line_markers(tmp_path):
    # a marker after the first line is a #line directive: the text is read as written
    m = decls(parse(tmp_path, 'int a(int x);\n# 40 "other.h"\nint b(int x);\n'))
    assert set(m) == {"a", "b"}


@pytest.mark.parametrize("header,at_least", [
    ("/usr/include/zlib.h", {"zlibVersion", "zlibCompileFlags", "gzopen", "gzputs", "gzclose"}),
    ("/usr/include/fftw3.h", {"fftw_destroy_plan", "fftw_execute", "fftw_export_wisdom"}),
])
def test_system_headers_read_unmodified(tmp_path, header, at_least):
    if not os.path.exists(header) or not shutil.which("cc"):
        pytest.skip("needs %s and cc" % header)
    out = subprocess.run(["cc", "-E", "-dD", "-C", header], capture_output=True,
                         check=True).stdout
    m = decls(_core.parse(header, header_text=out).metadata())
    for name in at_least:
        assert m[name]["bindable"], (name, m[name]["reason"])
    for d in m.values():  # what stays out is a size bindthem cannot know, or a struct
        r = d["reason"] or ""
        assert "unknown type" not in r or "long double" in r or "__float128" in r, (d["name"], r)
        assert "cannot read" not in r, (d["name"], r)


ADVERSARIAL = r"""
import sys, time
from bindthem import _core
n = 50000
cases = {
    "typedef_chain": "typedef int t0;\n" + "".join(
        "typedef t%d t%d;\n" % (i, i + 1) for i in range(n)) + "t%d f(t%d x);\n" % (n, n),
    "enum_members": "enum big {" + ",".join("m%d" % i for i in range(n)) + "};\n",
    "define_chain": "#define d0 1\n" + "".join(
        "#define d%d (d%d + 1)\n" % (i + 1, i) for i in range(n)),
    "nested_callbacks": "void f(" + "void (*a)(" * n + ")" * n + ");\n",
    "markers": '# 1 "m.h"\n' + "".join('# %d "m.h"\nint f%d(int x);\n' % (i + 2, i)
                                      for i in range(n)),
    "anonymous_structs": "".join("typedef struct { int a; } s%d;\nvoid g%d(s%d *p);\n" % (i, i, i)
                                 for i in range(n // 4)),
}
for name, text in cases.items():
    path = sys.argv[1] + "/" + name + ".h"
    t0 = time.perf_counter()
    try:
        plan = _core.parse(path, header_text=text.encode())
    except Exception as e:  # a clear error is fine; a crash or a hang is not
        plan = e
    dt = time.perf_counter() - t0  # the parse alone (a quadratic walk: minutes)
    got = (len(plan.metadata()["declarations"]) if isinstance(plan, _core.Plan)
           else type(plan).__name__)
    print(name, got, "%.3f" % dt)
    assert dt < 10.0, (name, dt)
"""


def test_c_declarations_cost_linear_time(tmp_path):
    """Typedef chains, big enums, #define chains, nested function pointers,
    line markers and anonymous structs by the ten thousand parse in bounded
    time (in a subprocess: a crash or a quadratic walk fails this test only)."""
    import sys
    r = subprocess.run([sys.executable, "-c", ADVERSARIAL, str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    got = {line.split()[0]: line.split()[1] for line in r.stdout.splitlines()}
    assert got["typedef_chain"] == "1" and got["markers"] == "50000", got
