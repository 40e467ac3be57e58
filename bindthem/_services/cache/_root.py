"""The cache folder: where it is, the names of its layout, and whom it trusts.

``open_root`` opens the folder bindthem uses for a ``cache_dir``: that cache
when its owner and mode are trusted (``_untrusted``: owned by the user or
root, writable by no one else, unless ``$BINDTHEM_CACHE_GROUP`` opts a group
in), else, after a warning, this user's private cache (``_private_root``).
The bottom of bindthem._services.cache: it imports none of its other modules.
"""

import errno
import grp
import os
import pwd
import re
import stat
import tempfile
import threading

from ...errors import BuildWarning, warn

DEPS = "deps.json"
LOCK = ".lock"
# folders whose subfolders are entries of their own
GROUPS = ("cells", "sources", "compilers", "on-demand", "carried")
TEMP_PREFIX = ".build-"  # a build's private folder inside its entry
REMOVED = ".removed-"  # <entry>.removed-<pid>-<ns>: an entry being removed
MAX_MANIFEST = 16 << 20
_TEMP = re.compile(r"^(?:\.build-.*|.*\.tmp(\d+).*|tmp\w{8}\.(?:cpp|cu|d))$")
_O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_O_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_ONLY = (errno.EROFS, errno.EACCES, errno.EPERM)
_warned: set[str] = set()
_private: list[str] = []  # this process's private cache, once chosen
_private_lock = threading.Lock()


def cache_root(cache_dir=None):
    """``cache_dir``, else ``$BINDTHEM_CACHE``, else ``~/.cache/bindthem``
    (the folder asked for; :func:`resolve` says which one is used)."""
    return os.path.abspath(os.fspath(
        cache_dir or os.environ.get("BINDTHEM_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "bindthem")))


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
