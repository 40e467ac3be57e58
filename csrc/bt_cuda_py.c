/* bt_cuda_py.c - bindthem.cuda's Python types: kernels, launches, device arrays.
 *
 * cuda_bind() runs the CPU metadata pipeline (header -> plan -> mangled
 * names), loads the module image and finds each planned __global__ overload
 * in it, checking the parameter layout where the driver can tell. Each
 * Python name becomes a Kernel; kernel[grid, block] is a Launch; calling
 * either checks the arguments as a CPU call does (exact dtype dispatch, then
 * scalar conversions; C-contiguous; writable unless const; `_size` filled),
 * checks that the arrays are device memory on one device, makes that
 * device's primary context current and queues the launch. Arrays are
 * anything with __cuda_array_interface__ (v2/v3) or DLPack on a CUDA or
 * CUDA-managed device; they are borrowed for the call, never copied. */
#include "bt_state.h"

#include "bt_numpy.h"

#include "bt_call.h"
#include "bt_cuda.h"
#include "bt_mangle.h"
#include "bt_meta_py.h"
#include "bt_sym.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>

/* ---- DLPack (dlpack.h 0.8 / 1.0, unversioned "dltensor" capsule) ---- */
typedef struct { int32_t device_type, device_id; } BtDLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } BtDLDataType;
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

/* ---- errors ---- */
static PyObject *raise_cuda(BtState *st, const BtCudaError *e)
{
    PyObject *exc, *code;

    if (e->kind == BT_CUDA_NOMEM)
        return PyErr_NoMemory();
    exc = PyObject_CallFunction(e->kind == BT_CUDA_NODRIVER ? st->NoDriverError : st->CudaError,
                                "s", e->message);
    if (!exc)
        return NULL;
    code = e->code ? PyLong_FromLong(e->code) : Py_NewRef(Py_None);
    if (!code || PyObject_SetAttrString(exc, "code", code) < 0) {
        Py_XDECREF(code);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* ---- dtype codes ---- */

/* NumPy type number of (kind, itemsize), normalized as dispatch codes are
 * (int64 is `long`); -1 when no kernel parameter has that type. */
static int npy_of(char kind, long size)
{
    switch (kind) {
    case 'b': return size == 1 ? NPY_BOOL : -1;
    case 'i': return size == 1 ? NPY_BYTE : size == 2 ? NPY_SHORT : size == 4 ? NPY_INT
                   : size == 8 ? NPY_LONG : -1;
    case 'u': return size == 1 ? NPY_UBYTE : size == 2 ? NPY_USHORT : size == 4 ? NPY_UINT
                   : size == 8 ? NPY_ULONG : -1;
    case 'f': return size == 4 ? NPY_FLOAT : size == 8 ? NPY_DOUBLE : -1;
    case 'c': return size == 8 ? NPY_CFLOAT : size == 16 ? NPY_CDOUBLE : -1;
    default: return -1;
    }
}

static uint8_t code_of(int npy) { return npy < 0 ? BT_K_ARRAY_OTHER : (uint8_t)(BT_K_ARRAY + npy); }

/* "float32" for a dispatch code, "?" for others. */
static const char *code_name(uint8_t code)
{
    int id;
    for (id = 1; id < BT_NTYPES; id++)
        if (code == BT_K_ARRAY + bt_type((BtTypeId)id)->npy_type)
            return bt_type((BtTypeId)id)->npname;
    return "an unsupported dtype";
}

static uint8_t code_of_descr(PyArray_Descr *d)
{
    /* float16, long double, object, ... have no (kind, size) row */
    if (!PyArray_ISNBO(d->byteorder))
        return BT_K_ARRAY_OTHER;
    return code_of(npy_of(d->kind, (long)PyDataType_ELSIZE(d)));
}

/* ================= DeviceArray ================= */

typedef struct DeviceArray {
    PyObject_HEAD
    uint64_t ptr;
    size_t nbytes;
    Py_ssize_t size;
    int device;
    uint8_t code;
    PyObject *shape;        /* tuple of int */
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

/* New reference: an uninitialized device array (dtype is stolen). */
static PyObject *devarray_new(BtState *st, PyObject *shape, PyArray_Descr *dtype, int device)
{
    DeviceArray *a = NULL;
    BtCudaError e;
    Py_ssize_t i, n = 1;
    size_t nbytes;

    bt_cuda_error_init(&e);
    for (i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t d = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (d < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "negative dimensions are not allowed");
            goto error;
        }
        if (d && n > PY_SSIZE_T_MAX / d) {
            PyErr_SetString(PyExc_ValueError, "array is too big");
            goto error;
        }
        n *= d;
    }
    nbytes = (size_t)n * (size_t)PyDataType_ELSIZE(dtype);
    a = PyObject_New(DeviceArray, st->DeviceArrayType);
    if (!a)
        goto error;
    a->ptr = 0;
    a->nbytes = nbytes;
    a->size = n;
    a->device = device;
    a->code = code_of_descr(dtype);
    a->shape = Py_NewRef(shape);
    a->dtype = dtype;
    dtype = NULL;
    if (bt_cuda_alloc(device, nbytes, &a->ptr, &e) < 0) {
        Py_DECREF(a);
        return raise_cuda(st, &e);
    }
    return (PyObject *)a;
error:
    Py_XDECREF(dtype);
    return NULL;
}

static PyObject *devarray_copy_to_host(DeviceArray *a, PyObject *unused)
{
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyArrayObject *out;
    npy_intp dims[NPY_MAXDIMS];
    BtCudaError e;
    int nd = (int)PyTuple_GET_SIZE(a->shape), i;

    bt_cuda_error_init(&e);
    for (i = 0; i < nd; i++)
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, i));
    Py_INCREF(a->dtype);
    out = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, a->dtype, nd, dims, NULL, NULL, 0,
                                                NULL);
    if (!out)
        return NULL;
    if (bt_cuda_dtoh(a->device, PyArray_DATA(out), a->ptr, a->nbytes, &e) < 0) {
        Py_DECREF(out);
        return raise_cuda(st, &e);
    }
    return (PyObject *)out;
}

static PyObject *devarray_cai(DeviceArray *a, void *c)
{
    PyObject *typestr = PyObject_GetAttrString((PyObject *)a->dtype, "str"), *r;
    if (!typestr)
        return NULL;
    /* copies into the array are synchronous, so no stream to wait on */
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
static PyObject *devarray_get_nbytes(DeviceArray *a, void *c) { return PyLong_FromSize_t(a->nbytes); }
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
     "copy_to_host()\n--\n\nA new NumPy array with the device array's contents (synchronous)."},
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

static PyType_Spec devarray_spec = {
    .name = "bindthem.cuda.DeviceArray",
    .basicsize = sizeof(DeviceArray),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = devarray_slots,
};

/* ================= module handle ================= */

typedef struct CudaModule {
    PyObject_HEAD
    BtCudaModule *m;
    PyObject *path;   /* str: the file, or "<bytes>" */
} CudaModule;

static void cudamodule_dealloc(CudaModule *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    bt_cuda_module_unload(h->m);
    Py_CLEAR(h->path);
    tp->tp_free(h);
    Py_DECREF(tp);
}

