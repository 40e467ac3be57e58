"""Kernels inside a package, the service behind bindthem.package: the manifest
(``<stem>.bindthem.json``: what it records, :func:`write_manifest`; read and
checked, :func:`bind_installed`), an installed package's folder found without
importing it (:func:`package_folder`), the text of a module that binds on
first use (:data:`LAZY_MODULE`, :func:`lazy_module_text`), and an unpickled
kind "package" Source bound (:func:`bind_pickled`).

A package's library is bound (bindthem._services.loading: the bytes hashed
are the bytes loaded) only when the header, the YAML and the library are the
ones the manifest records: a header or YAML edited after the build, or a
library replaced, is a :class:`bindthem.BindError` naming the files and the
remedy, never calls with the wrong signatures.

A header read through the C preprocessor when the package was built
(bindthem._services.preprocess) ships the Plan's bytes, the preprocessor's
output, as ``<stem>.bindthem.i`` beside it; the manifest names that file
(``"preprocessed"``) and its ``sources_sha256`` hashes those bytes in the
header's place, and the import binds them: no preprocessor runs there. The
header itself stays beside them, for :func:`bindthem.getsource`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import json
import os
import sys
from typing import Any, NamedTuple

from .._base.files import write_text
from .._base.opts import _options
from .._base.types import StrPath
from ..errors import BindError, PickleError
from . import loading, travel
from .binding import Library, _make

__all__ = ["LAZY_MODULE", "MANIFEST_SUFFIX", "PREPROCESSED_SUFFIX", "Stale", "bind_installed",
           "bind_pickled", "lazy_module_text", "library_name", "manifest_name", "package_folder",
           "preprocessed_name", "sources_hash", "write_manifest"]

MANIFEST_SUFFIX = ".bindthem.json"
PREPROCESSED_SUFFIX = ".bindthem.i"
MANIFEST_FORMAT = 1
MANIFEST_LIMIT = 1 << 20  # bytes of a manifest read at import


def manifest_name(header: str) -> str:
    """``kernels.h`` -> ``kernels.bindthem.json`` (same folder)."""
    return os.path.splitext(header)[0] + MANIFEST_SUFFIX


def preprocessed_name(header: str) -> str:
    """``kernels.h`` -> ``kernels.bindthem.i`` (same folder): a preprocessed
    header's Plan bytes, the preprocessor's output, as the package binds them."""
    return os.path.splitext(header)[0] + PREPROCESSED_SUFFIX


def library_name(header: str) -> str:
    """``kernels.h`` -> ``libkernels.so`` (same folder). Not ``kernels.so``:
    Python would take that for the extension module ``<package>.kernels``."""
    folder, base = os.path.split(header)
    return os.path.join(folder, "lib" + os.path.splitext(base)[0] + ".so")


def sources_hash(header_text: bytes, yaml_text: bytes | None, flags: list[str],
                 strict: bool) -> str:
    """SHA-256 of what a packaged library was built from, each part
    length-prefixed so that no bytes can move from one part into the next."""
    h = hashlib.sha256()
    parts = [header_text, b"" if yaml_text is None else b"y" + yaml_text,
             "\0".join(flags).encode(), b"strict" if strict else b""]
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()


def _rel(path, what):
    """A path inside the package: relative, plain names, '/'-separated."""
    rel = os.fspath(path)
    parts = rel.split("/")
    if os.path.isabs(rel) or "\\" in rel or any(p in ("", ".", "..") for p in parts):
        raise BindError("%s %r is not a path inside the package: give it relative to the "
                        "package's folder, e.g. 'kernels.h' or 'src/kernels.h'" % (what, rel))
    return rel


# The module a package step writes for ``lazy=True`` (``<stem>.py`` beside the
# header): importing it reads no file and loads no library; its kernels are
# stand-ins until the first call (or the first look-up of another name) binds
# them all through bind_on_first_use. Its names are the stub's (the same
# metadata, read at the same time).
LAZY_MODULE = '''"""%(module)s: the kernels of %(header)s, compiled into this package
when it was built and bound on first use. Written by bindthem's package step
(do not edit: a rebuild writes it again). Importing it reads no file and
loads no library; the first call of a kernel (or the first look-up of any
other name) binds them all with bindthem.load_package, which checks the
library against the header and YAML it was built from."""

__all__ = %(names)s
_HEADER, _INSTANTIATE = %(header)r, %(instantiate)r
_library = None


def _bound():
    """The bound Library (bound now, on the first use)."""
    if _library is None:
        from bindthem.package import bind_on_first_use
        bind_on_first_use(globals())
    return _library


class _Kernel:
    """A kernel of this module before the first use: calling it, or reading
    any attribute but its name, binds the module and goes to the bound
    Function, which then replaces the stand-in here and in the package."""

    __slots__ = ("_name", "_function")

    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        try:
            function = self._function  # set when bound
        except AttributeError:
            function = getattr(_bound(), self._name)
        return function(*args, **kwargs)

    def __getattr__(self, attr):
        if attr in _Kernel.__slots__:  # _function before binding: no kernel's attribute
            raise AttributeError(attr)
        return getattr(getattr(_bound(), self._name), attr)

    def __reduce_ex__(self, protocol):
        return getattr(_bound(), self._name).__reduce_ex__(protocol)

    def __repr__(self):
        return "<kernel %%s.%%s, bound on first use>" %% (__name__, self._name)

    __name__ = property(lambda self: self._name)
    __doc__ = property(lambda self: getattr(_bound(), self._name).__doc__)


for _n in __all__:
    globals()[_n] = _Kernel(_n)
del _n


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):  # the import system's probes
        raise AttributeError("module %%r has no attribute %%r" %% (__name__, name))
    return getattr(_bound(), name)
'''


class _Stored(dict):
    """A namespace that remembers every name stored in it, deleted ones too."""

    def __init__(self):
        super().__init__()
        self.stored = set()

    def __setitem__(self, key, value):
        self.stored.add(key)
        super().__setitem__(key, value)


@functools.lru_cache(maxsize=None)
def _lazy_reserved() -> frozenset[str]:
    """The names LAZY_MODULE's own code stores (``_n``, its loop variable,
    too: a kernel so named would be deleted with it), read by running the
    template with one kernel (no import, no file read: it binds on use)."""
    ns = _Stored()
    exec(LAZY_MODULE % dict(module="m", header="h", instantiate=None, names="['k']"),
         {"__name__": "_bindthem_lazy_template"}, ns)
    return frozenset(n for n in ns.stored if not n.startswith("__"))


def lazy_module_text(module: str, header: str, instantiate: str | None,
                     names: list[str]) -> str:
    """The text of the module ``module`` that binds ``names`` (the kernels of
    ``header`` with ``instantiate``, as the stub lists them) on first use."""
    clash = sorted(n for n in names if n in _lazy_reserved() or n.startswith("__"))
    if clash:
        raise BindError("lazy=True cannot write the module %s: its kernel%s %s would replace "
                        "the module's own name%s; bind it with load_package (lazy=False)"
                        % (module, "s" if len(clash) > 1 else "", ", ".join(clash),
                           "s" if len(clash) > 1 else ""))
    listed = "[%s]" % "".join("\n    %r," % n for n in names) + ("\n" if names else "")
    return LAZY_MODULE % dict(module=module, header=header, instantiate=instantiate,
                              names=listed)


def _lazy_module_path(folder: str, package: str | None, module: str) -> str:
    parent, _, last = module.rpartition(".")
    if not last.isidentifier() or (package is not None and parent != package):
        raise BindError("lazy=True writes the module %s as a file of its package's folder: it "
                        "must be a module of package %s itself (the default name, "
                        "<package>.<header stem>)" % (module, package))
    return os.path.join(folder, last + ".py")


def _write_bytes(path, data):
    """Writes data to path through a temporary file renamed over it (as write_text)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_manifest(folder: StrPath, header: str, instantiate: str | None, *, module: str,
                   flags: list[str], strict: bool, header_path: StrPath,
                   instantiate_path: StrPath | None,
                   preprocessed: bytes | None = None,
                   rebuild: dict[str, Any] | None = None) -> str:
    """Writes ``<stem>.bindthem.json`` into ``folder``, which holds the
    library ``lib<stem>.so`` already: what :func:`load_package` checks.
    ``header`` and ``instantiate`` are the names inside the package; their
    text is read from ``header_path`` and ``instantiate_path`` (the build's
    copies, or the source files). ``preprocessed``: the Plan's bytes when
    the header was read through the C preprocessor, written beside it as
    ``<stem>.bindthem.i`` and hashed in its place. Returns the manifest's
    path. ``rebuild``: an editable install's build options (JSON), with which
    the import rebuilds a stale library (``bindthem.load_package``)."""
    lib_rel = library_name(header)
    header_text = travel._read(header_path)
    if preprocessed is not None:
        _write_bytes(os.path.join(os.fspath(folder), preprocessed_name(header)), preprocessed)
        header_text = preprocessed
    manifest = {
        "format": MANIFEST_FORMAT,
        "module": module,
        "header": header,
        "instantiate": instantiate,
        "library": lib_rel,
        "stub": os.path.splitext(header)[0] + ".pyi",
        "flags": flags,
        "strict": strict,
        "sources_sha256": sources_hash(header_text,
                                       travel._read(instantiate_path)
                                       if instantiate_path else None, flags, strict),
        "library_sha256": loading.sha256_hex(travel._read(os.path.join(folder, lib_rel))),
    }
    if preprocessed is not None:  # absent otherwise: a manifest as before
        manifest["preprocessed"] = preprocessed_name(header)
    if rebuild is not None:  # an editable install's: absent from a wheel's
        manifest["rebuild"] = rebuild
    m_path = os.path.join(os.fspath(folder), manifest_name(header))
    write_text(m_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return m_path


def package_folder(package: str) -> str | None:
    """The folder of an installed package, found without importing it (nor
    its parents): None when this Python has no such package."""
    parts = package.split(".")
    if not all(p.isidentifier() for p in parts):
        return None
    loaded = sys.modules.get(package)
    locations = list(getattr(loaded, "__path__", None) or [])
    if not locations:
        path = None
        for i in range(len(parts)):
            spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:i + 1]), path)
            if spec is None or not spec.submodule_search_locations:
                return None
            path = list(spec.submodule_search_locations)
        locations = path or []
    for loc in locations:
        if os.path.isdir(loc):
            return loc
    return None


