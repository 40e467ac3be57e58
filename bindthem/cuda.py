"""bindthem.cuda: CUDA kernels from a kernel header, launched with dtype dispatch.

The header is read by the same C core as for CPU kernels (the dialect adds
``__global__`` and ``extern "C" __global__``; ``__device__``-only functions are
unbindable). :func:`load` binds the kernels of a compiled module (cubin,
fatbin or PTX), found by their Itanium-mangled names (plain names for
``extern "C"``); :func:`build` compiles the header's ``__global__`` templates,
instantiated as instantiate.yml lists, with nvcc into a cached fatbin first.

A kernel launches as ``lib.axpy[grid, block](a, x, y)`` or
``lib.axpy(a, x, y, grid=..., block=..., shared=0, stream=None)``; it returns
once the launch is queued. Arrays are any objects with
``__cuda_array_interface__`` (v2/v3) or DLPack on a CUDA (or managed) device,
borrowed, never copied; :func:`to_device` makes a :class:`DeviceArray`.

The driver (``libcuda.so.1``, or ``$BINDTHEM_LIBCUDA``) is opened on first
use, never at import: ``import bindthem.cuda`` works without one.
"""

from __future__ import annotations

import copyreg
import functools
import operator
import os
import pickle
import re
import shutil
import subprocess
import warnings
from typing import Any

from . import _core, _travel
from . import library as _library
from ._cache import compile_cached, flag_list, hash_file
from ._types import Archs, Flags, StrPath
from .errors import BindValueError, BuildError
from .library import Backend, _infos, _regular_file, warn_if_nothing_bound

__all__ = ["CudaError", "DeviceArray", "Kernel", "LEGACY", "Launch", "Library", "NoDriverError",
           "PER_THREAD", "Stream", "build", "compile_fatbin", "device_count", "driver", "empty",
           "is_available", "kernel_source", "load", "synchronize", "to_device"]

CudaError = _core.CudaError
NoDriverError = _core.NoDriverError
DeviceArray = _core.DeviceArray
Kernel = _core.CudaKernel
Launch = _core.CudaLaunch


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

    __slots__ = ("handle", "name")

    def __init__(self, handle, name=None):
        if isinstance(handle, bool):
            raise TypeError("Stream(handle): handle must be an int, not bool")
        handle = operator.index(handle)
        if not 0 <= handle < 1 << 64:
            raise ValueError("Stream(handle): %d is not a 64-bit CUstream value" % handle)
        self.handle = handle
        self.name = name

    def __cuda_stream__(self):
        return (0, self.handle)

    def __int__(self):
        return self.handle

    def __eq__(self, other):
        return isinstance(other, Stream) and other.handle == self.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return "bindthem.cuda.%s" % self.name if self.name else "Stream(0x%x)" % self.handle


LEGACY = Stream(_core.CUDA_STREAM_LEGACY, "LEGACY")
PER_THREAD = Stream(_core.CUDA_STREAM_PER_THREAD, "PER_THREAD")


class _CudaBackend(Backend):
    """The CUDA back end of :class:`bindthem.Library`: kernels launch rather
    than call (no GIL or copy options), and keep their LibraryInfo in
    :data:`bindthem.library._infos` (the kernel type has no slot for it)."""

    name = "cuda"
    noun = "CUDA kernels"
    what = "CUDA kernels"

    def attach(self, info, functions, options):
        for k in functions.values():
            _infos[k] = info


CUDA = _CudaBackend()

#: One Library class for every back end; ``bindthem.cuda.Library`` is it.
Library = _library.Library


def _reduce_kernel(kernel):
    """Pickles a kernel alone, like a Function: its Library's source and its name."""
    info = _infos.get(kernel)
    if info is None or info.source is None:
        raise pickle.PicklingError("cannot pickle %r: it belongs to no bindthem Library" % kernel)
    return info._reduce_function(kernel.__name__)


copyreg.pickle(Kernel, _reduce_kernel)


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
    warn_if_nothing_bound(lib)
    return lib


def _bind(image, header, instantiate, name, strict, filename, source):
    """load() of a module image, and unpickling (with its Source)."""
    handle, kernels, metadata, unexported, not_kernels = _core.cuda_bind(
        image, header, instantiate, module=name, filename=filename, strict=strict)
    return Library(name, header, handle, kernels, metadata, unexported, source, backend=CUDA,
                   not_kernels=not_kernels)


# ---- nvcc ----

# The range bindthem compiles for by default: Volta to Hopper, plus PTX for
# the newest of them so that later GPUs JIT it. Archs the nvcc at hand no
# longer supports are left out (CUDA 13 dropped sm_70; it starts at sm_75).
DEFAULT_ARCHS = (70, 75, 80, 86, 89, 90)
DEFAULT_FLAGS = ("-O3",)


def _find_nvcc(nvcc=None):
    cand = nvcc or os.environ.get("NVCC") or shutil.which("nvcc")
    if not cand:
        home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
        cand = os.path.join(home, "bin", "nvcc")
    if not (os.path.exists(cand) or shutil.which(cand)):
        raise BuildError("cannot find nvcc (pass nvcc=, or set $NVCC or $CUDA_HOME)",
                         output="", command=[cand])
    return cand


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