static PyMemberDef cudamodule_members[] = {
    {"path", T_OBJECT, offsetof(CudaModule, path), READONLY, "The module file."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot cudamodule_slots[] = {
    {Py_tp_dealloc, cudamodule_dealloc},
    {Py_tp_members, cudamodule_members},
    {0, NULL},
};

static PyType_Spec cudamodule_spec = {
    .name = "bindthem._core.CudaModule",
    .basicsize = sizeof(CudaModule),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = cudamodule_slots,
};

/* ================= launch configuration ================= */

typedef struct LaunchConfig {
    unsigned grid[3], block[3];
    unsigned shared;
    uint64_t stream;   /* CUstream value; 0 = legacy default stream */
} LaunchConfig;

/* ValueError "k[grid, block]: ..."; fmt is PyUnicode_FromFormat's. */
static int config_error(const char *kname, const char *fmt, ...)
{
    PyObject *m;
    va_list ap;

    va_start(ap, fmt);
    m = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (m) {
        PyErr_Format(PyExc_ValueError, "%s[grid, block]: %U", kname, m);
        Py_DECREF(m);
    }
    return -1;
}

/* grid or block: an int or a tuple/list of 1 to 3 ints, each >= 1. */
static int parse_dims(PyObject *o, const char *what, const char *kname, unsigned out[3])
{
    static const unsigned long long gmax[3] = {2147483647ULL, 65535, 65535};
    static const unsigned long long bmax[3] = {1024, 1024, 64};
    const unsigned long long *lim = what[0] == 'g' ? gmax : bmax;
    PyObject *items[3] = {NULL, NULL, NULL};
    Py_ssize_t n, i;

    out[0] = out[1] = out[2] = 1;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        n = PySequence_Fast_GET_SIZE(o);
        if (n < 1 || n > 3)
            return config_error(kname, "%s=%R has %zd dimensions; give 1 to 3", what, o, n);
        for (i = 0; i < n; i++)
            items[i] = PySequence_Fast_GET_ITEM(o, i);
    } else {
        n = 1;
        items[0] = o;
    }
    for (i = 0; i < n; i++) {
        unsigned long long v;
        int overflow = 0;
        long long s;
        PyObject *x = items[i];
        if (PyBool_Check(x) || !PyIndex_Check(x))
            return config_error(kname,
                                "%s must be an int or a tuple of 1 to 3 ints, not %.100s "
                                "(%R)%s",
                                what, Py_TYPE(x)->tp_name, x,
                                PyFloat_Check(x) ? "; round up with (n + b - 1) // b" : "");
        x = PyNumber_Index(x);
        if (!x)
            return -1;
        s = PyLong_AsLongLongAndOverflow(x, &overflow);
        Py_DECREF(x);
        if (s == -1 && PyErr_Occurred())
            return -1;
        if (overflow || s < 1 || (unsigned long long)s > lim[i]) {
            if (!overflow && s < 1)
                return config_error(kname, "%s=%R: every dimension must be at least 1", what, o);
            return config_error(kname, "%s=%R: dimension %c may be at most %llu", what, o,
                                "xyz"[i], lim[i]);
        }
        v = (unsigned long long)s;
        out[i] = (unsigned)v;
    }
    if (what[0] == 'b' && (unsigned long long)out[0] * out[1] * out[2] > 1024)
        return config_error(kname, "block=%R has %llu threads; a block holds at most 1024", o,
                            (unsigned long long)out[0] * out[1] * out[2]);
    return 0;
}

/* stream: None (legacy default), an int handle, bindthem.cuda.LEGACY /
 * PER_THREAD or anything with __cuda_stream__ (CUDA Python's protocol),
 * `cuda_stream` (PyTorch) or `ptr` (CuPy). */
static int parse_stream(PyObject *o, const char *kname, uint64_t *out)
{
    PyObject *h = NULL, *t = NULL;
    unsigned long long v;
    int rc = -1;

    *out = 0;
    if (o == Py_None)
        return 0;
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        h = Py_NewRef(o);
    } else if (PyObject_HasAttrString(o, "__cuda_stream__")) {
        t = PyObject_CallMethod(o, "__cuda_stream__", NULL);
        if (!t)
            return -1;
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) {
            config_error(kname, "stream.__cuda_stream__() must return (version, handle)");
            goto done;
        }
        h = Py_NewRef(PyTuple_GET_ITEM(t, 1));
    } else if (PyObject_HasAttrString(o, "cuda_stream")) {
        h = PyObject_GetAttrString(o, "cuda_stream");
    } else if (PyObject_HasAttrString(o, "ptr")) {
        h = PyObject_GetAttrString(o, "ptr");
    } else {
        config_error(kname,
                     "stream must be None, an int handle, bindthem.cuda.LEGACY / PER_THREAD "
                     "or a stream object (__cuda_stream__), not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!h)
        goto done;
    if (!PyLong_Check(h)) {
        config_error(kname, "stream handle must be an int, not %.100s", Py_TYPE(h)->tp_name);
        goto done;
    }
    v = PyLong_AsUnsignedLongLong(h);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        config_error(kname, "stream handle %R is not a 64-bit address", h);
        goto done;
    }
    *out = v;
    rc = 0;
done:
    Py_XDECREF(h);
    Py_XDECREF(t);
    return rc;
}

static int parse_shared(PyObject *o, const char *kname, unsigned *out)
{
    long long v;
    int overflow = 0;

    if (PyBool_Check(o) || !PyLong_Check(o))
        return config_error(kname, "shared must be an int (bytes of dynamic shared memory), "
                                   "not %.100s", Py_TYPE(o)->tp_name);
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < 0 || v > UINT_MAX)
        return config_error(kname, "shared=%R is out of range", o);
    *out = (unsigned)v;
    return 0;
}

/* grid, block required; shared, stream optional (NULL). */
static int parse_config(PyObject *grid, PyObject *block, PyObject *shared, PyObject *stream,
                        const char *kname, LaunchConfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (parse_dims(grid, "grid", kname, cfg->grid) < 0 ||
        parse_dims(block, "block", kname, cfg->block) < 0)
        return -1;
    if (shared && parse_shared(shared, kname, &cfg->shared) < 0)
        return -1;
    if (stream && parse_stream(stream, kname, &cfg->stream) < 0)
        return -1;
    return 0;
}

/* ================= Kernel ================= */

typedef struct CudaKernel {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;       /* str */
    PyObject *module;     /* str: __module__ */
    PyObject *doc;        /* str */
    PyObject *owner;      /* the CudaModule: keeps the module loaded */
    PyObject *names;      /* tuple of parameter names (interned) */
    PyObject *overloads;  /* tuple of C signatures */
    PyObject *symbols;    /* tuple of kernel names in the module */
    PyObject *weakreflist;
    const char *cname;
    BtArena arena;        /* calls and their slots */
    BtCall *calls;        /* argument slots per overload (no ffi call is made) */
    void **kernels;       /* CUkernel / CUfunction per overload */
    int n_calls;
    int n_py;
    int module_device;    /* cuModuleLoadDataEx: the device it lives on; else -1 */
} CudaKernel;

typedef struct CudaLaunch {
    PyObject_HEAD
    CudaKernel *kernel;
    PyObject *stream;     /* as given, for repr */
    LaunchConfig cfg;
} CudaLaunch;

/* One argument, as a launch sees it. */
typedef struct Arg {
    uint8_t code;
    int kind;             /* ARG_SCALAR, ARG_DEVICE, ARG_HOST */
    uint64_t ptr;
    Py_ssize_t n;         /* elements */
    int readonly;
    int contiguous;
    int has_stream;       /* CAI v3 'stream' to wait on */
    uint64_t stream;
    const char *via;      /* "__cuda_array_interface__", "DLPack", ... */
    PyObject *keep;       /* DLPack capsule, released after the launch */
} Arg;

enum { ARG_SCALAR = 0, ARG_DEVICE, ARG_HOST };

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

