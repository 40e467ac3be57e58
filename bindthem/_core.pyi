"""bindthem's C core: header/YAML metadata, symbols, libffi call frames."""

from collections.abc import Sequence
from typing import Any, Final, Literal, TypedDict, final, overload

import numpy
from _typeshed import StrOrBytesPath
from typing_extensions import Self

from ._services.binding import Library
from .errors import BindError as BindError
from .errors import BuildError as BuildError
from .errors import CudaError as CudaError
from .errors import HeaderError as HeaderError
from .errors import InstantiateError as InstantiateError
from .errors import NoDriverError as NoDriverError
from .errors import NullHandleError as NullHandleError
from .errors import SymbolError as SymbolError

GIL_RELEASE_MIN_ELEMENTS: Final[int]
# The C tables Python reads: the GIL policies in the order of BT_GIL_*
# (csrc/py/bt_opts.c), Python's keywords as the signature rule knows them
# (csrc/core/bt_pyname.c; keyword.kwlist).
GIL_POLICIES: Final[tuple[str, ...]]
# The dialect rules error messages point at: {rule: "docs/page.rst#anchor"} (csrc/core/bt_diag.h).
DOC_ANCHORS: Final[dict[str, str]]
# the policies with what each means, for messages
GIL_POLICY_TEXT: Final[str]
PYTHON_KEYWORDS: Final[tuple[str, ...]]

# The C scalar types (csrc/core/bt_types.c's table, through csrc/py/bt_slot.c).
class _ScalarType(TypedDict):
    c: str  # the C++ spelling: "unsigned long", "std::complex<float>"
    mangle: str  # Itanium code
    npy_type: int  # NumPy type number (-1 for void)
    kind: str  # NumPy's dtype.kind, "v" for void
    size: int
    python: str  # a scalar's Python type, as stubs write it: "int", "None"
    python_return: str  # a returned scalar's: "numpy.longdouble" for long double, else python
    numpy: str  # the dtype's name: "float64", "bool_"
    dlpack: int  # DLPack type code (-1 for void and long double: DLPack has none)
    typestr: str  # __cuda_array_interface__ typestr: "<f8", "|b1"

def scalar_types() -> tuple[_ScalarType, ...]:
    """The C scalar types bindthem knows, one dict per type."""

# bindthem.options() (csrc/py/bt_opts.c): gil is an index into
# bindthem._base.opts.GIL_POLICIES, -1 or None for "not set".
def _options_push(gil: int, copy_const: int, /) -> Any: ...
def _options_pop(token: Any, /) -> None: ...
def _options_get() -> tuple[str | None, bool | None]: ...
# calls through libffi only (also BINDTHEM_FFI=1 at import); returns the old setting
def force_ffi(flag: bool | None = None, /) -> bool: ...
# an open Function of the Plan's templated declaration `decl` (an index into
# plan.metadata()["declarations"]): its names and signature are the core's
def open_function(plan: Plan, decl: int, module: str, info: object,
                  options: dict[str, Any] | None, owner: object, cap: int, /) -> Function: ...
# the ABI of the direct call (csrc/core/bt_direct.h): "x86-64 System V",
# "AAPCS64", or None where every call goes through libffi
DIRECT_ABI: Final[str | None]

# What parse_header() returns (csrc/py/bt_meta_py.c). The dicts exist only at
# type-checking time, hence the private names.

class _DeclParam(TypedDict):
    name: str
    type: str  # "char" for a C string; an enum's integer type ("unsigned int")
    const: bool
    array: bool
    string: bool  # a C string (const char *, no size parameter after it): str or bytes
    enum: str | None  # the enum's name ("" when it has none); None for any other type
    size_of: str | None
    default: str | None  # as the header writes it
    line: int
    col: int
    handle: str | None  # a handle type's name ("gzFile"): a bindthem.Handle of it
    callback: str | None  # a function pointer type's name
    struct: str | None  # a struct's name (by value; by pointer when array)
    voidp: bool  # an opaque void *: a Handle or None
    shape: tuple[int, ...] | None  # a fixed-size array's (`double m[3][3]`): an argument's

