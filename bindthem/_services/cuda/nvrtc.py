"""NVRTC for bindthem.cuda: CUDA's run-time compiler, in-process, no nvcc needed.

The prelude NVRTC's source starts with is the data file prelude.cuh beside
this module (package data, read at import).
"""

from __future__ import annotations

import functools
import glob
import os
import re
from importlib import resources
from typing import Any

from ... import _core
from ..._base.types import Archs, Flags, StrPath
from ...errors import BindValueError, BuildError
from ..cache import compile_cached, flag_list
from ..compile.source import snapshot_name, write_snapshot
from .nvcc import _arch_items, _cuda_home, _unsupported, _with_std


def _kernel_overloads(meta):
    """(overload, declaration) of every ``__global__`` overload, YAML order."""
    decls = meta["declarations"]
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            d = decls[ov["declaration"]]
            if d["global"]:
                yield ov, d


def _source_of(include, meta, prelude):
    """The unit: the prelude, ``include`` (the header's snapshot, see
    bindthem._services.compile.source.write_snapshot, or its path) and the instantiations."""
    lines = [prelude.rstrip("\n"), '#include "%s"' % include, ""]
    lines += [ov["instantiation"] for ov, _ in _kernel_overloads(meta) if ov["instantiation"]]
    return "\n".join(lines) + "\n"


# The prelude, the data file prelude.cuh. NVRTC has no host C++ library: the
# names the CPU prelude brings, from libcu++ (cuda/std, shipped with the
# toolkit and the nvidia-cuda-cccl wheel), put into std. std::complex<T>
# derives from cuda::std::complex<T>, so that kernels are mangled with
# St7complex as nvcc and bindthem mangle them; cuda::std's operators and
# functions take it (derived-to-base).
NVRTC_PRELUDE = resources.files(__package__).joinpath("prelude.cuh").read_text(encoding="utf-8")
# The standard headers a kernel header may include under NVRTC: each an
# empty stand-in, since NVRTC_PRELUDE, which comes before the header,
# already brought their names into std from libcu++.
NVRTC_STD_HEADERS = ("cmath", "complex", "cstddef", "cstdint", "climits", "cstdlib", "cstring",
                     "limits", "utility", "type_traits", "algorithm")
NVRTC_REQUIRED = ("-std=c++17", "-default-device")
_NO_NVRTC = ("cannot find libnvrtc (NVRTC, CUDA's run-time compiler): install the CUDA "
             "toolkit (its lib64 has it; set $CUDA_HOME if it is not in /usr/local/cuda), or "
             "`pip install nvidia-cuda-nvrtc` (CUDA 13; nvidia-cuda-nvrtc-cu12 for CUDA 12), "
             "or point $BINDTHEM_LIBNVRTC at the library")


def _site_dirs():
    import site
    import sys
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # pragma: no cover - virtualenv's old site module
        pass
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(os.path.join(d, "nvidia"))]


def _nvrtc_candidates(nvrtc=None):
    if nvrtc:
        return [os.fspath(nvrtc)]
    env = os.environ.get("BINDTHEM_LIBNVRTC")
    if env:
        return [env]
    cands = []
    for home in dict.fromkeys([_cuda_home(), "/usr/local/cuda"]):
        for lib in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
            cands += sorted(glob.glob(os.path.join(home, lib, "libnvrtc.so.[0-9]*")), reverse=True)
    for d in _site_dirs():  # the nvidia-cuda-nvrtc wheels: nvidia/cu13/lib, nvidia/cuda_nvrtc/lib
        cands += sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnvrtc.so.[0-9]*")),
                        reverse=True)
    cands = [c for c in cands if re.search(r"libnvrtc\.so\.\d+$", c)]
    return cands + ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"]


@functools.lru_cache(maxsize=None)
def _nvrtc_lib(nvrtc, env, home):
    """(path, {'version', 'archs'}) of the first libnvrtc that loads."""
    tried = []
    for cand in _nvrtc_candidates(nvrtc):
        try:
            return cand, _core.nvrtc(cand)
        except BuildError as e:
            tried.append(str(e))
    raise BuildError(_NO_NVRTC + "; tried:\n  " + "\n  ".join(tried), output="\n".join(tried))


def find_nvrtc(nvrtc: StrPath | None = None) -> tuple[str, dict[str, Any]]:
    """The libnvrtc :func:`compile_nvrtc` uses, and what it says of itself:
    ``(path, {'version': (13, 0), 'archs': (75, 80, ...)})``. Searched:
    ``nvrtc``, else ``$BINDTHEM_LIBNVRTC``, else the toolkit's lib64
    (``$CUDA_HOME``, ``/usr/local/cuda``), the ``nvidia-cuda-nvrtc`` wheels'
    ``nvidia/*/lib``, then the dynamic loader's path (``libnvrtc.so.13``,
    ``.12``). Raises :class:`bindthem.BuildError` naming what to install."""
    return _nvrtc_lib(os.fspath(nvrtc) if nvrtc else None,
                      os.environ.get("BINDTHEM_LIBNVRTC"), _cuda_home())


