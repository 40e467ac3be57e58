"""The content-hashed build cache shared by bindthem.build and bindthem.cuda.build.

A build lives in ``<cache>/<stem><tag>-<hash>/``, the hash taken over what the
caller names (header, YAML, generated source, compiler identity, flags).
``deps.json`` (the entry's manifest) records the output's file name, size and
SHA-256, the entry's full key, a SHA-256 of every file the compiler read (its
``-MD`` depfile), so editing an included header rebuilds, and what the
compiler printed (its warnings, replayed on a cache hit): on two JSON lines,
the second the hashes of the files under the compiler's folders, which a hit
reads only where such a folder changed (read_manifest). A dependency whose
size, mtime, ctime and inode are those recorded is not re-hashed: a cache hit
costs a ``stat`` per header, not a read; and the headers under the compiler's
own include folders (``system_dirs``) a ``stat`` per folder: a package
manager replaces a file by renaming a new one in, which changes the folder
(a file of those folders edited in place is not seen). The output's name carries a hash of
those files: the dynamic loader hands back an already loaded library for a
path it has seen, so a rebuild must not reuse the old name.

Trust (docs/build.rst#build-cache): bindthem uses a cache folder only when it
is owned by the user (or root; for root, only by root) and writable by no one
else, unless ``$BINDTHEM_CACHE_GROUP`` opts a group in; otherwise it warns
once and uses a private cache (``_private_root``). Everything in an entry is
opened relative to the entry folder's descriptor with ``O_NOFOLLOW``; files
are created ``O_EXCL`` in a private ``mkdtemp`` folder inside the entry,
verified, ``fsync``-ed and renamed in. A hit is verified before it is used:
the output must be a regular file of a trusted owner with the recorded size,
and its SHA-256 is checked the first time a process uses it. An entry that
fails is rebuilt, the new output renamed over the bad one. Loaders hold a
shared ``flock`` on the entry's ``.lock`` from the hit until their ``load``
callback returns; builders an
exclusive one; the evictor takes an exclusive one without waiting, and moves
the folder away before removing it. A group entry (``cells/*``,
``sources/*``, ...: below) has a ``.lock`` too, held shared by whoever
writes it or compiles from it, for as long as it does (:func:`using_group`),
so eviction never removes the files of a compile that runs. A cache that
cannot be written (a read-only install) serves verified hits with no lock
file and no write; its misses build into the private cache.

What the compiler read is what was recorded (ccache's rule): a file of the
depfile outside the compiler's own folders and outside the cache whose
mtime or ctime is not older than the compile's start may have changed
while it was read, and one that vanished did; the output is then discarded
and compiled again, ``COMPILE_TRIES`` times at most. (The compiler starts a
clock tick after that start: file times come from the kernel's coarse
clock, which runs up to a tick behind; see _stamp_lag.) A failure
that is no verdict on the source (a compiler killed by a signal or out of
memory, a file it reads missing or changing, a full disk) is a BuildError
with ``transient`` set (:func:`_failure`), which on demand does not remember.

The cache is bounded: after each compile, the least recently used entries
(build folders, ``cells/*`` of the notebook magic, ``sources/*`` written when
unpickling, ``compilers/*``: what a compiler binary's ``--version`` printed,
``on-demand/*``: the instantiations calls made, for stubs) are removed until
it holds at most ``$BINDTHEM_CACHE_SIZE`` (default 1G;
``0`` or ``none``: unbounded), and what killed processes left (temporary
files, ``*.removed-*`` folders) is removed. A cache hit marks its entry used.
``python -m bindthem cache list|size|clear`` inspects and empties it.
"""

import contextlib
import errno
import fcntl
import grp
import hashlib
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Mapping

from . import _status
from ._files import read_upto, sha256_fd
from .errors import BuildError, BuildWarning, warn

__all__ = ["cache_root", "cache_limit", "compile_cached", "entries", "evict", "flag_list",
           "group_entry", "group_read", "group_write", "hash_file", "remove_entry", "resolve",
           "run_commands", "using_group", "write_once"]

DEFAULT_LIMIT = 1 << 30
DEPS = "deps.json"
LOCK = ".lock"
# folders whose subfolders are entries of their own
GROUPS = ("cells", "sources", "compilers", "on-demand")
TEMP_PREFIX = ".build-"  # a build's private folder inside its entry
REMOVED = ".removed-"  # <entry>.removed-<pid>-<ns>: an entry being removed
MAX_MANIFEST = 16 << 20
COMPILE_TRIES = 3  # compiles of one miss while what the compiler read keeps changing
STAMP_LAG = 0.02  # seconds a file's times may lag the clock, where the kernel cannot say
_TEMP = re.compile(r"^(?:\.build-.*|.*\.tmp(\d+).*|tmp\w{8}\.(?:cpp|cu|d))$")
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_FULL = (errno.ENOSPC, errno.EDQUOT)

# (path, dev, inode, size, mtime_ns) of the outputs whose SHA-256 this process checked
_verified: set[tuple[str, int, int, int, int]] = set()
_warned: set[str] = set()
_private: list[str] = []  # this process's private cache, once chosen
_private_lock = threading.Lock()