def _archs(arch, supported):
    """Compute capabilities to build SASS for, from arch= (None, 80, "sm_80",
    "compute_80", or a list of those)."""
    if arch is None:
        chosen = [a for a in DEFAULT_ARCHS if not supported or a in supported]
        if not chosen and supported:
            chosen = [min(supported)]
        return chosen
    items = [arch] if isinstance(arch, (int, str)) else list(arch)
    out = []
    for a in items:
        m = re.fullmatch(r"(?:sm_|compute_)?(\d+)[af]?", str(a))
        if not m:
            raise BindValueError("arch=%r: expected an int like 80 or 'sm_80'" % (a,))
        out.append(int(m.group(1)))
    bad = [a for a in out if supported and a not in supported]
    if bad:
        raise BuildError("this nvcc does not support %s (it supports %s)"
                         % (", ".join("sm_%d" % a for a in bad),
                            ", ".join("sm_%d" % a for a in supported)), output="")
    return sorted(set(out))


def kernel_source(header, instantiate=None, *, strict=False):
    """The .cu source :func:`build` compiles: the header and an explicit
    instantiation of every templated ``__global__`` overload."""
    header = os.path.abspath(os.fspath(header))
    meta = _core.parse_header(header, instantiate, strict=strict)
    glob = {(d["name"], d["line"]) for d in meta["declarations"] if d["global"]}
    lines = ['#include "%s"' % header, ""]
    for fn in meta["functions"]:
        for ov in fn["overloads"]:
            if ov["template_args"] and (ov["function"], ov["line"]) in glob:
                lines.append("template __global__ %s;" % ov["signature"])
    return "\n".join(lines) + "\n"


def _nvcc_flags(cxxflags, extra_cxxflags, flags, where):
    """nvcc's flags from ``cxxflags=`` (replaces ``-O3``) and ``extra_cxxflags=``
    (appended), the names bindthem.build has; None for the default.
    ``flags=`` is the old name of ``cxxflags=``, deprecated."""
    if flags is not None:
        if cxxflags is not None:
            raise TypeError("bindthem.cuda.%s(): cxxflags= and flags= both given; flags= is "
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
                   strict: bool = False, flags: Flags | None = None) -> str:
    """Compile ``header``'s kernels with nvcc into a fatbin; returns its path.

    ``arch``: compute capabilities to build SASS for (default: those of
    sm_70, 75, 80, 86, 89, 90 this nvcc supports), plus PTX for the newest.
    Flags (lists or strings), as :func:`bindthem.build` names them:
    ``cxxflags`` **replaces** the default ``-O3``, ``extra_cxxflags`` is
    **appended** (``$CXXFLAGS`` is not: it holds host compiler flags).
    ``flags`` is the deprecated name of ``cxxflags`` (a
    :class:`DeprecationWarning`; removed in the next release). The fatbin is
    cached under ``cache_dir`` (``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``)
    by a hash of the header, the YAML, the source, nvcc's version and the
    command line; included headers are tracked (``-MD``).
    """
    # From here on, flags is what cxxflags= and extra_cxxflags= make.
    flags = _nvcc_flags(cxxflags, extra_cxxflags, flags, "compile_fatbin")
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    nvcc = _find_nvcc(nvcc)
    version, supported = _nvcc_info(nvcc)
    caps = _archs(arch, supported)
    flag_args: list[str] = flag_list(flags, DEFAULT_FLAGS)
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
        source=source, suffix=".cu", what="nvcc", output=output,
        status="compiling %s with nvcc" % os.path.basename(header),
        command=lambda src, dep, out: ([nvcc, "-fatbin"] + flag_args + gencode
                                       + ["-MD", "-MF", dep, src, "-o", out]))


def build(header: StrPath, instantiate: StrPath | None = None, *,
          arch: Archs | None = None, nvcc: str | None = None, cxxflags: Flags | None = None,
          extra_cxxflags: Flags | None = None, cache_dir: StrPath | None = None,
          name: str | None = None, strict: bool = False, flags: Flags | None = None) -> Library:
    """Compile ``header``'s ``__global__`` kernels (and the instantiations
    ``instantiate`` lists) with nvcc into a cached fatbin (see
    :func:`compile_fatbin` for ``arch``, ``cxxflags``, ``extra_cxxflags`` and
    the deprecated ``flags``), then :func:`load` it. nvcc failing raises
    :class:`bindthem.BuildError` with its output. The Library pickles by
    value, as :func:`load`'s does: the fatbin travels, nvcc is not needed
    where it is unpickled."""
    cxxflags = _nvcc_flags(cxxflags, None, flags, "build")
    path = compile_fatbin(header, instantiate, arch=arch, nvcc=nvcc, cxxflags=cxxflags,
                          extra_cxxflags=extra_cxxflags, cache_dir=cache_dir, strict=strict)
    return load(path, header, instantiate, name=name, strict=strict)


# ---- helpers ----

def to_device(array: Any, *, device: int | None = None) -> Any:
    """Copy ``array`` (anything NumPy takes; made C-contiguous) to a new
    :class:`DeviceArray` on ``device`` (default: the current context's device,
    else 0). The copy is synchronous; the memory is freed with the object."""
    return _core.cuda_to_device(array, device=device)


def empty(shape, dtype=float, *, device=None):
    """An uninitialized :class:`DeviceArray`."""
    return _core.cuda_empty(shape, dtype, device=device)


def device_count():
    """The number of CUDA devices; 0 without a usable driver."""
    return _core.cuda_device_count()


def is_available():
    """Whether a CUDA driver and at least one device are present."""
    return device_count() > 0


def synchronize():
    """Wait for all work queued in the current context (device 0's primary
    context when none is current)."""
    _core.cuda_synchronize()


def driver():
    """Open the driver: ``{'version': 12080, 'path': ..., 'library_api': bool}``.
    Raises :class:`NoDriverError` without one."""
    return _core.cuda_driver()
