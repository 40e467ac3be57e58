"""Kernels shipped inside a Python package: compiled when the wheel is built,
bound at import with no compiler.

:func:`package_library` (what :mod:`bindthem.setuptools` runs when a wheel or
an editable install is built) puts beside a package's header:

- ``lib<stem>.so``, the kernel library, compiled by
  :func:`bindthem.compile_library` with the flags, OpenMP option and warnings
  of :func:`bindthem.build` (it links no Python: one library serves every
  CPython, so the wheel is ``py3-none-<platform>``);
- ``<stem>.pyi``, the stub of the module ``<package>.<stem>``
  (:mod:`bindthem.stubs`);
- ``<stem>.bindthem.json``, the manifest: the header's, the YAML's and the
  library's file names, the flags, and two SHA-256s: of the header text, the
  YAML text, the flags and ``strict`` together (``sources_sha256``), and of
  the library (``library_sha256``).

:func:`load_package` finds them in the installed package, recomputes both
hashes, and binds the library (bindthem._loading: the bytes hashed are the
bytes loaded) only when both are the recorded ones: a header or YAML edited
after the build, or a library replaced, is a :class:`bindthem.BindError`
naming the files and the remedy, never calls with the wrong signatures.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import json
import os
import shutil
import sys
import threading
import warnings
from typing import Any

from . import _core, _loading, _travel
from ._opts import _options
from ._types import Flags, GilOption, StrPath
from .errors import BindError, PickleError
from .errors import warn as _warn
from .library import Library, _make, plan_message, warn_if_left_out

__all__ = ["LAZY_MODULE", "MANIFEST_SUFFIX", "bind_on_first_use", "lazy_module_text",
           "load_package", "manifest_name", "package_built_library", "package_flags",
           "package_folder", "package_library", "package_sources", "sources_hash",
           "write_lazy_module", "write_manifest"]

MANIFEST_SUFFIX = ".bindthem.json"
MANIFEST_FORMAT = 1
MANIFEST_LIMIT = 1 << 20  # bytes of a manifest read at import


def manifest_name(header: str) -> str:
    """``kernels.h`` -> ``kernels.bindthem.json`` (same folder)."""
    return os.path.splitext(header)[0] + MANIFEST_SUFFIX


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


_lazy_lock = threading.Lock()


def bind_on_first_use(module_globals: dict[str, Any]) -> None:
    """Binds the kernels of a module written with ``lazy=True`` (its
    ``globals()``): :func:`load_package` of its package, header and YAML
    (every check it makes, now), then each stand-in replaced by its bound
    Function in the module and in its package's namespace (``from .kernels
    import f`` there; a stand-in kept elsewhere calls its Function
    directly), and the Library kept as the module's ``_library``.
    The module stays in ``sys.modules``. Raises what load_package raises
    (the module stays unbound: the next use tries again)."""
    with _lazy_lock:
        g = module_globals
        if g["_library"] is not None:
            return
        name = g["__name__"]
        mod = sys.modules.get(name)
        try:
            lib = load_package(g["__package__"], g["_HEADER"], g["_INSTANTIATE"], name=name)
        finally:
            if mod is not None and getattr(mod, "__dict__", None) is g:
                sys.modules[name] = mod
        stand_in = g["_Kernel"]
        for n in g["__all__"]:
            v = g.get(n)
            if isinstance(v, stand_in):
                v._function = g[n] = getattr(lib, n)  # callers that kept it call it directly
        parent = sys.modules.get(g["__package__"])
        space = getattr(parent, "__dict__", {})
        for k, v in list(space.items()):
            if isinstance(v, stand_in):
                space[k] = getattr(lib, v._name)
        g["_library"] = lib


def package_library(folder: StrPath, header: str, instantiate: str | None = None, *,
                    module: str, source_folder: StrPath | None = None, cxx: str | None = None,
                    cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                    openmp: bool = False, strict: bool = False, lazy: bool = False,
                    package: str | None = None) -> list[str]:
    """Compile ``header`` (and ``instantiate``), paths relative to
    ``source_folder`` (default ``folder``), into ``folder``: the header, the
    YAML, the library, the stub of ``module`` and the manifest; with
    ``lazy``, also the module itself, which binds on first use
    (:func:`write_lazy_module`). Returns the paths written. Flags as
    :func:`bindthem.build`'s."""
    from .build import compile_library, resolve_flags  # imported here: only a build step needs it

    # imported here: bindthem imports this module, and `python -m bindthem.stubs`
    # must find bindthem.stubs not yet imported
    from .stubs import _write, render

    folder = os.fspath(folder)
    src = os.fspath(source_folder) if source_folder is not None else folder
    header = _rel(header, "the header")
    if instantiate is not None:
        instantiate = _rel(instantiate, "instantiate.yml")
    with warnings.catch_warnings():  # compile_library warns, once
        warnings.simplefilter("ignore")
        flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    written = []
    for rel in [header] + ([instantiate] if instantiate else []):
        s, d = os.path.join(src, rel), os.path.join(folder, rel)
        if not os.path.exists(s):
            raise BindError("cannot build the kernels of package module %s: %s does not exist "
                            "(the paths are relative to the package's folder %s)"
                            % (module, s, src))
        if os.path.abspath(s) != os.path.abspath(d):
            os.makedirs(os.path.dirname(d), exist_ok=True)
            shutil.copyfile(s, d)
        written.append(d)
    h_path = os.path.join(folder, header)
    y_path = os.path.join(folder, instantiate) if instantiate else None
    lib_rel = library_name(header)
    lib_path = os.path.join(folder, lib_rel)
    compile_library(h_path, y_path, output=lib_path, cxx=cxx, cxxflags=cxxflags,
                    extra_cxxflags=extra_cxxflags, openmp=openmp, strict=strict)
    stub = os.path.splitext(h_path)[0] + ".pyi"
    _write(stub, render(h_path, y_path, module, strict=strict))
    m_path = write_manifest(folder, header, instantiate, module=module, flags=flags,
                            strict=strict, header_path=h_path, instantiate_path=y_path)
    written += [lib_path, stub, m_path]
    if lazy:
        written.append(write_lazy_module(folder, header, instantiate, module=module,
                                         package=package, header_path=h_path,
                                         instantiate_path=y_path, strict=strict))
    return written


