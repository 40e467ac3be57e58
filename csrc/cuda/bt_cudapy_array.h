/* bt_cudapy_array.h - the DeviceArray object and DLPack's structs, shared by the array files. */

/* bt_cudapy_array.c: the DeviceArray type (its tables, getters, dealloc);
 * bt_cudapy_export.c: its __cuda_array_interface__ and DLPack export;
 * bt_cudapy_memory.c: making one (to_device, empty/zeros), recording its
 * last write, copy_to_host, pinned memory; bt_cudapy_args.c: reading array
 * and stream arguments. Calls go one way: the type -> export, memory ->
 * args. What other files use is in bt_cudapy.h. */
#ifndef BT_CUDAPY_ARRAY_H
#define BT_CUDAPY_ARRAY_H

#include "bt_cudapy.h"

#include "bt_numpy.h"

/* ---- DLPack: dlpack.h's structs under bindthem's names ----
 * The unversioned "dltensor" capsule holds a BtDLManagedTensor (dlpack.h
 * 0.x, still 1.x's legacy form); the versioned "dltensor_versioned" one a
 * BtDLManagedTensorVersioned (1.0, 1.1: the same layout, 1.1 adding type
 * codes and a flag). A consumer that takes a capsule renames it "used_" +
 * its name and calls the deleter when done; a capsule still under its own
 * name calls the deleter when it goes. */
typedef struct {
    int32_t device_type, device_id;
} BtDLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} BtDLDataType;
typedef struct {
    void *data;
    BtDLDevice device;
    int32_t ndim;
    BtDLDataType dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: C-contiguous (before 1.2) */
    uint64_t byte_offset;
} BtDLTensor;
typedef struct BtDLManagedTensor {
    BtDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct BtDLManagedTensor *);
} BtDLManagedTensor;
typedef struct {
    uint32_t major, minor;
} BtDLPackVersion;
typedef struct BtDLManagedTensorVersioned {
    BtDLPackVersion version; /* a major other than 1: only the deleter may be read */
    void *manager_ctx;
    void (*deleter)(struct BtDLManagedTensorVersioned *);
    uint64_t flags; /* BT_DLPACK_FLAG_* */
    BtDLTensor dl_tensor;
} BtDLManagedTensorVersioned;
/* DLPACK_FLAG_BITMASK_READ_ONLY, _IS_COPIED, _IS_SUBBYTE_TYPE_PADDED (1.1) */
#define BT_DLPACK_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define BT_DLPACK_FLAG_IS_COPIED ((uint64_t)1 << 1)
#define BT_DLPACK_FLAG_SUBBYTE_PADDED ((uint64_t)1 << 2)
/* the newest version bindthem writes and reads (1.1 adds nothing it uses) */
#define BT_DLPACK_MAJOR 1
#define BT_DLPACK_MINOR 1
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };

/* A pending read of an array, queued by bindthem (a launch that takes it
 * const, an async copy_to_host) on `stream`: a later write on another
 * stream waits for it. event: recorded after a read on the per-thread
 * stream (whose handle means another stream in each thread), else NULL. */
typedef struct BtCudaReader {
    uint64_t stream;
    void *event;
    unsigned long thread; /* the reading thread, for the per-thread stream */
    PyObject *owner;      /* the stream object, kept alive while it may be waited on */
} BtCudaReader;

/* Readers remembered per array; a read on one more stream makes that stream
 * wait for the oldest reader, which it then replaces (waiting on it waits for both). */
#define BT_CUDA_MAX_READERS 4

typedef struct BtDeviceArray {
    PyObject_HEAD
    uint64_t ptr;
    size_t nbytes;
    Py_ssize_t size;
    int device;
    uint8_t code;
    PyObject *shape; /* tuple of int */
    PyArray_Descr *dtype;
    uint64_t stream; /* the stream of the last write (a launch, async copy, zeros), 0: none */
    PyObject *stream_owner; /* the object that gave `stream` (it keeps the CUstream alive) */
    /* a last write on the per-thread stream (2) is marked by this event,
     * recorded after it in the writing thread (`writer`): other threads wait
     * for the event, never for a raw 2, which names their own stream */
    void *event;
    int has_event;
    unsigned long writer;
    int n_readers; /* pending reads since the last write */
    BtCudaReader readers[BT_CUDA_MAX_READERS];
    PyObject *base; /* a view's owner of the memory (a DeviceArray, a CudaModule), else NULL */
    int pooled;     /* from the stream-ordered pool: freed with cuMemFreeAsync */
    /* changes to the ordering state (writes and reads recorded): what a
     * synchronous copy saw before it waited, so that it forgets only that */
    uint64_t gen;
    int managed; /* cuMemAllocManaged memory (bt_cudapy_managed.c): freed with cuMemFree */
    /* a view that kernels and consumers must not write (get_global(readonly=True):
     * a __constant__ variable); 0 for every other array (devarray_make).
     * A launch passes it to const parameters only, CAI and DLPack export it
     * flagged read-only; copy_from, the host's write (the way a __constant__
     * is set), still works. */
    int readonly;
} BtDeviceArray;

static inline int bt_cudapy_devarray_readonly(const BtDeviceArray *a) { return a->readonly; }

/* Free-threaded CPython: the ordering state (stream, stream_owner, event,
 * has_event, writer, readers, n_readers, gen) is read and changed whole
 * under the array's critical section (BT_FT_BEGIN, bt_ft.h), by the
 * functions here and in bt_cudapy_memory.c; references it drops are
 * released after the section (a stream's dealloc may block). ptr, nbytes,
 * shape, dtype, device, base and pooled are set before the array is
 * shared and never change (dealloc, which reads pooled, runs alone). */