def cache_root(cache_dir=None):
    """``cache_dir``, else ``$BINDTHEM_CACHE``, else ``~/.cache/bindthem``
    (the folder asked for; :func:`resolve` says which one is used)."""
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


_PLAIN_WORDS = re.compile(r"[^'\"\\\x0b\x0c]*")  # no quote, backslash, or \v \f


def shell_words(text):
    """``text`` split as a shell splits words (shlex.split); a text with no
    quote or backslash (the common ``-O3 -march=native``) by str.split,
    which gives the same words without shlex's character-by-character lexer."""
    if text.isascii() and _PLAIN_WORDS.fullmatch(text):
        return text.split()
    return shlex.split(text)


def flag_list(flags, default):
    """None → default; a string is split as a shell would; a list is copied."""
    if flags is None:
        return list(default)
    if isinstance(flags, str):
        return shell_words(flags)
    return list(flags)


# --- whom the cache trusts --------------------------------------------------------


def _shared_group():
    """The gid ``$BINDTHEM_CACHE_GROUP`` names (a group name or number), or
    None. Root never shares: as pip does, it uses only what root owns."""
    text = os.environ.get("BINDTHEM_CACHE_GROUP", "").strip()
    if not text or os.geteuid() == 0:
        return None
    try:
        return int(text) if text.isdigit() else grp.getgrnam(text).gr_gid
    except KeyError:
        _warn_once(("group", text), "BINDTHEM_CACHE_GROUP=%r names no group on this machine; "
                   "the build cache is used as a private one" % text)
        return None


def _name(table, ident):
    try:
        return "%s (%d)" % ((table.getpwuid if table is pwd else table.getgrgid)(ident)[0],
                            ident)
    except KeyError:
        return str(ident)


def _untrusted(st, gid):
    """Why a folder or file with stat ``st`` is not trusted, or None: it must
    be owned by us or root (root: by root) and writable by no one else; with
    a shared group ``gid``, its members may own it and write it."""
    uid = os.geteuid()
    shared = gid is not None and st.st_gid == gid
    if st.st_uid != uid and (uid == 0 or st.st_uid != 0) and not shared:
        return "it is owned by user %s, not by %s" % (_name(pwd, st.st_uid), _name(pwd, uid))
    if st.st_mode & stat.S_IWOTH:
        return "it is writable by every user (mode %o)" % stat.S_IMODE(st.st_mode)
    if st.st_mode & stat.S_IWGRP and not shared:
        return "it is writable by group %s (mode %o)" % (_name(grp, st.st_gid),
                                                         stat.S_IMODE(st.st_mode))
    return None


def _warn_once(key, message):
    if key not in _warned:
        _warned.add(key)
        warn(message, BuildWarning)


class _Untrusted(Exception):
    pass


