"""bindthem.cuda: CUDA kernels from a kernel header, launched with dtype dispatch.

The header is read by the same C core as for CPU kernels (the dialect adds
``__global__`` and ``extern "C" __global__``; ``__device__``-only functions are
unbindable). :func:`load` binds the kernels of a compiled module (cubin,
fatbin or PTX), found by their Itanium-mangled names (plain names for
``extern "C"``); :func:`build` compiles the header's ``__global__`` templates,
instantiated as instantiate.yml lists, with nvcc into a cached fatbin first.

A kernel launches as ``lib.axpy[grid, block](a, x, y)``,
``lib.axpy[grid, block, shared_mem, stream](a, x, y)`` (CUDA's ``<<<...>>>``
order) or ``lib.axpy(a, x, y, grid=..., block=..., shared_mem=0,
stream=None)``; items left out of the brackets may be given as keywords
(``lib.axpy[grid, block](a, x, y, stream=s)``). It returns once the launch is
queued. Arrays are any objects with
``__cuda_array_interface__`` (v2/v3) or DLPack on a CUDA (or managed) device,
borrowed, never copied; :func:`to_device` makes a :class:`DeviceArray`.

The driver (``libcuda.so.1``, or ``$BINDTHEM_LIBCUDA``) is opened on first
use, never at import: ``import bindthem.cuda`` works without one.
"""

from __future__ import annotations

import functools
import glob
import operator
import os
import re
import shutil
import subprocess
import warnings
import weakref
from typing import Any

from . import _core, _travel
from . import library as _library
from ._cache import compile_cached, flag_list, hash_file
from ._types import Archs, Flags, StrPath
from .build import PRELUDE as HOST_PRELUDE
from .errors import BindTypeError, BindValueError, BuildError
from .library import Backend, _regular_file, warn_if_left_out

__all__ = ["CudaError", "DeviceArray", "Event", "Kernel", "LEGACY", "Launch", "Library",
           "NoDriverError", "PER_THREAD", "Stream", "build", "compile_fatbin", "compile_nvrtc",
           "device_count", "driver", "empty", "find_nvrtc", "is_available", "kernel_source",
           "load", "pinned_empty", "synchronize", "to_device", "zeros"]

CudaError = _core.CudaError
NoDriverError = _core.NoDriverError
DeviceArray = _core.DeviceArray
Kernel = _core.CudaKernel
Launch = _core.CudaLaunch
Event = _core.CudaEvent


class Stream:
    """A CUDA stream handle (``CUstream`` value) to launch on.

    ``Stream(handle)`` wraps a raw handle you own (from the driver or another
    library); a launch takes a bare int only for the driver's constants 0, 1
    and 2, so a misplaced launch item never reaches the driver as a stream.
    :data:`LEGACY` is the legacy default stream (``CU_STREAM_LEGACY``),
    :data:`PER_THREAD` the calling thread's default stream
    (``CU_STREAM_PER_THREAD``). ``stream=None`` is the legacy default stream
    too: bindthem resolves the legacy-stream variants of the driver API, and
    per-thread semantics are chosen per launch with this handle, not as a
    global mode. Any object with ``__cuda_stream__`` works as well.
    """

    __slots__ = ("handle", "name", "_destroy", "__weakref__")

    @classmethod
    def create(cls, *, non_blocking: bool = False, device: int | None = None) -> Stream:
        """A new stream in ``device``'s primary context (default: the current
        device), owned: destroyed when the object goes (``cuStreamDestroy``;
        its queued work still runs). ``non_blocking=True`` makes it
        ``CU_STREAM_NON_BLOCKING``: it does not wait for the legacy stream,
        nor the legacy stream for it."""
        if device is not None:
            device = operator.index(device)
        s = cls(_core.cuda_stream_create(device, bool(non_blocking)),
                "Stream.create(non_blocking=%s)" % bool(non_blocking))
        s._destroy = weakref.finalize(s, _core.cuda_stream_destroy, s.handle)
        return s

    def synchronize(self) -> None:
        """Wait (GIL released) until the work queued on the stream is done."""
        _core.cuda_stream_synchronize(self)

    def __init__(self, handle, name=None):
        if isinstance(handle, bool):
            raise TypeError("Stream(handle): handle must be an int, not bool")
        handle = operator.index(handle)
        if not 0 <= handle < 1 << 64:
            raise ValueError("Stream(handle): %d is not a 64-bit CUstream value" % handle)
        self.handle = handle
        self.name = name
        self._destroy = None

    def __cuda_stream__(self):
        return (0, self.handle)

    def __int__(self):
        return self.handle

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        if self._destroy is not None:
            return "<bindthem.cuda.%s 0x%x>" % (self.name, self.handle)
        return "bindthem.cuda.%s" % self.name if self.name else "Stream(0x%x)" % self.handle


