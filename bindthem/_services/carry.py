"""The shared library a kernel's pickle carries beside its source
(bindthem._services.travel's ``binary`` and ``made`` fields): what a
worker that cannot compile (or need not) loads instead of building.

:func:`carried` describes a library this process bound: its SHA-256, size,
path, the key of the source it was built from, what it needs of the machine
(:func:`platform_of`) and its bytes. :func:`as_carried` is what one pickle
carries of it ($BINDTHEM_CARRY_BYTES, $BINDTHEM_CARRY_LIBRARY).
:func:`unusable` says why this machine cannot run one, and
:func:`bind_carried` loads one, verified, from the path it names or from
its bytes through this process's cache (``carried/``). travel checks the
fields of a pickle that carries one and ties it to the source's key.
"""

import functools
import os
import sys

from .._base.files import read_upto, sha256_fd
from ..errors import BindError, PickleError
from . import loading
from .loading import LIBRARY_LIMIT, read_regular, sha256_hex

__all__ = ["CARRY_LIMIT", "SENT", "as_carried", "bind_carried", "bytes_of", "carried",
           "library_of", "made_of", "noting", "platform_of", "receive", "unusable"]

# bytes of a built library a pickle carries ($BINDTHEM_CARRY_BYTES; 0: none, only its
# path and SHA-256, which serve workers that see the same file)
CARRY_LIMIT = 4 << 20
_NATIVE = ("-march=native", "-mcpu=native", "-xHost")  # code for this CPU only


def _carry_limit():
    value = os.environ.get("BINDTHEM_CARRY_BYTES", "")
    try:
        return max(0, int(value)) if value.strip() else CARRY_LIMIT
    except ValueError:
        return CARRY_LIMIT


@functools.lru_cache(maxsize=None)
def _cpu_features():
    """A digest of this CPU's feature flags (/proc/cpuinfo), or "" unknown."""
    try:
        text = read_regular("/proc/cpuinfo", 16 << 20).decode("ascii", "replace")
    except OSError:
        return ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return sha256_hex(" ".join(sorted(value.split())).encode())[:16]
    return ""


@functools.lru_cache(maxsize=None)
def _machine():
    """(architecture, OS, C library, its version) of this process's machine:
    asked once (platform.libc_ver reads the interpreter's binary)."""
    import platform

    libc, version = platform.libc_ver()
    return platform.machine(), sys.platform, libc or "", version or ""


def platform_of(flags):
    """What a built library needs of the machine that loads it: the
    architecture and OS, the C library (name and version: the builder's
    or newer), and, when ``flags`` target this CPU (``-march=native``), the
    CPU's features. libstdc++ and libgomp are asked by the loader itself,
    whose error then says which version is missing."""
    machine, system, libc, version = _machine()
    native = any(f in _NATIVE or f.startswith("-march=native") for f in flags or ())
    return {"machine": machine, "system": system, "libc": libc, "libc_version": version,
            "cpu": _cpu_features() if native else ""}


def _version(text):
    return tuple(int(p) if p.isdigit() else 0 for p in text.split("."))


def unusable(binary):
    """Why the carried ``binary`` cannot run on this machine, or None."""
    have, need = platform_of(()), binary["platform"]
    for what, key in (("architecture", "machine"), ("operating system", "system"),
                      ("C library", "libc")):
        if have[key] != need[key]:
            return "it was built for %s %s, this machine's is %s" % (
                what, need[key] or "(unknown)", have[key] or "(unknown)")
    if _version(have["libc_version"]) < _version(need["libc_version"]):
        return "it needs %s %s or newer, this machine has %s" % (
            need["libc"], need["libc_version"], have["libc_version"])
    if need["cpu"] and need["cpu"] != _cpu_features():
        return ("it was compiled for the builder's own CPU (-march=native) and this CPU's "
                "features differ")
    return None


# SHA-256s of libraries whose bytes this process sent to every worker of a Dask
# client once (bindthem.send_to_workers): its pickles carry their hash, not their bytes
SENT: "set[str]" = set()


def bytes_of(binary):
    """All the bytes of the library ``binary`` names (whatever
    $BINDTHEM_CARRY_BYTES says), read from its path and checked against its
    SHA-256; None when the file no longer holds it."""
    if binary["data"] is not None:
        return binary["data"]
    try:
        data = read_regular(binary["path"], LIBRARY_LIMIT)
    except OSError:
        return None
    return data if sha256_hex(data) == binary["sha256"] else None


def receive(sha, data, cache_dir=None):
    """Library bytes sent ahead of the pickles (a worker's
    bindthem.send_to_workers plugin) into the cache's ``carried/``, where
    :func:`bind_carried` finds them when a pickle carries the hash alone.
    Bytes that do not hash to ``sha`` are a PickleError, never written.
    Returns the path written."""
    if sha256_hex(data) != sha:
        raise PickleError("the shared library sent to this worker does not hash to the SHA-256 "
                          "it was sent with (%s...): damaged in transit, not written" % sha[:16])
    from . import cache

    with cache.using_group(cache_dir, "carried", sha[:32]) as folder:
        return cache.write_once(folder, _carried_name(sha), data)


def _carried_name(sha):
    return "lib%s.so" % sha[:12]


