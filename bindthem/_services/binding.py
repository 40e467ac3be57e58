"""The Library class and the binding: the one call of the C core's ``bind``
(:func:`_make`, a shared library's kernels) and of its ``cuda_bind``
(:func:`bind_cuda`, a CUDA module image's), each made into a :class:`Library`
with its :class:`LibraryInfo`; and what a header that binds less than it
declares says (:func:`left_out_message`, :func:`plan_message`).

Besides its kernels, a Library has the header's ``#define`` constants, the
members of the enums it declares, an ``enum.IntEnum`` (``IntFlag``) class
per named enum and a NumPy structured dtype per struct or union, as
attributes (:func:`named_attributes`, from the metadata's "constants",
"enums" and "structs"; the dtypes are the C core's); a kernel's name is
never taken.

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
import enum
import functools
import keyword
import os
import re
import types
import weakref

from .. import _core
from .._base.byname import FUNCTION, LIBRARY
from .._base.instantiation import yaml_lines
from ..errors import BindValueError, BindWarning, warn
from . import preprocess, travel

__all__ = ["Backend", "CPU", "CUDA", "Library", "LibraryInfo", "bind_cuda", "enum_class",
           "left_out_message", "named_attributes", "named_enums", "named_structs",
           "nothing_bound", "plan_args", "plan_message", "warn_if_left_out"]

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
        # its enums' members and classes (_named)
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


def _missing(ref, name):
    """A Library's __getattr__ (in its namespace): a name it lacks, which the
    header may declare, saying why it is not bound."""
    self = ref()
    info = getattr(self, "_bindthem_", None) if self is not None else None
    why = [x for x in info.left_out if x["name"] == name] if info is not None else []
    if not why:
        raise AttributeError("module %r has no attribute %r"
                             % (getattr(self, "__name__", "?"), name), name=name, obj=self)
    raise AttributeError("; ".join(dict.fromkeys(
        "%s:%d declares %r, but this Library does not bind it: %s"
        % (os.path.basename(info.header), x["line"], name, x["reason"]) for x in why)),
        name=name, obj=self)


class Library(types.ModuleType):
    """The kernels of one header, served from one shared library or CUDA module.

    :func:`bindthem.load`, :func:`bindthem.build`, :func:`bindthem.cuda.load`
    and :func:`bindthem.cuda.build` all return one. A module object (it can
    sit in ``sys.modules``): each bound kernel is an attribute, ``__all__`` and
    ``dir()`` list them, ``__file__`` is the shared library or CUDA module.
    The header's ``#define`` constants, the members of its enums and a class
    per named enum (``enum.IntEnum``, ``enum.IntFlag`` for flags) are
    attributes too, which ``dir()`` lists and ``__all__`` does not; a
    kernel's name is never taken by one (``bindthem.info(lib).named``).
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
        info.named = _named(plan, lambda: info.metadata, name, functions,
                            getattr(handle, "struct_dtypes", None))
        self.__dict__.update(info.named)
        # a module's own __getattr__ (PEP 562), asked only for a name the module lacks:
        # not the class's, which would route every lookup (lib.f) through a Python-level
        # hook; a weak reference, so that the Library is freed when dropped, as a module is
        self.__dict__["__getattr__"] = functools.partial(_missing, weakref.ref(self))

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


# --- the header's constants and enums, as attributes ---------------------------------

# a text that may hold a constant (an object-like #define with a value: not an include
# guard), an enum or a struct: else no metadata is built for them
_MAY_NAME = re.compile(rb"#[ \t]*define[ \t]+\w+[ \t]+\S|\b(?:enum|struct|union)\b")


# the Library's own attributes, which a kernel may take but a constant or enum does not
_OWN_NAMES = frozenset({"_bindthem_", "metadata", "unexported", "not_kernels"})


def _free(name, taken):
    """Whether a constant, enum member or enum class may take ``name`` as an
    attribute: an identifier that no kernel (nor one named before it) has,
    and not the Library's own (``__name__``, ``metadata``, ...)."""
    return (isinstance(name, str) and name.isidentifier() and name not in taken
            and not (name.startswith("__") and name.endswith("__")) and name not in _OWN_NAMES)


def _int_value(self, proto):
    return (int, (int(self),))