class Root:
    """An open, trusted cache folder: ``path``, ``fd``, ``writable`` and the
    shared group's ``gid`` (or None), which sets the modes of what is made."""

    def __init__(self, path, fd, writable, gid):
        self.path, self.fd, self.writable, self.gid = path, fd, writable, gid
        self.dir_mode = 0o2770 if gid is not None else 0o700
        self.file_mode = 0o660 if gid is not None else 0o600
        self.exec_mode = 0o770 if gid is not None else 0o700

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def _makedirs(path, mode):
    """Creates path's missing folders with ``mode`` whatever the umask."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent != path:
        _makedirs(parent, mode)
    try:
        os.mkdir(path, mode & 0o777)
    except FileExistsError:
        return
    fd = os.open(path, _O_DIR)
    try:
        if os.fstat(fd).st_uid == os.geteuid():
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _open_root(path, gid, private=False):
    """The Root at ``path``, made if missing; _Untrusted or OSError if it may
    not be used. ``private``: it must be ours alone (mode 0700)."""
    mode = 0o2770 if gid is not None else 0o700
    try:
        _makedirs(path, mode)
    except OSError as e:
        if e.errno not in _READ_ONLY or not os.path.isdir(path):
            raise
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the user's own link is fine
    try:
        st = os.fstat(fd)
        why = _untrusted(st, gid)
        if private and not why and (st.st_uid != os.geteuid() or st.st_mode & 0o077):
            why = "it is not private (owner %d, mode %o)" % (st.st_uid, stat.S_IMODE(st.st_mode))
        if why:
            raise _Untrusted(why)
        writable = os.access(fd if os.access in os.supports_fd else path, os.W_OK | os.X_OK,
                             effective_ids=os.access in os.supports_effective_ids)
        return Root(path, fd, writable, gid)
    except BaseException:
        os.close(fd)
        raise


def _private_root():
    """This user's private cache: ``$XDG_RUNTIME_DIR/bindthem``, else
    ``$TMPDIR/bindthem-<uid>`` (``/tmp``), else a new ``mkdtemp`` folder
    when someone else took that name."""
    with _private_lock:
        if _private:
            try:
                return _open_root(_private[0], None, private=True)
            except (OSError, _Untrusted):
                _private.clear()
        uid = os.geteuid()
        candidates = [os.path.join(tempfile.gettempdir(), "bindthem-%d" % uid)]
        if os.environ.get("XDG_RUNTIME_DIR"):
            candidates.insert(0, os.path.join(os.environ["XDG_RUNTIME_DIR"], "bindthem"))
        for path in candidates:
            try:
                root = _open_root(path, None, private=True)
            except (OSError, _Untrusted):
                continue
            if root.writable:
                _private.append(path)
                return root
            root.__exit__()
        path = tempfile.mkdtemp(prefix="bindthem-%d-" % uid)
        _warn_once(("private", path), "%s is taken by another user; this process builds into "
                   "%s" % (candidates[-1], path))
        _private.append(path)
        return _open_root(path, None, private=True)


def open_root(cache_dir=None):
    """The Root bindthem uses for ``cache_dir``: that cache when it is
    trusted, else (after a warning naming it and why) the private one."""
    path = cache_root(cache_dir)
    gid = _shared_group()
    try:
        return _open_root(path, gid)
    except _Untrusted as e:
        why = str(e)
    except OSError as e:
        why = "it cannot be opened or made: %s" % (e.strerror or e)
    root = _private_root()
    _warn_once(("root", path), (
        "bindthem's build cache %s is not used: %s, and bindthem loads the libraries it holds. "
        "Building into the private cache %s instead. To use %s, it must be owned by you (or "
        "root) and writable by no one else (chown, chmod 700), or shared by a group that opts "
        "in with BINDTHEM_CACHE_GROUP (see docs/build.rst#build-cache)"
        % (path, why, root.path, path)))
    return root


def resolve(cache_dir=None):
    """The path of the cache bindthem builds into for ``cache_dir``."""
    with open_root(cache_dir) as root:
        return root.path


# --- entries: folders, locks and files opened without following links ------------


def _plain(name):
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            and "\0" not in name)


def _remove_at(dfd, folder, name):
    """Removes ``name`` in the folder open as ``dfd`` (at path ``folder``):
    a file or link is unlinked, a folder removed with what it holds."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        else:
            os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def _set_aside(dfd, folder, name):
    """Renames ``name`` away (atomically) and removes it."""
    trash = "%s%s%d-%d" % (name, REMOVED, os.getpid(), time.monotonic_ns())
    try:
        os.rename(name, trash, src_dir_fd=dfd, dst_dir_fd=dfd)
    except FileNotFoundError:
        return
    _remove_at(dfd, folder, trash)


def _open_dir(root, dfd, folder, name, create):
    """The fd of ``name``, a trusted folder under the folder open as ``dfd``,
    made when ``create``; anything else there (a link, a file, a folder
    someone else owns) is moved aside first. None when missing and not
    ``create``, or not trusted and the cache is not writable."""
    for _ in range(4):
        made = False
        if create:
            try:
                os.mkdir(name, root.dir_mode & 0o777, dir_fd=dfd)
                made = True
            except FileExistsError:
                pass
        try:
            fd = os.open(name, _O_DIR, dir_fd=dfd)
        except FileNotFoundError:
            if not create:
                return None
            continue
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
        else:
            st = os.fstat(fd)
            if made and st.st_uid == os.geteuid():
                os.fchmod(fd, root.dir_mode)
                st = os.fstat(fd)
            if not _untrusted(st, root.gid):
                return fd
            os.close(fd)
        if not create:
            return None
        _set_aside(dfd, folder, name)
    raise BuildError("cannot make a folder of its own at %s: something keeps replacing it"
                     % os.path.join(folder, name))


def _open_file(dfd, name, root, create):
    """An fd of the regular, trusted file ``name`` in the folder ``dfd``
    (read-write, made if missing, when ``create``), or None: missing, or
    not such a file (a link, a FIFO, someone else's)."""
    try:
        if create:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC, root.file_mode, dir_fd=dfd)
        else:
            fd = os.open(name, _O_READ, dir_fd=dfd)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP, errno.ENXIO, errno.EISDIR):
            return None
        raise
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and create and st.st_uid == os.geteuid() \
            and stat.S_IMODE(st.st_mode) != root.file_mode:
        os.fchmod(fd, root.file_mode)
        st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or _untrusted(st, root.gid):
        os.close(fd)
        return None
    return fd


def _read_at(dfd, name, root, limit=MAX_MANIFEST):
    fd = _open_file(dfd, name, root, False)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        return None if size > limit else read_upto(fd, size, limit)
    finally:
        os.close(fd)


def _write_new(dfd, name, data, mode):
    """Creates ``name`` (O_EXCL, no link followed) in the folder ``dfd``
    holding ``data``, written and fsync-ed; with ``mode`` whatever the umask
    (None: 0666 less the umask, for the user's own files)."""
    fd = os.open(name, _O_NEW, 0o666 if mode is None else mode & 0o777, dir_fd=dfd)
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def _publish(dfd, name, data, mode):
    """Writes ``name`` in the folder ``dfd`` atomically: a new temporary
    file, fsync, rename over ``name`` (a link there is replaced, never
    followed), fsync of the folder."""
    tmp = ".%s.tmp%d-%s" % (name, os.getpid(), secrets.token_hex(4))
    try:
        _write_new(dfd, tmp, data, mode)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise
    os.fsync(dfd)


