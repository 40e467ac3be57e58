/* bt_cudapy_array.c - bindthem.cuda.DeviceArray, to_device()/empty(), reading array arguments. */

/* A launch's array arguments are DeviceArrays or anything with
 * __cuda_array_interface__ (v2/v3) or DLPack on a CUDA or CUDA-managed
 * device; they are borrowed for the call, never copied. */
#include "bt_cudapy.h"

#include "bt_numpy.h"

#include <string.h>

/* ---- DLPack (dlpack.h 0.8 / 1.0, unversioned "dltensor" capsule) ---- */
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
    int64_t *strides;
    uint64_t byte_offset;
} BtDLTensor;
typedef struct BtDLManagedTensor {
    BtDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct BtDLManagedTensor *);
} BtDLManagedTensor;
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13 };

/* ================= DeviceArray ================= */

typedef struct DeviceArray {
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
} DeviceArray;

static void devarray_dealloc(DeviceArray *a)
{
    PyTypeObject *tp = Py_TYPE(a);
    /* cuMemFree waits for the device's work on the memory */
    Py_BEGIN_ALLOW_THREADS
    bt_cuda_free(a->device, a->ptr);
    Py_END_ALLOW_THREADS
    Py_CLEAR(a->stream_owner);
    Py_CLEAR(a->shape);
    Py_CLEAR(a->dtype);
    tp->tp_free(a);
    Py_DECREF(tp);
}

/* New reference: an uninitialized device array (dtype is stolen). shape is
 * checked here, the one place DeviceArrays are made: at most NPY_MAXDIMS
 * dimensions (copy_to_host relies on it), each an int >= 0, nbytes within
 * Py_ssize_t. */
static PyObject *devarray_new(BtState *st, PyObject *shape, PyArray_Descr *dtype, int device)
{
    DeviceArray *a = NULL;
    PyObject *dims = NULL;
    BtDiag e;
    Py_ssize_t i, n = 1, nd = PyTuple_GET_SIZE(shape), elsize = PyDataType_ELSIZE(dtype);

    bt_diag_init(&e);
    if (nd > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "shape has %zd dimensions; arrays have at most %d", nd,
                     NPY_MAXDIMS);
        goto error;
    }
    if (!(dims = PyTuple_New(nd)))
        goto error;
    for (i = 0; i < nd; i++) {
        PyObject *x = PyNumber_Index(PyTuple_GET_ITEM(shape, i));
        Py_ssize_t d = x ? PyLong_AsSsize_t(x) : -1;
        if (!x || (d == -1 && PyErr_Occurred())) {
            Py_XDECREF(x);
            goto error;
        }
        PyTuple_SET_ITEM(dims, i, x);
        if (d < 0) {
            PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
            goto error;
        }
        if (d && n > PY_SSIZE_T_MAX / d) {
            PyErr_SetString(PyExc_ValueError, "array is too big");
            goto error;
        }
        n *= d;
    }
    if (elsize && n > PY_SSIZE_T_MAX / elsize) {
        PyErr_Format(PyExc_ValueError, "array is too big: %zd elements of %zd bytes", n, elsize);
        goto error;
    }
    a = PyObject_New(DeviceArray, st->DeviceArrayType);
    if (!a)
        goto error;
    a->ptr = 0;
    a->stream = 0;
    a->stream_owner = NULL;
    a->nbytes = (size_t)(n * elsize);
    a->size = n;
    a->device = device;
    a->code = bt_slot_descr_code((PyObject *)dtype);
    a->shape = dims;
    a->dtype = dtype;
    if (bt_cuda_alloc(device, a->nbytes, &a->ptr, &e) < 0) {
        Py_DECREF(a);
        return bt_raise_diag(st, &e);
    }
    return (PyObject *)a;
error:
    Py_XDECREF(dims);
    Py_XDECREF(dtype);
    return NULL;
}

/* Copies a's bytes into host memory dst (len a->nbytes). stream: the
 * caller's (NULL/None: the stream of a's last write, synchronously);
 * with a stream, queued there after a's last write, synchronous unless
 * `async`. The GIL is released while it waits. */
