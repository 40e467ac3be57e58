"""bindthem's Python modules import one another without a cycle, layer by layer.

Every import counts, at module level or inside a function, so a cycle cannot
hide behind a deferred import: the graph is read from the source (ast), as
tests/core/c/include_graph.py reads the C includes. `from . import x` is an edge to
the submodule x when there is one, else to the package that defines x; the
implicit import of a module's parent packages is not an edge.

The layers (bindthem/README.md, "Layers"), each a folder, as csrc/'s are
(tests/core/c/layers.py):

    bindthem/_base/       leaves: import only leaves, the standard library, NumPy
    bindthem/_services/   services: import leaves and the services before them
                          (SERVICES_ORDER), never an API module
    bindthem/             the API, plus two leaves: errors and the C core _core

and no module reaches another behind the import graph's back: no assignment
to another bindthem module's attribute (an injected callback), no module
imported by name outside the API but through the one pickle-naming helper
(bindthem._base.byname). No bindthem/ file is over 600 lines, and no
submodule is shadowed by a name its package exports.
"""

import ast
import importlib
import os
import pkgutil
import re
import subprocess
import sys

import pytest

from sources import ROOT

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


def _from_base(node, module, path):
    """The absolute module a `from ... import` (node) in module (at path) names."""
    base = node.module or ""
    if node.level:
        pkg = _package_of(module, path)
        for _ in range(node.level - 1):
            pkg = pkg.rpartition(".")[0]
        base = pkg + ("." + base if base else "")
    return base


def imports(module, path, known):
    """The modules of `known` that `module` (at path) imports, anywhere in it."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, module, path)
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
    assert {"bindthem", "bindthem.library", "bindthem.cuda",
            "bindthem._services.cuda.nvrtc"} <= set(edges)
    assert "bindthem._services.travel" in edges["bindthem.library"]  # edges are seen at all
    cycle = find_cycle(edges)
    assert cycle is None, ("bindthem's modules import one another in a cycle: %s; move what "
                           "they share into a module below both" % " -> ".join(cycle))


def test_the_pickle_and_display_layers_import_no_api_module():
    """travel (what pickles carry), opts and display sit below Library,
    build and cuda: each imports none of them, however indirectly."""
    edges = graph()
    api = {m for m in edges if layer_of(m) == "api"}
    assert {"bindthem", "bindthem.library", "bindthem.cuda", "bindthem._unpickle",
            "bindthem.ipython", "bindthem.stubs"} <= api

    def below(m, seen):
        for n in edges[m]:
            if n not in seen:
                seen.add(n)
                below(n, seen)
        return seen

    for low in ("bindthem._services.travel", "bindthem._base.opts", "bindthem._services.display",
                "bindthem.errors", "bindthem._services.binding"):
        assert below(low, set()) & api == set(), low


# --- the layers -------------------------------------------------------------------------

# The top level: the API, and these leaves (public, or the C core).
TOP_LEAVES = ("errors", "_core")
API = ("", "__main__", "library", "package", "setuptools", "stubs", "ipython", "cuda",
       "_unpickle", "_from_c")  # "": the package itself
LEAVES = "_base"  # the folder of the leaves
SERVICES = "_services"  # the folder of the services
# Each service imports only those before it (and leaves); a package's __init__
# that re-exports its modules (cache) comes after them.
SERVICES_ORDER = (
    "", "status", "preprocess", "display", "signature", "loading",
    "cache._root", "cache._fs", "cache._manifest", "cache._evict", "cache._entry", "cache",
    "carry", "travel", "workers", "named", "binding",
    "compile", "compile.source", "compile.compiler", "compile.cores", "compile.units",
    "compile.ondemand",
    "compile.kernels",
    "packaging",
    "cuda", "cuda.nvcc", "cuda.nvrtc",
)
# The one module outside the API that names a module to import: what pickles call.
PICKLE_NAMING = "_base.byname"
LINE_LIMIT = 600
# What a leaf may import besides leaves: the standard library and NumPy.
LEAF_IMPORTS = set(sys.stdlib_module_names) | {"numpy", "__future__"}


def _rel(module, name):
    return "" if module == name else module[len(name) + 1:]


def layer_of(module, name="bindthem"):
    """"leaf", "service" or "api" by the module's folder; None for a module
    of the top level that is in no layer (the top holds the API only)."""
    rel = _rel(module, name)
    top = rel.split(".")[0]
    if top == LEAVES or rel in TOP_LEAVES:
        return "leaf"
    if top == SERVICES:
        return "service"
    return "api" if rel in API else None


def _service_rank(module, name):
    rel = _rel(module, name)[len(SERVICES) + 1:]
    return SERVICES_ORDER.index(rel) if rel in SERVICES_ORDER else None


def _module_imports(path):
    """Every module name an import statement of path names (absolute; a
    relative one as written, with its dots): for the leaves' outside imports."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module