LEGACY = Stream(_core.CUDA_STREAM_LEGACY, "LEGACY")
PER_THREAD = Stream(_core.CUDA_STREAM_PER_THREAD, "PER_THREAD")


class _CudaBackend(Backend):
    """The CUDA back end of :class:`bindthem.Library`: kernels launch rather
    than call (no GIL or copy options); each keeps its LibraryInfo, as a
    Function does (pickling, ``.library``, dask tokens)."""

    name = "cuda"
    noun = "CUDA kernels"
    what = "CUDA kernels"

    def attach(self, info, functions, options):
        for k in functions.values():
            k._set_info(info)


CUDA = _CudaBackend()

#: One Library class for every back end; ``bindthem.cuda.Library`` is it.
Library = _library.Library


def load(module: StrPath | bytes, header: StrPath, instantiate: StrPath | None = None, *,
         name: str | None = None, strict: bool = False) -> Library:
    """Load a CUDA module and bind the ``__global__`` kernels of ``header``.

    ``module`` is a .cubin/.fatbin/.ptx path or the image as bytes. With
    ``instantiate``, exactly the overloads it lists are bound, and one the
    module lacks raises :class:`bindthem.SymbolError` listing the kernels
    the module has (drivers 12.4+). On 12.4+ drivers each kernel's parameter
    layout is checked against the header at load time (:class:`bindthem.BindError`).
    The module is loaded with cuLibraryLoadData (12.0+ drivers: usable on any
    device) or else cuModuleLoadDataEx into the current device's primary
    context; a PTX JIT failure raises :class:`CudaError` with the JIT log.

    Returns a :class:`bindthem.Library`. It and its kernels pickle by value:
    the module image, the header's and the YAML's text; unpickling loads that
    image (:class:`NoDriverError` where there is no driver).
    """
    if isinstance(module, (bytes, bytearray, memoryview)):
        image, filename = bytes(module), "<bytes>"
    else:
        filename = os.path.abspath(os.fspath(module))
        _regular_file(filename)
        try:
            with open(filename, "rb") as f:
                image = f.read()
        except OSError as e:  # worded as the core words a header or YAML it cannot open
            raise type(e)(e.errno, "cannot open: %s" % e.strerror, filename) from None
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    lib = _bind(image, header, instantiate, name, strict, filename, None)
    lib.__bindthem__.source = _travel.Source(
        kind="cuda", name=name, strict=strict, header=header,
        header_text=_travel._read(header), instantiate=instantiate,
        yaml_text=_travel._read(instantiate) if instantiate else None, library=filename,
        image=image)
    warn_if_left_out(lib)
    return lib


def _bind(image, header, instantiate, name, strict, filename, source):
    """load() of a module image, and unpickling (with its Source)."""
    handle, kernels, metadata, unexported, not_kernels, left_out = _core.cuda_bind(
        image, header, instantiate, module=name, filename=filename, strict=strict)
    return Library(name, header, handle, kernels, metadata, unexported, source, backend=CUDA,
                   not_kernels=not_kernels, left_out=left_out)


# ---- nvcc ----

