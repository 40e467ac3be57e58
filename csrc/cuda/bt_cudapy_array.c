/* bt_cudapy_array.c - the bindthem.cuda.DeviceArray type: device memory a Python object owns. */

#include "bt_cudapy_array.h"

static void devarray_dealloc(BtDeviceArray *a)
{
    PyTypeObject *tp = Py_TYPE(a);
    int i;

    /* a view frees nothing; cuMemFree waits for the device's work on the
     * memory; a pooled free is queued on the legacy stream after the last
     * write and the pending reads (their events, for the per-thread
     * stream). In a child of fork() neither makes a driver call. */
    if (!a->base) {
        BtDiag e;
        bt_diag_init(&e);
        if (a->pooled && bt_cudapy_devarray_wait(a, BT_CUDA_STREAM_LEGACY, 1, &e) < 0)
            a->pooled = 0; /* the order is unknown: cuMemFree waits for everything */
        Py_BEGIN_ALLOW_THREADS
        if (a->pooled)
            bt_cuda_free_async(a->device, a->ptr);
        else
            bt_cuda_free(a->device, a->ptr);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(a->base);
    bt_cuda_event_destroy(a->event);
    for (i = 0; i < BT_CUDA_MAX_READERS; i++) {
        bt_cuda_event_destroy(a->readers[i].event);
        Py_CLEAR(a->readers[i].owner);
    }
    Py_CLEAR(a->stream_owner);
    Py_CLEAR(a->shape);
    Py_CLEAR(a->dtype);
    tp->tp_free(a);
    Py_DECREF(tp);
}

static PyObject *devarray_get_shape(BtDeviceArray *a, void *c) { return Py_NewRef(a->shape); }
static PyObject *devarray_get_dtype(BtDeviceArray *a, void *c) { return Py_NewRef(a->dtype); }
static PyObject *devarray_get_size(BtDeviceArray *a, void *c)
{
    return PyLong_FromSsize_t(a->size);
}
static PyObject *devarray_get_ndim(BtDeviceArray *a, void *c)
{
    return PyLong_FromSsize_t(PyTuple_GET_SIZE(a->shape));
}
static PyObject *devarray_get_nbytes(BtDeviceArray *a, void *c)
{
    return PyLong_FromSize_t(a->nbytes);
}
static PyObject *devarray_get_device(BtDeviceArray *a, void *c)
{
    return PyLong_FromLong(a->device);
}
static PyObject *devarray_get_ptr(BtDeviceArray *a, void *c)
{
    return PyLong_FromUnsignedLongLong(a->ptr);
}

static PyObject *devarray_get_base(BtDeviceArray *a, void *c)
{
    return Py_NewRef(a->base ? a->base : Py_None);
}

static PyObject *devarray_get_readonly(BtDeviceArray *a, void *c)
{
    return PyBool_FromLong(bt_cudapy_devarray_readonly(a));
}

static PyObject *devarray_get_stream(BtDeviceArray *a, void *c)
{
    uint64_t stream;

    BT_FT_BEGIN(a);
    stream = a->stream;
    BT_FT_END();
    if (!stream)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(stream);
}

static PyObject *devarray_repr(BtDeviceArray *a)
{
    return PyUnicode_FromFormat("<bindthem.cuda.DeviceArray %S %R on device %d>", a->dtype,
                                a->shape, a->device);
}

static Py_ssize_t devarray_len(BtDeviceArray *a)
{
    if (PyTuple_GET_SIZE(a->shape) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, 0));
}

