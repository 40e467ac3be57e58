"""The Library class and the binding: the one call of the C core's ``bind``
(:func:`_make`, a shared library's kernels) and of its ``cuda_bind``
(:func:`bind_cuda`, a CUDA module image's), each made into a :class:`Library`
with its :class:`LibraryInfo`; and what a header that binds less than it
declares says (:func:`left_out_message`, :func:`plan_message`).

Each Library is the one instance of a class of its own, whose namespace
holds its kernels (each in a ``_core.LibraryMethod``, which CPython
specializes ``lib.f(x)`` for), the names bindthem._services.named gives it
(the header's constants, enums and structs) and ``__name__``, ``__doc__``,
``__file__`` and ``__all__``, as a module's dict holds them.

A service: bindthem.load, the build, load_package, bindthem.cuda and
unpickling all bind through here. A Library's pickle names
bindthem._unpickle's entry points (bindthem._base.byname) and carries its
Source (bindthem._services.travel); rendering it imports
bindthem._services.display on first use.

Handles (bindthem.Handle) that a destructor frees and that are still open
at interpreter exit are closed then, newest first: this module registers
the C core's ``_close_open_handles`` with atexit.
"""

from __future__ import annotations

import atexit
import os
import types
import weakref

from .. import _core
from .._base.byname import FUNCTION, LIBRARY
from .._base.instantiation import yaml_lines
from ..errors import BindValueError, BindWarning, warn
from . import preprocess, travel
from .named import named_values

__all__ = ["Backend", "CPU", "CUDA", "Library", "LibraryInfo", "bind_cuda", "left_out_message",
           "nothing_bound", "own", "own_class", "PENDING", "plan_args", "plan_message",
           "warn_if_left_out"]

# handles still open at exit are freed by their destructors (load()'s handles=), newest first
atexit.register(_core._close_open_handles)


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

    ``preprocessing`` says how :func:`bindthem.load` or :func:`bindthem.build`
    read the header (as written or through the C preprocessor: what was run,
    why it failed; None for a Library bound from carried bytes, unpickled or
    packaged); ``preprocessed`` whether the bytes bound are the
    preprocessor's output; ``named`` the constants, enum members and enum
    classes set on the Library.
    """

    __slots__ = ("handle", "plan", "_metadata", "header", "unexported", "not_kernels",
                 "left_out", "source", "backend", "_library", "preprocessing", "named")

    def __init__(self, header, source=None, backend=None):
        # made before binding, so that each callable is complete when the core makes it;
        # Library fills in what the binding returned (_bound)
        self.header = header
        self.source = source  # what pickles carry (bindthem._services.travel.Source)
        self.backend = backend if backend is not None else CPU
        self._bound(None, None, ())
        self._library = None
        # how the header was read (bindthem._services.preprocess.Preprocessing): set by
        # load() and build(); None where nothing was recorded (an unpickled or packaged
        # Library: its plan's metadata says whether it is preprocessed)
        self.preprocessing = None

    def _bound(self, handle, plan, unexported, not_kernels=(), left_out=()):
        self.handle = handle
        # what was parsed and bound (_core.Plan: the exact bytes and the metadata)
        self.plan = plan
        self._metadata = None  # plan.metadata(), made on first access
        self.unexported = list(unexported)
        self.not_kernels = list(not_kernels)
        # what the core left out, with why: [{"name", "line", "reason", "deliberate",
        # "unreadable"}]
        self.left_out = list(left_out)
        # {attribute: value} the Library has besides its kernels: the header's constants,
        # its enums' members and classes (named.named_values)
        self.named = {}

    @property
    def preprocessed(self):
        """Whether the Plan bound is the C preprocessor's output (its first
        line a line marker, as the C core tells it)."""
        return self.plan is not None and preprocess.marker_file(self.plan.header_text) is not None

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
            travel.remember(lib, self.source)
        return self.source

    def _reduce_function(self, name):
        """Function.__reduce__: the function by name, with its kernel's source."""
        return (FUNCTION, (self._reduce(), name))  # bindthem._unpickle.function

    def _token(self, name=None):
        """__dask_tokenize__: the same for the same kernel source, options and name."""
        return travel.token(self.source.key, name)


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


