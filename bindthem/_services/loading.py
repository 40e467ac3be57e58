"""What bindthem hands the dynamic loader for a library file, so that the
bytes that were checked are the bytes that run.

glibc's ``dlopen`` returns an object it has loaded already, without reading
the file, when one has the same name or (once the file is opened) the same
device and inode; bindthem's libraries stay loaded for the life of the
process (``RTLD_NODELETE``). A library replaced at its path (a rebuild, a
package upgrade) and loaded again would then run its old code, bound against
the new header and vouched for by the new file's SHA-256. :func:`open_checked`
is the one way :func:`bindthem.load`, unpickling a loaded Library and
:func:`bindthem.load_package` (and its pickles) reach a library file. It
opens the file once, hashes that descriptor when a SHA-256 is expected (and
refuses before anything is loaded when it differs), loads the object itself
and returns the name under which the loader now finds it, which bind()'s
``dlopen`` of that name returns:

1. a bare soname (no ``/``) goes to the loader as it is (its search path);
2. a file this module loaded before with the same identity (device, inode,
   size, mtime and ctime: what the build cache trusts too) is the object
   loaded then, under the name it was loaded by (a second load_package of an
   unchanged package neither hashes nor copies);
3. a path under which no object is loaded, and whose file no object maps, is
   loaded by its path, as before (so ``$ORIGIN`` rpaths and page sharing
   between processes keep working); the path must still have the identity
   checked just before, and after, the load, and the object's code and
   read-only data (its segments mapped without write permission) must be
   the bytes at the same offsets of the descriptor that was hashed. Else
   rule 4 applies, copying from that descriptor; an object the loader
   mapped from another file (one put at the path in the microseconds between
   the last check and the loader's open) has run its initialisers, but is
   never bound;
4. otherwise (an object of that name or inode is loaded with another
   identity: the file was replaced by rename, or rewritten in place; or it is
   one another part of the process loaded and a SHA-256 is expected) the
   file's current bytes are copied, hashed as they are copied, into a private
   file loaded under a name no other object has: a sealed ``memfd``, loaded
   as ``/proc/self/fd/N``, whose descriptor stays open for the life of the
   process (glibc matches loaded objects by name, so that number must never
   name another library); where a memfd cannot be made or mapped executable,
   and after :data:`MEMFDS_KEPT` of them (each holds a descriptor), a 0500
   file in a private 0700 folder of the temporary directory, removed at exit.
   A copy's ``$ORIGIN`` is not the original's folder: its dependencies are
   found by soname among those already loaded (the original's), or on the
   search path.

A descriptor read (hashed or copied) must keep its size and mtime while it
is read (its ctime changes when the file is renamed over), else
:class:`Unreadable`; a hash is then compared with the expected one.

An object another part of the process loaded under the path (``ctypes``) is
taken by a plain :func:`bindthem.load` only when its code is the file's (3's
comparison); with a SHA-256 expected it is copied, since this module cannot
know that its data segments were not read from an older file.

What a Library reports: ``lib.__file__`` is the path asked for;
``bindthem.info(lib).handle.path`` is the name the loader opened (the path,
or the copy's). Its pickle carries the SHA-256 of the bytes it runs: known
when they were hashed or copied here, else taken at pickling from the file
if its identity is still the one loaded.

An object is never unloaded: each file identity loaded in a process maps one
more object (docs/build.rst, "A long-lived process", measures it). A library file
rewritten in place while a process maps it changes that process's mapped code
(the kernel shares the file's pages): only a new Library is protected; a
replacement by rename (what installers and bindthem's own writes do) leaves
the old Library's code as it was.
"""

import atexit
import errno
import fcntl
import hashlib
import os
import shutil
import stat
import tempfile
import threading
from typing import NamedTuple

from .. import _core
from .._base.files import read_upto, sha256_fd

__all__ = ["LIBRARY_LIMIT", "Mismatch", "Opened", "Unreadable", "hashed_bytes", "identity",
           "open_checked", "open_regular", "read_regular", "sha256_hex"]

# bytes of a shared library hashed or read at a path a pickle or manifest names, or of a
# CUDA image carried: larger is refused
LIBRARY_LIMIT = 1 << 30

_CHUNK = 1 << 20
MEMFDS_KEPT = 64  # copies kept as memfds (one descriptor each); later ones are temporary files
_MFD_EXEC = getattr(os, "MFD_EXEC", 0x10)  # Linux 6.3: say it, or the kernel warns
_SEALS = (getattr(fcntl, "F_SEAL_SEAL", 1) | getattr(fcntl, "F_SEAL_SHRINK", 2)
          | getattr(fcntl, "F_SEAL_GROW", 4) | getattr(fcntl, "F_SEAL_WRITE", 8))

