"""bindthem.Library and bindthem.load: a shared library's kernels as a module."""

from __future__ import annotations

import errno
import os
import stat
import types
import weakref
from typing import Any

from . import _core, _loading, _travel
from ._ondemand import yaml_lines
from ._opts import GIL_POLICIES, _check_gil, _options
from ._types import GilOption, GilPolicy, StrPath
from .errors import BindTypeError, BindValueError, BindWarning, warn

__all__ = ["Backend", "Library", "LibraryInfo", "getsource", "info", "library_of", "load",
           "options"]


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


def _module_doc(name, header, functions, what="Kernels"):
    lines = ["%s of %s, bound by bindthem." % (what, os.path.basename(header)), "",
             "Methods", "-------"]
    lines += sorted(functions)
    return "\n".join(lines) + "\n"


class LibraryInfo:
    """bindthem's own data about a Library, ``bindthem.info(lib)``.

    Kept out of the kernels' namespace, so that a kernel may be called
    ``metadata`` or ``unexported``: ``lib.metadata`` is then the kernel, and
    ``bindthem.info(lib).metadata`` still the metadata.
    """

    __slots__ = ("handle", "plan", "_metadata", "header", "unexported", "not_kernels",
                 "left_out", "source", "backend", "_library")

    def __init__(self, header, source=None, backend=None):
        # made before binding, so that each callable is complete when the core makes it;
        # Library fills in what the binding returned (_bound)
        self.header = header
        self.source = source  # what pickles carry (bindthem._travel.Source)
        self.backend = backend if backend is not None else CPU
        self._bound(None, None, ())
        self._library = None

    def _bound(self, handle, plan, unexported, not_kernels=(), left_out=()):
        self.handle = handle
        # what was parsed and bound (_core.Plan: the exact bytes and the metadata)
        self.plan = plan
        self._metadata = None  # plan.metadata(), made on first access
        self.unexported = list(unexported)
        self.not_kernels = list(not_kernels)
        # what the core left out, with why: [{"name", "line", "reason", "deliberate"}]
        self.left_out = list(left_out)

    @property
    def metadata(self):
        """What :func:`bindthem.parse_header` returns for the header and YAML
        bound, built on first access (for 10^5 functions the dicts cost more
        than the binding)."""
        if self._metadata is None:
            self._metadata = self.plan.metadata()
        return self._metadata

    def __repr__(self):
        return "<bindthem.LibraryInfo of %s>" % os.path.basename(self.header)

    @property
    def library(self):
        """The Library, or None once it is gone (its functions may outlive it)."""
        return self._library() if self._library is not None else None

    def _reduce(self):
        lib = self.library
        if lib is not None:
            _travel.remember(lib, self.source)
        return self.source

    def _reduce_function(self, name):
        """Function.__reduce__: the function by name, with its kernel's source."""
        return (_travel.function, (self._reduce(), name))

    def _token(self, name=None):
        """__dask_tokenize__: the same for the same kernel source, options and name."""
        return _travel.token(self.source.key, name)


class _Info:
    """A Library attribute read from its :class:`LibraryInfo` unless a kernel of
    that name shadows it (a non-data descriptor: the instance dict wins)."""

    def __init__(self, doc):
        self.__doc__ = doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, lib, owner=None):
        if lib is None:
            return self
        return getattr(lib._bindthem_, self.name)


class Backend:
    """What one back end does differently, for the one :class:`Library` class:
    its name and what its callables are called (the core gives each its
    LibraryInfo and options as it makes it). ``bindthem.info(lib).backend``
    is one of these."""

    name = "cpu"
    noun = "functions"  # the repr's "(3 functions)"
    what = "Kernels"  # the module docstring's "Kernels of x.h, bound by bindthem."

    def __repr__(self):
        return "<bindthem back end %s>" % self.name


CPU = Backend()

