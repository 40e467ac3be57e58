"""The content-hashed build cache shared by bindthem.build and bindthem.cuda.build.

A build lives in ``<cache>/<stem><tag>-<hash>/``, the hash taken over what the
caller names (header, YAML, generated source, compiler identity, flags).
``deps.json`` records the output's file name, a SHA-256 of every file the
compiler read (its ``-MD`` depfile), so editing an included header rebuilds,
and what the compiler printed (its warnings, replayed on a cache hit).
A dependency whose size, mtime, ctime and inode are those recorded is not
re-hashed: a cache hit costs a ``stat`` per header, not a read.
The output's name carries a hash of those files: the dynamic loader hands back
an already loaded library for a path it has seen, so a rebuild must not reuse
the old name. A file lock serialises builds of one folder across processes;
outputs are written to temporary names and renamed into place.

The cache is bounded: after each compile, the least recently used entries
(build folders, ``cells/*`` of the notebook magic, ``sources/*`` written when
unpickling) are removed until it holds at most ``$BINDTHEM_CACHE_SIZE``
(default 1G; ``0`` or ``none``: unbounded). A cache hit marks its entry used.
``python -m bindthem cache list|size|clear`` inspects and empties it.
"""

import errno
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import tempfile
import time

from . import _status
from .errors import BuildError

__all__ = ["cache_root", "cache_limit", "compile_cached", "entries", "evict", "flag_list",
           "hash_file", "remove_entry"]

DEFAULT_LIMIT = 1 << 30
DEPS = "deps.json"
GROUPS = ("cells", "sources")  # folders whose subfolders are entries of their own


