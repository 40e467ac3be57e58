"""bindthem.load / bindthem.build: libraries as modules, metadata of the
bound functions, missing symbols, pickling, the build cache, the CLI,
threads, and the README example."""

import importlib
import inspect
import os
import pickle
import subprocess
import sys
import textwrap
import types

import pytest

from sources import ROOT, kernel
from support import overlap, python_env, spin_intervals, untyped

import bindthem
from bindthem import _core

buildmod = importlib.import_module("bindthem._services.compile.kernels")


def run_python(code, stdin=None, cwd=None, env=None):
    e = python_env(**(env or {}))
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True,
                          cwd=cwd, env=e, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    return proc.stdout.decode()


# --- the Library module -------------------------------------------------------


def test_library_is_a_module(abi, abi_lib):
    assert isinstance(abi, types.ModuleType)
    assert isinstance(abi, bindthem.Library)
    assert type(abi).__bases__ == (bindthem.Library,)  # its own class: test_library_namespace
    assert abi.__name__ == "abi"  # the header's stem
    assert abi.__file__ == abi_lib
    assert "neg_int" in abi.__all__ and "fill_seq" in abi.__all__
    assert abi.__all__ == sorted(abi.__all__)
    assert set(abi.__all__) <= set(dir(abi))
    assert "metadata" in dir(abi)
    for name in abi.__all__:
        assert isinstance(getattr(abi, name), bindthem.Function)
    assert repr(abi) == "<bindthem.Library 'abi' from %r (%d functions)>" % (
        abi_lib, len(abi.__all__))


def test_module_doc_lists_methods(abi):
    doc = abi.__doc__
    assert doc.startswith("Kernels of abi.h, bound by bindthem.\n\nMethods\n-------\n")
    assert doc.split("-------\n")[1].split() == abi.__all__


def test_library_in_sys_modules_is_importable(abi_lib):
    lib = bindthem.load(abi_lib, kernel("abi.h"), kernel("abi.yml"), name="bt_fixture_abi")
    assert lib.__name__ == "bt_fixture_abi"
    assert lib.neg_int.__module__ == "bt_fixture_abi"
    sys.modules["bt_fixture_abi"] = lib
    try:
        mod = importlib.import_module("bt_fixture_abi")
        assert mod is lib
        ns = {}
        exec("from bt_fixture_abi import neg_int, half_double\n"
             "from bt_fixture_abi import *\n"
             "r = neg_int(4), half_double(1.0), not_bool(False)", ns)
        assert ns["r"] == (-4, 0.5, True)
        assert set(lib.__all__) <= set(ns)
    finally:
        del sys.modules["bt_fixture_abi"]


def test_function_metadata(abi):
    f = abi.errfunc
    assert f.__name__ == "errfunc"
    assert f.__qualname__ == "errfunc"
    assert f.__module__ == "abi"
    assert f.__doc__ == "A function with the README's parameter names, for error messages."
    assert untyped(f) == "(J, x, y, a)"
    assert list(inspect.signature(f).parameters) == ["J", "x", "y", "a"]
    assert f.parameters == ("J", "x", "y", "a")
    assert f.overloads == (
        "int errfunc<int, float>(const int J[], const int J_size, float x[], const int x_size, "
        "float y[], const int y_size, double a)",
        "int errfunc<int, double>(const int J[], const int J_size, double x[], const int x_size, "
        "double y[], const int y_size, double a)")
    assert repr(f) == "<bindthem function abi.errfunc with 2 overloads>"
    assert repr(abi.neg_int) == "<bindthem function abi.neg_int with 1 overload>"
    assert untyped(abi.big_uchar) == "()"
    assert abi.many.__doc__ == "Many parameters, arrays and scalars mixed; writes into out."
    assert len(abi.fill_seq.overloads) == 13


def test_functions_work_as_class_attributes(abi):
    class K:
        neg = abi.neg_int

    assert K().neg(3) == -3  # no self binding, like a builtin


def test_function_keeps_library_loaded(abi_lib):
    lib = bindthem.load(abi_lib, kernel("abi.h"), kernel("abi.yml"))
    f = lib.neg_int
    del lib
    import gc
    gc.collect()
    assert f(5) == -5


