/* bt_cudapy_export.c - a DeviceArray to its consumers: __cuda_array_interface__ and DLPack. */

#include "bt_cudapy_array.h"

#include "pythread.h"

#include <string.h>

PyObject *bt_cudapy_devarray_cai(BtDeviceArray *a, void *c)
{
    PyObject *typestr, *r, *ro;
    uint64_t stream;
    BtDiag e;
    int rc = 0;

    /* a write on the per-thread stream, read in another thread: the handle 2
     * would name the reader's own stream there, so the legacy stream is made
     * to wait for the write's event and is exported instead */
    bt_diag_init(&e);
    BT_FT_BEGIN(a);
    stream = a->stream;
    if (a->has_event && a->writer != PyThread_get_thread_ident()) {
        rc = bt_cuda_wait_in(a->device, BT_CUDA_STREAM_LEGACY, 0, a->event, &e);
        stream = BT_CUDA_STREAM_LEGACY;
    }
    BT_FT_END();
    if (rc < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(a)), &e);
    typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str");
    if (!typestr)
        return NULL;
    ro = bt_cudapy_devarray_readonly(a) ? Py_True : Py_False;
    /* the stream of the last write: a consumer orders its work after it */
    if (stream)
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:K}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, ro, "version", 3, "strides", Py_None,
                          "stream", (unsigned long long)stream);
    else
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:O}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, ro, "version", 3, "strides", Py_None,
                          "stream", Py_None);
    return r;
}

/* ================= DLPack export =================
 *
 * __dlpack__ gives a "dltensor_versioned" capsule (DLPack 1.x) to a consumer
 * that passes max_version=(1, x) or newer, else the unversioned "dltensor"
 * one. Either holds an Exported; its deleter drops the reference to what
 * owns the memory (the array, or the copy made for the consumer). */

typedef struct Exported {
    union { /* at offset 0: a deleter's pointer is the Exported's */
        BtDLManagedTensor v0;
        BtDLManagedTensorVersioned v1;
    } mt;
    int64_t shape[NPY_MAXDIMS];
    int64_t strides[NPY_MAXDIMS]; /* in elements, C order: given even where NULL would do */
} Exported;

static void exported_free(void *owner, void *x)
{
    /* a consumer may call the deleter in a thread without the GIL */
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)owner);
    PyMem_RawFree(x);
    PyGILState_Release(g);
}

static void deleter_v0(BtDLManagedTensor *mt) { exported_free(mt->manager_ctx, mt); }

static void deleter_v1(BtDLManagedTensorVersioned *mt) { exported_free(mt->manager_ctx, mt); }

/* The capsules' destructors: the deleter runs only while a capsule keeps
 * its name. A consumer that took the tensor renamed the capsule
 * "used_dltensor" / "used_dltensor_versioned" and calls the deleter itself. */
static void capsule_free_v0(PyObject *cap)
{
    BtDLManagedTensor *mt;

    if (!PyCapsule_IsValid(cap, "dltensor"))
        return;
    mt = PyCapsule_GetPointer(cap, "dltensor");
    if (mt->deleter)
        mt->deleter(mt);
}

static void capsule_free_v1(PyObject *cap)
{
    BtDLManagedTensorVersioned *mt;

    if (!PyCapsule_IsValid(cap, "dltensor_versioned"))
        return;
    mt = PyCapsule_GetPointer(cap, "dltensor_versioned");
    if (mt->deleter)
        mt->deleter(mt);
}

/* The array's DLPack device type: kDLCUDAManaged for managed memory
 * (cuda.managed_empty), else kDLCUDA; with a->device, what
 * __dlpack_device__ says and a dl_device argument may name. */
static int dl_device_type(const BtDeviceArray *a) { return a->managed ? DL_CUDA_MANAGED : DL_CUDA; }

PyObject *bt_cudapy_devarray_dlpack_device(BtDeviceArray *a, PyObject *unused)
{
    return Py_BuildValue("(ii)", dl_device_type(a), a->device);
}

/* A capsule over `data` on (dev_type, dev_id), laid out as a (C order,
 * dtype id), whose tensor holds `owner` (stolen) until its deleter runs.
 * versioned: "dltensor_versioned" of version 1.minor with `flags`. */
