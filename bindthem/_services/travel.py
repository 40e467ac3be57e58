"""Pickling Libraries and Functions by value.

A Library made by :func:`bindthem.build` pickles as its kernel's source: the
header's text, instantiate.yml's text, the text of every file the compiler
read from the header's folder (its local includes), the compiler flags and
options; one made by :func:`bindthem.load` as the header and YAML texts plus
the shared library's path and SHA-256; one made by
:func:`bindthem.load_package` as those texts plus the package's name and the
library's path in it and SHA-256; a CUDA one (:func:`bindthem.cuda.load`
or ``build``) as the header and YAML texts plus the module image's bytes. A
Function or CUDA kernel pickles as that and its name, on its own, whether or
not its Library object still exists.

Unpickling first checks what the pickle carries (:func:`check`): every
field's type and size, every carried name a plain relative path, and the
content hash recomputed over the carried text, which must be the pickle's
(:class:`bindthem.PickleError` otherwise, before anything is written,
compiled, loaded or remembered). Then it returns, in this order:

1. the Library this process already has for that content (one it unpickled
   before, or the live original), so repeated unpickling costs a dict look-up;
2. else a stand-in that binds on first use, in the thread that uses it
   (:mod:`bindthem._unpickle`), so that unpickling itself never compiles nor
   fails for want of a compiler, a library or a driver.

Binding (:func:`bindthem._unpickle.bind`) then takes:

1. for a build: the files at the original paths when they hold the carried
   text (same machine: a cache hit); otherwise the carried text, written to
   ``<cache>/sources/<hash>/`` and built there once. A header edited on the
   unpickling side is never used in place of the pickled one;
2. for a load: the library at the pickled path, only if its SHA-256 is the
   pickled one, else a :class:`bindthem.BindError` saying so; the bytes
   hashed are the bytes loaded (:mod:`bindthem._services.loading`: a file replaced
   since this process loaded that path runs its new code);
3. for a package (:func:`bindthem.load_package`): this process's installed
   copy of the package, found without importing it, and its library only if
   its SHA-256 is the pickled one (a :class:`bindthem.PickleError` when the
   package is not installed or another version of it is);
4. for CUDA: the carried image, loaded as :func:`bindthem.cuda.load` would
   (so without a driver, :class:`bindthem.cuda.NoDriverError`).

A built (not open), loaded or packaged Library's pickle also carries the
shared library this process bound (bindthem._services.carry: its SHA-256, path,
platform and, up to $BINDTHEM_CARRY_BYTES, its bytes), tied to the source's
key; a worker uses it before compiling or where its own file is missing or
other (bindthem._unpickle.bind, docs/dask.rst "Workers without a compiler").

Every file read on the unpickling side at a carried path (the originals
compared, the library hashed) is opened ``O_NONBLOCK`` and must be a regular
file of bounded size: a FIFO or a device is refused at once.

A process keeps every Library it unpickles (the code stays mapped anyway).

What a pickle calls is named, never imported here (bindthem._base.byname):
bindthem._unpickle's ``library`` and ``function`` (which return what this
process has, else a stand-in) and ``source`` (which calls :func:`check`).
This module sits below the Library class and the build; that one above them.
"""

import contextlib
import hashlib
import os
import pickle
import re
import threading
import weakref
from typing import Any

from .. import _core
from .._base.byname import SOURCE
from .._base.instantiation import C_TYPES, OPEN_MAX
from .._base.opts import _options
from ..errors import BindError, PickleError
from . import carry, loading
from .loading import LIBRARY_LIMIT, read_regular, sha256_hex

__all__ = ["Source", "check", "function_of", "remember", "token"]

# What a pickle may carry, and what may be read at a carried path on the
# unpickling side: larger is refused (PickleError, or a BindError naming the file).
TEXT_LIMIT = 64 << 20  # bytes of a header, instantiate.yml or local include
FILES_LIMIT = 10000  # local includes one pickle carries
PATH_LIMIT = 4096  # characters of a carried path or compiler command