static int copy_out(BtState *st, DeviceArray *a, void *dst, PyObject *stream, int async)
{
    uint64_t s = a->stream, after = 0;
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    if (stream && stream != Py_None) {
        if (bt_cudapy_stream_arg(stream, "copy_to_host", 0, &s) < 0)
            return -1;
        after = a->stream;
    } else {
        async = 0;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_copy(a->device, BT_CUDA_DTOH, a->ptr, dst, a->nbytes, s, after, !async, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (!async) { /* the last write is done: nothing left to wait for */
        a->stream = 0;
        Py_CLEAR(a->stream_owner);
    }
    return 0;
}

static PyObject *devarray_copy_to_host(DeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "out", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *stream = NULL, *outo = NULL;
    PyArrayObject *out;
    npy_intp dims[NPY_MAXDIMS];
    int nd = (int)PyTuple_GET_SIZE(a->shape), i; /* <= NPY_MAXDIMS: devarray_new */

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OO:copy_to_host", kwlist, &stream, &outo))
        return NULL;
    for (i = 0; i < nd; i++)
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, i));
    if (outo && outo != Py_None) {
        PyObject *shape;
        int same;
        if (!PyArray_Check(outo)) {
            PyErr_Format(PyExc_TypeError, "copy_to_host(): out must be a NumPy array, not %.100s",
                         Py_TYPE(outo)->tp_name);
            return NULL;
        }
        out = (PyArrayObject *)outo;
        shape = PyObject_GetAttrString(outo, "shape");
        same = shape ? PyObject_RichCompareBool(shape, a->shape, Py_EQ) : -1;
        Py_XDECREF(shape);
        if (same < 0)
            return NULL;
        if (!same || !PyArray_EquivTypes(PyArray_DESCR(out), a->dtype) || !PyArray_ISCARRAY(out)) {
            PyErr_Format(PyExc_ValueError,
                         "copy_to_host(): out must be a writable C-contiguous array of shape %R "
                         "and dtype %S (bindthem.cuda.pinned_empty(shape, dtype) makes one)",
                         a->shape, a->dtype);
            return NULL;
        }
        if (copy_out(st, a, PyArray_DATA(out), stream, 1) < 0)
            return NULL;
        return Py_NewRef(outo);
    }
    Py_INCREF(a->dtype);
    out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, a->dtype, nd, dims, NULL, NULL, 0,
                                                NULL);
    if (!out)
        return NULL;
    if (copy_out(st, a, PyArray_DATA(out), stream, 0) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return (PyObject *)out;
}

static PyObject *devarray_cai(DeviceArray *a, void *c)
{
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str"), *r;
    if (!typestr)
        return NULL;
    /* the stream of the last write: a consumer orders its work after it */
    if (a->stream)
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:K}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, Py_False, "version", 3, "strides",
                          Py_None, "stream", (unsigned long long)a->stream);
    else
        r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:O}", "shape", a->shape, "typestr", typestr,
                          "data", (unsigned long long)a->ptr, Py_False, "version", 3, "strides",
                          Py_None, "stream", Py_None);
    return r;
}

static PyObject *devarray_get_shape(DeviceArray *a, void *c) { return Py_NewRef(a->shape); }
static PyObject *devarray_get_dtype(DeviceArray *a, void *c) { return Py_NewRef(a->dtype); }
static PyObject *devarray_get_size(DeviceArray *a, void *c) { return PyLong_FromSsize_t(a->size); }
static PyObject *devarray_get_ndim(DeviceArray *a, void *c)
{
    return PyLong_FromSsize_t(PyTuple_GET_SIZE(a->shape));
}
static PyObject *devarray_get_nbytes(DeviceArray *a, void *c)
{
    return PyLong_FromSize_t(a->nbytes);
}
static PyObject *devarray_get_device(DeviceArray *a, void *c) { return PyLong_FromLong(a->device); }
static PyObject *devarray_get_ptr(DeviceArray *a, void *c)
{
    return PyLong_FromUnsignedLongLong(a->ptr);
}