class Stale(NamedTuple):
    """What a stale package library's BindError carries (its ``stale``): the
    package's folder, the build's manifest (read), and the files whose
    SHA-256 differs."""
    folder: str
    manifest: dict[str, Any]
    changed: str


def _stale_error(message, folder, manifest, changed):
    """The BindError of a stale library (a BindError, as users catch it and
    see it named), with ``stale``: what an editable install's import rebuilds
    from."""
    e = BindError(message)
    e.stale = Stale(folder, manifest, changed)  # type: ignore[attr-defined]
    return e


def _remedy(package=None):
    """What the reader of a package's BindError can do: a user of the package
    (reinstall it, or tell its authors) and its author (rebuild it)."""
    top = (package or "the package").split(".")[0]
    return ("if you use %s, reinstall it (`pip install --force-reinstall %s`) or report this to "
            "its authors; if you develop it, rebuild and reinstall it from its source folder "
            "(`pip install .`, or `pip install -e .` for an editable install: that runs "
            "bindthem's build step, bindthem.setuptools); never edit an installed package's "
            "header or YAML" % (top, top))


def _manifest(package, folder, header, instantiate):
    path = os.path.join(folder, manifest_name(header))
    try:
        data = loading.read_regular(path, MANIFEST_LIMIT)
    except FileNotFoundError:
        raise BindError(
            "package %s has no compiled kernel library for %s: %s does not exist. The package "
            "was installed without bindthem's build step; list the header in setup.py with "
            "bindthem.setuptools.cmdclass(KernelLibrary(%r, %r, %r)) and %s"
            % (package, header, path, package, header, instantiate, _remedy(package))) from None
    except OSError as e:
        raise BindError("cannot read %s: %s" % (path, e.strerror)) from None
    try:
        m = json.loads(data)
        ok = (type(m) is dict and m.get("format") == MANIFEST_FORMAT
              and isinstance(m.get("flags"), list) and isinstance(m.get("strict"), bool)
              and all(isinstance(m.get(k), str) for k in ("library", "sources_sha256",
                                                            "library_sha256"))
              and isinstance(m.get("preprocessed", ""), str))
    except ValueError:
        ok = False
    if not ok:
        raise BindError("%s is not a bindthem kernel manifest of format %d (damaged, or written "
                        "by another bindthem version); %s"
                        % (path, MANIFEST_FORMAT, _remedy(package)))
    if m.get("header") != header or m.get("instantiate") != instantiate:
        raise BindError(
            "package %s's kernel library was built from header %r and instantiate.yml %r (%s), "
            "but load_package asks for %r and %r: pass the files it was built from, or change "
            "the KernelLibrary in setup.py and %s" % (package, m.get("header"),
                                                      m.get("instantiate"), path, header,
                                                      instantiate, _remedy(package)))
    library = _rel(m["library"], "the manifest's library")
    return m, path, os.path.join(folder, library)