class _DeclReturn(TypedDict):
    type: str
    const: bool
    array: bool
    string: bool  # const char *: a str, or None for NULL
    enum: str | None
    handle: str | None  # returned as a bindthem.Handle
    callback: str | None
    struct: str | None
    voidp: bool

_Declaration = TypedDict(
    "_Declaration",
    {
        "name": str,
        "namespace": tuple[str, ...],
        "template": tuple[str, ...],
        "return": _DeclReturn,
        "params": list[_DeclParam],
        "doc": str,
        "line": int,
        "col": int,
        "extern_c": bool,
        "inline": bool,
        "static": bool,
        "global": bool,
        "device": bool,
        "bindable": bool,
        "reason": str | None,
    },
)

class _Param(TypedDict):
    name: str
    python_name: str | None  # "in_" for `in`; None for a size parameter
    type: str
    dtype: str
    python: str  # as stubs write it: "float", "str | bytes" for a C string
    const: bool
    array: bool
    string: bool  # a C string (const char *): str (passed as UTF-8) or bytes
    enum: str | None  # the enum's name ("" when it has none): an int that must be a value of it
    size_of: str | None
    default: bool | int | float | complex | str | None  # what a call that leaves it out passes
    positional_only: bool  # the header leaves it unnamed (argN)
    handle: str | None  # a handle type's name: python is "bindthem.Handle"
    callback: str | None
    struct: str | None
    voidp: bool  # python is "bindthem.Handle | None"
    shape: tuple[int, ...] | None  # a fixed-size array's (`uuid_t`: (16,)), exactly; else None

class _Return(TypedDict):
    type: str
    dtype: str
    python: str  # "str | None" for a C string, "bindthem.Handle" for a handle
    string: bool
    enum: str | None  # returned as a plain int
    handle: str | None
    callback: str | None
    struct: str | None
    voidp: bool

_Overload = TypedDict(
    "_Overload",
    {
        "function": str,
        "template_args": tuple[str, ...],
        "return": _Return,
        "declaration": int,  # index into _Metadata's declarations
        "params": list[_Param],
        "python_signature": str | None,  # "(a, in_, /, c=1.0)"; None past BT_MAX_PARAMS
        "positional_only": int,  # how many Python parameters, from the first
        "signature": str,
        "instantiation": str | None,  # "template [__global__ ]...;"; None untemplated
        "name_expression": str,  # "static_cast<void (*)(int *)>(&::f<int>)"
        "symbol": str,
        "line": int,
        "yaml_line": int,
    },
)

class _FunctionInfo(TypedDict):
    name: str
    doc: str
    overloads: list[_Overload]

class _Skipped(TypedDict):
    name: str
    line: int
    reason: str
    deliberate: bool

class _OpenMP(TypedDict):
    line: int
    text: str  # "#pragma omp parallel for"

class _Include(TypedDict):
    name: str  # #include "name"
    line: int

class _Directives(TypedDict):
    openmp: list[_OpenMP]
    includes: list[_Include]

class _Enum(TypedDict):
    name: str  # "" when it has none
    type: str  # the C spelling of its integer type: "unsigned int"
    flags: bool  # a parameter of it takes any OR of its members
    members: list[list[str | int]]  # [[name, value], ...] in declaration order
    line: int
    in_header: bool  # declared in the header itself, not in a file it includes

class _Constant(TypedDict):
    name: str  # a `#define NAME value` of the header itself
    value: int | str
    line: int

class _HandleInfo(TypedDict):
    name: str  # "gzFile", "FILE"
    key: str  # the type pointed to: "struct gzFile_s"
    line: int

# a function pointer type: name is the typedef's (the parameter's, for one written in a parameter)
_Callback = TypedDict(
    "_Callback",
    {"name": str, "return": _DeclReturn, "params": list[_DeclParam], "bindable": bool,
     "reason": str | None},
)

class _Field(TypedDict):
    name: str
    type: str  # C spelling; "void *" for any pointer; the struct's name for a struct
    pointer: bool
    struct: str | None
    enum: str | None
    dims: list[int]  # an array's, outermost first
    offset: int
    size: int

class _Struct(TypedDict):
    name: str
    key: str  # "struct point", "union u"
    union: bool
    size: int
    align: int
    reason: str | None  # why it has no dtype
    line: int
    in_header: bool
    fields: list[_Field]

