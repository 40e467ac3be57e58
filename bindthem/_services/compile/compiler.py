"""Who the C++ compiler is and which folders are its own.

What a build's cache key names of the compiler (:func:`_compiler_id`: what
``cxx --version`` prints, asked once per compiler and process and kept in
the cache under the identity of its executable, :func:`_compiler_identity`)
and the compiler's own include folders (:func:`_system_dirs`), whose headers
the cache checks by their folder. Used by the build (``kernels``), its
``units`` and ``ondemand``; it imports the cache only.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from typing import Any

from ...errors import BuildError
from ..cache import group_read, group_write

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

