"""The C preprocessor run on a header, and which Plan a Library binds: the
header as written or the preprocessor's output (:func:`plan_of`).

An ordinary C header (zlib.h, cblas.h) declares its functions through
macros, typedefs and enums of the files it includes; the C core reads the
preprocessor's output (``cc -E -dD -C``: the macros kept, the comments kept,
line markers naming each file) as such a header, binding only the main
file's declarations, at their own file:line and with their doc comments.
The Plan keeps those exact bytes (``plan.header_text``): a pickle, a
package and a build carry them, so no preprocessor runs where the Library
is bound again.

``cpp`` chooses: ``"auto"`` (the default) parses the header as written
first, and keeps it when every declaration binds or no preprocessor exists;
otherwise it preprocesses and keeps the preprocessor's output when that
binds more, or reads declarations the text as written could not (a macro in
their way: glibc's ``_Restrict_``), else the header as written (so a
dialect header binds exactly as before). ``True`` always
preprocesses (a failure is a :class:`bindthem.BuildError` with the
command and its output); ``False`` never does.

The preprocessor is ``$CPP`` (split as a shell does) when set, else ``cc
-E``, or ``c++ -E`` for a C++ header (``.hpp``, ``.hh``, ``.hxx``, ``.H``,
or ``-x c++`` among the flags; a build, which compiles the header as C++,
always), run as ``[*cpp, "-dD", "-C", *cppflags, header]`` with standard
input closed and a timeout. What was chosen, run and why it failed is a
:class:`Preprocessing`, kept as ``bindthem.info(lib).preprocessing``.

A service, second in the services' order: it imports only the leaves, and
bindthem._services.display reads a preprocessed header's file name from it
(:func:`marker_file`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess

from .. import _core
from ..errors import BindTypeError, BuildError, HeaderError

__all__ = ["CPP_TIMEOUT", "CXX_EXTENSIONS", "OUTPUT_LIMIT", "Preprocessing", "check_mode",
           "command", "flag_list", "for_build", "marker_file", "plan_of", "prelude_flags",
           "preprocess"]

CPP_TIMEOUT = 120  # seconds one preprocessor run may take
# bytes of output kept: what a pickle may carry (bindthem._services.travel.TEXT_LIMIT)
OUTPUT_LIMIT = 64 << 20
CXX_EXTENSIONS = (".hpp", ".hh", ".hxx", ".H")


class Preprocessing:
    """What a Library's header went through: ``bindthem.info(lib).preprocessing``.

    ``mode``     the ``cpp`` argument: ``"auto"``, ``True`` or ``False``
    ``flags``    the ``cppflags``, as a list
    ``command``  what was run (a list), or None when nothing was (``cpp=False``, or a
                 header that binds every declaration as written)
    ``used``     True when the Plan bound is the preprocessor's output
    ``failed``   why the preprocessor gave nothing (auto mode: the header was bound as
                 written), else None
    """

    __slots__ = ("mode", "flags", "command", "used", "failed")

    def __init__(self, mode="auto", flags=(), command=None, used=False, failed=None):
        self.mode = mode
        self.flags = list(flags)
        self.command = command
        self.used = used
        self.failed = failed

    def __repr__(self):
        what = ("preprocessed by %s" % shlex.join(self.command) if self.used else
                "as written (the preprocessor failed: %s)" % self.failed if self.failed else
                "as written")
        return "<bindthem preprocessing cpp=%r: %s>" % (self.mode, what)


def check_mode(cpp):
    """cpp= as given: "auto", True or False (BindTypeError otherwise)."""
    if cpp is True or cpp is False or (isinstance(cpp, str) and cpp == "auto"):
        return cpp
    raise BindTypeError("cpp=%r: expected 'auto' (preprocess when the header as written does "
                        "not bind every declaration), True (always) or False (never)" % (cpp,))


def flag_list(cppflags):
    """cppflags= as a list: None (none), a string (split as a shell does) or
    a list of strings (-D, -I, -U, -std, -include, ... flags)."""
    if cppflags is None:
        return []
    if isinstance(cppflags, str):
        return shlex.split(cppflags)
    if isinstance(cppflags, (list, tuple)) and all(isinstance(f, str) for f in cppflags):
        return list(cppflags)
    raise BindTypeError("cppflags=%r: expected a string of flags (split as a shell does) or a "
                        "list of strings, e.g. '-DNDEBUG -I include'" % (cppflags,))


def _is_cxx(header, flags):
    if header.endswith(CXX_EXTENSIONS):
        return True
    return any(f == "-x" and nxt.startswith("c++") for f, nxt in zip(flags, flags[1:])) or any(
        f.startswith("-xc++") for f in flags)


def command(header, flags, cxx=None):
    """The command that preprocesses ``header`` (absolute) with ``flags``:
    ``$CPP``, else ``cc -E`` (``c++ -E`` for a C++ header, or when ``cxx``)."""
    cpp = shlex.split(os.environ.get("CPP", ""))
    if not cpp:
        cxx = _is_cxx(header, flags) if cxx is None else cxx
        cpp = ["c++" if cxx else "cc", "-E"]
    return [*cpp, "-dD", "-C", *flags, header]


def _missing(cmd):
    """Why cmd cannot run (its program is not found), or None."""
    prog = cmd[0]
    found = os.access(prog, os.X_OK) if os.sep in prog else shutil.which(prog) is not None
    return None if found else "no C preprocessor: %s is not found (set $CPP)" % prog


class Failed(Exception):
    """The preprocessor gave no output: ``args[0]`` says why, ``output`` is its stderr."""

    def __init__(self, why, output=""):
        super().__init__(why)
        self.output = output


def preprocess(cmd, timeout=CPP_TIMEOUT):
    """cmd's standard output (bytes), standard input closed; Failed when it
    cannot run, times out, exits non-zero or prints more than a pickle carries."""
    why = _missing(cmd)
    if why:
        raise Failed(why)
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise Failed("%s did not finish in %d s" % (cmd[0], timeout),
                     _text(e.stderr or b"")) from None
    except OSError as e:
        raise Failed("cannot run %s: %s" % (cmd[0], e.strerror or e)) from None
    err = _text(r.stderr)
    if r.returncode != 0:
        first = next((line for line in err.splitlines() if line.strip()), "")
        raise Failed("%s exited with status %d%s" % (cmd[0], r.returncode,
                                                      ": " + first if first else ""), err)
    if len(r.stdout) > OUTPUT_LIMIT:
        raise Failed("its output holds %d bytes, more than a Library carries (%d)"
                     % (len(r.stdout), OUTPUT_LIMIT), err)
    return r.stdout


def _text(data):
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def _brief(plan):
    return plan.metadata(brief=True)


def _every_declaration_binds(meta):
    """Something binds, and nothing is left out but on purpose (a header that
    declares nothing as written, fftw3.h's macros, is read after the
    preprocessor)."""
    return bool(meta["functions"] or meta["skipped"]) and not any(
        not s["deliberate"] for s in meta["skipped"])


# a directive the preprocessor acts on: without one (and without flags) its output
# declares what the text as written does, and the check costs no metadata
_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(?:include|import|define|if|el|undef|line)", re.M)


def _needs_nothing(plan, flags):
    """Whether the header as written (``plan``) is kept without a look at
    what it binds: nothing for the preprocessor to do."""
    return not flags and _DIRECTIVE.search(plan.header_text) is None


def _bound(meta):
    """How many declarations a Plan binds: its overloads."""
    return sum(len(fn["overloads"]) for fn in meta["functions"])


def _unreadable(meta):
    """How many declarations the parser could not read (a macro it does not
    know in the way: it is what the preprocessor expands)."""
    return sum(1 for s in meta["skipped"] if s["unreadable"])


def _preprocessed_better(pre, written):
    """Whether the preprocessor's reading (metadata ``pre``) is the one to
    bind rather than the text as written: it binds more, or it reads
    declarations the text could not. Then the header is read as a compiler
    reads it, also where that hides a declaration the text shows (glibc's
    GNU extensions need ``-D_GNU_SOURCE``, as in C)."""
    return _bound(pre) > _bound(written) or _unreadable(pre) < _unreadable(written)


def plan_of(header, instantiate, strict, cpp="auto", cppflags=None, *, cxx=None,
            first_flags=(), text_of=None):
    """(the :class:`_core.Plan` to bind, its :class:`Preprocessing`) for
    ``header`` (absolute) and ``instantiate``, by the rule of ``cpp``
    (this module's docstring). ``cxx``: preprocess as C++ (a build);
    None: by the header's extension and the flags. ``first_flags``: flags
    of bindthem's own, before ``cppflags`` (a build's ``-include`` of its
    prelude). ``text_of``: what the output becomes before it is parsed (a
    build's: :func:`for_build`)."""
    mode = check_mode(cpp)
    flags = flag_list(cppflags)
    parse = _core.parse
    rec = Preprocessing(mode, flags)
    if mode is False:
        return parse(header, instantiate, strict=strict), rec
    cmd = command(header, [*first_flags, *flags], cxx)

    def preprocessed():
        rec.command = cmd
        text = preprocess(cmd)
        return parse(header, instantiate, strict=strict,
                     header_text=text_of(text) if text_of else text)

    if mode is True:
        try:
            plan = preprocessed()
        except Failed as e:
            raise BuildError("cannot preprocess %s (cpp=True): %s\ncommand: %s%s"
                             % (header, e, shlex.join(cmd), "\n" + e.output.rstrip()
                                if e.output.strip() else ""), e.output, cmd) from None
        rec.used = True
        return plan, rec
    error = written = None
    try:
        written = parse(header, instantiate, strict=strict)
    except HeaderError as e:  # as written it does not even parse: the preprocessor may help
        error = e
    if written is not None and (_needs_nothing(written, flags)
                                or _every_declaration_binds(_brief(written))):
        return written, rec
    try:
        plan = preprocessed()
    except (Failed, HeaderError) as e:
        rec.failed = (str(e) if isinstance(e, Failed) else
                      "its output does not parse: %s" % e)
        if written is None:
            if hasattr(error, "add_note"):  # Python 3.11+
                error.add_note("(cpp='auto' ran the C preprocessor too, which gave nothing: %s)"
                               % rec.failed)
            raise error from None
        return written, rec
    if written is None or _preprocessed_better(_brief(plan), _brief(written)):
        rec.used = True
        return plan, rec
    return written, rec


# a line marker: `# 12 "file" flags` (GCC, clang) or `#line 12 "file"`
_MARKER = re.compile(rb'#\s*(?:line\s+)?\d+\s+"((?:[^"\\\n]|\\.)*)"')


def marker_file(text):
    """The file the first line marker of preprocessed ``text`` names (the
    header the preprocessor was given), or None."""
    first = text[:4096].split(b"\n", 1)[0]
    m = _MARKER.match(first)
    if m is None:
        return None
    name = re.sub(rb"\\(.)", rb"\1", m.group(1))
    return os.fsdecode(name)


# a GCC line marker's flags: 1 a file entered, 2 a file returned to
_FLAGS = re.compile(rb'#\s*\d+\s+"(?:[^"\\\n]|\\.)*"((?:\s+\d)*)\s*$')


def prelude_flags(headers):
    """The flags that make a build's preprocessor read its prelude (``headers``,
    the standard headers its translation unit includes before the header's
    snapshot) first: ``-include`` each."""
    return [f for h in headers for f in ("-include", h)]


def for_build(text, headers):
    """A build's Plan bytes: the preprocessor's output (run with
    :func:`prelude_flags`) without what the translation unit has already
    when it includes them. The compiler's predefined macros (under a
    ``"<built-in>"`` marker) would be redefinitions; each file the command
    line entered (the prelude's ``headers``, ``stdc-predef.h``), with all it
    includes, a second definition of what the prelude's own ``#include``
    defines. What the header includes beyond the prelude stays."""
    names = {os.path.basename(h).encode() for h in headers} | {b"stdc-predef.h"}
    out, where, depth = [], None, 0  # depth > 0: inside a file the command line entered
    for line in text.split(b"\n"):
        m = _MARKER.match(line)
        if m is None:
            if depth or (where == b"<built-in>" and line.startswith((b"#define ", b"#undef "))):
                continue
            out.append(line)
            continue
        flags = _FLAGS.match(line)
        flags = flags.group(1).split() if flags else []
        name = m.group(1)
        if depth:  # its return to the command line goes too: its entry is gone
            depth += (b"1" in flags) - (b"2" in flags)
            continue
        if name == b"<built-in>" and where == name:
            continue  # one marker for all the predefined macros, whose lines go
        if b"1" in flags and where == b"<command-line>" and os.path.basename(name) in names:
            depth = 1
            continue
        where = name
        out.append(line)
    return b"\n".join(out)
