"""Headers as people write them (issue 24): attributes anywhere, trailing
return types, unnamed parameters, C prototypes (restrict, pointers, (void),
K&R), non-type and defaulted template parameters, and the resynchronisation
after a declaration the parser cannot read. Built with real g++ and clang++
(and cc for C), bound and called."""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sources import ROOT
from support import untyped

import bindthem
from bindthem import HeaderError, InstantiateError, stubs

MODERN = os.path.join(ROOT, "tests", "data", "modern")
HEADER = os.path.join(MODERN, "modern.h")
YAML = os.path.join(MODERN, "instantiate.yml")
CXXS = [c for c in ("g++", "clang++") if shutil.which(c)]
CCS = [c for c in ("gcc", "clang") if shutil.which(c)]


def parse(tmp_path, text, yml=None, strict=False, name="h.h"):
    h = tmp_path / name
    h.write_text(textwrap.dedent(text))
    y = None
    if yml is not None:
        y = tmp_path / "instantiate.yml"
        y.write_text(textwrap.dedent(yml))
    return bindthem.parse_header(str(h), str(y) if y else None, strict=strict)


def decls(meta):
    return {d["name"]: d for d in meta["declarations"]}


@pytest.mark.parametrize("cxx", CXXS)
def test_modern_header_builds_and_computes(cxx, tmp_path):
    lib = bindthem.build(HEADER, YAML, cxx=cxx, cache_dir=str(tmp_path))
    x = np.arange(1, 5, dtype=np.float64)
    assert lib.vsum(np.array([2], dtype=np.int32), x) == 20.0     # [[maybe_unused]] sizes
    y = x.astype(np.float32)
    lib.twice(y)                                                  # attributes after name, ')'
    assert y.tolist() == [2, 4, 6, 8]
    assert lib.vmax(x.astype(np.float32)) == 4.0                  # -> T
    assert lib.add_b(x) == 14.0 and lib.add_b(x.astype(np.float32)) == 6.0   # int B: 4, -4
    assert lib.maybe_neg(np.float32(2)) == -2.0 and lib.maybe_neg(np.float64(2)) == 2.0
    assert lib.count_c(np.array([97, 1, 97], dtype=np.int32)) == 2           # 'a'
    assert lib.count_c(np.frombuffer(b"abba", dtype=np.int8).copy()) == 2    # "'b'"
    assert lib.plus_un(1) == 1 + 7 + 16                           # unsigned, size_t 0x10
    assert lib.times_k(2.0) == 6.0 and lib.times_k(np.float32(2)) == 10.0   # K = 3 default, 5
    assert lib.count_pos(np.array([-1.0, 2, 3])) == 2             # class I = long default
    assert lib.second(1, 2.5) == 2.5                              # unnamed int
    assert lib.dot(x, x) == 30.0 and lib.answer() == 42           # restrict, (void)
    sig = {ov: f.__name__ for f in lib.__dict__.values() if isinstance(f, bindthem.Function)
           for ov in f.overloads}
    assert "double add_b<double, 4>(const double x[], const int x_size)" in sig
    assert "int count_c<int, 'a'>(const int x[], const int x_size)" in sig
    assert "long count_pos<double, long>(const double x[], const long x_size)" in sig
    assert "double second(int arg0, double b)" in sig
    # an unnamed scalar is positional-only: in the signature, the stub and the call
    assert untyped(lib.second) == "(arg0, /, b)"
    assert lib.second(1, b=3.5) == 3.5
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
        lib.second(arg0=1, b=2.0)
    with pytest.raises(TypeError, match=r"^second\(\) got an unexpected keyword argument 'c'; the "
                                        r"keyword it takes is 'b' \(spelled exactly"):
        lib.second(1, c=2.0)                                      # arg0 is not a keyword
    assert "def second(arg0: int, /, b: float) -> float" in stubs.render(HEADER, YAML)


def test_modern_symbols_and_skips():
    meta = bindthem.parse_header(HEADER, YAML)
    sym = {ov["signature"]: ov["symbol"] for f in meta["functions"] for ov in f["overloads"]}
    # g++ 12 and clang++ 14 define these (test_modern_header_builds_and_computes binds them)
    assert sym["double add_b<double, 4>(const double x[], const int x_size)"] == \
        "_Z5add_bIdLi4EET_PKS0_i"
    assert sym["float add_b<float, -4>(const float x[], const int x_size)"] == \
        "_Z5add_bIfLin4EET_PKS0_i"
    assert sym["float maybe_neg<float, true>(float a)"] == "_Z9maybe_negIfLb1EET_S0_"
    assert sym["int count_c<int, 'a'>(const int x[], const int x_size)"] == \
        "_Z7count_cIiLc97EEiPKT_i"
    assert sym["long plus_un<long, 7, 16>(long a)"] == "_Z7plus_unIlLj7ELm16EET_S0_"
    assert sym["double times_k<double, 3>(double a)"] == "_Z7times_kIdLi3EET_S0_"
    skipped = {s["name"]: s["reason"] for s in meta["skipped"]}
    assert skipped["broken"] == ("unbindable: cannot read the declaration: %s:61:46: "
                                 "expected ')' near ';'" % HEADER)
    assert len(meta["functions"]) == 12
    with pytest.raises(HeaderError) as ei:
        bindthem.parse_header(HEADER, YAML, strict=True)
    assert (ei.value.lineno, ei.value.colno) == (61, 46)