static PyObject *devarray_get_stream(DeviceArray *a, void *c)
{
    if (!a->stream)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong(a->stream);
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

static PyObject *devarray_dlpack_device(DeviceArray *a, PyObject *unused)
{
    return Py_BuildValue("(ii)", DL_CUDA, a->device);
}

/* __dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None):
 * the consumer's stream waits for the array's last write (stream=-1: no
 * wait; None: the legacy stream). */
static PyObject *devarray_dlpack(DeviceArray *a, PyObject *args, PyObject *kwargs)
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
    if (wait && a->stream && bt_cuda_stream_wait(s, a->stream, &e) < 0)
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

static PyObject *devarray_repr(DeviceArray *a)
{
    return PyUnicode_FromFormat("<bindthem.cuda.DeviceArray %S %R on device %d>", a->dtype,
                                a->shape, a->device);
}

static Py_ssize_t devarray_len(DeviceArray *a)
{
    if (PyTuple_GET_SIZE(a->shape) == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d device array");
        return -1;
    }
    return PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, 0));
}

static PyMethodDef devarray_methods[] = {
    {"copy_to_host", (PyCFunction)(void (*)(void))devarray_copy_to_host,
     METH_VARARGS | METH_KEYWORDS,
     "copy_to_host($self, /, *, stream=None, out=None)\n--\n\n"
     "The device array's contents in host memory: a new NumPy array, or `out`.\n\n"
     "stream=None copies on the stream of the array's last write (a launch,\n"
     "an async to_device, zeros) and returns when the copy is done. With a\n"
     "stream, the copy is queued there after that write; it is synchronous\n"
     "unless out= is given too: then it returns at once, and `out` (best\n"
     "pinned: bindthem.cuda.pinned_empty) holds the data once the stream\n"
     "reaches the copy (Event.record(stream).synchronize())."},
    {"__dlpack__", (PyCFunction)(void (*)(void))devarray_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "A DLPack capsule over the memory; the consumer's `stream` (None: legacy,\n"
     "-1: none) is made to wait for the array's last write."},
    {"__dlpack_device__", (PyCFunction)devarray_dlpack_device, METH_NOARGS,
     "__dlpack_device__($self, /)\n--\n\n(2, device): kDLCUDA."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef devarray_getset[] = {
    {"__cuda_array_interface__", (getter)devarray_cai, NULL,
     "Version 3 of Numba's CUDA Array Interface.", NULL},
    {"shape", (getter)devarray_get_shape, NULL, NULL, NULL},
    {"dtype", (getter)devarray_get_dtype, NULL, NULL, NULL},
    {"size", (getter)devarray_get_size, NULL, NULL, NULL},
    {"ndim", (getter)devarray_get_ndim, NULL, NULL, NULL},
    {"nbytes", (getter)devarray_get_nbytes, NULL, NULL, NULL},
    {"device", (getter)devarray_get_device, NULL, "The device ordinal.", NULL},
    {"ptr", (getter)devarray_get_ptr, NULL, "The device address.", NULL},
    {"stream", (getter)devarray_get_stream, NULL,
     "The CUstream value of the last write bindthem queued (None: none pending).", NULL},
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
    .basicsize = sizeof(DeviceArray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = devarray_slots,
};

/* ================= reading array arguments ================= */

/* TypeError "k(): argument 'x': ..."; fmt takes one %R/%S object. */
static int arg_error(const char *kname, PyObject *name, const char *fmt, PyObject *o)
{
    PyObject *m = PyUnicode_FromFormat(fmt, o);
    if (m) {
        PyErr_Format(PyExc_TypeError, "%s(): argument '%U': %U", kname, name, m);
        Py_DECREF(m);
    }
    return -1;
}

/* C-contiguity of shape/strides in bytes (strides NULL: contiguous). */
static int c_contiguous(int nd, const int64_t *shape, const int64_t *strides, int64_t itemsize)
{
    int64_t expect = itemsize;
    int i;

    if (!strides)
        return 1;
    for (i = 0; i < nd; i++)
        if (shape[i] == 0)
            return 1;
    for (i = nd - 1; i >= 0; i--) {
        if (shape[i] != 1 && strides[i] != expect)
            return 0;
        expect *= shape[i];
    }
    return 1;
}

/* Records the rank and the extents a size parameter can name. */
static void set_shape(BtCudaArg *a, int nd, const int64_t *dims)
{
    int i;

    a->ndim = nd > 0 ? nd : 0;
    for (i = 0; i < a->ndim && i < BT_MAX_SIZE_AXES; i++)
        a->shape[i] = (Py_ssize_t)dims[i];
}

static int read_cai(PyObject *o, PyObject *cai, const char *kname, PyObject *name, BtCudaArg *a)
{
    PyObject *shape, *typestr, *data, *strides, *mask, *version, *stream;
    int64_t dims[64], st[64];
    const char *ts;
    long v, size;
    Py_ssize_t nd, i;

    a->via = "__cuda_array_interface__";
    if (!PyDict_Check(cai))
        return arg_error(kname, name, "__cuda_array_interface__ is not a dict (%R)", cai);
    shape = PyDict_GetItemString(cai, "shape");
    typestr = PyDict_GetItemString(cai, "typestr");
    data = PyDict_GetItemString(cai, "data");
    version = PyDict_GetItemString(cai, "version");
    strides = PyDict_GetItemString(cai, "strides");
    mask = PyDict_GetItemString(cai, "mask");
    stream = PyDict_GetItemString(cai, "stream");
    if (!shape || !PyTuple_Check(shape) || !typestr || !PyUnicode_Check(typestr) || !data ||
        !PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 || !version)
        return arg_error(kname, name,
                         "__cuda_array_interface__ %R lacks shape, typestr, data or version", cai);
    v = PyLong_AsLong(version);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 2)
        return arg_error(kname, name, "__cuda_array_interface__ version %R is too old (2+)",
                         version);
    if (mask && mask != Py_None)
        return arg_error(kname, name,
                         "masked arrays (__cuda_array_interface__ mask=%R) are "
                         "not supported",
                         mask);
    nd = PyTuple_GET_SIZE(shape);
    if (nd > 64)
        return arg_error(kname, name, "too many dimensions: %R", shape);
    ts = PyUnicode_AsUTF8(typestr);
    if (!ts)
        return -1;
    size = strlen(ts) >= 3 ? strtol(ts + 2, NULL, 10) : 0;
    a->code = bt_slot_array_code(bt_type_from_typestr(ts));
    a->n = 1;
    for (i = 0; i < nd; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred())
            return -1;
        a->n *= (Py_ssize_t)dims[i];
    }
    set_shape(a, (int)nd, dims);
    if (strides && strides != Py_None) {
        if (!PyTuple_Check(strides) || PyTuple_GET_SIZE(strides) != nd)
            return arg_error(kname, name, "bad __cuda_array_interface__ strides %R", strides);
        for (i = 0; i < nd; i++) {
            st[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(strides, i));
            if (st[i] == -1 && PyErr_Occurred())
                return -1;
        }
        a->contiguous = c_contiguous((int)nd, dims, st, size);
    } else {
        a->contiguous = 1;
    }
    a->ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (a->ptr == (uint64_t)-1 && PyErr_Occurred())
        return -1;
    a->readonly = PyObject_IsTrue(PyTuple_GET_ITEM(data, 1));
    if (a->readonly < 0)
        return -1;
    if (stream && stream != Py_None) {
        a->stream = PyLong_AsUnsignedLongLong(stream);
        if (a->stream == (uint64_t)-1 && PyErr_Occurred())
            return -1;
        a->has_stream = 1;
    }
    (void)o;
    return 0;
}

static int read_dlpack(PyObject *o, PyObject *dev, uint64_t stream, const char *kname,
                       PyObject *name, BtCudaArg *a)
{
    PyObject *cap = NULL, *kw = NULL, *sv = NULL, *meth = NULL, *args[2];
    BtDLManagedTensor *mt;
    const BtDLTensor *t;
    long dtype, did;

    a->via = "DLPack";
    if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2)
        return arg_error(kname, name, "__dlpack_device__() must return (type, id), not %R", dev);
    dtype = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    did = PyLong_AsLong(PyTuple_GET_ITEM(dev, 1));
    if ((dtype == -1 || did == -1) && PyErr_Occurred())
        return -1;
    if (dtype == DL_CPU || dtype == DL_CUDA_HOST) {
        a->kind = BT_CUDA_ARG_HOST;
        return 0;
    }
    if (dtype != DL_CUDA && dtype != DL_CUDA_MANAGED)
        return arg_error(kname, name, "a DLPack array on device %R, not a CUDA device", dev);
    /* the producer orders its work before ours on our stream (1: legacy) */
    sv = PyLong_FromUnsignedLongLong(stream ? stream : BT_CUDA_STREAM_LEGACY);
    kw = Py_BuildValue("(s)", "stream");
    meth = PyUnicode_FromString("__dlpack__");
    if (!sv || !kw || !meth)
        goto error;
    args[0] = o;
    args[1] = sv;
    cap = PyObject_VectorcallMethod(meth, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw);
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(meth, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    if (!cap)
        goto error;
    mt = PyCapsule_GetPointer(cap, "dltensor");
    if (!mt) {
        PyErr_Clear();
        arg_error(kname, name, "__dlpack__() did not return a \"dltensor\" capsule (%R)", cap);
        goto error;
    }
    t = &mt->dl_tensor;
    a->code = bt_slot_array_code(bt_type_from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes));
    a->n = 1;
    for (int i = 0; i < t->ndim; i++)
        a->n *= (Py_ssize_t)t->shape[i];
    set_shape(a, t->ndim, t->shape);
    {
        int64_t bst[64];
        int i, nd = t->ndim < 64 ? t->ndim : 64;
        for (i = 0; t->strides && i < nd; i++)
            bst[i] = t->strides[i] * (t->dtype.bits / 8);
        a->contiguous = c_contiguous(nd, t->shape, t->strides ? bst : NULL, t->dtype.bits / 8);
    }
    a->ptr = (uint64_t)(uintptr_t)t->data + t->byte_offset;
    a->readonly = 0;
    a->keep = cap; /* unconsumed: its destructor calls the deleter when we drop it */
    cap = NULL;
    Py_DECREF(sv);
    Py_DECREF(kw);
    Py_DECREF(meth);
    return 0;
error:
    Py_XDECREF(cap);
    Py_XDECREF(sv);
    Py_XDECREF(kw);
    Py_XDECREF(meth);
    return -1;
}