static PyObject *make_capsule(BtDeviceArray *a, int id, PyObject *owner, uint64_t data,
                              int dev_type, int dev_id, int versioned, int minor, uint64_t flags)
{
    Exported *x = PyMem_RawCalloc(1, sizeof *x);
    int nd = (int)PyTuple_GET_SIZE(a->shape), i; /* <= NPY_MAXDIMS: devarray_new */
    int64_t stride = 1;
    BtDLTensor *t;
    PyObject *cap;

    if (!x) {
        Py_DECREF(owner);
        return PyErr_NoMemory();
    }
    t = versioned ? &x->mt.v1.dl_tensor : &x->mt.v0.dl_tensor;
    for (i = nd - 1; i >= 0; i--) {
        x->shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(a->shape, i));
        x->strides[i] = stride;
        stride *= x->shape[i] ? x->shape[i] : 1;
    }
    t->data = (void *)(uintptr_t)data;
    t->device.device_type = dev_type;
    t->device.device_id = dev_id;
    t->ndim = nd;
    t->dtype.code = (uint8_t)bt_type(id)->dl_code;
    t->dtype.bits = (uint8_t)(bt_type(id)->size * 8);
    t->dtype.lanes = 1;
    t->shape = x->shape;
    t->strides = x->strides;
    if (versioned) {
        x->mt.v1.version.major = BT_DLPACK_MAJOR;
        x->mt.v1.version.minor = (uint32_t)minor;
        x->mt.v1.manager_ctx = owner;
        x->mt.v1.deleter = deleter_v1;
        x->mt.v1.flags = flags;
        cap = PyCapsule_New(&x->mt.v1, "dltensor_versioned", capsule_free_v1);
    } else {
        x->mt.v0.manager_ctx = owner;
        x->mt.v0.deleter = deleter_v0;
        cap = PyCapsule_New(&x->mt.v0, "dltensor", capsule_free_v0);
    }
    if (!cap) {
        Py_DECREF(owner);
        PyMem_RawFree(x);
    }
    return cap;
}

/* A (type, id) or (major, minor) tuple of two ints into v; -1 with
 * TypeError naming `what`. */
static int int_pair(PyObject *o, const char *what, long v[2])
{
    if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2 || !PyLong_Check(PyTuple_GET_ITEM(o, 0)) ||
        !PyLong_Check(PyTuple_GET_ITEM(o, 1))) {
        PyErr_Format(PyExc_TypeError,
                     "DeviceArray.__dlpack__(): %s must be a tuple of two ints, not %R", what, o);
        return -1;
    }
    v[0] = PyLong_AsLong(PyTuple_GET_ITEM(o, 0));
    v[1] = PyLong_AsLong(PyTuple_GET_ITEM(o, 1));
    return (v[0] == -1 || v[1] == -1) && PyErr_Occurred() ? -1 : 0;
}

/* The consumer's stream (the DLPack protocol's raw CUstream value, or a
 * stream object) into *s; *wait = 0 for -1 (the consumer orders nothing). */
static int consumer_stream(PyObject *stream, uint64_t *s, int *wait)
{
    *s = BT_CUDA_STREAM_LEGACY; /* None: the legacy default stream */
    *wait = 1;
    if (PyLong_Check(stream) && !PyBool_Check(stream)) {
        long long v = PyLong_AsLongLong(stream);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            *s = PyLong_AsUnsignedLongLong(stream);
            if (*s == (uint64_t)-1 && PyErr_Occurred())
                return -1;
        } else {
            *wait = v != -1;
            *s = (uint64_t)v;
        }
    } else if (stream != Py_None && bt_cudapy_stream_arg(stream, "__dlpack__", 0, s) < 0) {
        return -1;
    }
    if (*wait && *s == 0) {
        PyErr_SetString(PyExc_ValueError, "DeviceArray.__dlpack__(): stream=0 is ambiguous "
                                          "for CUDA; pass 1 (legacy) or 2 (per-thread)");
        return -1;
    }
    return 0;
}

/* What a __dlpack__ call asks for. */
typedef struct Request {
    int versioned, minor; /* "dltensor_versioned" of version 1.minor, else "dltensor" */
    int copy;             /* copy=True */
    int to_host;          /* dl_device=(1, 0): a copy on the host */
} Request;

/* Reads max_version, dl_device and copy into *r (the stream: the caller).
 * 0, or -1 with TypeError (a malformed argument) or BufferError (what
 * bindthem does not export). */