_lock = threading.Lock()
# file identity -> [the name its object was loaded by, its SHA-256 or None, a copy?]
_by_identity: dict[tuple, list] = {}
# link map address -> the identity its file had when loaded here (None: not shown)
_objects: dict[int, tuple | None] = {}
_kept: list[int] = []  # memfds whose /proc/self/fd/N names a loaded copy: never closed
_counts = {"hashed": 0}  # bytes hashed or copied (tests)


def _after_fork():
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it


os.register_at_fork(after_in_child=_after_fork)


class Opened(NamedTuple):
    """What :func:`open_checked` loaded."""

    name: str  # what to dlopen: the path, a copy's name, or a bare soname
    path: str  # the file asked for
    sha256: str | None  # of the bytes the object maps, when known
    identity: tuple | None  # the file's identity when checked (None: a bare soname)
    copied: bool


class Mismatch(Exception):
    """The file's SHA-256 is not the one expected (``found``); nothing was loaded."""

    def __init__(self, found):
        super().__init__(found)
        self.found = found


class Unreadable(OSError):
    """The file could not be read, or changed while it was; nothing was loaded."""


def identity(st):
    """(device, inode, size, mtime, ctime) of an os.stat result."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def hashed_bytes():
    """Bytes this process hashed or copied here (tests)."""
    return _counts["hashed"]


def open_checked(path, sha256=None, limit=None):
    """Loads the library file ``path`` (rules in the module docstring) and
    returns an :class:`Opened` whose ``name`` bind() opens. With ``sha256``,
    the file must hash to it (:class:`Mismatch` otherwise, nothing loaded)
    and be a regular file of at most ``limit`` bytes; reading errors are
    :class:`Unreadable`. Without, a file that cannot be opened goes to the
    loader by its path, which says why. Loader errors are its OSError."""
    if "/" not in path:
        return Opened(path, path, None, None, False)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if sha256 is None:
            return Opened(path, path, None, None, False)
        raise Unreadable(e.errno, e.strerror, path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            if sha256 is None:
                return Opened(path, path, None, None, False)  # the loader says what it is
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a folder"
                    if stat.S_ISDIR(st.st_mode) else "a device or socket")
            raise Unreadable(errno.EINVAL, "not a regular file (%s)" % kind, path)
        if limit is not None and st.st_size > limit:
            raise Unreadable(errno.EFBIG, "%d bytes, more than bindthem reads at a pickled "
                             "path (%d)" % (st.st_size, limit), path)
        ident = identity(st)
        known = _by_identity.get(ident)
        digest = known[1] if known else None
        if sha256 is not None and digest is None:
            digest = _hash(fd, ident, path)
        if sha256 is not None and digest != sha256:
            raise Mismatch(digest)
        with _lock:
            return _open(fd, path, ident, digest, sha256)
    finally:
        os.close(fd)


def _hash(fd, ident, path):
    """SHA-256 of the file at fd, which must not change while it is read."""
    digest, n = sha256_fd(fd, ident[2])
    _counts["hashed"] += n
    _unchanged(fd, ident, path)
    return digest


def _unchanged(fd, ident, path):
    """Unreadable if the file at fd was written since ident: its size or
    mtime (not its ctime, which a rename over the file changes too)."""
    if identity(os.fstat(fd))[:4] != ident[:4]:
        raise Unreadable(errno.EAGAIN, "changed while it was read", path)


def _open(fd, path, ident, digest, sha256):
    """open_checked's rules 2 to 4, under the lock."""
    known = _by_identity.get(ident)
    if known is not None:
        if digest is not None:
            known[1] = digest
        return Opened(known[0], path, known[1], ident, known[2])
    found = _core._loaded(path)  # an object of this name or inode, without loading one
    if found is None and _still(path, fd, ident):  # (a replacement since: copy what was hashed)
        obj, same = _core._loaded(path, load=True, fd=fd)
        if same and _still(path, fd, ident):
            return _keep(obj, ident, path, path, digest, False)
        _objects.setdefault(obj, None)  # not shown to be this file's: never taken
    elif found is not None and sha256 is None and found[0] not in _objects:
        # another part of the process loaded it (ours, of another identity, never
        # has its code compared: rewritten in place, its pages may lie past the end)
        if _core._loaded(path, fd=fd)[1] and _still(path, fd, ident):
            return _keep(found[0], ident, path, path, digest, False)
    return _copy(fd, path, ident, sha256)