def test_attributes_anywhere(tmp_path):
    meta = parse(tmp_path, """
        // Doc above an attribute.
        [[nodiscard]] __attribute__((visibility("default"))) int a(
            const double x[] [[maybe_unused]], const int x_size [[maybe_unused]]);
        [[maybe_unused]] int b([[maybe_unused]] const double x[],
                               [[maybe_unused]] const int x_size);
        int [[gnu::aligned(8)]] c(const double alignas(8) x[],
                                  const int __attribute__((unused)) x_size)
            __attribute__((pure)) [[deprecated("a ] ) string")]];
        __declspec(dllexport) int d(double y [[maybe_unused, gnu::unused]]) noexcept [[ ]];
        struct alignas(16) S { double v[2]; };
        [[deprecated("]]")]] [[ using gnu : hot, cold ]] int e(int n);
        """)
    ds = decls(meta)
    for n in "abcde":
        assert ds[n]["bindable"], (n, ds[n]["reason"])
    assert ds["a"]["doc"] == "Doc above an attribute."
    assert [p["name"] for p in ds["a"]["params"]] == ["x", "x_size"]
    assert ds["a"]["params"][1]["size_of"] == "x"


def test_unclosed_attribute_only_takes_its_declaration(tmp_path):
    meta = parse(tmp_path, """
        int good1(int n);
        [[deprecated(int bad(int n);
        int good2(int n);
        """)
    ds = decls(meta)
    assert ds["good1"]["bindable"]
    bad = [d for d in meta["declarations"] if not d["bindable"]]
    assert len(bad) == 1 and "cannot read the declaration" in bad[0]["reason"]


def test_trailing_return_and_auto(tmp_path):
    meta = parse(tmp_path, """
        template <class T> auto f(const T x[], const int x_size) -> T;
        auto g(int n) -> double;
        auto h(int n) -> std::complex<double>;
        auto deduced(int n);
        auto ptr(int n) -> double *;
        double both(int n) -> double;
        template <class T> auto u(T a) -> decltype(a + 1);
        """)
    ds = decls(meta)
    assert ds["f"]["bindable"] and ds["f"]["return"]["type"] == "T"
    assert ds["g"]["bindable"] and ds["g"]["return"]["type"] == "double"
    assert ds["h"]["return"]["type"] == "std::complex<double>"
    assert ds["deduced"]["reason"] == "deduced return type ('auto' without '-> type')"
    assert ds["ptr"]["reason"] == "return value is a pointer (double *)"
    assert ds["both"]["reason"] == "trailing return type after a return type other than 'auto'"
    assert "decltype" in ds["u"]["reason"]


def test_unnamed_parameters(tmp_path):
    meta = parse(tmp_path, """
        double s(int, double, const int);
        void arr(const double[], const int x_size);
        void ptr(double *, int n);
        """)
    ds = decls(meta)
    assert [p["name"] for p in ds["s"]["params"]] == ["arg0", "arg1", "arg2"]
    assert ds["s"]["bindable"]
    # an unnamed array is named by its position too (an annotation names it so), and
    # cannot pair with a _size
    assert [p["name"] for p in ds["arr"]["params"]] == ["arg0", "x_size"]
    assert ds["arr"]["reason"] == ("parameter 'arg0' (unnamed) is a pointer with no size after "
                                   "it: name it and follow it with its 'NAME_size', or annotate "
                                   "'arg0'")
    assert ds["ptr"]["reason"].startswith("parameter 'arg0' (unnamed) is a pointer")


def test_c_prototypes_parse(tmp_path):
    meta = parse(tmp_path, """
        double dot(const double *restrict x, const int x_size, const double * __restrict__ y,
                   const int y_size);
        void scale(double *x, int x_size, double a);
        double nosize(const double *x, int n);
        int none(void);
        int old(a, b) int a; double b; { return a; }
        int after(int n);
        """)
    ds = decls(meta)
    assert ds["dot"]["bindable"] and ds["scale"]["bindable"] and ds["none"]["bindable"]
    assert [p["array"] for p in ds["dot"]["params"]] == [True, False, True, False]
    assert ds["none"]["params"] == []
    assert ds["nosize"]["reason"] == "parameter 'x' is a pointer with no 'x_size' after it"
    assert ds["old"]["reason"] == "old-style (K&R) parameter declarations; write a prototype"
    assert ds["after"]["bindable"]


