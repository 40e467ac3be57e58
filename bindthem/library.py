"""bindthem.Library, bindthem.load and bindthem.build: a header's kernels as a module.

The API that makes a Library: :func:`load` (a shared library's kernels),
:func:`build` and :func:`compile_library` (compiled first), and what reads a
Library back (:func:`info`, :func:`getsource`, :func:`options`). Each checks
its arguments and calls a service: the Library class and the binding are
bindthem._services.binding's, the build bindthem._services.compile's (imported
on the first build, not with bindthem).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from typing import Any, Literal, Union

from . import _core
from ._base.opts import GIL_POLICIES, _check_gil, _options
from ._base.types import Flags, GilOption, GilPolicy, NullHandles, StrPath
from ._services import loading, preprocess, travel
from ._services.binding import Backend as Backend
from ._services.binding import Library as Library
from ._services.binding import LibraryInfo as LibraryInfo
from ._services.binding import _make, warn_if_left_out
from .errors import BindTypeError, BindWarning, warn

#: Whether a header is read through the C preprocessor (:func:`load`'s ``cpp``).
CppOption = Union[Literal["auto"], bool]

__all__ = ["Backend", "Library", "LibraryInfo", "build", "compile_library", "getsource", "info",
           "library_of", "load", "options", "send_to_workers"]


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


def info(obj: Library | _core.Function | _core.CudaKernel) -> LibraryInfo:
    """bindthem's own data about a Library (:class:`LibraryInfo`: its
    metadata, handle, back end, what it left out and why, the source it was
    bound from), given the Library or one of its bound callables."""
    lib = obj if isinstance(obj, Library) else library_of(obj)
    if lib is None:
        raise BindTypeError("bindthem.info(%s): expected a Library or one of its kernels (a "
                            "live one: its Library may be gone)" % type(obj).__name__)
    return lib._bindthem_


def send_to_workers(client: Any, *objects: Library | _core.Function) -> int:
    """Sends the shared libraries of ``objects`` (Libraries or their
    Functions: built, loaded or packaged, with the instantiations an open
    one made so far) to every worker of the Dask client ``client`` once, and
    to each worker that joins later (a ``distributed`` WorkerPlugin, which
    writes them into the worker's bindthem cache after checking their
    SHA-256). From then on this process's pickles of their kernels carry each
    library's SHA-256, not its bytes, however many tasks they go with. A
    library made later (a new dtype on demand) travels in the pickles as
    before. Returns the bytes sent to each worker. See :doc:`dask`."""
    from ._services import carry, workers

    libs = []
    for obj in objects:
        lib = obj if isinstance(obj, Library) else library_of(obj)
        if lib is None:
            raise BindTypeError("bindthem.send_to_workers(): expected Libraries or their "
                                "kernels, not %s" % type(obj).__name__)
        libs += workers.payload(lib._bindthem_._reduce())
    if not libs:
        return 0
    plugin = workers.CarriedLibraries(libs)
    client.register_plugin(plugin)
    carry.SENT.update(sha for sha, _ in plugin.libraries)
    return sum(len(data) for _, data in plugin.libraries)


def library_of(obj: object) -> Library | None:
    """The Library a bound callable (a Function or a CUDA kernel) belongs to,
    or None (gone, or not a bindthem callable)."""
    if isinstance(obj, (_core.Function, _core.CudaKernel)):
        lib = obj.library
        return lib if isinstance(lib, Library) else None
    return None


def getsource(obj):
    """The kernel source of a bound function, read from its header: its doc
    comment, template line and definition (every declaration its overloads
    come from, for a Python name several C functions serve). For a Library,
    the whole header (a preprocessed one's own file: the lines are its). Like
    :func:`inspect.getsource`, the header is read now;
    raises ``OSError`` when it is gone or no longer has the function where it
    was bound, ``TypeError`` for other objects. CUDA kernels and Libraries
    too."""
    from ._services import display as _display

    if isinstance(obj, Library):
        with open(_display.source_file(obj), encoding="utf-8", errors="replace") as fh:
            return fh.read()
    lib = library_of(obj)
    if not isinstance(lib, Library):
        raise TypeError("bindthem.getsource() takes a bindthem Function, CUDA kernel or "
                        "Library, not %s" % type(obj).__name__)
    header = _display.source_file(lib)  # a preprocessed header's own file, not the output
    lines = _display._read_lines(header)
    # a preprocessed header's columns are those of its lines with the macros expanded
    expanded = lib._bindthem_.preprocessed
    parts = []
    for d in _display._declarations(lib, obj.__name__):
        row = lines[d["line"] - 1] if d["line"] <= len(lines) else ""
        if (not re.search(r"\b%s\b" % re.escape(d["name"]), row) if expanded else
                row[d["col"] - 1:d["col"] - 1 + len(d["name"])] != d["name"]):
            raise OSError("%s:%d no longer declares %s (the header changed since it was bound)"
                          % (header, d["line"], d["name"]))
        parts.append("\n".join(lines[d["first_line"] - 1:d["last_line"]]) + "\n")
    return "\n".join(parts)


def load(library: StrPath, header: StrPath, instantiate: StrPath | None = None, *,
         name: str | None = None, strict: bool = False, gil: GilOption = "auto",
         copy_const: bool = False, cpp: CppOption = "auto",
         cppflags: Flags | None = None, handles: dict[str, str] | None = None,
         null_handles: NullHandles | None = None) -> Library:
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
    (the others ``"auto"``). ``copy_const`` is accepted and changes
    nothing: every array argument that is not C-contiguous and aligned is
    passed as the call's copy, a written one copied back (docs/calls.rst).
    :func:`bindthem.options` overrides both per call.

    ``cpp``: whether the header is read through the C preprocessor, as an
    ordinary C header must be (its macros, typedefs and enums come from the
    files it includes; docs/c-libraries.rst): ``"auto"`` (the default) reads
    it as written first and keeps that when every declaration binds (or no
    preprocessor is found), else preprocesses it and binds whichever reading
    binds more (ties: as written); ``True`` always preprocesses (a failure is
    a :class:`bindthem.BuildError`), ``False`` never. The preprocessor is
    ``$CPP``, else ``cc -E`` (``c++ -E`` for a ``.hpp``, ``.hh``, ``.hxx``
    or ``.H`` header, or with ``-x c++``), given ``-dD -C``, ``cppflags``
    (``-D``, ``-I``, ``-U``, ``-std``, ``-include``: a list, or a string
    split as a shell does) and the header. ``bindthem.info(lib).preprocessing``
    says what was run. The header's ``#define`` constants and its enums'
    members become attributes of the Library, with an ``enum.IntEnum`` (or
    ``IntFlag``) class per named enum; a kernel's name is never taken.

    Handles (docs/c-libraries.rst): a function that returns a pointer to a
    struct the header leaves opaque (``gzFile``, ``FILE *``) returns a
    :class:`bindthem.Handle`, which the functions taking that type (from
    any Library) and ``void *`` parameters accept. ``handles``: ``{handle
    type name: function}``, the function (bound, with one parameter of that
    type) that frees one, e.g. ``{"gzFile": "gzclose"}``: it then runs once
    per handle, when called, on ``handle.close()`` (or leaving a ``with``
    block), when the Handle is collected, or at exit; a type without one is
    never freed. ``null_handles``: what a NULL handle returned gives:
    ``"raise"`` (the default: :class:`bindthem.NullHandleError` with C's
    ``errno``), ``"none"`` (None), or a dict ``{function name: either}``.

    The Library pickles by value: the header and YAML texts (a preprocessed
    header's output: unpickling runs no preprocessor), this library's path
    and SHA-256 (unpickling binds only that same file).

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
    opts = _options(gil, copy_const, handles, null_handles)
    # the header as written, or the preprocessor's output: the Plan bound (and pickled)
    plan, how = preprocess.plan_of(header, instantiate, strict, cpp, cppflags)
    opened = loading.open_checked(library)  # a replaced file's new bytes, not its old object
    lib = _make(opened.name, header, instantiate, name, strict, None, opts, plan)
    lib._bindthem_.preprocessing = how
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
        ident = loading.identity(os.stat(path))
    else:
        path, ident = opened.path, opened.identity
    return travel.Source(
        kind="load", name=name, strict=strict, header=header, header_text=info.plan.header_text,
        instantiate=instantiate, yaml_text=info.plan.yaml_text,
        library=path, library_hash=opened.sha256, library_stat=ident, options=opts)


def compile_library(header: StrPath, instantiate: StrPath | None = None, *,
                    output: StrPath | None = None, cxx: str | None = None,
                    cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                    openmp: bool = False, cache_dir: StrPath | None = None,
                    strict: bool = False, jobs: int | None = None) -> str:
    """Compile ``header``'s kernels (and instantiations) into a shared library.

    Returns its path: ``output`` when given, else the cached library.
    ``cxx`` defaults to ``$CXX`` or ``c++``. Flags (lists or strings):
    ``cxxflags`` *replaces* the default ``-O3``; ``$CXXFLAGS``,
    ``extra_cxxflags`` and, with ``openmp=True``, ``-fopenmp`` are *appended*
    to it; ``-fPIC -shared`` are always added. The compiler's warnings become
    :class:`bindthem.BuildWarning` warnings. ``jobs``: as :func:`build`'s.
    """
    from ._services.compile.kernels import compile_header, resolve_flags  # on the first build

    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    return compile_header(header, instantiate, output=output, cxx=cxx, flags=flags,
                          cache_dir=cache_dir, strict=strict, jobs=jobs)


def build(header: StrPath, instantiate: StrPath | None = None, *, name: str | None = None,
          cxx: str | None = None, cxxflags: Flags | None = None,
          extra_cxxflags: Flags | None = None, openmp: bool = False,
          cache_dir: StrPath | None = None, strict: bool = False, gil: GilOption = "auto",
          copy_const: bool = False, jobs: int | None = None,
          on_demand: bool | None = None, cpp: CppOption = "auto",
          cppflags: Flags | None = None, handles: dict[str, str] | None = None,
          null_handles: NullHandles | None = None) -> Library:
    """Compile ``header``'s untemplated functions and the explicit
    instantiations ``instantiate`` lists with the system C++ compiler, then
    bind them (see :func:`bindthem.load`). Raises :class:`bindthem.BuildError`
    with the compiler's output when it fails.

    ``cxx``: the compiler, default ``$CXX`` or ``c++``. Flags (each a list
    or a string split as a shell does), in the order they are passed:

    - ``cxxflags`` **replaces** the default ``-O3`` (``cxxflags="-O2 -g"``);
    - ``$CXXFLAGS`` is **appended**, then ``extra_cxxflags``
      (``extra_cxxflags="-march=native"`` keeps ``-O3``);
    - ``openmp=True`` **appends** ``-fopenmp`` (compile and link);
    - ``-fPIC -shared`` always come last.

    The compiler's warnings become :class:`bindthem.BuildWarning` warnings
    (replayed when the library comes from the cache), as does a header with
    ``#pragma omp`` built without an OpenMP flag. ``gil``, ``copy_const``,
    ``handles`` and ``null_handles`` are :func:`bindthem.load`'s.
    ``cache_dir`` (default ``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``) is
    bounded, see ``python -m bindthem cache``.

    ``jobs``: how many compiler processes a cold build runs at once. The
    instantiations are split over that many translation units, compiled in
    parallel and linked; the library calls the same whatever ``jobs`` is,
    and its cache entry is shared. Each unit reads the header again, so a
    split is faster only where its units get idle cores: the default is the
    cores this process may use (its CPU affinity, capped by a cgroup CPU
    quota) that other work left idle over the last moment (``/proc/stat``,
    since this process's previous cold build or over 0.1 s; its own
    compilers are not counted; a core counts when at least 3/4 idle), at
    least 1: on a machine whose other cores are busy, one unit. ``jobs=N``
    runs N whatever the machine does (docs/build.rst, "Builds on every
    core").

    ``on_demand``: templated functions are bound *open*: a call with types
    that no overload takes deduces the template arguments, compiles that
    instantiation (once, through the cache) and adds it to the function.
    The default is True without ``instantiate`` and False with it (docs/on-demand.rst,
    "Instantiation on demand").

    ``cpp``, ``cppflags``: as :func:`bindthem.load`'s, with the header
    preprocessed as C++ (``c++ -E``, or ``$CPP``), after the standard headers
    the build's translation unit includes first; the output, without what
    those define, is what is compiled and bound.

    The Library and its functions pickle by value (the header, YAML and local
    includes' text, the flags and options): unpickling builds that text where
    the files differ or are missing, never an edited file in its place.
    """
    # the build machinery, imported on the first build: not with bindthem (docs/packages.rst)
    from ._services.compile.kernels import build_library, resolve_flags

    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    opts = _options(gil, copy_const, handles, null_handles)
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    if on_demand is None:
        on_demand = instantiate is None
    if not isinstance(on_demand, bool):
        raise TypeError("on_demand=%r: expected True, False or None (default: True without "
                        "instantiate.yml)" % (on_demand,))
    plan, how = _build_plan(header, instantiate, strict, cpp, cppflags)
    lib = build_library(header, instantiate, name=name, cxx=cxx, flags=flags,
                        cache_dir=cache_dir, strict=strict, options=opts, jobs=jobs,
                        on_demand=on_demand, plan=plan)
    lib._bindthem_.preprocessing = how
    if how.failed and any(not x["deliberate"] for x in lib._bindthem_.left_out):
        warn("%s was read as written: the C preprocessor, run to read what it #includes "
             "(cpp='auto'), failed: %s. Pass cppflags= (-I, -D) or set $CPP; cpp=True makes "
             "this an error" % (header, how.failed), BindWarning)
    return lib


def _build_plan(header, instantiate, strict, cpp, cppflags):
    """build()'s reading of the header: preprocess.plan_of, as C++, after the
    build's prelude (its standard headers, whose definitions the compile has
    already: preprocess.for_build)."""
    from ._services.compile.source import PRELUDE

    prelude = re.findall(r"#include <([^>]+)>", PRELUDE)
    return preprocess.plan_of(header, instantiate, strict, cpp, cppflags, cxx=True,
                              first_flags=preprocess.prelude_flags(prelude),
                              text_of=lambda text: preprocess.for_build(text, prelude))


class options:
    """``with bindthem.options(gil=..., copy_const=...):`` overrides, for the
    calls made inside the block (in this thread or asyncio task), the options
    every Function has from its Library's build()/load() arguments:

    ``gil``: ``"release"`` (release the GIL around every call, however small
    its arrays: compute-heavy kernels on small arrays run in parallel
    threads), ``"keep"`` (never release it), ``"auto"`` (release it when the
    arrays hold ``bindthem._core.GIL_RELEASE_MIN_ELEMENTS`` elements or more,
    the default).
    ``copy_const``: accepted, and changes nothing: every array argument
    that is not C-contiguous and aligned (blocks of ``dask.array.from_array``,
    buffers that arrived over the network) is passed as the call's copy, a
    written one copied back (docs/calls.rst).

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