def _still(path, fd, ident):
    """Whether path and fd still have the identity that was checked."""
    try:
        return identity(os.stat(path)) == ident == identity(os.fstat(fd))
    except OSError:
        return False


def _keep(obj, ident, name, path, digest, copied):
    _objects[obj] = ident
    _by_identity[ident] = [name, digest, copied]
    return Opened(name, path, digest, ident, copied)


def _copy(fd, path, ident, sha256):
    """Rule 4: a private copy of fd's bytes, hashed as copied, loaded."""
    base = os.path.basename(path)
    out, name = _memfd(base)
    if out < 0:
        out, name = _temp_file(base)
    try:
        digest = _fill(fd, out)
        _unchanged(fd, ident, path)
        if sha256 is not None and digest != sha256:
            raise Mismatch(digest)  # changed since it was hashed, by a write within a tick
        if name.startswith("/proc/"):
            fcntl.fcntl(out, fcntl.F_ADD_SEALS, _SEALS)
            try:
                obj = _core._loaded(name, load=True)[0]
            except OSError:  # memfds are not executable here (vm.memfd_noexec, a policy)
                memfd, out = out, -1
                out, name = _to_temp(memfd, base)
            else:
                _kept.append(out)
                out = -1
                return _keep(obj, ident, name, path, digest, True)
        os.fchmod(out, 0o500)
        return _keep(_core._loaded(name, load=True)[0], ident, name, path, digest, True)
    finally:
        if out >= 0:
            os.close(out)  # a temporary file's descriptor, or a copy not loaded


def _to_temp(memfd, base):
    """A temporary file holding the memfd's bytes (the memfd is closed)."""
    try:
        out, name = _temp_file(base)
        try:
            _fill(memfd, out)
        except BaseException:
            os.close(out)
            raise
    finally:
        os.close(memfd)
    return out, name


def _memfd(base):
    """(fd, /proc/self/fd/N) of a new sealable memfd, or (-1, None)."""
    if (len(_kept) >= MEMFDS_KEPT or not hasattr(os, "memfd_create")
            or not os.path.isdir("/proc/self/fd")):
        return -1, None
    flags = os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING
    for extra in (_MFD_EXEC, 0):  # a kernel before 6.3 knows no MFD_EXEC
        try:
            fd = os.memfd_create("bindthem:" + base, flags | extra)
        except OSError:
            continue
        return fd, "/proc/self/fd/%d" % fd
    return -1, None


def _temp_file(base):
    """(fd, path) of a new file in a private folder, removed at exit."""
    folder = tempfile.mkdtemp(prefix="bindthem-lib-")  # 0700, a new name
    atexit.register(shutil.rmtree, folder, True)
    name = os.path.join(folder, base)
    return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o700), name


def _fill(src, out):
    """Copies src's bytes (from its start) to out; returns their SHA-256."""
    h, n = hashlib.sha256(), 0
    os.lseek(src, 0, os.SEEK_SET)
    while True:
        b = os.read(src, _CHUNK)
        if not b:
            break
        h.update(b)
        n += len(b)
        view = memoryview(b)
        while view:
            view = view[os.write(out, view):]
    _counts["hashed"] += n
    return h.hexdigest()


def sha256_hex(data):
    """The SHA-256 of bytes data, in hex."""
    return hashlib.sha256(data).hexdigest()


def open_regular(path, limit):
    """(fd, stat) of path, opened O_NONBLOCK, when it is a regular file of at
    most limit bytes; OSError otherwise, at once: a FIFO opened for reading
    without a writer would block, and /dev/zero never ends."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a folder"
                    if stat.S_ISDIR(st.st_mode) else "a device or socket")
            raise OSError(errno.EINVAL, "not a regular file (%s)" % kind, path)
        if st.st_size > limit:
            raise OSError(errno.EFBIG, "%d bytes, more than bindthem reads at a pickled path "
                          "(%d)" % (st.st_size, limit), path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path, limit, size=None):
    """The bytes of a regular file of at most limit bytes (see open_regular);
    None when size is given and the file's is another (no read needed)."""
    fd, st = open_regular(path, limit)
    try:
        if size is not None and st.st_size != size:
            return None
        data = read_upto(fd, st.st_size, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, "grew past %d bytes while read" % limit, path)
    return data