def cache_root(cache_dir=None):
    """``cache_dir``, else ``$BINDTHEM_CACHE``, else ``~/.cache/bindthem``."""
    return os.path.abspath(os.fspath(
        cache_dir or os.environ.get("BINDTHEM_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "bindthem")))


def cache_limit():
    """Bytes the cache may hold: ``$BINDTHEM_CACHE_SIZE`` (``500M``, ``2G``,
    a number of bytes; ``0`` or ``none`` for no bound), default 1 GiB."""
    text = os.environ.get("BINDTHEM_CACHE_SIZE", "").strip()
    if not text:
        return DEFAULT_LIMIT
    if text.lower() in ("0", "none", "unlimited"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?", text)
    if not m:
        raise ValueError("BINDTHEM_CACHE_SIZE=%r: expected a size like 500M or 2G, or none"
                         % text)
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


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


def _stat_key(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _record_deps(paths):
    """({path: sha256}, {path: stat key}) of the files a build read."""
    deps, stats = {}, {}
    for p in paths:
        p = os.path.abspath(p)
        stats[p] = _stat_key(p)
        deps[p] = hash_file(p)
    return deps, stats


def _cached(folder, depsfile):
    """(output, record) if the cached output and every file its build read
    are unchanged, else None. A file whose stat differs from the record but
    whose content is the same gets its stat updated (we hold the lock)."""
    try:
        with open(depsfile) as f:
            rec = json.load(f)
        out = os.path.join(folder, rec["file"])
        if not os.path.exists(out):
            return None
        stats = rec.setdefault("stat", {})
        touched = False
        for p, h in rec["deps"].items():
            now = _stat_key(p)
            if stats.get(p) == now:
                continue
            if hash_file(p) != h:
                return None
            stats[p], touched = now, True
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    try:
        if touched:
            _write_json(depsfile, rec)
        else:
            os.utime(depsfile)  # the entry was used now (eviction is least recently used)
    except OSError:
        pass  # a cache we may read but not write still serves its hits
    return out, rec


def _write_json(path, obj):
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f)
    os.replace(path + ".tmp", path)


def _compile(command, source, suffix, folder, stem, ext, what, status):
    fd, src = tempfile.mkstemp(suffix=suffix, dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp = os.path.join(folder, "%s%s.tmp%d" % (stem, ext, os.getpid()))
    dep = src[:-len(suffix)] + ".d"
    try:
        cmd = command(src, dep, tmp)
        if isinstance(cmd, str):
            out = cmd  # compiled in-process (NVRTC): what it printed
        else:
            try:
                proc = _status.run(cmd, status)
            except OSError as e:
                raise BuildError("cannot run %r: %s" % (cmd[0], e), output=str(e),
                                 command=cmd) from None
            out = proc.stdout + proc.stderr
            if proc.returncode != 0:
                raise BuildError("%s failed (exit %d):\n%s\ncommand: %s"
                                 % (what, proc.returncode, out.strip(), shlex.join(cmd)),
                                 output=out, command=cmd)
        deps = []
        if os.path.exists(dep):
            with open(dep) as f:
                deps = [p for p in _parse_depfile(f.read()) if p != src and os.path.exists(p)]
        deps, stats = _record_deps(deps)
        digest = hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()[:12]
        target = os.path.join(folder, "%s-%s%s" % (stem, digest, ext))
        rec = {"file": os.path.basename(target), "deps": deps, "stat": stats,
               "output": out.replace(src, "<generated %s>" % suffix.lstrip("."))}
        os.replace(tmp, target)
        _write_json(os.path.join(folder, DEPS), rec)
        return target, rec
    finally:
        for p in (src, dep, tmp):
            if os.path.exists(p):
                os.unlink(p)


def _lock(folder):
    """The folder's lock file, open and locked. Retried when eviction moved
    the folder away while we waited for it."""
    while True:
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, ".lock")
        lock = open(path, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(lock.fileno()).st_ino:
                return lock
        except FileNotFoundError:
            pass
        lock.close()


def compile_cached(*, key_parts, cache_dir, folder_name, stem, ext, source, suffix, command,
                   what, status=None, output=None, record=None):
    """Path of the output built from ``source`` (compiled by
    ``command(src, depfile, out)``, a list run as a process; or a function
    that compiles in-process, writes ``out`` and ``depfile`` itself and
    returns what the compiler printed), from the cache when fresh.
    With ``output``, the result is also copied there and that path returned.
    ``what`` names the step in errors, ``status`` in the status line that a
    long build shows (see bindthem._status). A dict passed as ``record`` is
    filled with ``output`` (what the compiler printed), ``deps`` ({path:
    sha256} of the files it read) and ``fresh`` (whether it compiled now)."""
    key = hashlib.sha256()
    for part in key_parts:
        key.update(part.encode() + b"\0")
    root = cache_root(cache_dir)
    folder = os.path.join(root, "%s-%s" % (folder_name, key.hexdigest()[:24]))
    with _lock(folder):
        hit = _cached(folder, os.path.join(folder, DEPS))
        fresh = hit is None
        target, rec = hit or _compile(command, source, suffix, folder, stem, ext, what,
                                      status or what)
    if fresh:
        limit = cache_limit()
        if limit is not None:
            evict(root, limit, keep=folder)
    if record is not None:
        record.update(output=rec.get("output", ""), deps=rec["deps"], fresh=fresh)
    if output is None:
        return target
    output = os.path.abspath(os.fspath(output))
    tmp = output + ".tmp%d" % os.getpid()
    with open(target, "rb") as src, open(tmp, "wb") as dst:
        dst.write(src.read())
    os.replace(tmp, output)
    return output


# --- inspecting and bounding the cache ------------------------------------------


def _size(folder):
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def _last_used(folder):
    for marker in (DEPS, ".used"):
        try:
            return os.stat(os.path.join(folder, marker)).st_mtime
        except OSError:
            pass
    try:
        return os.stat(folder).st_mtime
    except OSError:
        return 0.0


def entries(root):
    """The cache's entries, least recently used first: dicts with ``path``,
    ``kind`` ("build", "cells" or "sources"), ``size`` (bytes), ``used``
    (seconds since the epoch) and ``file`` (the built output, or None)."""
    out = []
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return out
    for name in names:
        path = os.path.join(root, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        subs = ([(os.path.join(path, s), name) for s in sorted(os.listdir(path))]
                if name in GROUPS else [(path, "build")])
        for p, kind in subs:
            if ".removed-" in p or not os.path.isdir(p):
                continue
            if kind == "build" and not (os.path.exists(os.path.join(p, DEPS))
                                        or os.path.exists(os.path.join(p, ".lock"))):
                continue  # not a folder bindthem made: never listed, never removed
            f = None
            if kind == "build":
                try:
                    with open(os.path.join(p, DEPS)) as fh:
                        f = os.path.join(p, json.load(fh)["file"])
                except (OSError, ValueError, KeyError, TypeError):
                    pass
            out.append({"path": p, "kind": kind, "size": _size(p), "used": _last_used(p),
                        "file": f})
    out.sort(key=lambda e: e["used"])
    return out


def remove_entry(path):
    """Removes one entry unless a build holds its lock. The folder is first
    renamed away (atomically), so a process that opens it afterwards starts a
    fresh one. Returns whether it was removed."""
    lock = None
    try:
        lockpath = os.path.join(path, ".lock")
        if os.path.exists(lockpath):
            lock = open(lockpath, "r")
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return False
                raise
        trash = "%s.removed-%d-%d" % (path, os.getpid(), time.monotonic_ns())
        os.rename(path, trash)
    except FileNotFoundError:
        return False
    finally:
        if lock is not None:
            lock.close()
    shutil.rmtree(trash, ignore_errors=True)
    return True


def evict(root, limit, keep=None):
    """Removes least recently used entries (never ``keep``) until the cache
    holds at most ``limit`` bytes. Returns the paths removed."""
    es = entries(root)
    total = sum(e["size"] for e in es)
    removed = []
    for e in es:
        if total <= limit:
            break
        if keep is not None and os.path.abspath(e["path"]) == os.path.abspath(keep):
            continue
        if remove_entry(e["path"]):
            total -= e["size"]
            removed.append(e["path"])
    return removed
