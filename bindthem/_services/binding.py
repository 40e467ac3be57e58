"""The Library class and the binding: the one call of the C core's ``bind``
(:func:`_make`, a shared library's kernels) and of its ``cuda_bind``
(:func:`bind_cuda`, a CUDA module image's), each made into a :class:`Library`
with its :class:`LibraryInfo`; and what a header that binds less than it
declares says (:func:`left_out_message`, :func:`plan_message`).

A service: bindthem.load, the build, load_package, bindthem.cuda and
unpickling all bind through here. A Library's pickle names
bindthem._unpickle's entry points (bindthem._base.byname) and carries its
Source (bindthem._services.travel); rendering it imports
bindthem._services.display on first use.
"""

from __future__ import annotations

import os
import types
import weakref

from .. import _core
from .._base.byname import FUNCTION, LIBRARY
from .._base.instantiation import yaml_lines
from ..errors import BindValueError, BindWarning, warn
from . import travel

__all__ = ["Backend", "CPU", "CUDA", "Library", "LibraryInfo", "bind_cuda", "left_out_message",
           "nothing_bound", "plan_args", "plan_message", "warn_if_left_out"]


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
        self.source = source  # what pickles carry (bindthem._services.travel.Source)
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
