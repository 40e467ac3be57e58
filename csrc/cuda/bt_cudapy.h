/* bt_cudapy.h - what the files of bindthem.cuda's Python side share. */

/* bt_cudapy_array.c, _export.c, _memory.c, _args.c: device arrays, their
 * export, copies, reading array and stream arguments (bt_cudapy_array.h);
 * bt_cudapy_kernel.c and its siblings (bt_cudapy_kernel_impl.h names them):
 * kernels and launches; bt_cudapy_bind.c: cuda_bind and the
 * module handle; bt_cudapy_module.c: registration, cuda_* functions. */
#ifndef BT_CUDA_PY_H
#define BT_CUDA_PY_H

#include "bt_state.h"

#include "bt_call.h"
#include "bt_cuda.h"
#include "bt_diag_py.h"

/* ---- bt_cudapy_bind.c ---- */

/* The CudaModule type (a loaded module image) and _core.cuda_bind. */
BT_HIDDEN extern PyType_Spec bt_cudapy_handle_spec;
BT_HIDDEN extern const char bt_cudapy_bind_doc[];
BT_HIDDEN PyObject *bt_cudapy_bind(PyObject *module, PyObject *args, PyObject *kwargs);
/* _core.cuda_global(handle, name, dtype, device): a DeviceArray view of a
 * module variable (cuLibraryGetGlobal / cuModuleGetGlobal). */
BT_HIDDEN PyObject *bt_cudapy_global(PyObject *module, PyObject *args);

/* ---- the array files (bt_cudapy_array.h says which is which) ---- */

/* One argument, as a launch sees it. */
typedef struct BtCudaArg {
    uint8_t code; /* dispatch code */
    int kind;     /* BT_CUDA_ARG_* */
    uint64_t ptr;
    Py_ssize_t n; /* elements */
    int ndim;
    Py_ssize_t shape[BT_MAX_SIZE_AXES]; /* the axes a size parameter can name */
    int readonly;
    int contiguous;
    int has_stream; /* CAI v3 'stream' to wait on */
    uint64_t stream;
    const char *via; /* "__cuda_array_interface__", "DLPack", ... */
    PyObject *keep;  /* DLPack capsule, released after the launch */
    PyObject *array; /* borrowed: the DeviceArray, else NULL */
    int device;      /* the DeviceArray's */
} BtCudaArg;

enum { BT_CUDA_ARG_SCALAR = 0, BT_CUDA_ARG_DEVICE, BT_CUDA_ARG_HOST };

BT_HIDDEN extern PyType_Spec bt_cudapy_devarray_spec;

/* Classifies argument o (for parameter `name` of kernel kname): a
 * DeviceArray, __cuda_array_interface__ or DLPack device array, a host
 * array, or a scalar by its dispatch code. stream is the launch's (a DLPack
 * producer orders its work before it). Returns 0, or -1 with an exception
 * set; a->keep must be released either way. */
BT_HIDDEN int bt_cudapy_read_arg(BtState *st, PyObject *o, uint64_t stream, const char *kname,
                                 PyObject *name, BtCudaArg *a);

/* Records that a launch or copy queued on `stream` writes DeviceArray o:
 * later launches on other streams, copies and consumers wait for it (a
 * write on the per-thread stream through an event recorded now, in this
 * thread). owner: the stream argument as given (None, an int or a stream
 * object, which o then keeps alive, and with it the CUstream). 0, or -1
 * with an exception set. */
BT_HIDDEN int bt_cudapy_devarray_wrote(PyObject *o, uint64_t stream, PyObject *owner);
/* Records that a launch or copy queued on `stream` reads DeviceArray o:
 * a later write on another stream waits for it. 0, or -1 with an exception. */
BT_HIDDEN int bt_cudapy_devarray_read(PyObject *o, uint64_t stream, PyObject *owner);
/* bt_cudapy_devarray_wait (bt_cudapy_array.h) for any object: 0 for what
 * is not a DeviceArray. */
BT_HIDDEN int bt_cudapy_wait_for(PyObject *o, uint64_t waiter, int write, BtDiag *e);

/* ValueError "who[grid, block]: ..." (launch: a launch's configuration) or
 * "who(): ..."; fmt is PyUnicode_FromFormat's. Always -1. */
BT_HIDDEN int bt_cudapy_value_error(const char *who, int launch, const char *fmt, ...);

/* The one reader of stream arguments, for launches (launch: messages
 * start "who[grid, block]: " and name the launch order) and functions
 * ("who(): "): None or 0 (the legacy default stream), the driver's
 * constants 1 and 2, anything with __cuda_stream__ (CUDA Python's
 * protocol, version 0; bindthem.cuda.Stream, LEGACY, PER_THREAD), or a
 * `...Stream` object with `cuda_stream` (older PyTorch) or `ptr` (CuPy).
 * 0 with the handle in *out, or -1 with ValueError. */
BT_HIDDEN int bt_cudapy_stream_arg(PyObject *o, const char *who, int launch, uint64_t *out);

/* Before this thread queues work on its per-thread stream (bt_cudapy_ptds.c):
 * makes sure that work is finished before the thread exits. 0, or -1 with
 * an exception; called by bt_cudapy_stream_arg for the handle 2. */
BT_HIDDEN int bt_cudapy_ptds_arm(void);

/* The module functions cuda_to_device(array, *, device, stream),
 * cuda_empty(shape, dtype, *, device), cuda_zeros(shape, dtype, *,
 * device, stream) and cuda_pinned_empty(shape, dtype): new references. */
