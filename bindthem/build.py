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
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import os
import re
import shutil
import subprocess
from typing import Any

from . import _core, _ondemand, _travel
from ._files import read_source_as
from ._types import Flags, GilOption, StrPath
from .cache import (
    compile_cached,
    flag_list,
    group_read,
    group_write,
    remove_entry,
    run_commands,
    shell_words,
)
from .errors import BuildError, BuildWarning, warn
from .library import Library, _make, _options, plan_message, warn_if_left_out

__all__ = ["build", "compile_library", "instantiation_source", "resolve_flags",
           "write_snapshot"]

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


def default_jobs():
    """The compiler processes a cold build runs at once: the cores this
    process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity on this platform (macOS)
        return os.cpu_count() or 1


def _check_jobs(jobs):
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError("jobs=%r: expected a number of compiler processes, 1 or more "
                         "(default: the %d cores this process may use)" % (jobs, default_jobs()))
    return jobs


JOBS_HELP = ("compiler processes a cold build runs at once, each compiling a share of the "
             "instantiations (default: the cores this process may use)")


def jobs_argument(text):
    """--jobs N of the command line and %%bindthem: a number, 1 or more."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("%r: expected a number of compiler processes, 1 or "
                                         "more" % text)
    return int(text)


def _shares(meta, n):
    """The header's instantiation lines in ``n`` shares of about equal work
    (work: the template's length in the header; longest first to the
    lightest share), each share in the header's order. Depends only on the
    metadata (``parse_header(..., brief=True)``'s) and ``n``."""
    items = [(ov["instantiation"], ov["lines"]) for fn in meta["functions"]
             for ov in fn["overloads"] if ov["instantiation"]]
    cost = [lines for _, lines in items]
    loads, shares = [0] * n, [[] for _ in range(n)]
    for i in sorted(range(len(items)), key=lambda i: (-cost[i], i)):
        k = min(range(n), key=lambda k: (loads[k], k))
        shares[k].append(i)
        loads[k] += cost[i]
    return [[items[i][0] for i in sorted(share)] for share in shares]


_compiler_ids: dict[Any, str] = {}