# key (recomputed) -> Library this process unpickled and bound
_unpickled: dict[Any, Any] = {}
# key (recomputed) -> what was hashed for it: a later pickle that carries the
# same key and equal fields is verified by comparing bytes, not rehashing them
_verified: dict[str, tuple] = {}
# key -> Library made here by build/load
_live: "weakref.WeakValueDictionary[Any, Any]" = weakref.WeakValueDictionary()
_lock = threading.RLock()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


class Source:
    """A kernel by value: what a Library's pickle carries.

    kind        "build", "load", "cuda" or "package"
    package     the installed package whose kernels these are (package; else None)
    name        the module name; strict as given
    header      the header's path on the machine that bound it, and its text
    instantiate the YAML's path (or None) and its text
    files       {path relative to the header's folder: text} of the local includes (build)
    cxx, flags  the compiler (None: the unpickling side's $CXX or c++) and all flags (build)
    cache_dir   the build cache given to build(); carried, never used where it is unpickled
    library     the shared library's path and the SHA-256 of the bytes mapped (load: known
                when bindthem._services.loading hashed or copied them, else taken on first need
                from the file, if its identity (library_stat) is still the one loaded);
                for a package, its path inside the package's folder and its SHA-256
    options     {"gil": ..., "copy_const": ...} as given, with "handles" and
                "null_handles" when given
    image       the CUDA module's bytes (cuda; library is then its file name, or "<bytes>")
    on_demand   build: None, or (an open build: instantiation on demand) the list of
                [function, [C types]] instantiated on demand so far; a worker compiles
                what its calls need. Whether it is open is in the key, what was made not.
    binary      build (not open), load, package: None, or the shared library this process
                bound (carry.carried): its SHA-256, size, path, the platform it needs, and
                its bytes when at most CARRY_LIMIT. Not in a build's key: the source says
                what the kernel is, the binary is one build of it, which a worker that
                cannot compile (or need not) loads instead (bindthem._unpickle.bind); a
                load's or package's is the library_hash the key holds.
    built       not pickled: the file this process bound (build: in the cache; package:
                in the installed package), which its pickles carry
    """

    __slots__ = ("kind", "name", "strict", "header", "header_text", "instantiate",
                 "yaml_text", "files", "cxx", "flags", "cache_dir", "library",
                 "library_hash", "library_stat", "options", "image", "package", "on_demand",
                 "binary", "made", "built", "made_paths", "_key")

    FIELDS = ("kind", "name", "strict", "header", "header_text", "instantiate", "yaml_text",
              "files", "cxx", "flags", "cache_dir", "library", "library_hash", "options",
              "image", "package", "on_demand", "binary", "made")

    def __init__(self, **fields):
        for f in self.FIELDS:
            setattr(self, f, fields.get(f))
        self.library_stat = fields.get("library_stat")
        self.built = None  # build: the shared library this process bound (a cache file)
        self.made_paths = {}  # open build: (name, C types) -> the library made on demand here
        self._key = fields.get("key")

    def __reduce__(self):
        fields = {f: getattr(self, f) for f in self.FIELDS}
        fields["key"] = self.key  # also takes a loaded library's hash
        fields["library_hash"] = self.library_hash
        if self.binary is None and self.kind != "cuda":
            self.binary = carry.library_of(self)
        fields["binary"] = carry.as_carried(self.binary)
        fields["made"] = carry.made_of(self) if self.on_demand is not None else None
        return (SOURCE, (fields,))  # bindthem._unpickle.source: check(fields)

    def __repr__(self):
        return "<bindthem kernel source %s of %s>" % (self.key[:12], os.path.basename(self.header))

    def _library_hash(self):
        """The loaded library's SHA-256, taken from the file if it is still
        the one that was loaded."""
        if self.library_hash is None:
            if loading.identity(os.stat(self.library)) != self.library_stat:
                raise pickle.PicklingError(
                    "cannot pickle Library %r: its shared library %s has changed on disk since "
                    "it was loaded, so its SHA-256 would not be that of the code bound here; "
                    "load the new file under a new name and pickle that Library"
                    % (self.name, self.library))
            self.library_hash = sha256_hex(_read(self.library))
        return self.library_hash

    @property
    def key(self):
        """SHA-256 over everything that makes the binding what it is (not the
        paths): equal keys bind the same code the same way."""
        if self._key is None:
            if self.kind == "load":
                self._library_hash()
            self._key = self._digest()
        return self._key

    def _parts(self):
        """What the key hashes, in order: bytes as they are, the rest by repr."""
        files = sorted((self.files or {}).items())
        return (self.kind, self.name, bool(self.strict), self.header_text, self.yaml_text,
                len(files), *[p for item in files for p in item], self.cxx, self.flags,
                sorted((self.options or {}).items(), key=str),
                self.library_hash if self.kind in ("load", "package") else None, self.image,
                *((self.package,) if self.kind == "package" else ()),
                *(("on demand",) if self.on_demand is not None else ()))

    def _digest(self, parts=None):
        """SHA-256 of _parts(), each part length-prefixed and tagged (bytes or
        repr), so that no two different sources hash alike by moving bytes
        from one field into the next."""
        h = hashlib.sha256()
        for p in self._parts() if parts is None else parts:
            tag, data = (b"b", p) if isinstance(p, bytes) else (b"r", repr(p).encode())
            h.update(tag + len(data).to_bytes(8, "little"))
            h.update(data)
        return h.hexdigest()

    # --- the unpickling side ---

    def _same_on_disk(self):
        """Whether the files at the original paths hold the carried text
        (regular files only, read no further than the carried size)."""
        folder = os.path.dirname(self.header)
        pairs = [(self.header, self.header_text)]
        if self.instantiate:
            pairs.append((self.instantiate, self.yaml_text))
        pairs += [(os.path.join(folder, rel), text) for rel, text in (self.files or {}).items()]
        try:
            return all(read_regular(path, TEXT_LIMIT, len(text)) == text
                       for path, text in pairs)
        except OSError:
            return False

    def _cache_dir(self):
        # The unpickling side's own cache ($BINDTHEM_CACHE or the default), never
        # the carried folder: a pickle must not choose where this process writes.
        return None

    def plan(self, header, instantiate):
        """The :class:`_core.Plan` of the carried header and YAML texts,
        named by ``header`` and ``instantiate`` (the paths that hold them,
        :meth:`_materialised`): parsed from the bytes carried, not read
        again, so what is bound is what the key hashed."""
        return _core.parse(header, instantiate, strict=self.strict,
                           header_text=self.header_text, yaml_text=self.yaml_text)

    @contextlib.contextmanager
    def _materialised(self, cache_dir=None):
        """``with source._materialised() as (header, instantiate):`` paths
        holding the carried text: the original files when unchanged, else
        copies under <cache>/sources/<key>/ (the cache ``cache_dir``, a
        folder this process chose; else this process's own: never the
        carried one), whose entry is held (bindthem._services.cache.using_group) until
        the block ends: compile and bind from them inside it."""
        if self._same_on_disk():
            yield self.header, self.instantiate
            return
        for rel in self.files or {}:
            norm = os.path.normpath(rel)
            if os.path.isabs(norm) or norm.startswith(os.pardir):
                raise BindError("cannot unpickle %r: included file %r lies outside the header's "
                                "folder" % (self.name, rel))
        # made safely (no link followed, private modes), marked used
        from . import cache  # the build cache: only a Source that writes its files needs it

        with cache.using_group(cache_dir if cache_dir is not None else self._cache_dir(),
                               "sources", self.key[:24]) as folder:
            header = cache.write_once(folder, os.path.join("src", os.path.basename(
                self.header)), self.header_text)
            for rel, text in (self.files or {}).items():
                cache.write_once(folder, os.path.join("src", os.path.normpath(rel)), text)
            inst = None
            if self.instantiate:
                inst = cache.write_once(folder, os.path.join(
                    "yml", os.path.basename(self.instantiate)), self.yaml_text)
            yield header, inst

    def check_library(self):
        """For a load: BindError unless the library at the pickled path is
        the one pickled (its SHA-256), before it is loaded; then loads it
        (bindthem._services.loading.open_checked: the bytes hashed are the bytes
        mapped) and returns what bind() opens."""
        if not os.path.exists(self.library):
            raise BindError(
                "cannot unpickle Library %r: its shared library %s is not on this machine, and "
                "the pickle does not carry its bytes (more than $BINDTHEM_CARRY_BYTES, or "
                "BINDTHEM_CARRY_LIBRARY=0 where it was pickled, or the platform differs): put "
                "the same file there, or pickle it with its bytes"
                % (self.name, self.library))
        try:
            return loading.open_checked(self.library, self.library_hash, LIBRARY_LIMIT)
        except loading.Unreadable as e:
            raise BindError("cannot unpickle Library %r: its shared library %s cannot be "
                            "checked: %s" % (self.name, self.library, e.strerror)) from None
        except loading.Mismatch as e:
            raise BindError(
                "cannot unpickle Library %r: the shared library %s is not the one pickled "
                "(SHA-256 %s..., pickled %s...); bindthem does not bind other code than was "
                "pickled. Put the pickled library there, or load this one and pickle again"
                % (self.name, self.library, e.found[:12], self.library_hash[:12])) from None