int bt_cudapy_read_arg(BtState *st, PyObject *o, uint64_t stream, const char *kname, PyObject *name,
                       BtCudaArg *a)
{
    PyObject *cai, *dev;
    int rc;

    memset(a, 0, sizeof *a);
    if (Py_TYPE(o) == st->DeviceArrayType) {
        DeviceArray *d = (DeviceArray *)o;
        a->kind = BT_CUDA_ARG_DEVICE;
        a->code = d->code;
        a->ptr = d->ptr;
        a->n = d->size;
        a->ndim = (int)PyTuple_GET_SIZE(d->shape);
        for (int i = 0; i < a->ndim && i < BT_MAX_SIZE_AXES; i++)
            a->shape[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(d->shape, i));
        a->contiguous = 1;
        a->via = "DeviceArray";
        a->array = o;
        a->has_stream = d->stream != 0;
        a->stream = d->stream;
        return 0;
    }
    if (PyArray_Check(o)) {
        a->kind = BT_CUDA_ARG_HOST;
        a->code = BT_K_OTHER;
        return 0;
    }
    a->code = bt_slot_code(o);
    if (a->code != BT_K_OTHER)
        return 0;
    /* DLPack first: __dlpack__(stream=) has the producer order its pending
     * work before the launch's stream, where CAI v2 (PyTorch's) carries no
     * stream at all */
    if (PyObject_HasAttrString(o, "__dlpack__") && PyObject_HasAttrString(o, "__dlpack_device__")) {
        dev = PyObject_CallMethod(o, "__dlpack_device__", NULL);
        if (!dev)
            return -1;
        a->kind = BT_CUDA_ARG_DEVICE;
        rc = read_dlpack(o, dev, stream, kname, name, a);
        Py_DECREF(dev);
        if (rc == 0 && a->kind == BT_CUDA_ARG_HOST)
            a->code = BT_K_OTHER;
        return rc;
    }
    cai = PyObject_GetAttrString(o, "__cuda_array_interface__");
    if (cai) {
        a->kind = BT_CUDA_ARG_DEVICE;
        rc = read_cai(o, cai, kname, name, a);
        Py_DECREF(cai);
        return rc;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    return 0;
}

void bt_cudapy_devarray_wrote(PyObject *o, uint64_t stream, PyObject *owner)
{
    DeviceArray *a = (DeviceArray *)o;
    PyObject *old = a->stream_owner;

    a->stream = stream ? stream : BT_CUDA_STREAM_LEGACY;
    /* a stream object (bindthem's, CuPy's, PyTorch's) destroys its CUstream
     * when it goes: held while the array may still be waited on */
    a->stream_owner = owner && owner != Py_None && !PyLong_Check(owner) ? Py_NewRef(owner) : NULL;
    Py_XDECREF(old);
}

int bt_cudapy_value_error(const char *who, int launch, const char *fmt, ...)
{
    PyObject *m;
    va_list ap;

    va_start(ap, fmt);
    m = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (m) {
        PyErr_Format(PyExc_ValueError, "%s%s: %U", who, launch ? "[grid, block]" : "()", m);
        Py_DECREF(m);
    }
    return -1;
}

/* Whether o's type is named like a stream class (cupy.cuda.Stream,
 * torch.cuda.ExternalStream, ...): only those are asked for the `ptr` /
 * `cuda_stream` attributes, which other objects (device arrays, memory
 * pointers) carry with another meaning. */
static int is_stream_type(PyObject *o)
{
    const char *n = Py_TYPE(o)->tp_name;
    size_t len = strlen(n);
    return len >= 6 && strcmp(n + len - 6, "Stream") == 0;
}

#define STREAM_REMEDY                                                                              \
    "bindthem.cuda.LEGACY / PER_THREAD, a stream object (__cuda_stream__) or "                     \
    "bindthem.cuda.Stream(handle) for a CUstream handle you own"

/* See bt_cudapy.h. Any int but 0, 1, 2 is refused: a bare number is more
 * often a misplaced launch item (numba writes [grid, block, stream,
 * shared]) than a handle, and a bad handle crashes the driver. */
int bt_cudapy_stream_arg(PyObject *o, const char *who, int launch, uint64_t *out)
{
    PyObject *h = NULL, *t = NULL;
    unsigned long long v;
    long version;
    int rc = -1;

    *out = 0;
    if (o == Py_None)
        return 0;
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        v = PyLong_AsUnsignedLongLong(o);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            PyErr_Clear();
        else if (v <= BT_CUDA_STREAM_PER_THREAD) {
            *out = v;
            return 0;
        }
        return bt_cudapy_value_error(
            who, launch,
            "stream=%R: a bare int other than 0, 1 or 2 is not taken as a "
            "stream; pass " STREAM_REMEDY "%s",
            o,
            launch ? " (the launch order is [grid, block, shared_mem, stream]; "
                     "numba's puts the stream third)"
                   : "");
    }
    if (PyObject_HasAttrString(o, "__cuda_stream__")) {
        t = PyObject_CallMethod(o, "__cuda_stream__", NULL);
        if (!t)
            return -1;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2 ||
            !PyLong_Check(PyTuple_GET_ITEM(t, 0))) {
            bt_cudapy_value_error(who, launch,
                                  "stream.__cuda_stream__() must return (version, handle), "
                                  "not %R",
                                  t);
            goto done;
        }
        version = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
        if (version != 0) {
            PyErr_Clear();
            bt_cudapy_value_error(who, launch,
                                  "stream.__cuda_stream__() gave version %R; bindthem knows "
                                  "version 0",
                                  PyTuple_GET_ITEM(t, 0));
            goto done;
        }
        h = Py_NewRef(PyTuple_GET_ITEM(t, 1));
    } else if (is_stream_type(o) && PyObject_HasAttrString(o, "cuda_stream")) {
        h = PyObject_GetAttrString(o, "cuda_stream");
    } else if (is_stream_type(o) && PyObject_HasAttrString(o, "ptr")) {
        h = PyObject_GetAttrString(o, "ptr");
    } else {
        bt_cudapy_value_error(who, launch, "stream must be None, " STREAM_REMEDY ", not %.100s",
                              Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!h)
        goto done;
    if (!PyLong_Check(h) || PyBool_Check(h)) {
        bt_cudapy_value_error(who, launch, "stream handle must be an int, not %.100s",
                              Py_TYPE(h)->tp_name);
        goto done;
    }
    v = PyLong_AsUnsignedLongLong(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        bt_cudapy_value_error(who, launch, "stream handle %R is not a 64-bit address", h);
        goto done;
    }
    *out = v;
    rc = 0;
done:
    Py_XDECREF(h);
    Py_XDECREF(t);
    return rc;
}

