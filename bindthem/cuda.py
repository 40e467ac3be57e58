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

import functools
import operator
import os
import re
import shutil
import subprocess
import types
from typing import Any

from . import _core
from ._cache import compile_cached, flag_list, hash_file
from ._types import Archs, Flags, StrPath
from .errors import BindValueError, BuildError
from .library import LibraryInfo, _Info, _regular_file

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


def _module_doc(header, kernels):
    lines = ["CUDA kernels of %s, bound by bindthem." % os.path.basename(header), "",
             "Kernels", "-------"]
    return "\n".join(lines + sorted(kernels)) + "\n"


class Library(types.ModuleType):
    """The kernels of one header, served from one loaded CUDA module.

    Like :class:`bindthem.Library`: each kernel is an attribute, ``__all__``
    lists them, ``__file__`` is the module file. ``metadata`` is what
    :func:`bindthem.parse_header` returns; ``unexported`` the overloads the
    module lacks (only without an instantiate.yml); ``not_kernels`` the host
    functions of the header, which bindthem.cuda does not bind. A kernel of
    one of those names takes the name; all three stay at ``lib.__bindthem__``.
    """

    metadata = _Info("What bindthem.parse_header returns for the header.")
    unexported = _Info("Overloads left out because the module lacks them.")
    not_kernels = _Info("The header's host functions, which bindthem.cuda does not bind.")

    def __init__(self, name, handle, kernels, metadata, unexported, not_kernels):
        super().__init__(name, _module_doc(metadata["header"], kernels))
        self.__file__ = handle.path
        self.__all__ = sorted(kernels)
        self.__bindthem__ = LibraryInfo(handle, metadata, unexported, not_kernels)
        self.__dict__.update(kernels)

    def __dir__(self):
        return sorted(set(self.__all__) | {"__all__", "__bindthem__", "__doc__", "__file__",
                                           "__name__", "metadata", "unexported", "not_kernels"})

    def __repr__(self):
        return "<bindthem.cuda.Library %r from %r (%d kernels)>" % (
            self.__name__, self.__file__, len(self.__all__))


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
    """
    if isinstance(module, (bytes, bytearray, memoryview)):
        image, filename = bytes(module), "<bytes>"
    else:
        filename = os.path.abspath(os.fspath(module))
        _regular_file(filename)
        with open(filename, "rb") as f:
            image = f.read()
    header = os.path.abspath(os.fspath(header))
    if instantiate is not None:
        instantiate = os.path.abspath(os.fspath(instantiate))
    if name is None:
        name = os.path.splitext(os.path.basename(header))[0]
    handle, kernels, metadata, unexported, not_kernels = _core.cuda_bind(
        image, header, instantiate, module=name, filename=filename, strict=strict)
    return Library(name, handle, kernels, metadata, unexported, not_kernels)


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


def compile_fatbin(header: StrPath, instantiate: StrPath | None = None, *,
                   output: StrPath | None = None, arch: Archs | None = None,
                   nvcc: str | None = None, flags: Flags | None = None,
                   cache_dir: StrPath | None = None, strict: bool = False) -> str:
    """Compile ``header``'s kernels with nvcc into a fatbin; returns its path.

    ``arch``: compute capabilities to build SASS for (default: those of
    sm_70, 75, 80, 86, 89, 90 this nvcc supports), plus PTX for the newest.
    ``flags`` (list or string) replaces the default ``-O3``. The fatbin is
    cached under ``cache_dir`` (``$BINDTHEM_CACHE`` or ``~/.cache/bindthem``)
    by a hash of the header, the YAML, the source, nvcc's version and the
    command line; included headers are tracked (``-MD``).
    """
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
          arch: Archs | None = None, nvcc: str | None = None,
          flags: Flags | None = None, cache_dir: StrPath | None = None, name: str | None = None,
          strict: bool = False) -> Library:
    """Compile ``header``'s ``__global__`` kernels (and the instantiations
    ``instantiate`` lists) with nvcc into a cached fatbin (see
    :func:`compile_fatbin`), then :func:`load` it. nvcc failing raises
    :class:`bindthem.BuildError` with its output."""
    path = compile_fatbin(header, instantiate, arch=arch, nvcc=nvcc, flags=flags,
                          cache_dir=cache_dir, strict=strict)
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