BT_HIDDEN PyObject *bt_cudapy_to_device(PyObject *module, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_empty(PyObject *module, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_zeros(PyObject *module, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_pinned_empty(PyObject *module, PyObject *args, PyObject *kwargs);

/* New reference: a DeviceArray over nbytes of device memory at ptr on
 * device that `base` owns (kept alive by the view, never freed by it), as
 * a 1-d array of dtype (stolen; nbytes a multiple of its size). A base of
 * (owner,) makes a read-only view of owner's memory (bt_cudapy_array.h). */
BT_HIDDEN PyObject *bt_cudapy_devarray_view(BtState *st, PyObject *base, uint64_t ptr,
                                            size_t nbytes, PyObject *dtype, int device,
                                            int readonly);

/* ---- managed memory, peer access (bt_cudapy_managed.c, bt_cudapy_peer.c) ---- */

/* Whether DeviceArray o's memory is managed. */
BT_HIDDEN int bt_cudapy_is_managed(PyObject *o);
/* Whether a launch in dev's primary context (ctx) may take memory of
 * device `peer` in context peer_ctx: bindthem enabled peer access from dev
 * to peer (bindthem.cuda.enable_peer_access), both contexts primary. */
BT_HIDDEN int bt_cudapy_peer_ok(int dev, void *ctx, int peer, void *peer_ctx);
/* A launch on device dev, on stream `ours`, uses DeviceArray o (write: it
 * writes it): before it, `ours` waits for o's producers (o's last write,
 * and its pending reads for a write); after it, the use is recorded. o of
 * another device (peer or managed memory) is ordered through o's device's
 * legacy stream; managed memory of another device needs dev to have
 * concurrent managed access. 0, or -1 with an exception set. */
BT_HIDDEN int bt_cudapy_use_wait(PyObject *o, int dev, uint64_t ours, int write);
BT_HIDDEN int bt_cudapy_use_record(PyObject *o, int dev, uint64_t ours, PyObject *owner, int write);
/* cuda_managed_empty(shape, dtype, *, device, attach) and cuda_managed_zeros(..., stream). */
BT_HIDDEN PyObject *bt_cudapy_managed_empty(PyObject *module, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_managed_zeros(PyObject *module, PyObject *args, PyObject *kwargs);
/* cuda_can_access_peer(device, peer), cuda_enable_peer_access(peer, device),
 * cuda_disable_peer_access(peer, device). */
BT_HIDDEN PyObject *bt_cudapy_can_access_peer(PyObject *module, PyObject *args);
BT_HIDDEN PyObject *bt_cudapy_enable_peer(PyObject *module, PyObject *args);
BT_HIDDEN PyObject *bt_cudapy_disable_peer(PyObject *module, PyObject *args);
/* The CUmem_advise names and values, {name: value}: _core.CUDA_MEM_ADVICE. */
BT_HIDDEN PyObject *bt_cudapy_advice_names(void);
#define BT_CUDAPY_MANAGED_FUNCTIONS                                                                \
    {"cuda_managed_empty", (PyCFunction)(void (*)(void))bt_cudapy_managed_empty,                   \
     METH_VARARGS | METH_KEYWORDS,                                                                 \
     "cuda_managed_empty(shape, dtype=float, *, device=None, attach='global')\n--\n\n"             \
     "An uninitialized DeviceArray of managed memory (cuMemAllocManaged)."},                       \
        {"cuda_managed_zeros", (PyCFunction)(void (*)(void))bt_cudapy_managed_zeros,               \
         METH_VARARGS | METH_KEYWORDS,                                                             \
         "cuda_managed_zeros(shape, dtype=float, *, device=None, attach='global', "                \
         "stream=None)\n--\n\nA zeroed DeviceArray of managed memory."},                           \
        {"cuda_can_access_peer", bt_cudapy_can_access_peer, METH_VARARGS,                          \
         "cuda_can_access_peer(device, peer, /)\n--\n\ncuDeviceCanAccessPeer."},                   \
        {"cuda_enable_peer_access", bt_cudapy_enable_peer, METH_VARARGS,                           \
         "cuda_enable_peer_access(peer, device, /)\n--\n\ncuCtxEnablePeerAccess, idempotent."},    \
    {                                                                                              \
        "cuda_disable_peer_access", bt_cudapy_disable_peer, METH_VARARGS,                          \
            "cuda_disable_peer_access(peer, device, /)\n--\n\ncuCtxDisablePeerAccess, idempotent." \
    }

/* ---- bt_cudapy_event.c ---- */

BT_HIDDEN extern PyType_Spec bt_cudapy_event_spec;

/* ---- bt_cudapy_kernel.c, bt_cudapy_launch.c ---- */

BT_HIDDEN extern PyType_Spec bt_cudapy_kernel_spec;
BT_HIDDEN extern PyType_Spec bt_cudapy_launch_spec;

/* New reference: a Kernel for plan entry f, of which the n overloads ovs
 * were found, with calls[i] prepared (slots only) for ovs[i] and kernels[i]
 * its CUkernel / CUfunction. The kernel takes over `arena`, which holds
 * calls and kernels; owner (the CudaModule) keeps the module loaded; info
 * is its Library's LibraryInfo (or NULL); m is the loaded module (owner's),
 * which resolves each kernel's CUfunction per context at its first launch
 * there. */
BT_HIDDEN PyObject *bt_cudapy_kernel_new(BtState *st, const BtFunc *f, const BtOverload *ovs,
                                         BtCall *calls, void **kernels, int n, BtArena *arena,
                                         PyObject *owner, PyObject *modname, PyObject *info,
                                         BtCudaModule *m);

#endif
