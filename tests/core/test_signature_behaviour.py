"""The signature is behaviour: what ``inspect.signature(f).bind(...)`` takes,
and what the ``.pyi`` stub declares, is exactly what a call gets past
argument binding with.

One C rule (csrc/core/bt_pyname.c) names the Python parameters (a C name
that is a Python keyword is written ``lambda_``), says which are
positional-only (those up to the last such one or the last unnamed
``argN``) and writes the text signature; the dispatcher's keyword map is
built from the same names at bind time. These tests check the behaviour,
not the text: for every function of every header under tests/data (and
pyamg's, when its sdist is at hand), closed Functions, open Functions
(instantiation on demand) and CUDA kernels under the mock driver, a set of
argument shapes (all positional, too many, each parameter by keyword, the
positional-only ones by keyword, keyword-named ones by their C name and by
their ``_`` name, unknown keywords, duplicates) binds to the signature
exactly when the call gets past binding.

The arguments are sentinels no overload takes, so a call that binds fails
at overload selection (a TypeError of another wording) and never reaches
the C function; an open Function's miss cannot deduce a template argument
from them either, so nothing is compiled.
"""

import ast
import glob
import inspect
import os
import re
import shutil
import subprocess
import sys
import warnings

import pytest

from sources import DATA, ROOT, TESTS
from support import python_env, untyped

import bindthem
from bindthem import _core

sys.path.insert(0, os.path.join(TESTS, "api", "pyamg"))  # pyamg_libs, for the pyamg case

# the review's two cases, and their kin: a keyword-named parameter, one
# before it (positional-only too), an unnamed one, a soft keyword (a name)
KW_H = """\
// x *= lambda
template <class T>
void scale(T x[], const int x_size, T lambda)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= lambda;
}
// lambda only
extern "C" void kw(double x, double lambda) {}
// in, then names
extern "C" double mixed(double a, double in, double match, double b = 2.0) { return a; }
// unnamed
extern "C" double un(int, double x) { return x; }
// no parameter
extern "C" int none() { return 1; }
"""
KW_YML = "- types: [[float], [double]]\n  functions: [scale]\n"

KW_CUH = """\
// x *= lambda
template <class T>
__global__ void scale(T x[], const int x_size, T lambda) {}
// from, unnamed, then a name
__global__ void mixed(float from, int, float y[], const int y_size, float c = 1.0f) {}
"""

# What the dispatcher raises when the arguments do not bind (CPython's words,
# and bindthem's for an unknown keyword and for no overload's parameters).
BINDING = re.compile(
    r"got an unexpected keyword argument|got multiple values for argument|"
    r"positional-only arguments? passed as keyword|"
    r"positional arguments? but \d+ (?:was|were) given|missing \d+ required positional argument|"
    r"no overload takes \d+ positional")
LAUNCH = {"grid": 1, "block": 1}  # a kernel call's launch keywords


class Sentinel:
    """An argument no overload takes (no dtype, no number)."""

    def __repr__(self):
        return "<sentinel>"


S = Sentinel()
P = inspect.Parameter


# ---- signatures as text: the metadata's, __text_signature__, the stub's ----

