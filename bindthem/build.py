"""bindthem.build: compile a header's kernels and instantiations, then load them.

The translation unit is the header itself (its untemplated definitions) plus
one explicit instantiation per overload that instantiate.yml lists, written
from the same metadata that binds them. Libraries are cached under
``cache_dir`` (default ``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``) in a
folder named by a SHA-256 of the header, the YAML, the generated source, the
compiler's identity and the flags; the files the compiler read (``-MD``) are
hashed too, so editing an included header rebuilds, into a library whose
name carries those hashes (the loader would return the already loaded old
library for a reused path). Builds write to a
temporary file and are renamed into place under a file lock, so two processes
building at once are safe.

Flags, in order: ``cxxflags`` (default ``-O3``; given, it *replaces* that),
then, appended, ``$CXXFLAGS``, ``extra_cxxflags`` and ``-fopenmp`` for
``openmp=True``; ``-fPIC -shared`` always come last.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shlex
import subprocess
from typing import Any

from . import _core, _travel
from ._cache import compile_cached, flag_list
from ._types import Flags, GilOption, StrPath
from .errors import BuildError, BuildWarning, warn
from .library import Library, _make, _options, plan_message, warn_if_left_out

__all__ = ["build", "compile_library", "instantiation_source", "resolve_flags"]

DEFAULT_FLAGS = ("-O3",)
REQUIRED_FLAGS = ("-fPIC", "-shared")
OPENMP_FLAG = "-fopenmp"
# Headers written for pybind11 bindings lean on what pybind11 includes (pyamg's
# linalg.h uses std::vector without <vector>), so the generated source
# includes the common standard headers before the kernel header.
PRELUDE = "".join("#include <%s>\n" % h for h in (
    "algorithm", "cmath", "complex", "cstddef", "cstdint", "cstdlib", "cstring", "iostream",
    "limits", "stdexcept", "string", "utility", "vector"))


def instantiation_source(header, instantiate=None, *, strict=False):
    """The C++ source bindthem.build compiles for ``header``: the header and an
    explicit instantiation of every templated overload."""
    meta = _core.parse_header(header, instantiate, strict=strict)
    return _source_of(header, meta)


def _source_of(header, meta):
    lines = [PRELUDE.rstrip("\n"), '#include "%s"' % os.path.abspath(header), ""]
    lines += [ov["instantiation"] for fn in meta["functions"] for ov in fn["overloads"]
              if ov["instantiation"]]
    return "\n".join(lines) + "\n"


_compiler_ids: dict[Any, str] = {}


def _compiler_id(cxx):
    """What ``cxx --version`` prints, run once per compiler and process."""
    key = (tuple(cxx), os.environ.get("PATH"))
    ident = _compiler_ids.get(key)
    if ident is None:
        try:
            out = subprocess.run(cxx + ["--version"], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise BuildError("cannot run the C++ compiler %r: %s" % (" ".join(cxx), e),
                             output=str(e), command=cxx) from None
        ident = _compiler_ids[key] = out.stdout + out.stderr
    return ident


def resolve_flags(cxxflags=None, extra_cxxflags=None, openmp=False):
    """The flags a build passes before ``-fPIC -shared``: ``cxxflags``
    (default ``-O3``), which replaces the default, then, appended,
    ``$CXXFLAGS``, ``extra_cxxflags`` and ``-fopenmp`` when ``openmp``.
    Lists or strings (split as a shell does). A ``cxxflags`` that leaves no
    ``-O`` option at all warns (:class:`bindthem.BuildWarning`): the
    kernels would be compiled unoptimised."""
    flags = (flag_list(cxxflags, DEFAULT_FLAGS) + shlex.split(os.environ.get("CXXFLAGS", ""))
             + flag_list(extra_cxxflags, ()))
    if openmp and OPENMP_FLAG not in flags:
        flags.append(OPENMP_FLAG)
    if cxxflags is not None and not any(f.startswith("-O") for f in flags):
        warn("cxxflags=%r replaces bindthem's default -O3 and names no -O level, so the "
             "kernels are compiled unoptimised (-O0). To add flags and keep -O3, pass them "
             "as extra_cxxflags= (--extra-cxxflags), or openmp=True (--openmp) for OpenMP; "
             "write -O0 to mean it." % (" ".join(flag_list(cxxflags, ())),), BuildWarning)
    return flags


def _compile(header, instantiate, meta, cxx, flags, cache_dir, header_text, yaml_text,
             output=None, record=None, load=None):
    cxx = shlex.split(cxx or os.environ.get("CXX") or "c++")
    source = _source_of(header, meta)
    stem = os.path.splitext(os.path.basename(header))[0]
    return compile_cached(
        key_parts=(header, hashlib.sha256(header_text).hexdigest(), instantiate or "",
                   hashlib.sha256(yaml_text).hexdigest() if instantiate else "", source,
                   _compiler_id(cxx), "\0".join(cxx + flags)),
        cache_dir=cache_dir, folder_name=stem, stem="lib" + stem, ext=".so", source=source,
        suffix=".cpp", what="compiling the kernels", output=output, record=record, load=load,
        status="compiling %s with %s" % (os.path.basename(header), os.path.basename(cxx[-1])),
        command=lambda src, dep, out: (cxx + flags + list(REQUIRED_FLAGS)
                                       + ["-MD", "-MF", dep, src, "-o", out]))


def _read_sources(header, instantiate):
    header_text = _travel._read(header)
    yaml_text = _travel._read(instantiate) if instantiate else None
    return header_text, yaml_text


def compile_library(header: StrPath, instantiate: StrPath | None = None, *,
                    output: StrPath | None = None, cxx: str | None = None,
                    cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                    openmp: bool = False, cache_dir: StrPath | None = None,
                    strict: bool = False) -> str:
    """Compile ``header``'s kernels (and instantiations) into a shared library.

    Returns its path: ``output`` when given, else the cached library.
    ``cxx`` defaults to ``$CXX`` or ``c++``. Flags (lists or strings):
    ``cxxflags`` *replaces* the default ``-O3``; ``$CXXFLAGS``,
    ``extra_cxxflags`` and, with ``openmp=True``, ``-fopenmp`` are *appended*
    to it; ``-fPIC -shared`` are always added. The compiler's warnings become
    :class:`bindthem.BuildWarning` warnings.
    """
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    meta = _core.parse_header(header, instantiate, strict=strict)
    why = plan_message(meta)
    if why:
        warn(why)
    header_text, yaml_text = _read_sources(header, instantiate)
    record: dict[str, Any] = {}
    path = _compile(header, instantiate, meta, cxx, flags, cache_dir, header_text, yaml_text,
                    output=output, record=record)
    _build_warnings(header, record, flags, _local_files(header, record["deps"]), meta)
    return path


def build(header: StrPath, instantiate: StrPath | None = None, *, name: str | None = None,
          cxx: str | None = None, cxxflags: Flags | None = None,
          extra_cxxflags: Flags | None = None, openmp: bool = False,
          cache_dir: StrPath | None = None, strict: bool = False, gil: GilOption = "auto",
          copy_const: bool = False) -> Library:
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
    return _build(header, instantiate, name=name, cxx=cxx, flags=flags, cache_dir=cache_dir,
                  strict=strict, options=opts)


def _build(header, instantiate, *, name, cxx, flags, cache_dir, strict, options, source=None,
           quiet=False):
    """build() with resolved flags. With ``source`` (unpickling), that is the
    Library's source and nothing is warned: the author saw the warnings."""
    meta = _core.parse_header(header, instantiate, strict=strict, plan=True)  # the one parse
    header_text, yaml_text = _read_sources(header, instantiate)
    record = {}

    def load(path):  # while the cache entry is locked: it cannot be evicted under dlopen
        nonlocal source
        if source is None:
            files = _local_files(header, record["deps"])
            source = _travel.Source(
                kind="build", name=name, strict=strict, header=header, header_text=header_text,
                instantiate=instantiate, yaml_text=yaml_text, files=files, cxx=cxx,
                flags=list(flags), cache_dir=os.fspath(cache_dir) if cache_dir else None,
                options=options)
        return _make(path, header, instantiate, name, strict, source, options, meta)

    lib = _compile(header, instantiate, meta, cxx, flags, cache_dir, header_text, yaml_text,
                   record=record, load=load)
    if not quiet:
        _build_warnings(header, record, flags, source.files, meta)
    if not quiet:
        warn_if_left_out(lib)
    return lib


def _local_files(header, deps):
    """{path relative to the header's folder: text} of the files the compiler
    read from that folder or below it, other than the header (its local
    includes: they travel in pickles)."""
    folder = os.path.dirname(header)
    files = {}
    for p in sorted(deps):
        if p == header or os.path.commonpath([folder, p]) != folder:
            continue
        try:
            files[os.path.relpath(p, folder)] = _travel._read(p)
        except OSError:
            pass
    return files


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
    found = ((rel, _core.header_directives(text)["openmp"])
             for rel, text in sorted((files or {}).items()))
    for rel, pragmas in itertools.chain([(os.path.basename(header), meta["openmp"])], found):
        if pragmas:
            warn("%s:%d: %r has no effect: the build has no OpenMP flag, so the kernels run on "
                 "one thread. Pass openmp=True (--openmp for python -m bindthem build and "
                 "%%%%bindthem)." % (os.path.join(os.path.dirname(header), rel),
                                     pragmas[0]["line"], pragmas[0]["text"]), BuildWarning)
            return
