"""Files and folders of the cache, opened relative to a folder's descriptor.

Nothing here follows a link: an entry's folders are opened with
``O_NOFOLLOW`` and checked to be trusted (``_open_dir``, ``_open_file``);
new files are created ``O_EXCL``, fsync-ed and renamed into place
(``_write_new``, ``_publish``, ``write_once``); what is in the way is
renamed aside before it is removed (``_set_aside``). A full disk is a
transient BuildError naming the cache (``_disk_full``).
"""

import errno
import os
import secrets
import shutil
import stat
import time

from ..._base.files import read_upto
from ...errors import BuildError
from ._root import (
    _O_DIR,
    _O_NEW,
    _O_READ,
    MAX_MANIFEST,
    REMOVED,
    Root,
    _shared_group,
    _untrusted,
)

_FULL = (errno.ENOSPC, errno.EDQUOT)


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


def write_once(folder, rel, data):
    """Writes bytes ``data`` to ``folder/rel`` unless it holds them already:
    subfolders made 0700 and walked without following links, the file
    published atomically (:func:`_publish`). ``folder`` is trusted (from
    :func:`using_group`, held); ``rel`` must stay inside it. Returns the path."""
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