def info(obj: Library | _core.Function | _core.CudaKernel) -> LibraryInfo:
    """bindthem's own data about a Library (:class:`LibraryInfo`: its
    metadata, handle, back end, what it left out and why, the source it was
    bound from), given the Library or one of its bound callables."""
    lib = obj if isinstance(obj, Library) else library_of(obj)
    if lib is None:
        raise BindTypeError("bindthem.info(%s): expected a Library or one of its kernels (a "
                            "live one: its Library may be gone)" % type(obj).__name__)
    return lib._bindthem_


def library_of(obj: object) -> Library | None:
    """The Library a bound callable (a Function or a CUDA kernel) belongs to,
    or None (gone, or not a bindthem callable)."""
    if isinstance(obj, (_core.Function, _core.CudaKernel)):
        lib = obj.library
        return lib if isinstance(lib, Library) else None
    return None


class Library(types.ModuleType):
    """The kernels of one header, served from one shared library or CUDA module.

    :func:`bindthem.load`, :func:`bindthem.build`, :func:`bindthem.cuda.load`
    and :func:`bindthem.cuda.build` all return one. A module object (it can
    sit in ``sys.modules``): each bound kernel is an attribute, ``__all__`` and
    ``dir()`` list them, ``__file__`` is the shared library or CUDA module.
    ``metadata`` is what :func:`bindthem.parse_header` returns for the header
    (built on first access, from what was bound), ``unexported`` the
    overloads left out because the library lacks them (only without an
    instantiate.yml), ``not_kernels`` the header's host functions that a CUDA
    Library does not bind (empty on the CPU). A kernel of one of those names
    takes the name; all stay at ``bindthem.info(lib)`` (:class:`LibraryInfo`,
    whose ``backend`` says which back end bound it).
    """

    # bindthem.info(lib): a slot, not the module's namespace, so that no
    # kernel name can shadow it and dir()/vars() list kernels only
    __slots__ = ("_bindthem_",)

    metadata = _Info("What bindthem.parse_header returns for the header.")
    unexported = _Info("Overloads left out because the library lacks them.")
    not_kernels = _Info("The header's host functions, which a CUDA Library does not bind.")

    def __init__(self, name, info, handle, functions, plan, unexported, *, not_kernels=(),
                 left_out=()):
        # info: the LibraryInfo the core gave each of functions as it made them
        super().__init__(name, _module_doc(name, info.header, functions, info.backend.what))
        self.__file__ = handle.path
        self.__all__ = sorted(functions)
        info._bound(handle, plan, unexported, not_kernels, left_out)
        info._library = weakref.ref(self)
        self._bindthem_ = info
        self.__dict__.update(functions)

    def __getattr__(self, name):
        # only for names the instance lacks: one the header declares says why it is not bound
        info = getattr(self, "_bindthem_", None) if name != "_bindthem_" else None
        why = [x for x in info.left_out if x["name"] == name] if info is not None else []
        if not why:
            raise AttributeError("module %r has no attribute %r" % (self.__name__, name),
                                 name=name, obj=self)
        raise AttributeError("; ".join(dict.fromkeys(
            "%s:%d declares %r, but this Library does not bind it: %s"
            % (os.path.basename(info.header), x["line"], name, x["reason"]) for x in why)),
            name=name, obj=self)

    def __dir__(self):
        return sorted(set(self.__all__) | {"__all__", "__doc__", "__file__",
                                           "__name__", "metadata", "unexported", "not_kernels"})

    @property
    def __bindthem__(self):
        """Deprecated (removed in 0.2): :func:`bindthem.info`."""
        warn("lib.__bindthem__ is deprecated and goes in bindthem 0.2: use bindthem.info(lib)",
             DeprecationWarning)
        return self._bindthem_

    def __repr__(self):
        return "<bindthem.Library %r from %r (%d %s)>" % (
            self.__name__, self.__file__, len(self.__all__), self._bindthem_.backend.noun)

    def __reduce__(self):
        return (_travel.library, (self._bindthem_._reduce(),))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self  # like a module or a function: bound code does not change

    def __dask_tokenize__(self):
        return self._bindthem_._token()

    # bindthem._display is imported on the first display or getsource(), not with bindthem
    def _repr_html_(self):
        from . import _display

        return _display.library_html(self)

    def _repr_pretty_(self, p, cycle):
        from . import _display

        _display.library_pretty(self, p, cycle)


