"""What a pickle of a Library or Function calls, and the stand-ins that bind on first use.

A pickle names this module's :func:`library`, :func:`function` and
:func:`source` by module and name (bindthem._base.byname): the modules that
write pickles (the Library class, a Source, the C core's Function through
bindthem._from_c) sit below it and never import it. It sits at the top with
the API because it binds with the services of every kind (the build, the
loader, load_package's, CUDA's); it imports services only, and nothing
imports it. bindthem._services.travel says what a pickle carries and checks it.

Where a process does not have a pickled Library yet, unpickling returns at
once a :class:`LazyLibrary` or :class:`LazyFunction`; the first use (a call,
an attribute of the Library, ``dir()``, ``inspect.signature``, a display)
binds it in the thread that uses it. So an engine that unpickles in its
message layer (Dask's comm) never compiles there, and a failure (no
compiler, a compile error, a missing library for ``load``, no CUDA driver)
is raised by that use as bindthem's ordinary exception.

One :class:`Pending` per content hash and process is shared by every lazy
object of that kernel: concurrent first uses bind once. A failed bind is
re-raised by the uses that follow for :data:`RETRY_AFTER` seconds (a
thousand mapped tasks fail in milliseconds, not a thousand compiles); the
first use after that tries again (a compiler installed, a library put in
place). A transient failure (:attr:`bindthem.BuildError.transient`: a
compiler killed by a signal, a full disk) is not re-raised: the next use
tries again at once.

After binding, a LazyLibrary *becomes* the Library (its namespace and its
class are the bound one's, and its functions' ``.library`` is it); a
LazyFunction stays a thin proxy that calls the bound Function (it says it is
a :class:`bindthem.Function` to ``isinstance``). Pickling either again never
binds: it pickles the same source.
"""

import copy
import inspect
import threading
import time
import types
import weakref

from . import _core
from ._base.byname import FUNCTION, LIBRARY
from ._services import carry, travel
from ._services.binding import PENDING as _PENDING
from ._services.binding import Library, _make, bind_cuda, own_class
from ._services.compile import ondemand
from ._services.compile.kernels import build_library
from ._services.packaging import bind_pickled
from .errors import BindError, BuildError, PickleError

__all__ = ["LazyFunction", "LazyLibrary", "Pending", "RETRY_AFTER", "function", "library",
           "pending", "source"]

RETRY_AFTER = 10.0  # seconds a failed bind is re-raised before a use tries again

_pending: dict[str, "Pending"] = {}  # key -> the kernel waiting for its first use
_OWN = ("__all__", "__file__")  # a Library's dunders worth binding for


# --- what a pickle calls (named by bindthem._base.byname: LIBRARY, FUNCTION, SOURCE) ---

def library(source):
    """The Library for a pickled Source (pickle calls this): the one this
    process has, else a LazyLibrary that binds on first use."""
    lib = travel._have(travel._checked(source))
    if lib is not None:
        return lib
    return pending(source).library()


def function(source, name):
    """A Function of the Library for a pickled Source (pickle calls this):
    the bound one where this process has the Library, else a LazyFunction."""
    key = travel._checked(source)
    if type(name) is not str or not name.isidentifier():
        travel._refuse("the function's name", "is %r, not an identifier" % (name,))
    lib = travel._have(key)
    if lib is not None:
        return travel.function_of(lib, name)
    return pending(source).function(name)


def source(fields):
    """A Source from a pickle's fields, checked (pickle calls this):
    bindthem._services.travel.check."""
    return travel.check(fields)


def pending(source):
    """The Pending of source's key, made on the first unpickle of it."""
    with travel._lock:
        p = _pending.get(source.key)
        if p is None:
            p = _pending[source.key] = Pending(source)
        return p


