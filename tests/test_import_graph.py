"""bindthem's Python modules import one another without a cycle.

Every import counts, at module level or inside a function, so a cycle cannot
hide behind a deferred import: the graph is read from the source (ast), as
tests/c/include_graph.py reads the C includes. `from . import x` is an edge to
the submodule x when there is one, else to the package that defines x; the
implicit import of a module's parent packages is not an edge.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "bindthem")


def modules(root=PACKAGE, name="bindthem"):
    """{dotted name: path} of every .py module of the package, subpackages too;
    a compiled one (its .pyi stub: bindthem._core) with path None."""
    found = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py")))
        rel = os.path.relpath(folder, root)
        prefix = name if rel == "." else name + "." + rel.replace(os.sep, ".")
        for f in sorted(files):
            stem, ext = os.path.splitext(f)
            if ext in (".py", ".pyi"):
                mod = prefix if stem == "__init__" else prefix + "." + stem
                if ext == ".py" or mod not in found:
                    found[mod] = os.path.join(folder, f) if ext == ".py" else None
    return found


def _package_of(module, path):
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def imports(module, path, known):
    """The modules of `known` that `module` (at path) imports, anywhere in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = _package_of(module, path)
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = pkg + ("." + base if base else "")
            targets = [base + "." + a.name if base + "." + a.name in known else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:  # `import bindthem.x.y` of a name inside x
                t = t.rpartition(".")[0]
            if t and t != module:
                out.add(t)
    return out


def graph(root=PACKAGE, name="bindthem"):
    mods = modules(root, name)
    return {m: imports(m, p, mods) if p else set() for m, p in mods.items()}


def find_cycle(edges):
    """One cycle of the graph as [a, b, ..., a], or None."""
    state = {}  # 1: on the current path, 2: done

    def visit(node, path):
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, path)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_the_package_import_graph_has_no_cycle():
    edges = graph()
    assert {"bindthem", "bindthem.library", "bindthem.cuda", "bindthem.cuda._nvrtc"} <= set(edges)
    assert "bindthem._travel" in edges["bindthem.library"]  # edges are seen at all
    cycle = find_cycle(edges)
    assert cycle is None, ("bindthem's modules import one another in a cycle: %s; move what "
                           "they share into a module below both" % " -> ".join(cycle))


def test_the_pickle_and_display_layers_import_no_api_module():
    """_travel (what pickles name), _opts and _display sit below Library,
    build and cuda: each imports none of them, however indirectly."""
    edges = graph()
    api = {"bindthem", "bindthem.library", "bindthem.build", "bindthem.cuda",
           "bindthem._lazy", "bindthem.ipython", "bindthem.stubs"}

    def below(m, seen):
        for n in edges[m]:
            if n not in seen:
                seen.add(n)
                below(n, seen)
        return seen

    for low in ("bindthem._travel", "bindthem._opts", "bindthem._display", "bindthem.errors",
                "bindthem._from_c"):
        assert below(low, set()) & api == set(), low


def _write(tmp_path, files):
    pkg = tmp_path / "pkg"
    for rel, text in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return graph(str(pkg), "pkg")


@pytest.mark.parametrize("files, cycle", [
    # a deferred import inside a function still counts
    ({"__init__.py": "", "a.py": "from . import b\n",
      "b.py": "def f():\n    from .a import g\n"}, ["pkg.a", "pkg.b", "pkg.a"]),
    # a subpackage reaching up with `from .. import`
    ({"__init__.py": "from .sub import x\n", "sub/__init__.py": "from .. import y\n"},
     ["pkg", "pkg.sub", "pkg"]),
    ({"__init__.py": "", "a.py": "import pkg.b.c\n", "b/__init__.py": "",
      "b/c.py": "from ..a import q\n"}, ["pkg.a", "pkg.b.c", "pkg.a"]),
    ({"__init__.py": "from . import a, b\n", "a.py": "from .b import x\n", "b.py": "import os\n"},
     None),
])
def test_the_check_finds_a_cycle_where_there_is_one(tmp_path, files, cycle):
    assert find_cycle(_write(tmp_path, files)) == cycle
