"""An entry of the cache: hit, lock, compile, verify; and the group entries held while used.

``compile_cached`` opens the entry named by its key, takes a shared lock,
and uses a verified hit (``_manifest._hit``); otherwise it takes the lock
exclusively and compiles (``_compile``: in a private folder inside the
entry, the output checked, hashed and renamed in, then the manifest; again
while what the compiler read changed while it ran, ``_inputs``). The
compiler's commands run through ``run_commands``; ``_failure`` says whether
a failure is transient. ``using_group`` holds a group entry (``cells/*``,
``sources/*``, ...) while its files are written and read.
"""

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import stat
import sys
import tempfile
import time

from ..._base.files import sha256_fd
from ...errors import BuildError
from .. import status as _status
from ._evict import _size, cache_limit, evict, sweep
from ._fs import (
    _FULL,
    _disk_full,
    _open_dir,
    _open_file,
    _plain,
    _publish,
    _read_at,
    _remove_at,
    _set_aside,
    _write_new,
    write_once,
)
from ._manifest import Deps, _hit, _manifest_bytes, _parse_depfile, _record_deps, _verified
from ._root import (
    _O_DIR,
    _O_READ,
    _TEMP,
    DEPS,
    LOCK,
    MAX_MANIFEST,
    TEMP_PREFIX,
    _private_root,
    open_root,
)

COMPILE_TRIES = 3  # compiles of one miss while what the compiler read keeps changing
STAMP_LAG = 0.02  # seconds a file's times may lag the clock, where the kernel cannot say


# --- the compiler's flags and commands ---------------------------------------------


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


# --- building and hitting --------------------------------------------------------


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
    long build shows (see bindthem._services.status). A dict passed as ``record`` is
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


# --- group entries: held while they are used ------------------------------------


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