class _Metadata(TypedDict):
    header: str
    instantiate: str | None
    preprocessed: bool  # the text parsed is the C preprocessor's output
    declarations: list[_Declaration]  # empty when brief
    functions: list[_FunctionInfo]
    skipped: list[_Skipped]
    missing: list[str]
    openmp: list[_OpenMP]
    includes: list[_Include]
    enums: list[_Enum]  # empty when brief
    constants: list[_Constant]  # empty when brief
    handles: list[_HandleInfo]  # empty when brief
    callbacks: list[_Callback]  # empty when brief
    structs: list[_Struct]  # empty when brief

def header_directives(text: bytes, /) -> _Directives: ...
def _library_class(cls: type, /) -> None:
    """A Library class made to look names up in its namespace only (bt_method.h)."""

class _Callable:
    """What a Function and a CudaKernel share: one head (bt_callable.c). A name of
    this stub only: at run time each type derives from object."""

    @property
    def __name__(self) -> str: ...
    @property
    def __qualname__(self) -> str: ...
    @property
    def __module__(self) -> str: ...  # type: ignore[override]
    # Instances also have __text_signature__ "(a, b, c)" (for inspect and
    # stubtest); not declared here because on the class itself type's own
    # __text_signature__ (None) wins, and stubtest checks the class.
    @property
    def overloads(self) -> tuple[str, ...]:
        """C signatures of the overloads, in YAML order."""
    @property
    def symbols(self) -> tuple[str, ...]:
        """Symbol names of the overloads, in YAML order."""
    @property
    def parameters(self) -> tuple[str, ...]:
        """Python parameter names (the first overload's)."""
    @property
    def signatures(self) -> tuple[str, ...]:
        """Python signatures of the overloads, in YAML order, e.g. 'f(x, omega=1.0)'."""
    @property
    def _dispatch_info(self) -> dict[str, int]:
        """The dispatch cache: keys cached, and calls that scanned the overloads."""
    @property
    def library(self) -> Library | None:
        """The Library it belongs to (None once that is gone)."""
    def _repr_html_(self) -> str: ...
    def _repr_pretty_(self, p: Any, cycle: bool, /) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Self: ...
    def __reduce__(self) -> tuple[Any, ...]: ...
    def __copy__(self) -> Self: ...
    def __deepcopy__(self, memo: Any, /) -> Self: ...
    def __dask_tokenize__(self) -> tuple[str, ...]: ...

@final
class Function(_Callable):
    """A bound kernel: its overloads, dispatched on the arguments' dtypes."""

    # Instances also have __signature__ (the parameters annotated with the
    # types the overloads take) and a __call__ with that signature: the
    # instance's only (bt_function.c function_getattro), not the class's.
    @property
    def _call_paths(self) -> tuple[Literal["direct", "ffi"], ...]:
        """How each overload's kernel is called: 'direct' or 'ffi' (libffi)."""
    @property
    def _general_calls(self) -> int:
        """How many of its calls the general path made (not the fused entry's)."""
    @property
    def _quick_calls(self) -> int:
        """How many of an annotated function's calls its quick call took (one pass, no frame)."""
    @property
    def _fused(self) -> tuple[bool, ...]:
        """Whether each overload takes a call with the last call's argument types in one pass."""
    @property
    def gil(self) -> Literal["auto", "release", "keep"]:
        """When calls release the GIL (bindthem.options(gil=...) overrides it)."""
    @property
    def open(self) -> bool:
        """Whether a call with types no overload takes instantiates the template on demand."""
    def _add(self, other: Function, /) -> None: ...
    @property
    def copy_const(self) -> bool:
        """The copy_const it was bound with; it changes nothing (docs/calls.rst)."""
    @property
    def stats(self) -> dict[str, int]:
        """Copies its calls made: 'aligned_copies' (unaligned C-contiguous arrays passed
        as aligned temporaries), 'layout_copies' (arrays that are not C-contiguous passed
        as C-contiguous temporaries), 'copy_backs' (of those, written ones copied back),
        'const_copies' (0: copy_const made such copies once)."""

