"""One callable head (csrc/bt_callable.c) for bindthem.Function and
bindthem.cuda.Kernel, and one parse per build (the plan travels from
_core.parse()'s Plan to bind()/cuda_bind()).

The Kernel side runs against the mock driver (tests/cuda/mock/mock_cuda.c),
as tests/cuda/test_cuda*.py do; the same header is built for the CPU, so the two
callables have the same name, overloads and symbols.
"""

import copy
import gc
import inspect
import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest
from cuda_support import HEADER, module_text, needs_nvcc, needs_nvrtc

from support import python_env, untyped

import bindthem
import bindthem.cuda as cuda
from bindthem import _core

# the CPU twin of tests/data/cuda/kernels.cuh's axpy, with its YAML entry
AXPY_H = """\
#pragma once
/* y = a * x + y, elementwise. */
template <class T>
void axpy(const T a, const T x[], const int x_size, T y[], const int y_size)
{
    for (int i = 0; i < x_size && i < y_size; i++)
        y[i] += a * x[i];
}
"""
AXPY_YML = "instantiate:\n  - functions: [axpy]\n    types:\n      - [float]\n      - [double]\n"
CUDA_YML = AXPY_YML  # the kernel module binds axpy only, as the CPU library does


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    (d / "pair.h").write_text(AXPY_H)
    (d / "pair.yml").write_text(AXPY_YML)
    return str(d / "pair.h"), str(d / "pair.yml")


@pytest.fixture(scope="module")
def cpu(sources, tmp_path_factory):
    if not shutil.which(os.environ.get("CXX", "c++")) and not shutil.which("g++"):
        pytest.skip("needs a C++ compiler")
    return bindthem.build(*sources, name="pair", cache_dir=str(tmp_path_factory.mktemp("c")))


@pytest.fixture(scope="module")
def gpu(mock, tmp_path_factory):
    yml = tmp_path_factory.mktemp("y") / "axpy.yml"
    yml.write_text(CUDA_YML)
    return cuda.load(module_text(HEADER, str(yml)), HEADER, str(yml), name="pair")


def pair(cpu, gpu):
    return [cpu.axpy, gpu.axpy]


# ---- one head: the same attribute behaves the same on both types ----

SAME = ("__name__", "__qualname__", "__module__", "__doc__", "overloads", "symbols", "parameters",
        "signatures")


@pytest.mark.parametrize("attr", SAME)
def test_shared_attributes_agree(cpu, gpu, attr):
    f, k = pair(cpu, gpu)
    assert getattr(f, attr) == getattr(k, attr)
    assert type(getattr(f, attr)) is type(getattr(k, attr))


def test_shared_attribute_values(cpu, gpu):
    for c in pair(cpu, gpu):
        assert c.__name__ == c.__qualname__ == "axpy"
        assert c.__module__ == "pair"
        assert c.symbols == ("_Z4axpyIfEvT_PKS0_iPS0_i", "_Z4axpyIdEvT_PKS0_iPS0_i")
        # read from the bound calls on each access, for both types (nothing stored twice)
        assert c.symbols is not c.symbols and c.symbols == c.symbols
        assert c.overloads is c.overloads
        assert len(c.overloads) == 2 and all(isinstance(s, str) for s in c.overloads)
        assert c.parameters == ("a", "x", "y")
        assert c.signatures == ("axpy(a, x, y)", "axpy(a, x, y)")
        assert c.__doc__ == "y = a * x + y, elementwise."
        assert set(c._dispatch_info) == {"cached", "scans", "selects"}
        assert repr(c).endswith(" pair.axpy with 2 overloads>")