# The range bindthem compiles for by default: Volta to Hopper, plus PTX for
# the newest of them so that later GPUs JIT it. Archs the nvcc at hand no
# longer supports are left out (CUDA 13 dropped sm_70; it starts at sm_75).
DEFAULT_ARCHS = (70, 75, 80, 86, 89, 90)
DEFAULT_FLAGS = ("-O3",)
# libstdc++'s std::complex operators are host functions, constexpr from
# C++20 on: nvcc calls constexpr host functions from device code with
# --expt-relaxed-constexpr. So C++20 where nvcc has it (12.0+), else C++17;
# a -std= of the caller's wins.
NVCC_RELAXED = "--expt-relaxed-constexpr"
COMPILERS = ("nvcc", "nvrtc")


def _find_nvcc(nvcc=None):
    cand = _nvcc_candidate(nvcc)
    if not _exists(cand):
        raise BuildError("cannot find nvcc (pass nvcc=, or set $NVCC or $CUDA_HOME; or build "
                         "with compiler='nvrtc', which needs no nvcc)", output="",
                         command=[cand])
    return cand


def _exists(cand):
    """Whether nvcc candidate cand is a path that exists or a name on PATH."""
    return bool(os.path.exists(cand) or shutil.which(cand))


def _nvcc_candidate(nvcc=None):
    cand = nvcc or os.environ.get("NVCC") or shutil.which("nvcc")
    if not cand:
        cand = os.path.join(_cuda_home(), "bin", "nvcc")
    return cand


def _cuda_home():
    return os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"


