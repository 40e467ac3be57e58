/* bt_cudapy_export.c - a DeviceArray to its consumers: __cuda_array_interface__ and DLPack. */

#include "bt_cudapy_array.h"

#include "pythread.h"

PyObject *bt_cudapy_devarray_cai(BtDeviceArray *a, void *c)
{
    PyObject *typestr, *r;
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
    /* the stream of the last write: a consumer orders its work after it */
    if (stream)
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:K}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, Py_False, "version", 3, "strides",
                          Py_None, "stream", (unsigned long long)stream);
    else
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:O}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, Py_False, "version", 3, "strides",
                          Py_None, "stream", Py_None);
    return r;
}

/* ---- DLPack export (an unversioned "dltensor" capsule) ---- */

typedef struct Exported {
    BtDLManagedTensor mt;
    int64_t shape[NPY_MAXDIMS];
} Exported;

static void exported_deleter(BtDLManagedTensor *mt)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)mt->manager_ctx);
    PyMem_RawFree(mt);
    PyGILState_Release(g);
}

static void exported_capsule_free(PyObject *cap)
{
    /* a consumer renames the capsule "used_dltensor" and owns the tensor */
    BtDLManagedTensor *mt;
    if (!PyCapsule_IsValid(cap, "dltensor"))
        return;
    mt = PyCapsule_GetPointer(cap, "dltensor");
    if (mt && mt->deleter)
        mt->deleter(mt);
}

PyObject *bt_cudapy_devarray_dlpack_device(BtDeviceArray *a, PyObject *unused)
{
    return Py_BuildValue("(ii)", DL_CUDA, a->device);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None):
 * the consumer's stream waits for the array's last write (stream=-1: no
 * wait; None: the legacy stream). */
PyObject *bt_cudapy_devarray_dlpack(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *stream = Py_None, *maxv = Py_None, *dl_device = Py_None, *copy = Py_None, *cap;
    Exported *x;
    uint64_t s = BT_CUDA_STREAM_LEGACY;
    int nd = (int)PyTuple_GET_SIZE(a->shape), i, wait = 1;
    int id = bt_type_from_npy(a->dtype->type_num);
    BtDiag e;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", kwlist, &stream, &maxv,
                                     &dl_device, &copy))
        return NULL;
    if (copy == Py_True) {
        PyErr_SetString(PyExc_BufferError, "DeviceArray.__dlpack__(): copy=True is not supported");
        return NULL;
    }
    if (id < 0 || bt_type(id)->dl_code < 0 || PyDataType_ISBYTESWAPPED(a->dtype)) {
        PyErr_Format(PyExc_BufferError, "DeviceArray.__dlpack__(): dtype %S has no DLPack type",
                     a->dtype);
        return NULL;
    }
    if (PyLong_Check(stream) && !PyBool_Check(stream)) {
        /* the consumer's raw CUstream value (the DLPack protocol's) */
        long long v = PyLong_AsLongLong(stream);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            s = PyLong_AsUnsignedLongLong(stream);
            if (s == (uint64_t)-1 && PyErr_Occurred())
                return NULL;
        } else {
            wait = v != -1;
            s = (uint64_t)v;
        }
        if (wait && s == 0) {
            PyErr_SetString(PyExc_ValueError, "DeviceArray.__dlpack__(): stream=0 is ambiguous "
                                              "for CUDA; pass 1 (legacy) or 2 (per-thread)");
            return NULL;
        }
    } else if (stream != Py_None) {
        if (bt_cudapy_stream_arg(stream, "__dlpack__", 0, &s) < 0)
            return NULL;
        if (wait && s == 0) {
            PyErr_SetString(PyExc_ValueError, "DeviceArray.__dlpack__(): stream=0 is ambiguous "
                                              "for CUDA; pass 1 (legacy) or 2 (per-thread)");
            return NULL;
        }
    }
    bt_diag_init(&e);
    /* in the array's context (its device's, whichever is current), through
     * the write's event for the per-thread stream */
    if (wait && bt_cudapy_devarray_wait(a, s, 0, &e) < 0)
        return bt_raise_diag(st, &e);
    x = PyMem_RawCalloc(1, sizeof *x);
    if (!x)
        return PyErr_NoMemory();
    for (i = 0; i < nd; i++)
        x->shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(a->shape, i));
    x->mt.dl_tensor.data = (void *)(uintptr_t)a->ptr;
    x->mt.dl_tensor.device.device_type = DL_CUDA;
    x->mt.dl_tensor.device.device_id = a->device;
    x->mt.dl_tensor.ndim = nd;
    x->mt.dl_tensor.dtype.code = (uint8_t)bt_type(id)->dl_code;
    x->mt.dl_tensor.dtype.bits = (uint8_t)(bt_type(id)->size * 8);
    x->mt.dl_tensor.dtype.lanes = 1;
    x->mt.dl_tensor.shape = x->shape;
    x->mt.dl_tensor.strides = NULL; /* C-contiguous */
    x->mt.manager_ctx = Py_NewRef(a);
    x->mt.deleter = exported_deleter;
    cap = PyCapsule_New(&x->mt, "dltensor", exported_capsule_free);
    if (!cap) {
        Py_DECREF(a);
        PyMem_RawFree(x);
    }
    return cap;
}