def _toolkit_include(lib_path, holds):
    """The first include folder holding the file `holds`, or None: the
    toolkit's include/cccl (CUDA 13) or include, beside libnvrtc or under
    $CUDA_HOME, or a nvidia-* wheel's."""
    roots = [_cuda_home(), "/usr/local/cuda"]
    if os.path.isabs(lib_path):
        roots.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(lib_path))))
    dirs = []
    for r in dict.fromkeys(roots):
        dirs += [os.path.join(r, "include", "cccl"), os.path.join(r, "include")]
    for d in _site_dirs():
        dirs += glob.glob(os.path.join(d, "nvidia", "*", "include", "cccl"))
        dirs += glob.glob(os.path.join(d, "nvidia", "*", "include"))
    for d in dirs:
        if os.path.exists(os.path.join(d, holds)):
            return d
    return None


def _cccl_include(lib_path):
    """The folder holding cuda/std/complex (libcu++; a nvidia-cuda-cccl
    wheel has it too), or None."""
    return _toolkit_include(lib_path, os.path.join("cuda", "std", "complex"))


def _fp16_include(lib_path):
    """The folder holding cuda_fp16.h and cuda_bf16.h (``__half``,
    ``__nv_bfloat16``; a nvidia-cuda-runtime wheel has them too), or None."""
    return _toolkit_include(lib_path, "cuda_fp16.h")


def _nvrtc_target(arch, archs):
    """('sm' or 'compute', capability): one target; default PTX for the
    oldest architecture from sm_70 on (the oldest of DEFAULT_ARCHS) this NVRTC
    supports, which any newer GPU JITs."""
    if arch is None:
        return "compute", min(a for a in archs if a >= 70) if any(a >= 70 for a in archs) \
            else min(archs)
    items = _arch_items(arch)
    if len(items) != 1:
        raise BindValueError("arch=%r: NVRTC compiles for one architecture at a time (one "
                             "CUBIN, or PTX with 'compute_XX'); use nvcc for a fatbin of several"
                             % (arch,))
    cap, kind = items[0]
    _unsupported([cap], archs, "NVRTC")
    return kind, cap


_NVRTC_LOCATION = re.compile(r"^(\S[^\n(]*)\((\d+)\): ", re.M)


def _includes(path):
    """The #include "..." lines of the file at path (the C lexer's: one in a
    comment or a string is none), or [] when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return _core.header_directives(f.read())["includes"]
    except OSError:
        return []


def _local_includes(header, meta, dirs):
    """The header and the files its #include "..." reach (found beside the
    including file or in dirs), transitively: NVRTC writes no depfile."""
    seen, todo = [], [header]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        for inc in meta["includes"] if path == header else _includes(path):
            for d in [os.path.dirname(path)] + dirs:
                p = os.path.normpath(os.path.join(d, inc["name"]))
                if os.path.isfile(p):
                    todo.append(p)
                    break
    return seen


def _nvrtc_compile(lib, header, meta, source, options, cubin, src, dep, out):
    """Compiles src's text with NVRTC into out and writes the depfile (the
    header's local includes: the header itself is the snapshot of the bytes
    keyed); returns NVRTC's log. Checks each kernel's lowered name against
    bindthem's mangling."""
    kernels = [(ov, d) for ov, d in _kernel_overloads(meta) if not d["extern_c"]]
    # each kernel's address expression, which NVRTC lowers to its name
    exprs = [ov["name_expression"] for ov, _ in kernels]
    try:
        res = _core.nvrtc(lib, source, src, options, exprs, cubin)
    except BuildError as e:
        hint = ""
        if re.search(r'cannot open source file "(vector|string|iostream|stdexcept|[a-z_]+)"',
                     e.output or "") or "std::complex" in (e.output or ""):
            hint = ("\nNVRTC compiles device code only and has no host C++ standard "
                    "library: bindthem's prelude gives std::complex, <cmath>, <cstdint>, "
                    "<limits>, <utility> and min/max from libcu++ (cuda/std: the CUDA "
                    "toolkit's include/cccl or `pip install nvidia-cuda-cccl`)%s; "
                    "<vector>, <string>, <iostream> have no device version (build with "
                    "nvcc instead)." % ("" if _cccl_include(lib) else ", not found here"))
        # NVRTC writes "file(12): error: ..."; the message says file:12: as gcc does
        log = _NVRTC_LOCATION.sub(r"\1:\2: ", (e.output or "").strip())
        raise BuildError("NVRTC failed to compile %s: %s\n%s%s" % (header, e, log, hint),
                         output=e.output, command=["nvrtc", lib] + list(options)) from None
    wrong = [(ov["signature"], low, ov["symbol"])
             for (ov, _), low in zip(kernels, res["lowered"]) if low != ov["symbol"]]
    if wrong:
        raise BuildError(
            "NVRTC and bindthem name these kernels differently, so bindthem would not find "
            "them in the module:\n" + "\n".join(
                "  %s: NVRTC lowers it to %s, bindthem mangles it %s" % w for w in wrong)
            + "\n(a type NVRTC spells otherwise than the host compiler, e.g. std::complex "
            "without bindthem's prelude)", output=res["log"], command=["nvrtc", lib])
    with open(out, "wb") as f:
        f.write(res["image"])
    incs = [o[2:] for o in options if o.startswith("-I")]
    with open(dep, "w") as f:
        f.write("%s: %s\n" % (out, " ".join(p.replace(" ", "\\ ")
                                             for p in _local_includes(header, meta, incs)[1:])))
    return res["log"]