class _CudaBackend(Backend):
    """The CUDA back end of :class:`bindthem.Library`: kernels launch rather
    than call (no GIL or copy options); each keeps its LibraryInfo, as a
    Function does (pickling, ``.library``, dask tokens)."""

    name = "cuda"
    noun = "CUDA kernels"
    what = "CUDA kernels"


CUDA = _CudaBackend()


class _LeftOut:
    """A name the header declares and its Library does not bind, in the
    Library's class: reading it raises AttributeError saying why (what a
    module's ``__getattr__`` would say, without one: a class-level
    ``__getattr__`` would keep CPython from specializing ``lib.f``)."""

    __slots__ = ("name", "why")

    def __init__(self, name, why):
        self.name, self.why = name, why

    def __get__(self, lib, owner=None):
        raise AttributeError(self.why, name=self.name, obj=lib)


def _left_out_text(info, name):
    """Why the Library of ``info`` lacks ``name``, or None where the header does not
    declare it."""
    why = [x for x in info.left_out if x["name"] == name]
    if not why:
        return None
    return "; ".join(dict.fromkeys(
        "%s:%d declares %r, but this Library does not bind it: %s"
        % (os.path.basename(info.header), x["line"], name, x["reason"]) for x in why))


def _stored(cls, value):
    """How ``value`` sits in the namespace of a Library's class ``cls``, so that
    ``lib.<name>`` is ``value``: a kernel in a ``LibraryMethod`` (``lib.f(x)``
    then costs what a module's does; what a kernel is, the core says: it
    refuses anything else), another descriptor (a Python function, a
    property) in a ``staticmethod``, anything else as it is."""
    if callable(value):
        try:
            return _core.LibraryMethod(value, cls)
        except TypeError:
            pass
    if hasattr(type(value), "__get__"):
        return staticmethod(value)
    return value


def _value(stored):
    """What :func:`_stored` stored."""
    if type(stored) is _core.LibraryMethod:
        return stored.kernel
    if type(stored) is staticmethod:
        return stored.__func__
    return stored


# where a LazyLibrary's own class keeps its Pending until bound (bindthem._unpickle)
PENDING = "__bindthem_pending__"
# the entries of a Library's class that are the class's, not the Library's namespace
_CLASS_KEYS = frozenset({"__module__", "__qualname__", "__slots__", "__dict__", "__class__",
                         PENDING})


