"""Shared libraries sent once to every worker of a Dask client
(:func:`bindthem.send_to_workers`), ahead of the pickles of their kernels.

:func:`payload` gathers what one Library sends: its shared library (a
build's, a loaded or packaged one's, each instantiation made on demand
so far), as (SHA-256, bytes), read whole whatever $BINDTHEM_CARRY_BYTES says.
:class:`CarriedLibraries` is the ``distributed`` WorkerPlugin that writes
them into each worker's cache (``carried/``, as carried bytes are written:
bindthem._services.carry.receive, which refuses bytes that do not hash to
their SHA-256), on every worker when it is registered and on each one that
joins later. The pickles of those kernels then carry the SHA-256 alone
(carry.SENT), and a worker binds the bytes it received, hashed again as they
are mapped.

A service after travel. It imports ``distributed``, so nothing imports it
but ``send_to_workers`` and a worker that unpickles the plugin.
"""

import hashlib

from distributed.diagnostics.plugin import WorkerPlugin  # type: ignore[import-not-found, unused-ignore]

from . import carry

__all__ = ["CarriedLibraries", "payload"]


def payload(source):
    """[(SHA-256, bytes)] of the libraries a kernel source's pickle would
    carry (travel.Source: its library, and an open build's instantiations
    made so far); a CUDA one's none (its image travels in the pickle)."""
    if source.kind == "cuda":
        return []
    if source.binary is None:
        source.binary = carry.library_of(source)
    binaries = [source.binary]
    if source.on_demand is not None:
        carry.made_of(source)
        binaries += list((source.made or {}).values())
    out = []
    for binary in binaries:
        data = carry.bytes_of(binary) if binary is not None else None
        if data is not None:
            out.append((binary["sha256"], data))
    return out


class CarriedLibraries(WorkerPlugin):
    """Writes libraries, [(SHA-256, bytes)], into each worker's bindthem
    cache as the worker starts (or at once, on the workers there already).
    Named by its content: registering the same libraries again does
    nothing."""

    idempotent = True

    def __init__(self, libraries):
        self.libraries = sorted(set(libraries))
        names = "".join(sha for sha, _ in self.libraries).encode()
        self.name = "bindthem-libraries-" + hashlib.sha256(names).hexdigest()[:16]

    def setup(self, worker):
        for sha, data in self.libraries:
            carry.receive(sha, data)
