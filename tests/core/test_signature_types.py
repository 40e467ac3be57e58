"""A Function's signature shows the types its overloads take: what
``inspect.signature``, ``help()`` and IPython's ``f?`` show is the stub's
types, per parameter, while ``__doc__`` stays the header comment; and
``f.__call__`` has the function's signature (IPython shows no second,
``(*args, **kwargs)`` one)."""

import ast
import gc
import inspect
import pydoc

import numpy as np
import pytest

from sources import compile_cxx, kernel
from support import untyped

import bindthem
from bindthem import stubs

HEADER, YAML = kernel("overloads.h"), kernel("overloads.yml")
ARRAY = "numpy.typing.NDArray[numpy.%s]"


@pytest.fixture(scope="module")
def ovl(libdir):
    return bindthem.load(compile_cxx(libdir, "overloads_sig", HEADER, YAML), HEADER, YAML)


def stub_overloads(text, name):
    """Per ``def name`` of a stub's text: its parameters' annotations (a dict,
    as written) and its return's."""
    found = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            args = node.args.posonlyargs + node.args.args
            found.append(({a.arg: ast.unparse(a.annotation) for a in args},
                          ast.unparse(node.returns)))
    return found


def test_each_parameter_shows_the_types_the_stub_gives_it(ovl):
    f = ovl.summary
    sig = inspect.signature(f)
    assert list(sig.parameters) == ["x"] and untyped(f) == "(x)"
    assert str(sig) == "(x: %s | %s) -> float" % (ARRAY % "float64", ARRAY % "float32")
    # the stub's overloads with these parameters, their types joined in YAML order
    same = [o for o in stub_overloads(stubs.render(HEADER, YAML), "summary")
            if list(o[0]) == ["x"]]
    assert len(same) == 2
    assert str(sig.parameters["x"].annotation) == " | ".join(o[0]["x"] for o in same)
    # and a signature of several parameters and a default
    half = inspect.signature(ovl.half)
    stub = stub_overloads(stubs.render(HEADER, YAML), "half")
    for name, p in half.parameters.items():
        texts = list(dict.fromkeys(t for o in stub if list(o[0]) == list(half.parameters)
                                   for t in o[0][name].split(" | ")))
        assert str(p.annotation) == " | ".join(texts), name


def test_help_shows_the_types_and_the_header_comment(ovl):
    text = pydoc.render_doc(ovl.summary, renderer=pydoc.plaintext)
    assert "summary(x: %s | %s) -> float" % (ARRAY % "float64", ARRAY % "float32") in \
        text.replace("\n", "").replace("    ", "")
    assert "Sum of x." in text
    # several Python signatures: the docstring lists them, as before
    assert ovl.summary.__doc__.startswith("Overloaded function.\n\n1. summary(x)\n\nSum of x.")


def test_one_python_signature_keeps_the_header_comment_as_its_doc(tmp_path):
    """pyamg's tests compare __doc__ with the header comment: the types go in
    the signature, not in the doc."""
    h = tmp_path / "one.h"
    h.write_text("// Testing docstring\ntemplate <class T> T first(const T x[], int x_size)\n"
                 "{ return x[0]; }\n")
    y = tmp_path / "one.yml"
    y.write_text("instantiate:\n- types: [[int], [long], [double]]\n  functions: [first]\n")
    lib = bindthem.build(str(h), str(y), cache_dir=str(tmp_path / "cache"))
    assert lib.first.__doc__.strip() == "Testing docstring"
    ann = inspect.signature(lib.first).parameters["x"].annotation
    assert str(ann) == " | ".join(ARRAY % t for t in ("int32", "int64", "float64"))
    assert inspect.signature(lib.first).return_annotation == "int | float"
    # shown as written, not quoted
    assert "x: numpy.typing" in str(inspect.signature(lib.first))


def test_the_signature_still_binds_as_the_call_does(ovl):
    sig = inspect.signature(ovl.summary)
    x = np.arange(3.0)
    assert sig.bind(x).arguments == {"x": x}
    with pytest.raises(TypeError):
        sig.bind(x, x, x)
    with pytest.raises(TypeError):
        ovl.summary(x, x, x)


def test_call_has_the_function_signature_and_calls_it(ovl):
    f = ovl.summary
    x = np.arange(4.0)
    assert f.__call__(x) == f(x) == 6.0
    assert inspect.signature(f.__call__) == inspect.signature(f)
    assert f.__call__.__doc__ == type(lambda: 0).__call__.__doc__  # "Call self as a function."
    assert callable(f) and f.__call__.__self__ is f


def test_an_open_function_adds_what_it_made(tmp_path):
    h = tmp_path / "open.h"
    h.write_text("// Scales x.\ntemplate <class T> void scale(T x[], int x_size, double a)\n"
                 "{ for (int i = 0; i < x_size; i++) x[i] *= a; }\n")
    lib = bindthem.build(str(h), cache_dir=str(tmp_path / "cache"))
    f = lib.scale
    assert f.open and untyped(f) == "(x, a)"
    assert all(p.annotation is p.empty for p in inspect.signature(f).parameters.values())
    f(np.ones(2, np.float32), 2.0)
    assert str(inspect.signature(f)) == "(x: %s, a: float) -> None" % (ARRAY % "float32")
    f(np.ones(2), 2.0)
    assert str(inspect.signature(f).parameters["x"]) == "x: %s | %s" % (
        ARRAY % "float32", ARRAY % "float64")


def test_without_its_library_the_text_signature_is_shown(tmp_path):
    h = tmp_path / "gone.h"
    h.write_text("// Twice.\nint twice(int a) { return 2 * a; }\n")
    lib = bindthem.build(str(h), cache_dir=str(tmp_path / "cache"))
    f = lib.twice
    assert str(inspect.signature(f)) == "(a: int) -> int"
    del lib
    gc.collect()
    assert f.library is None and f(4) == 8
    assert str(inspect.signature(f)) == "(a)"


def test_the_class_keeps_its_own(ovl):
    """Only instances have the typed signature and the bound __call__: the
    class itself reads as any type does (Sphinx's autodoc asks it)."""
    Function = bindthem.Function
    assert type(ovl.summary) is Function and "__signature__" not in dir(Function)
    inspect.signature(Function)  # no "unexpected object in __signature__" TypeError
    x = np.arange(3.0)
    assert Function.__call__(ovl.summary, x) == 3.0