class Library(types.ModuleType):
    """The kernels of one header, served from one shared library or CUDA module.

    :func:`bindthem.load`, :func:`bindthem.build`, :func:`bindthem.cuda.load`
    and :func:`bindthem.cuda.build` all return one. A module object (it can
    sit in ``sys.modules``): each bound kernel is an attribute, ``__all__``
    and ``dir()`` list them, ``__file__`` is the shared library or CUDA
    module, ``vars(lib)`` is its namespace (read-only: set attributes on the
    Library). Each Library is the one instance of a class of its own, which
    holds that namespace, so that ``lib.f(x)`` costs what a call through a
    module does (docs/performance.rst).
    The header's ``#define`` constants, the members of its enums and a class
    per named enum (``enum.IntEnum``, ``enum.IntFlag`` for flags) are
    attributes too, which ``dir()`` lists and ``__all__`` does not; a
    kernel's name is never taken by one (``bindthem.info(lib).named``). A
    name the header declares and the Library does not bind raises
    AttributeError saying why.
    ``metadata`` is what :func:`bindthem.parse_header` returns for the header
    (built on first access, from what was bound), ``unexported`` the
    overloads left out because the library lacks them (only without an
    instantiate.yml), ``not_kernels`` the header's host functions that a CUDA
    Library does not bind (empty on the CPU). A kernel of one of those names
    takes the name; all stay at ``bindthem.info(lib)`` (:class:`LibraryInfo`,
    whose ``backend`` says which back end bound it).
    """

    # bindthem.info(lib): a slot, not the namespace, so that no kernel name can shadow it
    # and dir()/vars() list kernels only
    __slots__ = ("_bindthem_",)
    # object's lookup, not a module's (module_getattro, which CPython never specializes):
    # with _core._library_class, each own class looks names up in its namespace only
    __getattribute__ = object.__getattribute__

    metadata = _Info("What bindthem.parse_header returns for the header.")
    unexported = _Info("Overloads left out because the library lacks them.")
    not_kernels = _Info("The header's host functions, which a CUDA Library does not bind.")

    def __new__(cls, name, *args, **kwargs):
        return types.ModuleType.__new__(own_class(cls, name, None))

    def __init__(self, name, info, handle, functions, plan, unexported, *, not_kernels=(),
                 left_out=()):
        # info: the LibraryInfo the core gave each of functions as it made them
        cls = type(self)
        doc = _module_doc(name, info.header, functions, info.backend.what)
        super().__init__(name, doc)  # the module's own dict, which no lookup reads
        type.__setattr__(cls, "__doc__", doc)
        info._bound(handle, plan, unexported, not_kernels, left_out)
        info._library = weakref.ref(self)
        self._bindthem_ = info
        _fill(cls, {"__file__": handle.path, "__all__": sorted(functions)})
        _fill(cls, functions)
        info.named = named_values(plan, lambda: info.metadata, name, functions,
                                  getattr(handle, "struct_dtypes", None))
        _fill(cls, info.named)
        for x in left_out:
            if x["name"].isidentifier() and x["name"] not in cls.__dict__:
                type.__setattr__(cls, x["name"], _LeftOut(x["name"], _left_out_text(info,
                                                                                   x["name"])))

    def __setattr__(self, name, value):
        if name == "_bindthem_":
            object.__setattr__(self, name, value)
        elif name in _CLASS_KEYS or name == "__name__":
            raise AttributeError("a Library's %s cannot be set" % name, name=name, obj=self)
        else:
            type.__setattr__(type(self), name, _stored(type(self), value))

    def __delattr__(self, name):
        cls = type(self)
        if name in _CLASS_KEYS or name == "__name__" or name not in cls.__dict__ \
                or type(cls.__dict__[name]) is _LeftOut:
            raise AttributeError("Library %r has no attribute %r to delete"
                                 % (self.__name__, name), name=name, obj=self)
        type.__delattr__(cls, name)

    @property
    def __dict__(self):
        """The Library's namespace, read-only (a module's ``__dict__``): its
        kernels, constants, enums, ``__name__``, ``__doc__``, ``__file__``,
        ``__all__``."""
        return types.MappingProxyType({
            k: _value(v) for k, v in type(self).__dict__.items()
            if k not in _CLASS_KEYS and type(v) is not _LeftOut})

    def __dir__(self):
        return sorted(set(self.__all__) | set(self._bindthem_.named) | {
            "__all__", "__doc__", "__file__", "__name__", "metadata", "unexported",
            "not_kernels"})

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
        return (LIBRARY, (self._bindthem_._reduce(),))  # bindthem._unpickle.library

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self  # like a module or a function: bound code does not change

    def __dask_tokenize__(self):
        return self._bindthem_._token()

    # bindthem._services.display is imported on the first display, not with bindthem
    def _repr_html_(self):
        from . import display

        return display.library_html(self)

    def _repr_pretty_(self, p, cycle):
        from . import display

        display.library_pretty(self, p, cycle)


# names are looked up in the Library's class only (no instance dict: bt_method.h); its
# own classes, and LazyLibrary's, alike: the same layout, so that one can become another
_core._library_class(Library)