def test_without_yaml_binds_untemplated_exported(abi_lib, c_lib):
    lib = bindthem.load(abi_lib, kernel("abi.h"))
    assert "fill_seq" not in lib.__all__ and "errfunc" not in lib.__all__
    assert "neg_int" in lib.__all__ and "many" in lib.__all__
    assert len(lib.__all__) == 34
    assert lib.neg_int(2) == -2
    c = bindthem.load(c_lib, kernel("ckernels.h"))
    assert c.__all__ == ["c_add", "c_dot", "c_fill", "c_odd", "c_spin"]
    assert c.unexported == ["int c_missing(const int x)"]


# --- missing symbols ----------------------------------------------------------


def test_missing_instantiation(symbols_lib):
    with pytest.raises(bindthem.SymbolError) as e:
        bindthem.load(symbols_lib, kernel("symbols.h"), kernel("symbols_missing.yml"))
    assert str(e.value) == (
        "tmpl: tmpl<double> (symbol _Z4tmplIdET_S0_) is not in %s; it has tmpl<int> only. "
        "Compile an explicit instantiation `template double tmpl<double>(const double x);` into "
        "the library, or let bindthem.build(header, instantiate) compile the header and its "
        "instantiations for you" % symbols_lib)
    assert isinstance(e.value, bindthem.BindError)


def test_missing_function_entirely(c_lib, tmp_path):
    yml = tmp_path / "c.yml"
    yml.write_text("- types:\n    - null\n  functions:\n    - c_missing\n")
    with pytest.raises(bindthem.SymbolError) as e:
        bindthem.load(c_lib, kernel("ckernels.h"), str(yml))
    assert "c_missing: c_missing (symbol c_missing) is not in %s; it has no function of that " \
        "name." % c_lib in str(e.value)


def test_missing_function_near_miss(c_lib, tmp_path):
    # a name one edit away from one the library exports is suggested
    h = tmp_path / "near.h"
    h.write_text('extern "C" int c_addx(int a, int b);\n')
    yml = tmp_path / "near.yml"
    yml.write_text("- types:\n    - null\n  functions:\n    - c_addx\n")
    with pytest.raises(bindthem.SymbolError) as e:
        bindthem.load(c_lib, str(h), str(yml))
    assert str(e.value).startswith(
        "c_addx: c_addx (symbol c_addx) is not in %s; it has no function of that name; did you "
        "mean c_add? Compile c_addx's definition into the library, or let bindthem.build(header, "
        "instantiate) compile" % c_lib)


@pytest.mark.parametrize("which,line", [("inline", 4), ("static", 7)])
def test_inline_or_static_listed(symbols_lib, which, line):
    name = {"inline": "inl", "static": "stat"}[which]
    with pytest.raises(bindthem.SymbolError) as e:
        bindthem.load(symbols_lib, kernel("symbols.h"), kernel("symbols_%s.yml" % which))
    assert str(e.value) == (
        "%s: %s is declared %s at %s:%d, so %s does not export it (symbol _Z%d%si); drop `%s` "
        "from the declaration, or use bindthem.build(), which compiles the header's functions "
        "into a library of its own" % (name, name, which, kernel("symbols.h"), line, symbols_lib,
                                       len(name), name, which))


def test_symbols_ok(symbols_lib):
    lib = bindthem.load(symbols_lib, kernel("symbols.h"), kernel("symbols_ok.yml"))
    assert lib.tmpl(7) == 7
    assert lib.plain(1) == 4


def test_missing_library_file(tmp_path):
    with pytest.raises(OSError, match="cannot load library"):
        bindthem.load(str(tmp_path / "nope.so"), kernel("abi.h"))


# --- pickling -----------------------------------------------------------------

PICKLE_CHILD = textwrap.dedent("""
    import pickle, sys
    import numpy as np
    lib, f = pickle.loads(sys.stdin.buffer.read())
    x = np.array([1.0, 2.0])
    lib.scale(x, 3.0)
    print(type(lib).__name__, lib.__name__, f(7), x.tolist(), f.library is lib)
""")