static int read_cai(PyObject *o, PyObject *cai, const char *kname, PyObject *name, Arg *a)
{
    PyObject *shape, *typestr, *data, *strides, *mask, *version, *stream;
    int64_t dims[64], st[64];
    const char *ts;
    long v, size;
    Py_ssize_t nd, i;
    int npy;

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
                         "__cuda_array_interface__ %R lacks shape, typestr, data or version",
                         cai);
    v = PyLong_AsLong(version);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 2)
        return arg_error(kname, name, "__cuda_array_interface__ version %R is too old (2+)",
                         version);
    if (mask && mask != Py_None)
        return arg_error(kname, name, "masked arrays (__cuda_array_interface__ mask=%R) are "
                                      "not supported", mask);
    nd = PyTuple_GET_SIZE(shape);
    if (nd > 64)
        return arg_error(kname, name, "too many dimensions: %R", shape);
    ts = PyUnicode_AsUTF8(typestr);
    if (!ts)
        return -1;
    size = strlen(ts) >= 3 ? strtol(ts + 2, NULL, 10) : 0;
    npy = strlen(ts) >= 3 && ts[0] != '>' ? npy_of(ts[1], size) : -1;
    a->code = code_of(npy);
    a->n = 1;
    for (i = 0; i < nd; i++) {
        dims[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred())
            return -1;
        a->n *= (Py_ssize_t)dims[i];
    }
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

static int read_dlpack(PyObject *o, PyObject *dev, const LaunchConfig *cfg, const char *kname,
                       PyObject *name, Arg *a)
{
    PyObject *cap = NULL, *kw = NULL, *sv = NULL, *meth = NULL, *args[2];
    BtDLManagedTensor *mt;
    const BtDLTensor *t;
    long dtype, did;
    int npy = -1;
    char kind = '?';

    a->via = "DLPack";
    if (!PyTuple_Check(dev) || PyTuple_GET_SIZE(dev) != 2)
        return arg_error(kname, name, "__dlpack_device__() must return (type, id), not %R", dev);
    dtype = PyLong_AsLong(PyTuple_GET_ITEM(dev, 0));
    did = PyLong_AsLong(PyTuple_GET_ITEM(dev, 1));
    if ((dtype == -1 || did == -1) && PyErr_Occurred())
        return -1;
    if (dtype == DL_CPU || dtype == DL_CUDA_HOST) {
        a->kind = ARG_HOST;
        return 0;
    }
    if (dtype != DL_CUDA && dtype != DL_CUDA_MANAGED)
        return arg_error(kname, name, "a DLPack array on device %R, not a CUDA device", dev);
    /* the producer orders its work before ours on our stream (1: legacy) */
    sv = PyLong_FromUnsignedLongLong(cfg->stream ? cfg->stream : BT_CUDA_STREAM_LEGACY);
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
    switch (t->dtype.code) {
    case 0: kind = 'i'; break;
    case 1: kind = 'u'; break;
    case 2: kind = 'f'; break;
    case 5: kind = 'c'; break;
    case 6: kind = 'b'; break;
    }
    if (t->dtype.lanes == 1 && t->dtype.bits % 8 == 0)
        npy = npy_of(kind, t->dtype.bits / 8);
    a->code = code_of(npy);
    a->n = 1;
    for (int i = 0; i < t->ndim; i++)
        a->n *= (Py_ssize_t)t->shape[i];
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

/* Classifies argument o (for parameter `name`). */
static int read_arg(BtState *st, PyObject *o, const LaunchConfig *cfg, const char *kname,
                    PyObject *name, Arg *a)
{
    PyObject *cai, *dev;
    int rc;

    memset(a, 0, sizeof *a);
    if (Py_TYPE(o) == st->DeviceArrayType) {
        DeviceArray *d = (DeviceArray *)o;
        a->kind = ARG_DEVICE;
        a->code = d->code;
        a->ptr = d->ptr;
        a->n = d->size;
        a->contiguous = 1;
        a->via = "DeviceArray";
        return 0;
    }
    if (PyArray_Check(o)) {
        a->kind = ARG_HOST;
        a->code = BT_K_OTHER;
        return 0;
    }
    a->code = bt_call_code(o);
    if (a->code != BT_K_OTHER)
        return 0;
    cai = PyObject_GetAttrString(o, "__cuda_array_interface__");
    if (cai) {
        a->kind = ARG_DEVICE;
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
    a->kind = ARG_DEVICE;
    rc = read_dlpack(o, dev, cfg, kname, name, a);
    Py_DECREF(dev);
    if (rc == 0 && a->kind == ARG_HOST)
        a->code = BT_K_OTHER;
    return rc;
}

static int kernel_scan(const CudaKernel *k, const uint8_t *codes, int pass)
{
    int o, i;
    for (o = 0; o < k->n_calls; o++) {
        for (i = 0; i < k->n_py; i++)
            if (!bt_call_accepts(&k->calls[o].slots[i], codes[i], pass))
                break;
        if (i == k->n_py)
            return o;
    }
    return -1;
}

/* New reference: "DeviceArray of float32", "numpy.int64", ... */
static PyObject *describe(PyObject *o, const Arg *a)
{
    if (a->kind == ARG_DEVICE)
        return PyUnicode_FromFormat("%s (a device array of %s, via %s)", Py_TYPE(o)->tp_name,
                                    code_name(a->code), a->via);
    return bt_call_describe(o);
}

static const char *wants(const BtArgSlot *s, char *buf, size_t size)
{
    if (s->is_array) {
        snprintf(buf, size, "%s device array", bt_type(s->type)->npname);
        return buf;
    }
    return bt_call_slot_wants(s, buf, size);
}

/* TypeError naming the argument where the best overload stops matching. */
static PyObject *no_match(CudaKernel *k, PyObject *const *args, const Arg *argv,
                          const uint8_t *codes)
{
    PyObject *w = NULL, *given = NULL, *sigs = NULL, *sep = NULL, *nl = NULL, *joined = NULL;
    int best = -1, o, i, kk;
    char buf[128];

    for (o = 0; o < k->n_calls; o++) {
        for (i = 0; i < k->n_py; i++)
            if (!bt_call_accepts(&k->calls[o].slots[i], codes[i], 2))
                break;
        if (i > best)
            best = i;
    }
    kk = best < 0 ? 0 : best;
    w = PyList_New(0);
    if (!w)
        goto error;
    for (o = 0; o < k->n_calls; o++) {
        PyObject *s;
        int c;
        for (i = 0; i < kk; i++)
            if (!bt_call_accepts(&k->calls[o].slots[i], codes[i], 2))
                break;
        if (i < kk)
            continue;
        s = PyUnicode_FromString(wants(&k->calls[o].slots[kk], buf, sizeof buf));
        if (!s)
            goto error;
        c = PySequence_Contains(w, s);
        if (c == 0)
            c = PyList_Append(w, s);
        Py_DECREF(s);
        if (c < 0)
            goto error;
    }
    given = describe(args[kk], &argv[kk]);
    sep = PyUnicode_FromString(" or ");
    nl = PyUnicode_FromString("\n    ");
    if (!given || !sep || !nl)
        goto error;
    joined = PyUnicode_Join(sep, w);
    sigs = PyUnicode_Join(nl, k->overloads);
    if (!joined || !sigs)
        goto error;
    PyErr_Format(PyExc_TypeError,
                 "%U(): argument '%U' (position %d) got %U, expected %U%s.\nThe overloads "
                 "are:\n    %U",
                 k->name, PyTuple_GET_ITEM(k->names, kk), kk + 1, given, joined,
                 kk > 0 ? " (given the arguments before it)" : "", sigs);
error:
    Py_XDECREF(w);
    Py_XDECREF(given);
    Py_XDECREF(sigs);
    Py_XDECREF(sep);
    Py_XDECREF(nl);
    Py_XDECREF(joined);
    return NULL;
}

/* Storage of one kernel parameter. */
typedef union Val {
    uint64_t u64;
    double d;
    unsigned char bytes[16];
    long double align;
} Val;

static int store_size(Val *v, BtTypeId t, Py_ssize_t n, const char *kname, PyObject *name)
{
    const BtType *st = bt_type(t);
    int bits = (int)st->size * 8 - (st->kind == 'i');

    if (bits < 63 && (unsigned long long)n >> bits) {
        PyErr_Format(PyExc_OverflowError,
                     "%s(): argument '%U' has %zd elements, more than its '%U_size' parameter "
                     "(%s) can hold",
                     kname, name, n, name, st->cname);
        return -1;
    }
    memset(v, 0, sizeof *v);
    switch (st->size) {
    case 1: v->bytes[0] = (unsigned char)n; break;
    case 2: { uint16_t x = (uint16_t)n; memcpy(v->bytes, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)n; memcpy(v->bytes, &x, 4); break; }
    default: { int64_t x = (int64_t)n; memcpy(v->bytes, &x, 8); break; }
    }
    return 0;
}

/* Checks one array argument for slot s; fills *dev (first device seen). */
static int check_array(BtState *st, const CudaKernel *k, const BtArgSlot *s, PyObject *name,
                       const Arg *a, int *dev, PyObject **dev_name)
{
    BtCudaPtrInfo info;
    BtCudaError e;
    char label[300], other[300], addr[32];

    if (!a->contiguous) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' must be a C-contiguous array (this one, via %s, is "
                     "strided); bindthem never copies: make a contiguous copy and pass that",
                     k->cname, name, a->via);
        return -1;
    }
    if (!s->is_const && a->readonly) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is a read-only array, but the kernel writes to it "
                     "(the parameter is not const)",
                     k->cname, name);
        return -1;
    }
    if (a->n == 0 && a->ptr == 0)
        return 0;
    bt_cuda_error_init(&e);
    if (bt_cuda_pointer_info(a->ptr, &info, &e) < 0) {
        raise_cuda(st, &e);
        return -1;
    }
    if (!(info.memtype == 2 || info.memtype == 4 || info.managed ||
          (info.memtype == 1 && info.devptr == a->ptr))) {
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)a->ptr);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' (via %s) points at %s, which is %s; kernels "
                     "need device memory: copy it with bindthem.cuda.to_device()",
                     k->cname, name, a->via, addr,
                     info.memtype == 1 ? "host memory that the device cannot address"
                                       : "not memory CUDA knows of (host memory?)");
        return -1;
    }
    if (info.device < 0 || info.managed)
        return 0;
    if (*dev < 0) {
        *dev = info.device;
        *dev_name = name;
        return 0;
    }
    if (info.device != *dev) {
        bt_cuda_device_label(info.device, label, sizeof label);
        bt_cuda_device_label(*dev, other, sizeof other);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is on %s, but '%U' is on %s; all arrays of a launch "
                     "must be on one device",
                     k->cname, name, label, *dev_name, other);
        return -1;
    }
    return 0;
}

