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

import fcntl
import hashlib
import json
import os
import shlex
import subprocess
import tempfile

from . import _core
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


def _hash_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def _cached(folder, depsfile):
    """The cached library, if it and every file its build read are unchanged."""
    try:
        with open(depsfile) as f:
            rec = json.load(f)
        lib = os.path.join(folder, rec["library"])
        if os.path.exists(lib) and all(_hash_file(p) == h for p, h in rec["deps"].items()):
            return lib
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return None


def _parse_depfile(text):
    body = text.replace("\\\n", " ")
    _, _, deps = body.partition(":")
    return [d for d in shlex.split(deps.replace("\\ ", "\0")) if d]


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
    if cxxflags is None:
        flags = list(DEFAULT_FLAGS)
    elif isinstance(cxxflags, str):
        flags = shlex.split(cxxflags)
    else:
        flags = list(cxxflags)
    source = instantiation_source(header, instantiate, strict=strict)
    key = hashlib.sha256()
    for part in (header, _hash_file(header), instantiate or "",
                 _hash_file(instantiate) if instantiate else "", source,
                 _compiler_id(cxx), "\0".join(cxx + flags)):
        key.update(part.encode() + b"\0")
    digest = key.hexdigest()[:24]
    stem = os.path.splitext(os.path.basename(header))[0]
    cache_dir = os.path.abspath(os.fspath(
        cache_dir or os.environ.get("BINDTHEM_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "bindthem")))
    folder = os.path.join(cache_dir, "%s-%s" % (stem, digest))
    os.makedirs(folder, exist_ok=True)
    depsfile = os.path.join(folder, "deps.json")
    with open(os.path.join(folder, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        target = _cached(folder, depsfile) or _compile(cxx, flags, source, folder, stem,
                                                       depsfile)
    if output is None:
        return target
    output = os.path.abspath(os.fspath(output))
    tmp = output + ".tmp%d" % os.getpid()
    with open(target, "rb") as src, open(tmp, "wb") as dst:
        dst.write(src.read())
    os.replace(tmp, output)
    return output


def _compile(cxx, flags, source, folder, stem, depsfile):
    """Compiles into folder; returns the library's path. Its name carries a
    hash of the files the compiler read: the dynamic loader hands back an
    already loaded library for a path it has seen, so a rebuild after an
    included header changed must not reuse the old name."""
    fd, src = tempfile.mkstemp(suffix=".cpp", dir=folder)
    with os.fdopen(fd, "w") as f:
        f.write(source)
    tmp = os.path.join(folder, "lib%s.so.tmp%d" % (stem, os.getpid()))
    dep = src[:-4] + ".d"
    cmd = cxx + flags + list(REQUIRED_FLAGS) + ["-MD", "-MF", dep, src, "-o", tmp]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise BuildError("cannot run %r: %s" % (cmd[0], e), output=str(e), command=cmd) from None
    try:
        if proc.returncode != 0:
            out = proc.stdout + proc.stderr
            raise BuildError("compiling the kernels failed (exit %d):\n%s\ncommand: %s"
                             % (proc.returncode, out.strip(), shlex.join(cmd)),
                             output=out, command=cmd)
        with open(dep) as f:
            deps = [p for p in _parse_depfile(f.read()) if p != src]
        deps = {os.path.abspath(p): _hash_file(p) for p in deps}
        digest = hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()[:12]
        target = os.path.join(folder, "lib%s-%s.so" % (stem, digest))
        with open(depsfile + ".tmp", "w") as f:
            json.dump({"library": os.path.basename(target), "deps": deps}, f)
        os.replace(tmp, target)
        os.replace(depsfile + ".tmp", depsfile)
        return target
    finally:
        for p in (src, dep, tmp):
            if os.path.exists(p):
                os.unlink(p)


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
