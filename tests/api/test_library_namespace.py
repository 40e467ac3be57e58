"""A Library's namespace: each Library is a module, the one instance of a
class of its own, whose namespace holds its kernels (each in a
``_core.LibraryMethod``), constants and
``__name__``/``__doc__``/``__file__``/``__all__``, so that CPython specializes
``lib.f(x)`` as it does a method call (a module subclass's own lookup it never
specializes). Used as a module is: attributes, ``vars()``, ``sys.modules``,
setting and deleting attributes; a name the header declares and does not bind
raises AttributeError saying why.
benchmarks/bench_callgrind.py measures ``lib.f(x)`` against ``f(x)``."""

import dis
import gc
import pickle
import sys
import sysconfig
import types
import warnings
import weakref

import numpy as np
import pytest

from sources import c_library

import bindthem
from bindthem import _core

HEADER = """\
#define SCALE 3
enum mode { SLOW, FAST };
/* Adds a to each x. */
void add(double x[], const int x_size, double a);
/* The sum of x. */
double total(const double x[], const int x_size);
/* A pointer with no size: left out. */
void raw(double *p);
"""

SOURCE = """\
#include "ns.h"
void add(double x[], const int x_size, double a) { for (int i = 0; i < x_size; i++) x[i] += a; }
double total(const double x[], const int x_size)
{
    double s = 0;
    for (int i = 0; i < x_size; i++) s += x[i];
    return s;
}
void raw(double *p) { *p = 0; }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return c_library(tmp_path_factory, "ns", HEADER, SOURCE)


def load(built, name=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", bindthem.BindWarning)
        return bindthem.load(*built, name=name)


@pytest.fixture
def lib(built):
    return load(built)


def test_each_library_is_the_one_instance_of_its_own_class(built, lib):
    other = load(built)
    assert isinstance(lib, bindthem.Library) and isinstance(other, bindthem.Library)
    assert isinstance(lib, types.ModuleType)
    assert type(lib) is not type(other) and type(lib).__bases__ == (bindthem.Library,)
    assert type(lib).__name__ == "Library"
    ns = type(lib).__dict__
    for name in ("add", "total"):
        m = ns[name]
        assert type(m) is _core.LibraryMethod and m.kernel is getattr(lib, name)
        assert isinstance(getattr(lib, name), bindthem.Function)
        assert getattr(type(lib), name) is getattr(lib, name)  # the kernel, never bound
    assert lib.add is not other.add


def test_an_attribute_call_is_the_kernels_call(lib):
    x = np.arange(4.0)
    add, total = lib.add, lib.total
    assert lib.total(x) == 6.0
    lib.add(x, 1.0)
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]
    lib.add(x, a=1.0)
    add(x, 1.0)
    assert x.tolist() == [3.0, 4.0, 5.0, 6.0]
    # the method as the class holds it: called with the Library first (what CPython's
    # specialized call passes), or without it, it calls the kernel
    m = type(lib).__dict__["total"]
    assert m(lib, x) == m(x) == total(x) == 18.0
    assert m.__get__(lib, type(lib))(x) == 18.0


@pytest.mark.parametrize("args", [
    "()",
    "(np.zeros(2))",
    "(np.zeros(2), 1.0, 2.0)",
    "(np.zeros(2, np.int32), 1.0)",
    "(np.zeros(2), b=1.0)",
    "(np.zeros(2), a='one')",
])
def test_errors_say_the_same_as_the_kernels(lib, args):
    """The Library CPython passes first is gone before the kernel sees the
    call: its messages count and name the arguments as a call of f does."""
    ns = {"lib": lib, "f": lib.add, "np": np}
    exec("def direct():\n    f%s\ndef method():\n    lib.add%s\n" % (args, args), ns)
    with pytest.raises(TypeError) as direct:
        ns["direct"]()
    for _ in range(3):  # and once CPython has specialized the call
        with pytest.raises(TypeError) as method:
            ns["method"]()
        assert str(method.value) == str(direct.value)


FREE_THREADED_313 = bool(sysconfig.get_config_var("Py_GIL_DISABLED")) and sys.version_info < (3, 14)


@pytest.mark.skipif(sys.implementation.name != "cpython" or sys.version_info < (3, 11)
                    or FREE_THREADED_313,
                    reason="CPython's specializing interpreter (3.11+; 3.13t specializes "
                    "nothing)")
def test_cpython_specializes_the_attribute_call(lib):
    """After a warm-up, ``lib.total(x)`` loads the kernel as CPython loads a
    method with no instance dict (what a module subclass never got)."""
    ns = {}
    exec("def run(lib, x):\n    for _ in range(200):\n        lib.total(x)\n", ns)
    run = ns["run"]
    run(lib, np.zeros(3))
    ops = [i.opname for i in dis.get_instructions(run, adaptive=True)
           if i.argval == "total"]
    assert ops and ops[0] in ("LOAD_METHOD_NO_DICT", "LOAD_ATTR_METHOD_NO_DICT"), ops


def test_namespace_as_a_modules(lib, built):
    ns = vars(lib)
    assert ns is not vars(lib) and dict(ns) == dict(vars(lib))
    assert ns["add"] is lib.add and ns["SCALE"] == 3 and ns["FAST"] == 1
    assert ns["__name__"] == "ns" and ns["__file__"] == built[0]
    assert ns["__all__"] == ["add", "total"] and ns["__doc__"] == lib.__doc__
    assert "raw" not in ns and "__module__" not in ns and "__slots__" not in ns
    assert ns["__spec__"] is None and ns["__package__"] is None  # as a module made by name
    assert lib.__dict__ == ns
    with pytest.raises(TypeError):
        ns["add"] = 1  # read-only: set attributes on the Library
    assert set(lib.__all__) <= set(dir(lib))


def test_attributes_are_set_and_deleted_as_on_a_module(lib, built):
    other = load(built)
    lib.answer = 42
    lib.helper = lambda x: x + 1  # a Python function stays unbound
    lib.again = other.total  # a kernel of another Library
    lib.total = other.total
    x = np.ones(3)
    assert lib.answer == 42 and lib.helper(1) == 2 and lib.again(x) == 3.0
    assert lib.total is other.total and lib.total(x) == 3.0
    assert vars(lib)["helper"](2) == 3 and vars(lib)["again"] is other.total
    del lib.answer, lib.helper
    assert not hasattr(lib, "answer") and "helper" not in vars(lib)
    with pytest.raises(AttributeError):
        del lib.answer
    with pytest.raises(AttributeError):
        del lib.raw  # left out: nothing to delete
    with pytest.raises(AttributeError, match="__name__ cannot be set"):
        lib.__name__ = "other"
    assert lib.__name__ == "ns" and "answer" not in vars(other)


def test_a_left_out_name_says_why(lib):
    with pytest.raises(AttributeError, match=r"ns\.h:8 declares 'raw', but this Library does "
                                             r"not bind it: .*pointer") as e:
        lib.raw
    assert e.value.name == "raw" and e.value.obj is lib
    assert not hasattr(lib, "raw") and "raw" not in dir(lib)
    with pytest.raises(AttributeError) as e:
        lib.nothing_of_that_name
    assert e.value.name == "nothing_of_that_name"


def test_in_sys_modules_and_pickled(lib, built):
    sys.modules["bt_ns_test"] = lib
    try:
        ns = {}
        exec("from bt_ns_test import total, add\nimport bt_ns_test as m", ns)
        assert ns["total"] is lib.total and ns["m"] is lib
    finally:
        del sys.modules["bt_ns_test"]
    assert pickle.loads(pickle.dumps(lib)) is lib
    assert pickle.loads(pickle.dumps(lib.total)) is lib.total


def test_a_dropped_library_and_its_class_are_freed(built):
    lib = load(built)
    f = lib.total
    gone, cls_gone = weakref.ref(lib), weakref.ref(type(lib))
    # CPython 3.13t makes every module object and class immortal once a thread has
    # started (test_pickle.py's test_function_pickles_after_its_library_is_gone)
    immortal = sys.getrefcount(lib) >= 1 << 30
    del lib
    gc.collect()
    assert (gone() is None and cls_gone() is None and f.library is None) != immortal
    assert f(np.ones(2)) == 2.0  # a kernel kept outlives its Library


def test_library_method_takes_only_kernels(lib):
    with pytest.raises(TypeError, match="takes a bindthem Function or CUDA kernel"):
        _core.LibraryMethod(len, type(lib))
    with pytest.raises(TypeError):
        _core.LibraryMethod(lib.add, 3)


@pytest.mark.parametrize("cls", [int, types.ModuleType, type("M", (types.ModuleType,), {}),
                                 type("S", (types.ModuleType,), {"__slots__": ("a",)})])
def test_library_class_takes_only_the_library_class(cls):
    # a class whose lookup is a module's stays as it is
    with pytest.raises(TypeError, match="takes bindthem's Library class"):
        _core._library_class(cls)