def write_lazy_module(folder: StrPath, header: str, instantiate: str | None, *, module: str,
                      package: str | None, header_path: StrPath,
                      instantiate_path: StrPath | None, strict: bool = False) -> str:
    """Writes the module ``module`` (of ``package``, whose folder is
    ``folder``) as ``<last part of module>.py``: :data:`LAZY_MODULE`, which
    binds on first use; its names are the stub's
    (:func:`bindthem.stubs.kernel_names`). Returns its path."""
    from .stubs import _write, kernel_names

    path = _lazy_module_path(os.fspath(folder), package, module)
    meta = _core.parse_header(os.fspath(header_path),
                              os.fspath(instantiate_path) if instantiate_path else None,
                              strict=strict)
    _write(path, lazy_module_text(module, header, instantiate, kernel_names(meta)))
    return path


def write_manifest(folder: StrPath, header: str, instantiate: str | None, *, module: str,
                   flags: list[str], strict: bool, header_path: StrPath,
                   instantiate_path: StrPath | None) -> str:
    """Writes ``<stem>.bindthem.json`` into ``folder``, which holds the
    library ``lib<stem>.so`` already: what :func:`load_package` checks.
    ``header`` and ``instantiate`` are the names inside the package; their
    text is read from ``header_path`` and ``instantiate_path`` (the build's
    copies, or the source files). Returns the manifest's path."""
    from .stubs import _write

    lib_rel = library_name(header)
    manifest = {
        "format": MANIFEST_FORMAT,
        "module": module,
        "header": header,
        "instantiate": instantiate,
        "library": lib_rel,
        "stub": os.path.splitext(header)[0] + ".pyi",
        "flags": flags,
        "strict": strict,
        "sources_sha256": sources_hash(_travel._read(header_path),
                                       _travel._read(instantiate_path)
                                       if instantiate_path else None, flags, strict),
        "library_sha256": _travel._sha(_travel._read(os.path.join(folder, lib_rel))),
    }
    m_path = os.path.join(os.fspath(folder), manifest_name(header))
    _write(m_path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return m_path


# The three steps of a build system that compiles the library itself (meson's
# shared_library(); docs/packages.rst), run as
# ``python -m bindthem package flags|sources|library``: the same files and
# checks as package_library, which does all three with bindthem's compiler.

def package_flags(header: StrPath, instantiate: StrPath | None = None, *,
                  cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                  openmp: bool = False, strict: bool = False) -> list[str]:
    """The flags :func:`bindthem.build` would pass for these options, before
    ``-fPIC -shared`` (a build system adds those itself), to compile and to
    link. Warns (:class:`bindthem.BuildWarning`) as the build would before
    compiling: a ``#pragma omp`` without an OpenMP flag, functions left
    out."""
    from .build import _build_warnings, resolve_flags  # imported here: only a build step needs it

    header = os.path.abspath(os.fspath(header))
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    meta = _core.parse_header(header, instantiate, strict=strict)
    why = plan_message(meta)
    if why:
        _warn(why)
    _build_warnings(header, {}, flags, {}, meta)
    return flags


def package_sources(folder: StrPath, header: StrPath, instantiate: StrPath | None = None, *,
                    module: str, strict: bool = False, lazy: bool = False,
                    package: str | None = None) -> list[str]:
    """Writes into ``folder`` the C++ source to compile into ``lib<stem>.so``
    (``<stem>.bindthem.cpp``: the header and its explicit instantiations, as
    :func:`bindthem.build` compiles) and the stub ``<stem>.pyi`` of
    ``module``; with ``lazy``, also the module ``module`` (of ``package``)
    that binds on first use (:func:`write_lazy_module`), for a package whose
    header and YAML are installed at its top. Returns their paths."""
    from .build import instantiation_source  # imported here: only a build step needs it
    from .stubs import _write, render

    stem = os.path.splitext(os.path.basename(os.fspath(header)))[0]
    cpp = os.path.join(os.fspath(folder), stem + ".bindthem.cpp")
    stub = os.path.join(os.fspath(folder), stem + ".pyi")
    _write(cpp, instantiation_source(header, instantiate, strict=strict))
    _write(stub, render(header, instantiate, module, strict=strict))
    if not lazy:
        return [cpp, stub]
    return [cpp, stub, write_lazy_module(
        folder, os.path.basename(os.fspath(header)),
        os.path.basename(os.fspath(instantiate)) if instantiate is not None else None,
        module=module, package=package, header_path=header, instantiate_path=instantiate,
        strict=strict)]


def package_built_library(folder: StrPath, built: StrPath, header: StrPath,
                          instantiate: StrPath | None = None, *, module: str,
                          flags: list[str], strict: bool = False) -> list[str]:
    """Copies ``built`` (the library a build system linked from
    :func:`package_sources`' source with :func:`package_flags`' flags) into
    ``folder`` as ``lib<stem>.so`` and writes the manifest beside it, for a
    package whose header and YAML are installed at its top, beside them.
    One step writes both, so the library the manifest describes is the file
    installed. Returns their paths."""
    folder = os.fspath(folder)
    name = os.path.basename(os.fspath(header))
    yaml_name = os.path.basename(os.fspath(instantiate)) if instantiate is not None else None
    lib = os.path.join(folder, library_name(name))
    tmp = "%s.tmp%d" % (lib, os.getpid())
    shutil.copyfile(built, tmp)
    os.replace(tmp, lib)
    return [lib, write_manifest(folder, name, yaml_name, module=module, flags=flags,
                                strict=strict, header_path=header,
                                instantiate_path=instantiate)]


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


def _remedy(package=None):
    return ("rebuild and reinstall the package (`pip install .`, or `pip install -e .` for an "
            "editable install: that runs bindthem's build step, bindthem.setuptools); never edit "
            "an installed package's header or YAML")


def _manifest(package, folder, header, instantiate):
    path = os.path.join(folder, manifest_name(header))
    try:
        data = _travel._read_regular(path, MANIFEST_LIMIT)
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
                                                            "library_sha256")))
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