/* Binds args (positional, then keywords from kwnames) to out[n_py]. When
 * cfg_kw is given, the keywords grid/block/shared/stream that name no
 * parameter go there. */
static int bind_args(CudaKernel *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyObject **out, PyObject **cfg_kw)
{
    static const char *cfg_names[4] = {"grid", "block", "shared", "stream"};
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, j;
    int i;

    for (i = 0; i < k->n_py; i++)
        out[i] = i < nargs ? args[i] : NULL;
    for (j = 0; j < nkw; j++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, j);
        int found = -1, c;
        for (i = 0; i < k->n_py && found < 0; i++) {
            int eq = PyUnicode_Compare(PyTuple_GET_ITEM(k->names, i), kw);
            if (eq == -1 && PyErr_Occurred())
                return -1;
            if (eq == 0)
                found = i;
        }
        if (found >= 0) {
            if (out[found]) {
                PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%S'",
                             k->name, kw);
                return -1;
            }
            out[found] = args[nargs + j];
            continue;
        }
        for (c = 0; cfg_kw && c < 4; c++) {
            if (PyUnicode_CompareWithASCIIString(kw, cfg_names[c]) == 0) {
                cfg_kw[c] = args[nargs + j];
                break;
            }
        }
        if (!cfg_kw || c == 4) {
            PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%S'",
                         k->name, kw);
            return -1;
        }
    }
    if (nargs > k->n_py) {
        PyErr_Format(PyExc_TypeError, "%U() takes %d positional argument%s but %zd %s given",
                     k->name, k->n_py, k->n_py == 1 ? "" : "s", nargs,
                     nargs == 1 ? "was" : "were");
        return -1;
    }
    for (i = 0; i < k->n_py; i++) {
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%U() missing required argument '%U' (position %d)",
                         k->name, PyTuple_GET_ITEM(k->names, i), i + 1);
            return -1;
        }
    }
    return 0;
}

/* Checks, marshals and queues a launch of k with bound arguments argv. */
static PyObject *launch(CudaKernel *k, PyObject *const *argv, const LaunchConfig *cfg)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    Arg a[BT_MAX_PARAMS];
    uint8_t codes[BT_MAX_PARAMS];
    Val vals[BT_MAX_PARAMS];
    void *params[BT_MAX_PARAMS];
    PyObject *dev_name = NULL, *r = NULL;
    const BtCall *call;
    BtCudaError e;
    int i, n_read = 0, ov, pass, dev = -1;

    bt_cuda_error_init(&e);
    for (i = 0; i < k->n_py; i++, n_read++) {
        if (read_arg(st, argv[i], cfg, k->cname, PyTuple_GET_ITEM(k->names, i), &a[i]) < 0)
            goto done;
        codes[i] = a[i].code;
    }
    for (i = 0; i < k->n_py; i++) {
        int o;
        if (a[i].kind != ARG_HOST)
            continue;
        for (o = 0; o < k->n_calls; o++) {
            if (k->calls[o].slots[i].is_array) {
                PyErr_Format(PyExc_TypeError,
                             "%U(): argument '%U' is an array in host memory; CUDA kernels "
                             "take device arrays: pass bindthem.cuda.to_device(%U) (and read "
                             "results back with .copy_to_host())",
                             k->name, PyTuple_GET_ITEM(k->names, i),
                             PyTuple_GET_ITEM(k->names, i));
                goto done;
            }
        }
    }
    pass = 1;
    ov = kernel_scan(k, codes, 1);
    if (ov < 0) {
        pass = 2;
        ov = kernel_scan(k, codes, 2);
    }
    if (ov < 0) {
        no_match(k, argv, a, codes);
        goto done;
    }
    (void)pass;
    call = &k->calls[ov];
    for (i = 0; i < call->n_py; i++) {
        const BtArgSlot *s = &call->slots[i];
        PyObject *name = PyTuple_GET_ITEM(k->names, i);
        params[s->cidx] = &vals[s->cidx];
        if (!s->is_array) {
            if (bt_call_store_scalar(&vals[s->cidx], s->type, argv[i], k->cname, name) < 0)
                goto done;
            continue;
        }
        if (check_array(st, k, s, name, &a[i], &dev, &dev_name) < 0)
            goto done;
        vals[s->cidx].u64 = a[i].ptr;
        if (s->size_cidx >= 0) {
            if (store_size(&vals[s->size_cidx], s->size_type, a[i].n, k->cname, name) < 0)
                goto done;
            params[s->size_cidx] = &vals[s->size_cidx];
        }
    }
    if (dev < 0 && bt_cuda_current_device(&dev, &e) < 0) {
        raise_cuda(st, &e);
        goto done;
    }
    if (k->module_device >= 0 && dev != k->module_device) {
        PyErr_Format(PyExc_ValueError,
                     "%U(): the arrays are on device %d, but this module was loaded into "
                     "device %d's context (drivers before 12.0 have no context-independent "
                     "cuLibrary); load the module again on device %d",
                     k->name, dev, k->module_device, dev);
        goto done;
    }
    if (bt_cuda_use_device(dev, &e) < 0) {
        raise_cuda(st, &e);
        goto done;
    }
    /* CAI v3: wait for the producer's stream unless it is ours */
    for (i = 0; i < k->n_py; i++) {
        uint64_t ours = cfg->stream ? cfg->stream : BT_CUDA_STREAM_LEGACY;
        if (a[i].has_stream && a[i].stream != ours && bt_cuda_stream_sync(a[i].stream, &e) < 0) {
            raise_cuda(st, &e);
            goto done;
        }
    }
    if (bt_cuda_launch(k->kernels[ov], cfg->grid, cfg->block, cfg->shared, cfg->stream, params,
                       &e) < 0) {
        raise_cuda(st, &e);
        goto done;
    }
    r = Py_NewRef(Py_None);