def _std_shims(folder):
    """A folder of empty stand-ins for the standard headers NVRTC lacks
    (NVRTC_STD_HEADERS): the prelude already declared their names."""
    shims = os.path.join(folder, "nvrtc-std")
    os.makedirs(shims, exist_ok=True)
    for h in NVRTC_STD_HEADERS:
        path = os.path.join(shims, h)
        if not os.path.exists(path):
            with open(path + ".tmp%d" % os.getpid(), "w") as f:
                f.write("#pragma once\n// bindthem: <%s> under NVRTC is the prelude's libcu++\n"
                        % h)
            os.replace(path + ".tmp%d" % os.getpid(), path)
    return shims


def compile_nvrtc(header: StrPath, instantiate: StrPath | None = None, *,
                  output: StrPath | None = None, arch: Archs | None = None,
                  nvrtc: StrPath | None = None, cxxflags: Flags | None = None,
                  extra_cxxflags: Flags | None = None, cache_dir: StrPath | None = None,
                  strict: bool = False, _load: Any = None) -> str:
    """Compile ``header``'s kernels at run time with NVRTC (no nvcc needed);
    returns the path of the CUBIN or PTX.

    ``arch``: one architecture: ``80``/``"sm_80"`` makes a CUBIN for it,
    ``"compute_80"`` PTX for it (the driver JITs PTX for its GPU at load);
    default PTX for the oldest architecture from sm_70 on this NVRTC supports. The library
    is found as :func:`find_nvrtc` says (``nvrtc=`` a path). Each kernel's
    name is asked of NVRTC (``nvrtcAddNameExpression`` /
    ``nvrtcGetLoweredName``) and must equal bindthem's mangling, else
    :class:`bindthem.BuildError` names both. Options: ``-std=c++17
    -default-device`` (NVRTC has no host code: unannotated functions are
    compiled as ``__device__``), the header's folder and libcu++ on the
    include path, then ``cxxflags`` (no defaults to replace) and
    ``extra_cxxflags``. The source is :data:`NVRTC_PRELUDE`, the
    header and its instantiations (see :func:`kernel_source`); cached as
    :func:`compile_fatbin` is, by NVRTC's version and options, local
    includes tracked.
    """
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    lib, info = find_nvrtc(nvrtc)
    kind, cap = _nvrtc_target(arch, info["archs"])
    plan = _core.parse(header, instantiate, strict=strict)
    meta = plan.metadata()
    source = _source_of(snapshot_name(header), meta, NVRTC_PRELUDE)
    cccl = _cccl_include(lib)
    fp16 = _fp16_include(lib)
    stem = os.path.splitext(os.path.basename(header))[0]
    ext = ".cubin" if kind == "sm" else ".ptx"
    user = flag_list(cxxflags, ()) + flag_list(extra_cxxflags, ())
    options_key = (["-arch=%s_%d" % (kind, cap)] + _with_std(NVRTC_REQUIRED, user)
                   + ["-I" + (cccl or ""), "-I" + (fp16 or "")])

    def command(src, dep, out):
        # the snapshot beside src first, then the header's folder for its local includes
        write_snapshot(os.path.dirname(src), plan)
        inc = ["-I" + os.path.dirname(src), "-I" + os.path.dirname(header)] + (
            ["-I" + fp16] if fp16 else [])
        if cccl:
            inc = ["-I" + _std_shims(os.path.dirname(src)), "-I" + cccl] + inc
        options = ["-arch=%s_%d" % (kind, cap)] + _with_std(NVRTC_REQUIRED, user) + inc
        return _nvrtc_compile(lib, header, meta, source, options, kind == "sm", src, dep, out)

    return compile_cached(
        key_parts=(header, plan.header_sha256, instantiate or "", plan.yaml_sha256 or "",
                   source, lib,
                   "%d.%d" % info["version"], "\0".join(options_key)),
        cache_dir=cache_dir, folder_name=stem + "-nvrtc", stem=stem, ext=ext, source=source,
        suffix=".cu", what="NVRTC", output=output, command=command,
        load=_load and (lambda path: _load(path, plan)),
        status="compiling %s with NVRTC" % os.path.basename(header))