@final
class LibraryMethod:
    """A kernel in the namespace of its Library's own class (bt_method.c): a
    method descriptor whose __get__ gives the kernel, and whose call with an
    instance of its owner first calls the kernel without it."""

    def __new__(cls, kernel: Function | CudaKernel, owner: type) -> LibraryMethod: ...
    @property
    def kernel(self) -> Function | CudaKernel:
        """The kernel it holds, which lib.<name> gives."""
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: object, owner: type | None = None, /) -> Function | CudaKernel: ...

@final
class LibraryHandle:
    """An open shared library; Functions keep it loaded."""

    @property
    def path(self) -> str:
        """The file the loader opened."""
    @property
    def handle_types(self) -> dict[str, HandleType]:
        """The Library's handle types, {name: HandleType}."""
    @property
    def struct_dtypes(self) -> dict[str, numpy.dtype[numpy.void]] | None:
        """The header's structs and unions as NumPy dtypes, {name: dtype} (None until bound)."""

@final
class HandleType:
    """A handle type of a Library: what its functions return and take."""

    @property
    def name(self) -> str: ...
    @property
    def key(self) -> str:
        """The C type pointed to ('struct gzFile_s')."""
    @property
    def destructor(self) -> Function | None: ...

@final
class Handle:
    """A pointer a C function returned (a gzFile, a FILE pointer, an fftw_plan)."""

    @property
    def address(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def type(self) -> HandleType: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, *args: object) -> None: ...

def _close_open_handles() -> None:
    """Closes every open Handle that has a destructor, newest first (atexit)."""

def _open_handle_count() -> int: ...

@final
class Plan:
    """A header and its instantiate.yml parsed once (parse): the bytes parsed,
    their hashes and the metadata; what bind() and cuda_bind() take."""

    @property
    def header(self) -> str: ...
    @property
    def instantiate(self) -> str | None: ...
    @property
    def header_text(self) -> bytes:
        """The header's bytes, exactly as parsed."""
    @property
    def yaml_text(self) -> bytes | None: ...
    @property
    def strict(self) -> bool: ...
    @property
    def header_sha256(self) -> str: ...
    @property
    def yaml_sha256(self) -> str | None: ...
    def metadata(self, *, brief: bool = False) -> _Metadata:
        """What parse_header() returns for this plan, as a new dict."""

def parse(
    header: StrOrBytesPath, instantiate: StrOrBytesPath | None = None, *, strict: bool = False,
    header_text: bytes | None = None, yaml_text: bytes | None = None,
) -> Plan:
    """Parse a kernel header (and an instantiate.yml) into a Plan, each file read once."""

def parse_header(
    header: StrOrBytesPath, instantiate: StrOrBytesPath | None = None, *, strict: bool = False,
    brief: bool = False,
) -> _Metadata:
    """Read a kernel header (and an instantiate.yml) into plain Python objects."""

def bind(
    library: StrOrBytesPath,
    header: StrOrBytesPath | Plan,
    instantiate: StrOrBytesPath | None = None,
    *,
    module: str,
    strict: bool = False,
    info: Any = None,
    options: dict[str, Any] | None = None,
) -> tuple[LibraryHandle, dict[str, Function], Plan, list[str], list[_Skipped]]:
    """Open a shared library and bind the kernels a header (and instantiate.yml) plan."""

def _loaded(path: StrOrBytesPath, load: bool = False,
            fd: int = -1) -> tuple[int, bool | None] | None:
    """The object dlopen(path) returns when one is loaded already (RTLD_NOLOAD: of
    that name, or from that file's device and inode), or with load=True the one it
    loads (RTLD_NODELETE, as bind() opens): None when none is loaded, else (its link
    map's address, with fd whether its code and read-only data are the bytes of the
    file open at fd, else None). bindthem._services.loading decides what to load with it."""

def _parse_count() -> int:
    """How many times this process has parsed a header (tests)."""

@overload
def nvrtc(lib: str, source: None = None) -> dict[str, Any]:
    """{'version': (major, minor), 'archs': (75, ...)} of the libnvrtc at lib."""

