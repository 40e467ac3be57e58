"""bindthem.build: compile a header's kernels and instantiations, then load them.

The translation unit is the header itself (its untemplated definitions) plus
one explicit instantiation per overload that instantiate.yml lists, written
from the same metadata that binds them. The header is read once, by the
parse (a :class:`_core.Plan`): the cache key hashes those bytes, and the
compiler reads a snapshot of them written into the build's private folder
(:func:`write_snapshot`), never the header's path again, so a header edited
during a compile cannot put other code under its key. Libraries are cached
under ``cache_dir`` (default ``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``) in
a folder named by a SHA-256 of the header, the YAML, the generated source,
the compiler's identity and the flags; the files the compiler read (``-MD``,
the header's local includes and the system headers) are hashed too, so
editing an included header rebuilds, into a library whose name carries
those hashes (the loader would return the already loaded old library for a
reused path). Builds write to a
temporary file and are renamed into place under a file lock, so two processes
building at once are safe.

Flags, in order: ``cxxflags`` (default ``-O3``; given, it *replaces* that),
then, appended, ``$CXXFLAGS``, ``extra_cxxflags`` and ``-fopenmp`` for
``openmp=True``; ``-fPIC -shared`` always come last.

This module is the API and the build's source (the translation unit, the
snapshot, the warnings); below it, ``bindthem._compiler`` says who the
compiler is and which include folders are its own, and ``bindthem._units``
splits a cold build into parallel units and precompiles the prelude.
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

from . import _core, _ondemand, _travel
from ._compiler import _compiler_id, _system_dirs
from ._files import read_source_as
from ._types import Flags, GilOption, StrPath
from ._units import JOBS_HELP as JOBS_HELP
from ._units import PCH_ENV as PCH_ENV
from ._units import (
    PCH_MIN,
    _add_deps,
    _check_jobs,
    _compile_units,
    _prelude_pch,
    _shares,
    _unit_command,
    _without_pch_if_gone,
)
from ._units import REQUIRED_FLAGS as REQUIRED_FLAGS
from ._units import default_jobs as default_jobs
from ._units import jobs_argument as jobs_argument
from .cache import compile_cached, flag_list, run_commands, shell_words
from .errors import BuildError, BuildWarning, warn
from .library import Library, _make, _options, plan_message, warn_if_left_out

# ``X as X`` above: names of bindthem._units that bindthem.build has always
# exported (the command line and %%bindthem read JOBS_HELP and jobs_argument here)

__all__ = ["build", "compile_library", "instantiation_source", "resolve_flags",
           "write_snapshot"]

DEFAULT_FLAGS = ("-O3",)
# REQUIRED_FLAGS (-fPIC -shared, always last) is bindthem._units', which writes the commands
OPENMP_FLAG = "-fopenmp"
# Headers written for pybind11 bindings lean on what pybind11 includes (pyamg's
# linalg.h uses std::vector without <vector>), so the generated source
# includes the common standard headers before the kernel header.
PRELUDE = "".join("#include <%s>\n" % h for h in (
    "algorithm", "cmath", "complex", "cstddef", "cstdint", "cstdlib", "cstring", "iostream",
    "limits", "stdexcept", "string", "utility", "vector"))


def instantiation_source(header, instantiate=None, *, strict=False):
    """The C++ source bindthem.build compiles for ``header``: the header and an
    explicit instantiation of every templated overload. (A build includes a
    snapshot of the header's bytes instead of the header's path, see
    :func:`write_snapshot`; this text includes the header where it is.)"""
    meta = _core.parse_header(header, instantiate, strict=strict, brief=True)
    return _source_of(os.path.abspath(header), meta)


def _source_of(include, meta, share=None):
    """The one translation unit, including ``include`` (the snapshot's name,
    or a header's path), or, given ``share`` (instantiation lines), one of
    several that each include it and instantiate their share."""
    lines = [PRELUDE.rstrip("\n"), '#include "%s"' % include, ""]
    lines += _instantiations(meta) if share is None else share
    return "\n".join(lines) + "\n"


def snapshot_name(header):
    """What a build's translation unit includes: the snapshot of the header
    (:func:`write_snapshot`), beside it in the build's private folder."""
    return os.path.basename(header)


def _c_string(path):
    return os.fsencode(path).replace(b"\\", b"\\\\").replace(b'"', b'\\"')


def write_snapshot(folder, plan):
    """Writes the bytes ``plan`` parsed (a :class:`_core.Plan`) into
    ``folder`` (a build's private folder, beside the translation unit) as
    the file the unit includes, and returns its path: the compiler reads
    exactly the bytes the cache key hashed and the Library binds, never the
    header's path again. A ``#line`` first makes diagnostics and
    ``__FILE__`` name the header; the compile gets the header's folder on
    its quote include path (:func:`snapshot_flags`), so local includes are
    found as before (and checked after the compile, ``bindthem.cache``)."""
    text, bom = plan.header_text, b""
    if text.startswith(b"\xef\xbb\xbf"):  # a byte order mark stays first
        text, bom = text[3:], text[:3]
    path = os.path.join(folder, snapshot_name(plan.header))
    with open(path, "xb") as f:
        f.write(bom + b'#line 1 "%s"\n' % _c_string(plan.header) + text)
    return path


def snapshot_flags(folder, option="-iquote"):
    """The options that let a snapshot's ``#include "..."`` find what the
    header's would: ``folder`` (the header's, or a copy of it) on the quote
    include path."""
    return [option, folder]


def _instantiations(meta):
    return [ov["instantiation"] for fn in meta["functions"] for ov in fn["overloads"]
            if ov["instantiation"]]


def resolve_flags(cxxflags=None, extra_cxxflags=None, openmp=False):
    """The flags a build passes before ``-fPIC -shared``: ``cxxflags``
    (default ``-O3``), which replaces the default, then, appended,
    ``$CXXFLAGS``, ``extra_cxxflags`` and ``-fopenmp`` when ``openmp``.
    Lists or strings (split as a shell does). A ``cxxflags`` that leaves no
    ``-O`` option at all warns (:class:`bindthem.BuildWarning`): the
    kernels would be compiled unoptimised."""
    flags = (flag_list(cxxflags, DEFAULT_FLAGS) + shell_words(os.environ.get("CXXFLAGS", ""))
             + flag_list(extra_cxxflags, ()))
    if openmp and OPENMP_FLAG not in flags:
        flags.append(OPENMP_FLAG)
    if cxxflags is not None and not any(f.startswith("-O") for f in flags):
        warn("cxxflags=%r replaces bindthem's default -O3 and names no -O level, so the "
             "kernels are compiled unoptimised (-O0). To add flags and keep -O3, pass them "
             "as extra_cxxflags= (--extra-cxxflags), or openmp=True (--openmp) for OpenMP; "
             "write -O0 to mean it." % (" ".join(flag_list(cxxflags, ())),), BuildWarning)
    return flags


def _compile(plan, meta, cxx, flags, cache_dir, output=None, record=None, load=None,
             jobs=None):
    """Compiles ``plan`` (a :class:`_core.Plan`; ``meta`` its brief metadata)
    through the cache (compile_cached's ``output``, ``record``, ``load``)."""
    header = plan.header
    cxx = shell_words(cxx or os.environ.get("CXX") or "c++")
    source = _source_of(snapshot_name(header), meta)
    stem = os.path.splitext(os.path.basename(header))[0]
    what = "compiling the kernels"
    status = "compiling %s with %s" % (os.path.basename(header), os.path.basename(cxx[-1]))
    # the header's folder, for the snapshot's local includes (after bindthem's own flags)
    inc = snapshot_flags(os.path.dirname(header))
    one_unit = _unit_command(cxx, flags, inc)

    n = len(_instantiations(meta))
    units = min(_check_jobs(jobs), n)

    def command(src, dep, out):  # run on a cache miss only: a warm build needs no prelude
        write_snapshot(os.path.dirname(src), plan)
        pch, prelude_deps = ((), ()) if units < 2 and n < PCH_MIN else _prelude_pch(
            cxx, flags, cache_dir, PRELUDE)
        if units > 1:
            sources = [_source_of(snapshot_name(header), meta, share)
                       for share in _shares(meta, units)]
            text = _compile_units(sources, cxx, flags, src, dep, out, one_unit, what, status,
                                  pch, inc)
        else:
            text = _without_pch_if_gone(pch, lambda p: run_commands(
                [one_unit(src, dep, out, p)], what, status)[0])
        _add_deps(dep, prelude_deps)
        return text
    # the key names the one-unit source whatever ``jobs`` is: every split calls the same
    return compile_cached(
        key_parts=(header, plan.header_sha256, plan.instantiate or "", plan.yaml_sha256 or "",
                   source, _compiler_id(cxx, cache_dir), "\0".join(cxx + flags)),
        cache_dir=cache_dir, folder_name=stem, stem="lib" + stem, ext=".so", source=source,
        suffix=".cpp", what=what, output=output, record=record, load=load, status=status,
        command=command, system_dirs=lambda: _system_dirs(cxx, flags))


def _compile_one(ctx, plan, line, folders, what):
    """The Library of one instantiation made on demand (bindthem._ondemand):
    a unit of the snapshot of ``plan``'s bytes (the build's header text with
    a YAML that lists that instantiation, whose line is ``line``) compiled
    through the cache with the build's compiler and flags (a process: the
    GIL is released while it runs), its local includes read from
    ``folders`` (the header's, or the cache's copy of the build's first),
    bound from ``plan``."""
    cxx = shell_words(ctx.cxx or os.environ.get("CXX") or "c++")
    stem = os.path.splitext(os.path.basename(ctx.header))[0]
    source = "\n".join([PRELUDE.rstrip("\n"), '#include "%s"' % snapshot_name(ctx.header), "",
                        line]) + "\n"
    command = _unit_command(cxx, ctx.flags, [f for d in folders for f in snapshot_flags(d)])

    def load(path):
        return _make(path, ctx.header, None, ctx.name, False, None, ctx.options, plan)

    def compile_snapshot(src, dep, out):
        write_snapshot(os.path.dirname(src), plan)
        return command(src, dep, out)

    return compile_cached(
        key_parts=(ctx.header, plan.header_sha256, "on demand", plan.yaml_sha256, source,
                   "\0".join(folders), _compiler_id(cxx, ctx.cache_dir),
                   "\0".join(cxx + ctx.flags)),
        cache_dir=ctx.cache_dir, folder_name=stem + "-on-demand", stem="lib" + stem, ext=".so",
        source=source, suffix=".cpp", what="compiling %s" % what, load=load,
        status="compiling %s with %s" % (what, os.path.basename(cxx[-1])),
        command=compile_snapshot, system_dirs=lambda: _system_dirs(cxx, ctx.flags))


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
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    plan = _core.parse(header, instantiate, strict=strict)
    meta = plan.metadata(brief=True)
    # why nothing binds reads the declarations, which a brief dict leaves out
    why = plan_message(meta if meta["functions"] or instantiate else plan.metadata())
    if why:
        warn(why)
    record: dict[str, Any] = {}
    path = _compile(plan, meta, cxx, flags, cache_dir, output=output, record=record, jobs=jobs)
    _build_warnings(header, record, flags, _local_files(header, record["deps"]), meta)
    return path


def build(header: StrPath, instantiate: StrPath | None = None, *, name: str | None = None,
          cxx: str | None = None, cxxflags: Flags | None = None,
          extra_cxxflags: Flags | None = None, openmp: bool = False,
          cache_dir: StrPath | None = None, strict: bool = False, gil: GilOption = "auto",
          copy_const: bool = False, jobs: int | None = None,
          on_demand: bool | None = None) -> Library:
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
    ``#pragma omp`` built without an OpenMP flag. ``gil`` and ``copy_const``
    are :func:`bindthem.load`'s. ``cache_dir`` (default ``$BINDTHEM_CACHE``
    or ``~/.cache/bindthem``) is bounded, see ``python -m bindthem cache``.

    ``jobs``: how many compiler processes a cold build runs at once (default:
    the cores this process may use). The instantiations are split over that
    many translation units, compiled in parallel and linked; the library
    calls the same whatever ``jobs`` is, and its cache entry is shared.

    ``on_demand``: templated functions are bound *open*: a call with types
    that no overload takes deduces the template arguments, compiles that
    instantiation (once, through the cache) and adds it to the function.
    The default is True without ``instantiate`` and False with it (docs/on-demand.rst,
    "Instantiation on demand").

    The Library and its functions pickle by value (the header, YAML and local
    includes' text, the flags and options): unpickling builds that text where
    the files differ or are missing, never an edited file in its place.
    """
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    opts = _options(gil, copy_const)
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    if on_demand is None:
        on_demand = instantiate is None
    if not isinstance(on_demand, bool):
        raise TypeError("on_demand=%r: expected True, False or None (default: True without "
                        "instantiate.yml)" % (on_demand,))
    return _build(header, instantiate, name=name, cxx=cxx, flags=flags, cache_dir=cache_dir,
                  strict=strict, options=opts, jobs=jobs, on_demand=on_demand)


def _build(header, instantiate, *, name, cxx, flags, cache_dir, strict, options, source=None,
           quiet=False, jobs=None, on_demand=False, context=None, header_text=None,
           yaml_text=None):
    """build() with resolved flags. With ``source`` (unpickling), that is the
    Library's source (whose ``on_demand`` says whether it is open) and
    nothing is warned: the author saw the warnings. ``context``: a function
    that makes the on-demand Context's error text readable (the notebook's
    cell names). ``header_text``/``yaml_text``: the texts to build (bytes)
    in place of reading the files (which still name them, and whose folder
    holds the local includes)."""
    if source is not None:
        on_demand = source.on_demand is not None
    # the one parse: the bytes keyed, compiled and bound (see write_snapshot)
    plan = _core.parse(header, instantiate, strict=strict, header_text=header_text,
                       yaml_text=yaml_text)
    # brief: the overloads' dicts hold what the source needs
    meta = plan.metadata(brief=True)
    record = {}

    def load(path):  # while the cache entry is locked: it cannot be evicted under dlopen
        nonlocal source
        if source is None:
            files = _local_files(header, record["deps"])
            source = _travel.Source(
                kind="build", name=name, strict=strict, header=header,
                header_text=plan.header_text, instantiate=instantiate,
                yaml_text=plan.yaml_text, files=files, cxx=cxx, flags=list(flags),
                cache_dir=os.fspath(cache_dir) if cache_dir else None, options=options,
                on_demand=[] if on_demand else None)
        return _make(path, header, instantiate, name, strict, source, options, plan)

    lib = _compile(plan, meta, cxx, flags, cache_dir, record=record, load=load, jobs=jobs)
    if on_demand:
        ctx = _ondemand.Context(header, plan.header_text, name, cxx, flags, cache_dir, strict,
                                options, source, _compile_one)
        _ondemand.open_functions(lib, ctx, lib._bindthem_.metadata["declarations"])
    if not quiet:
        _build_warnings(header, record, flags, source.files, meta)
    if not quiet:
        warn_if_left_out(lib)
    return lib


def _local_files(header, deps):
    """{path relative to the header's folder: text} of the files the compiler
    read from that folder or below it, other than the header (its local
    includes: they travel in pickles), each the text the compiler read (the
    hash the manifest records); BuildError when one changed since."""
    folder = os.path.join(os.path.dirname(header), "")
    files = {}
    # absolute and normalised (bindthem.cache._manifest._record_deps)
    for p, sha in sorted((p, h) for p, h in deps.under(folder).items() if p != header):
        try:
            text = read_source_as(p, sha)
        except OSError:
            continue
        if text is None:
            raise BuildError("%s changed after the build read it (an include of %s): its text "
                             "is not the one compiled, so the Library's pickle could not carry "
                             "it; build again" % (p, header))
        files[os.path.relpath(p, folder)] = text
    return files


# "omp" after "pragma" (or "_Pragma") on the same logical line: a text without it
# has no OpenMP pragma, so the lexer need not read it ("#pragma once" is common)
_MAYBE_OMP = re.compile(rb"ragma(?:[^\n]|\\\r?\n)*omp")
# text: its '#pragma omp' lines (header_directives), for the texts of read_source:
# a local include that several headers read is scanned once
_omp_of: dict[bytes, list[dict[str, Any]]] = {}


def _omp_pragmas(text):
    found = _omp_of.get(text)
    if found is None:
        if len(_omp_of) >= 256:  # a process that edits and rebuilds keeps no old texts
            _omp_of.clear()
        found = _omp_of[text] = (_core.header_directives(text)["openmp"]
                                 if _MAYBE_OMP.search(text) else [])
    return found


def _build_warnings(header, record, flags, files, meta):
    """The compiler's own warnings, and '#pragma omp' without an OpenMP flag
    (in the header, its metadata's "openmp"; in its local includes, the same
    lexer's facts: a pragma in a comment or a string is none)."""
    text = record.get("output", "").strip()
    if text:
        warn("the compiler warned while compiling %s%s:\n%s"
             % (os.path.basename(header), "" if record.get("fresh") else " (cached build)",
                text), BuildWarning)
    if any(f.startswith(("-fopenmp", "-qopenmp", "-fiopenmp")) or f in ("-openmp", "-mp")
           for f in flags):
        return
    found = ((rel, _omp_pragmas(text)) for rel, text in sorted((files or {}).items()))
    for rel, pragmas in itertools.chain([(os.path.basename(header), meta["openmp"])], found):
        if pragmas:
            warn("%s:%d: %r has no effect: the build has no OpenMP flag, so the kernels run on "
                 "one thread. Pass openmp=True (--openmp for python -m bindthem build and "
                 "%%%%bindthem)." % (os.path.join(os.path.dirname(header), rel),
                                     pragmas[0]["line"], pragmas[0]["text"]), BuildWarning)
            return
