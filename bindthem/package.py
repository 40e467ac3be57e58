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
  the library (``library_sha256``);
- for a header read through the C preprocessor (``cpp``, as
  :func:`bindthem.load` reads it), ``<stem>.bindthem.i``: the preprocessor's
  output, the bytes the package binds (and ``sources_sha256`` hashes in the
  header's place), so that importing it runs no preprocessor.

:func:`load_package` finds them in the installed package, recomputes both
hashes, and binds the library (bindthem._services.loading: the bytes hashed
are the bytes loaded) only when both are the recorded ones: a header or YAML
edited after the build, or a library replaced, is a :class:`bindthem.BindError`
naming the files and the remedy, never calls with the wrong signatures.

The API: the manifest, its checks and the lazy module's text are
bindthem._services.packaging's; this module checks the arguments, runs the
build steps and re-exports those names.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import warnings
from typing import Any

from . import _core
from ._base.files import write_text
from ._base.types import Flags, GilOption, StrPath
from ._services import preprocess
from ._services.binding import Library, plan_message, warn_if_left_out
from ._services.packaging import LAZY_MODULE as LAZY_MODULE
from ._services.packaging import MANIFEST_SUFFIX as MANIFEST_SUFFIX
from ._services.packaging import (
    _lazy_module_path,
    _rel,
    bind_installed,
    library_name,
    preprocessed_name,
)
from ._services.packaging import lazy_module_text as lazy_module_text
from ._services.packaging import manifest_name as manifest_name
from ._services.packaging import package_folder as package_folder
from ._services.packaging import sources_hash as sources_hash
from ._services.packaging import write_manifest as write_manifest
from .errors import BindError
from .errors import warn as _warn
from .library import CppOption, compile_library

__all__ = ["LAZY_MODULE", "MANIFEST_SUFFIX", "bind_on_first_use", "lazy_module_text",
           "load_package", "manifest_name", "package_built_library", "package_flags",
           "package_folder", "package_library", "package_sources", "sources_hash",
           "write_lazy_module", "write_manifest"]


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


# package_library's arguments an editable build's manifest keeps, and its import
# rebuilds with
_REBUILD_OPTIONS = ("cxx", "cxxflags", "extra_cxxflags", "openmp", "lazy", "package", "cpp",
                    "cppflags")


def package_library(folder: StrPath, header: str, instantiate: str | None = None, *,
                    module: str, source_folder: StrPath | None = None, cxx: str | None = None,
                    cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                    openmp: bool = False, strict: bool = False, lazy: bool = False,
                    package: str | None = None, cpp: CppOption = "auto",
                    cppflags: Flags | None = None, editable: bool = False) -> list[str]:
    """Compile ``header`` (and ``instantiate``), paths relative to
    ``source_folder`` (default ``folder``), into ``folder``: the header, the
    YAML, the library, the stub of ``module`` and the manifest; with
    ``lazy``, also the module itself, which binds on first use
    (:func:`write_lazy_module`). Returns the paths written. Flags as
    :func:`bindthem.build`'s. ``cpp``, ``cppflags``: as :func:`bindthem.load`'s
    (the source header is preprocessed, in its own folder); a Plan read
    through the preprocessor is shipped as ``<stem>.bindthem.i`` and bound at
    import as it is. The library is compiled from the header as written.
    ``editable``: an editable install's build (``folder`` is the source
    folder): the manifest keeps these options, and an import that finds the
    header or YAML edited since rebuilds with them (:func:`load_package`)."""
    # imported here: only a build step needs the build
    from ._services.compile.kernels import resolve_flags

    # imported here: bindthem imports this module, and `python -m bindthem.stubs`
    # must find bindthem.stubs not yet imported
    from .stubs import render_metadata

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
    # what binds: the header as written or its preprocessor's output (read where it lies,
    # beside its local includes)
    plan, how = preprocess.plan_of(os.path.abspath(os.path.join(src, header)),
                                   os.path.abspath(os.path.join(src, instantiate))
                                   if instantiate else None, strict, cpp, cppflags)
    meta = plan.metadata()
    h_path = os.path.join(folder, header)
    y_path = os.path.join(folder, instantiate) if instantiate else None
    lib_rel = library_name(header)
    lib_path = os.path.join(folder, lib_rel)
    compile_library(h_path, y_path, output=lib_path, cxx=cxx, cxxflags=cxxflags,
                    extra_cxxflags=extra_cxxflags, openmp=openmp, strict=strict)
    stub = os.path.splitext(h_path)[0] + ".pyi"
    write_text(stub, render_metadata(meta, module))
    pre_path = os.path.join(folder, preprocessed_name(header))
    if not how.used and os.path.exists(pre_path):
        os.remove(pre_path)  # an earlier build's: this manifest does not name it
    given = locals()
    rebuild = {k: given[k] for k in _REBUILD_OPTIONS} if editable else None
    m_path = write_manifest(folder, header, instantiate, module=module, flags=flags,
                            strict=strict, header_path=h_path, instantiate_path=y_path,
                            preprocessed=plan.header_text if how.used else None,
                            rebuild=rebuild)
    written += [lib_path, stub] + ([pre_path] if how.used else []) + [m_path]
    if lazy:
        written.append(write_lazy_module(folder, header, instantiate, module=module,
                                         package=package, header_path=h_path,
                                         instantiate_path=y_path, strict=strict, meta=meta))
    return written


def write_lazy_module(folder: StrPath, header: str, instantiate: str | None, *, module: str,
                      package: str | None, header_path: StrPath,
                      instantiate_path: StrPath | None, strict: bool = False,
                      meta: Any = None) -> str:
    """Writes the module ``module`` (of ``package``, whose folder is
    ``folder``) as ``<last part of module>.py``: :data:`LAZY_MODULE`, which
    binds on first use; its names are the stub's
    (:func:`bindthem.stubs.kernel_names`). ``meta``: the metadata of the
    Plan the package binds (default: the header's as written). Returns its
    path."""
    from .stubs import kernel_names

    path = _lazy_module_path(os.fspath(folder), package, module)
    if meta is None:
        meta = _core.parse_header(os.fspath(header_path),
                                  os.fspath(instantiate_path) if instantiate_path else None,
                                  strict=strict)
    write_text(path, lazy_module_text(module, header, instantiate, kernel_names(meta)))
    return path


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
    # imported here: only a build step needs the build
    from ._services.compile.kernels import build_warnings, resolve_flags

    header = os.path.abspath(os.fspath(header))
    flags = resolve_flags(cxxflags, extra_cxxflags, openmp)
    meta = _core.parse_header(header, instantiate, strict=strict)
    why = plan_message(meta)
    if why:
        _warn(why)
    build_warnings(header, {}, flags, {}, meta)
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
    # imported here: only a build step needs the build's source
    from ._services.compile.source import instantiation_source
    from .stubs import render

    stem = os.path.splitext(os.path.basename(os.fspath(header)))[0]
    cpp = os.path.join(os.fspath(folder), stem + ".bindthem.cpp")
    stub = os.path.join(os.fspath(folder), stem + ".pyi")
    write_text(cpp, instantiation_source(header, instantiate, strict=strict))
    write_text(stub, render(header, instantiate, module, strict=strict))
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
    try:
        lib = bind_installed(package, header, instantiate, name, gil, copy_const)
    except BindError as e:
        stale = getattr(e, "stale", None)
        if stale is None or not _rebuild_editable(stale, package, header, instantiate):
            raise
        lib = bind_installed(package, header, instantiate, name, gil, copy_const)
    warn_if_left_out(lib)
    sys.modules[lib.__name__] = lib
    return lib


# one rebuild at a time in this process (threads importing at once wait for it)
_rebuild_lock = threading.Lock()


def _rebuild_editable(stale, package, header, instantiate):
    """An editable install's stale library (``stale``: a BindError's, a
    packaging.Stale) rebuilt in place, as meson-python rebuilds on import:
    with the options its build recorded, saying so on stderr. False where the
    manifest is a wheel's (no ``rebuild``): that stays a BindError. A failed
    compile raises its BuildError."""
    opts = stale.manifest.get("rebuild")
    if not isinstance(opts, dict) or not set(opts) <= set(_REBUILD_OPTIONS):
        return False
    with _rebuild_lock:
        sys.stderr.write("bindthem: %s changed since the editable install of %s was built; "
                         "rebuilding its kernel library\n" % (stale.changed, package))
        sys.stderr.flush()
        package_library(stale.folder, header, instantiate, module=stale.manifest["module"],
                        strict=stale.manifest["strict"], editable=True, **opts)
    return True
