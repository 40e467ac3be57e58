"""The content-hashed build cache shared by bindthem.build and bindthem.cuda.build.

A build lives in ``<cache>/<stem><tag>-<hash>/``, the hash taken over what the
caller names (header, YAML, generated source, compiler identity, flags).
``deps.json`` records the output's file name and a SHA-256 of every file the
compiler read (its ``-MD`` depfile), so editing an included header rebuilds.
The output's name carries a hash of those files: the dynamic loader hands back
an already loaded library for a path it has seen, so a rebuild must not reuse
the old name. A file lock serialises builds of one folder across processes;
outputs are written to temporary names and renamed into place.
"""

import fcntl
import hashlib
import json
import os
import shlex
import tempfile

from . import _status
from .errors import BuildError

__all__ = ["cache_root", "compile_cached", "flag_list", "hash_file"]


def cache_root(cache_dir=None):
    """``cache_dir``, else ``$BINDTHEM_CACHE``, else ``~/.cache/bindthem``."""
    return os.path.abspath(os.fspath(
        cache_dir or os.environ.get("BINDTHEM_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "bindthem")))


def hash_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def flag_list(flags, default):
    """None → default; a string is split as a shell would; a list is copied."""
    if flags is None:
        return list(default)
    if isinstance(flags, str):
        return shlex.split(flags)
    return list(flags)


def _parse_depfile(text):
    _, _, deps = text.replace("\\\n", " ").partition(":")
    return [d.replace("\0", " ") for d in shlex.split(deps.replace("\\ ", "\0")) if d]


def _cached(folder, depsfile):
    """The cached output, if it and every file its build read are unchanged."""
    try:
        with open(depsfile) as f:
            rec = json.load(f)
        out = os.path.join(folder, rec["file"])
        if os.path.exists(out) and all(hash_file(p) == h for p, h in rec["deps"].items()):
            return out
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _compile(command, source, suffix, folder, stem, ext, what, status):
    fd, src = tempfile.mkstemp(suffix=suffix, dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp = os.path.join(folder, "%s%s.tmp%d" % (stem, ext, os.getpid()))
    dep = src[:-len(suffix)] + ".d"
    cmd = command(src, dep, tmp)
    try:
        try:
            proc = _status.run(cmd, status)
        except OSError as e:
            raise BuildError("cannot run %r: %s" % (cmd[0], e), output=str(e),
                             command=cmd) from None
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            raise BuildError("%s failed (exit %d):\n%s\ncommand: %s"
                             % (what, proc.returncode, out.strip(), shlex.join(cmd)),
                             output=out, command=cmd)
        deps = []
        if os.path.exists(dep):
            with open(dep) as f:
                deps = [p for p in _parse_depfile(f.read()) if p != src and os.path.exists(p)]
        deps = {os.path.abspath(p): hash_file(p) for p in deps}
        digest = hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()[:12]
        target = os.path.join(folder, "%s-%s%s" % (stem, digest, ext))
        depsfile = os.path.join(folder, "deps.json")
        with open(depsfile + ".tmp", "w") as f:
            json.dump({"file": os.path.basename(target), "deps": deps}, f)
        os.replace(tmp, target)
        os.replace(depsfile + ".tmp", depsfile)
        return target
    finally:
        for p in (src, dep, tmp):
            if os.path.exists(p):
                os.unlink(p)


def compile_cached(*, key_parts, cache_dir, folder_name, stem, ext, source, suffix, command,
                   what, status=None, output=None):
    """Path of the output built from ``source`` (compiled by
    ``command(src, depfile, out)``, a list), from the cache when fresh.
    With ``output``, the result is also copied there and that path returned.
    ``what`` names the step in errors, ``status`` in the status line that a
    long build shows (see bindthem._status)."""
    key = hashlib.sha256()
    for part in key_parts:
        key.update(part.encode() + b"\0")
    folder = os.path.join(cache_root(cache_dir), "%s-%s" % (folder_name, key.hexdigest()[:24]))
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = (_cached(folder, os.path.join(folder, "deps.json"))
                  or _compile(command, source, suffix, folder, stem, ext, what,
                              status or what))
    if output is None:
        return target
    output = os.path.abspath(os.fspath(output))
    tmp = output + ".tmp%d" % os.getpid()
    with open(target, "rb") as src, open(tmp, "wb") as dst:
        dst.write(src.read())
    os.replace(tmp, output)
    return output