def enum_class(e, module):
    """The ``enum.IntEnum`` (``enum.IntFlag`` when its ``flags``) of a metadata
    enum (``{"name", "members", "flags", ...}``), of module ``module``; its
    members pickle as plain ints (the Library is no importable module).
    None when Python's enum refuses its members' names."""
    base = enum.IntFlag if e["flags"] else enum.IntEnum
    members = [(n, v) for n, v in e["members"]]
    plain = [(n, v) for n, v in members if n.isidentifier() and not keyword.iskeyword(n)
             and not (n.startswith("_") and n.endswith("_"))]
    for names in (members, plain):
        try:
            cls = base(e["name"], names, module=module, qualname=e["name"])
        except (TypeError, ValueError):
            continue
        cls.__reduce_ex__ = _int_value  # type: ignore[assignment]
        return cls
    return None


def _member(cls, value):
    """cls's member of value (an int when cls is None or lacks it)."""
    try:
        return cls(value) if cls is not None else value
    except ValueError:
        return value


def used_enums(meta):
    """The names of the enums a parameter or the return of a bound overload has."""
    used = set()
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            for t in (*ov.get("params", ()), ov.get("return") or {}):
                if t.get("enum"):
                    used.add(t["enum"])
    return used


def named_enums(meta):
    """The enums that get a class: each named one the header itself declares,
    and each that a bound function takes or returns (the first of a name)."""
    used = used_enums(meta)
    out = {}
    for e in meta.get("enums", ()):
        if e["name"] and e["name"] not in out and (e["in_header"] or e["name"] in used):
            out[e["name"]] = e
    return list(out.values())


def used_structs(meta):
    """The names of the structs a parameter or the return of a bound overload has."""
    used = set()
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            for t in (*ov.get("params", ()), ov.get("return") or {}):
                if t.get("struct"):
                    used.add(t["struct"])
    return used


def named_structs(meta):
    """The structs and unions that get a dtype attribute (the C core makes
    their dtypes, bt_struct_py.h): each named one with a layout that the
    header itself declares or a bound function takes or returns, and the
    structs their fields hold; in the header's order, the first of a name."""
    first = {}
    for s in meta.get("structs", ()):
        if s["name"] and s["reason"] is None:
            first.setdefault(s["name"], s)
    todo = [n for n, s in first.items() if s["in_header"]] + sorted(used_structs(meta))
    keep = set()
    while todo:
        n = todo.pop()
        if n in first and n not in keep:
            keep.add(n)
            todo += [f["struct"] for f in first[n]["fields"] if f.get("struct")]
    return [s for n, s in first.items() if n in keep]


def named_attributes(meta, functions):
    """What a Library of ``meta`` has besides its kernels (``functions``, the
    names bound), in order, as ``[(name, what, item)]``: each constant of the
    header (``what`` "constant", ``item`` its metadata dict), each member of
    each enum the header itself declares ("member", ``(enum dict, value)``),
    then each enum of :func:`named_enums` ("enum", its dict), then each
    struct of :func:`named_structs` ("struct", its dict: a NumPy dtype). A
    name already taken (a kernel's, or an earlier one's) is left to what took
    it. The Library and its stub both list these."""
    taken = set(functions)
    out = []

    def add(name, what, item):
        if _free(name, taken):
            taken.add(name)
            out.append((name, what, item))

    for c in meta.get("constants", ()):
        add(c["name"], "constant", c)
    for e in meta.get("enums", ()):
        if e["in_header"]:
            for n, v in e["members"]:
                add(n, "member", (e, v))
    for e in named_enums(meta):
        add(e["name"], "enum", e)
    for s in named_structs(meta):
        add(s["name"], "struct", s)
    return out


def _named(plan, metadata, module, functions, dtypes=None):
    """{attribute: value} of :func:`named_attributes`: a constant's value, an
    enum member as its class's member (an int when its enum has no class),
    an enum's IntEnum (IntFlag) class, a struct's dtype (from ``dtypes``,
    the C core's ``{name: numpy.dtype}``; none without)."""
    if plan is None or not _MAY_NAME.search(plan.header_text):
        return {}
    meta = metadata()
    classes = {id(e): enum_class(e, module) for e in named_enums(meta)}
    named = {}
    for name, what, item in named_attributes(meta, functions):
        if what == "constant":
            named[name] = item["value"]
        elif what == "member":
            named[name] = _member(classes.get(id(item[0])), item[1])
        elif what == "struct":
            if item["name"] in (dtypes or {}):
                named[name] = dtypes[item["name"]]
        elif classes[id(item)] is not None:
            named[name] = classes[id(item)]
    return named


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
