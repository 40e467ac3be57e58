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
} DeviceArray;

static void devarray_dealloc(DeviceArray *a)
{
    PyTypeObject *tp = Py_TYPE(a);
    bt_cuda_free(a->device, a->ptr);
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

static PyObject *devarray_copy_to_host(DeviceArray *a, PyObject *unused)
{
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyArrayObject *out;
    npy_intp dims[NPY_MAXDIMS];
    BtDiag e;
    int nd = (int)PyTuple_GET_SIZE(a->shape), i; /* <= NPY_MAXDIMS: devarray_new */

    bt_diag_init(&e);
    for (i = 0; i < nd; i++)
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, i));
    Py_INCREF(a->dtype);
    out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, a->dtype, nd, dims, NULL, NULL, 0,
                                                NULL);
    if (!out)
        return NULL;
    if (bt_cuda_copy(a->device, BT_CUDA_DTOH, a->ptr, PyArray_DATA(out), a->nbytes, &e) < 0) {
        Py_DECREF(out);
        return bt_raise_diag(st, &e);
    }
    return (PyObject *)out;
}

static PyObject *devarray_cai(DeviceArray *a, void *c)
{
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str"), *r;
    if (!typestr)
        return NULL;
    /* copies into the array are synchronous, so no stream to wait on */
    r = Py_BuildValue("{s:O,s:N,s:(KO),s:i,s:O,s:O}", "shape", a->shape, "typestr", typestr, "data",
                      (unsigned long long)a->ptr, Py_False, "version", 3, "strides", Py_None,
                      "stream", Py_None);
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
    {"copy_to_host", (PyCFunction)devarray_copy_to_host, METH_NOARGS,
     "copy_to_host($self, /)\n--\n\nA new NumPy array with the device array's contents (synchronous)."},
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
    if (!PyObject_HasAttrString(o, "__dlpack__"))
        return 0;
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
    static char *kwlist[] = {"array", "device", NULL};
    BtState *st = bt_state(module);
    PyObject *obj, *devo = NULL, *shape = NULL, *out = NULL;
    PyArrayObject *arr = NULL;
    BtDiag e;
    int dev, i;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:to_device", kwlist, &obj, &devo))
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
    if (out && bt_cuda_copy(dev, BT_CUDA_HTOD, ((DeviceArray *)out)->ptr, PyArray_DATA(arr),
                            (size_t)PyArray_NBYTES(arr), &e) < 0) {
        Py_CLEAR(out);
        bt_raise_diag(st, &e);
    }
done:
    Py_XDECREF(arr);
    Py_XDECREF(shape);
    return out;
}

PyObject *bt_cudapy_empty(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shape", "dtype", "device", NULL};
    BtState *st = bt_state(module);
    PyObject *shapeo, *dto = NULL, *devo = NULL, *shape = NULL, *out = NULL;
    PyArray_Descr *dtype = NULL;
    int dev;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:empty", kwlist, &shapeo, &dto, &devo))
        return NULL;
    if (dto && dto != Py_None) {
        if (!PyArray_DescrConverter(dto, &dtype))
            return NULL;
    } else if (!(dtype = PyArray_DescrFromType(NPY_DOUBLE))) {
        return NULL;
    }
    if (PyDataType_REFCHK(dtype)) {
        PyErr_SetString(PyExc_TypeError, "empty(): object dtypes cannot go to the device");
        goto done;
    }
    shape = PyLong_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);
    if (!shape || device_arg(st, devo, &dev) < 0)
        goto done;
    out = devarray_new(st, shape, dtype, dev);
    dtype = NULL;
done:
    Py_XDECREF(dtype);
    Py_XDECREF(shape);
    return out;
}