def getsource(obj):
    """The kernel source of a bound function, read from its header: its doc
    comment, template line and definition (every declaration its overloads
    come from, for a Python name several C functions serve). For a Library,
    the whole header. Like :func:`inspect.getsource`, the header is read now;
    raises ``OSError`` when it is gone or no longer has the function where it
    was bound, ``TypeError`` for other objects. CUDA kernels and Libraries
    too."""
    from . import _display

    if isinstance(obj, Library):
        with open(_display._meta(obj)["header"], encoding="utf-8", errors="replace") as fh:
            return fh.read()
    lib = library_of(obj)
    if not isinstance(lib, Library):
        raise TypeError("bindthem.getsource() takes a bindthem Function, CUDA kernel or "
                        "Library, not %s" % type(obj).__name__)
    header = _display._meta(lib)["header"]
    lines = _display._read_lines(header)
    parts = []
    for d in _display._declarations(lib, obj.__name__):
        row = lines[d["line"] - 1] if d["line"] <= len(lines) else ""
        if row[d["col"] - 1:d["col"] - 1 + len(d["name"])] != d["name"]:
            raise OSError("%s:%d no longer declares %s (the header changed since it was bound)"
                          % (header, d["line"], d["name"]))
        parts.append("\n".join(lines[d["first_line"] - 1:d["last_line"]]) + "\n")
    return "\n".join(parts)


