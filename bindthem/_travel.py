"""Pickling Libraries and Functions by value.

A Library made by :func:`bindthem.build` pickles as its kernel's source: the
header's text, instantiate.yml's text, the text of every file the compiler
read from the header's folder (its local includes), the compiler flags and
options; one made by :func:`bindthem.load` as the header and YAML texts plus
the shared library's path and SHA-256; a CUDA one (:func:`bindthem.cuda.load`
or ``build``) as the header and YAML texts plus the module image's bytes. A
Function or CUDA kernel pickles as that and its name, on its own, whether or
not its Library object still exists.

Unpickling binds, in this order:

1. the Library this process already has for that content (one it unpickled
   before, or the live original), so repeated unpickling costs a dict look-up;
2. for a build: the files at the original paths when they hold the carried
   text (same machine: a cache hit); otherwise the carried text, written to
   ``<cache>/sources/<hash>/`` and built there once. A header edited on the
   unpickling side is never used in place of the pickled one;
3. for a load: the library at the pickled path, only if its SHA-256 is the
   pickled one, else a :class:`bindthem.BindError` saying so;
4. for CUDA: the carried image, loaded as :func:`bindthem.cuda.load` would
   (so without a driver, :class:`bindthem.cuda.NoDriverError`).

A process keeps every Library it unpickles (the code stays mapped anyway).
"""

import hashlib
import os
import pickle
import threading
import weakref
from typing import Any

from .errors import BindError

__all__ = ["Source", "function", "library"]

_unpickled: dict[Any, Any] = {}  # key -> Library this process unpickled
# key -> Library made here by build/load
_live: "weakref.WeakValueDictionary[Any, Any]" = weakref.WeakValueDictionary()
_lock = threading.RLock()


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


