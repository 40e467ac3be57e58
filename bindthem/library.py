"""bindthem.Library and bindthem.load: a shared library's kernels as a module."""

import os
import types

from . import _core

__all__ = ["Library", "load"]


def _module_doc(name, header, functions):
    lines = ["Kernels of %s, bound by bindthem." % os.path.basename(header), "",
             "Methods", "-------"]
    lines += sorted(functions)
    return "\n".join(lines) + "\n"


class Library(types.ModuleType):
    """The kernels of one header, served from one shared library.

    A module object (it can sit in ``sys.modules``): each bound kernel is an
    attribute, ``__all__`` and ``dir()`` list them, ``__file__`` is the shared
    library. ``metadata`` is what :func:`bindthem.parse_header` returns for
    the header (built on first access, from what was bound), ``unexported``
    the overloads left out because the library lacks them (only without an
    instantiate.yml).
    """

    def __init__(self, name, header, handle, functions, metadata, unexported, reduce):
        super().__init__(name, _module_doc(name, header, functions))
        self.__file__ = handle.path
        self.__all__ = sorted(functions)
        self.__dict__.update(functions)
        self._bindthem_handle = handle
        self._bindthem_reduce = reduce
        self._bindthem_metadata = metadata  # the core's capsule until first asked for
        self.unexported = list(unexported)
        for f in functions.values():
            f._set_library(self)

    @property
    def metadata(self):
        """What :func:`bindthem.parse_header` returns for the header and YAML bound."""
        meta = self._bindthem_metadata
        if not isinstance(meta, dict):
            meta = self._bindthem_metadata = _core.metadata(meta)
        return meta

    def __dir__(self):
        return sorted(set(self.__all__) | {"__all__", "__doc__", "__file__", "__name__",
                                           "metadata", "unexported"})

    def __repr__(self):
        return "<bindthem.Library %r from %r (%d functions)>" % (
            self.__name__, self.__file__, len(self.__all__))

    def __reduce__(self):
        return self._bindthem_reduce


def load(library, header, instantiate=None, *, name=None, strict=False):
    """Bind the kernels of ``header`` found in the shared library ``library``.

    With ``instantiate`` (an instantiate.yml), exactly what it lists is bound:
    templated functions once per type tuple, untemplated ones under ``null``;
    a listed overload the library lacks raises :class:`bindthem.SymbolError`.
    Without it, every bindable untemplated function that the library exports
    is bound. ``name`` (default: the header's stem, as pyamg names its
    modules) is the module name. ``strict`` makes a YAML function that this
    header lacks an error even when the YAML is shared by several headers.
    """
    library = os.fspath(library)
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    if os.sep in library or os.path.exists(library):
        library = os.path.abspath(library)
    reduce = (_load_again, (library, header, instantiate, name, strict))
    return _make(library, header, instantiate, name, strict, reduce)


def _make(library, header, instantiate, name, strict, reduce):
    handle, functions, metadata, unexported = _core.bind(
        library, header, instantiate, module=name, strict=strict)
    return Library(name, header, handle, functions, metadata, unexported, reduce)


def _load_again(library, header, instantiate, name, strict):
    return load(library, header, instantiate, name=name, strict=strict)