def bind_installed(package, header, instantiate, name, gil, copy_const):
    """load_package() of checked arguments (``header``, ``instantiate``:
    plain paths inside the package): the manifest read and checked against
    the installed header, YAML and library, then the library bound."""
    folder = package_folder(package)
    if folder is None:
        raise BindError("load_package: no installed package %r (with a folder on disk) on "
                        "sys.path" % (package,))
    m, m_path, lib_path = _manifest(package, folder, header, instantiate)
    h_path = os.path.join(folder, header)
    y_path = os.path.join(folder, instantiate) if instantiate else None
    # a preprocessed header: the Plan's bytes the build shipped, bound without a preprocessor
    text_path = (os.path.join(folder, _rel(m["preprocessed"], "the manifest's preprocessed "
                                           "header")) if m.get("preprocessed") else h_path)
    try:
        h_text = loading.read_regular(text_path, travel.TEXT_LIMIT)
        y_text = loading.read_regular(y_path, travel.TEXT_LIMIT) if y_path else None
    except OSError as e:
        raise BindError("package %s's kernels cannot be bound: %s: %s; %s"
                        % (package, e.filename, e.strerror, _remedy(package))) from None
    if sources_hash(h_text, y_text, m["flags"], m["strict"]) != m["sources_sha256"]:
        changed = text_path + (" or " + y_path if y_path else "")
        raise _stale_error(
            "package %s's kernel library %s is stale: %s changed since it was built (their "
            "SHA-256 is no longer the one %s records), so its calls could not be trusted to "
            "match the header; %s" % (package, lib_path, changed, m_path, _remedy(package)),
            folder, m, changed)
    try:  # hashed, then loaded: the bytes it maps are the ones hashed (bindthem._services.loading)
        opened = loading.open_checked(lib_path, m["library_sha256"], loading.LIBRARY_LIMIT)
    except loading.Unreadable as e:
        raise BindError("package %s's kernels cannot be bound: %s: %s; %s"
                        % (package, e.filename, e.strerror, _remedy(package))) from None
    except loading.Mismatch as e:
        raise BindError(
            "package %s's kernel library %s is not the one built with it (SHA-256 %s..., %s "
            "records %s...): it was replaced or damaged; %s"
            % (package, lib_path, e.found[:12], m_path, m["library_sha256"][:12],
               _remedy(package))) from None
    if name is None:
        name = package + "." + os.path.splitext(os.path.basename(header))[0]
    opts = _options(gil, copy_const)
    source = travel.Source(
        kind="package", package=package, name=name, strict=m["strict"], header=h_path,
        header_text=h_text, instantiate=y_path, yaml_text=y_text, library=m["library"],
        library_hash=opened.sha256, options=opts)
    source.built = lib_path  # what its pickles carry (travel.carried)
    # bound from the bytes just checked against the manifest, not read again
    lib = _make(opened.name, h_path, y_path, name, m["strict"], source, opts,
                source.plan(h_path, y_path))
    lib.__file__ = lib_path
    return lib