def test_each_type_keeps_its_own_call(cpu, gpu):
    f, k = pair(cpu, gpu)
    assert repr(f).startswith("<bindthem function ")
    assert repr(k).startswith("<bindthem.cuda kernel ")
    # the text signature is how each is called: a Kernel also takes the launch keywords
    assert f.__text_signature__ == "(a, x, y)"
    assert k.__text_signature__ == ("(a, x, y, *, grid, block, shared_mem=0, stream=None, "
                                    "cluster=None, cooperative=False, priority=None)")
    assert untyped(f) == "(a, x, y)"
    assert list(inspect.signature(k).parameters)[-7:] == ["grid", "block", "shared_mem",
                                                          "stream", "cluster", "cooperative",
                                                          "priority"]
    assert f.gil == "auto" and not hasattr(k, "gil")
    assert hasattr(k, "__getitem__") and not hasattr(f, "__getitem__")


def test_no_after_the_fact_setters(cpu, gpu):
    for c in pair(cpu, gpu):
        assert not hasattr(c, "_set_info")
        assert not hasattr(c, "_configure")


def test_shared_methods(cpu, gpu):
    for c, lib in zip(pair(cpu, gpu), (cpu, gpu)):
        assert copy.copy(c) is c and copy.deepcopy(c) is c
        assert c.library is lib
        assert weakref.ref(c)() is c
        assert c.__get__(object(), object) is c  # no binding as a method
        assert "axpy" in c._repr_html_()
        reduced = c.__reduce__()
        assert reduced[1][1] == "axpy"
        with pytest.raises(TypeError, match="takes 2 arguments"):
            c._repr_pretty_(None)


def test_both_pickle_by_value(cpu, gpu):
    f = pickle.loads(pickle.dumps(cpu.axpy))
    assert f.symbols == cpu.axpy.symbols
    k = pickle.loads(pickle.dumps(gpu.axpy))
    assert k.symbols == gpu.axpy.symbols and k.__text_signature__ == gpu.axpy.__text_signature__


def test_the_cpu_call_still_works(cpu):
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, dtype=np.float32)
    cpu.axpy(np.float32(2), x, y)
    assert y.tolist() == [1, 3, 5, 7]
    assert cpu.axpy._dispatch_info["cached"] >= 1


def test_the_kernel_launch_still_works(gpu):
    x = cuda.to_device(np.arange(4, dtype=np.float32))
    y = cuda.to_device(np.ones(4, dtype=np.float32))
    gpu.axpy[1, 4](np.float32(2), x, y)
    assert y.copy_to_host().tolist() == [1, 3, 5, 7]
    assert gpu.axpy._dispatch_info["cached"] >= 1


def test_head_is_collected_with_a_cycle(cpu):
    # an object that refers back to the function through its LibraryInfo-like info
    class Info:
        pass

    info = Info()
    lib_info = bindthem.info(cpu)
    fns = _core.bind(cpu.__file__, lib_info.header, lib_info.metadata["instantiate"],
                     module="cyc", info=info)[1]
    info.f = fns["axpy"]
    alive = weakref.ref(info.f)
    del info, fns
    gc.collect()
    assert alive() is None


# ---- complete when made: info and options given to bind ----

def test_bind_gives_each_function_its_info_and_options(cpu):
    class Info:
        library = "the library"

    info = bindthem.info(cpu)
    handle, fns, *_ = _core.bind(cpu.__file__, info.header, info.metadata["instantiate"],
                                 module="m", info=Info(),
                                 options={"gil": {"axpy": "release"}, "copy_const": True})
    f = fns["axpy"]
    assert f.library == "the library"
    assert (f.gil, f.copy_const) == ("release", True)
    fns = _core.bind(cpu.__file__, info.header, info.metadata["instantiate"], module="m",
                     options={"gil": "keep"})[1]
    assert (fns["axpy"].gil, fns["axpy"].copy_const, fns["axpy"].library) == ("keep", False, None)


