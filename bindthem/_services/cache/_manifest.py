"""An entry's manifest (``deps.json``): what a build read, and whether it still holds.

The manifest records the output's name, size and SHA-256, the entry's key,
the SHA-256 of every file the compiler read (its ``-MD`` depfile:
``_parse_depfile``, ``_record_deps``) and the stat keys (``_stat_key``)
that spare a hit from re-hashing them: the head on the first JSON line,
every file's hash on the second (``_manifest_bytes``, ``read_manifest``,
``Deps``). ``_hit`` decides whether an entry holds a verified build whose
inputs are unchanged.
"""

import hashlib
import json
import os
import shlex
import stat
from collections.abc import Mapping

from ..._base.files import sha256_fd
from ...errors import BuildError
from ._fs import _plain, _publish, _read_at
from ._root import _O_READ, DEPS, LOCK, _untrusted

# (path, dev, inode, size, mtime_ns) of the outputs whose SHA-256 this process checked
_verified: set[tuple[str, int, int, int, int]] = set()


def hash_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


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