@functools.lru_cache(maxsize=None)
def _nvcc_info(nvcc):
    """(nvcc --version text, sorted supported compute capabilities)."""
    try:
        ver = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=120)
        archs = subprocess.run([nvcc, "--list-gpu-arch"], capture_output=True, text=True,
                               timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BuildError("cannot run %s: %s" % (nvcc, e), output=str(e), command=[nvcc]) from None
    caps = sorted({int(m) for m in re.findall(r"compute_(\d+)", archs.stdout)})
    return ver.stdout + ver.stderr, tuple(caps)


def _nvcc_required(version):
    """The flags every nvcc build gets: C++20 (12.0+) or C++17, and relaxed
    constexpr (for std::complex's operators in device code)."""
    m = re.search(r"release (\d+)\.", version)
    return ["-std=c++20" if m and int(m.group(1)) >= 12 else "-std=c++17", NVCC_RELAXED]


def _arch_items(arch):
    """[(compute capability, 'sm' or 'compute')] from arch= (80, "sm_80",
    "compute_80", or a list of those)."""
    items = [arch] if isinstance(arch, (int, str)) else list(arch)
    out = []
    for a in items:
        m = re.fullmatch(r"(sm_|compute_)?(\d+)[af]?", str(a))
        if not m:
            raise BindValueError("arch=%r: expected an int like 80 or 'sm_80'" % (a,))
        out.append((int(m.group(2)), "compute" if m.group(1) == "compute_" else "sm"))
    return out


def _unsupported(caps, supported, who):
    bad = [a for a in caps if supported and a not in supported]
    if bad:
        raise BuildError("this %s does not support %s (it supports %s)"
                         % (who, ", ".join("sm_%d" % a for a in bad),
                            ", ".join("sm_%d" % a for a in supported)), output="")


def _archs(arch, supported):
    """Compute capabilities to build SASS for, from arch= (None, 80, "sm_80",
    "compute_80", or a list of those)."""
    if arch is None:
        chosen = [a for a in DEFAULT_ARCHS if not supported or a in supported]
        if not chosen and supported:
            chosen = [min(supported)]
        return chosen
    out = [c for c, _ in _arch_items(arch)]
    _unsupported(out, supported, "nvcc")
    return sorted(set(out))


def _kernel_overloads(meta):
    """(overload, declaration) of every ``__global__`` overload, YAML order."""
    decls = {(d["name"], d["line"]): d for d in meta["declarations"] if d["global"]}
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            d = decls.get((ov["function"], ov["line"]))
            if d is not None:
                yield ov, d


def _source_of(header, meta, prelude):
    lines = [prelude.rstrip("\n"), '#include "%s"' % header, ""]
    for ov, _ in _kernel_overloads(meta):
        if ov["template_args"]:
            lines.append("template __global__ %s;" % ov["signature"])
    return "\n".join(lines) + "\n"


def kernel_source(header: StrPath, instantiate: StrPath | None = None, *, strict: bool = False,
                  compiler: str = "nvcc") -> str:
    """The .cu source :func:`build` compiles: the standard prelude (for
    ``compiler="nvcc"`` the CPU build's, see :data:`bindthem.build.PRELUDE`;
    for ``"nvrtc"`` :data:`NVRTC_PRELUDE`), the header and an explicit
    instantiation of every templated ``__global__`` overload."""
    header = os.path.abspath(os.fspath(header))
    meta = _core.parse_header(header, instantiate, strict=strict)
    return _source_of(header, meta, _prelude(compiler))


def _prelude(compiler):
    if compiler not in COMPILERS:
        raise BindValueError("compiler=%r: expected 'nvcc' or 'nvrtc' (or None: nvcc when there "
                         "is one, else NVRTC)" % (compiler,))
    return HOST_PRELUDE if compiler == "nvcc" else NVRTC_PRELUDE


def _with_std(required, flags):
    """required + flags, without required's -std= when flags name one."""
    if any(f.startswith(("-std", "--std")) for f in flags):
        required = [f for f in required if not f.startswith("-std")]
    return list(required) + list(flags)


def _nvcc_flags(cxxflags, extra_cxxflags, flags, where):
    """nvcc's flags from ``cxxflags=`` (replaces ``-O3``) and ``extra_cxxflags=``
    (appended), the names bindthem.build has; None for the default.
    ``flags=`` is the old name of ``cxxflags=``, deprecated."""
    if flags is not None:
        if cxxflags is not None:
            raise BindTypeError("bindthem.cuda.%s(): cxxflags= and flags= both given; flags= is "
                            "the deprecated name of cxxflags=, pass that alone" % where)
        warnings.warn("bindthem.cuda.%s(flags=...) is deprecated: the option is called "
                      "cxxflags=, as in bindthem.build (flags= will be removed in the next "
                      "release)" % where, DeprecationWarning, stacklevel=3)
        cxxflags = flags
    if extra_cxxflags is None:
        return cxxflags
    return flag_list(cxxflags, DEFAULT_FLAGS) + flag_list(extra_cxxflags, ())


def compile_fatbin(header: StrPath, instantiate: StrPath | None = None, *,
                   output: StrPath | None = None, arch: Archs | None = None,
                   nvcc: str | None = None, cxxflags: Flags | None = None,
                   extra_cxxflags: Flags | None = None, cache_dir: StrPath | None = None,
                   strict: bool = False, flags: Flags | None = None, _load: Any = None) -> str:
    """Compile ``header``'s kernels with nvcc into a fatbin; returns its path.

    ``arch``: compute capabilities to build SASS for (default: those of
    sm_70, 75, 80, 86, 89, 90 this nvcc supports), plus PTX for the newest.
    Flags (lists or strings), as :func:`bindthem.build` names them:
    ``cxxflags`` **replaces** the default ``-O3``, ``extra_cxxflags`` is
    **appended** (``$CXXFLAGS`` is not: it holds host compiler flags).
    ``flags`` is the deprecated name of ``cxxflags`` (a
    :class:`DeprecationWarning`; removed in the next release).
    ``-std=c++20 --expt-relaxed-constexpr`` (C++17 before nvcc 12), which
    ``std::complex``'s operators in kernels need, are always passed, a
    ``-std=`` in the flags replacing bindthem's. The source includes the CPU
    build's standard prelude before the header. The fatbin is cached under
    ``cache_dir`` (``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``) by a hash of
    the header, the YAML, the source, nvcc's version and the command line;
    included headers are tracked (``-MD``).
    """
    cxx = _nvcc_flags(cxxflags, extra_cxxflags, flags, "compile_fatbin")
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    nvcc = _find_nvcc(nvcc)
    version, supported = _nvcc_info(nvcc)
    caps = _archs(arch, supported)
    flag_args = _with_std(_nvcc_required(version), flag_list(cxx, DEFAULT_FLAGS))
    gencode = []
    for c in caps:
        gencode += ["-gencode", "arch=compute_%d,code=sm_%d" % (c, c)]
    gencode += ["-gencode", "arch=compute_%d,code=compute_%d" % (caps[-1], caps[-1])]
    source = kernel_source(header, instantiate, strict=strict)
    stem = os.path.splitext(os.path.basename(header))[0]
    return compile_cached(
        key_parts=(header, hash_file(header), instantiate or "",
                   hash_file(instantiate) if instantiate else "", source, version,
                   "\0".join([nvcc] + flag_args + gencode)),
        cache_dir=cache_dir, folder_name=stem + "-cuda", stem=stem, ext=".fatbin",
        source=source, suffix=".cu", what="nvcc", output=output, load=_load,
        status="compiling %s with nvcc" % os.path.basename(header),
        command=lambda src, dep, out: ([nvcc, "-fatbin"] + flag_args + gencode
                                       + ["-MD", "-MF", dep, src, "-o", out]))


# ---- NVRTC ----

# NVRTC has no host C++ library: the names the CPU prelude brings, from
# libcu++ (cuda/std, shipped with the toolkit and the nvidia-cuda-cccl
# wheel), put into std. std::complex<T> derives from cuda::std::complex<T>,
# so that kernels are mangled with St7complex as nvcc and bindthem mangle
# them; cuda::std's operators and functions take it (derived-to-base).
NVRTC_PRELUDE = """\
// bindthem's NVRTC prelude: libcu++ standing in for the host standard library
#if __has_include(<cuda/std/complex>)
#include <cuda/std/cstddef>
#include <cuda/std/cstdint>
#include <cuda/std/climits>
#include <cuda/std/cstdlib>
#include <cuda/std/cstring>
#include <cuda/std/limits>
#include <cuda/std/cmath>
#include <cuda/std/complex>
#include <cuda/std/utility>
#include <cuda/std/type_traits>
#if __has_include(<cuda/std/__algorithm/min.h>)
#include <cuda/std/__algorithm/max.h>
#include <cuda/std/__algorithm/min.h>
#endif
namespace std {
using ::cuda::std::size_t;
using ::cuda::std::ptrdiff_t;
using ::cuda::std::int8_t; using ::cuda::std::int16_t;
using ::cuda::std::int32_t; using ::cuda::std::int64_t;
using ::cuda::std::uint8_t; using ::cuda::std::uint16_t;
using ::cuda::std::uint32_t; using ::cuda::std::uint64_t;
using ::cuda::std::numeric_limits;
using ::cuda::std::max; using ::cuda::std::min;
using ::cuda::std::swap; using ::cuda::std::pair; using ::cuda::std::move;
using ::cuda::std::abs; using ::cuda::std::fabs; using ::cuda::std::sqrt;
using ::cuda::std::exp; using ::cuda::std::log; using ::cuda::std::pow;
using ::cuda::std::sin; using ::cuda::std::cos; using ::cuda::std::tan;
using ::cuda::std::floor; using ::cuda::std::ceil; using ::cuda::std::fmin;
using ::cuda::std::fmax; using ::cuda::std::isnan; using ::cuda::std::isinf;
using ::cuda::std::real; using ::cuda::std::imag; using ::cuda::std::conj;
using ::cuda::std::norm; using ::cuda::std::arg; using ::cuda::std::polar;
template <class T>
class complex : public ::cuda::std::complex<T> {
public:
    using ::cuda::std::complex<T>::complex;
    __host__ __device__ constexpr complex(const ::cuda::std::complex<T> &c)
        : ::cuda::std::complex<T>(c) {}
};
}  // namespace std
#endif
"""
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


def _name_expression(ov, decl):
    """An expression NVRTC lowers to the kernel's name: the address of the
    instantiation, cast to its type (so that overloads don't clash)."""
    name = "::" + "::".join(list(decl["namespace"]) + [decl["name"]])
    if ov["template_args"]:
        name += "<%s>" % ", ".join(ov["template_args"])
    params = ", ".join(("const " if p["const"] and p["array"] else "") + p["type"]
                       + (" *" if p["array"] else "") for p in ov["params"])
    return "static_cast<void (*)(%s)>(&%s)" % (params, name)


_NVRTC_LOCATION = re.compile(r"^(\S[^\n(]*)\((\d+)\): ", re.M)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def _local_includes(header, dirs):
    """The header and the files its #include "..." reach (found beside the
    including file or in dirs), transitively: NVRTC writes no depfile."""
    seen, todo = [], [header]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for inc in _INCLUDE.findall(text):
            for d in [os.path.dirname(path)] + dirs:
                p = os.path.normpath(os.path.join(d, inc))
                if os.path.isfile(p):
                    todo.append(p)
                    break
    return seen


def _nvrtc_compile(lib, header, meta, source, options, cubin, src, dep, out):
    """Compiles src's text with NVRTC into out and writes the depfile;
    returns NVRTC's log. Checks each kernel's lowered name against
    bindthem's mangling."""
    kernels = [(ov, d) for ov, d in _kernel_overloads(meta) if not d["extern_c"]]
    exprs = [_name_expression(ov, d) for ov, d in kernels]
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
                                             for p in _local_includes(header, incs))))
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
    meta = _core.parse_header(header, instantiate, strict=strict)
    source = _source_of(header, meta, NVRTC_PRELUDE)
    cccl = _cccl_include(lib)
    fp16 = _fp16_include(lib)
    stem = os.path.splitext(os.path.basename(header))[0]
    ext = ".cubin" if kind == "sm" else ".ptx"
    user = flag_list(cxxflags, ()) + flag_list(extra_cxxflags, ())
    options_key = (["-arch=%s_%d" % (kind, cap)] + _with_std(NVRTC_REQUIRED, user)
                   + ["-I" + (cccl or ""), "-I" + (fp16 or "")])

    def command(src, dep, out):
        inc = ["-I" + os.path.dirname(header)] + (["-I" + fp16] if fp16 else [])
        if cccl:
            inc = ["-I" + _std_shims(os.path.dirname(src)), "-I" + cccl] + inc
        options = ["-arch=%s_%d" % (kind, cap)] + _with_std(NVRTC_REQUIRED, user) + inc
        return _nvrtc_compile(lib, header, meta, source, options, kind == "sm", src, dep, out)

    return compile_cached(
        key_parts=(header, hash_file(header), instantiate or "",
                   hash_file(instantiate) if instantiate else "", source, lib,
                   "%d.%d" % info["version"], "\0".join(options_key)),
        cache_dir=cache_dir, folder_name=stem + "-nvrtc", stem=stem, ext=ext, source=source,
        suffix=".cu", what="NVRTC", output=output, command=command, load=_load,
        status="compiling %s with NVRTC" % os.path.basename(header))


