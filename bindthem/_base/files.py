"""Reading a file that is already open, sized by its fstat: one read of the
whole file where a fixed chunk would make Python allocate (and give back) a
buffer of the chunk's size on every call. Used by the build cache and by
what travels in pickles. And the sources a build reads, read once per
process while their stat is unchanged; and a file written whole or not at
all (stubs, manifests)."""

import hashlib
import os

_MORE = 1 << 16  # what a file that grew since its fstat is read in, beyond its size
# path: ((inode, device, size, mtime, ctime), bytes) of the sources read_source read
_sources: dict[str, tuple[tuple[int, int, int, int, int], bytes]] = {}
# (path, identity): the SHA-256 of the bytes read_source keeps for it
_digests: dict[tuple[str, tuple[int, int, int, int, int]], str] = {}


def _identity(st):
    return st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read_source(path):
    """The bytes of the file ``path`` (a header, a YAML, a local include). A
    file this process read before whose inode, device, size, mtime and ctime
    are those it had then is not read again: a write changes its ctime, a
    replacement its inode (the build cache trusts the same stat to skip
    hashing a dependency). Several headers that include one file, or share
    one YAML, read it once."""
    st = os.stat(path)
    ident = _identity(st)
    known = _sources.get(path)
    if known is not None and known[0] == ident:
        return known[1]
    with open(path, "rb") as f:
        data = f.read()
        if _identity(os.fstat(f.fileno())) == ident:  # not changed while read
            if len(_sources) >= 1024:  # files a long session no longer reads are let go
                _sources.clear()
            _sources[path] = (ident, data)
    return data


def read_source_as(path, sha256):
    """read_source(path) when its bytes have the SHA-256 ``sha256`` (hex),
    else None: a build's local include read after the compile is the one
    the compiler read (the manifest's hash) or is not taken. The digest of
    bytes read_source keeps is taken once."""
    data = read_source(path)
    known = _sources.get(path)
    key = (path, known[0]) if known is not None and known[1] is data else None
    digest = _digests.get(key) if key is not None else None
    if digest is None:
        digest = hashlib.sha256(data).hexdigest()
        if key is not None:
            if len(_digests) >= 1024:
                _digests.clear()
            _digests[key] = digest
    return data if digest == sha256 else None


def read_upto(fd, size, limit):
    """The bytes of ``fd`` from its position, at most ``limit + 1`` (one more
    than the caller takes: a longer file is one that grew past it); ``size``
    is its size by fstat, read in one call when it has not changed."""
    parts, n = [], 0
    want = min(size, limit) + 1
    while n <= limit:
        b = os.read(fd, min(max(want - n, _MORE), limit + 1 - n))
        if not b:
            break
        parts.append(b)
        n += len(b)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def sha256_fd(fd, size, limit=None):
    """(SHA-256 hex digest, bytes read) of ``fd`` from its position, read in
    pieces of at most 1 MiB (``size``: its fstat size); stops after more than
    ``limit`` bytes when a limit is given."""
    h, n = hashlib.sha256(), 0
    while limit is None or n <= limit:
        b = os.read(fd, min(max(size + 1 - n, _MORE), 1 << 20))
        if not b:
            break
        h.update(b)
        n += len(b)
    return h.hexdigest(), n


def write_text(path, text):
    """Writes ``text`` to ``path`` (its folder made if need be) through a
    temporary file renamed over it: a reader sees the old file or the new
    one, never part of it."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)