def test_pickle_round_trip_into_a_fresh_process(abi):
    data = pickle.dumps((abi, abi.neg_int))
    lib2, f2 = pickle.loads(data)
    assert f2(2) == -2 and lib2.__all__ == abi.__all__
    out = run_python(PICKLE_CHILD, stdin=data)
    assert out.split() == ["Library", "abi", "-7", "[3.0,", "6.0]", "True"]


def test_pickle_a_built_library(cache_dir):
    lib = bindthem.build(kernel("abi.h"), kernel("abi.yml"), cache_dir=cache_dir,
                         cxxflags=["-O0"])
    out = run_python(PICKLE_CHILD, stdin=pickle.dumps((lib, lib.neg_int)))
    assert out.split()[:3] == ["Library", "abi", "-7"]


# --- bindthem.build -----------------------------------------------------------


@pytest.fixture
def compiles(monkeypatch):
    """Counts the compiler runs of bindthem.build (its cache's compile step),
    the precompile of the prelude aside (tests/services/test_pch.py)."""
    import bindthem._services.cache._entry as cachemod  # where compile_cached looks _compile up

    calls = []
    real = cachemod._compile

    def counting(*a, **kw):
        if a[6] != ".hpp":  # the source's suffix: the prelude's is a header
            calls.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(cachemod, "_compile", counting)
    return calls


INC_HEADER = """\
// inc.h's value, through an include.
#include "inc.h"

// The value of INC_VALUE.
int inc_value() { return INC_VALUE; }

// Twice x.
template <class T>
T dbl(const T x)
{
    return x + x;
}
"""

INC_YAML = "- types:\n    - [int]\n    - [double]\n  functions:\n    - dbl\n" \
           "- types:\n    - null\n  functions:\n    - inc_value\n"


@pytest.fixture
def project(tmp_path):
    d = tmp_path / "proj"
    d.mkdir()
    (d / "inc.h").write_text("#define INC_VALUE 1\n")
    (d / "k.h").write_text(INC_HEADER)
    (d / "k.yml").write_text(INC_YAML)
    return d


def test_build_compiles_and_caches(project, cache_dir, compiles):
    h, y = str(project / "k.h"), str(project / "k.yml")
    lib = bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 1
    assert lib.__name__ == "k"
    assert lib.inc_value() == 1 and lib.dbl(2) == 4 and lib.dbl(1.5) == 3.0
    assert lib.__file__.startswith(cache_dir)
    mtime = os.stat(lib.__file__).st_mtime_ns
    again = bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 1
    assert again.__file__ == lib.__file__
    assert os.stat(lib.__file__).st_mtime_ns == mtime
    # flags are part of the key
    bindthem.build(h, y, cache_dir=cache_dir, cxxflags="-O1")
    assert len(compiles) == 2
    bindthem.build(h, y, cache_dir=cache_dir, cxxflags="-O1")
    assert len(compiles) == 2


def test_build_recompiles_on_header_change(project, cache_dir, compiles):
    h, y = str(project / "k.h"), str(project / "k.yml")
    lib = bindthem.build(h, y, cache_dir=cache_dir)
    assert lib.dbl(3) == 6
    (project / "k.h").write_text(INC_HEADER.replace("return x + x;", "return x + x + x;"))
    lib2 = bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 2
    assert lib2.__file__ != lib.__file__
    assert lib2.dbl(3) == 9
    assert lib.dbl(3) == 6  # the old library is still loaded and usable
    # the YAML is part of the key too
    (project / "k.yml").write_text(INC_YAML.replace("    - [double]\n", ""))
    lib3 = bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 3
    assert len(lib3.dbl.overloads) == 1


def test_build_recompiles_on_included_header_change(project, cache_dir, compiles):
    h, y = str(project / "k.h"), str(project / "k.yml")
    lib = bindthem.build(h, y, cache_dir=cache_dir)
    assert lib.inc_value() == 1
    (project / "inc.h").write_text("#define INC_VALUE 2\n")
    lib2 = bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 2
    assert lib2.inc_value() == 2
    assert lib.inc_value() == 1
    bindthem.build(h, y, cache_dir=cache_dir)
    assert len(compiles) == 2


BUILD_CHILD = textwrap.dedent("""
    import sys, bindthem
    lib = bindthem.build(sys.argv[1], sys.argv[2], cache_dir=sys.argv[3])
    print(lib.__file__, lib.dbl(21), lib.inc_value())
""")