/* ================= to_device, empty ================= */

static int device_arg(BtState *st, PyObject *o, int *dev)
{
    BtDiag e;
    long v;
    int overflow = 0;

    bt_diag_init(&e);
    if (o == NULL || o == Py_None) {
        if (bt_cuda_current_device(dev, &e) < 0) {
            bt_raise_diag(st, &e);
            return -1;
        }
        return 0;
    }
    if (PyBool_Check(o) || !PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "device must be an int (a device ordinal), not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < 0 || v >= BT_CUDA_MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "device=%R is not a device ordinal (0 to %d)", o,
                     BT_CUDA_MAX_DEVICES - 1);
        return -1;
    }
    *dev = (int)v;
    return 0;
}

PyObject *bt_cudapy_to_device(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "device", "stream", NULL};
    BtState *st = bt_state(module);
    PyObject *obj, *devo = NULL, *shape = NULL, *out = NULL, *streamo = Py_None;
    PyArrayObject *arr = NULL;
    uint64_t stream = 0;
    BtDiag e;
    int dev, i, rc;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OO:to_device", kwlist, &obj, &devo,
                                     &streamo))
        return NULL;
    if (bt_cudapy_stream_arg(streamo, "to_device", 0, &stream) < 0)
        return NULL;
    arr = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!arr)
        return NULL;
    if (PyDataType_REFCHK(PyArray_DESCR(arr))) {
        PyErr_SetString(PyExc_TypeError, "to_device(): arrays of Python objects cannot go to "
                                         "the device");
        goto done;
    }
    if (device_arg(st, devo, &dev) < 0)
        goto done;
    shape = PyTuple_New(PyArray_NDIM(arr));
    if (!shape)
        goto done;
    for (i = 0; i < PyArray_NDIM(arr); i++) {
        PyObject *d = PyLong_FromSsize_t(PyArray_DIM(arr, i));
        if (!d)
            goto done;
        PyTuple_SET_ITEM(shape, i, d);
    }
    Py_INCREF(PyArray_DESCR(arr));
    out = devarray_new(st, shape, PyArray_DESCR(arr), dev);
    if (!out)
        goto done;
    /* stream=None: synchronous; else queued on the stream, which the array
     * then records as its last write's */
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_copy(dev, BT_CUDA_HTOD, ((DeviceArray *)out)->ptr, PyArray_DATA(arr),
                      (size_t)PyArray_NBYTES(arr), stream, 0, streamo == Py_None, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        Py_CLEAR(out);
        bt_raise_diag(st, &e);
    } else if (streamo != Py_None) {
        bt_cudapy_devarray_wrote(out, stream, streamo);
    }
