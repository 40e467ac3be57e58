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
``__cuda_array_interface__`` (v2/v3) or DLPack (1.x, or unversioned) on a CUDA
(or managed) device, borrowed, never copied; :func:`to_device` makes a
:class:`DeviceArray`.

The driver (``libcuda.so.1``, or ``$BINDTHEM_LIBCUDA``) is opened on first
use, never at import: ``import bindthem.cuda`` works without one.
"""

from __future__ import annotations

import enum
import operator
import os
import weakref
from typing import Any

from . import _core
from . import library as _library
from ._base.types import Archs, Flags, StrPath
from ._services import travel
from ._services.binding import bind_cuda, warn_if_left_out
from ._services.cache import compile_cached, flag_list
from ._services.compile.source import snapshot_flags, snapshot_name, write_snapshot

# The toolchains' constants stay importable as bindthem.cuda.X, as before the split.
from ._services.cuda.nvcc import DEFAULT_ARCHS as DEFAULT_ARCHS
from ._services.cuda.nvcc import (
    DEFAULT_FLAGS,
    NVCC_PRELUDE,
    _archs,
    _exists,
    _find_nvcc,
    _nvcc_candidate,
    _nvcc_flags,
    _nvcc_info,
    _nvcc_required,
    _with_std,
)
from ._services.cuda.nvcc import NVCC_RELAXED as NVCC_RELAXED
from ._services.cuda.nvrtc import NVRTC_PRELUDE, _source_of, compile_nvrtc, find_nvrtc
from ._services.cuda.nvrtc import NVRTC_REQUIRED as NVRTC_REQUIRED
from ._services.cuda.nvrtc import NVRTC_STD_HEADERS as NVRTC_STD_HEADERS
from .errors import BindValueError, CudaError, NoDriverError
from .library import _regular_file

__all__ = ["CudaError", "DeviceArray", "Event", "Graph", "Kernel", "LEGACY", "Launch", "Library",
           "NoDriverError", "PER_THREAD", "Stream", "build", "compile_fatbin", "compile_nvrtc",
           "device_count", "driver", "empty", "find_nvrtc", "get_global", "is_available",
           "kernel_source",
           "load", "pinned_empty", "synchronize", "to_device", "zeros"]
__all__ += ["MemAdvise", "can_access_peer", "disable_peer_access", "enable_peer_access",
            "managed_empty", "managed_zeros"]

DeviceArray = _core.DeviceArray
Kernel = _core.CudaKernel
Launch = _core.CudaLaunch
Event = _core.CudaEvent
Graph = _core.CudaGraph


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

    def capture(self, mode: str = "thread_local") -> Graph:
        """A :class:`Graph` whose ``with`` block captures this stream
        (``cuStreamBeginCapture_v2``; ``mode``: ``"thread_local"``,
        ``"global"`` or ``"relaxed"``): bindthem's launches and copies queued
        on it inside the block are recorded, not run; on exit the graph is
        instantiated, and ``g.launch(stream=None)`` replays it (a block that
        raised discards it). The legacy stream cannot be captured; see
        :doc:`cuda-streams`, "Graphs and stream capture"."""
        return _core.cuda_capture(self, mode)

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
    return _load_module(module, header, instantiate, name, strict)


def _load_module(module, header, instantiate, name, strict, plan=None):
    """load(); plan: the _core.Plan of header and instantiate (build()
    parsed the header already)."""
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
    lib = bind_cuda(image, header, instantiate, name, strict, filename, None, plan)
    plan = lib._bindthem_.plan  # the bytes bound: the pickle carries those
    lib._bindthem_.source = travel.Source(
        kind="cuda", name=name, strict=strict, header=header, header_text=plan.header_text,
        instantiate=instantiate, yaml_text=plan.yaml_text, library=filename, image=image)
    warn_if_left_out(lib)
    return lib


# ---- nvcc ----

COMPILERS = ("nvcc", "nvrtc")


def kernel_source(header: StrPath, instantiate: StrPath | None = None, *, strict: bool = False,
                  compiler: str = "nvcc") -> str:
    """The .cu source :func:`build` compiles: the standard prelude (for
    ``compiler="nvcc"`` the CPU build's, ``bindthem._services.compile.source.PRELUDE``,
    after the device pass's ``std::complex``; for ``"nvrtc"``
    :data:`NVRTC_PRELUDE`), the header and an explicit
    instantiation of every templated ``__global__`` overload."""
    header = os.path.abspath(os.fspath(header))
    return _source_of(header, _core.parse_header(header, instantiate, strict=strict),
                      _prelude(compiler))


def _prelude(compiler):
    if compiler not in COMPILERS:
        raise BindValueError("compiler=%r: expected 'nvcc' or 'nvrtc' (or None: nvcc when there "
                         "is one, else NVRTC)" % (compiler,))
    return NVCC_PRELUDE if compiler == "nvcc" else NVRTC_PRELUDE


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
    # the one parse: the bytes keyed are those nvcc reads (a snapshot) and those bound
    plan = _core.parse(header, instantiate, strict=strict)
    source = _source_of(snapshot_name(header), plan.metadata(), NVCC_PRELUDE)
    stem = os.path.splitext(os.path.basename(header))[0]

    def command(src, dep, out):
        write_snapshot(os.path.dirname(src), plan)
        return ([nvcc, "-fatbin"] + flag_args + gencode + snapshot_flags(
            os.path.dirname(header), "-I") + ["-MD", "-MF", dep, src, "-o", out])

    return compile_cached(
        key_parts=(header, plan.header_sha256, instantiate or "", plan.yaml_sha256 or "",
                   source, version, "\0".join([nvcc] + flag_args + gencode)),
        cache_dir=cache_dir, folder_name=stem + "-cuda", stem=stem, ext=".fatbin",
        source=source, suffix=".cu", what="nvcc", output=output,
        load=_load and (lambda path: _load(path, plan)),
        status="compiling %s with nvcc" % os.path.basename(header), command=command)


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

    def _load(path, plan):  # while the cache entry is locked: it cannot be evicted under the read
        return _load_module(path, header, instantiate, name, strict, plan)

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


def empty(shape, dtype=float, *, device=None, stream=None):
    """An uninitialized :class:`DeviceArray`, allocated stream-ordered on
    ``stream`` (None: the legacy stream) from the device's memory pool where
    it has one (``cuMemAllocAsync``), else with ``cuMemAlloc``."""
    return _core.cuda_empty(shape, dtype, device=device, stream=stream)


def get_global(lib: Library, name: str, dtype: Any = "uint8", *,
               device: int | None = None, readonly: bool = False) -> DeviceArray:
    """A module's ``__device__`` or ``__constant__`` variable ``name`` as a 1-d
    :class:`DeviceArray` of ``dtype`` (its size in bytes a multiple of the
    dtype's) on ``device`` (None: the module's device, else the current one).

    The array is a view (``.base`` is the module, which it keeps loaded):
    ``copy_from(host_array)`` writes the variable (a ``__constant__`` too:
    kernels launched after the write read the new value), ``copy_to_host()``
    reads it. ``cuLibraryGetGlobal`` (``cuModuleGetGlobal`` before 12.0).
    A name the module lacks raises ``KeyError``.

    ``readonly=True`` makes the view read-only (``.readonly``): what a
    ``__constant__`` is to kernels, which must not write one. A launch then
    passes it to ``const`` array parameters only, and ``__cuda_array_interface__``
    and DLPack export it read-only; ``copy_from`` still writes it. The driver
    gives ``__constant__`` and ``__device__`` variables alike, so bindthem
    cannot tell them apart: the caller says so.
    """
    return _core.cuda_global(_library.info(lib).handle, name, dtype, device, readonly)


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


# ---- managed memory and peer access (csrc/cuda/bt_cudapy_managed.c, bt_cudapy_peer.c) ----

#: ``CUmem_advise``: what :meth:`DeviceArray.advise` takes (or its names, lower case).
#: Its members come from the C table (``_core.CUDA_MEM_ADVICE``), the one place
#: they are written, so a type checker sees an IntEnum without named members.
MemAdvise: type[enum.IntEnum] = enum.IntEnum(  # type: ignore[misc]
    "MemAdvise", {k.upper(): v for k, v in _core.CUDA_MEM_ADVICE.items()})


def managed_empty(shape: int | tuple[int, ...], dtype: Any = float, *, device: int | None = None,
                  attach: str = "global") -> DeviceArray:
    """An uninitialized :class:`DeviceArray` of managed (unified) memory
    (``cuMemAllocManaged``), made in ``device``'s primary context (None: the
    current device) and freed with the object. ``attach="global"``
    (``CU_MEM_ATTACH_GLOBAL``): any stream of any device may use it;
    ``"host"`` (``CU_MEM_ATTACH_HOST``): it starts out host-side. Launches on
    any device with concurrent managed access take it; ``.host_view()`` (or
    ``numpy.asarray``) reads and writes it from the host once its pending
    work is done. A device without managed memory raises :class:`CudaError`."""
    return _core.cuda_managed_empty(shape, dtype, device=device, attach=attach)


def managed_zeros(shape: int | tuple[int, ...], dtype: Any = float, *, device: int | None = None,
                  attach: str = "global", stream: Any = None) -> DeviceArray:
    """:func:`managed_empty`, zeroed by ``cuMemsetD8Async`` queued on
    ``stream`` (None: the legacy stream), recorded as the array's last write."""
    return _core.cuda_managed_zeros(shape, dtype, device=device, attach=attach, stream=stream)


def can_access_peer(device: int, peer: int) -> bool:
    """Whether ``device`` can map ``peer``'s memory (``cuDeviceCanAccessPeer``;
    False for a device and itself)."""
    return _core.cuda_can_access_peer(device, peer)


def enable_peer_access(peer: int, *, device: int | None = None) -> None:
    """Let launches on ``device`` (None: the current device) take arrays of
    ``peer``: ``cuCtxEnablePeerAccess`` from ``device``'s primary context to
    ``peer``'s. Enabling it twice is no error. Copies between devices
    (``copy_from``) need no peer access."""
    _core.cuda_enable_peer_access(peer, device)


def disable_peer_access(peer: int, *, device: int | None = None) -> None:
    """Undo :func:`enable_peer_access` (no error when it was not enabled)."""
    _core.cuda_disable_peer_access(peer, device)