def load_package(package: str, header: str, instantiate: str | None = None, *,
                 name: str | None = None, gil: GilOption = "auto",
                 copy_const: bool = False) -> Library:
    """Bind the kernel library that bindthem's build step
    (:mod:`bindthem.setuptools`) compiled into ``package`` for ``header`` and
    ``instantiate`` (paths relative to the package's folder). No compiler is
    needed, nor run.

    Checks first that the header, the YAML and the library are the ones the
    library was built from (the SHA-256s in ``<stem>.bindthem.json``): any
    difference is a :class:`bindthem.BindError` naming the files and the
    remedy (rebuild the package). The library bytes hashed are the ones
    loaded: after an upgrade in place in a running process, the new library
    is loaded from a private copy (the old Library keeps its code), and a
    second call with the files unchanged neither hashes nor copies again
    (docs/build.rst, "A library replaced at its path"). ``name`` (default
    ``<package>.<stem>``) is the module name; the Library is also put in
    ``sys.modules`` under it, so ``from <package> import <stem>`` works and
    is typed by the stub ``<stem>.pyi`` the build wrote. ``gil``, ``copy_const``: as
    :func:`bindthem.load`.

    The Library pickles as the package name, the library's path in the
    package and its SHA-256 (plus the header and YAML texts): a process that
    unpickles it binds its own installed copy of the same package, and only
    if that library has the same SHA-256.
    """
    if not isinstance(package, str) or not package:
        raise TypeError("load_package() takes the package's name (__name__ in its __init__.py),"
                        " not %r" % (package,))
    header = _rel(header, "the header")
    if instantiate is not None:
        instantiate = _rel(instantiate, "instantiate.yml")
    folder = package_folder(package)
    if folder is None:
        raise BindError("load_package: no installed package %r (with a folder on disk) on "
                        "sys.path" % (package,))
    m, m_path, lib_path = _manifest(package, folder, header, instantiate)
    h_path = os.path.join(folder, header)
    y_path = os.path.join(folder, instantiate) if instantiate else None
    try:
        h_text = _travel._read_regular(h_path, _travel.TEXT_LIMIT)
        y_text = _travel._read_regular(y_path, _travel.TEXT_LIMIT) if y_path else None
    except OSError as e:
        raise BindError("package %s's kernels cannot be bound: %s: %s; %s"
                        % (package, e.filename, e.strerror, _remedy(package))) from None
    if sources_hash(h_text, y_text, m["flags"], m["strict"]) != m["sources_sha256"]:
        raise BindError(
            "package %s's kernel library %s is stale: %s%s changed since it was built (their "
            "SHA-256 is no longer the one %s records), so its calls could not be trusted to "
            "match the header; %s" % (package, lib_path, h_path, " or " + y_path if y_path else "",
                                      m_path, _remedy(package)))
    try:  # hashed, then loaded: the bytes it maps are the ones hashed (bindthem._loading)
        opened = _loading.open_checked(lib_path, m["library_sha256"], _travel.LIBRARY_LIMIT)
    except _loading.Unreadable as e:
        raise BindError("package %s's kernels cannot be bound: %s: %s; %s"
                        % (package, e.filename, e.strerror, _remedy(package))) from None
    except _loading.Mismatch as e:
        raise BindError(
            "package %s's kernel library %s is not the one built with it (SHA-256 %s..., %s "
            "records %s...): it was replaced or damaged; %s"
            % (package, lib_path, e.found[:12], m_path, m["library_sha256"][:12],
               _remedy(package))) from None
    if name is None:
        name = package + "." + os.path.splitext(os.path.basename(header))[0]
    opts = _options(gil, copy_const)
    source = _travel.Source(
        kind="package", package=package, name=name, strict=m["strict"], header=h_path,
        header_text=h_text, instantiate=y_path, yaml_text=y_text, library=m["library"],
        library_hash=opened.sha256, options=opts)
    # bound from the bytes just checked against the manifest, not read again
    lib = _make(opened.name, h_path, y_path, name, m["strict"], source, opts,
                source.plan(h_path, y_path))
    lib.__file__ = lib_path
    warn_if_left_out(lib)
    sys.modules[name] = lib
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
    try:  # hashed, then loaded: the bytes it maps are the ones hashed (bindthem._loading)
        opened = _loading.open_checked(path, source.library_hash, _travel.LIBRARY_LIMIT)
    except _loading.Unreadable as e:
        raise PickleError("cannot unpickle %r: package %s is installed in %s, but its kernel "
                          "library %s cannot be read (%s): install the same version of %s"
                          % (source.name, source.package, folder, path, e.strerror,
                             source.package)) from None
    except _loading.Mismatch as e:
        raise PickleError(
            "cannot unpickle %r: package %s's kernel library %s here is not the one pickled "
            "(SHA-256 %s..., pickled %s...): another version of %s is installed; install the "
            "pickling side's version" % (source.name, source.package, path, e.found[:12],
                                        source.library_hash[:12], source.package)) from None
    with source._materialised() as (header, inst):  # a copy in the cache: held until bound
        lib = _make(opened.name, header, inst, source.name, source.strict, source,
                    source.options, source.plan(header, inst))
    lib.__file__ = path
    return lib
