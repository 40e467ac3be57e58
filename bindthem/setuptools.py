"""Compile a package's kernels when its wheel (or editable install) is built.

In the package's ``setup.py``::

    from setuptools import setup
    from bindthem.setuptools import KernelLibrary, cmdclass

    setup(cmdclass=cmdclass(KernelLibrary("mypkg", "kernels.h", "instantiate.yml")))

and in its ``__init__.py``::

    import bindthem
    bindthem.load_package(__name__, "kernels.h", "instantiate.yml")
    from . import kernels

``cmdclass`` returns a ``build_py`` that, after copying the package's Python
files, runs :func:`bindthem.package.package_library` for every
:class:`KernelLibrary` (the library, the header, the YAML, the ``.pyi`` stub
and the manifest, into the build folder, or into the source folder for an
editable install), and a ``bdist_wheel`` that tags the wheel
``py3-none-<platform>``: the kernel library links no Python, so one wheel
serves every CPython 3 on that platform. bindthem must be importable by the
build (``[build-system] requires = ["setuptools>=64", "bindthem"]``).
"""

from __future__ import annotations

import os
from typing import Any

from setuptools.command.build_py import build_py as _build_py  # type: ignore[import-untyped, unused-ignore]

from ._base.types import Flags
from .package import package_library

try:  # setuptools >= 70.1 has its own; older ones use the wheel package's
    from setuptools.command.bdist_wheel import (  # type: ignore[import-untyped, unused-ignore]
        bdist_wheel as _bdist_wheel,
    )
except ImportError:  # pragma: no cover - depends on the build environment
    try:
        from wheel.bdist_wheel import (  # type: ignore[import-not-found, no-redef, unused-ignore]
            bdist_wheel as _bdist_wheel,
        )
    except ImportError:
        _bdist_wheel = None

__all__ = ["KernelLibrary", "cmdclass"]


class KernelLibrary:
    """One header (and instantiate.yml) of ``package`` to compile into it.

    ``header`` and ``instantiate`` are relative to the package's folder (as
    :func:`bindthem.load_package` takes them). ``cxx``, ``cxxflags``,
    ``extra_cxxflags``, ``openmp`` and ``strict`` are
    :func:`bindthem.build`'s (``$CXX`` and ``$CXXFLAGS`` of the build apply,
    as there). ``module`` (default ``<package>.<header stem>``) is the module
    the stub describes: the name ``load_package`` gives the Library.
    ``lazy``: the build also writes that module (``<header stem>.py``),
    which binds on first use (docs/packages.rst, "Binding on first use"):
    importing it loads nothing, and the checks of ``load_package`` run at
    the first call of one of its kernels. ``cpp`` and ``cppflags``:
    whether the header is read through the C preprocessor, as
    :func:`bindthem.load` reads it; its output ships in the package and is
    bound at import without one.
    """

    def __init__(self, package: str, header: str, instantiate: str | None = None, *,
                 module: str | None = None, cxx: str | None = None,
                 cxxflags: Flags | None = None, extra_cxxflags: Flags | None = None,
                 openmp: bool = False, strict: bool = False, lazy: bool = False,
                 cpp: bool | str = "auto", cppflags: Flags | None = None) -> None:
        self.package = package
        self.lazy = lazy
        self.header = header
        self.instantiate = instantiate
        self.module = module or "%s.%s" % (package, os.path.splitext(
            os.path.basename(header))[0])
        self.options: dict[str, Any] = dict(cxx=cxx, cxxflags=cxxflags,
                                            extra_cxxflags=extra_cxxflags, openmp=openmp,
                                            strict=strict, cpp=cpp, cppflags=cppflags)

    def __repr__(self) -> str:
        return "KernelLibrary(%r, %r, %r)" % (self.package, self.header, self.instantiate)


def cmdclass(*libraries: KernelLibrary, base: dict[str, type] | None = None) -> dict[str, type]:
    """``setup(cmdclass=...)`` for a package shipping ``libraries``: a
    ``build_py`` that compiles them and a ``bdist_wheel`` that tags the
    wheel ``py3-none-<platform>``. ``base``: other commands of yours, whose
    ``build_py``/``bdist_wheel`` (if any) these extend."""
    base = dict(base or {})
    for lib in libraries:
        if not isinstance(lib, KernelLibrary):
            raise TypeError("bindthem.setuptools.cmdclass() takes KernelLibrary objects, not %r"
                            % (lib,))

    class build_py(base.get("build_py", _build_py)):  # type: ignore[misc]
        kernel_libraries = libraries

        def run(self) -> None:
            super().run()
            for lib in self.kernel_libraries:
                source = self.get_package_dir(lib.package)
                if getattr(self, "editable_mode", False):
                    folder = source
                else:
                    folder = os.path.join(self.build_lib, *lib.package.split("."))
                self.announce("bindthem: compiling %s of %s" % (lib.header, lib.package), 2)
                package_library(folder, lib.header, lib.instantiate, module=lib.module,
                                source_folder=source or os.curdir, lazy=lib.lazy,
                                package=lib.package,
                                editable=bool(getattr(self, "editable_mode", False)),
                                **lib.options)

    out = dict(base, build_py=build_py)
    wheel_base = base.get("bdist_wheel", _bdist_wheel)
    if wheel_base is not None:
        class bdist_wheel(wheel_base):  # type: ignore[misc, valid-type]
            def finalize_options(self) -> None:
                # a platform wheel: it holds a shared library. The distribution says so
                # (bdist_wheel and install read it), so the files go to platlib
                self.distribution.has_ext_modules = lambda: True  # type: ignore[method-assign]
                super().finalize_options()

            def get_tag(self) -> tuple[str, str, str]:
                _, _, plat = super().get_tag()
                return "py3", "none", plat

        out["bdist_wheel"] = bdist_wheel
    return out