@pytest.mark.parametrize("options, exc, match", [
    ({"gil": "sometimes"}, ValueError, r"gil='sometimes' for axpy: expected 'auto'"),
    ({"gil": {"axpy": 1}}, ValueError, "gil=1 for axpy"),
    ([("gil", "keep")], TypeError, "options= must be a dict or None, not list"),
])
def test_bind_refuses_bad_options(cpu, options, exc, match):
    info = bindthem.info(cpu)
    with pytest.raises(exc, match=match):
        _core.bind(cpu.__file__, info.header, info.metadata["instantiate"], module="m",
                   options=options)


def test_gil_dict_naming_no_function_still_refused(cpu, sources):
    with pytest.raises(bindthem.BindValueError, match="gil= names 'nope'"):
        bindthem.load(cpu.__file__, *sources, gil={"nope": "keep"})


# ---- parse once ----

def parses(fn):
    before = _core._parse_count()
    r = fn()
    return r, _core._parse_count() - before


def test_build_parses_the_header_once(sources, cache_dir):
    lib, n = parses(lambda: bindthem.build(*sources, name="once", cache_dir=cache_dir))
    assert n == 1 and lib.axpy.symbols[0] == "_Z4axpyIfEvT_PKS0_iPS0_i"
    lib2, n = parses(lambda: bindthem.build(*sources, name="once", cache_dir=cache_dir))
    assert n == 1  # from the cache too
    assert lib2.metadata == bindthem.parse_header(*sources)


def test_load_parses_once(cpu, sources):
    _, n = parses(lambda: bindthem.load(cpu.__file__, *sources))
    assert n == 1


def test_cuda_load_parses_once_and_build_path_not_again(gpu, tmp_path):
    yml = tmp_path / "axpy.yml"
    yml.write_text(CUDA_YML)
    image = module_text(HEADER, str(yml))
    _, n = parses(lambda: cuda.load(image, HEADER, str(yml)))
    assert n == 1
    # what cuda.build does once it has compiled: bind the plan it parsed for the source
    plan, n = parses(lambda: _core.parse(HEADER, str(yml)))
    assert n == 1
    lib, n = parses(lambda: cuda._load_module(image, HEADER, str(yml), "k", False, plan))
    assert n == 0 and lib.axpy.symbols == gpu.axpy.symbols


@needs_nvcc
def test_cuda_build_with_nvcc_parses_once(mock, tmp_path):
    lib, n = parses(lambda: cuda.build(HEADER, None, arch=75, cache_dir=str(tmp_path),
                                       compiler="nvcc", name="nv"))
    assert n == 1 and "fill_i" in lib.__all__
    _, n = parses(lambda: cuda.build(HEADER, None, arch=75, cache_dir=str(tmp_path),
                                     compiler="nvcc", name="nv"))
    assert n == 1  # from the cache too


@needs_nvrtc
def test_cuda_build_with_nvrtc_parses_once(mock, tmp_path):
    lib, n = parses(lambda: cuda.build(HEADER, None, arch=90, cache_dir=str(tmp_path),
                                       compiler="nvrtc", name="rt"))
    assert n == 1 and "fill_i" in lib.__all__


def test_the_plan_is_shared_not_consumed(cpu, sources):
    plan = _core.parse(*sources)
    a = _core.bind(cpu.__file__, plan, module="a")
    b = _core.bind(cpu.__file__, plan, module="b")
    assert a[2] is b[2] is plan
    del plan
    gc.collect()
    assert a[2].metadata()["functions"][0]["name"] == "axpy"
    y = np.ones(2)
    b[1]["axpy"](2.0, np.ones(2), y)
    assert y.tolist() == [3, 3]


def test_public_parse_header_has_no_plan(sources):
    meta = bindthem.parse_header(*sources)
    assert "plan" not in meta
    json.dumps(meta)  # plain data


# ---- what bind() takes: a Plan or paths, nothing else ----