def _disk_full(e, folder, what, size):
    return BuildError(
        "the build cache is full: no space left in %s (%s) while writing %s (%s); nothing "
        "was kept. Free space there (python -m bindthem cache clear, or a smaller "
        "BINDTHEM_CACHE_SIZE), or point BINDTHEM_CACHE at another disk"
        % (folder, os.strerror(e.errno), what, _size_text(size)), output=str(e),
        transient=True)


def _size_text(n):
    if n is None:
        return "size unknown"
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "bytes" else "%.1f %s") % (n, unit)
        n /= 1024


def group_entry(cache_dir, group, name):
    """The path of ``<cache>/<group>/<name>/``, made and marked used as
    :func:`using_group` does, but not held: eviction may remove it at once.
    What writes files there, or reads them, holds it with using_group."""
    with using_group(cache_dir, group, name) as folder:
        return folder


@contextlib.contextmanager
def using_group(cache_dir, group, name):
    """``with using_group(cache_dir, "sources", key) as folder:``, the path of
    ``<cache>/<group>/<name>/`` (a group of :data:`GROUPS`), a trusted folder
    made as needed in a cache that can be written (else in the private
    cache), marked used now, and held until the block ends: a shared
    ``flock`` on its ``.lock``, which eviction takes exclusively without
    waiting, so the folder is never removed meanwhile. Hold it from writing
    its files until what reads them (a compile, a bind) has returned."""
    if not _plain(group) or not _plain(name):
        raise ValueError("cache entry %r/%r: expected plain names" % (group, name))
    root = open_root(cache_dir)
    if not root.writable:
        root.__exit__()
        root = _private_root()
    with root:
        gfd = _open_dir(root, root.fd, root.path, group, True)
        entry = _Entry(root, name, (gfd, os.path.join(root.path, group)))
        try:
            entry.open(fcntl.LOCK_SH)
            try:
                try:
                    os.utime(".used", dir_fd=entry.fd, follow_symlinks=False)
                except FileNotFoundError:
                    _write_new(entry.fd, ".used", b"", root.file_mode)
            except FileExistsError:
                pass
            yield entry.path
        finally:
            entry.close()
            os.close(gfd)


def group_read(cache_dir, group, name, file, limit=MAX_MANIFEST):
    """The bytes of ``<cache>/<group>/<name>/<file>``, a trusted regular file
    reached without following links, or None (missing, untrusted, or too
    large). Writes nothing: a read-only cache serves it too."""
    if not all(_plain(x) for x in (group, name, file)):
        raise ValueError("cache file %r/%r/%r: expected plain names" % (group, name, file))
    with open_root(cache_dir) as root:
        gfd = _open_dir(root, root.fd, root.path, group, False)
        if gfd is None:
            return None
        try:
            efd = _open_dir(root, gfd, os.path.join(root.path, group), name, False)
        finally:
            os.close(gfd)
        if efd is None:
            return None
        try:
            data = _read_at(efd, file, root, limit)
        finally:
            os.close(efd)
        return data if data is not None and len(data) <= limit else None


def group_write(cache_dir, group, name, file, data):
    """Writes ``<cache>/<group>/<name>/<file>`` (:func:`write_once`) when the
    cache can be written; a read-only one (and its private stand-in) is left
    as it is. Returns whether it was written."""
    with open_root(cache_dir) as root:
        if not root.writable:
            return False
    with using_group(cache_dir, group, name) as folder:
        write_once(folder, file, data)
    return True


def write_once(folder, rel, data):
    """Writes bytes ``data`` to ``folder/rel`` unless it holds them already:
    subfolders made 0700 and walked without following links, the file
    published atomically (:func:`_publish`). ``folder`` is trusted (from
    :func:`group_entry`); ``rel`` must stay inside it. Returns the path."""
    parts = os.path.normpath(rel).split(os.sep)
    if os.path.isabs(rel) or not all(_plain(p) for p in parts):
        raise ValueError("%r: expected a relative path inside %s" % (rel, folder))
    gid = _shared_group()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        why = _untrusted(st, gid if st.st_gid == gid else None)
        if why:
            raise BuildError("cannot write %s into %s: %s" % (rel, folder, why))
        root = Root(folder, fd, True, gid if st.st_gid == gid else None)
        where = folder
        for p in parts[:-1]:
            sub = _open_dir(root, fd, where, p, True)
            os.close(fd)
            fd, where = sub, os.path.join(where, p)
        path = os.path.join(where, parts[-1])
        try:
            if _read_at(fd, parts[-1], root, len(data)) == data:
                return path
            _publish(fd, parts[-1], data, root.file_mode)
        except OSError as e:
            if e.errno in _FULL:
                raise _disk_full(e, folder, path, len(data)) from None
            raise
        return path
    finally:
        os.close(fd)