_HEX64 = re.compile(r"[0-9a-f]{64}\Z")
KINDS = ("build", "load", "cuda", "package")
_KEYS = frozenset(Source.FIELDS + ("key",))


def _refuse(what, why):
    raise PickleError("cannot unpickle this bindthem kernel: %s %s. bindthem refuses it before "
                      "writing, compiling or loading anything; pickle the Library again where "
                      "it was made" % (what, why))


def _is_str(value, limit=PATH_LIMIT):
    return type(value) is str and 0 < len(value) <= limit and "\0" not in value


def _plain_path(rel, what):
    """rel must be a relative path of plain names (no '..', '.', '' or
    backslash; not absolute; no NUL), as written inside a folder of the cache."""
    if not _is_str(rel):
        _refuse(what, "is %r, not a non-empty string without NUL" % (rel,))
    try:
        os.fsencode(rel)
    except UnicodeError:
        _refuse(what, "is %r, which is not a file name on this system" % (rel,))
    parts = rel.split("/")
    if "\\" in rel or any(p in ("", ".", "..") or len(p) > 255 for p in parts):
        _refuse(what, "is %r, not a relative path of plain names inside the header's folder "
                "(no '..', no absolute path, no backslash, no empty name)" % (rel,))
    return parts


def _path(value, what, absolute=True):
    if not _is_str(value) or (absolute and not value.startswith("/")):
        _refuse(what, "is %r, not %s path without NUL of at most %d characters"
                % (value, "an absolute" if absolute else "a", PATH_LIMIT))


