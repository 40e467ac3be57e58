"""bindthem.build: compile a header's kernels and instantiations, then load them.

The translation unit is the header itself (its untemplated definitions) plus
one explicit instantiation per overload that instantiate.yml lists, written
from the same metadata that binds them. Libraries are cached under
``cache_dir`` (default ``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``) in a
folder named by a SHA-256 of the header, the YAML, the generated source, the
compiler's identity and the flags; the files the compiler read (``-MD``) are
hashed too, so editing an included header rebuilds, into a library whose
name carries those hashes (the loader would return the already loaded old
library for a reused path). Builds write to a
temporary file and are renamed into place under a file lock, so two processes
building at once are safe.
"""

import os
import shlex
import subprocess

from . import _core
from ._cache import compile_cached, flag_list, hash_file
from .errors import BuildError
from .library import _make

__all__ = ["build", "compile_library", "instantiation_source"]

DEFAULT_FLAGS = ("-O3",)
REQUIRED_FLAGS = ("-fPIC", "-shared")
# Headers written for pybind11 bindings lean on what pybind11 includes (pyamg's
# linalg.h uses std::vector without <vector>), so the generated source
# includes the common standard headers before the kernel header.
PRELUDE = "".join("#include <%s>\n" % h for h in (
    "algorithm", "cmath", "complex", "cstddef", "cstdint", "cstdlib", "cstring", "iostream",
    "limits", "stdexcept", "string", "utility", "vector"))


def instantiation_source(header, instantiate=None, *, strict=False):
    """The C++ source bindthem.build compiles for ``header``: the header and an
    explicit instantiation of every templated overload."""
    meta = _core.parse_header(header, instantiate, strict=strict)
    lines = [PRELUDE.rstrip("\n"), '#include "%s"' % os.path.abspath(header), ""]
    decls = {d["name"]: d for d in meta["declarations"]}
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            if ov["template_args"]:
                sig = ov["signature"]
                lines.append("template %s;" % sig)
    del decls
    return "\n".join(lines) + "\n"


def _compiler_id(cxx):
    try:
        out = subprocess.run(cxx + ["--version"], capture_output=True, text=True, timeout=60)
        return out.stdout + out.stderr
    except OSError as e:
        raise BuildError("cannot run the C++ compiler %r: %s" % (" ".join(cxx), e),
                         output=str(e), command=cxx) from None


def compile_library(header, instantiate=None, *, output=None, cxx=None, cxxflags=None,
                    cache_dir=None, strict=False):
    """Compile ``header``'s kernels (and instantiations) into a shared library.

    Returns its path: ``output`` when given, else the cached library.
    ``cxx`` defaults to ``$CXX`` or ``c++``; ``cxxflags`` (a list or a
    string) replaces the default ``-O3``; ``-fPIC -shared`` are always added.
    """
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    cxx = shlex.split(cxx or os.environ.get("CXX") or "c++")
    flags = flag_list(cxxflags, DEFAULT_FLAGS)
    source = instantiation_source(header, instantiate, strict=strict)
    stem = os.path.splitext(os.path.basename(header))[0]
    return compile_cached(
        key_parts=(header, hash_file(header), instantiate or "",
                   hash_file(instantiate) if instantiate else "", source, _compiler_id(cxx),
                   "\0".join(cxx + flags)),
        cache_dir=cache_dir, folder_name=stem, stem="lib" + stem, ext=".so", source=source,
        suffix=".cpp", what="compiling the kernels", output=output,
        status="compiling %s with %s" % (os.path.basename(header), os.path.basename(cxx[-1])),
        command=lambda src, dep, out: (cxx + flags + list(REQUIRED_FLAGS)
                                       + ["-MD", "-MF", dep, src, "-o", out]))


def build(header, instantiate=None, *, name=None, cxx=None, cxxflags=None, cache_dir=None,
          strict=False):
    """Compile ``header``'s untemplated functions and the explicit
    instantiations ``instantiate`` lists with the system C++ compiler, then
    bind them (see :func:`bindthem.load`). Raises :class:`bindthem.BuildError`
    with the compiler's output when it fails."""
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    lib = compile_library(header, instantiate, cxx=cxx, cxxflags=cxxflags, cache_dir=cache_dir,
                          strict=strict)
    reduce = (_build_again, (header, instantiate, name, cxx, cxxflags, cache_dir, strict))
    return _make(lib, header, instantiate, name, strict, reduce)


def _build_again(header, instantiate, name, cxx, cxxflags, cache_dir, strict):
    return build(header, instantiate, name=name, cxx=cxx, cxxflags=cxxflags,
                 cache_dir=cache_dir, strict=strict)