# --- building and hitting --------------------------------------------------------


def run_commands(cmds, what, status):
    """Runs the compiler commands ``cmds`` (lists) in parallel; returns what
    each printed, in order. The first that failed (in order) raises
    BuildError naming ``what``, with its output and command, ``transient``
    when the failure is no verdict on the source (:func:`_failure`); a full
    disk raises OSError(ENOSPC), which the build reports as a full cache."""
    try:
        procs = _status.run_all(cmds, status)
    except OSError as e:
        raise BuildError("cannot run %r: %s" % (cmds[0][0], e), output=str(e),
                         command=cmds[0], transient=e.errno in (errno.EAGAIN, errno.ENOMEM)
                         ) from None
    texts = [proc.stdout + proc.stderr for proc in procs]
    for proc, text in zip(procs, texts):
        if proc.returncode != 0:
            if "No space left on device" in text or "Disk quota exceeded" in text:
                raise OSError(errno.ENOSPC, text.strip())
            why, transient = _failure(what, proc.returncode, text)
            raise BuildError("%s:\n%s\ncommand: %s" % (why, text.strip(), shlex.join(proc.args)),
                             output=text, command=proc.args, transient=transient)
    return texts


# A driver's own line (not an indented excerpt of the source) saying that its
# compiler proper was killed (the OOM killer's SIGKILL) or ran out of memory:
# g++, clang++, nvcc.
_KILLED = re.compile(r"^\S.*(?:Killed signal terminated program|internal compiler error: Killed"
                     r"|unable to execute command: Killed|died due to signal 9"
                     r"|virtual memory exhausted|out of memory allocating"
                     r"|LLVM ERROR: out of memory)", re.M)
# ... or that a file it reads is missing (g++, clang++): gone since the build read it
_MISSING = re.compile(r"^\S.*fatal error: .*(?:No such file or directory|file not found)",
                      re.M)