def bind_carried(binary, name, cache_dir, bind):
    """(bind(opened, path), None) for the shared library ``binary``
    describes (:func:`carried`; a pickle of kernel ``name`` carried it),
    without compiling; or (None, why not). It is loaded from the path it
    names when that file, on this machine too, hashes to the carried SHA-256
    (a worker of the same machine, or one sharing the folder); else from the
    bytes carried, which must hash to it (PickleError otherwise: damaged in
    transit, never loaded), written to the cache ``cache_dir`` (None: this
    process's; ``carried/``) and loaded from there. Either file is hashed as
    it is mapped (bindthem._services.loading); ``opened.name`` is what
    bind() opens. A BindError of bind (the loader's refusal) is a why."""
    why = unusable(binary)
    if why is not None:
        return None, why
    sha, path, data = binary["sha256"], binary["path"], binary["data"]
    try:
        return bind(loading.open_checked(path, sha, LIBRARY_LIMIT), path), None
    except (OSError, loading.Mismatch):
        pass
    except BindError as e:
        return None, "binding it failed: %s" % e
    if data is not None and sha256_hex(data) != sha:
        raise PickleError(
            "cannot unpickle bindthem kernel %r: the shared library it carries does not hash to "
            "the SHA-256 it carries (%s...): the pickle was damaged in transit. bindthem loads "
            "nothing from it; pickle the Library again where it was made" % (name, sha[:16]))
    from . import cache  # the build cache: only carried bytes need it

    try:
        with cache.using_group(cache_dir, "carried", sha[:32]) as folder:
            if data is None:  # sent ahead (send_to_workers), or an earlier pickle's: hashed
                copy = os.path.join(folder, _carried_name(sha))  # as it is mapped
                if not os.path.isfile(copy):
                    return None, (
                        "its bytes did not travel (more than $BINDTHEM_CARRY_BYTES, or sent once "
                        "per worker by bindthem.send_to_workers, which this worker has not "
                        "received) and %s is not that library on this machine" % path)
            else:
                copy = cache.write_once(folder, _carried_name(sha), data)
            return bind(loading.open_checked(copy, sha, LIBRARY_LIMIT), copy), None
    except (OSError, BindError, loading.Mismatch) as e:  # the loader's refusal
        return None, "loading it failed: %s" % (e,)


def carried(path, flags, key, sha256=None):
    """The ``binary`` a pickle of a build carries for the library at
    ``path`` (this process's, in the build cache, built from the source of
    ``key``): its SHA-256 and size, the path, the key, the platform
    (:func:`platform_of`) and its bytes, when at most $BINDTHEM_CARRY_BYTES
    (a larger one is hashed as it is read, not kept; not read at all when its
    ``sha256`` is known); None when it cannot be read. Each pickle then
    carries what :func:`as_carried` keeps of it."""
    try:
        fd, st = loading.open_regular(path, LIBRARY_LIMIT)
    except OSError:
        return None
    try:
        if st.st_size <= _carry_limit():
            data = read_upto(fd, st.st_size, LIBRARY_LIMIT)
            sha, size = sha256_hex(data), len(data)
        elif sha256 is not None:
            data, sha, size = None, sha256, st.st_size
        else:
            data = None
            sha, size = sha256_fd(fd, st.st_size, LIBRARY_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
    return {"sha256": sha, "size": size, "path": path, "key": key,
            "platform": platform_of(flags), "data": data}


def as_carried(binary):
    """What a pickle carries of ``binary``: nothing when
    $BINDTHEM_CARRY_LIBRARY is 0 (the source alone: every worker builds), its
    bytes only when at most $BINDTHEM_CARRY_BYTES (default CARRY_LIMIT) and
    not sent to the workers ahead (:data:`SENT`)."""
    if binary is None or os.environ.get("BINDTHEM_CARRY_LIBRARY", "1").strip() == "0":
        return None
    if binary["data"] is not None and (len(binary["data"]) > _carry_limit()
                                       or binary["sha256"] in SENT):
        return dict(binary, data=None)
    return binary


def noting(error, why):
    """error (a bindthem exception: its message is its first argument, its
    other fields stay), its message followed by why the library the pickle
    carried was not used, when there is a why."""
    if why is not None:
        error.args = ("%s\n(the shared library the pickle carries was not used: %s)"
                      % (error.args[0], why),) + error.args[1:]
    return error


def library_of(source):
    """The library a travel.Source's process binds, as :func:`carried`
    describes it: a build's from the cache (``source.built``); a loaded or
    packaged one's only while the file still hashes to the SHA-256 bound
    (its bytes are compared when they travel; a larger file is named by its
    path and that SHA-256, which the worker checks before loading it)."""
    if source.kind == "build":
        return carried(source.built, source.flags, source.key) if source.built else None
    path = source.built or (source.library if source.kind == "load" else None)
    sha = source._library_hash()
    binary = carried(path, (), source.key, sha) if path else None
    return binary if binary is not None and binary["sha256"] == sha else None


def made_of(source):
    """An open build's instantiations made on demand, as one pickle carries
    them (:func:`as_carried`): {"name|C types": binary} of those whose
    library this process made (``source.made_paths``) or received
    (``source.made``, which keeps them all), or None."""
    made = dict(source.made or {})
    for name, types in list(source.on_demand):
        entry = "%s|%s" % (name, ",".join(types))
        path = source.made_paths.get((name, tuple(types)))
        if entry not in made and path is not None:
            binary = carried(path, source.flags, source.key)
            if binary is not None:
                made[entry] = binary
    if source.made is None or len(made) != len(source.made):
        source.made = made
    kept = {k: as_carried(b) for k, b in made.items()}
    return {k: b for k, b in kept.items() if b is not None} or None