def test_concurrent_builds_from_two_processes(project, cache_dir):
    env = python_env()
    cmd = [sys.executable, "-c", BUILD_CHILD, str(project / "k.h"), str(project / "k.yml"),
           cache_dir]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
    lines = [o.decode().split() for o, _ in outs]
    assert lines[0] == lines[1]
    assert lines[0][1:] == ["42", "1"]
    folder = os.path.dirname(lines[0][0])
    files = sorted(f for f in os.listdir(folder) if not f.startswith("."))
    assert files == ["deps.json", os.path.basename(lines[0][0])]
    assert files[1].startswith("libk-") and files[1].endswith(".so")


def test_compiler_failure_is_build_error(tmp_path, cache_dir):
    h = tmp_path / "broken.h"
    h.write_text("// Broken.\nint broken(const int x) { return x + ; }\n")
    with pytest.raises(bindthem.BuildError) as e:
        bindthem.build(str(h), cache_dir=cache_dir)
    msg = str(e.value)
    assert msg.startswith("compiling the kernels failed (exit 1):")
    assert "error: expected primary-expression" in msg
    assert "broken" in e.value.output
    assert e.value.command[0] in ("c++", os.environ.get("CXX", "c++"))
    assert isinstance(e.value, bindthem.BindError)
    # nothing half-built is left to be found next time
    with pytest.raises(bindthem.BuildError):
        bindthem.build(str(h), cache_dir=cache_dir)


def test_missing_compiler_is_build_error(project, cache_dir):
    with pytest.raises(bindthem.BuildError, match="cannot run the C\\+\\+ compiler"):
        bindthem.build(str(project / "k.h"), str(project / "k.yml"), cache_dir=cache_dir,
                       cxx="/nonexistent/c++")