def layer_violations(root=PACKAGE, name="bindthem"):
    """What breaks the layers: a module in no layer, an import (anywhere in
    a module) from a lower layer to a higher one or, within the services,
    to a later one; a leaf's import of a third-party module."""
    mods = modules(root, name)
    edges = {m: imports(m, p, mods) if p else set() for m, p in mods.items()}
    found = []
    order = {"leaf": 0, "service": 1, "api": 2}
    for m, targets in sorted(edges.items()):
        layer = layer_of(m, name)
        if layer is None:
            found.append("%s is in no layer: the top level holds the API only (%s); a service "
                         "goes in %s/, a leaf in %s/" % (m, ", ".join(a or name for a in API),
                                                          SERVICES, LEAVES))
            continue
        if layer == "service" and _service_rank(m, name) is None:
            found.append("%s is not in SERVICES_ORDER" % m)
            continue
        for t in sorted(targets):
            up = layer_of(t, name)
            if up is None:
                continue  # said above
            if order[up] > order[layer]:
                found.append("%s (%s) imports %s (%s): a %s imports no %s module"
                             % (m, layer, t, up, layer, up))
            elif layer == up == "service":
                rank = _service_rank(t, name)
                if rank is not None and rank >= _service_rank(m, name):
                    found.append("%s imports %s, which comes after it in SERVICES_ORDER" % (m, t))
        if layer == "leaf" and mods[m]:
            for imported in _module_imports(mods[m]):
                top = imported.split(".")[0]
                if top != name and top not in LEAF_IMPORTS:
                    found.append("%s (leaf) imports %s: a leaf imports leaves, the standard "
                                 "library and NumPy only" % (m, imported))
    return found


def _module_names(tree, module, path, known):
    """{local name: bindthem module} of the names path's imports bind to a
    bindthem module (``import bindthem`` too: its attributes are modules)."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in known:
                    names[a.asname] = a.name
                elif not a.asname and a.name.split(".")[0] in known:
                    names[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, module, path)
            for a in node.names:
                if base + "." + a.name in known:
                    names[a.asname or a.name] = base + "." + a.name
    return names


def _is_module(node, names):
    """Whether node (an expression) is a bindthem module: a name bound to one,
    an attribute chain rooted at one, or ``sys.modules[...]``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if isinstance(node, ast.Subscript):
        v = node.value
        return (isinstance(v, ast.Attribute) and v.attr == "modules"
                and isinstance(v.value, ast.Name) and v.value.id == "sys")
    return isinstance(node, ast.Name) and node.id in names


def _strings_naming(tree, known):
    """The string constants of tree that are a submodule's name (docstrings
    aside; the package's own name is also a folder's, ~/.cache/bindthem)."""
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    return sorted({n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                   and isinstance(n.value, str) and id(n) not in docs and n.value in known
                   and "." in n.value})