FORGERY = r"""
import datetime, json, sys
from bindthem import _core
lib, h, y, other_h = sys.argv[1:5]
out = {}

def case(name, fn):
    try:
        fn()
        out[name] = "no error"
    except Exception as e:
        out[name] = "%s: %s" % (type(e).__name__, e)

plan = _core.parse(h, y)
other = _core.parse(other_h)
case("a dict", lambda: _core.bind(lib, dict(plan.metadata(), plan=plan), module="m"))
case("not a path", lambda: _core.bind(lib, 12345, module="m"))
case("a capsule", lambda: _core.bind(lib, datetime.datetime_CAPI, module="m"))
case("instantiate too", lambda: _core.bind(lib, plan, y, module="m"))
case("strict differs", lambda: _core.bind(lib, plan, module="m", strict=True))
case("made by hand", lambda: type(plan)())
case("header replaced", lambda: setattr(plan, "header_text", b"void f();"))
def bind_other():
    _, fns, _, unexported, _ = _core.bind(lib, other, module="m")
    raise LookupError("bound %s, unexported %s" % (sorted(fns), unexported))
case("another header's plan", bind_other)
case("cuda: a capsule", lambda: _core.cuda_bind(b"x", datetime.datetime_CAPI, module="m",
                                                filename="x"))
case("cuda: instantiate too", lambda: _core.cuda_bind(b"x", plan, y, module="m", filename="x"))
print(json.dumps(out))
"""


def test_bind_takes_a_plan_or_paths_only(cpu, sources, tmp_path):
    other = tmp_path / "other.h"
    other.write_text("/* doc */\nvoid other_fn(double x[], const int x_size);\n")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(FORGERY), cpu.__file__,
                           *sources, str(other)], capture_output=True, text=True,
                          env=python_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.splitlines()[-1])
    for name in ("a dict", "not a path", "a capsule", "cuda: a capsule"):
        assert out[name].startswith("TypeError: "), (name, out[name])
    assert out["instantiate too"].startswith("TypeError: bind(): instantiate= with a Plan")
    assert out["cuda: instantiate too"].startswith(
        "TypeError: cuda_bind(): instantiate= with a Plan")
    assert out["strict differs"].startswith("ValueError: bind(): strict=True, but the Plan was "
                                            "parsed with strict=False")
    assert out["made by hand"].startswith("TypeError: cannot create")
    assert out["header replaced"].startswith("AttributeError: ")
    # a genuine plan of another header binds that header: its function is not in this library
    assert out["another header's plan"] == ("LookupError: bound [], unexported "
                                            "['void other_fn(double x[], const int x_size)']")


def test_a_plan_holds_the_bytes_it_parsed(sources, tmp_path):
    import hashlib

    plan, n = parses(lambda: _core.parse(*sources))
    assert n == 1
    with open(sources[0], "rb") as f:
        text = f.read()
    with open(sources[1], "rb") as f:
        yml = f.read()
    assert plan.header_text == text and plan.yaml_text == yml
    assert plan.header_sha256 == hashlib.sha256(text).hexdigest()
    assert plan.yaml_sha256 == hashlib.sha256(yml).hexdigest()
    assert (plan.header, plan.instantiate, plan.strict) == (sources[0], sources[1], False)
    a, b = plan.metadata(), plan.metadata()
    assert a == b == bindthem.parse_header(*sources) and a is not b
    # given texts are parsed in place of the files, which need not exist
    h = str(tmp_path / "gone.h")
    other = _core.parse(h, header_text=b"/* doc */\nvoid g(double x[], const int x_size);\n")
    assert other.metadata()["functions"][0]["name"] == "g" and other.yaml_sha256 is None
    yml = str(tmp_path / "gone.yml")
    with pytest.raises(bindthem.InstantiateError) as e:
        _core.parse(h, yml, header_text=b"", yaml_text=b"- types: [\n")
    assert e.value.filename == yml
    with pytest.raises(TypeError):
        _core.parse(h, header_text="text")
    with pytest.raises(TypeError):
        _core.parse(h, header_text=b"", yaml_text=b"- types: []")