done:
    for (i = 0; i < n_read; i++)
        Py_XDECREF(a[i].keep);
    return r;
}

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    CudaKernel *k = (CudaKernel *)self;
    PyObject *argv[BT_MAX_PARAMS], *cfg_kw[4] = {NULL, NULL, NULL, NULL};
    LaunchConfig cfg;

    if (bind_args(k, args, PyVectorcall_NARGS(nargsf), kwnames, argv, cfg_kw) < 0)
        return NULL;
    if (!cfg_kw[0] || !cfg_kw[1]) {
        PyErr_Format(PyExc_TypeError,
                     "%U() needs grid= and block= (or launch it as %U[grid, block](...))",
                     k->name, k->name);
        return NULL;
    }
    if (parse_config(cfg_kw[0], cfg_kw[1], cfg_kw[2], cfg_kw[3], k->cname, &cfg) < 0)
        return NULL;
    return launch(k, argv, &cfg);
}

/* kernel[grid, block], kernel[grid, block, shared], kernel[grid, block, shared, stream] */
static PyObject *kernel_getitem(CudaKernel *k, PyObject *key)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    PyObject *items[4] = {NULL, NULL, NULL, NULL};
    CudaLaunch *l;
    Py_ssize_t n, i;

    if (!PyTuple_Check(key) || (n = PyTuple_GET_SIZE(key)) < 2 || n > 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s[grid, block]: give 2 to 4 items (grid, block[, shared[, stream]]), "
                     "not %R",
                     k->cname, key);
        return NULL;
    }
    for (i = 0; i < n; i++)
        items[i] = PyTuple_GET_ITEM(key, i);
    l = PyObject_GC_New(CudaLaunch, st->CudaLaunchType);
    if (!l)
        return NULL;
    l->kernel = (CudaKernel *)Py_NewRef(k);
    l->stream = Py_NewRef(items[3] ? items[3] : Py_None);
    PyObject_GC_Track(l);
    if (parse_config(items[0], items[1], items[2], items[3], k->cname, &l->cfg) < 0) {
        Py_DECREF(l);
        return NULL;
    }
    return (PyObject *)l;
}

static PyObject *kernel_repr(CudaKernel *k)
{
    return PyUnicode_FromFormat("<bindthem.cuda kernel %U.%U with %d overload%s>", k->module,
                                k->name, k->n_calls, k->n_calls == 1 ? "" : "s");
}

static PyObject *kernel_get_name(CudaKernel *k, void *c) { return Py_NewRef(k->name); }
static PyObject *kernel_get_module(CudaKernel *k, void *c) { return Py_NewRef(k->module); }
static PyObject *kernel_get_doc(CudaKernel *k, void *c) { return Py_NewRef(k->doc); }
static PyObject *kernel_get_overloads(CudaKernel *k, void *c) { return Py_NewRef(k->overloads); }
static PyObject *kernel_get_symbols(CudaKernel *k, void *c) { return Py_NewRef(k->symbols); }
static PyObject *kernel_get_params(CudaKernel *k, void *c) { return Py_NewRef(k->names); }

static PyGetSetDef kernel_getset[] = {
    {"__name__", (getter)kernel_get_name, NULL, NULL, NULL},
    {"__qualname__", (getter)kernel_get_name, NULL, NULL, NULL},
    {"__module__", (getter)kernel_get_module, NULL, NULL, NULL},
    {"__doc__", (getter)kernel_get_doc, NULL, NULL, NULL},
    {"overloads", (getter)kernel_get_overloads, NULL, "C signatures, in YAML order.", NULL},
    {"symbols", (getter)kernel_get_symbols, NULL, "Kernel names in the module.", NULL},
    {"parameters", (getter)kernel_get_params, NULL, "Python parameter names.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int kernel_traverse(CudaKernel *k, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(k));
    Py_VISIT(k->owner);
    return 0;
}

static int kernel_clear(CudaKernel *k)
{
    Py_CLEAR(k->owner);
    return 0;
}

static void kernel_dealloc(CudaKernel *k)
{
    PyTypeObject *tp = Py_TYPE(k);

    PyObject_GC_UnTrack(k);
    if (k->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)k);
    kernel_clear(k);
    Py_CLEAR(k->name);
    Py_CLEAR(k->module);
    Py_CLEAR(k->doc);
    Py_CLEAR(k->names);
    Py_CLEAR(k->overloads);
    Py_CLEAR(k->symbols);
    bt_arena_free(&k->arena);
    tp->tp_free(k);
    Py_DECREF(tp);
}

static PyMemberDef kernel_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CudaKernel, vectorcall), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CudaKernel, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, kernel_repr},
    {Py_mp_subscript, kernel_getitem},
    {Py_tp_getset, kernel_getset},
    {Py_tp_members, kernel_members},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_tp_dealloc, kernel_dealloc},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "bindthem.cuda.Kernel",
    .basicsize = sizeof(CudaKernel),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = kernel_slots,
};

/* ---- Launch: a kernel with its configuration ---- */

static PyObject *launch_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CudaLaunch *l = (CudaLaunch *)self;
    PyObject *argv[BT_MAX_PARAMS], *kwnames = NULL, *stack[BT_MAX_PARAMS * 2], *r = NULL;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0, i;
    Py_ssize_t pos = 0;
    PyObject *key, *value;

    if (nargs + nkw > BT_MAX_PARAMS * 2) {
        PyErr_SetString(PyExc_TypeError, "too many arguments");
        return NULL;
    }
    for (i = 0; i < nargs; i++)
        stack[i] = PyTuple_GET_ITEM(args, i);
    if (nkw) {
        kwnames = PyTuple_New(nkw);
        if (!kwnames)
            return NULL;
        for (i = 0; PyDict_Next(kwargs, &pos, &key, &value); i++) {
            PyTuple_SET_ITEM(kwnames, i, Py_NewRef(key));
            stack[nargs + i] = value;
        }
    }
    if (bind_args(l->kernel, stack, nargs, kwnames, argv, NULL) == 0)
        r = launch(l->kernel, argv, &l->cfg);
    Py_XDECREF(kwnames);
    return r;
}

static PyObject *launch_repr(CudaLaunch *l)
{
    const LaunchConfig *c = &l->cfg;
    return PyUnicode_FromFormat("<bindthem.cuda launch %U[(%u, %u, %u), (%u, %u, %u), %u, %R]>",
                                l->kernel->name, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                c->block[1], c->block[2], c->shared, l->stream);
}

static PyObject *dims_tuple(const unsigned d[3]) { return Py_BuildValue("(III)", d[0], d[1], d[2]); }
static PyObject *launch_get_grid(CudaLaunch *l, void *c) { return dims_tuple(l->cfg.grid); }
static PyObject *launch_get_block(CudaLaunch *l, void *c) { return dims_tuple(l->cfg.block); }
static PyObject *launch_get_shared(CudaLaunch *l, void *c) { return PyLong_FromUnsignedLong(l->cfg.shared); }
static PyObject *launch_get_stream(CudaLaunch *l, void *c) { return Py_NewRef(l->stream); }
static PyObject *launch_get_kernel(CudaLaunch *l, void *c) { return Py_NewRef(l->kernel); }