def injections(root=PACKAGE, name="bindthem"):
    """Every way a module reaches another behind the import graph: an
    assignment to (or deletion of) another bindthem module's attribute,
    ``setattr``/``delattr`` on one, and outside the API a module imported by
    name (``importlib.import_module``, ``__import__``) or a string that
    names one, but in the pickle-naming helper."""
    mods = modules(root, name)
    found = []
    for m, path in sorted(mods.items()):
        if path is None:
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        names = _module_names(tree, m, path, mods)
        where = os.path.relpath(path, os.path.dirname(root))
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for t in targets:
                for e in ast.walk(t):
                    if isinstance(e, ast.Attribute) and isinstance(e.ctx, (ast.Store, ast.Del)) \
                            and _is_module(e.value, names):
                        found.append("%s:%d assigns %s, a module's attribute, from outside "
                                     "it: import what you need from a module below instead of "
                                     "injecting it" % (where, node.lineno, ast.unparse(e)))
                    elif isinstance(e, ast.Subscript) and isinstance(e.ctx, (ast.Store, ast.Del)) \
                            and isinstance(e.value, ast.Attribute) \
                            and e.value.attr == "__dict__" and _is_module(e.value.value, names):
                        found.append("%s:%d assigns into %s" % (where, node.lineno,
                                                                ast.unparse(e.value)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in ("setattr", "delattr") and node.args \
                    and _is_module(node.args[0], names):
                found.append("%s:%d %s() on module %s" % (where, node.lineno, node.func.id,
                                                        ast.unparse(node.args[0])))
        if layer_of(m, name) == "api" or _rel(m, name) == PICKLE_NAMING:
            continue
        for node in ast.walk(tree):
            word = (node.attr if isinstance(node, ast.Attribute) else node.id
                    if isinstance(node, ast.Name) else None)
            if isinstance(node, ast.ImportFrom) and node.module == "importlib":
                word = next((a.name for a in node.names if a.name == "import_module"), None)
            if word in ("import_module", "__import__"):
                found.append("%s:%d imports a module by name (%s): outside the API only %s "
                             "does, for what pickles call" % (where, node.lineno, word,
                                                              name + "." + PICKLE_NAMING))
        for text in _strings_naming(tree, mods):
            found.append("%s names the module %r: outside the API only %s names a module"
                         % (where, text, name + "." + PICKLE_NAMING))
    return found


def long_files(root=PACKAGE, limit=LINE_LIMIT):
    found = []
    for folder, dirs, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(folder, f), "rb") as fh:
                    n = fh.read().count(b"\n")
                if n > limit:
                    found.append("%s: %d lines" % (os.path.relpath(os.path.join(folder, f),
                                                                   os.path.dirname(root)), n))
    return found


def _top_level_bindings(tree):
    """{name: [how]} of what a module's top level binds: "module" for
    ``from . import name`` / ``import pkg.name``-style imports of the
    submodule itself, else the node's kind."""
    out = {}

    def note(name, how):
        out.setdefault(name, []).append(how)

    def visit(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                note(node.name, "def")
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    for e in ast.walk(t):
                        if isinstance(e, ast.Name) and isinstance(e.ctx, ast.Store):
                            note(e.id, "assignment")
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and \
                    isinstance(node.target, ast.Name):
                note(node.target.id, "assignment")
            elif isinstance(node, ast.ImportFrom):
                for a in node.names:
                    own = node.level == 1 and not node.module
                    note(a.asname or a.name, "module" if own and a.asname in (None, a.name)
                         else "import")
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)
    visit(tree.body)
    return out


def shadowed_statically(root=PACKAGE, name="bindthem"):
    """Submodules that a name their package binds or exports (``__all__``)
    would hide: the package's attribute of a submodule's name must be that
    submodule."""
    mods = modules(root, name)
    found = []
    for pkg, path in sorted(mods.items()):
        if not path or not path.endswith("__init__.py"):
            continue
        subs = {m[len(pkg) + 1:] for m in mods if m.startswith(pkg + ".")
                and "." not in m[len(pkg) + 1:]}
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        bound = _top_level_bindings(tree)
        exported = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                exported = set(ast.literal_eval(node.value))
        for sub in sorted(subs):
            hows = bound.get(sub, [])
            if any(h != "module" for h in hows) or (sub in exported and not hows):
                found.append("%s.%s is shadowed: %s binds or exports %r as something else than "
                             "the submodule (%s); rename the module"
                             % (pkg, sub, pkg, sub, ", ".join(hows) or "in __all__"))
    return found


def test_every_module_is_in_its_layer_and_imports_no_layer_above():
    assert layer_violations() == []


def test_no_module_injects_into_another_nor_imports_one_by_name():
    assert injections() == []


def test_no_file_is_over_600_lines():
    assert long_files() == []


def test_no_submodule_is_shadowed_by_what_its_package_exports():
    assert shadowed_statically() == []
    # and as imported: after `import bindthem.x`, bindthem.x is that module
    missing = []
    for m in sorted(modules()):
        try:
            importlib.import_module(m)
        except ImportError as e:  # IPython or setuptools absent: that module is not checked
            if (e.name or "").split(".")[0] == "bindthem":
                raise
            missing.append(m)
    for m in sorted(sys.modules):
        parent, _, last = m.rpartition(".")
        if m.split(".")[0] == "bindthem" and parent and parent in sys.modules:
            assert getattr(sys.modules[parent], last, None) is sys.modules[m], (
                "%s.%s is not the module %s: the package exports another object by its name"
                % (parent, last, m))
    assert set(missing) <= {"bindthem.ipython", "bindthem.setuptools"}, missing


def test_no_module_lies_in_a_folder_that_git_or_ruff_skips():
    """A package folder named like a build's output (build/, dist/: .gitignore's
    patterns, ruff's default excludes) would be neither committed nor linted."""
    skipped = {"build", "dist", "_build", "venv", "site-packages", "node_modules"}
    folders = {os.path.basename(os.path.dirname(p)) for p in modules().values() if p}
    assert folders & skipped == set()
    if not os.path.isdir(os.path.join(ROOT, ".git")):
        return  # an sdist: no .gitignore to ask
    paths = sorted(os.path.relpath(p, ROOT) for p in modules().values() if p)
    out = subprocess.run(["git", "check-ignore", "--no-index", "--"] + paths, cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == [], "git ignores these modules: %s" % out.stdout


def test_what_pickles_name_is_the_api_s_and_exists():
    """The entry points the pickle-naming helper names are functions of an
    API module (bindthem._unpickle), found by their names."""
    from bindthem._base import byname

    named = [v for v in vars(byname).values() if isinstance(v, byname.Named)]
    assert {n.name for n in named} == {"library", "function", "source"}
    for n in named:
        assert layer_of(n.module) == "api", n
        assert callable(getattr(importlib.import_module(n.module), n.name)), n


def test_every_package_is_installed():
    """pyproject.toml lists every package folder of bindthem/, so that `pip
    install .` installs each."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    listed = re.search(r"^packages = \[([^\]]*)\]", text, re.M)
    assert listed, "pyproject.toml has no [tool.setuptools] packages list"
    listed = set(re.findall(r'"([^"]+)"', listed.group(1)))
    packages = {m for m, p in modules().items() if p and p.endswith("__init__.py")}
    assert packages == listed
    assert {m.name for m in pkgutil.walk_packages([PACKAGE], "bindthem.") if m.ispkg} \
        == packages - {"bindthem"}


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


def _tree(tmp_path, files):
    pkg = tmp_path / "pkg"
    for rel, text in files.items():
        p = pkg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return str(pkg)


_LAYOUT = {"__init__.py": "", "library.py": "", "_base/__init__.py": "", "_base/files.py": "",
           "_services/__init__.py": "", "_services/travel.py": "",
           "_services/binding.py": ""}


@pytest.mark.parametrize("files, found", [
    ({}, None),
    # a service that imports the API, at module level or inside a function
    ({"_services/travel.py": "from .. import library\n"}, "(service) imports pkg.library (api)"),
    ({"_services/travel.py": "def f():\n    from ..library import load\n"},
     "(service) imports pkg.library (api)"),
    # a leaf that imports a service, or a third-party module
    ({"_base/files.py": "from .._services import travel\n"},
     "(leaf) imports pkg._services.travel (service)"),
    ({"_base/files.py": "import IPython\n"}, "(leaf) imports IPython"),
    ({"_base/files.py": "import numpy, os\n"}, None),
    # a service that imports one after it
    ({"_services/travel.py": "from . import binding\n"}, "which comes after it"),
    ({"_services/binding.py": "from . import travel\n"}, None),
    # a module of the top level that is no API module
    ({"_travel.py": ""}, "is in no layer"),
    ({"_services/mystery.py": ""}, "not in SERVICES_ORDER"),
])
def test_the_layer_check_finds_an_import_that_goes_up(tmp_path, files, found):
    got = layer_violations(_tree(tmp_path, dict(_LAYOUT, **files)), "pkg")
    assert (got == []) if found is None else any(found in g for g in got), got


@pytest.mark.parametrize("files, found", [
    ({}, None),
    # what bindthem/_lazy.py did: a module sets another's callback
    ({"_services/binding.py": "from . import travel\ntravel.pending = print\n"},
     "assigns travel.pending"),
    ({"library.py": "from ._services import travel\ndef f():\n    travel.pending = 1\n"},
     "assigns travel.pending"),
    ({"library.py": "import pkg._services.travel\npkg._services.travel.x = 1\n"},
     "assigns pkg._services.travel.x"),
    ({"library.py": "from ._services import travel as t\nsetattr(t, 'pending', 1)\n"},
     "setattr() on module t"),
    ({"library.py": "import sys\nsys.modules['pkg._services.travel'].x = 1\n"}, "assigns"),
    ({"library.py": "from ._services import travel as t\nt.__dict__['x'] = 1\n"},
     "assigns into t.__dict__"),
    # a Library's own attributes, a local object's: no injection
    ({"library.py": "from ._services import travel\ndef f(lib):\n    lib.x = travel.y\n"},
     None),
    # a module imported by name outside the API
    ({"_services/binding.py": "import importlib\nm = importlib.import_module('pkg.library')\n"},
     "imports a module by name"),
    ({"_services/binding.py": "def f():\n    return __import__('pkg.library')\n"},
     "imports a module by name"),
    ({"_services/binding.py": "from importlib import import_module\n"},
     "imports a module by name"),
    ({"_services/binding.py": "NAME = ('pkg.library', 'load')\n"}, "names the module"),
    ({"_services/binding.py": '"""pkg.library, in a docstring."""\n'}, None),
    ({"library.py": "import importlib\nm = importlib.import_module('pkg._services.travel')\n"},
     None),  # the API may
    ({"_base/byname.py": "import importlib\nR = (importlib.import_module, ('pkg.library',))\n"},
     None),  # the pickle-naming helper may
])
def test_the_injection_check_finds_a_back_edge(tmp_path, files, found):
    got = injections(_tree(tmp_path, dict(_LAYOUT, **files)), "pkg")
    assert (got == []) if found is None else any(found in g for g in got), got


def test_the_length_check_finds_a_long_file(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "_services/__init__.py": "",
                            "_services/big.py": "x = 1\n" * 601, "ok.py": "x = 1\n" * 600})
    assert long_files(root) == [os.path.join("pkg", "_services", "big.py") + ": 601 lines"]


@pytest.mark.parametrize("files, found", [
    # what bindthem/__init__.py exported before: the function build over the module build
    ({"__init__.py": "from .build import build\n", "build.py": "def build(): pass\n"},
     "pkg.build is shadowed"),
    ({"__init__.py": "__all__ = ['build']\ndef __getattr__(n): pass\n", "build.py": ""},
     "pkg.build is shadowed"),
    ({"__init__.py": "def cuda(): pass\n", "cuda/__init__.py": ""}, "pkg.cuda is shadowed"),
    ({"__init__.py": "from .library import build\n__all__ = ['build']\n",
      "library.py": "def build(): pass\n"}, None),
    ({"__init__.py": "from . import cuda\n__all__ = ['cuda']\n", "cuda.py": ""}, None),
])
def test_the_shadow_check_finds_a_hidden_module(tmp_path, files, found):
    got = shadowed_statically(_tree(tmp_path, files), "pkg")
    assert (got == []) if found is None else any(found in g for g in got), got