def bind(source):
    """A new Library for a pickled Source (bindthem._services.travel's
    docstring says which files each kind binds)."""
    if source.kind == "build":
        lib, why = _bind_carried(source)
        if lib is not None:
            return lib
        try:  # the copies in the cache held until built and bound
            with source._materialised() as (header, inst):
                return build_library(header, inst, name=source.name, cxx=source.cxx,
                                     flags=list(source.flags), cache_dir=source._cache_dir(),
                                     strict=source.strict, options=source.options,
                                     source=source, quiet=True,
                                     header_text=source.header_text,
                                     yaml_text=source.yaml_text)
        except BuildError as e:
            raise carry.noting(e, why)
    if source.kind == "cuda":
        with source._materialised() as (header, inst):
            return bind_cuda(source.image, header, inst, source.name, source.strict,
                             source.library, source, source.plan(header, inst))
    if source.kind == "package":  # this process's installed copy, else the carried library
        try:
            return bind_pickled(source)
        except PickleError as e:
            lib, why = _bind_carried(source)
            if lib is not None:
                return lib
            raise carry.noting(e, why)
    lib, why = _bind_carried(source)  # the pickled path if it hashes alike, else the bytes
    if lib is not None:
        return lib
    try:
        opened = source.check_library()  # loaded: the name bind() finds it under
    except BindError as e:
        raise carry.noting(e, why)
    with source._materialised() as (header, inst):  # a copy in the cache: held until bound
        lib = _make(opened.name, header, inst, source.name, source.strict, source,
                    source.options, source.plan(header, inst))
    lib.__file__ = source.library
    return lib


def _bind_carried(source):
    """(Library, None) bound from the shared library the pickle carries,
    without compiling (carry.bind_carried); or (None, why not: None when it
    carries none)."""
    if source.binary is None:
        return None, None
    return carry.bind_carried(source.binary, source.name, source._cache_dir(),
                               lambda opened, path: _bind_library(source, opened, path))


def _bind_library(source, opened, path):
    """A Library bound from the opened library file at path: an open build's
    with its open Functions (instantiation on demand), as build_library
    makes them."""
    with source._materialised() as (header, inst):
        plan = source.plan(header, inst)
        lib = _make(opened.name, header, inst, source.name, source.strict, source,
                    source.options, plan)
        if source.on_demand is not None:
            ondemand.open_library(lib, header, plan, source.name, source.cxx, list(source.flags),
                                  source._cache_dir(), source.strict, source.options, source)
    source.built = path
    lib.__file__ = path
    return lib


class Pending:
    """A pickled kernel this process has not bound yet."""

    def __init__(self, source):
        self.source = source
        self.key = source.key
        self.result = None  # the Library once bound
        self.lazy = None  # the LazyLibrary handed out, if any
        self.error = None  # the last bind's exception, and when it was raised
        self.failed_at = 0.0
        self.binds = 0  # binds attempted (tests count them)
        self._bind_lock = threading.Lock()

    def library(self):
        """The Library when bound, else the one LazyLibrary of this kernel."""
        with travel._lock:
            if self.result is not None:
                return self.result
            if self.lazy is None:
                self.lazy = LazyLibrary(self)
            return self.lazy

    def function(self, name):
        with travel._lock:
            if self.result is not None:
                return travel.function_of(self.result, name)
        return LazyFunction(self, name)

    def get(self):
        """The bound Library, binding it in this thread on first need."""
        result = self.result
        if result is not None:
            return result
        with self._bind_lock:
            if self.result is not None:
                return self.result
            if self.error is not None and time.monotonic() - self.failed_at < RETRY_AFTER:
                raise _again(self.error)
            self.binds += 1
            try:
                lib = travel._have(self.key)
                made = lib is None
                if made:
                    lib = bind(self.source)
            except Exception as e:
                if not getattr(e, "transient", False):  # a killed compiler: the next use retries
                    self.error, self.failed_at = e, time.monotonic()
                raise
            with travel._lock:
                if self.lazy is not None:
                    self.lazy._become(lib, made)
                    lib = self.lazy
                if made:
                    travel._unpickled[self.key] = lib
                self.result, self.error = lib, None
                _pending.pop(self.key, None)
            return lib


def _again(error):
    """A copy of a remembered exception to raise again (raising one object
    many times would grow its traceback, and threads would share it)."""
    try:
        again = copy.copy(error)
    except Exception:
        return error.with_traceback(None)
    again.__cause__, again.__context__ = error.__cause__, error.__context__
    again.__suppress_context__ = error.__suppress_context__
    return again


