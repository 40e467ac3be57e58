"""bt_mangle's symbol names against what g++ really emits.

tests/data/mangle/decls.h (+ instantiate.yml, names.tsv) is written by
tests/core/c/test_mangle.c. Here the whole pipeline is checked: parse_header's
'symbol' for every overload must be a function that g++, compiling decls.h
and the explicit instantiations bindthem.build writes, defines.
"""

import os
import re
import shutil
import subprocess

import pytest

from sources import ROOT

import bindthem
from bindthem._services.compile.source import instantiation_source

DATA = os.path.join(ROOT, "tests", "data", "mangle")
HEADER = os.path.join(DATA, "decls.h")
YAML = os.path.join(DATA, "instantiate.yml")

pytestmark = pytest.mark.skipif(not (shutil.which("g++") and shutil.which("nm")),
                                reason="needs g++ and nm")


def loadable_yaml(tmp_path):
    """instantiate.yml without the tuples the planner refuses (complex of
    complex, which g++ accepts but bindthem does not bind); returns the path
    and the refused tuples."""
    lines = open(YAML).read().splitlines(keepends=True)
    refused = []
    path = tmp_path / "instantiate.yml"
    for _ in range(10):
        path.write_text("".join(lines))
        try:
            return str(path), refused, bindthem.parse_header(HEADER, str(path))
        except bindthem.InstantiateError as e:
            assert "is not supported" in str(e), str(e)
            refused.append(lines[e.lineno - 1].strip())
            del lines[e.lineno - 1]
    raise AssertionError("too many refused tuples: %r" % refused)


@pytest.fixture(scope="module")
def gxx_symbols(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mangle")
    yml, refused, meta = loadable_yaml(tmp)
    src = tmp / "inst.cpp"
    src.write_text(instantiation_source(HEADER, yml))
    lib = tmp / "libdecls.so"
    subprocess.run(["g++", "-std=c++11", "-shared", "-fPIC", "-O0", str(src), "-o", str(lib)],
                   check=True, capture_output=True)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True,
                        capture_output=True, text=True).stdout
    defined = {parts[2] for parts in (line.split() for line in nm.splitlines())
               if len(parts) == 3 and parts[1] in "TW"}
    return meta, refused, defined


def test_enough_declarations(gxx_symbols):
    meta, refused, defined = gxx_symbols
    assert len(meta["declarations"]) >= 30
    assert sum(len(f["overloads"]) for f in meta["functions"]) >= 40
    for r in refused:
        assert "std::complex" in r


def test_every_symbol_is_defined_by_gxx(gxx_symbols):
    meta, refused, defined = gxx_symbols
    ours = {ov["symbol"]: ov["signature"] for f in meta["functions"] for ov in f["overloads"]}
    missing = {s: sig for s, sig in ours.items() if s not in defined}
    assert not missing, "bt_mangle names g++ does not define:\n" + "\n".join(
        "%s  %s" % kv for kv in sorted(missing.items()))


def test_gxx_defines_no_other_kernel(gxx_symbols):
    meta, refused, defined = gxx_symbols
    ours = {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]}
    kernels = {s for s in defined if not re.match(r"_ZN?St|_ZNKSt|_ZSt|_init$|_fini$", s)}
    assert kernels - ours == set()


def test_symbols_match_names_tsv(gxx_symbols):
    meta, refused, defined = gxx_symbols
    ours = {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]}
    expected = {}
    with open(os.path.join(DATA, "names.tsv")) as f:
        for line in f:
            if line.strip():
                sym, decl = line.rstrip("\n").split("\t")
                expected[sym] = decl
    assert ours <= set(expected)
    # the only expected names we lack are those with a complex of complex,
    # which bindthem refuses to bind (the tuples loadable_yaml dropped)
    lacking = set(expected) - ours
    assert len(lacking) == len(refused)
    for sym in lacking:
        assert "std::complex<std::complex<" in expected[sym], sym


def test_pyamg_like_and_namespaced_present(gxx_symbols):
    meta, refused, defined = gxx_symbols
    names = {f["name"] for f in meta["functions"]}
    assert {"gauss_seidel", "jacobi", "csr_matvec", "sor", "deep_apply", "int64_index",
            "llong_sum", "cdouble_sum"} <= names
    syms = {ov["symbol"] for f in meta["functions"] for ov in f["overloads"]}
    assert "_ZN3amg5relax3sorIiddEEvPKT_iS4_iPKT0_iPS5_iS7_iT1_" in syms
    assert "_Z12gauss_seidelIlddEvPKT_iS2_iPKT0_iPS3_iS5_iS0_S0_S0_" in syms


def test_run_mangle_test_sh():
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    if not asan or not os.path.isabs(asan) or not os.path.exists(asan):
        pytest.skip("gcc's ASan runtime (libasan.so) is missing")
    if not shutil.which("c++filt"):
        pytest.skip("needs c++filt")
    proc = subprocess.run(["sh", os.path.join(ROOT, "tests", "core", "c", "run_mangle_test.sh")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS:" in proc.stdout


NTTP_HEADER = """\
#include <cstddef>
namespace nt {
template <class T, int B> void f(T x[], const int x_size) {}
template <class T, long L, unsigned long long U>
T g(T a, const T *b, const int b_size) { return a; }
template <bool NEG, class T> T h(T a) { return a; }
template <class T, char C, signed char S, unsigned char UC, short SH> int k(T a) { return C; }
template <std::size_t N, class T = double, int K = -1> T m(const T x[], const int x_size)
{ return x[0]; }
}
"""

NTTP_YAML = """\
- types: [[double, 4], [float, -4], [int, 0], [double, 2147483647], [double, -2147483648]]
  functions: [f]
- types: [[double, -9223372036854775808, 18446744073709551615], [float, 1, 0]]
  functions: [g]
- types: [[true, double], [false, "std::complex<float>"]]
  functions: [h]
- types: [[int, 'a', -128, 255, -32768], [double, "'\\\\n'", 0, 0, 7]]
  functions: [k]
- types: [[0], [18446744073709551615, float], [3, double, 5]]
  functions: [m]
"""


@pytest.mark.parametrize("cxx", [c for c in ("g++", "clang++") if shutil.which(c)])
def test_non_type_template_arguments_as_the_compilers_mangle(cxx, tmp_path):
    """Value template arguments (L<type>[n]<digits>E) in every integer type,
    bool and char, with defaults filled in: each symbol bindthem names is one
    the compiler defines (nm), and the compiler defines no other."""
    h = tmp_path / "nttp.h"
    h.write_text(NTTP_HEADER)
    y = tmp_path / "instantiate.yml"
    y.write_text(NTTP_YAML)
    meta = bindthem.parse_header(str(h), str(y), strict=True)
    ours = {ov["symbol"]: ov["signature"] for f in meta["functions"] for ov in f["overloads"]}
    assert len(ours) == 14
    assert "_ZN2nt1fIdLin2147483648EEEvPT_i" in ours
    src = tmp_path / "inst.cpp"
    src.write_text(instantiation_source(str(h), str(y)))
    lib = tmp_path / "libnttp.so"
    subprocess.run([cxx, "-std=c++11", "-shared", "-fPIC", "-O0", str(src), "-o", str(lib)],
                   check=True, capture_output=True)
    nm = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True,
                        capture_output=True, text=True).stdout
    defined = {p[2] for p in (line.split() for line in nm.splitlines())
               if len(p) == 3 and p[1] in "TW" and p[2].startswith("_ZN2nt")}
    assert set(ours) == defined, (sorted(set(ours) - defined), sorted(defined - set(ours)))
