"""A cold build's translation units and its precompiled prelude.

How many compiler processes a build runs (``--jobs``; its default is
:func:`cores.default_jobs`),
the instantiations split into that many shares (:func:`_shares`), the
command of one unit (:func:`_unit_command`), the units compiled in parallel
and linked (:func:`_compile_units`, which falls back on the one unit where
that would change what a call does) with what they printed merged
(:func:`_merge_outputs`), and GCC's precompiled form of the prelude every
unit starts with (:func:`_prelude_pch`). The build (``kernels``) writes the
units' sources and hands them over, with the prelude's text; this module
imports ``compiler`` and the cache, never ``kernels``.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess

from ...errors import BuildError
from ..cache import compile_cached, remove_entry, run_commands
from . import cores
from .compiler import _compiler_id, _compiler_identity, _system_dirs

# what every compile of a shared library passes last
REQUIRED_FLAGS = ("-fPIC", "-shared")


def _check_jobs(jobs):
    """``jobs`` of a build checked: None (the default, :func:`cores.default_jobs`,
    chosen when the build compiles) or a number, 1 or more."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError("jobs=%r: expected a number of compiler processes, 1 or more "
                         "(default: as many as the cores idle now, of the %d this process "
                         "may use)" % (jobs, cores.usable_cores()))
    return jobs


def _unit_count(jobs, n):
    """The translation units of a cold build of ``n`` instantiations:
    ``jobs`` (checked), or :func:`cores.default_jobs` where it is None (probed only
    where there is something to split), and no more than ``n``."""
    return min(jobs or (cores.default_jobs() if n > 1 else 1), n)


JOBS_HELP = ("compiler processes a cold build runs at once, each compiling a share of the "
             "instantiations (default: as many as the cores this process may use that other "
             "work leaves idle now, at least 1)")


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


def _unit_command(cxx, flags, inc=()):
    """command(src, depfile, out, pch=()) of compile_cached for one translation
    unit (``pch``: the options of the precompiled prelude, or (); ``inc``:
    the snapshot's include options, source.snapshot_flags)."""
    def one_unit(src, dep, out, pch=()):
        return (cxx + flags + list(REQUIRED_FLAGS) + list(pch) + list(inc)
                + ["-MD", "-MF", dep, src, "-o", out])
    return one_unit


# Data with internal linkage that is harmless in every unit: <iostream>'s initialiser.
_PER_UNIT = frozenset(["_ZStL8__ioinit"])


def _compile_units(sources, cxx, flags, src, dep, out, one_unit, what, status, pch=(),
                   inc=()):
    """Compiles the translation units ``sources`` (their texts: each includes
    the header's snapshot and instantiates its share, :func:`_shares`) in
    parallel, in the private folder of ``src``,
    then links them into ``out``; returns what the compiler printed, merged.
    The header's own definitions are in every unit, so where that would
    change what a call does, the one unit is built instead: a header whose
    objects hold writable data of internal linkage (``static`` or unnamed
    namespace variables: each unit would have its own copy), or whose
    objects do not link (a definition that is not inline: defined twice).
    ``pch``: the compiler options of the precompiled prelude, or ()."""
    folder = os.path.dirname(src)
    for i, text in enumerate(sources):
        with open(os.path.join(folder, "unit%d.cpp" % i), "x") as f:
            f.write(text)

    def compile_all(pch):
        cmds, objs = [], []
        for i in range(len(sources)):
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
# cold build compiles starts with the prelude (source.PRELUDE), which is
# most of the work of a small unit (~0.25 s of g++ -O3 reading the standard
# headers). It is compiled once per compiler, flags and cache, as a cache entry
# of its own (so an update of the standard headers, which changes their
# folders, makes it again), and only when a build compiles. GCC checks that a
# precompiled header fits the options of the compile that reads it and ignores
# one that does not; the units' sources (and so the cache keys) are the same
# with or without it.
PCH_ENV = "BINDTHEM_NO_PCH"  # set (non-empty): no precompiled prelude
# A build precompiles the prelude (~0.9 s, once) only where that pays at once:
# several units, or this many instantiations (a small header, a notebook cell of
# untemplated functions, does not wait for it)
PCH_MIN = 8


def _prelude_pch(cxx, flags, cache_dir, prelude):
    """(the options ``-include <prelude>`` that make g++ read ``prelude`` (the
    text every unit starts with, source.PRELUDE) precompiled, the
    files its precompile read), or ((), ()) where it cannot:
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
            key_parts=("prelude", prelude, ident, "\0".join(cxx + pch_flags)),
            cache_dir=cache_dir, folder_name="prelude", stem="prelude", ext=".hpp.gch",
            source=prelude, suffix=".hpp", what="precompiling bindthem's prelude",
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