def _pick_compiler(compiler, nvcc):
    if compiler is not None:
        _prelude(compiler)  # validates
        return compiler
    return "nvcc" if _exists(_nvcc_candidate(nvcc)) else "nvrtc"


def build(header: StrPath, instantiate: StrPath | None = None, *,
          arch: Archs | None = None, nvcc: str | None = None, cxxflags: Flags | None = None,
          extra_cxxflags: Flags | None = None, cache_dir: StrPath | None = None,
          name: str | None = None, strict: bool = False, compiler: str | None = None,
          nvrtc: StrPath | None = None, flags: Flags | None = None) -> Library:
    """Compile ``header``'s ``__global__`` kernels (and the instantiations
    ``instantiate`` lists) into a cached module, then :func:`load` it.

    ``compiler``: ``"nvcc"`` (a fatbin, see :func:`compile_fatbin`),
    ``"nvrtc"`` (a CUBIN or PTX compiled in-process, see
    :func:`compile_nvrtc`), or None: nvcc when one is found (``nvcc=``,
    ``$NVCC``, ``PATH``, ``$CUDA_HOME/bin``), else NVRTC. ``cxxflags``
    (replacing the defaults) and ``extra_cxxflags`` (appended) go to the
    compiler chosen; ``flags`` is the deprecated name of ``cxxflags``. A
    failed compile raises :class:`bindthem.BuildError` with the compiler's
    output. The Library pickles by value, as :func:`load`'s does: the module
    image travels, no compiler is needed where it is unpickled."""
    cxxflags = _nvcc_flags(cxxflags, None, flags, "build")

    def _load(path):  # while the cache entry is locked: it cannot be evicted under the read
        return load(path, header, instantiate, name=name, strict=strict)

    lib: Any  # with _load=, the compile functions return what it returns
    if _pick_compiler(compiler, nvcc) == "nvrtc":
        lib = compile_nvrtc(header, instantiate, arch=arch, nvrtc=nvrtc, cxxflags=cxxflags,
                            extra_cxxflags=extra_cxxflags, cache_dir=cache_dir, strict=strict,
                            _load=_load)
    else:
        lib = compile_fatbin(header, instantiate, arch=arch, nvcc=nvcc, cxxflags=cxxflags,
                             extra_cxxflags=extra_cxxflags, cache_dir=cache_dir, strict=strict,
                             _load=_load)
    return lib