C_HEADER = """\
/* vec.h: a C library, usable from C and C++ */
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Dot product. */
double dot(const double *restrict x, const int x_size, const double *restrict y,
           const int y_size);
/* Scales x in place. */
void scale(double *x, int x_size, double a);
int version(void);
int old(a, b) int a; int b; { return a + b; }
#ifdef __cplusplus
}
#endif
"""

C_SOURCE = """\
#include "vec.h"
double dot(const double *restrict x, const int x_size, const double *restrict y,
           const int y_size)
{
    double s = 0;
    for (int i = 0; i < x_size && i < y_size; i++)
        s += x[i] * y[i];
    return s;
}
void scale(double *x, int x_size, double a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}
int version(void) { return 3; }
"""


@pytest.mark.parametrize("cc", CCS)
def test_c_library_compiled_as_c(cc, tmp_path):
    (tmp_path / "vec.h").write_text(C_HEADER)
    (tmp_path / "vec.c").write_text(C_SOURCE)
    so = tmp_path / "libvec.so"
    subprocess.run([cc, "-x", "c", "-std=c99", "-w", "-shared", "-fPIC", "-O1",
                    str(tmp_path / "vec.c"), "-o", str(so)], check=True)
    lib = bindthem.load(str(so), str(tmp_path / "vec.h"))
    x = np.arange(1.0, 4.0)
    assert lib.dot(x, x) == 14.0
    lib.scale(x, 2.0)
    assert x.tolist() == [2.0, 4.0, 6.0]
    assert lib.version() == 3
    meta = bindthem.parse_header(str(tmp_path / "vec.h"))
    assert decls(meta)["old"]["reason"].startswith("old-style (K&R)")