def signature_of(args):
    """An inspect.Signature of an ``ast.arguments`` (defaults as their text)."""
    pos = args.posonlyargs + args.args
    first = len(pos) - len(args.defaults)
    params = [P(a.arg, P.POSITIONAL_ONLY if i < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
                default=ast.unparse(args.defaults[i - first]) if i >= first else P.empty)
              for i, a in enumerate(pos)]
    params += [P(a.arg, P.KEYWORD_ONLY, default=P.empty if d is None else ast.unparse(d))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    return inspect.Signature(params)


def parse_signature(text):
    """inspect.Signature of "(a, in_, /, b=1.0)" (Python's grammar decides)."""
    return signature_of(ast.parse("def f%s: pass" % text).body[0].args)


def shape(sig):
    """What binding reads of a signature: names, kinds, which have defaults."""
    return tuple((p.name, p.kind, p.default is not P.empty) for p in sig.parameters.values())


def stub_signatures(text):
    """{function name: [inspect.Signature per def or @overload]} of a stub."""
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            out.setdefault(node.name, []).append(signature_of(node.args))
    return out


def overload_signatures(f):
    """The Signature of each distinct Python signature of f's overloads, as
    f takes them (a kernel's launch keywords after them)."""
    kwonly = [p for p in inspect.signature(f).parameters.values() if p.kind == P.KEYWORD_ONLY]
    sigs = []
    for s in f.signatures:
        assert s.startswith(f.__name__ + "("), s
        sig = parse_signature(s[len(f.__name__):])
        sig = sig.replace(parameters=list(sig.parameters.values()) + kwonly)
        if shape(sig) not in [shape(x) for x in sigs]:
            sigs.append(sig)
    return sigs


# ---- argument shapes ----

def shapes(sigs, cnames):
    """(number of positional arguments, keyword names) of the calls to try:
    every count of positional ones up to one too many; for each parameter,
    it and those after it by keyword, it alone by keyword (after those
    before it, or in place of the last positional one), it twice; every C
    parameter name (size ones too), bare and with '_', by keyword after the
    parameters before it and after all; an unknown keyword. Never the empty
    call (it would run a function without parameters)."""
    out = []
    positional = [[p.name for p in s.parameters.values() if p.kind != P.KEYWORD_ONLY]
                  for s in sigs]
    n = max(len(ps) for ps in positional)
    out += [(k, ()) for k in range(1, n + 2)]
    for ps in positional:
        for i, name in enumerate(ps):
            out += [(i, tuple(ps[i:])), (i, (name,)), (len(ps) - 1, (name,)),
                    (len(ps), (name,))]
    for i, c in cnames:
        for kw in (c, c + "_"):
            out += [(i, (kw,)), (n, (kw,))]
    out += [(n, ("no_such_parameter",)), (0, ("no_such_parameter",))]
    return [s for s in dict.fromkeys(out) if s != (0, ())]


def binds(sig, args, kwargs):
    try:
        sig.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


def call_binds(f, args, kwargs):
    """Whether the call gets past argument binding (it always fails later:
    no overload takes a sentinel)."""
    try:
        f(*args, **kwargs)
    except TypeError as e:
        return not BINDING.search(str(e).split("\n")[0])
    raise AssertionError("%s(*%r, **%r) returned" % (f.__name__, args, kwargs))


def check(f, cnames, stub=None, extra=None):
    """Mismatches between f's signature(s), the stub's defs (when given)
    and what f's calls bind, one line each. cnames: [(Python position or
    None, C name)] of every C parameter."""
    extra = extra or {}
    sig = inspect.signature(f)  # ValueError if the text is no Python signature
    sigs = overload_signatures(f) if f.signatures else [sig]
    bad = []
    if shape(sig) != shape(sigs[0]):
        bad.append("%s: inspect.signature %s, first overload %s" % (f.__name__, sig, sigs[0]))
    if stub is not None:
        # the stub shows the overloads' signatures (without a kernel's launch keywords)
        want = {shape(s.replace(parameters=[p for p in s.parameters.values()
                                            if p.kind != P.KEYWORD_ONLY])) for s in sigs}
        if {shape(s) for s in stub} != want:
            bad.append("%s: the stub's %s, the call's %s" % (
                f.__name__, [str(s) for s in stub], [str(s) for s in sigs]))
    n_kwonly = len([p for p in sig.parameters.values() if p.kind == P.KEYWORD_ONLY])
    for k, kws in shapes(sigs, [(i if i is not None else 0, c) for i, c in cnames]):
        args, kwargs = (S,) * k, dict(extra, **{kw: S for kw in kws})
        got = call_binds(f, args, kwargs)
        want = any(binds(s, args, kwargs) for s in sigs)
        if len(sigs) == 1:
            want = binds(sig, args, kwargs)  # one signature: exactly inspect's
        if stub is not None and not n_kwonly:
            want_stub = any(binds(s, args, kwargs) for s in stub)
            if want_stub != got:
                bad.append("%s(%s): the stub %s, the call %s" % (
                    f.__name__, call_text(k, kws), binds_word(want_stub), binds_word(got)))
        if got != want:
            bad.append("%s(%s): the signature %s %s, the call %s" % (
                f.__name__, call_text(k, kws), sig, binds_word(want), binds_word(got)))
    return bad


def call_text(k, kws):
    return ", ".join(["S"] * k + ["%s=S" % kw for kw in kws])


def binds_word(b):
    return "binds" if b else "refuses"


def c_names(ov_or_decl):
    """[(Python position or None, C name)] of an overload's or a
    declaration's parameters."""
    out, i = [], 0
    for p in ov_or_decl["params"]:
        out.append((None if p["size_of"] else i, p["name"]))
        i += not p["size_of"]
    return out


def functions(lib, kind=None):
    kind = kind or bindthem.Function
    return [f for f in vars(lib).values() if isinstance(f, kind)]


def closed_mismatches(lib, stub_text=None):
    meta = {fn["name"]: fn for fn in lib._bindthem_.metadata["functions"]}
    stub = stub_signatures(stub_text) if stub_text is not None else None
    bad = []
    for f in functions(lib):
        names = dict.fromkeys(c for ov in meta[f.__name__]["overloads"] for c in c_names(ov))
        bad += check(f, list(names), None if stub is None else stub.get(f.__name__, []))
    return bad


# ---- the libraries: every header under tests/data that builds whole ----

def header_cases():
    """(id, header, instantiate.yml or None): every C++ header under
    tests/data/kernels and tests/data/modern with its YAML, and the
    typing and README examples. Left out: tests/data/headers/dialect.h
    (host functions without bodies beside __global__ kernels: neither back
    end builds it whole), tests/data/mangle (mangling only), the bad_*
    folders; ckernels.h and vec.h are C libraries (c_library_cases)."""
    cases = []
    for h in sorted(glob.glob(os.path.join(DATA, "kernels", "*.h"))):
        stem = os.path.splitext(h)[0]
        yml = stem + ".yml" if os.path.exists(stem + ".yml") else stem + "_ok.yml"
        if os.path.exists(yml):
            cases.append((os.path.basename(stem), h, yml))
    cases.append(("modern", os.path.join(DATA, "modern", "modern.h"),
                  os.path.join(DATA, "modern", "instantiate.yml")))
    cases.append(("features", os.path.join(TESTS, "api", "typing", "features.h"),
                  os.path.join(TESTS, "api", "typing", "features.yml")))
    cases.append(("myheader", os.path.join(ROOT, "examples", "myheader.h"),
                  os.path.join(ROOT, "examples", "instantiate.yml")))
    return cases


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("sig")
    (d / "kw.h").write_text(KW_H)
    (d / "kw.yml").write_text(KW_YML)
    (d / "kw.cuh").write_text(KW_CUH)
    (d / "kw_cuh.yml").write_text("- types: [[float], [double]]\n  functions: [scale]\n"
                                  "- types: null\n  functions: [mixed]\n")
    return d


@pytest.fixture(scope="module")
def cases(sources):
    if not shutil.which(os.environ.get("CXX", "c++")):
        pytest.skip("needs a C++ compiler")
    return [("kw", str(sources / "kw.h"), str(sources / "kw.yml"))] + header_cases()


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


def build(header, yml, cache, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # left-out functions, compiler warnings
        return bindthem.build(header, yml, cache_dir=cache, cxxflags="-O0", **kw)


@pytest.fixture(scope="module")
def c_libraries(tmp_path_factory):
    """The C libraries of tests/data/kernels (ckernels.c, vec.c), bound."""
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        pytest.skip("needs %s" % cc)
    d = tmp_path_factory.mktemp("clibs")
    libs = []
    for stem in ("ckernels", "vec"):
        so = str(d / ("lib%s.so" % stem))
        subprocess.run([cc, "-std=c11", "-O0", "-fPIC", "-shared",
                        os.path.join(DATA, "kernels", stem + ".c"), "-o", so], check=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ckernels.h declares one it lacks
            libs.append((stem, bindthem.load(so, os.path.join(DATA, "kernels", stem + ".h"))))
    return libs


def report(bad):
    return "\n".join(bad[:40]) + ("\n... %d more" % (len(bad) - 40) if len(bad) > 40 else "")


# ---- the review's two cases ----

def test_a_keyword_named_parameter_is_not_a_keyword(sources, cache):
    """(x, lambda_, /): lambda= (by its C name) is a keyword no parameter
    has, lambda_= and x= are positional-only; the wording is the one any
    wrong keyword gets."""
    lib = build(str(sources / "kw.h"), str(sources / "kw.yml"), cache)
    assert lib.kw.__text_signature__ == "(x, lambda_, /)"
    assert lib.kw.parameters == ("x", "lambda_")
    lib.kw(1.0, 2.0)
    unknown = (r"^kw\(\) got an unexpected keyword argument 'lambda'; it takes no keyword "
               r"arguments \(pass them by position\)$")
    with pytest.raises(TypeError, match=unknown):
        lib.kw(1.0, **{"lambda": 2.0})
    for kws in ({"lambda_": 2.0}, {"x": 1.0, "lambda_": 2.0}):
        with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
            lib.kw(*[1.0][:2 - len(kws)], **kws)
    # a name after the last positional-only one stays a keyword
    assert untyped(lib.mixed) == "(a, in_, /, match, b=2.0)"
    assert lib.mixed(1.0, 2.0, match=3.0) == 1.0
    with pytest.raises(TypeError, match=r"got an unexpected keyword argument 'in'; the keywords "
                                        r"it takes are 'match', 'b' "):
        lib.mixed(1.0, match=3.0, **{"in": 2.0})
    with pytest.raises(TypeError, match=r"positional-only arguments passed as keyword arguments: "
                                        r"'a'"):
        lib.mixed(a=1.0, in_=2.0, match=3.0)


def test_an_open_function_has_the_closed_ones_signature(sources, cache):
    """template <class T> void scale(T x[], const int x_size, T lambda),
    bound open: its signature is (x, lambda_, /), which inspect reads, and
    a call binds as that signature does before and after instantiating."""
    np = pytest.importorskip("numpy")
    lib = build(str(sources / "kw.h"), None, cache)
    f = lib.scale
    assert f.__text_signature__ == "(x, lambda_, /)"
    assert f.parameters == ("x", "lambda_")
    assert untyped(f) == "(x, lambda_, /)"
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'lambda'"):
        f(np.ones(2), **{"lambda": 2.0})
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
        f(np.ones(2), lambda_=2.0)
    with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'lambda_'$"):
        f(np.ones(2))  # does not bind: compiles nothing
    assert f.overloads == ()
    x = np.ones(3)
    f(x, 2.0)  # instantiates scale<double>
    assert x.tolist() == [2.0] * 3 and f.__text_signature__ == "(x, lambda_, /)"
    closed = build(str(sources / "kw.h"), str(sources / "kw.yml"), cache)
    assert f.signatures == closed.scale.signatures[1:]  # the double one, the same text
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'lambda'"):
        f(x, **{"lambda": 2.0})


def test_an_open_function_keeps_listed_overloads_of_other_signatures(cache):
    """relax<int> cannot take `T omega = 0.5` (no default there): its
    listed overload joins the open relax beside those that have it."""
    h, y = os.path.join(DATA, "kernels", "defaults.h"), os.path.join(DATA, "kernels",
                                                                     "defaults.yml")
    f = build(h, y, cache, on_demand=True).relax
    assert f.__text_signature__ == "(y, x, omega=0.5, shift=0)"
    assert f.signatures == ("relax(y, x, omega=0.5, shift=0)",) * 2 + (
        "relax(y, x, omega, shift=0)",)
    assert [ov.split("(")[0] for ov in f.overloads] == [
        "double relax<double>", "float relax<float>", "int relax<int>"]


# ---- the property ----

def test_closed_functions_bind_as_their_signature_and_stub(cases, cache, c_libraries):
    """Every closed Function of every header: the call binds exactly the
    arguments its signature (and each overload's, when they differ) and
    its stub (python -m bindthem.stubs's text, bindthem.stubs.render) bind."""
    from bindthem import stubs
    bad, n = [], 0
    for _, header, yml in cases:
        lib = build(header, yml, cache)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = stubs.render(header, yml)
        bad += closed_mismatches(lib, text)
        n += len(functions(lib))
    for _, lib in c_libraries:
        bad += closed_mismatches(lib)
        n += len(functions(lib))
    assert not bad, report(bad)
    assert n > 90  # the headers bound what they bind


def test_open_functions_bind_as_their_signature(cases, cache):
    """Every templated function bound open (on_demand=True: the listed
    instantiations kept in it): its signature is one inspect reads, the
    closed Function's, and the call binds exactly what it binds."""
    bad, n = [], 0
    for _, header, yml in cases:
        closed = build(header, yml, cache)
        lib = build(header, yml, cache, on_demand=True)
        decls = lib._bindthem_.metadata["declarations"]
        for f in functions(lib):
            d = [d for d in decls if d["name"] == f.__name__ and d["template"]]
            if not d:
                continue  # untemplated: closed (the other test)
            assert f.open
            n += 1
            try:
                sig = inspect.signature(f)
            except ValueError as e:
                bad.append("%s: %s (__text_signature__ %r)" % (f.__name__, e,
                                                              f.__text_signature__))
                continue
            twin = getattr(closed, f.__name__, None)
            if twin is not None and len(overload_signatures(twin)) == 1:
                names = [(p.name, p.kind) for p in sig.parameters.values()]
                if names != [(p.name, p.kind) for p in inspect.signature(twin).parameters.values()]:
                    bad.append("%s: open %s, closed %s" % (f.__name__, sig,
                                                           inspect.signature(twin)))
            bad += check(f, c_names(d[0]))
    assert not bad, report(bad)
    assert n > 30


def test_stub_command_shows_what_the_call_binds(sources, cache, tmp_path):
    """``python -m bindthem.stubs``'s defs bind exactly the calls that bind."""
    out = tmp_path / "kw.pyi"
    r = subprocess.run([sys.executable, "-m", "bindthem.stubs", str(sources / "kw.h"), "-i",
                        str(sources / "kw.yml"), "-o", str(out)],
                       capture_output=True, text=True, env=python_env(), timeout=120)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "def kw(x: float, lambda_: float, /) -> None:" in text
    bad = closed_mismatches(build(str(sources / "kw.h"), str(sources / "kw.yml"), cache), text)
    assert not bad, report(bad)


# ---- CUDA kernels (the mock driver) ----

def mock_module(header, yml):
    """A mock module with the header's planned kernels, each parameter laid
    out by its size (the mock aligns each to its size)."""
    size = {t["c"]: t["size"] for t in _core.scalar_types()}
    lines = ["bindthem-mock-module"]
    for fn in bindthem.parse_header(header, yml)["functions"]:
        for ov in fn["overloads"]:
            lines.append("kernel %s %s" % (ov["symbol"], " ".join(
                str(8 if p["array"] else size[p["type"]]) for p in ov["params"])))
    return ("\n".join(lines) + "\n").encode()


def kernel_cases(sources):
    """tests/data/cuda's headers the mock can lay out (complex_ops.cuh
    mixes 4-byte-aligned complex<float> with 8-byte values, which the
    mock's size-aligned layout cannot show), and the review's kernel."""
    cases = [(str(sources / "kw.cuh"), str(sources / "kw_cuh.yml"))]
    for h in sorted(glob.glob(os.path.join(DATA, "cuda", "*.cuh"))):
        if os.path.basename(h) != "complex_ops.cuh":
            cases.append((h, os.path.splitext(h)[0] + ".yml"))
    return cases


def test_kernels_bind_as_their_signature(mock, sources):
    import bindthem.cuda as cuda
    bad, n = [], 0
    for header, yml in kernel_cases(sources):
        lib = cuda.load(mock_module(header, yml), header, yml)
        meta = {fn["name"]: fn for fn in lib._bindthem_.metadata["functions"]}
        for k in functions(lib, cuda.Kernel):
            names = dict.fromkeys(c for ov in meta[k.__name__]["overloads"] for c in c_names(ov))
            bad += check(k, list(names), extra=LAUNCH)
            n += 1
    assert not bad, report(bad)
    assert n > 10


def test_the_review_kernel(mock, sources):
    import bindthem.cuda as cuda
    header, yml = str(sources / "kw.cuh"), str(sources / "kw_cuh.yml")
    lib = cuda.load(mock_module(header, yml), header, yml)
    assert lib.scale.__text_signature__.startswith("(x, lambda_, /, *, grid, block,")
    assert str(inspect.signature(lib.mixed)).startswith("(from_, arg1, /, y, c=1.0, *, grid,")
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'lambda'"):
        lib.scale(S, grid=1, block=1, **{"lambda": 2.0})
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword"):
        lib.scale(S, lambda_=2.0, grid=1, block=1)


# ---- pyamg ----

@pytest.mark.pyamg
def test_pyamg_functions_bind_as_their_signature():
    """pyamg's amg_core (remapped overloads with other parameter lists
    among them): the call binds what some overload's signature binds, the
    stub shows those signatures."""
    import pyamg_libs
    from pyamg_sdist import amg_core_or_skip

    from bindthem import stubs
    core = amg_core_or_skip()
    libs = pyamg_libs.build_libraries(core)
    bad = []
    for name, (header, yml) in pyamg_libs.sources(core).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            text = stubs.render(header, yml)
        bad += closed_mismatches(libs[name], text)
    assert not bad, report(bad)
    assert sum(len(functions(lib)) for lib in libs.values()) > 50
