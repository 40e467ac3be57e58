/* bt_cudapy_args.c - reading a launch's array arguments (DeviceArray, CAI, DLPack) and streams. */

/* A launch's array arguments are DeviceArrays or anything with
 * __cuda_array_interface__ (v2/v3) or DLPack on a CUDA or CUDA-managed
 * device; they are borrowed for the call, never copied. */
#include "bt_cudapy_array.h"

#include <string.h>

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

/* ---- DLPack ----
 * bindthem asks a producer for __dlpack__(stream=, max_version=(1, 1)),
 * takes the capsule it gets ("dltensor_versioned" of major version 1, or
 * the unversioned "dltensor") by renaming it "used_" + its name, and holds
 * the tensor for the launch in a capsule of its own, whose destructor calls
 * the producer's deleter once (after the launch is queued, as CAI's
 * arguments are borrowed for the call). */

#define HELD_V0 "bindthem.used_dltensor"
#define HELD_V1 "bindthem.used_dltensor_versioned"

/* The producer's deleter, called from a launch's clean-up, may be Python
 * code (ctypes): the launch's exception, if any, is kept aside meanwhile. */
static void held_free_v0(PyObject *cap)
{
    PyObject *type, *value, *tb;
    BtDLManagedTensor *mt;

    if (!PyCapsule_IsValid(cap, HELD_V0))
        return;
    mt = PyCapsule_GetPointer(cap, HELD_V0);
    if (!mt->deleter)
        return;
    PyErr_Fetch(&type, &value, &tb);
    mt->deleter(mt);
    PyErr_Restore(type, value, tb);
}

static void held_free_v1(PyObject *cap)
{
    PyObject *type, *value, *tb;
    BtDLManagedTensorVersioned *mt;

    if (!PyCapsule_IsValid(cap, HELD_V1))
        return;
    mt = PyCapsule_GetPointer(cap, HELD_V1);
    if (!mt->deleter)
        return;
    PyErr_Fetch(&type, &value, &tb);
    mt->deleter(mt);
    PyErr_Restore(type, value, tb);
}

/* o.__dlpack__(stream=sv, max_version=(1, 1)): new reference, or NULL. A
 * producer that does not know max_version (TypeError: before the array API
 * standard's 2023.12) is asked with stream= alone, then with no argument. */
static PyObject *call_dlpack(PyObject *o, PyObject *sv)
{
    PyObject *meth = PyUnicode_FromString("__dlpack__"), *mv = NULL, *kw2 = NULL, *kw1 = NULL;
    PyObject *cap = NULL, *args[3];

    mv = Py_BuildValue("(ii)", BT_DLPACK_MAJOR, BT_DLPACK_MINOR);
    kw2 = Py_BuildValue("(ss)", "stream", "max_version");
    kw1 = Py_BuildValue("(s)", "stream");
    if (!meth || !mv || !kw2 || !kw1)
        goto done;
    args[0] = o;
    args[1] = sv;
    args[2] = mv;
    cap = PyObject_VectorcallMethod(meth, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw2);
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(meth, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kw1);
    }
    if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        cap = PyObject_VectorcallMethod(meth, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
done:
    Py_XDECREF(meth);
    Py_XDECREF(mv);
    Py_XDECREF(kw2);
    Py_XDECREF(kw1);
    return cap;
}

/* Takes the tensor of capsule cap (the producer's; renamed "used_...")
 * into *held (a new capsule that calls its deleter when it goes): its
 * DLTensor in *t, its flags in *flags (0 for an unversioned one). A
 * versioned tensor of another major version is refused, its deleter
 * called at once. 0, or -1 with an exception set. */