def _text(value, what, limit=TEXT_LIMIT):
    if type(value) is not bytes:  # exactly: no subclass with its own __eq__
        _refuse(what, "is a %s, not bytes" % type(value).__name__)
    if len(value) > limit:
        _refuse(what, "holds %d bytes, more than bindthem unpickles (%d)" % (len(value), limit))


def check(fields):
    """The Source that a pickle's fields describe, every field checked, with
    its key recomputed over what they carry (PickleError otherwise)."""
    if type(fields) is not dict or set(fields) != _KEYS:
        _refuse("the pickle", "does not hold a bindthem kernel source (fields %r, expected %s)"
                % (sorted(map(str, fields)) if type(fields) is dict else type(fields),
                   ", ".join(sorted(_KEYS))))
    kind, name = fields["kind"], fields["name"]
    if type(kind) is not str or kind not in KINDS:
        _refuse("its kind", "is %r, not 'build', 'load', 'cuda' or 'package'" % (kind,))
    if not _is_str(name, 255) or not name.isprintable() or "/" in name or "\\" in name:
        _refuse("its name", "is %r, not a module name (1 to 255 printable characters, no "
                "slash)" % (name,))
    if not isinstance(fields["strict"], bool):
        _refuse("strict", "is %r, not True or False" % (fields["strict"],))
    _path(fields["header"], "the header's path")
    _plain_path(os.path.basename(fields["header"]), "the header's file name")
    _text(fields["header_text"], "the header's text")
    inst = fields["instantiate"]
    if inst is None:
        if fields["yaml_text"] is not None:
            _refuse("instantiate.yml's text", "comes without its path")
    else:
        _path(inst, "instantiate.yml's path")
        _plain_path(os.path.basename(inst), "instantiate.yml's file name")
        _text(fields["yaml_text"], "instantiate.yml's text")
    _check_kind_fields(fields, kind)
    if type(fields["key"]) is not str or not _HEX64.match(fields["key"]):
        _refuse("its key", "is %r, not a SHA-256 in hex" % (fields["key"],))
    source = Source(**fields)
    source._key = None
    parts = source._parts()
    known = _verified.get(fields["key"])
    if known is not None and known == parts:
        source._key = fields["key"]
        return _check_built_from(source)
    key = source._digest(parts)
    if key != fields["key"]:
        raise PickleError(
            "cannot unpickle bindthem kernel %r: the pickle's key %s... is not the hash of what "
            "it carries (%s...): its header or YAML text, local includes, flags or options were "
            "changed after it was pickled, or the pickle is damaged. bindthem binds nothing from "
            "it; pickle the Library again where it was made" % (name, fields["key"][:16],
                                                               key[:16]))
    source._key = key
    with _lock:
        _verified.setdefault(key, parts)
    return _check_built_from(source)