def test_non_type_template_arguments_checked(tmp_path):
    h = """
        template <class T, int B> T f(T a);
        template <class T, bool NEG> T g(T a);
        template <class T, unsigned char C> T h(T a);
        """
    cases = [
        ("[double, double]", "gives double for template parameter 2 of 'f' (int B), which "
                             "takes an integer value of type int"),
        ("[4, 4]", "gives 4 for template parameter 1 of 'f' (class T), which takes a type"),
        ("[double, 2147483648]", "gives 2147483648 for template parameter 2 of 'f' (int B), "
                                 "which takes an integer value of type int"),
        ("[double, -2147483649]", "gives -2147483649 for template parameter 2 of 'f' (int B), "
                                  "which takes an integer value of type int"),
    ]
    for tup, msg in cases:
        with pytest.raises(InstantiateError, match=r"\[0\]\.types\[0\] " +
                           msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            parse(tmp_path, h, "- types: [%s]\n  functions: [f]\n" % tup)
    meta = parse(tmp_path, h, "- types: [[double, -2147483648]]\n  functions: [f]\n")
    assert meta["functions"][0]["overloads"][0]["symbol"] == "_Z1fIdLin2147483648EET_S0_"
    with pytest.raises(InstantiateError, match="which takes true or false"):
        parse(tmp_path, h, "- types: [[double, 2]]\n  functions: [g]\n")
    meta = parse(tmp_path, h, "- types: [[double, 1], [float, false]]\n  functions: [g]\n")
    assert [o["template_args"] for o in meta["functions"][0]["overloads"]] == \
        [("double", "true"), ("float", "false")]
    with pytest.raises(InstantiateError, match="which takes an integer value of type "
                                               "unsigned char"):
        parse(tmp_path, h, "- types: [[double, 256]]\n  functions: [h]\n")
    with pytest.raises(InstantiateError, match="is a floating value"):
        parse(tmp_path, h, "- types: [[double, 1.5]]\n  functions: [f]\n")


def test_non_type_parameters_bindthem_cannot_instantiate(tmp_path):
    meta = parse(tmp_path, """
        template <class T, double D> T f(T a);
        template <class T, T V> T g(T a);
        enum Mode { A, B };
        template <class T, Mode M> T h(T a);
        template <class T, template <class> class C> T k(T a);
        template <class T, int> T unnamed(T a);
        """)
    ds = decls(meta)
    assert ds["f"]["reason"] == ("non-type template parameter 'D' of type 'double'; bindthem "
                                 "instantiates integer and bool values")
    assert "'V' of type 'T'" in ds["g"]["reason"]
    assert "'M' of type 'Mode'" in ds["h"]["reason"]
    assert ds["k"]["reason"] == "template template parameter"
    assert ds["unnamed"]["reason"] == "template parameter 2 has no name"


def test_defaulted_template_parameters(tmp_path):
    h = """
        template <class T, class I = int, int K = 2, class U = T> T f(T a, I b, U c);
        template <class T, class I = std::vector<T>> T g(T a);
        """
    meta = parse(tmp_path, h, "- types: [[double], [float, long], [float, long, 5, int]]\n"
                              "  functions: [f]\n")
    assert [o["template_args"] for o in meta["functions"][0]["overloads"]] == [
        ("double", "int", "2", "double"), ("float", "long", "5" if False else "2", "float"),
        ("float", "long", "5", "int")]
    with pytest.raises(InstantiateError, match="leaves out template parameter 2 of 'g' "
                                               r"\(class I = std::vector<T>\), whose default "
                                               "bindthem cannot read"):
        parse(tmp_path, h, "- types: [[double]]\n  functions: [g]\n")
    with pytest.raises(InstantiateError, match=r"takes 1 to 4 template parameters <class T, "
                                               r"class I = int, int K = 2, class U = T>"):
        parse(tmp_path, h, "- types: [[double, int, 1, int, int]]\n  functions: [f]\n")


def test_resync_keeps_the_rest(tmp_path):
    meta = parse(tmp_path, """
        int a(int n);
        int bad1(int n,, int m);
        namespace ns {
            int b(int n);
            template <class T int c(T x);
            int d(int n);
            struct broken { int x; ) };
            int e(int n);
        }
        }
        int bad2(int n] ;
        int f(int n);
        """)
    ds = decls(meta)
    good = [n for n, d in ds.items() if d["bindable"]]
    assert good == ["a", "b", "d", "e", "f"]
    assert ds["b"]["namespace"] == ("ns",) and ds["e"]["namespace"] == ("ns",)
    assert ds["f"]["namespace"] == ()
    path = str(tmp_path / "h.h")
    bad = [(d["name"], d["reason"]) for d in meta["declarations"] if not d["bindable"]]
    prefix = "cannot read the declaration: %s:" % path
    assert bad == [
        ("bad1", prefix + "3:16: expected parameter declaration near ','"),
        ("c", prefix + "6:23: expected '>' near 'int'"),
        ("<line 8>", prefix + "8:28: expected '}' near ')'"),
        ("<line 11>", prefix + "11:1: unexpected '}'"),
        ("bad2", prefix + "12:15: expected ')' near ']'"),
    ]
    assert ds["c"]["namespace"] == ("ns",)
    with pytest.raises(HeaderError) as ei:
        parse(tmp_path, "int a(int n);\nint bad(int n,, int m);\n", strict=True)
    assert (ei.value.lineno, ei.value.colno) == (2, 15)


ADVERSARIAL = r"""
import sys, time, bindthem
def cases(n):
    return {
        "parens": "(" * n,
        "closers": ") ] " * n,
        "attrs": "[[ " * n,
        "attr_words": "__attribute__ ( " * n,
        "semis_in_parens": "int f(" + "; int g(" * n,
        "braces": "int f() { " * n,
        "angles": "template < " * n,
        "mismatch": "a ( ] " * n,
        "namespaces": "namespace a { " * n,
        "decls": "int f(int a,, int b);\n" * (n // 8),
        "mixed": "int f(int x) { ( } ; [[ ) ] " * (n // 8),
    }
n = 100000
for (name, text), quarter in zip(cases(n).items(), cases(n // 4).values()):
    times = []
    for size, t in (("quarter", quarter), ("full", text)):
        path = sys.argv[1] + "/" + name + "-" + size + ".h"
        open(path, "w").write(t)
        t0 = time.perf_counter()
        meta = bindthem.parse_header(path)
        times.append(time.perf_counter() - t0)
    print(name, len(meta["declarations"]), "%.3f" % times[1], "%.3f" % times[0])
    # 4 times the input: about 4 times the time (16 if it were quadratic),
    # whatever the machine's speed (a sanitizer's, a loaded one's)
    assert times[1] < 8 * times[0] + 2.0, (name, times)
"""


def test_resync_is_linear(tmp_path):
    """10^5 unbalanced tokens of every kind parse in time linear in their
    number: 4 times as many take at most 8 times as long, plus 2 s (in a
    subprocess: a quadratic resynchronisation would take minutes)."""
    r = subprocess.run([sys.executable, "-c", ADVERSARIAL, str(tmp_path)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    times = {line.split()[0]: float(line.split()[2]) for line in r.stdout.splitlines()}
    assert len(times) == 11