def bind_pickled(source: Any) -> Library:
    """The Library for an unpickled kind "package" Source: this process's
    installed copy of the package, checked to hold the same library."""
    folder = package_folder(source.package)
    if folder is None:
        raise PickleError(
            "cannot unpickle %r: it binds the kernels of package %s, which is not installed "
            "here (sys.path has no such package). Install the same version of %s where the "
            "pickle is loaded" % (source.name, source.package, source.package))
    path = os.path.join(folder, source.library)
    try:  # hashed, then loaded: the bytes it maps are the ones hashed (bindthem._services.loading)
        opened = loading.open_checked(path, source.library_hash, loading.LIBRARY_LIMIT)
    except loading.Unreadable as e:
        raise PickleError("cannot unpickle %r: package %s is installed in %s, but its kernel "
                          "library %s cannot be read (%s): install the same version of %s"
                          % (source.name, source.package, folder, path, e.strerror,
                             source.package)) from None
    except loading.Mismatch as e:
        raise PickleError(
            "cannot unpickle %r: package %s's kernel library %s here is not the one pickled "
            "(SHA-256 %s..., pickled %s...): another version of %s is installed; install the "
            "pickling side's version" % (source.name, source.package, path, e.found[:12],
                                        source.library_hash[:12], source.package)) from None
    with source._materialised() as (header, inst):  # a copy in the cache: held until bound
        lib = _make(opened.name, header, inst, source.name, source.strict, source,
                    source.options, source.plan(header, inst))
    source.built = path
    lib.__file__ = path
    return lib