def _check_built_from(source):
    """source, unless the library it carries was built from another source
    (its key is not the one recomputed): PickleError, nothing loaded."""
    others = [b for b in [source.binary, *(source.made or {}).values()]
              if b is not None and b["key"] != source._key]
    if others:
        raise PickleError(
            "cannot unpickle bindthem kernel %r: the shared library it carries was built from "
            "another source (key %s..., this source's %s...): the pickle was put together from "
            "two. bindthem loads nothing from it; pickle the Library again where it was made"
            % (source.name, others[0]["key"][:16], source._key[:16]))
    return source


def _check_kind_fields(fields, kind):
    """The fields that depend on the kind: files, cxx, flags, cache_dir,
    options for a build; library and library_hash for a load; image for CUDA."""
    files = fields["files"]
    if kind == "build":
        if type(files) is not dict or len(files) > FILES_LIMIT:
            _refuse("its local includes", "are %s, not a dict of at most %d files"
                    % (type(files).__name__, FILES_LIMIT))
        folders = set()
        for rel, text in files.items():
            parts = _plain_path(rel, "a local include's path")
            _text(text, "local include %r" % rel)
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        header_name = os.path.basename(fields["header"])
        clash = sorted(folders & set(files)) + ([header_name] if header_name in files else [])
        if clash:
            _refuse("local include %r" % clash[0], "would overwrite the header or another "
                    "include's folder")
        cxx, flags = fields["cxx"], fields["flags"]
        if cxx is not None and not _is_str(cxx):
            _refuse("the compiler", "is %r, not None or a command" % (cxx,))
        if (type(flags) is not list or len(flags) > 4096
                or not all(_is_str(f) for f in flags)):
            _refuse("the flags", "are %r, not a list of strings" % (flags,))
        if fields["cache_dir"] is not None:
            _path(fields["cache_dir"], "the cache folder", absolute=False)
    else:
        for f in ("files", "cxx", "flags", "cache_dir"):
            if fields[f] is not None:
                _refuse(f, "is %r: only a built Library carries one" % (fields[f],))
    if kind == "cuda":
        if fields["options"] is not None:
            _refuse("options", "are %r: a CUDA Library has none" % (fields["options"],))
    else:
        _check_options(fields["options"])
    library, library_hash = fields["library"], fields["library_hash"]
    package = fields["package"]
    if kind == "package":
        if not _is_str(package, 255) or not all(p.isidentifier() for p in package.split(".")):
            _refuse("the package", "is %r, not a dotted package name" % (package,))
        _plain_path(library, "the library's path in the package")
    elif package is not None:
        _refuse("package", "is %r: only a packaged Library carries one" % (package,))
    if kind in ("load", "package"):
        if kind == "load":
            _path(library, "the shared library's path", absolute=False)
        if type(library_hash) is not str or not _HEX64.match(library_hash):
            _refuse("the shared library's SHA-256", "is %r, not 64 hex digits" % (library_hash,))
    elif kind == "cuda":
        _path(library, "the CUDA module's file name", absolute=False)
        _text(fields["image"], "the CUDA module image", LIBRARY_LIMIT)
    elif library is not None:
        _refuse("library", "is %r: a built Library carries its source, not a library" % (library,))
    if kind not in ("load", "package") and library_hash is not None:
        _refuse("library_hash", "is present: only a loaded or packaged Library carries one")
    if kind != "cuda" and fields["image"] is not None:
        _refuse("image", "is present: only a CUDA Library carries one")
    _check_on_demand(fields["on_demand"], kind)
    _check_binary(fields["binary"], kind, fields["on_demand"])
    _check_made(fields["made"], kind, fields["on_demand"])
    if fields["binary"] is not None and kind in ("load", "package") and \
            fields["binary"]["sha256"] != library_hash:
        _refuse("the carried library", "is not the library the pickle names (SHA-256 %s..., "
                "the pickle's %s...)" % (fields["binary"]["sha256"][:12], library_hash[:12]))