def own_class(base, name, doc, **namespace):
    """A Library's own class: a subclass of ``base`` (Library, LazyLibrary) of
    its name that only it is an instance of, whose namespace is the Library's
    (``__name__`` ``name``, ``__doc__`` ``doc``, a module's ``__package__``,
    ``__loader__`` and ``__spec__``, and ``namespace``), looked up as a class's
    (``_core._library_class``)."""
    cls = type(base.__name__, (base,), {
        "__slots__": (), "__module__": "bindthem", "__qualname__": base.__name__,
        "__name__": name, "__doc__": doc, "__package__": None, "__loader__": None,
        "__spec__": None, **namespace})
    _core._library_class(cls)  # CPython gives it ModuleType's dict offset again
    return cls


def own(lib, name):
    """``lib``'s own attribute ``name`` (its namespace's: a kernel, constant,
    enum or struct; not the Library class's), or None. ``vars(lib)`` would
    copy the whole namespace."""
    v = type(lib).__dict__.get(name)
    return None if type(v) is _LeftOut else _value(v)


def _fill(cls, items):
    """Puts ``items`` ({name: value}) in the namespace of the Library's class ``cls``."""
    for k, v in items.items():
        if k != "_bindthem_":  # the slot wins, as it did over a module's dict
            type.__setattr__(cls, k, _stored(cls, v))


def _make(library, header, instantiate, name, strict, source, options=None, plan=None):
    """Binds library; plan: the _core.Plan of header and instantiate when
    parsed already (bound as it is: the header is not read again)."""
    info = LibraryInfo(header, source)
    handle, functions, plan, unexported, left_out = _core.bind(
        library, *plan_args(header, instantiate, plan), module=name, strict=strict, info=info,
        options=options)
    _check_gil_names(options or {}, functions)
    return Library(name, info, handle, functions, plan, unexported, left_out=left_out)


def bind_cuda(image, header, instantiate, name, strict, filename, source, plan=None):
    """A Library of the CUDA kernels of ``header`` in the module image ``image``
    (bindthem.cuda.load, and unpickling, with its Source); plan: the
    _core.Plan of header and instantiate when parsed already."""
    info = LibraryInfo(header, source, CUDA)
    handle, kernels, plan, unexported, not_kernels, left_out = _core.cuda_bind(
        image, *plan_args(header, instantiate, plan), module=name, filename=filename,
        strict=strict, info=info)
    return Library(name, info, handle, kernels, plan, unexported, not_kernels=not_kernels,
                   left_out=left_out)


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


def left_out_message(header, left_out, n_bound, metadata=None, kernels_only=False,
                     preprocessing=None):
    """What a BindWarning says when a header binds fewer functions than it
    declares, or None when it binds all but what it leaves out deliberately.

    ``left_out``: the core's ``[{"name", "line", "reason", "deliberate", ...}]``
    (``bindthem.info(lib).left_out`` after binding, ``metadata["skipped"]``
    before); ``n_bound``: the names bound. A deliberate omission (an inline or
    static helper, a template instantiate.yml does not name, a host function
    in a CUDA module) is listed only when nothing is bound. ``metadata``: to
    add what to pass when templates without instantiate.yml are the cause.
    ``preprocessing``: the header's
    (bindthem._services.preprocess.Preprocessing), to say why its includes
    were not read when the preprocessor failed.
    """
    shown = [x for x in left_out if n_bound == 0 or not x["deliberate"]]
    base = os.path.basename(header)
    if n_bound and not shown:
        return None
    failed = getattr(preprocessing, "failed", None)
    note = ("\nThe header was read as written: the C preprocessor, run to read what it "
            "#includes (cpp='auto'), failed: %s. Pass cppflags= (-I, -D) or set $CPP; "
            "cpp=True makes this an error" % failed) if failed else ""
    if not shown:
        return ("%s binds no functions: it declares none that bindthem can read (bindthem reads "
                "the declarations in the header itself, not in the files it #includes: pass the "
                "header that declares the kernels)%s" % (header, note))
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
    return text + note + ("\n" + why if why else "")


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
                           info.metadata if not lib.__all__ else None, kernels_only,
                           info.preprocessing)
    if why:
        warn(why, BindWarning)
