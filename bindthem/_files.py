"""Reading a file that is already open, sized by its fstat: one read of the
whole file where a fixed chunk would make Python allocate (and give back) a
buffer of the chunk's size on every call. Used by the build cache and by
what travels in pickles."""

import hashlib
import os

_MORE = 1 << 16  # what a file that grew since its fstat is read in, beyond its size


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