static PyMethodDef devarray_methods[] = {
    {"copy_to_host", (PyCFunction)(void (*)(void))bt_cudapy_devarray_copy_to_host,
     METH_VARARGS | METH_KEYWORDS,
     "copy_to_host($self, /, *, stream=None, out=None)\n--\n\n"
     "The device array's contents in host memory: a new NumPy array, or `out`.\n\n"
     "stream=None copies on the stream of the array's last write (a launch,\n"
     "an async to_device, zeros) and returns when the copy is done. With a\n"
     "stream, the copy is queued there after that write; it is synchronous\n"
     "unless out= is given too: then it returns at once, and `out` (best\n"
     "pinned: bindthem.cuda.pinned_empty) holds the data once the stream\n"
     "reaches the copy (Event.record(stream).synchronize())."},
    {"copy_from", (PyCFunction)(void (*)(void))bt_cudapy_peer_copy_from,
     METH_VARARGS | METH_KEYWORDS,
     "copy_from($self, src, /, *, stream=None)\n--\n\n"
     "Copies src into this array (same shape) and returns it: a DeviceArray of\n"
     "the same dtype device to device (cuMemcpyAsync; another device's too),\n"
     "anything else through NumPy (safe casts only) host to device. stream=None\n"
     "returns when done; with a stream the copy is queued there after the last\n"
     "writes of both arrays."},
    {"copy", (PyCFunction)(void (*)(void))bt_cudapy_devarray_copy, METH_VARARGS | METH_KEYWORDS,
     "copy($self, /, *, stream=None)\n--\n\n"
     "A new DeviceArray with this one's contents, copied device to device."},
    {"__dlpack__", (PyCFunction)(void (*)(void))bt_cudapy_devarray_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule over the memory; the consumer's `stream` (None: legacy,\n"
     "-1: none) is made to wait for the array's last write.\n\n"
     "max_version=(1, x) or newer: a \"dltensor_versioned\" capsule (DLPack 1.x,\n"
     "flagged READ_ONLY for a read-only array, IS_COPIED for a copy); else the\n"
     "unversioned \"dltensor\". copy=True: a copy, made synchronously, on the device,\n"
     "or with dl_device=(1, 0) on the host; dl_device may also name the array's own\n"
     "device. copy=False and None never copy."},
    {"__dlpack_device__", (PyCFunction)bt_cudapy_devarray_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n(2, device): kDLCUDA."},
    BT_CUDAPY_MANAGED_METHODS,
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef devarray_getset[] = {
    {"__cuda_array_interface__", (getter)bt_cudapy_devarray_cai, NULL,
     "Version 3 of Numba's CUDA Array Interface.", NULL},
    {"shape", (getter)devarray_get_shape, NULL, NULL, NULL},
    {"dtype", (getter)devarray_get_dtype, NULL, NULL, NULL},
    {"size", (getter)devarray_get_size, NULL, NULL, NULL},
    {"ndim", (getter)devarray_get_ndim, NULL, NULL, NULL},
    {"nbytes", (getter)devarray_get_nbytes, NULL, NULL, NULL},
    {"device", (getter)devarray_get_device, NULL, "The device ordinal.", NULL},
    {"ptr", (getter)devarray_get_ptr, NULL, "The device address.", NULL},
    {"base", (getter)devarray_get_base, NULL,
     "What owns the memory of a view (a module's global), else None.", NULL},
    {"readonly", (getter)devarray_get_readonly, NULL,
     "Whether kernels and consumers must not write it (get_global(readonly=True)): a launch\n"
     "passes it to const parameters only, CAI and DLPack export it read-only; copy_from\n"
     "(a write from the host) still works.",
     NULL},
    {"stream", (getter)devarray_get_stream, NULL,
     "The CUstream value of the last write bindthem queued (None: none pending).", NULL},
    BT_CUDAPY_MANAGED_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot devarray_slots[] = {
    {Py_tp_dealloc, devarray_dealloc},
    {Py_tp_repr, devarray_repr},
    {Py_tp_methods, devarray_methods},
    {Py_tp_getset, devarray_getset},
    {Py_sq_length, devarray_len},
    {Py_tp_doc, "Memory on a CUDA device, owned: freed when the object goes.\n\n"
                "Made by bindthem.cuda.to_device() / empty(); C-contiguous."},
    {0, NULL},
};

PyType_Spec bt_cudapy_devarray_spec = {
    .name = "bindthem.cuda.DeviceArray",
    .basicsize = sizeof(BtDeviceArray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = devarray_slots,
};
