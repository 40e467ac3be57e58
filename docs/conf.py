"""Sphinx configuration of bindthem's documentation.

Built in CI by tests/api/test_docs.py: ``sphinx-build -W --keep-going -n -b html``
(every warning an error, every cross-reference resolved) and ``-b doctest``
(every ``>>>`` example runs against the bindthem that ``import bindthem``
finds: put the source tree first on PYTHONPATH after an in-place build, or
install it). The theme is furo (from PyPI; it needs no network at build time).
"""

import doctest
import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(DOCS)
# The rendered API is the importable bindthem's; its version names the site.
try:
    import bindthem
except ImportError:
    # `python -m sphinx` run in the checkout puts the source folder first on
    # sys.path; without an in-place build its bindthem has no compiled _core.
    # Then document the installed bindthem instead.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != ROOT]
    for name in [m for m in sys.modules if m == "bindthem" or m.startswith("bindthem.")]:
        del sys.modules[name]
    import bindthem

project = "bindthem"
author = "the bindthem authors"
copyright = "the bindthem authors"
release = version = bindthem.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest"]
templates_path = []
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = "bindthem %s" % release
# No "view source" links: the pages are the source, one click away on GitHub.
html_show_sourcelink = False
html_copy_source = False

autodoc_member_order = "bysource"
# Types in the signatures, not repeated in a field list.
autodoc_typehints = "signature"

# Every cross-reference must resolve: no intersphinx (the build is offline), so
# the types of other projects that annotations name are listed here, each with
# the reason it cannot resolve.
nitpicky = True
nitpick_ignore = [
    # the standard library: no intersphinx inventory offline (StrPath's expansion)
    ("py:class", "os.PathLike"),
    # bindthem._types.StrPath (str | os.PathLike[str]) and _core._Metadata (the
    # TypedDict of parse_header's result): private typing helpers
    ("py:class", "StrPath"),
    ("py:class", "_core._Metadata"),
    # internals that public docstrings name: not API, so not documented here
    ("py:func", "bindthem.package.package_library"),
    ("py:data", "NVRTC_PRELUDE"),
]

# Exception messages are compared too (Sphinx's default ignores their text).
doctest_default_flags = doctest.ELLIPSIS | doctest.DONT_ACCEPT_TRUE_FOR_1

# The files the pages' examples read, which the tutorial has a reader download
# into an empty folder before starting Python there (tests/api/test_docs.py
# plays that reader).
DOWNLOADS = ["examples/tutorial/vec.h", "examples/tutorial/vec.c", "examples/tutorial/broken.h",
             "examples/tutorial/broken.yml", "examples/myheader.h", "examples/instantiate.yml"]

# -b doctest: each page's examples run as a reader pastes them, in a folder of
# their own holding DOWNLOADS (nothing imported for them: each page imports
# what it uses), with a private build cache. The setup leaves no name behind.
doctest_global_setup = """
def _reader_folder(root, files):
    import os, shutil, tempfile
    folder = tempfile.mkdtemp(prefix="bindthem-docs-")
    for f in files:
        shutil.copy(os.path.join(root, f), folder)
    os.chdir(folder)
    os.environ.setdefault("BINDTHEM_CACHE", os.path.join(folder, ".cache"))
_reader_folder(%r, %r)
del _reader_folder
""" % (ROOT, DOWNLOADS)
# ... and after the page the folder goes (its cache with it, unless the
# environment named another), the process back where it was.
doctest_global_cleanup = """
def _leave_reader_folder(root):
    import os, shutil
    folder = os.getcwd()
    os.chdir(root)
    if os.path.basename(folder).startswith("bindthem-docs-"):
        if os.environ.get("BINDTHEM_CACHE", "").startswith(folder + os.sep):
            del os.environ["BINDTHEM_CACHE"]
        shutil.rmtree(folder, ignore_errors=True)
_leave_reader_folder(%r)
del _leave_reader_folder
""" % ROOT


def _resolve_short_names(app, env, node, contnode):
    """A docstring's ``:class:`bindthem.SymbolError``` or ``:class:`LibraryInfo```
    names an object this site documents under another module path (the
    docstrings say ``bindthem.X``; X lives in ``bindthem.errors``): resolve it
    when exactly one documented object has that last name component (the
    canonical names autodoc adds for an object defined elsewhere, e.g.
    ``bindthem._services.binding.LibraryInfo``, are aliases, not objects)."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    last = target.rsplit(".", 1)[-1]
    py = env.get_domain("py")
    hits = [name for name, obj in py.objects.items() if name.rsplit(".", 1)[-1] == last
            and not obj.aliased
            and (name == target or name.endswith("." + target) or target.endswith("." + last))]
    if len(hits) != 1:
        return None
    from sphinx.util.nodes import make_refnode

    obj = py.objects[hits[0]]
    return make_refnode(app.builder, node["refdoc"], obj.docname, obj.node_id, contnode, hits[0])


def setup(app):
    app.connect("missing-reference", _resolve_short_names)