static int read_request(BtDeviceArray *a, PyObject *stream, PyObject *maxv, PyObject *dl_device,
                        PyObject *copy, Request *r)
{
    long v[2];

    memset(r, 0, sizeof *r);
    if (maxv != Py_None) {
        if (int_pair(maxv, "max_version", v) < 0)
            return -1;
        r->versioned = v[0] >= BT_DLPACK_MAJOR;
        r->minor = v[0] > BT_DLPACK_MAJOR || v[1] >= BT_DLPACK_MINOR ? BT_DLPACK_MINOR : 0;
    }
    if (copy != Py_None && (r->copy = PyObject_IsTrue(copy)) < 0)
        return -1;
    if (dl_device == Py_None)
        return 0;
    if (int_pair(dl_device, "dl_device", v) < 0)
        return -1;
    if (v[0] == dl_device_type(a) && v[1] == a->device)
        return 0;
    if (v[0] != DL_CPU || v[1] != 0) {
        PyErr_Format(PyExc_BufferError,
                     "DeviceArray.__dlpack__(): dl_device=%R is not supported: this array "
                     "exports to its own device, (%d, %d), or with copy=True to the host, (%d, 0)",
                     dl_device, dl_device_type(a), a->device, DL_CPU);
        return -1;
    }
    if (!r->copy) {
        PyErr_Format(PyExc_BufferError,
                     "DeviceArray.__dlpack__(): dl_device=%R (the host) needs copy=True, not "
                     "copy=%R: bindthem copies device memory to the host only when asked to",
                     dl_device, copy);
        return -1;
    }
    if (stream != Py_None) {
        PyErr_Format(PyExc_BufferError,
                     "DeviceArray.__dlpack__(): stream must be None with dl_device=%R (the "
                     "host), not %R: the host copy is done when __dlpack__ returns",
                     dl_device, stream);
        return -1;
    }
    r->to_host = 1;
    return 0;
}

/* New reference: a copy of a for the consumer, made synchronously after its
 * last write: a NumPy array (to_host, copy_to_host()) or a DeviceArray
 * (copy()); its data's address in *data. */
static PyObject *copy_for_consumer(BtDeviceArray *a, int to_host, uint64_t *data)
{
    PyObject *none = PyTuple_New(0), *owner;

    if (!none)
        return NULL;
    owner = to_host ? bt_cudapy_devarray_copy_to_host(a, none, NULL)
                    : bt_cudapy_devarray_copy(a, none, NULL);
    Py_DECREF(none);
    if (owner)
        *data = to_host ? (uint64_t)(uintptr_t)PyArray_DATA((PyArrayObject *)owner)
                        : ((BtDeviceArray *)owner)->ptr;
    return owner;
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None),
 * as the array API standard (2023.12) has it:
 * - max_version (major, minor), major >= 1: a "dltensor_versioned" capsule
 *   of version 1.min(minor, 1) (1.1 for a newer major), flagged READ_ONLY
 *   for a read-only array, IS_COPIED for a copy; else "dltensor", which
 *   a read-only array refuses (BufferError: it could not say so).
 * - dl_device: None or the array's own (2, device); (1, 0), the host, with
 *   copy=True only: a NumPy array made by copy_to_host() (after the last
 *   write, synchronously; stream must be None), which the capsule owns.
 * - copy=True: a copy (on the device: DeviceArray.copy(), synchronous, so
 *   the consumer's stream has nothing to wait for); False and None: the
 *   array itself, never a copy.
 * - stream: the consumer's stream waits for the array's last write (-1:
 *   no wait; None: the legacy stream). */
PyObject *bt_cudapy_devarray_dlpack(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *stream = Py_None, *maxv = Py_None, *dl_device = Py_None, *copy = Py_None, *owner;
    uint64_t s = 0, data = 0, flags = 0;
    int id = bt_type_from_npy(a->dtype->type_num), ro = bt_cudapy_devarray_readonly(a), wait = 0;
    Request r;
    BtDiag e;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &maxv,
                                     &dl_device, &copy) ||
        read_request(a, stream, maxv, dl_device, copy, &r) < 0)
        return NULL;
    if (id < 0 || bt_type(id)->dl_code < 0 || PyDataType_ISBYTESWAPPED(a->dtype)) {
        PyErr_Format(PyExc_BufferError, "DeviceArray.__dlpack__(): dtype %S has no DLPack type",
                     a->dtype);
        return NULL;
    }
    if (ro && !r.versioned && !r.copy) {
        PyErr_SetString(PyExc_BufferError,
                        "DeviceArray.__dlpack__(): the array is read-only, which an unversioned "
                        "DLPack capsule cannot say: the consumer must pass max_version=(1, 0) or "
                        "newer (or copy=True, for a writable copy)");
        return NULL;
    }
    if (!r.to_host && consumer_stream(stream, &s, &wait) < 0)
        return NULL;
    if (r.copy) {
        if (!(owner = copy_for_consumer(a, r.to_host, &data)))
            return NULL;
        flags = BT_DLPACK_FLAG_IS_COPIED;
    } else {
        /* in the array's context (its device's, whichever is current), through
         * the write's event for the per-thread stream */
        bt_diag_init(&e);
        if (wait && bt_cudapy_devarray_wait(a, s, 0, &e) < 0)
            return bt_raise_diag(st, &e);
        owner = Py_NewRef(a);
        data = a->ptr;
        flags = ro ? BT_DLPACK_FLAG_READ_ONLY : 0;
    }
    return make_capsule(a, id, owner, data, r.to_host ? DL_CPU : dl_device_type(a),
                        r.to_host ? 0 : a->device, r.versioned, r.minor, flags);
}
