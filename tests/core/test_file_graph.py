"""csrc's files form layers: no file calls (or reads data of) a file that
calls it back, directly or around a loop (tests/core/c/include_graph.py, from
`nm` of the compiled objects), and none calls into a layer folder above its
own (tests/core/c/layers.py)."""

import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "c"))
import include_graph  # noqa: E402
import layers  # noqa: E402

pytestmark = pytest.mark.skipif(not shutil.which("nm"), reason="needs nm (binutils)")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    objdir = include_graph.default_objdir()
    try:
        if objdir:
            return include_graph.graph(objdir)
    except ValueError:
        pass  # stale or partial in-place build: compile afresh
    if not shutil.which(os.environ.get("CC", "gcc")):
        pytest.skip("no C compiler")
    out = str(tmp_path_factory.mktemp("objs"))
    include_graph.compile_objects(out)
    return include_graph.graph(out)


def test_no_cycle(graph):
    assert include_graph.find_cycle(graph) is None


def test_layers(graph):
    # the walker is below both back ends; the module file is the top
    assert "bt_bind" in graph["bt_library"] and "bt_bind" in graph["bt_cudapy_bind"]
    assert not graph["bt_bind"] & {"bt_library", "bt_cudapy_bind", "bt_module"}
    assert not any(layers.TOP in deps for deps in graph.values())
    # the pure layers call no Python-facing file
    pure = set(layers.pure_sources())
    assert {"bt_lex", "bt_pyname", "bt_direct", "bt_cuda", "bt_nvrtc"} <= pure
    for f in pure:
        assert graph[f] <= pure, (f, graph[f] - pure)


def test_no_call_into_a_layer_above(graph):
    layer = {stem: layers.layer_of(path) for stem, path in layers.sources().items()}
    up = sorted((a, layer[a], b, layer[b]) for a in graph if a != layers.TOP for b in graph[a]
                if not layers.may_call(layer[a], layer[b]))
    assert up == [], "calls into a layer above (move the file, or the function): %s" % up


def test_find_cycle_finds_one():
    assert include_graph.find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert include_graph.find_cycle({"a": {"b"}, "b": set()}) is None
