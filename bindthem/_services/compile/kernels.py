"""The build behind bindthem.build: compile a header's kernels and instantiations, then bind them.

The translation unit is the header itself (its untemplated definitions) plus
one explicit instantiation per overload that instantiate.yml lists, written
from the same metadata that binds them. The header is read once, by the
parse (a :class:`_core.Plan`): the cache key hashes those bytes, and the
compiler reads a snapshot of them written into the build's private folder
(``source.write_snapshot``), never the header's path again, so a header edited
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

This module is the build (:func:`build_library`, :func:`compile_header`)
and its warnings; the API's functions (bindthem.build, compile_library, in
bindthem.library) check their arguments and call it. Below it, in this
package: ``source`` (the translation unit and the snapshot), ``compiler``
(who the compiler is, which include folders are its own), ``units`` (a cold
build split into parallel units, the precompiled prelude) and ``ondemand``
(an instantiation made when a call needs it).
"""

from __future__ import annotations

import itertools
import os
import re
from typing import Any

from ... import _core
from ..._base.files import read_source_as
from ...errors import BuildError, BuildWarning, warn
from .. import travel
from ..binding import _make, plan_message, warn_if_left_out
from ..cache import compile_cached, flag_list, run_commands, shell_words
from . import ondemand
from .compiler import _compiler_id, _system_dirs
from .source import (
    PRELUDE,
    _instantiations,
    _source_of,
    snapshot_flags,
    snapshot_name,
    write_snapshot,
)
from .units import (
    PCH_MIN,
    _add_deps,
    _check_jobs,
    _compile_units,
    _prelude_pch,
    _shares,
    _unit_command,
    _unit_count,
    _without_pch_if_gone,
)

__all__ = ["build_library", "build_warnings", "compile_header", "resolve_flags"]

DEFAULT_FLAGS = ("-O3",)
# REQUIRED_FLAGS (-fPIC -shared, always last) is bindthem._services.compile.units', which
# writes the commands
OPENMP_FLAG = "-fopenmp"


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
    jobs = _check_jobs(jobs)

    def command(src, dep, out):  # run on a cache miss only: a warm build needs no prelude
        # and does not probe the idle cores
        units = _unit_count(jobs, n)
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


def compile_header(header, instantiate, *, output, cxx, flags, cache_dir, strict, jobs):
    """compile_library() with resolved flags (absolute paths): the library's
    path, the compiler's warnings and what nothing binds warned."""
    plan = _core.parse(header, instantiate, strict=strict)
    meta = plan.metadata(brief=True)
    # why nothing binds reads the declarations, which a brief dict leaves out
    why = plan_message(meta if meta["functions"] or instantiate else plan.metadata())
    if why:
        warn(why)
    record = {}  # what _compile found: its deps, its warnings
    path = _compile(plan, meta, cxx, flags, cache_dir, output=output, record=record, jobs=jobs)
    build_warnings(header, record, flags, _local_files(header, record["deps"]), meta)
    return path


def build_library(header, instantiate, *, name, cxx, flags, cache_dir, strict, options,
                  source=None, quiet=False, jobs=None, on_demand=False, context=None,
                  header_text=None, yaml_text=None, plan=None):
    """build() with resolved flags and options (absolute paths). With
    ``source`` (unpickling), that is the Library's source (whose
    ``on_demand`` says whether it is open) and nothing is warned: the author
    saw the warnings. ``context``: a function
    that makes the on-demand Context's error text readable (the notebook's
    cell names). ``header_text``/``yaml_text``: the texts to build (bytes)
    in place of reading the files (which still name them, and whose folder
    holds the local includes). ``plan``: the :class:`_core.Plan` of those,
    when the caller parsed them already (bindthem.build, which chose between
    the header as written and its preprocessor's output)."""
    if source is not None:
        on_demand = source.on_demand is not None
    # the one parse: the bytes keyed, compiled and bound (see write_snapshot)
    if plan is None:
        plan = _core.parse(header, instantiate, strict=strict, header_text=header_text,
                           yaml_text=yaml_text)
    # brief: the overloads' dicts hold what the source needs
    meta = plan.metadata(brief=True)
    record = {}

    def load(path):  # while the cache entry is locked: it cannot be evicted under dlopen
        nonlocal source
        if source is None:
            files = _local_files(header, record["deps"])
            source = travel.Source(
                kind="build", name=name, strict=strict, header=header,
                header_text=plan.header_text, instantiate=instantiate,
                yaml_text=plan.yaml_text, files=files, cxx=cxx, flags=list(flags),
                cache_dir=os.fspath(cache_dir) if cache_dir else None, options=options,
                on_demand=[] if on_demand else None)
        source.built = path  # what its pickles carry (travel.carried)
        return _make(path, header, instantiate, name, strict, source, options, plan)

    lib = _compile(plan, meta, cxx, flags, cache_dir, record=record, load=load, jobs=jobs)
    if on_demand:
        ondemand.open_library(lib, header, plan, name, cxx, flags, cache_dir, strict, options,
                              source)
    if not quiet:
        build_warnings(header, record, flags, source.files, meta)
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
    # absolute and normalised (bindthem._services.cache._manifest._record_deps)
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


def build_warnings(header, record, flags, files, meta):
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