def _failure(what, returncode, text):
    """(how a compile that exited with ``returncode``, printing ``text``,
    failed, whether that is transient: no verdict on the source)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "an unknown signal"
        return ("%s: the compiler was killed by signal %d (%s%s)" % (
            what, -returncode, name, ": out of memory?" if name == "SIGKILL" else ""), True)
    if _KILLED.search(text):
        return ("%s failed (exit %d): its compiler proper was killed or ran out of memory"
                % (what, returncode), True)
    return "%s failed (exit %d)" % (what, returncode), bool(_MISSING.search(text))


def _parse_depfile(text):
    _, _, deps = text.replace("\\\n", " ").partition(":")
    return [d.replace("\0", " ") for d in shlex.split(deps.replace("\\ ", "\0")) if d]


def _stat_key(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _record_deps(paths, system_dirs=()):
    """({path: sha256}, {path: stat key}, {folder: stat key}) of the files a
    build read: a file under one of ``system_dirs`` (the compiler's own
    include folders) is checked by its folder's stat, the others each by
    their own (the stat keys' paths: the manifest's "outside" list, which
    _hit checks alone while every folder is unchanged)."""
    deps, stats, dirs = {}, {}, {}
    prefixes = tuple(os.path.join(d, "") for d in system_dirs)
    for p in paths:
        p = os.path.abspath(p)
        if p.startswith(prefixes):
            d = os.path.dirname(p)
            if d not in dirs:
                dirs[d] = _stat_key(d)
        else:
            stats[p] = _stat_key(p)
        deps[p] = hash_file(p)
    return deps, stats, dirs


def _sha_at(dfd, name, st):
    """SHA-256 of the file ``name`` in ``dfd`` if it is still the inode ``st``."""
    fd = os.open(name, _O_READ, dir_fd=dfd)
    try:
        now = os.fstat(fd)
        if (now.st_ino, now.st_dev, now.st_size) != (st.st_ino, st.st_dev, st.st_size):
            return None
        return sha256_fd(fd, now.st_size)[0]
    finally:
        os.close(fd)


class Deps(Mapping):
    """{path: SHA-256} of every file a build read, from its manifest: the
    head's "outside" files (those outside the compiler's folders) at once,
    the rest (the manifest's second line) parsed on first use; a hit whose
    folders are unchanged never needs them."""

    def __init__(self, outside, dirs, tail=b"", full=None):
        self.outside, self.dirs, self._tail, self._full = outside, dirs, tail, full

    def full(self):
        if self._full is None:
            try:
                full = json.loads(self._tail)
                if not isinstance(full, dict):
                    raise ValueError("not an object")
            except ValueError as e:  # the head was read and used: a damaged second line
                raise BuildError("a build cache manifest is damaged (%s); `python -m bindthem "
                                 "cache clear` empties the cache" % e) from None
            self._full = full
        return self._full

    def __getitem__(self, path):
        return self.full()[path]

    def __iter__(self):
        return iter(self.full())

    def __len__(self):
        return len(self.full())

    def under(self, folder):
        """{path: SHA-256} of the files read from ``folder`` (ending in a
        separator) or below it: the "outside" files alone hold them all
        unless one of the compiler's folders is there."""
        if any(os.path.join(d, "").startswith(folder) for d in self.dirs):
            return {p: h for p, h in self.items() if p.startswith(folder)}
        return {p: h for p, h in self.outside.items() if p.startswith(folder)}


def _manifest_bytes(rec):
    """The manifest: on its first line the head (all a hit reads), on the
    second the SHA-256 of every file the compiler read."""
    head = dict(rec)
    deps = head.pop("deps")
    return json.dumps(head).encode() + b"\n" + json.dumps(deps.full()).encode()


def read_manifest(data):
    """The manifest ``data`` (its bytes) as one dict, "deps" a :class:`Deps`;
    ValueError, KeyError, TypeError or AttributeError when it is not one.
    A manifest of an earlier bindthem (one JSON object, "deps" in it, "outside"
    a list of paths or missing: then the files whose folder is not one of
    "dirs") reads the same."""
    head, _, tail = data.partition(b"\n")
    rec = json.loads(head)
    dirs = rec["dirs"] = rec.get("dirs") or {}
    if "deps" in rec:  # one object: an earlier bindthem's
        full = dict(rec["deps"])
        listed = rec.get("outside")
        if listed is None:
            listed = [p for p in full if (p[:p.rfind("/")] or "/") not in dirs]
        rec["outside"] = {p: full[p] for p in listed}
        rec["deps"] = Deps(rec["outside"], dirs, full=full)
    else:
        rec["outside"] = dict(rec["outside"])
        rec["deps"] = Deps(rec["outside"], dirs, tail=tail)
    return rec


def _hit(root, efd, folder, key):
    """(output path, manifest) when the entry holds a verified build for
    ``key`` whose inputs are unchanged, else None. Verified: the manifest is
    a regular trusted file naming a plain file of this entry, which is a
    regular trusted file of the recorded size, and whose SHA-256 is the
    recorded one (taken once per process and file)."""
    try:
        data = _read_at(efd, DEPS, root)
        if data is None:
            return None
        rec = read_manifest(data)
        name = rec["file"]
        if rec.get("key") != key or not _plain(name) or name in (DEPS, LOCK):
            return None
        st = os.stat(name, dir_fd=efd, follow_symlinks=False)
        if (not stat.S_ISREG(st.st_mode) or _untrusted(st, root.gid)
                or st.st_size != rec["size"]):
            return None
        stats, dirs, deps = rec.setdefault("stat", {}), rec["dirs"], rec["deps"]
        touched, same = False, {}
        if all(_stat_key(d) == k for d, k in dirs.items()):
            # every folder unchanged (the common case): only the files outside them
            # are left to check, each as the loop checks it
            todo = deps.outside.items()
        else:
            todo = deps.full().items()
        for p, h in todo:
            d = p[:p.rfind("/")] or "/"  # os.path.dirname of an absolute normalised path
            if d in dirs:  # a system header: its folder changes when a package replaces it
                if d not in same:
                    same[d] = _stat_key(d) == dirs[d]
                if same[d]:
                    continue
            now = _stat_key(p)
            if stats.get(p) == now:
                continue
            if hash_file(p) != h:
                return None
            stats[p], touched = now, True
        for d, unchanged in same.items():
            if not unchanged:  # its files were checked one by one: the folder is trusted again
                dirs[d], touched = _stat_key(d), True
        path = os.path.join(folder, name)
        seen = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if seen not in _verified:
            if _sha_at(efd, name, st) != rec["sha256"]:
                return None
            _verified.add(seen)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, BuildError):
        return None
    if root.writable:
        try:
            if touched:
                _publish(efd, DEPS, _manifest_bytes(rec), root.file_mode)
            else:  # the entry was used now (eviction is least recently used)
                os.utime(DEPS, dir_fd=efd, follow_symlinks=False)
        except (OSError, BuildError):  # BuildError: a damaged second line, left as it is
            pass
    return path, rec


def _clean(efd, folder):
    """Removes the temporary files and folders killed builds left in the
    entry (we hold its exclusive lock). Earlier outputs stay: a caller of
    compile_library may hold their paths; no manifest names them."""
    for name in os.listdir(efd):
        if _TEMP.match(name):
            _remove_at(efd, folder, name)


