"""bindthem.Library and bindthem.load: a shared library's kernels as a module."""

import errno
import os
import stat
import types

from . import _core, _display

__all__ = ["Library", "LibraryInfo", "load"]


def _regular_file(path):
    """OSError unless path, when it exists, is a regular file: opening a FIFO
    would wait for a writer, and a device reads as garbage or nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # the loader reports it (or finds a bare soname on its search path)
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        raise OSError(errno.EINVAL, "cannot load: the file is not a regular file (%s)"
                      % ("a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"), path)


def _module_doc(name, header, functions):
    lines = ["Kernels of %s, bound by bindthem." % os.path.basename(header), "",
             "Methods", "-------"]
    lines += sorted(functions)
    return "\n".join(lines) + "\n"


class LibraryInfo:
    """bindthem's own data about a Library, ``lib.__bindthem__``.

    Kept out of the kernels' namespace, so that a kernel may be called
    ``metadata`` or ``unexported``: ``lib.metadata`` is then the kernel, and
    ``lib.__bindthem__.metadata`` still the metadata.
    """

    __slots__ = ("handle", "_metadata", "header", "unexported", "not_kernels", "reduce")

    def __init__(self, handle, metadata, unexported, not_kernels=(), reduce=None, header=None):
        self.handle = handle
        self._metadata = metadata  # a dict, or the core's capsule until first asked for
        self.header = header if header is not None else metadata["header"]
        self.unexported = list(unexported)
        self.not_kernels = list(not_kernels)
        self.reduce = reduce

    @property
    def metadata(self):
        """What :func:`bindthem.parse_header` returns for the header and YAML
        bound, built on first access (for 10^5 functions the dicts cost more
        than the binding)."""
        if not isinstance(self._metadata, dict):
            self._metadata = _core.metadata(self._metadata)
        return self._metadata

    def __repr__(self):
        return "<bindthem.LibraryInfo of %s>" % os.path.basename(self.header)


class _Info:
    """A Library attribute read from ``lib.__bindthem__`` unless a kernel of
    that name shadows it (a non-data descriptor: the instance dict wins)."""

    def __init__(self, doc):
        self.__doc__ = doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, lib, owner=None):
        if lib is None:
            return self
        return getattr(lib.__dict__["__bindthem__"], self.name)


class Library(types.ModuleType):
    """The kernels of one header, served from one shared library.

    A module object (it can sit in ``sys.modules``): each bound kernel is an
    attribute, ``__all__`` and ``dir()`` list them, ``__file__`` is the shared
    library. ``metadata`` is what :func:`bindthem.parse_header` returns for
    the header (built on first access, from what was bound), ``unexported``
    the overloads left out because the library lacks them (only without an
    instantiate.yml). A kernel of one of those names takes the name; both
    stay at ``lib.__bindthem__`` (:class:`LibraryInfo`).
    """

    metadata = _Info("What bindthem.parse_header returns for the header.")
    unexported = _Info("Overloads left out because the library lacks them.")

    def __init__(self, name, header, handle, functions, metadata, unexported, reduce):
        super().__init__(name, _module_doc(name, header, functions))
        self.__file__ = handle.path
        self.__all__ = sorted(functions)
        self.__bindthem__ = LibraryInfo(handle, metadata, unexported, reduce=reduce,
                                        header=header)
        self.__dict__.update(functions)
        for f in functions.values():
            f._set_library(self)

    def __dir__(self):
        return sorted(set(self.__all__) | {"__all__", "__bindthem__", "__doc__", "__file__",
                                           "__name__", "metadata", "unexported"})

    def __repr__(self):
        return "<bindthem.Library %r from %r (%d functions)>" % (
            self.__name__, self.__file__, len(self.__all__))

    def __reduce__(self):
        return self.__bindthem__.reduce

    def _repr_html_(self):
        return _display.library_html(self)

    def _repr_pretty_(self, p, cycle):
        _display.library_pretty(self, p, cycle)


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
        _regular_file(library)
    reduce = (_load_again, (library, header, instantiate, name, strict))
    return _make(library, header, instantiate, name, strict, reduce)


def _make(library, header, instantiate, name, strict, reduce):
    handle, functions, metadata, unexported = _core.bind(
        library, header, instantiate, module=name, strict=strict)
    return Library(name, header, handle, functions, metadata, unexported, reduce)


def _load_again(library, header, instantiate, name, strict):
    return load(library, header, instantiate, name=name, strict=strict)
