"""The translation unit a build compiles, and the snapshot of the header it includes.

The unit is the prelude (:data:`PRELUDE`), an ``#include`` of the header and
one explicit instantiation per overload that instantiate.yml lists, written
from the same metadata that binds them (:func:`_source_of`). The compiler
never reads the header's path: the unit includes a snapshot of the bytes the
Plan parsed, written into the build's private folder (:func:`write_snapshot`),
with the header's folder on the quote include path (:func:`snapshot_flags`).
Used by the CPU build, instantiation on demand and CUDA's compilers.
"""

from __future__ import annotations

import os

from ... import _core

__all__ = ["PRELUDE", "instantiation_source", "snapshot_flags", "snapshot_name",
           "write_snapshot"]

# Headers written for pybind11 bindings lean on what pybind11 includes (pyamg's
# linalg.h uses std::vector without <vector>), so the generated source
# includes the common standard headers before the kernel header.
PRELUDE = "".join("#include <%s>\n" % h for h in (
    "algorithm", "cmath", "complex", "cstddef", "cstdint", "cstdlib", "cstring", "iostream",
    "limits", "stdexcept", "string", "utility", "vector"))


def instantiation_source(header, instantiate=None, *, strict=False):
    """The C++ source bindthem.build compiles for ``header``: the header and an
    explicit instantiation of every templated overload. (A build includes a
    snapshot of the header's bytes instead of the header's path, see
    :func:`write_snapshot`; this text includes the header where it is.)"""
    meta = _core.parse_header(header, instantiate, strict=strict, brief=True)
    return _source_of(os.path.abspath(header), meta)


def _source_of(include, meta, share=None):
    """The one translation unit, including ``include`` (the snapshot's name,
    or a header's path), or, given ``share`` (instantiation lines), one of
    several that each include it and instantiate their share."""
    lines = [PRELUDE.rstrip("\n"), '#include "%s"' % include, ""]
    lines += _instantiations(meta) if share is None else share
    return "\n".join(lines) + "\n"


def snapshot_name(header):
    """What a build's translation unit includes: the snapshot of the header
    (:func:`write_snapshot`), beside it in the build's private folder."""
    return os.path.basename(header)


def _c_string(path):
    return os.fsencode(path).replace(b"\\", b"\\\\").replace(b'"', b'\\"')


def write_snapshot(folder, plan):
    """Writes the bytes ``plan`` parsed (a :class:`_core.Plan`) into
    ``folder`` (a build's private folder, beside the translation unit) as
    the file the unit includes, and returns its path: the compiler reads
    exactly the bytes the cache key hashed and the Library binds, never the
    header's path again. A ``#line`` first makes diagnostics and
    ``__FILE__`` name the header; the compile gets the header's folder on
    its quote include path (:func:`snapshot_flags`), so local includes are
    found as before (and checked after the compile, bindthem._services.cache)."""
    text, bom = plan.header_text, b""
    if text.startswith(b"\xef\xbb\xbf"):  # a byte order mark stays first
        text, bom = text[3:], text[:3]
    path = os.path.join(folder, snapshot_name(plan.header))
    with open(path, "xb") as f:
        f.write(bom + b'#line 1 "%s"\n' % _c_string(plan.header) + text)
    return path


def snapshot_flags(folder, option="-iquote"):
    """The options that let a snapshot's ``#include "..."`` find what the
    header's would: ``folder`` (the header's, or a copy of it) on the quote
    include path."""
    return [option, folder]


def _instantiations(meta):
    return [ov["instantiation"] for fn in meta["functions"] for ov in fn["overloads"]
            if ov["instantiation"]]