static PyGetSetDef launch_getset[] = {
    {"grid", (getter)launch_get_grid, NULL, NULL, NULL},
    {"block", (getter)launch_get_block, NULL, NULL, NULL},
    {"shared", (getter)launch_get_shared, NULL, NULL, NULL},
    {"stream", (getter)launch_get_stream, NULL, NULL, NULL},
    {"kernel", (getter)launch_get_kernel, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int launch_traverse(CudaLaunch *l, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(l));
    Py_VISIT(l->kernel);
    Py_VISIT(l->stream);
    return 0;
}

static int launch_clear(CudaLaunch *l)
{
    Py_CLEAR(l->kernel);
    Py_CLEAR(l->stream);
    return 0;
}

static void launch_dealloc(CudaLaunch *l)
{
    PyTypeObject *tp = Py_TYPE(l);
    PyObject_GC_UnTrack(l);
    launch_clear(l);
    tp->tp_free(l);
    Py_DECREF(tp);
}

static PyType_Slot launch_slots[] = {
    {Py_tp_call, launch_call},
    {Py_tp_repr, launch_repr},
    {Py_tp_getset, launch_getset},
    {Py_tp_traverse, launch_traverse},
    {Py_tp_clear, launch_clear},
    {Py_tp_dealloc, launch_dealloc},
    {0, NULL},
};

static PyType_Spec launch_spec = {
    .name = "bindthem.cuda.Launch",
    .basicsize = sizeof(CudaLaunch),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = launch_slots,
};

/* ================= cuda_bind ================= */

/* Optimal string alignment distance, case-insensitive (names are short). */
static int distance(const char *a, const char *b)
{
    enum { MAXN = 64 };
    int d[MAXN + 1][MAXN + 1];
    int la = (int)strlen(a), lb = (int)strlen(b), i, j;

    if (la > MAXN || lb > MAXN)
        return la > lb ? la : lb;
    for (i = 0; i <= la; i++)
        d[i][0] = i;
    for (j = 0; j <= lb; j++)
        d[0][j] = j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

/* "ns::f" (arena string). */
static const char *qualified(const BtDecl *d, BtArena *a)
{
    BtBuf b;
    const char *r;
    int i;

    bt_buf_init(&b);
    for (i = 0; i < d->n_ns; i++)
        bt_buf_printf(&b, "%s::", d->ns[i]);
    bt_buf_puts(&b, d->name);
    r = b.failed ? NULL : bt_arena_strdup(a, bt_buf_str(&b));
    bt_buf_free(&b);
    return r;
}

/* "ns::f<int>" from a demangled "void ns::f<int>(int*)" (arena string). */
static const char *head_of(const char *dem, BtArena *a)
{
    const char *p = dem, *start = dem;
    int depth = 0;

    if (strncmp(p, "void ", 5) == 0)
        start = p = dem + 5;
    for (; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (*p == '(' && depth == 0)
            break;
    }
    return bt_arena_strndup(a, start, (size_t)(p - start));
}

/* SymbolError: a planned kernel the module lacks, with what it has. */
static PyObject *missing_kernel(BtState *st, BtCudaModule *m, const BtOverload *ov,
                                const char *sym, PyObject *file)
{
    BtArena a;
    BtBuf have, near, inst;
    BtCudaError e;
    const char **names;
    const char *q;
    int n, i, best = 1 << 30;

    bt_arena_init(&a);
    bt_buf_init(&have);
    bt_buf_init(&near);
    bt_buf_init(&inst);
    bt_cuda_error_init(&e);
    q = qualified(ov->decl, &a);
    bt_buf_puts(&inst, q ? q : ov->decl->name);
    if (ov->decl->n_tparams) {
        bt_buf_putc(&inst, '<');
        for (i = 0; i < ov->decl->n_tparams; i++)
            bt_buf_printf(&inst, "%s%s", i ? ", " : "", bt_type(ov->targs[i])->cname);
        bt_buf_putc(&inst, '>');
    }
    if (bt_cuda_module_names(m, &a, &names, &n, &e) < 0) {
        bt_buf_printf(&have, " (%s)", e.message);
    } else if (n == 0) {
        bt_buf_puts(&have, "; the module has no kernels");
    } else {
        /* two passes: the best distance, then every name at it */
        int pass;
        for (pass = 0; pass < 2; pass++) {
            for (i = 0; i < n; i++) {
                const char *dem = bt_sym_demangle(names[i], &a);
                const char *head = dem ? head_of(dem, &a) : names[i];
                char base[256];
                size_t bl;
                int d;
                if (pass == 0)
                    bt_buf_printf(&have, "%s%s", i ? ", " : "; the module has ",
                                  !dem ? names[i] : strncmp(dem, "void ", 5) == 0 ? dem + 5
                                                                                   : dem);
                if (!head)
                    continue;
                bl = strcspn(head, "<");
                snprintf(base, sizeof base, "%.*s", (int)bl, head);
                d = q ? distance(base, q) : 99;
                if (!(d == 0 || (strlen(q) >= 5 && d <= 2)))
                    continue;
                if (pass == 0 && d < best)
                    best = d;
                else if (pass == 1 && d == best)
                    bt_buf_printf(&near, "%s%s", near.len ? " or " : "", head);
            }
        }
    }
    PyErr_Format(st->SymbolError,
                 "%s: kernel %s (symbol %s) is not in %U%s%s%s%sCompile an explicit "
                 "instantiation `template __global__ %s` into the module, or let "
                 "bindthem.cuda.build(header, instantiate) do it",
                 ov->decl->name, bt_buf_str(&inst), sym, file, bt_buf_str(&have),
                 near.len ? "; did you mean " : "", bt_buf_str(&near), near.len ? "? " : ". ",
                 ov->signature);
    bt_buf_free(&have);
    bt_buf_free(&near);
    bt_buf_free(&inst);
    bt_arena_free(&a);
    return NULL;
}

/* The header's layout of overload ov against the kernel's (12.4+ drivers).
 * 0 when they agree or the driver can't tell; -1 with BindError. */
static int check_layout(BtState *st, BtCudaModule *m, void *kernel, const BtOverload *ov,
                        const char *sym, PyObject *file)
{
    const BtDecl *d = ov->decl;
    size_t off = 0, koff, ksize;
    BtCudaError e;
    int i, rc;

    bt_cuda_error_init(&e);
    for (i = 0; i <= d->n_params; i++) {
        size_t size = 0, align = 1;
        if (i < d->n_params) {
            const BtType *t = bt_type(ov->ptypes[i]);
            size = d->params[i].t.is_array ? sizeof(void *) : t->size;
            align = d->params[i].t.is_array ? sizeof(void *) : t->kind == 'c' ? t->size / 2
                                                                              : t->size;
            off = (off + align - 1) / align * align;
        }
        rc = bt_cuda_param_info(m, kernel, (size_t)i, &koff, &ksize, &e);
        if (rc < 0 && e.kind == BT_CUDA_UNSUPPORTED)
            return 0;
        if (rc < 0) {
            raise_cuda(st, &e);
            return -1;
        }
        if (i == d->n_params) {
            if (rc == 0) {
                PyErr_Format(st->BindError,
                             "%s: the module's kernel %s (in %U) takes more than the %d "
                             "parameters the header declares for %s",
                             d->name, sym, file, d->n_params, ov->signature);
                return -1;
            }
            return 0;
        }
        if (rc == 1) {
            PyErr_Format(st->BindError,
                         "%s: the module's kernel %s (in %U) takes %d parameter%s, but the "
                         "header declares %d: %s (parameter '%s' has no counterpart)",
                         d->name, sym, file, i, i == 1 ? "" : "s", d->n_params, ov->signature,
                         d->params[i].name);
            return -1;
        }
        if (koff != off || ksize != size) {
            PyErr_Format(st->BindError,
                         "%s: parameter %d '%s' of %s is %zu bytes at offset %zu by the "
                         "header, but %zu bytes at offset %zu in the module's kernel %s (in "
                         "%U); the header does not match the compiled kernel",
                         d->name, i + 1, d->params[i].name, ov->signature, size, off, ksize,
                         koff, sym, file);
            return -1;
        }
        off += size;
    }
    return 0;
}

static PyObject *str_or_empty(const char *s) { return PyUnicode_FromString(s ? s : ""); }

/* New reference: a Kernel for plan entry f (n of its overloads kept). */
static PyObject *kernel_new(BtState *st, const BtFunc *f, const BtOverload *ovs, BtCall *calls,
                            void **kernels, int n, BtArena *arena, PyObject *owner,
                            PyObject *modname, int module_device)
{
    CudaKernel *k;
    int i, j;

    k = PyObject_GC_New(CudaKernel, st->CudaKernelType);
    if (!k) {
        bt_arena_free(arena);
        return NULL;
    }
    k->vectorcall = kernel_vectorcall;
    k->name = k->module = k->doc = k->names = k->overloads = k->symbols = NULL;
    k->weakreflist = NULL;
    k->owner = Py_NewRef(owner);
    k->arena = *arena;
    bt_arena_init(arena);
    k->calls = calls;
    k->kernels = kernels;
    k->n_calls = n;
    k->n_py = calls[0].n_py;
    k->module_device = module_device;
    PyObject_GC_Track(k);
    k->name = PyUnicode_InternFromString(f->name);
    k->module = Py_NewRef(modname);
    k->doc = str_or_empty(f->doc);
    k->names = PyTuple_New(k->n_py);
    k->overloads = PyTuple_New(n);
    k->symbols = PyTuple_New(n);
    if (!k->name || !k->doc || !k->names || !k->overloads || !k->symbols)
        goto error;
    k->cname = PyUnicode_AsUTF8(k->name);
    if (!k->cname)
        goto error;
    for (i = 0; i < k->n_py; i++) {
        PyObject *s = PyUnicode_InternFromString(ovs[0].decl->params[calls[0].slots[i].cidx].name);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(k->names, i, s);
    }
    for (j = 0; j < n; j++) {
        PyObject *s;
        if (calls[j].n_py != k->n_py)
            goto differ;
        for (i = 0; i < k->n_py; i++)
            if (strcmp(ovs[j].decl->params[calls[j].slots[i].cidx].name,
                       ovs[0].decl->params[calls[0].slots[i].cidx].name) != 0)
                goto differ;
        s = PyUnicode_FromString(calls[j].signature);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(k->overloads, j, s);
        s = PyUnicode_FromString(calls[j].symbol);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(k->symbols, j, s);
    }
    return (PyObject *)k;
differ:
    PyErr_Format(st->BindError,
                 "cannot bind '%s': its overloads %s and %s take different Python parameters; "
                 "remapped kernels must share one parameter list",
                 f->name, calls[0].signature, calls[j].signature);
error:
    Py_DECREF(k);
    return NULL;
}

PyDoc_STRVAR(cuda_bind_doc,
"cuda_bind(image, header, instantiate=None, *, module, filename, strict=False)\n--\n\n"
"Load a CUDA module image (bytes: cubin, fatbin or PTX) and bind the __global__\n"
"kernels a header (and instantiate.yml) plan. Returns (module handle,\n"
"{name: Kernel}, metadata dict, [unexported signatures], [non-kernels]).");

static PyObject *cuda_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"image", "header", "instantiate", "module", "filename", "strict",
                             NULL};
    BtState *st = bt_state(module);
    PyObject *header = NULL, *inst = NULL, *modname = NULL, *file = NULL, *funcs = NULL;
    PyObject *meta_py = NULL, *unexported = NULL, *skipped = NULL, *r = NULL;
    CudaModule *handle = NULL;
    Py_buffer image = {0};
    BtCudaError e;
    BtMeta meta;
    BtArena arena;
    int strict = 0, dev, i, j;

    memset(&meta, 0, sizeof meta);
    bt_arena_init(&arena);
    bt_cuda_error_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*O&|O&$UUp:cuda_bind", kwlist, &image,
                                     PyUnicode_FSConverter, &header, bt_path_converter, &inst,
                                     &modname, &file, &strict))
        goto error;
    if (!modname || !file) {
        PyErr_SetString(PyExc_TypeError, "cuda_bind() needs module= and filename=");
        goto error;
    }
    if (!inst)
        inst = Py_NewRef(Py_None);
    if (bt_meta_load_py(st, &meta, header, inst, strict) < 0)
        goto error;
    if (bt_cuda_current_device(&dev, &e) < 0) {
        raise_cuda(st, &e);
        goto error;
    }
    handle = PyObject_New(CudaModule, st->CudaModuleType);
    if (!handle)
        goto error;
    handle->path = Py_NewRef(file);
    handle->m = bt_cuda_module_load(image.buf, (size_t)image.len, dev, &e);
    if (!handle->m) {
        raise_cuda(st, &e);
        goto error;
    }
    funcs = PyDict_New();
    unexported = PyList_New(0);
    skipped = PyList_New(0);
    if (!funcs || !unexported || !skipped)
        goto error;
    for (i = 0; i < meta.plan.n_funcs; i++) {
        const BtFunc *f = &meta.plan.funcs[i];
        BtCall *calls = bt_arena_alloc(&arena, sizeof(BtCall) * (size_t)f->n_ovs);
        BtOverload *kept = bt_arena_alloc(&arena, sizeof(BtOverload) * (size_t)f->n_ovs);
        void **kernels = bt_arena_alloc(&arena, sizeof(void *) * (size_t)f->n_ovs);
        PyObject *kobj;
        int n = 0;

        if (!calls || !kept || !kernels) {
            PyErr_NoMemory();
            goto error;
        }
        for (j = 0; j < f->n_ovs; j++) {
            const BtOverload *ov = &f->ovs[j];
            const char *sym;
            void *kern;
            int missing;
            if (!ov->decl->is_global) {
                PyObject *s;
                if (meta.has_table) {
                    PyErr_Format(st->BindError,
                                 "instantiate.yml lists '%s' (%s:%d), which is not a "
                                 "__global__ kernel; bindthem.cuda binds kernels only "
                                 "(bindthem.load binds host functions)",
                                 ov->decl->name, meta.header.file, ov->decl->line);
                    goto error;
                }
                s = PyUnicode_FromString(ov->signature);
                if (!s || PyList_Append(skipped, s) < 0) {
                    Py_XDECREF(s);
                    goto error;
                }
                Py_DECREF(s);
                continue;
            }
            sym = bt_mangle(ov->decl, ov->targs, &arena);
            if (!sym) {
                PyErr_NoMemory();
                goto error;
            }
            kern = bt_cuda_module_kernel(handle->m, sym, &missing, &e);
            if (!kern && !missing) {
                raise_cuda(st, &e);
                goto error;
            }
            if (!kern) {
                PyObject *s;
                if (meta.has_table) {
                    missing_kernel(st, handle->m, ov, sym, file);
                    goto error;
                }
                s = PyUnicode_FromString(ov->signature);
                if (!s || PyList_Append(unexported, s) < 0) {
                    Py_XDECREF(s);
                    goto error;
                }
                Py_DECREF(s);
                continue;
            }
            if (check_layout(st, handle->m, kern, ov, sym, file) < 0)
                goto error;
            /* the slots are the CPU call's; no ffi call is ever made */
            if (bt_call_prepare(&calls[n], ov, NULL, sym, &arena) < 0)
                goto error;
            kernels[n] = kern;
            kept[n++] = *ov;
        }
        if (n == 0)
            continue;
        kobj = kernel_new(st, f, kept, calls, kernels, n, &arena, (PyObject *)handle, modname,
                          bt_cuda_module_device(handle->m));
        bt_arena_init(&arena);
        if (!kobj)
            goto error;
        if (PyDict_SetItemString(funcs, f->name, kobj) < 0) {
            Py_DECREF(kobj);
            goto error;
        }
        Py_DECREF(kobj);
    }
    meta_py = bt_meta_to_py(&meta);
    if (!meta_py)
        goto error;
    r = PyTuple_Pack(5, handle, funcs, meta_py, unexported, skipped);