done:
    Py_XDECREF(arr);
    Py_XDECREF(shape);
    return out;
}

/* A dtype argument (None: float64) as a new reference; object dtypes,
 * which hold Python references, are refused. */
static int dtype_arg(PyObject *dto, const char *who, PyArray_Descr **out)
{
    *out = NULL;
    if (dto && dto != Py_None) {
        if (!PyArray_DescrConverter(dto, out))
            return -1;
    } else if (!(*out = PyArray_DescrFromType(NPY_DOUBLE))) {
        return -1;
    }
    if (PyDataType_REFCHK(*out)) {
        Py_CLEAR(*out);
        PyErr_Format(PyExc_TypeError,
                     "%s(): object dtypes cannot go to the device (or pinned "
                     "memory)",
                     who);
        return -1;
    }
    return 0;
}

/* empty(shape, dtype, *, device) and zeros(..., stream): zero is set. */
static PyObject *make_empty(PyObject *module, PyObject *args, PyObject *kwargs, int zero)
{
    static char *kwlist[] = {"shape", "dtype", "device", "stream", NULL};
    static char *kwlist3[] = {"shape", "dtype", "device", NULL};
    BtState *st = bt_state(module);
    PyObject *shapeo, *dto = NULL, *devo = NULL, *shape = NULL, *out = NULL, *streamo = Py_None;
    PyArray_Descr *dtype = NULL;
    uint64_t stream = 0;
    BtDiag e;
    int dev;

    if (zero ? !PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO:zeros", kwlist, &shapeo, &dto,
                                            &devo, &streamo)
             : !PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:empty", kwlist3, &shapeo, &dto,
                                            &devo))
        return NULL;
    if (bt_cudapy_stream_arg(streamo, "zeros", 0, &stream) < 0 ||
        dtype_arg(dto, zero ? "zeros" : "empty", &dtype) < 0)
        return NULL;
    shape = PyLong_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);
    if (!shape || device_arg(st, devo, &dev) < 0)
        goto done;
    out = devarray_new(st, shape, dtype, dev);
    dtype = NULL;
    if (out && zero) {
        DeviceArray *a = (DeviceArray *)out;
        bt_diag_init(&e);
        if (bt_cuda_memset(dev, a->ptr, a->nbytes, stream, &e) < 0) {
            Py_CLEAR(out);
            bt_raise_diag(st, &e);
        } else {
            bt_cudapy_devarray_wrote(out, stream, streamo);
        }
    }
done:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    return out;
}

PyObject *bt_cudapy_empty(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return make_empty(module, args, kwargs, 0);
}

PyObject *bt_cudapy_zeros(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return make_empty(module, args, kwargs, 1);
}

/* ================= pinned host memory ================= */

static void pinned_free(PyObject *cap)
{
    void *p = PyCapsule_GetPointer(cap, "bindthem.cuda.pinned");
    /* cuMemFreeHost waits for the device like cuMemFree */
    Py_BEGIN_ALLOW_THREADS
    bt_cuda_host_free(p);
    Py_END_ALLOW_THREADS
}

PyObject *bt_cudapy_pinned_empty(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", NULL};
    BtState *st = bt_state(module);
    PyObject *shapeo, *dto = NULL, *shape = NULL, *cap = NULL, *out = NULL;
    PyArray_Descr *dtype = NULL;
    npy_intp dims[NPY_MAXDIMS];
    Py_ssize_t nd, i, n = 1;
    void *p = NULL;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:pinned_empty", kwlist, &shapeo, &dto) ||
        dtype_arg(dto, "pinned_empty", &dtype) < 0)
        return NULL;
    shape = PyLong_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);
    if (!shape)
        goto error;
    nd = PyTuple_GET_SIZE(shape);
    if (nd > NPY_MAXDIMS) {
        PyErr_Format(PyExc_ValueError, "pinned_empty(): shape has %zd dimensions; at most %d", nd,
                     NPY_MAXDIMS);
        goto error;
    }
    for (i = 0; i < nd; i++) {
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred())
            goto error;
        if (dims[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
            goto error;
        }
        if (dims[i] && n > PY_SSIZE_T_MAX / dims[i] / (PyDataType_ELSIZE(dtype) + 1)) {
            PyErr_SetString(PyExc_ValueError, "pinned_empty(): array is too big");
            goto error;
        }
        n *= dims[i];
    }
    if (bt_cuda_host_alloc((size_t)(n * PyDataType_ELSIZE(dtype)), &p, &e) < 0) {
        bt_raise_diag(st, &e);
        goto error;
    }
    cap = PyCapsule_New(p, "bindthem.cuda.pinned", pinned_free);
    if (!cap) {
        bt_cuda_host_free(p);
        goto error;
    }
    out = PyArray_NewFromDescr(&PyArray_Type, dtype, (int)nd, dims, NULL, p, NPY_ARRAY_CARRAY,
                               NULL);
    dtype = NULL;
    /* the array owns the memory through its base: freed when it goes */
    if (!out || PyArray_SetBaseObject((PyArrayObject *)out, cap) < 0) {
        Py_CLEAR(out);
        Py_XDECREF(cap);
    }
    Py_DECREF(shape);
    return out;
error:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    return NULL;
}