@overload
def nvrtc(
    lib: str,
    source: str,
    name: str = ...,
    options: Sequence[str] = ...,
    expressions: Sequence[str] = ...,
    cubin: bool = False,
) -> dict[str, Any]:
    """Compile source with NVRTC (csrc/driver/bt_nvrtc.c): {'image': bytes, 'lowered':
    [mangled name of each expression], 'log': str}; BuildError with the log."""

# --- CUDA (csrc/cuda/: bt_cudapy_bind, bt_cudapy_kernel, bt_cudapy_array, bt_cudapy_event) ---
# Loosely typed (Any for device arrays and launch configurations) while that
# API settles; bindthem.cuda is the public face.

CUDA_STREAM_LEGACY: Final[int]
CUDA_STREAM_PER_THREAD: Final[int]
CUDA_MEM_ADVICE: Final[dict[str, int]]


@final
class DeviceArray:
    """Device memory holding an array; exposes ``__cuda_array_interface__`` (v3)
    and DLPack, with the stream of its last write."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> Any: ...
    @property
    def size(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def ptr(self) -> int: ...
    @property
    def base(self) -> Any:
        """What owns the memory of a view (a module's global), else None."""
    @property
    def stream(self) -> int | None:
        """The CUstream value of the last write bindthem queued (None: none pending)."""
    @property
    def readonly(self) -> bool:
        """Whether kernels and consumers must not write it (get_global(readonly=True))."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...
    def copy_to_host(self, *, stream: Any = None, out: Any = None) -> Any: ...
    def copy_from(self, src: Any, /, *, stream: Any = None) -> DeviceArray: ...
    def copy(self, *, stream: Any = None) -> DeviceArray: ...
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule: "dltensor_versioned" (DLPack 1.x, its flags READ_ONLY and
        IS_COPIED) when max_version's major is 1 or more, else "dltensor".
        dl_device: the array's own device, or (1, 0) (the host) with copy=True;
        copy=True: a copy (on the host, or on the device), made synchronously."""
    def __dlpack_device__(self) -> tuple[int, int]: ...
    def __len__(self) -> int: ...
    # managed memory (bt_cudapy_managed.c)
    @property
    def managed(self) -> bool:
        """Whether the memory is managed (cuMemAllocManaged)."""
    def prefetch(self, location: int | str, /, *, stream: Any = None) -> None: ...
    def advise(self, advice: int | str, location: int | str | None = None, /) -> None: ...
    def host_view(self) -> Any: ...
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any: ...

@final
class CudaEvent:
    """A CUDA event (``bindthem.cuda.Event``): record, wait, query, time."""

    def __new__(cls, *, timing: bool = True) -> CudaEvent: ...
    @property
    def handle(self) -> int:
        """The CUevent value."""
    def record(self, stream: Any = None) -> CudaEvent: ...
    def wait(self, stream: Any = None) -> None: ...
    def synchronize(self) -> None: ...
    def query(self) -> bool: ...
    def elapsed_time(self, end: CudaEvent, /) -> float: ...

@final
class CudaGraph:
    """A stream's captured work as a CUDA graph (``bindthem.cuda.Graph``)."""

    @property
    def stream(self) -> Any:
        """The captured stream."""
    @property
    def mode(self) -> str:
        """The capture mode."""
    @property
    def ready(self) -> bool:
        """Captured and instantiated, not closed."""
    @property
    def arrays(self) -> tuple[tuple[DeviceArray, ...], tuple[DeviceArray, ...]]:
        """(written, read): the DeviceArrays the captured work writes and reads."""
    def __enter__(self) -> CudaGraph: ...
    def __exit__(self, type: Any, value: Any, tb: Any, /) -> bool: ...
    def launch(self, stream: Any = None) -> None: ...
    def close(self) -> None: ...

@final
class CudaLaunch:
    """A kernel with its launch configuration: ``kernel[grid, block]``."""

    @property
    def grid(self) -> tuple[int, int, int]: ...
    @property
    def block(self) -> tuple[int, int, int]: ...
    @property
    def shared_mem(self) -> int:
        """Bytes of dynamic shared memory."""
    @property
    def stream(self) -> Any: ...
    @property
    def kernel(self) -> CudaKernel: ...
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...

@final
class CudaModule:
    """A loaded CUDA module image; Kernels keep it loaded."""

    @property
    def path(self) -> str:
        """The module file."""

@final
class CudaKernel(_Callable):
    """A bound __global__ kernel: its overloads, dispatched on the arguments' dtypes."""

    # Instances also have __text_signature__: the first overload's parameters,
    # then the launch keywords "(a, x, y, *, grid, block, shared_mem=0,
    # stream=None, cluster=None, cooperative=False, priority=None)"; left out
    # here for the reason given on _Callable.

    def __getitem__(self, config: Any, /) -> CudaLaunch: ...
    def attributes(self, overload: int | str | None = None, *,
                   device: int | None = None) -> dict[str, int]: ...
    def max_active_blocks_per_sm(self, block: int | tuple[int, ...], *, shared_mem: int = 0,
                                 overload: int | str | None = None,
                                 device: int | None = None) -> int: ...
    def max_potential_block_size(self, *, shared_mem: int = 0, block_size_limit: int = 0,
                                 overload: int | str | None = None,
                                 device: int | None = None) -> tuple[int, int]: ...

def cuda_bind(
    image: bytes,
    header: StrOrBytesPath | Plan,
    instantiate: StrOrBytesPath | None = None,
    *,
    module: str,
    filename: str,
    strict: bool = False,
    info: Any = None,
) -> tuple[CudaModule, dict[str, CudaKernel], object, list[str], list[str],
           list[_Skipped]]:
    """Load a CUDA module image and bind the __global__ kernels a header plans."""

def cuda_device_count() -> int:
    """CUDA devices (0 without a driver)."""

def cuda_driver() -> dict[str, Any]:
    """Load the driver; {'version', 'path', 'library_api'}."""

def cuda_empty(shape: int | tuple[int, ...], dtype: Any = ..., *, device: int | None = None,
               stream: Any = None) -> Any:
    """An uninitialized DeviceArray."""

def cuda_global(handle: CudaModule, name: str, dtype: Any, device: int | None,
                readonly: bool = False, /) -> DeviceArray:
    """A DeviceArray view of a module variable."""

def cuda_zeros(shape: int | tuple[int, ...], dtype: Any = ..., *, device: int | None = None,
               stream: Any = None) -> Any:
    """A zeroed DeviceArray (cuMemsetD8Async on the stream)."""

def cuda_pinned_empty(shape: int | tuple[int, ...], dtype: Any = ...) -> Any:
    """A NumPy array over page-locked host memory, freed with the array."""

def cuda_stream_create(device: int | None, non_blocking: bool, /) -> int:
    """A new CUstream handle in the device's primary context."""

def cuda_stream_destroy(handle: int, /) -> None:
    """cuStreamDestroy of a cuda_stream_create handle."""

def cuda_stream_synchronize(stream: Any, /) -> None:
    """cuStreamSynchronize, the GIL released."""

def cuda_capture(stream: Any, mode: str = "thread_local") -> CudaGraph:
    """A Graph whose `with` block captures the stream."""

def cuda_synchronize() -> None:
    """cuCtxSynchronize on the current (else device 0's) context, the GIL released."""

def cuda_to_device(array: Any, *, device: int | None = None, stream: Any = None) -> Any:
    """Copy an array to a new DeviceArray (on a stream: asynchronously)."""

# managed memory and peer access (bt_cudapy_managed.c, bt_cudapy_peer.c)
def cuda_managed_empty(shape: int | tuple[int, ...], dtype: Any = ..., *,
                       device: int | None = None, attach: str = "global") -> DeviceArray:
    """An uninitialized DeviceArray of managed memory (cuMemAllocManaged)."""

def cuda_managed_zeros(shape: int | tuple[int, ...], dtype: Any = ..., *,
                       device: int | None = None, attach: str = "global",
                       stream: Any = None) -> DeviceArray:
    """A zeroed DeviceArray of managed memory."""

def cuda_can_access_peer(device: int, peer: int, /) -> bool:
    """cuDeviceCanAccessPeer."""

def cuda_enable_peer_access(peer: int, device: int | None, /) -> None:
    """cuCtxEnablePeerAccess, idempotent."""

def cuda_disable_peer_access(peer: int, device: int | None, /) -> None:
    """cuCtxDisablePeerAccess, idempotent."""