error:
    if (image.obj)
        PyBuffer_Release(&image);
    bt_arena_free(&arena);
    bt_meta_free(&meta);
    Py_XDECREF(header);
    Py_XDECREF(inst);
    Py_XDECREF(handle);
    Py_XDECREF(funcs);
    Py_XDECREF(meta_py);
    Py_XDECREF(unexported);
    Py_XDECREF(skipped);
    return r;
}

/* ================= helpers ================= */

static int device_arg(BtState *st, PyObject *o, int *dev)
{
    BtCudaError e;

    bt_cuda_error_init(&e);
    if (o == NULL || o == Py_None) {
        if (bt_cuda_current_device(dev, &e) < 0) {
            raise_cuda(st, &e);
            return -1;
        }
        return 0;
    }
    *dev = PyLong_AsLong(o) ;
    if (*dev == -1 && PyErr_Occurred())
        return -1;
    if (*dev < 0) {
        PyErr_Format(PyExc_ValueError, "device=%R is not a device ordinal", o);
        return -1;
    }
    return 0;
}

static PyObject *cuda_to_device(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"array", "device", NULL};
    BtState *st = bt_state(module);
    PyObject *obj, *devo = NULL, *shape = NULL, *out = NULL;
    PyArrayObject *arr = NULL;
    BtCudaError e;
    int dev, i;

    bt_cuda_error_init(&e);
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
    if (out && bt_cuda_htod(dev, ((DeviceArray *)out)->ptr, PyArray_DATA(arr),
                            (size_t)PyArray_NBYTES(arr), &e) < 0) {
        Py_CLEAR(out);
        raise_cuda(st, &e);
    }