def test_cli_build(project, tmp_path, cache_dir):
    out = tmp_path / "libcli.so"
    env = python_env(BINDTHEM_CACHE=cache_dir)
    proc = subprocess.run([sys.executable, "-m", "bindthem", "build", str(project / "k.h"), "-i",
                           str(project / "k.yml"), "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert os.listdir(cache_dir)  # went through the cache
    lib = bindthem.load(str(out), str(project / "k.h"), str(project / "k.yml"))
    assert lib.dbl(2.5) == 5.0 and lib.inc_value() == 1
    bad = subprocess.run([sys.executable, "-m", "bindthem", "build", str(tmp_path / "no.h")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ")


# --- threads ------------------------------------------------------------------


def test_two_threads_run_a_long_kernel_concurrently(ckernels):
    # twice GIL_RELEASE_MIN_ELEMENTS: the GIL is released
    ts = spin_intervals(ckernels.c_spin, 2 * _core.GIL_RELEASE_MIN_ELEMENTS, 200)
    assert overlap(ts), "the two kernel runs did not overlap: %r" % ts


def test_small_kernel_keeps_the_gil(ckernels):
    # below the threshold the kernel runs with the GIL held: calls from two
    # threads are serialized, so their intervals cannot overlap
    assert not overlap(spin_intervals(ckernels.c_spin, 8, 50))


# --- the README example -------------------------------------------------------


def test_readme_example_script(cache_dir):
    env = python_env(BINDTHEM_CACHE=cache_dir)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "run_example.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "myfunc(int32, float64, complex128) -> 42" in out
    assert "myfunc(int32, float32, complex64) -> 42" in out
    assert "My Function" in out
    assert out.rstrip().endswith("OK")


def test_keyword_named_parameters_in_signature(cache_dir):
    """C++ parameters named like Python keywords: the text signature writes
    them as `in_`/`from_`, positional-only, so inspect can read it (the
    generated stub writes the same)."""
    here = os.path.dirname(os.path.abspath(__file__))
    lib = bindthem.build(os.path.join(here, "typing", "features.h"),
                         os.path.join(here, "typing", "features.yml"), cache_dir=cache_dir)
    assert lib.shift.__text_signature__ == "(in_, from_, /, c)"
    sig = inspect.signature(lib.shift)
    assert list(sig.parameters) == ["in_", "from_", "c"]
    kinds = [p.kind for p in sig.parameters.values()]
    assert kinds == [inspect.Parameter.POSITIONAL_ONLY] * 2 + [
        inspect.Parameter.POSITIONAL_OR_KEYWORD]
    assert lib.shift(5, 2, c=0) == 3


# --- library lifetime ----------------------------------------------------------

OMP_HEADER = """\
// y[i] = a * x[i] + y[i], split over OpenMP threads.
template <class T>
void omp_axpy(const T x[], const int x_size, T y[], const int y_size, const T a)
{
    #pragma omp parallel for
    for (int i = 0; i < x_size; i++)
        y[i] += a * x[i];
}
"""

OMP_CHILD = """\
import gc, sys
import numpy as np
import bindthem

def once(header, yml, cache):
    lib = bindthem.build(header, yml, cache_dir=cache, cxxflags="-O2 -fopenmp")
    x = np.arange(100000.0)
    y = np.ones(100000)
    lib.omp_axpy(x, y, 2.0)
    assert np.array_equal(y, 1 + 2 * x)

for _ in range(5):
    once(*sys.argv[1:])
    gc.collect()
print("ok")
"""


def test_openmp_library_dropped_while_its_pool_runs(tmp_path, cache_dir):
    # libgomp's worker threads outlive the call; unmapping the library (and
    # libgomp with it) under them killed the interpreter
    (tmp_path / "omp.h").write_text(OMP_HEADER)
    (tmp_path / "omp.yml").write_text("- types:\n    - [double]\n  functions:\n"
                                      "    - omp_axpy\n")
    proc = subprocess.run([sys.executable, "-c", OMP_CHILD, str(tmp_path / "omp.h"),
                           str(tmp_path / "omp.yml"), cache_dir],
                          capture_output=True, text=True, timeout=300,
                          env=python_env(OMP_NUM_THREADS="2"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ok"]


# --- kernel names that Python or bindthem use ----------------------------------

NAMES_HEADER = """\
// x + 1
int metadata(int x) { return x + 1; }
// x + 2
int unexported(int x) { return x + 2; }
// x + 3
int __name__(int x) { return x + 3; }
// x + 4
int __getattr__(int x) { return x + 4; }
// x + 5
int __all__(int x) { return x + 5; }
"""

NAMES_CHILD = """\
import pickle, sys
import bindthem
lib, f = pickle.loads(sys.stdin.buffer.read())
print(lib.metadata(1), f(1), bindthem.info(lib).metadata["functions"][0]["name"])
"""


@pytest.fixture
def names_h(tmp_path):
    h = tmp_path / "taken.h"
    h.write_text(NAMES_HEADER)
    return str(h)


def test_kernels_named_like_library_attributes(names_h, cache_dir):
    lib = bindthem.build(names_h, cache_dir=cache_dir)
    # the kernels win; bindthem's own attributes stay at bindthem.info(lib)
    assert lib.metadata(1) == 2 and lib.unexported(1) == 3
    assert isinstance(lib.metadata, bindthem.Function)
    info = bindthem.info(lib)
    assert [f["name"] for f in info.metadata["functions"]] == ["metadata", "unexported"]
    assert info.unexported == [] and info.handle.path == lib.__file__
    assert lib.__all__ == ["metadata", "unexported"] and lib.__name__ == "taken"
    assert {"metadata", "unexported"} <= set(dir(lib)) and "_bindthem_" not in dir(lib)
    assert repr(lib) == "<bindthem.Library 'taken' from %r (2 functions)>" % lib.__file__
    assert not hasattr(lib, "no_such_kernel")
    # __dunder__ names belong to the module: skipped with the reason
    skipped = {s["name"]: s["reason"] for s in info.metadata["skipped"]}
    assert set(skipped) == {"__name__", "__getattr__", "__all__"}
    assert all("Python reserves __dunder__ names for the module itself" in r
               for r in skipped.values()), skipped
    out = run_python(NAMES_CHILD, stdin=pickle.dumps((lib, lib.metadata)),
                     env={"BINDTHEM_CACHE": cache_dir})
    assert out.split() == ["2", "2", "metadata"]


def test_info_of_a_library_and_its_kernels(abi):
    info = bindthem.info(abi)
    assert isinstance(info, bindthem.library.LibraryInfo) and info.handle.path == abi.__file__
    assert bindthem.info(abi.__dict__[abi.__all__[0]]) is info  # a kernel says whose it is
    assert "_bindthem_" not in vars(abi)  # not in the namespace: no kernel can shadow it
    for other in (None, 3, types, abi.metadata):
        with pytest.raises(bindthem.BindTypeError, match=r"bindthem.info\(\w+\): expected a "
                           r"Library or one of its kernels"):
            bindthem.info(other)
    with pytest.warns(DeprecationWarning, match=r"lib.__bindthem__ is deprecated and goes in "
                      r"bindthem 0.2: use bindthem.info\(lib\)") as rec:
        assert abi.__bindthem__ is info
    assert rec[0].filename == __file__  # attributed to the caller


def test_library_attributes_without_such_kernels(abi):
    assert abi.metadata is bindthem.info(abi).metadata
    assert abi.unexported == bindthem.info(abi).unexported == []
    assert type(abi).metadata.__doc__.startswith("What bindthem.parse_header returns")


@pytest.mark.parametrize("yml, where, msg", [
    ("- types: [null]\n  functions: [metadata, __name__]\n", "2:25",
     r"'__name__' cannot be a kernel's Python name: Python reserves __dunder__ names for the "
     r"module itself; bind it under another name with a remap \('remaps: \[\{__name__: "
     r"name\}\]'\)"),
    ("instantiate:\n  - types: [null]\n    functions: [metadata]\nremaps:\n"
     "  - metadata: __all__\n", "5:5",
     r"remaps\[0\] remaps 'metadata' to '__all__', which cannot be a kernel's name"),
])
def test_dunder_python_name_in_yaml(names_h, tmp_path, yml, where, msg):
    y = tmp_path / "taken.yml"
    y.write_text(yml)
    with pytest.raises(bindthem.InstantiateError, match=msg) as ei:
        bindthem.parse_header(names_h, str(y))
    assert str(ei.value).startswith("%s:%s: " % (y, where))


def test_dunder_kernel_remapped(names_h, tmp_path, cache_dir):
    y = tmp_path / "taken.yml"
    y.write_text("instantiate:\n  - types: [null]\n    functions: [__getattr__]\n"
                 "remaps:\n  - __getattr__: getattr_\n")
    lib = bindthem.build(names_h, str(y), cache_dir=cache_dir)
    # the header's other untemplated kernels bind too, without being listed
    assert "getattr_" in lib.__all__ and "__getattr__" not in lib.__all__
    assert lib.getattr_(1) == 5


# --- the parameter limit -------------------------------------------------------


def _sum_function(name, n):
    params = ", ".join("long a%d" % i for i in range(n))
    body = " + ".join("a%d" % i for i in range(n))
    return "// the sum of %d longs\nlong %s(%s) { return %s; }\n" % (n, name, params, body)


def test_function_over_the_parameter_limit_is_skipped(tmp_path, cache_dir):
    h = tmp_path / "wide.h"
    h.write_text(_sum_function("sum96", 96) + _sum_function("sum97", 97))
    meta = bindthem.parse_header(str(h))
    decls = {d["name"]: d for d in meta["declarations"]}
    assert decls["sum96"]["bindable"] and not decls["sum97"]["bindable"]
    assert decls["sum97"]["reason"] == "97 parameters; bindthem binds at most 96"
    assert [(s["name"], s["reason"]) for s in meta["skipped"]] == [
        ("sum97", "unbindable: 97 parameters; bindthem binds at most 96")]
    lib = bindthem.build(str(h), cache_dir=cache_dir)
    assert lib.__all__ == ["sum96"]
    args = list(range(1, 97))
    assert lib.sum96(*args) == sum(args)
    y = tmp_path / "wide.yml"
    y.write_text("- types: [null]\n  functions: [sum96, sum97]\n")
    with pytest.raises(bindthem.InstantiateError, match=r"wide.yml:2:22: instantiate.yml lists "
                                                        r"'sum97', which the header declares at "
                                                        r".*wide.h:4:6 but cannot bind: 97 "
                                                        r"parameters; bindthem binds at most 96"):
        bindthem.build(str(h), str(y), cache_dir=cache_dir)