static int take_capsule(PyObject *cap, const char *kname, PyObject *name, PyObject **held,
                        const BtDLTensor **t, uint64_t *flags)
{
    *held = NULL;
    *flags = 0;
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        BtDLManagedTensorVersioned *v = PyCapsule_GetPointer(cap, "dltensor_versioned");
        if (PyCapsule_SetName(cap, "used_dltensor_versioned") < 0)
            return -1;
        if (v->version.major != BT_DLPACK_MAJOR) {
            /* its layout past the deleter is unknown: only the deleter is called */
            PyObject *ver = PyUnicode_FromFormat("%u.%u", (unsigned)v->version.major,
                                                 (unsigned)v->version.minor);
            if (v->deleter)
                v->deleter(v);
            if (ver)
                arg_error(kname, name,
                          "__dlpack__() gave a DLPack %S tensor; bindthem reads DLPack 1.x "
                          "(major version 1), the newest it knows",
                          ver);
            Py_XDECREF(ver);
            return -1;
        }
        if (!(*held = PyCapsule_New(v, HELD_V1, held_free_v1))) {
            if (v->deleter)
                v->deleter(v);
            return -1;
        }
        *t = &v->dl_tensor;
        *flags = v->flags;
        return 0;
    }
    if (PyCapsule_IsValid(cap, "dltensor")) {
        BtDLManagedTensor *mt = PyCapsule_GetPointer(cap, "dltensor");
        if (PyCapsule_SetName(cap, "used_dltensor") < 0)
            return -1;
        if (!(*held = PyCapsule_New(mt, HELD_V0, held_free_v0))) {
            if (mt->deleter)
                mt->deleter(mt);
            return -1;
        }
        *t = &mt->dl_tensor;
        return 0;
    }
    return arg_error(kname, name,
                     "__dlpack__() did not return a \"dltensor_versioned\" or \"dltensor\" "
                     "capsule (%R)",
                     cap);
}

static int read_dlpack(PyObject *o, PyObject *dev, uint64_t stream, const char *kname,
                       PyObject *name, BtCudaArg *a)
{
    PyObject *cap, *sv, *held;
    const BtDLTensor *t = NULL;
    uint64_t flags = 0;
    long dtype, did;
    int rc;

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
    if (!sv)
        return -1;
    cap = call_dlpack(o, sv);
    Py_DECREF(sv);
    if (!cap)
        return -1;
    rc = take_capsule(cap, kname, name, &held, &t, &flags);
    Py_DECREF(cap); /* renamed: its destructor leaves the tensor to us */
    if (rc < 0)
        return -1;
    a->keep = held; /* released after the launch: the deleter runs then */
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
    /* a kernel may write it only through a non-const parameter; a copy the
     * producer made (IS_COPIED: never asked for here) is written as given */
    a->readonly = (flags & BT_DLPACK_FLAG_READ_ONLY) != 0;
    return 0;
}

int bt_cudapy_read_arg(BtState *st, PyObject *o, uint64_t stream, const char *kname, PyObject *name,
                       BtCudaArg *a)
{
    PyObject *cai, *dev;
    int rc;

    memset(a, 0, sizeof *a);
    if (Py_TYPE(o) == st->DeviceArrayType) {
        BtDeviceArray *d = (BtDeviceArray *)o;
        a->kind = BT_CUDA_ARG_DEVICE;
        a->code = d->code;
        a->ptr = d->ptr;
        a->n = d->size;
        a->ndim = (int)PyTuple_GET_SIZE(d->shape);
        for (int i = 0; i < a->ndim && i < BT_MAX_SIZE_AXES; i++)
            a->shape[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(d->shape, i));
        a->contiguous = 1;
        a->readonly = bt_cudapy_devarray_readonly(d);
        a->via = "DeviceArray";
        a->array = o;
        a->device = d->device; /* its ordering state: bt_cudapy_wait_for, under its lock */
        return 0;
    }
    if (PyArray_Check(o)) {
        a->kind = BT_CUDA_ARG_HOST;
        a->code = BT_K_OTHER;
        return 0;
    }
    a->code = bt_slot_code(o);
    if (a->code == BT_K_CALLABLE) /* no kernel takes one: it may be a device array */
        a->code = BT_K_OTHER;
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

/* bt_cudapy_stream_arg's reading. Any int but 0, 1, 2 is refused: a bare number is more
 * often a misplaced launch item (numba writes [grid, block, stream,
 * shared]) than a handle, and a bad handle crashes the driver. */
static int stream_value(PyObject *o, const char *who, int launch, uint64_t *out)
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

int bt_cudapy_stream_arg(PyObject *o, const char *who, int launch, uint64_t *out)
{
    if (stream_value(o, who, launch, out) < 0)
        return -1;
    return *out == BT_CUDA_STREAM_PER_THREAD ? bt_cudapy_ptds_arm() : 0;
}