_BINARY_KEYS = frozenset(("sha256", "size", "path", "key", "platform", "data"))
_PLATFORM_KEYS = frozenset(("machine", "system", "libc", "libc_version", "cpu"))


def _check_binary(binary, kind, on_demand):
    """None, or for a build that is not open: the library it carries
    (carry.carried), each field checked; its bytes are hashed when used."""
    if binary is None:
        return
    if kind == "cuda":
        _refuse("binary", "is present: a CUDA Library carries none")
    if type(binary) is not dict or set(binary) != _BINARY_KEYS:
        _refuse("the carried library", "is not a dict of %s" % ", ".join(sorted(_BINARY_KEYS)))
    size, data, plat = binary["size"], binary["data"], binary["platform"]
    if type(binary["sha256"]) is not str or not _HEX64.match(binary["sha256"]):
        _refuse("the carried library's SHA-256", "is %r, not 64 hex digits" % (binary["sha256"],))
    if type(size) is not int or not 0 < size <= LIBRARY_LIMIT:
        _refuse("the carried library's size", "is %r" % (size,))
    _path(binary["path"], "the carried library's path")
    if type(binary["key"]) is not str or not _HEX64.match(binary["key"]):
        _refuse("the carried library's key", "is %r, not 64 hex digits" % (binary["key"],))
    if data is not None:
        _text(data, "the carried library", LIBRARY_LIMIT)
        if len(data) != size:
            _refuse("the carried library", "holds %d bytes, not the %d it says" % (len(data),
                                                                                 size))
    if type(plat) is not dict or set(plat) != _PLATFORM_KEYS or not all(
            type(v) is str and len(v) <= 255 for v in plat.values()):
        _refuse("the carried library's platform", "is %r" % (plat,))


def _check_made(made, kind, on_demand):
    """None, or for an open build a dict of at most 16 * OPEN_MAX
    instantiations made on demand, "name|C type,...": the library carried
    (:func:`_check_binary`)."""
    if made is None:
        return
    if kind != "build" or on_demand is None:
        _refuse("made", "is present: only an open built Library carries instantiations")
    if type(made) is not dict or len(made) > 16 * OPEN_MAX:
        _refuse("made", "is not a dict of at most %d instantiations" % (16 * OPEN_MAX))
    for entry, binary in made.items():
        name, _, types = entry.partition("|") if type(entry) is str else ("", "", "")
        if not (name.isidentifier() and len(name) <= 255 and types and all(
                t in C_TYPES for t in types.split(","))):
            _refuse("made", "names %r, not 'function|C types' of the types bindthem knows"
                    % (str(entry)[:80],))
        if binary is None:
            _refuse("made", "has no library for %r" % entry)
        _check_binary(binary, kind, on_demand)