/* bt_cudapy_memory.c. New reference: an uninitialized device array (dtype
 * is stolen), its memory allocated stream-ordered on `stream` (0: legacy;
 * bt_cuda_alloc_async) and, when pooled, recorded as written there so that
 * other streams are ordered after the allocation; `owner` as for
 * bt_cudapy_devarray_wrote. shape is checked here, the one place
 * DeviceArrays are made: at most NPY_MAXDIMS dimensions (copy_to_host
 * relies on it), each an int >= 0, nbytes within Py_ssize_t. */
BT_HIDDEN PyObject *bt_cudapy_devarray_new_on(BtState *st, PyObject *shape, PyArray_Descr *dtype,
                                              int device, uint64_t stream, PyObject *owner);

/* DeviceArray.copy_from(src, *, stream) and .copy(*, stream) (bt_cudapy_memory.c). */
BT_HIDDEN PyObject *bt_cudapy_devarray_copy_from(BtDeviceArray *a, PyObject *args,
                                                 PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_devarray_copy(BtDeviceArray *a, PyObject *args, PyObject *kwargs);

/* The DeviceArray's export (bt_cudapy_export.c): the __cuda_array_interface__
 * getter, __dlpack__ and __dlpack_device__. New references. */
BT_HIDDEN PyObject *bt_cudapy_devarray_cai(BtDeviceArray *a, void *c);
BT_HIDDEN PyObject *bt_cudapy_devarray_dlpack(BtDeviceArray *a, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_devarray_dlpack_device(BtDeviceArray *a, PyObject *unused);

/* Makes `waiter` (a stream of the array's device; the array's context is
 * made current meanwhile) wait for a's last write (its event, else its
 * stream) and, for a write (`write` set), for its pending reads. 0, or -1
 * with e set. Takes a's critical section. */
BT_HIDDEN int bt_cudapy_devarray_wait(BtDeviceArray *a, uint64_t waiter, int write, BtDiag *e);

/* DeviceArray.copy_to_host(*, stream, out) (bt_cudapy_memory.c): new reference. */
BT_HIDDEN PyObject *bt_cudapy_devarray_copy_to_host(BtDeviceArray *a, PyObject *args,
                                                    PyObject *kwargs);

/* ---- managed memory and peer copies (bt_cudapy_managed.c, bt_cudapy_peer.c) ---- */

/* bt_cudapy_memory.c. New reference: a DeviceArray of shape and dtype
 * (stolen) on device with no memory yet (ptr 0), for an allocator of its
 * own to fill; freed as any (cuMemFree) unless it sets `pooled` or `base`. */
BT_HIDDEN BtDeviceArray *bt_cudapy_devarray_shell(BtState *st, PyObject *shape,
                                                  PyArray_Descr *dtype, int device);
/* DeviceArray.copy_from (bt_cudapy_peer.c): from a DeviceArray of another
 * device, queued on `stream` (None: synchronous) after a's last write and
 * pending reads and src's last write (cuMemcpyPeerAsync); any other source
 * goes to bt_cudapy_devarray_copy_from. New reference (a). */
BT_HIDDEN PyObject *bt_cudapy_peer_copy_from(BtDeviceArray *a, PyObject *args, PyObject *kwargs);
/* The DeviceArray methods and getter of managed memory (bt_cudapy_managed.c),
 * entries of bt_cudapy_array.c's tables. */
BT_HIDDEN PyObject *bt_cudapy_managed_prefetch(BtDeviceArray *a, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_managed_advise(BtDeviceArray *a, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_managed_host_view(BtDeviceArray *a, PyObject *unused);
BT_HIDDEN PyObject *bt_cudapy_managed_array(BtDeviceArray *a, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_managed_get(BtDeviceArray *a, void *c);
#define BT_CUDAPY_MANAGED_METHODS                                                                  \
    {"prefetch", (PyCFunction)(void (*)(void))bt_cudapy_managed_prefetch,                          \
     METH_VARARGS | METH_KEYWORDS,                                                                 \
     "prefetch($self, location, /, *, stream=None)\n--\n\nQueues migrating managed memory to "     \
     "location (a device ordinal or 'host') on stream, after the array's last write."},            \
        {"advise", (PyCFunction)(void (*)(void))bt_cudapy_managed_advise,                          \
         METH_VARARGS | METH_KEYWORDS,                                                             \
         "advise($self, advice, location=None, /)\n--\n\ncuMemAdvise on managed memory: advice "   \
         "a name or a MemAdvise, location a device ordinal or 'host'."},                           \
        {"host_view", (PyCFunction)bt_cudapy_managed_host_view, METH_NOARGS,                       \
         "host_view($self, /)\n--\n\nA NumPy array over the managed memory, once the array's "     \
         "pending work is done."},                                                                 \
    {                                                                                              \
        "__array__", (PyCFunction)(void (*)(void))bt_cudapy_managed_array,                         \
            METH_VARARGS | METH_KEYWORDS,                                                          \
            "__array__($self, /, dtype=None, copy=None)\n--\n\nhost_view() of managed memory; "    \
            "device memory refuses (copy_to_host())."                                              \
    }
#define BT_CUDAPY_MANAGED_GETSET                                                                   \
    {                                                                                              \
        "managed", (getter)bt_cudapy_managed_get, NULL,                                            \
            "Whether the memory is managed (cuMemAllocManaged).", NULL                             \
    }

#endif