class Source:
    """A kernel by value: what a Library's pickle carries.

    kind        "build", "load" or "cuda"
    name        the module name; strict as given
    header      the header's path on the machine that bound it, and its text
    instantiate the YAML's path (or None) and its text
    files       {path relative to the header's folder: text} of the local includes (build)
    cxx, flags  the compiler (None: the unpickling side's $CXX or c++) and all flags (build)
    cache_dir   the build cache given to build(), used where it exists
    library     the shared library's path and SHA-256 (load; the hash is taken on first
                need, checked against the file's stat at load time)
    options     {"gil": ..., "copy_const": ...} as given
    image       the CUDA module's bytes (cuda; library is then its file name, or "<bytes>")
    """

    __slots__ = ("kind", "name", "strict", "header", "header_text", "instantiate",
                 "yaml_text", "files", "cxx", "flags", "cache_dir", "library",
                 "library_hash", "library_stat", "options", "image", "_key")

    FIELDS = ("kind", "name", "strict", "header", "header_text", "instantiate", "yaml_text",
              "files", "cxx", "flags", "cache_dir", "library", "library_hash", "options",
              "image")

    def __init__(self, **fields):
        for f in self.FIELDS:
            setattr(self, f, fields.get(f))
        self.library_stat = fields.get("library_stat")
        self._key = fields.get("key")

    def __reduce__(self):
        fields = {f: getattr(self, f) for f in self.FIELDS}
        fields["key"] = self.key  # also takes a loaded library's hash
        fields["library_hash"] = self.library_hash
        return (_source, (fields,))

    def __repr__(self):
        return "<bindthem kernel source %s of %s>" % (self.key[:12], os.path.basename(self.header))

    def _library_hash(self):
        """The loaded library's SHA-256, taken from the file if it is still
        the one that was loaded."""
        if self.library_hash is None:
            st = os.stat(self.library)
            if (st.st_size, st.st_mtime_ns, st.st_ino) != self.library_stat:
                raise pickle.PicklingError(
                    "cannot pickle Library %r: its shared library %s has changed on disk since "
                    "it was loaded, so its SHA-256 would not be that of the code bound here; "
                    "load the new file under a new name and pickle that Library"
                    % (self.name, self.library))
            self.library_hash = _sha(_read(self.library))
        return self.library_hash

    @property
    def key(self):
        """SHA-256 over everything that makes the binding what it is (not the
        paths): equal keys bind the same code the same way."""
        if self._key is None:
            h = hashlib.sha256()
            parts = [self.kind, self.name, repr(bool(self.strict)), self.header_text,
                     self.yaml_text, repr(sorted((self.files or {}).items())), repr(self.cxx),
                     repr(self.flags), repr(sorted((self.options or {}).items(), key=str))]
            if self.kind == "load":
                parts.append(self._library_hash())
            if self.image is not None:
                parts.append(self.image)
            for p in parts:
                h.update(p if isinstance(p, bytes) else repr(p).encode())
                h.update(b"\0")
            self._key = h.hexdigest()
        return self._key

    # --- the unpickling side ---

    def _same_on_disk(self):
        """Whether the files at the original paths hold the carried text."""
        try:
            if _read(self.header) != self.header_text:
                return False
            if self.instantiate and _read(self.instantiate) != self.yaml_text:
                return False
            folder = os.path.dirname(self.header)
            return all(_read(os.path.join(folder, rel)) == text
                       for rel, text in (self.files or {}).items())
        except OSError:
            return False

    def _cache_dir(self):
        return self.cache_dir if self.cache_dir and os.path.isdir(self.cache_dir) else None

    def _materialise(self):
        """(header, instantiate) paths holding the carried text: the original
        files when unchanged, else copies under <cache>/sources/<key>/."""
        from . import _cache

        if self._same_on_disk():
            return self.header, self.instantiate
        for rel in self.files or {}:
            norm = os.path.normpath(rel)
            if os.path.isabs(norm) or norm.startswith(os.pardir):
                raise BindError("cannot unpickle %r: included file %r lies outside the header's "
                                "folder" % (self.name, rel))
        # made safely (no link followed, private modes), marked used
        folder = _cache.group_entry(self._cache_dir(), "sources", self.key[:24])
        header = _cache.write_once(folder, os.path.join("src", os.path.basename(self.header)),
                                   self.header_text)
        for rel, text in (self.files or {}).items():
            _cache.write_once(folder, os.path.join("src", os.path.normpath(rel)), text)
        inst = None
        if self.instantiate:
            inst = _cache.write_once(folder, os.path.join(
                "yml", os.path.basename(self.instantiate)), self.yaml_text)
        return header, inst

    def bind(self):
        """A new Library for this source (see the module docstring)."""
        if self.kind == "build":
            from .build import _build
            header, inst = self._materialise()
            return _build(header, inst, name=self.name, cxx=self.cxx, flags=list(self.flags),
                          cache_dir=self._cache_dir(), strict=self.strict,
                          options=self.options, source=self, quiet=True)
        if self.kind == "cuda":
            from .cuda import _bind
            header, inst = self._materialise()
            return _bind(self.image, header, inst, self.name, self.strict, self.library, self)
        from .library import _make
        if not os.path.exists(self.library):
            raise BindError(
                "cannot unpickle Library %r: its shared library %s is not on this machine. A "
                "pickle of bindthem.load() carries the library's path and SHA-256, not its code: "
                "put the same file there, or pickle a Library made by bindthem.build(), which "
                "carries its source and builds it where it is unpickled"
                % (self.name, self.library))
        now = _sha(_read(self.library))
        if now != self.library_hash:
            raise BindError(
                "cannot unpickle Library %r: the shared library %s is not the one pickled "
                "(SHA-256 %s..., pickled %s...); bindthem does not bind other code than was "
                "pickled. Put the pickled library there, or load this one and pickle again"
                % (self.name, self.library, now[:12], self.library_hash[:12]))
        header, inst = self._materialise()
        return _make(self.library, header, inst, self.name, self.strict, self, self.options)


def _write_once(path, data):
    """Writes bytes to path unless it already holds them, atomically."""
    from . import _cache

    _cache.write_once(os.path.dirname(path), os.path.basename(path), data)


def _source(fields):
    return Source(**fields)


def remember(lib, source):
    """Remembers a Library made here that is being pickled, so that
    unpickling in this process returns it."""
    _live[source.key] = lib


def library(source):
    """The Library for a pickled Source (pickle calls this)."""
    key = source.key
    lib = _live.get(key) or _unpickled.get(key)
    if lib is not None:
        return lib
    with _lock:
        lib = _live.get(key) or _unpickled.get(key)
        if lib is None:
            lib = source.bind()
            _unpickled[key] = lib
    return lib


def function(source, name):
    """A Function of the Library for a pickled Source (pickle calls this)."""
    return library(source).__dict__[name]