done:
    Py_XDECREF(arr);
    Py_XDECREF(shape);
    return out;
}

static PyObject *cuda_empty(PyObject *module, PyObject *args, PyObject *kwargs)
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

static PyObject *cuda_device_count(PyObject *module, PyObject *unused)
{
    BtCudaError e;
    int n;

    bt_cuda_error_init(&e);
    if (bt_cuda_device_count(&n, &e) < 0) {
        if (e.kind == BT_CUDA_NODRIVER)
            return PyLong_FromLong(0);
        return raise_cuda(bt_state(module), &e);
    }
    return PyLong_FromLong(n);
}

static PyObject *cuda_synchronize(PyObject *module, PyObject *unused)
{
    BtCudaError e;

    bt_cuda_error_init(&e);
    if (bt_cuda_sync(&e) < 0)
        return raise_cuda(bt_state(module), &e);
    Py_RETURN_NONE;
}

static PyObject *cuda_driver(PyObject *module, PyObject *unused)
{
    BtCudaError e;

    bt_cuda_error_init(&e);
    if (bt_cuda_init(&e) < 0)
        return raise_cuda(bt_state(module), &e);
    return Py_BuildValue("{s:i,s:s,s:O}", "version", bt_cuda_driver_version(), "path",
                         bt_cuda_driver_path(), "library_api",
                         bt_cuda_uses_library_api() ? Py_True : Py_False);
}

static PyMethodDef cuda_methods[] = {
    {"cuda_bind", (PyCFunction)(void (*)(void))cuda_bind, METH_VARARGS | METH_KEYWORDS,
     cuda_bind_doc},
    {"cuda_to_device", (PyCFunction)(void (*)(void))cuda_to_device, METH_VARARGS | METH_KEYWORDS,
     "cuda_to_device(array, *, device=None)\n--\n\nCopy an array to a new DeviceArray."},
    {"cuda_empty", (PyCFunction)(void (*)(void))cuda_empty, METH_VARARGS | METH_KEYWORDS,
     "cuda_empty(shape, dtype=float, *, device=None)\n--\n\nAn uninitialized DeviceArray."},
    {"cuda_device_count", cuda_device_count, METH_NOARGS,
     "cuda_device_count()\n--\n\nCUDA devices (0 without a driver)."},
    {"cuda_synchronize", cuda_synchronize, METH_NOARGS,
     "cuda_synchronize()\n--\n\ncuCtxSynchronize on the current (else device 0's) context."},
    {"cuda_driver", cuda_driver, METH_NOARGS,
     "cuda_driver()\n--\n\nLoad the driver; {'version', 'path', 'library_api'}."},
    {NULL, NULL, 0, NULL},
};

/* ================= registration ================= */

int bt_cuda_py_add(PyObject *module)
{
    BtState *st = bt_state(module);

    st->CudaError = PyErr_NewExceptionWithDoc(
        "bindthem.cuda.CudaError",
        "A CUDA driver call failed; `code` is its CUresult (None when not from the driver).",
        PyExc_RuntimeError, NULL);
    if (!st->CudaError || PyModule_AddObjectRef(module, "CudaError", st->CudaError) < 0)
        return -1;
    st->NoDriverError = PyErr_NewExceptionWithDoc(
        "bindthem.cuda.NoDriverError",
        "No usable CUDA driver: libcuda missing, the toolkit's stub library, or no device.",
        st->CudaError, NULL);
    if (!st->NoDriverError ||
        PyModule_AddObjectRef(module, "NoDriverError", st->NoDriverError) < 0)
        return -1;
#define TYPE(field, spec, pyname)                                                            \
    st->field = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);                \
    if (!st->field || PyModule_AddObjectRef(module, pyname, (PyObject *)st->field) < 0)       \
        return -1;
    TYPE(CudaModuleType, cudamodule_spec, "CudaModule")
    TYPE(CudaKernelType, kernel_spec, "CudaKernel")
    TYPE(CudaLaunchType, launch_spec, "CudaLaunch")
    TYPE(DeviceArrayType, devarray_spec, "DeviceArray")
#undef TYPE
    if (PyModule_AddIntConstant(module, "CUDA_STREAM_LEGACY", BT_CUDA_STREAM_LEGACY) < 0 ||
        PyModule_AddIntConstant(module, "CUDA_STREAM_PER_THREAD", BT_CUDA_STREAM_PER_THREAD) < 0)
        return -1;
    return PyModule_AddFunctions(module, cuda_methods);
}

int bt_cuda_py_traverse(BtState *st, visitproc visit, void *arg)
{
    Py_VISIT(st->CudaError);
    Py_VISIT(st->NoDriverError);
    Py_VISIT(st->CudaModuleType);
    Py_VISIT(st->CudaKernelType);
    Py_VISIT(st->CudaLaunchType);
    Py_VISIT(st->DeviceArrayType);
    return 0;
}

void bt_cuda_py_clear(BtState *st)
{
    Py_CLEAR(st->CudaError);
    Py_CLEAR(st->NoDriverError);
    Py_CLEAR(st->CudaModuleType);
    Py_CLEAR(st->CudaKernelType);
    Py_CLEAR(st->CudaLaunchType);
    Py_CLEAR(st->DeviceArrayType);
}