def _compile(root, efd, folder, key, command, source, suffix, stem, ext, what, status,
             system_dirs):
    """Builds the entry (we hold its exclusive lock): the compiler writes into
    a private folder made inside the entry; its output, checked to be a
    regular file of ours, is hashed, fsync-ed and renamed in, then the
    manifest. When a file the compiler read changed or vanished while it ran
    (:func:`_inputs`), the output is discarded and compiled again,
    COMPILE_TRIES times at most. Returns (output path, manifest)."""
    _clean(efd, folder)
    changed = None
    for _ in range(COMPILE_TRIES):
        tmpdir = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=folder)
        tfd = os.open(tmpdir, _O_DIR)
        writing = ("the generated source", len(source.encode()))
        try:
            src, dep = os.path.join(tmpdir, stem + suffix), os.path.join(tmpdir, stem + ".d")
            out = stem + ext
            _write_new(tfd, stem + suffix, source.encode(), root.file_mode)
            writing = ("the compiler's output", None)
            start = time.time_ns()
            time.sleep(_stamp_lag())  # what is written once the compiler runs is dated after start
            cmd = command(src, dep, os.path.join(tmpdir, out))
            # a string: compiled by the command itself (NVRTC, several units): what it printed
            text = cmd if isinstance(cmd, str) else run_commands([cmd], what, status)[0]
            st, out_sha = _output(root, tfd, tmpdir, out, ext, what)
            inputs = _inputs(root, tfd, tmpdir, stem, src, start, system_dirs)
            if isinstance(inputs, _Changed):
                changed = inputs
                continue
            deps, stats, dirs = inputs
            digest = hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()[:12]
            target = "%s-%s%s" % (stem, digest, ext)
            rec = {"key": key, "file": target, "size": st.st_size, "sha256": out_sha,
                   "stat": stats, "dirs": dirs, "outside": {p: deps[p] for p in stats},
                   "output": text.replace(src, "<generated %s>" % suffix.lstrip("."))}
            rec["deps"] = Deps(rec["outside"], dirs, full=deps)
            data = _manifest_bytes(rec)
            writing = ("the manifest %s" % DEPS, len(data))
            _write_new(tfd, DEPS, data, root.file_mode)
            os.rename(out, target, src_dir_fd=tfd, dst_dir_fd=efd)
            os.rename(DEPS, DEPS, src_dir_fd=tfd, dst_dir_fd=efd)
            os.fsync(efd)
            path = os.path.join(folder, target)
            _verified.add((path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
            return path, rec
        except OSError as e:
            if e.errno in _FULL:
                size = writing[1] if writing[1] is not None else _size(tmpdir)
                raise _disk_full(e, folder, writing[0], size) from None
            raise
        finally:
            os.close(tfd)
            shutil.rmtree(tmpdir, ignore_errors=True)
    raise changed.error(what)


def _output(root, tfd, tmpdir, out, ext, what):
    """(stat, SHA-256) of the compiler's output ``out`` in its private folder
    (``tfd``), checked to be a regular file of this user, given the entry's
    mode and fsync-ed."""
    fd = os.open(out, _O_READ, dir_fd=tfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise BuildError("%s left %s that is not a regular file of this user; not used"
                             % (what, os.path.join(tmpdir, out)))
        out_sha = sha256_fd(fd, st.st_size)[0]
        os.fchmod(fd, root.exec_mode if ext == ".so" else root.file_mode)
        os.fsync(fd)
        return os.fstat(fd), out_sha
    finally:
        os.close(fd)


class _Changed:
    """A file the compiler read that changed while it ran (``stamp``: its
    newest time, ns) or vanished (``stamp`` None)."""

    def __init__(self, path, stamp):
        self.path, self.stamp = path, stamp

    def error(self, what):
        how = ("%s changed while it was compiled" if self.stamp is not None else
               "%s, which the compiler read, vanished while it was compiled") % self.path
        return BuildError(
            "%s: %s, compiled %d times: bindthem caches a build only when what the compiler "
            "read is what it records. Build again once nothing writes it (an editor saving, a "
            "generator, a sync); a file whose times run ahead of this machine's clock (the "
            "server of a network file system) looks changed to every compile: set that clock "
            "right" % (what, how, COMPILE_TRIES), transient=True)


def _inputs(root, tfd, tmpdir, stem, src, start, system_dirs):
    """:func:`_record_deps` of the files the compiler read (its depfile, less
    its private folder), or a :class:`_Changed` when one of them vanished,
    or one outside the compiler's folders and outside the cache has an mtime
    or ctime not older than ``start`` (ns, taken a :func:`_stamp_lag` before
    the compiler ran): written while it may have been read. The cache's own
    files are named by their content and held while a compile reads them.
    An mtime ahead of now says nothing (a file unpacked from an archive made
    where the clock ran ahead): its ctime, which no one sets, still does."""
    text = _read_at(tfd, stem + ".d", root)
    paths = [] if text is None else [
        p for p in _parse_depfile(text.decode(errors="surrogateescape"))
        if not p.startswith(tmpdir + os.sep) and p != src]
    try:
        deps, stats, dirs = _record_deps(paths, system_dirs() if system_dirs else ())
    except FileNotFoundError as e:
        return _Changed(e.filename, None)
    now, ours = time.time_ns(), os.path.join(root.path, "")
    for p, (_, mtime, ctime, _) in stats.items():
        newest = max(ctime, mtime if mtime <= now else 0)
        if newest >= start and not p.startswith(ours):
            return _Changed(p, newest)
    return deps, stats, dirs


_lag: list[float] = []


def _stamp_lag():
    """Seconds a file's times may lag the clock: the kernel dates a write by
    its coarse clock (a tick behind), so a compiler started this long after
    ``start`` reads nothing written after it that is dated before it. Two
    ticks of CLOCK_REALTIME_COARSE (5 on Linux; time has no name for it)
    where it says, at least 2 ms; STAMP_LAG elsewhere."""
    if not _lag:
        try:
            tick = time.clock_getres(5) if sys.platform.startswith("linux") else 0.0
        except OSError:
            tick = 0.0
        _lag.append(min(max(2 * tick, 0.002), STAMP_LAG) if tick > 0 else STAMP_LAG)
    return _lag[0]


class _Entry:
    """An entry folder, open and locked: ``fd``, ``lock`` (an fd, or None in
    a read-only cache without a lock file), ``path``. ``parent``: the (fd,
    path) of the folder that holds it (a group's), else the cache's."""

    def __init__(self, root, name, parent=None):
        self.root, self.name = root, name
        self.dfd, self.dpath = parent if parent is not None else (root.fd, root.path)
        self.path = os.path.join(self.dpath, name)
        self.fd = self.lock = None

    def open(self, how):
        """Opens and locks (``fcntl.LOCK_SH``/``LOCK_EX``); retried when the
        folder was moved away (evicted) while we waited. False: a read-only
        cache that lacks the entry."""
        root = self.root
        while True:
            self.close()
            self.fd = _open_dir(root, self.dfd, self.dpath, self.name, root.writable)
            if self.fd is None:
                return False
            self.lock = _open_file(self.fd, LOCK, root, root.writable)
            if self.lock is None and root.writable:
                _set_aside(self.dfd, self.dpath, self.name)  # a lock that is a link, a FIFO...
                continue
            if self.lock is None:
                return True
            fcntl.flock(self.lock, how)
            if self.still_there():
                return True

    def relock(self, how):
        """Changes the lock (not atomic: the entry may have been evicted)."""
        fcntl.flock(self.lock, how)
        return self.still_there() or self.open(how)

    def still_there(self):
        try:
            st = os.stat(self.name, dir_fd=self.dfd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return st.st_ino == os.fstat(self.fd).st_ino and st.st_dev == os.fstat(self.fd).st_dev

    def close(self):
        for fd in (self.lock, self.fd):
            if fd is not None:
                os.close(fd)
        self.fd = self.lock = None


def compile_cached(*, key_parts, cache_dir, folder_name, stem, ext, source, suffix, command,
                   what, status=None, output=None, record=None, load=None, system_dirs=None):
    """Path of the output built from ``source`` (compiled by
    ``command(src, depfile, out)``, a list run as a process; or a function
    that compiles in-process, writes ``out`` and ``depfile`` itself and
    returns what the compiler printed), from the cache when fresh.
    With ``output``, the result is also copied there and that path returned.
    With ``load``, ``load(path)`` is called while the entry is locked (so it
    cannot be evicted before the library is loaded) and its result returned.
    ``what`` names the step in errors, ``status`` in the status line that a
    long build shows (see bindthem._status). A dict passed as ``record`` is
    filled with ``output`` (what the compiler printed), ``deps`` ({path:
    sha256} of the files it read) and ``fresh`` (whether it compiled now).
    ``system_dirs``: a function that returns the compiler's own include
    folders (called after a compile); a cache hit checks the files read from
    them by a stat of their folder, not of each file."""
    h = hashlib.sha256()
    for part in key_parts:
        h.update(part.encode() + b"\0")
    key = h.hexdigest()
    name = "%s-%s" % (folder_name, key[:24])
    root = open_root(cache_dir)
    while True:
        entry = _Entry(root, name)
        try:
            hit = entry.open(fcntl.LOCK_SH) and _hit(root, entry.fd, entry.path, key)
            if not hit and not root.writable:  # a read-only cache: build in the private one
                entry.close()
                root.__exit__()
                root = _private_root()
                continue
            fresh = not hit
            if fresh:
                entry.relock(fcntl.LOCK_EX)
                hit = _hit(root, entry.fd, entry.path, key)
                fresh = not hit
                hit = hit or _compile(root, entry.fd, entry.path, key, command, source,
                                      suffix, stem, ext, what, status or what, system_dirs)
            target, rec = hit
            if record is not None:
                record.update(output=rec.get("output", ""), deps=rec["deps"], fresh=fresh)
            if load is not None:
                result = load(target)
            elif output is not None:
                result = _copy_out(entry.fd, rec["file"], output)
            else:
                result = target
        finally:
            entry.close()
        break
    try:
        if fresh:
            sweep(root.path)
            limit = cache_limit()
            if limit is not None:
                evict(root.path, limit, keep=entry.path)
    finally:
        root.__exit__()
    return result


def _copy_out(efd, name, output):
    """Copies the entry's ``name`` to ``output`` (a path of the user's) through
    a new temporary file renamed into place."""
    output = os.path.abspath(os.fspath(output))
    folder, base = os.path.split(output)
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd = os.open(name, _O_READ, dir_fd=efd)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        _publish(dfd, base, data, None)
    finally:
        os.close(dfd)
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