# ---- helpers ----

def to_device(array: Any, *, device: int | None = None, stream: Any = None) -> Any:
    """Copy ``array`` (anything NumPy takes; made C-contiguous) to a new
    :class:`DeviceArray` on ``device`` (default: the current context's device,
    else 0); the memory is freed with the object.

    ``stream=None``: the copy is done when this returns (the GIL released
    while it runs). With a stream, the copy is queued there and this returns
    at once; the array records the stream, so launches and copies on other
    streams wait for the copy. From pageable memory the driver stages the
    data before returning; from pinned memory (:func:`pinned_empty`) the copy
    reads ``array`` later: leave it alone until the stream gets there."""
    return _core.cuda_to_device(array, device=device, stream=stream)


def empty(shape, dtype=float, *, device=None):
    """An uninitialized :class:`DeviceArray`."""
    return _core.cuda_empty(shape, dtype, device=device)


def zeros(shape: int | tuple[int, ...], dtype: Any = float, *, device: int | None = None,
          stream: Any = None) -> Any:
    """A :class:`DeviceArray` of zeros: ``cuMemsetD8Async`` queued on ``stream``
    (None: the legacy stream), which the array records as its last write."""
    return _core.cuda_zeros(shape, dtype, device=device, stream=stream)


def pinned_empty(shape: int | tuple[int, ...], dtype: Any = float) -> Any:
    """An uninitialized NumPy array in page-locked host memory
    (``cuMemHostAlloc``, portable to every context), freed when the array
    (and every view of it) goes. Asynchronous copies
    (``copy_to_host(stream=..., out=...)``, ``to_device(..., stream=...)``)
    overlap with host work only from and into such memory."""
    return _core.cuda_pinned_empty(shape, dtype)


def device_count():
    """The number of CUDA devices; 0 without a usable driver."""
    return _core.cuda_device_count()


def is_available():
    """Whether a CUDA driver and at least one device are present."""
    return device_count() > 0


def synchronize():
    """Wait for all work queued in the current context (device 0's primary
    context when none is current). The GIL is released while it waits."""
    _core.cuda_synchronize()


def driver():
    """Open the driver: ``{'version': 12080, 'path': ..., 'library_api': bool}``.
    Raises :class:`NoDriverError` without one."""
    return _core.cuda_driver()