def load(library: StrPath, header: StrPath, instantiate: StrPath | None = None, *,
         name: str | None = None, strict: bool = False, gil: GilOption = "auto",
         copy_const: bool = False) -> Library:
    """Bind the kernels of ``header`` found in the shared library ``library``.

    With ``instantiate`` (an instantiate.yml), exactly what it lists is bound:
    templated functions once per type tuple, untemplated ones under ``null``;
    a listed overload the library lacks raises :class:`bindthem.SymbolError`.
    Without it, every bindable untemplated function that the library exports
    is bound (a header whose functions are all templated then binds nothing:
    a :class:`bindthem.BindWarning` says what to pass). ``name`` (default: the
    header's stem, as pyamg names its modules) is the module name. ``strict``
    makes a YAML function that this header lacks an error even when the YAML
    is shared by several headers.

    ``gil``: when calls release the GIL: ``"auto"`` (when their arrays hold
    ``bindthem._core.GIL_RELEASE_MIN_ELEMENTS`` elements or more),
    ``"release"`` (always: compute-heavy kernels on
    small arrays), ``"keep"`` (never), or a dict ``{function name: policy}``
    (the others ``"auto"``). ``copy_const=True``: a ``const`` array argument
    that is not C-contiguous and aligned is copied into one that is, instead
    of being refused; writable arrays are never copied.
    :func:`bindthem.options` overrides both per call.

    The Library pickles by value: the header and YAML texts, this library's
    path and SHA-256 (unpickling binds only that same file).

    A file replaced at that path since this process loaded it (a rebuild, by
    rename or rewritten in place) is loaded from a private copy of its new
    bytes: the new Library runs the new code, and the old one keeps its own
    (docs/build.rst, "A library replaced at its path"). ``__file__`` is
    ``library``; ``bindthem.info(lib).handle.path`` what the loader opened.
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
    opts = _options(gil, copy_const)
    opened = _loading.open_checked(library)  # a replaced file's new bytes, not its old object
    lib = _make(opened.name, header, instantiate, name, strict, None, opts)
    if opened.identity is not None:
        lib.__file__ = library  # the file asked for, whatever name the loader opened
    lib._bindthem_.source = _load_source(lib, opened, header, instantiate, name, strict, opts)
    warn_if_left_out(lib)
    return lib


def _load_source(lib, opened, header, instantiate, name, strict, opts):
    """What a loaded Library pickles: its library's path and the SHA-256 of
    the bytes it maps (known when they were copied; else taken at pickling,
    if the file's identity is still the one opened)."""
    info = lib._bindthem_
    if opened.identity is None:  # a bare soname: the file the loader found
        path = info.handle.path
        ident = _loading.identity(os.stat(path))
    else:
        path, ident = opened.path, opened.identity
    return _travel.Source(
        kind="load", name=name, strict=strict, header=header, header_text=info.plan.header_text,
        instantiate=instantiate, yaml_text=info.plan.yaml_text,
        library=path, library_hash=opened.sha256, library_stat=ident, options=opts)


def _make(library, header, instantiate, name, strict, source, options=None, plan=None):
    """Binds library; plan: the _core.Plan of header and instantiate when
    parsed already (bound as it is: the header is not read again)."""
    info = LibraryInfo(header, source)
    handle, functions, plan, unexported, left_out = _core.bind(
        library, *plan_args(header, instantiate, plan), module=name, strict=strict, info=info,
        options=options)
    _check_gil_names(options or {}, functions)
    return Library(name, info, handle, functions, plan, unexported, left_out=left_out)


def plan_args(header, instantiate, plan):
    """bind()'s and cuda_bind()'s (header, instantiate): the Plan when there
    is one (the header is not read again), else the paths."""
    return (header, instantiate) if plan is None else (plan, None)


def _check_gil_names(opts, functions):
    """A gil= dict names only functions the Library binds."""
    gil = opts.get("gil", "auto")
    unknown = sorted(set(gil) - set(functions)) if isinstance(gil, dict) else ()
    if unknown:
        raise BindValueError("gil= names %s, which this Library does not bind (it binds %s)"
                             % (", ".join(map(repr, unknown)), ", ".join(sorted(functions)) or
                                "nothing"))


def nothing_bound(metadata, kernels_only=False):
    """Why a header without instantiate.yml binds nothing, with what to pass,
    or None when it binds something (or has no templated function).
    ``kernels_only``: only ``__global__`` templates count, and the caller
    knows that nothing was bound (a CUDA Library binds no host function)."""
    if (metadata["functions"] and not kernels_only) or metadata.get("instantiate"):
        return None
    templated = [d for d in metadata["declarations"]
                 if d["template"] and d["bindable"] and (d["global"] or not kernels_only)]
    if not templated:
        return None
    first = templated[0]
    names = ", ".join(dict.fromkeys("%s<%s>" % (d["name"], ", ".join(d["template"]))
                                    for d in templated))
    return ("%s binds no functions: its functions are templates (%s), and without an "
            "instantiate.yml nothing says which types to instantiate them with. Write one that "
            "lists a type tuple per instantiation (one C++ type per template parameter), e.g.\n"
            "%sand pass it: build(header, 'instantiate.yml'), load(library, header, "
            "'instantiate.yml'), or -i instantiate.yml on the command line (see %s)"
            % (metadata["header"], names,
               yaml_lines(first["name"], ["double"] * len(first["template"])),
               _core.DOC_ANCHORS["templates"]))


# a BindWarning lists this many of the declarations left out, then a count
LEFT_OUT_SHOWN = 5


def left_out_message(header, left_out, n_bound, metadata=None, kernels_only=False):
    """What a BindWarning says when a header binds fewer functions than it
    declares, or None when it binds all but what it leaves out deliberately.

    ``left_out``: the core's ``[{"name", "line", "reason", "deliberate"}]``
    (``bindthem.info(lib).left_out`` after binding, ``metadata["skipped"]``
    before); ``n_bound``: the names bound. A deliberate omission (an inline or
    static helper, a template instantiate.yml does not name, a host function
    in a CUDA module) is listed only when nothing is bound. ``metadata``: to
    add what to pass when templates without instantiate.yml are the cause.
    """
    shown = [x for x in left_out if n_bound == 0 or not x["deliberate"]]
    base = os.path.basename(header)
    if n_bound and not shown:
        return None
    if not shown:
        return ("%s binds no functions: it declares none that bindthem can read (bindthem reads "
                "the declarations in the header itself, not in the files it #includes: pass the "
                "header that declares the kernels)" % header)
    lines = ["%s:%d: %s: %s" % (base, x["line"], x["name"], x["reason"])
             for x in shown[:LEFT_OUT_SHOWN]]
    if len(shown) > LEFT_OUT_SHOWN:
        lines.append("and %d more (bindthem.info(lib).left_out lists them all)"
                     % (len(shown) - LEFT_OUT_SHOWN))
    if n_bound:
        head = "%s binds %d function%s; %d declaration%s not bound:" % (
            header, n_bound, "" if n_bound == 1 else "s", len(shown),
            " is" if len(shown) == 1 else "s are")
    else:
        head = "%s binds no functions; %d declaration%s not bound:" % (
            header, len(shown), " is" if len(shown) == 1 else "s are")
    text = "\n  ".join([head] + lines)
    why = nothing_bound(metadata, kernels_only) if metadata is not None and not n_bound else None
    return text + ("\n" + why if why else "")


def plan_message(meta):
    """left_out_message for a header and YAML before anything is compiled or
    loaded (stubs, compile_library, the command line): from the plan."""
    return left_out_message(meta["header"], meta["skipped"], len(meta["functions"]), meta)


def warn_if_left_out(lib):
    """One BindWarning when a Library binds fewer functions than its header
    declares (left_out_message)."""
    info = lib._bindthem_
    kernels_only = info.backend is not CPU
    why = left_out_message(info.header, info.left_out, len(lib.__all__),
                           info.metadata if not lib.__all__ else None, kernels_only)
    if why:
        warn(why, BindWarning)


class options:
    """``with bindthem.options(gil=..., copy_const=...):`` overrides, for the
    calls made inside the block (in this thread or asyncio task), the options
    every Function has from its Library's build()/load() arguments:

    ``gil``: ``"release"`` (release the GIL around every call, however small
    its arrays: compute-heavy kernels on small arrays run in parallel
    threads), ``"keep"`` (never release it), ``"auto"`` (release it when the
    arrays hold ``bindthem._core.GIL_RELEASE_MIN_ELEMENTS`` elements or more,
    the default).
    ``copy_const``: ``True`` lets bindthem copy ``const`` array arguments that
    are not C-contiguous and aligned (blocks of ``dask.array.from_array``,
    buffers that arrived over the network) into ones that are; ``False``
    refuses them. Writable arrays are never copied: the kernel's writes must
    land in the caller's array.

    ``None`` keeps the enclosing value. Blocks nest.
    """

    def __init__(self, *, gil: GilPolicy | None = None, copy_const: bool | None = None) -> None:
        if gil is not None:
            _check_gil(gil, "gil")
        if copy_const is not None and not isinstance(copy_const, bool):
            raise TypeError("copy_const=%r: expected True, False or None" % (copy_const,))
        self.gil = gil
        self.copy_const = copy_const
        self._tokens: list[Any] = []

    def __enter__(self):
        self._tokens.append(_core._options_push(
            -1 if self.gil is None else GIL_POLICIES.index(self.gil),
            -1 if self.copy_const is None else int(self.copy_const)))
        return self

    def __exit__(self, *exc):
        _core._options_pop(self._tokens.pop())

    @staticmethod
    def current():
        """``{"gil": ..., "copy_const": ...}`` set by the enclosing blocks (None: not set)."""
        gil, copy = _core._options_get()
        return {"gil": gil, "copy_const": copy}

    def __repr__(self):
        return "bindthem.options(gil=%r, copy_const=%r)" % (self.gil, self.copy_const)