def _compiler_id(cxx, cache_dir=None):
    """What ``cxx --version`` prints: run once per compiler and process, and
    kept in the cache (``compilers/<hash>/version``) under the identity of
    the compiler's executable (its resolved path, device, inode, size,
    mtime and ctime), so a warm build in a new process runs no compiler. A
    compiler given with arguments (``ccache g++``) or that is not an ELF
    binary (a wrapper script: what it runs can change under it) is asked
    every process."""
    key = (tuple(cxx), os.environ.get("PATH"))
    ident = _compiler_ids.get(key)
    if ident is not None:
        return ident
    name = _compiler_identity(cxx)
    data = group_read(cache_dir, "compilers", name, "version") if name else None
    try:
        ident = data.decode() if data is not None else None
    except UnicodeDecodeError:
        ident = None
    if ident is None:
        try:
            out = subprocess.run(cxx + ["--version"], capture_output=True, text=True,
                                 timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            raise BuildError("cannot run the C++ compiler %r: %s" % (" ".join(cxx), e),
                             output=str(e), command=cxx) from None
        ident = out.stdout + out.stderr
        if name and out.returncode == 0:
            try:
                group_write(cache_dir, "compilers", name, "version", ident.encode())
            except OSError:  # a full disk: asked again next time
                pass
    _compiler_ids[key] = ident
    return ident


def _compiler_identity(cxx):
    """A hash of a one-word ELF compiler's executable identity, or None."""
    if len(cxx) != 1:
        return None
    exe = shutil.which(cxx[0])
    if exe is None:
        return None
    real = os.path.realpath(exe)
    try:
        with open(real, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return None
            st = os.fstat(f.fileno())
    except OSError:
        return None
    ident = "\0".join(map(str, (real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                 st.st_ctime_ns)))
    return hashlib.sha256(ident.encode()).hexdigest()[:32]


_system_dirs_of: dict[Any, tuple[str, ...]] = {}
_INCLUDE_OPTIONS = ("-isystem", "-idirafter", "-iquote", "-I")


def _system_dirs(cxx, flags):
    """The compiler's own include folders (its ``#include <...>`` search list,
    without those the flags or $CPATH name: the user's may be edited), asked
    once per compiler, flags and process; () when it cannot say."""
    key = (tuple(cxx), tuple(flags), os.environ.get("PATH"))
    dirs = _system_dirs_of.get(key)
    if dirs is None:
        env = {k: v for k, v in os.environ.items()
               if k not in ("CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH")}
        try:
            out = subprocess.run(cxx + flags + ["-x", "c++", "-E", "-v", "-"], env=env,
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=60).stderr
        except (OSError, subprocess.SubprocessError):
            out = ""
        _, _, listed = out.partition("#include <...> search starts here:\n")
        listed, end, _ = listed.partition("End of search list.")
        named = {os.path.abspath(f[len(o):]) for f in flags for o in _INCLUDE_OPTIONS
                 if f.startswith(o) and len(f) > len(o)}
        named |= {os.path.abspath(f) for f in flags if os.path.isdir(f)}
        dirs = tuple(d for d in (os.path.abspath(line.split(" (")[0].strip())
                                 for line in listed.splitlines() if line.strip())
                     if d not in named) if end else ()
        _system_dirs_of[key] = dirs
    return dirs


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
            cxx, flags, cache_dir)
        if units > 1:
            text = _compile_units(snapshot_name(header), meta, units, cxx, flags, src, dep, out,
                                  one_unit, what, status, pch, inc)
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


def _unit_command(cxx, flags, inc=()):
    """command(src, depfile, out, pch=()) of compile_cached for one translation
    unit (``pch``: the options of the precompiled prelude, or (); ``inc``:
    the snapshot's include options, :func:`snapshot_flags`)."""
    def one_unit(src, dep, out, pch=()):
        return (cxx + flags + list(REQUIRED_FLAGS) + list(pch) + list(inc)
                + ["-MD", "-MF", dep, src, "-o", out])
    return one_unit


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


# Data with internal linkage that is harmless in every unit: <iostream>'s initialiser.
_PER_UNIT = frozenset(["_ZStL8__ioinit"])


def _compile_units(include, meta, units, cxx, flags, src, dep, out, one_unit, what, status,
                   pch=(), inc=()):
    """Compiles ``units`` translation units in parallel (each includes
    ``include``, the header's snapshot, and instantiates its share), in the
    private folder of ``src``,
    then links them into ``out``; returns what the compiler printed, merged.
    The header's own definitions are in every unit, so where that would
    change what a call does, the one unit is built instead: a header whose
    objects hold writable data of internal linkage (``static`` or unnamed
    namespace variables: each unit would have its own copy), or whose
    objects do not link (a definition that is not inline: defined twice).
    ``pch``: the compiler options of the precompiled prelude, or ()."""
    folder = os.path.dirname(src)
    shares = _shares(meta, units)
    for i, share in enumerate(shares):
        with open(os.path.join(folder, "unit%d.cpp" % i), "x") as f:
            f.write(_source_of(include, meta, share))

    def compile_all(pch):
        cmds, objs = [], []
        for i in range(len(shares)):
            unit, obj = (os.path.join(folder, "unit%d%s" % (i, ext)) for ext in (".cpp", ".o"))
            cmds.append(cxx + flags + ["-fPIC"] + list(pch) + list(inc) + ["-c"]
                        + (["-MD", "-MF", dep] if i == 0 else []) + [unit, "-o", obj])
            objs.append(obj)
        return objs, [t.replace(c[-3], src) for t, c in zip(run_commands(cmds, what, status),
                                                              cmds)]

    objs, texts = _without_pch_if_gone(pch, compile_all)
    if not _per_unit_state(objs):
        try:
            texts += run_commands([cxx + flags + list(REQUIRED_FLAGS) + objs + ["-o", out]],
                                  what, status)
            return _merge_outputs(texts)
        except BuildError:
            pass
    return _without_pch_if_gone(pch, lambda p: run_commands([one_unit(src, dep, out, p)],
                                                            what, status)[0])


# The prelude precompiled (GCC's precompiled headers): every translation unit a
# cold build compiles starts with PRELUDE, which is most of the work of a small
# unit (~0.25 s of g++ -O3 reading the standard headers). It is compiled once
# per compiler, flags and cache, as a cache entry of its own (so an update of
# the standard headers, which changes their folders, makes it again), and only
# when a build compiles. GCC checks that a precompiled header fits the options
# of the compile that reads it and ignores one that does not; the units' sources
# (and so the cache keys) are the same with or without it.
PCH_ENV = "BINDTHEM_NO_PCH"  # set (non-empty): no precompiled prelude
# A build precompiles the prelude (~0.9 s, once) only where that pays at once:
# several units, or this many instantiations (a small header, a notebook cell of
# untemplated functions, does not wait for it)
PCH_MIN = 8


def _prelude_pch(cxx, flags, cache_dir):
    """(the options ``-include <prelude>`` that make g++ read the prelude
    precompiled, the files its precompile read), or ((), ()) where it cannot:
    another compiler (clang's PCH work differently), a compiler given with
    arguments or as a wrapper script, $BINDTHEM_NO_PCH set, or a failed
    precompile (the build then reads the prelude's text, as always). g++
    leaves most of those files out of the dependencies of a unit that reads
    the precompiled prelude: the build adds them (:func:`_add_deps`), so the
    unit's cache entry is checked against the standard headers as before."""
    if os.environ.get(PCH_ENV) or _compiler_identity(cxx) is None:
        return (), ()
    ident = _compiler_id(cxx, cache_dir)
    if "Free Software Foundation" not in ident or "clang" in ident:
        return (), ()
    pch_flags = flags + ["-fPIC"]
    record = {}  # the precompile's deps
    try:
        path = compile_cached(
            key_parts=("prelude", PRELUDE, ident, "\0".join(cxx + pch_flags)),
            cache_dir=cache_dir, folder_name="prelude", stem="prelude", ext=".hpp.gch",
            source=PRELUDE, suffix=".hpp", what="precompiling bindthem's prelude",
            status="precompiling the standard headers with %s" % os.path.basename(cxx[-1]),
            command=lambda src, dep, out: cxx + pch_flags + ["-x", "c++-header", "-MD", "-MF",
                                                             dep, src, "-o", out],
            system_dirs=lambda: _system_dirs(cxx, flags), record=record)
    except (BuildError, OSError):
        return (), ()
    try:
        deps = sorted(record["deps"])
    except BuildError:  # its manifest's second line is damaged: precompiled again next time
        remove_entry(os.path.dirname(path))
        return (), ()
    return ("-include", path[:-len(".gch")]), deps


def _add_deps(depfile, paths):
    """Adds ``paths`` to the make rule the compiler wrote into ``depfile``."""
    if not paths:
        return
    with open(depfile, "r+") as f:
        text = f.read().rstrip()
        f.seek(0)
        f.write(text + "".join(" \\\n " + p.replace(" ", "\\ ") for p in paths) + "\n")
        f.truncate()


def _without_pch_if_gone(pch, compile_with):
    """``compile_with(pch)``; once more with no precompiled prelude if that
    failed naming it (evicted from the cache meanwhile, or refused by this
    compiler): it is a shortcut, never a cause of failure."""
    try:
        return compile_with(pch)
    except BuildError as e:
        if not pch or pch[1] not in (e.output or ""):  # what the compiler said, not the command
            raise
    return compile_with(())


def _per_unit_state(objs):
    """Whether the objects hold writable data of internal linkage (``nm``
    types b, d, g, s), or cannot be read: the one unit is then built."""
    try:
        proc = subprocess.run(["nm"] + objs, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return True
    if proc.returncode != 0:
        return True
    for line in proc.stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in ("b", "d", "g", "s") and f[2] not in _PER_UNIT:
            return True
    return False


_CONTEXT = re.compile(r"^(In file included from |\s+from |.*: In |.*: At global scope"
                      r"|.*:\d+:\d+:\s+required from )")


def _merge_outputs(texts):
    """What several units' compilers printed, each diagnostic once: a
    diagnostic (a warning or error line, the notes and lines after it, the
    context lines before it) is dropped when one with the same text, its
    context aside, was kept already."""
    seen, kept = set(), []
    for text in texts:
        blocks, context, cur = [], [], None
        for line in text.splitlines():
            if _CONTEXT.match(line):
                if cur is not None:
                    blocks.append(cur)
                    cur = None
                context.append(line)
            elif cur is None or (not line[:1].isspace() and ": note:" not in line):
                if cur is not None:
                    blocks.append(cur)
                cur, context = (context, [line]), []
            else:
                cur[1].append(line)
        if cur is not None:
            blocks.append(cur)
        if context:
            blocks.append((context, []))
        for ctx, body in blocks:
            key = "\n".join(body or ctx)
            if key not in seen:
                seen.add(key)
                kept += ctx + body
    return "\n".join(kept) + ("\n" if kept else "")


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