def _bound(lib):
    """The bound Library for a LazyLibrary (itself, once it has become one)."""
    p = _pending_of(lib)
    return lib if p is None else p.get()


def _pending_of(lib):
    """A LazyLibrary's Pending, in its own class until it is bound; None after."""
    return type(lib).__dict__.get(_PENDING)


class LazyLibrary(Library):
    """An unpickled Library that binds on first use, then becomes it (its
    class is then the bound Library's own class). ``repr``, pickling, copies
    and dask tokens do not bind."""

    __slots__ = ()

    def __new__(cls, pending):
        doc = "Kernels of %s, unpickled: bound on first use." % (
            pending.source.header.rsplit("/", 1)[-1])
        return types.ModuleType.__new__(own_class(cls, pending.source.name, doc,
                                                  **{_PENDING: pending}))

    def __init__(self, pending):  # noqa: D107 - no Library.__init__: nothing is bound yet
        types.ModuleType.__init__(self, pending.source.name, type(self).__doc__)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") and name not in _OWN:
            raise AttributeError("Library %r has no attribute %r" % (self.__name__, name),
                                 name=name, obj=self)
        _bound(self)
        return getattr(self, name)

    @property
    def metadata(self):
        return _bound(self).metadata

    @property
    def unexported(self):
        return _bound(self).unexported

    @property
    def not_kernels(self):
        return _bound(self).not_kernels

    def _become(self, lib, made):
        """Takes lib's class (its namespace); when this process made lib, its
        functions' ``.library`` is this object from now on."""
        object.__setattr__(self, "__class__", type(lib))
        self._bindthem_ = lib._bindthem_
        if made:
            lib._bindthem_._library = weakref.ref(self)

    def __repr__(self):
        p = _pending_of(self)
        if p is None:
            return Library.__repr__(self)
        return "<bindthem.Library %r (unpickled; binds on first use)>" % (self.__name__,)

    def __reduce__(self):
        p = _pending_of(self)
        return Library.__reduce__(self) if p is None else (LIBRARY, (p.source,))

    def __dask_tokenize__(self):
        p = _pending_of(self)
        return Library.__dask_tokenize__(self) if p is None else travel.token(p.key)


_core._library_class(LazyLibrary)  # as Library's: the same layout, so it can become one


class LazyFunction:
    """An unpickled Function (or CUDA kernel) whose Library binds on its
    first use; then a proxy of the bound one. ``isinstance(f,
    bindthem.Function)`` holds; ``type(f)`` is this class."""

    __slots__ = ("_pending", "_name", "_function", "__weakref__")

    def __init__(self, pending, name):
        self._pending = pending
        self._name = name
        self._function = None

    def _get(self):
        f = self._function
        if f is None:
            f = self._function = travel.function_of(self._pending.get(), self._name)
        return f

    def __call__(self, *args, **kwargs):
        f = self._function
        return (f if f is not None else self._get())(*args, **kwargs)

    def __getitem__(self, item):  # a CUDA kernel's launch configuration
        return self._get()[item]

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError("%r object has no attribute %r" % (self.__class__.__name__,
                                                                     name))
        return getattr(self._get(), name)

    @property  # type: ignore[misc]  # isinstance() sees the bound callable's type
    def __class__(self):
        return _core.CudaKernel if self._pending.source.kind == "cuda" else _core.Function

    @property
    def __name__(self):
        return self._name

    @property
    def __doc__(self):
        return self._get().__doc__

    @property
    def __text_signature__(self):
        return self._get().__text_signature__

    @property
    def __signature__(self):
        return inspect.signature(self._get())

    @property
    def library(self):
        return self._get().library

    def __get__(self, obj, owner=None):
        return self  # as a Function: no method binding when stored on a class

    def __reduce__(self):
        return (FUNCTION, (self._pending.source, self._name))

    def __dask_tokenize__(self):
        return travel.token(self._pending.key, self._name)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        if self._function is not None or self._pending.result is not None:
            return repr(self._get())
        return "<bindthem function %s.%s (unpickled; binds on first use)>" % (
            self._pending.source.name, self._name)
