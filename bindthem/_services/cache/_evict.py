"""Listing and bounding the cache: its entries, least recently used first, removed
until it holds at most ``$BINDTHEM_CACHE_SIZE`` (``cache_limit``, ``evict``),
and what killed processes left (``sweep``).

An entry is removed only when no build, load or ``using_group`` holds its
lock, and renamed away (``*.removed-<pid>-<ns>``) before it is removed
(``remove_entry``).
"""

import errno
import fcntl
import os
import re
import shutil
import stat
import time

from ._fs import _plain, _remove_at
from ._manifest import read_manifest
from ._root import _O_DIR, _O_READ, _TEMP, DEPS, GROUPS, LOCK, REMOVED

DEFAULT_LIMIT = 1 << 30


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
            return os.stat(os.path.join(folder, marker), follow_symlinks=False).st_mtime
        except OSError:
            pass
    try:
        return os.lstat(folder).st_mtime
    except OSError:
        return 0.0


def _alive(pid):
    if pid == os.getpid():
        return False  # this process is not removing it now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _leftovers(folder):
    """Names in an entry that killed builds left (temporary files and
    folders), with the pid they name when they name one."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [n for n in names if _TEMP.match(n)]


def _isdir(path):
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def entries(root):
    """The cache's entries, least recently used first: dicts with ``path``,
    ``kind`` ("build", a group of :data:`GROUPS`, or "removed": a folder a killed
    process was removing), ``size`` (bytes, leftovers included), ``used``
    (seconds since the epoch), ``file`` (the built output, or None) and
    ``leftovers`` (temporary files killed builds left in it)."""
    out = []
    try:
        names = sorted(os.listdir(root))
    except (FileNotFoundError, NotADirectoryError):
        return out
    for name in names:
        path = os.path.join(root, name)
        if not _isdir(path) or (name.startswith(".") and REMOVED not in name):
            continue
        subs = [(path, "build")]
        if name in GROUPS:
            try:
                subs = [(os.path.join(path, s), name) for s in sorted(os.listdir(path))]
            except OSError:
                subs = []
        for p, kind in subs:
            if not _isdir(p):
                continue
            if REMOVED in os.path.basename(p):
                kind = "removed"
            elif kind == "build" and not (os.path.lexists(os.path.join(p, DEPS))
                                          or os.path.lexists(os.path.join(p, LOCK))):
                continue  # not a folder bindthem made: never listed, never removed
            f = None
            if kind == "build":
                try:
                    with open(os.path.join(p, DEPS), "rb") as fh:
                        name_ = read_manifest(fh.read())["file"]
                    f = os.path.join(p, name_) if _plain(name_) else None
                except (OSError, ValueError, KeyError, TypeError, AttributeError):
                    pass
            out.append({"path": p, "kind": kind, "size": _size(p), "used": _last_used(p),
                        "file": f, "leftovers": _leftovers(p) if kind != "removed" else []})
    out.sort(key=lambda e: e["used"])
    return out


def _removing_pid(path):
    m = re.search(re.escape(REMOVED) + r"(\d+)-\d+$", path)
    return int(m.group(1)) if m else None


def remove_entry(path):
    """Removes one entry unless a build, a load or a :func:`using_group`
    holds its lock (a ``*.removed-*`` folder unless its process is alive). The folder is first
    renamed away (atomically), so a process that opens it afterwards starts
    a fresh one. The lock taken is the one inside the folder renamed: when
    another process removed the folder and a new build made a new one at
    ``path`` meanwhile, the new one is left alone. Returns whether it was
    removed."""
    pid = _removing_pid(path)
    if pid is not None:
        if _alive(pid):
            return False
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)
    dfd = lock = None
    try:
        dfd = os.open(path, _O_DIR)
        try:
            lock = os.open(LOCK, _O_READ, dir_fd=dfd)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ELOOP, errno.ENXIO):
                raise
        if lock is not None:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    return False
                raise
        # Entry folders are renamed away only under their lock, so while we
        # hold it, ``path`` names this folder for as long as it does now.
        st, held = os.stat(path, follow_symlinks=False), os.fstat(dfd)
        if (st.st_ino, st.st_dev) != (held.st_ino, held.st_dev):
            return False
        trash = "%s%s%d-%d" % (path, REMOVED, os.getpid(), time.monotonic_ns())
        os.rename(path, trash)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        if e.errno != errno.ELOOP:  # a link put where the entry was: not ours to remove
            raise
        return False
    finally:
        for fd in (lock, dfd):
            if fd is not None:
                os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    return True


def sweep(root):
    """Removes what killed processes left: ``*.removed-*`` folders of dead
    processes, and the temporary files in entries no one holds. Returns the
    number of paths removed."""
    removed = 0
    for e in entries(root):
        if e["kind"] == "removed":
            removed += remove_entry(e["path"])
            continue
        if not e["leftovers"]:
            continue
        if e["kind"] != "build":  # a group entry's: a file whose writer (its pid) is dead
            for n in e["leftovers"]:
                m = _TEMP.match(n)
                if m.group(1) and not _alive(int(m.group(1))):
                    _remove_path(os.path.join(e["path"], n))
                    removed += 1
            continue
        try:
            fd = os.open(e["path"], _O_DIR)
        except OSError:
            continue
        try:
            lock = os.open(LOCK, _O_READ, dir_fd=fd)
        except OSError:
            os.close(fd)
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # listed again under the lock: the folder open now may be a newer
            # one than the one listed, whose build has since ended
            for n in os.listdir(fd):
                if _TEMP.match(n):
                    _remove_at(fd, e["path"], n)
                    removed += 1
        except OSError:
            pass
        finally:
            os.close(lock)
            os.close(fd)
    return removed


def _remove_path(path):
    if _isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


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
