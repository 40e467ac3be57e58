"""pyamg's amg_core as bindthem Libraries, without side effects on import.

Shared by the pytest plugin ``bindthem_pyamg`` (which serves these Libraries
as ``pyamg.amg_core.*`` to pyamg's own test suite) and by
``tests/api/test_pyamg_suite.py``. The headers and YAML files come unchanged
from pyamg's sdist (``tests/support/pyamg_sdist.py``); nothing of pyamg is
copied here.
"""

import ast
import os
import sys

# tests/support (this file is tests/api/pyamg/pyamg_libs.py)
_SUPPORT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "support")
if _SUPPORT not in sys.path:
    sys.path.insert(0, _SUPPORT)

import pyamg_sdist  # noqa: E402  (tests/support/pyamg_sdist.py)

HEADERS = pyamg_sdist.HEADERS
MODULE = "pyamg.amg_core"
TEST_MODULE = "pyamg.amg_core.tests.bind_examples"


def default_cache():
    """Where the plugin builds: ``$BINDTHEM_CACHE``, else
    ``<BINDTHEM_TEST_CACHE>/bindthem-pyamg``."""
    return os.environ.get("BINDTHEM_CACHE") or os.path.join(pyamg_sdist.cache_dir(),
                                                            "bindthem-pyamg")


def sources(core):
    """{module name: (header, instantiate.yml)} for the 8 modules and bind_examples."""
    yml = os.path.join(core, "instantiate.yml")
    out = {"%s.%s" % (MODULE, h): (os.path.join(core, h + ".h"), yml) for h in HEADERS}
    tests = os.path.join(core, "tests")
    out[TEST_MODULE] = (os.path.join(tests, "bind_examples.h"),
                        os.path.join(tests, "instantiate-test.yml"))
    return out


def build_libraries(core=None, cache_dir=None):
    """bindthem.build every module of sources(); returns {module name: Library}.

    The nine compilations (about 40 s in all on one core when the cache is
    cold) run side by side first, one compiler process per CPU; the binding
    is then bindthem.build on the cached libraries."""
    import concurrent.futures

    import bindthem
    from bindthem import compile_library
    core = core or pyamg_sdist.amg_core_dir()
    cache_dir = cache_dir or default_cache()
    srcs = sources(core)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for fut in [pool.submit(compile_library, h, y, cache_dir=cache_dir)
                    for h, y in srcs.values()]:
            fut.result()
    return {name: bindthem.build(h, y, name=name, cache_dir=cache_dir)
            for name, (h, y) in srcs.items()}


def core_all(core):
    """``amg_core.__all__``, read from the sdist's ``amg_core/__init__.py``
    source (never imported)."""
    with open(os.path.join(core, "__init__.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise ValueError("no __all__ in %s/__init__.py" % core)


def yaml_overloads(instantiate):
    """{Python name: number of overloads} that an instantiate.yml implies, read
    with PyYAML (independently of bindthem's YAML reader): one per distinct
    type tuple a function is listed under (``null``: one, untemplated; pyamg
    lists filter_matrix_rows twice in one group, which is one set), remaps
    (``fit_candidates_real: fit_candidates``) merge into the target name."""
    import yaml
    with open(instantiate) as f:
        doc = yaml.safe_load(f)
    tuples = {}
    for group in doc["instantiate"]:
        for fn in group["functions"]:
            s = tuples.setdefault(fn, set())
            for t in group["types"]:
                s.add(None if t is None else tuple(t))
    remap = {}
    for entry in doc.get("remaps") or ():
        remap.update(entry)
    counts = {}
    for fn, s in tuples.items():
        name = remap.get(fn, fn)
        counts[name] = counts.get(name, 0) + len(s)
    return counts