def _check_on_demand(made, kind):
    """None, or for a build a list of at most 4096 [name, [C types]] pairs,
    each type one of the dtype table's (they are written into C++ source)."""
    if made is None:
        return
    if kind != "build":
        _refuse("on_demand", "is present: only a built Library instantiates on demand")
    ok = type(made) is list and len(made) <= 16 * OPEN_MAX
    for item in made if ok else ():
        ok = (type(item) is list and len(item) == 2 and _is_str(item[0], 255)
              and item[0].isidentifier() and type(item[1]) is list and len(item[1]) <= 64
              and all(type(t) is str and t in C_TYPES for t in item[1]))
        if not ok:
            break
    if not ok:
        _refuse("on_demand", "is not a list of [function name, [C types]] pairs of the scalar "
                "types bindthem knows (%r...)" % (str(made)[:80],))


def _check_options(options):
    if type(options) is not dict or not {"gil", "copy_const"} <= set(options) <= {
            "gil", "copy_const", "handles", "null_handles"}:
        _refuse("options", "are %r, not {'gil': ..., 'copy_const': ...} (and 'handles', "
                "'null_handles' when given)" % (options,))
    gil = options["gil"]
    if not (type(gil) is str or (type(gil) is dict and all(
            _is_str(k, 255) and type(v) is str for k, v in gil.items()))):
        _refuse("options", "have gil=%r, not a policy or a dict of them" % (gil,))
    for what in ("handles", "null_handles"):
        value = options.get(what)
        if not (value is None or (what == "null_handles" and type(value) is str) or (
                type(value) is dict and all(_is_str(k, 255) and _is_str(v, 255)
                                            for k, v in value.items()))):
            _refuse("options", "have %s=%r, not a dict of names" % (what, value))
    try:
        normal = _options(gil, options["copy_const"], options.get("handles"),
                          options.get("null_handles"))
    except (BindError, TypeError) as e:
        _refuse("options", "are %r: %s" % (options, e))
    if normal != options or any(isinstance(options.get(k), dict) and list(options[k]) != list(
            normal[k]) for k in ("gil", "handles", "null_handles")):
        _refuse("options", "are %r, not in the order build() and load() write them" % (options,))


def remember(lib, source):
    """Remembers a Library made here that is being pickled, so that
    unpickling in this process returns it."""
    with _lock:
        _live[source.key] = lib


def token(key, name=None):
    """__dask_tokenize__ of a Library (name None) or of its function name:
    the same for the same content hash in any process."""
    return ("bindthem.Library", key) + ((name,) if name else ())


def _checked(source):
    """source's key, when check() made it (pickle calls bindthem._unpickle's
    library() and function() with what a pickle says; a stream could name
    them directly)."""
    key = getattr(source, "_key", None) if type(source) is Source else None
    if key is None:
        _refuse("the pickle", "calls bindthem's unpickler with %r, not a checked kernel source"
                % (type(source).__name__,))
    return key


def _have(key):
    """The Library this process has for key (live original or unpickled), or None."""
    with _lock:  # the tables change from other threads (free-threaded CPython: at once)
        return _live.get(key) or _unpickled.get(key)


def function_of(lib, name):
    """lib's Function name, for a pickle that names it."""
    if name in (getattr(lib, "__all__", None) or ()):
        return getattr(lib, name)
    raise PickleError("cannot unpickle %s.%s: Library %r binds no function of that name (it "
                      "binds %s)" % (lib.__name__, name, lib.__name__,
                                     ", ".join(lib.__all__) or "nothing"))
