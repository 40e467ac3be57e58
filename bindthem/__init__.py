"""bindthem: call compiled C, C++ and CUDA kernels from Python.

A kernel header (comments + optional template + declaration, every array
followed by its ``_size``) and an instantiate.yml are read by a C core; the
shared library's functions become Python callables at run time, taking NumPy
arrays zero-copy and dispatching on their dtypes. No binding code is
generated or compiled.

The API is this package's top level (bindthem/README.md is the map): this
module, library, package, setuptools, stubs, ipython, cuda, __main__, and
the entry points named from outside (_from_c by the C core, _unpickle by
pickles). What they call is in bindthem._services, the leaves below it in
bindthem._base.
"""

from __future__ import annotations

try:
    from . import _core
except ImportError as _e:
    import os as _os

    _here = _os.path.dirname(_os.path.abspath(__file__))
    if any(n.startswith("_core.") and n.endswith((".so", ".pyd")) for n in _os.listdir(_here)):
        raise  # built, but it does not load: the loader's own message says why
    _src = _os.path.exists(_os.path.join(_os.path.dirname(_here), "setup.py"))
    raise ImportError(
        "bindthem's C extension bindthem._core is not in %s%s. Install bindthem (`pip install "
        ".`) and import it from another folder (`pytest tests` from the venv, not `python -m "
        "pytest` in the checkout), or build it in place: `python setup.py build_ext --inplace`."
        % (_here, ", bindthem's source folder, which has no compiled extension until it is "
           "built" if _src else ""), name="bindthem._core") from None
import importlib  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from ._base.fnptr import FunctionPointer  # noqa: E402
from ._base.types import StrPath  # noqa: E402
from .errors import (  # noqa: E402
    BindError,
    BindTypeError,
    BindValueError,
    BindWarning,
    BuildError,
    BuildWarning,
    HeaderError,
    InstantiateError,
    NullHandleError,
    PickleError,
    StatusError,
    SymbolError,
)
from .library import (  # noqa: E402
    Library,
    build,
    compile_library,
    getsource,
    info,
    load,
    options,
    send_to_workers,
)
from .package import load_package  # noqa: E402

if TYPE_CHECKING:
    from . import cuda

# What `import bindthem` does not import until first used, so that a package's
# kernels bind at import without the build machinery or CUDA (see
# docs/packages.rst): build and compile_library import theirs when first
# called; cuda is imported on first access: name -> module.
_LAZY = {"cuda": "cuda"}


def __getattr__(name):
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError("module 'bindthem' has no attribute %r" % (name,))
    value = importlib.import_module("." + where, __name__)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["BindError", "BindTypeError", "BindValueError", "BindWarning", "BuildError",
           "BuildWarning", "Function", "FunctionPointer", "Handle", "HeaderError",
           "InstantiateError", "Library",
           "NullHandleError", "PickleError", "StatusError", "SymbolError", "build",
           "compile_library", "cuda", "getsource", "info", "load", "load_package", "options",
           "parse_header", "send_to_workers"]

Function = _core.Function
Handle = _core.Handle
__version__ = "0.1.0"


def parse_header(header: StrPath, instantiate: StrPath | None = None, *,
                 strict: bool = False) -> _core._Metadata:
    """Read a kernel header and an optional instantiate.yml into plain Python
    objects (dicts, lists, strings), as the C core sees them.

    Keys: ``header``, ``instantiate``, ``declarations`` (every function of the
    header with ``name``, ``namespace``, ``template``, ``return``, ``params``
    (``name``, ``type``, ``const``, ``array``, ``size_of``, ``shape``: a
    fixed-size array's, else None), ``doc``, ``line``
    (of the name), ``first_line`` and ``last_line`` (its extent: doc comment
    and template line to the closing brace or ``;``), ``bindable`` and
    ``reason``), ``functions`` (the callables to make: ``name``,
    ``doc`` and ``overloads`` with concrete types, C ``signature`` and
    ``symbol``), ``skipped`` (header functions not bound, with why) and
    ``missing`` (names instantiate.yml lists that this header lacks; an error
    with ``strict=True``).

    Raises :class:`HeaderError` / :class:`InstantiateError` with
    ``filename``, ``lineno`` and ``colno``.
    """
    return _core.parse_header(header, instantiate, strict=strict)


def load_ipython_extension(ipython):
    """``%load_ext bindthem``: the ``%%bindthem`` cell magic and ``f?``/``f??``
    for bound functions (see :mod:`bindthem.ipython`)."""
    from .ipython import load_ipython_extension as load

    load(ipython)
