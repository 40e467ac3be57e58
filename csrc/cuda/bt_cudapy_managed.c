/* bt_cudapy_managed.c - managed (unified) memory: made, prefetched, advised, seen from the host. */

#include "bt_cudapy_array.h"

#include <string.h>

/* CUmem_advise, by the names bindthem.cuda takes (MemAdvise is made from
 * this), and whether the advice names a location (a device or the host). */
static const struct {
    const char *name;
    int value, located;
} advice_table[] = {
    {"read_mostly", 1, 0},        {"unset_read_mostly", 2, 0},
    {"preferred_location", 3, 1}, {"unset_preferred_location", 4, 0},
    {"accessed_by", 5, 1},        {"unset_accessed_by", 6, 1},
};
enum { N_ADVICE = sizeof advice_table / sizeof advice_table[0] };

PyObject *bt_cudapy_advice_names(void)
{
    PyObject *d = PyDict_New(), *v;
    int i;

    for (i = 0; d && i < N_ADVICE; i++) {
        v = PyLong_FromLong(advice_table[i].value);
        if (!v || PyDict_SetItemString(d, advice_table[i].name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
    }
    return d;
}

int bt_cudapy_is_managed(PyObject *o) { return ((BtDeviceArray *)o)->managed; }

PyObject *bt_cudapy_managed_get(BtDeviceArray *a, void *c) { return PyBool_FromLong(a->managed); }

/* A device ordinal (None: the current device; what is not a device raises). */
static int device_of(BtState *st, PyObject *o, const char *who, int *dev)
{
    BtDiag e;
    long v;
    int n, overflow = 0;

    bt_diag_init(&e);
    if ((o == NULL || o == Py_None) ? bt_cuda_current_device(dev, &e) < 0
                                    : bt_cuda_device_count(&n, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (o == NULL || o == Py_None)
        return 0;
    if (PyBool_Check(o) || !PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): a device must be an int (a device ordinal), not %.100s", who,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *dev = (int)v;
    if (overflow || v < 0 || v >= n) {
        PyErr_Format(PyExc_ValueError, "%s(): %R is not a device ordinal (there %s %d device%s)",
                     who, o, n == 1 ? "is" : "are", n, n == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

/* A location: a device ordinal, or "host" (BT_CUDA_HOST_LOCATION). */
static int location_of(BtState *st, PyObject *o, const char *who, int *loc)
{
    if (PyUnicode_Check(o)) {
        if (PyUnicode_CompareWithASCIIString(o, "host") == 0) {
            *loc = BT_CUDA_HOST_LOCATION;
            return 0;
        }
        PyErr_Format(PyExc_ValueError, "%s(): location=%R is neither a device ordinal nor 'host'",
                     who, o);
        return -1;
    }
    return device_of(st, o, who, loc);
}

static int need_managed(BtDeviceArray *a, const char *who)
{
    if (a->managed)
        return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s(): this DeviceArray is device memory, not managed memory; make it with "
                 "bindthem.cuda.managed_empty() or managed_zeros()",
                 who);
    return -1;
}

/* managed_empty / managed_zeros (zero: queued cuMemsetD8Async on stream). */
static PyObject *make_managed(PyObject *module, PyObject *args, PyObject *kwargs, int zero)
{
    static char *kwlist[] = {"shape", "dtype", "device", "attach", "stream", NULL};
    static char *empty_kwlist[] = {"shape", "dtype", "device", "attach", NULL};
    const char *who = zero ? "managed_zeros" : "managed_empty";
    BtState *st = bt_state(module);
    PyObject *shapeo, *dto = Py_None, *devo = Py_None, *streamo = Py_None, *shape = NULL;
    PyArray_Descr *dtype = NULL;
    BtDeviceArray *a = NULL;
    const char *attach = "global";
    uint64_t stream = 0;
    BtDiag e;
    int dev, host;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(
            args, kwargs, zero ? "O|O$OsO:managed_zeros" : "O|O$Os:managed_empty",
            zero ? kwlist : empty_kwlist, &shapeo, &dto, &devo, &attach, &streamo))
        return NULL;
    host = strcmp(attach, "host") == 0;
    if (!host && strcmp(attach, "global") != 0)
        return PyErr_Format(PyExc_ValueError,
                            "%s(): attach='%s' is neither 'global' (CU_MEM_ATTACH_GLOBAL: any "
                            "stream may use it) nor 'host' (CU_MEM_ATTACH_HOST)",
                            who, attach);
    if (bt_cudapy_stream_arg(streamo, who, 0, &stream) < 0 || device_of(st, devo, who, &dev) < 0)
        return NULL;
    if (!PyArray_DescrConverter2(dto, &dtype))
        return NULL;
    if (!dtype && !(dtype = PyArray_DescrFromType(NPY_DOUBLE)))
        return NULL;
    if (PyDataType_REFCHK(dtype)) {
        Py_DECREF(dtype);
        return PyErr_Format(PyExc_TypeError, "%s(): object dtypes cannot go to the device", who);
    }
    shape = PyLong_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);
    if (!shape) {
        Py_DECREF(dtype);
        return NULL;
    }
    a = bt_cudapy_devarray_shell(st, shape, dtype, dev);
    Py_DECREF(shape);
    if (!a)
        return NULL;
    a->managed = 1;
    if (bt_cuda_alloc_managed(dev, a->nbytes, host, &a->ptr, &e) < 0 ||
        (zero && bt_cuda_memset(dev, a->ptr, a->nbytes, stream, &e) < 0)) {
        Py_DECREF(a);
        return bt_raise_diag(st, &e);
    }
    if (zero && bt_cudapy_devarray_wrote((PyObject *)a, stream, streamo) < 0)
        Py_CLEAR(a);
    return (PyObject *)a;
}

PyObject *bt_cudapy_managed_empty(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return make_managed(module, args, kwargs, 0);
}

PyObject *bt_cudapy_managed_zeros(PyObject *module, PyObject *args, PyObject *kwargs)
{
    return make_managed(module, args, kwargs, 1);
}

PyObject *bt_cudapy_managed_prefetch(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"location", "stream", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *loco, *streamo = Py_None;
    uint64_t stream = 0;
    int loc, rc;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:prefetch", kwlist, &loco, &streamo) ||
        need_managed(a, "prefetch") < 0 || location_of(st, loco, "prefetch", &loc) < 0 ||
        bt_cudapy_stream_arg(streamo, "prefetch", 0, &stream) < 0)
        return NULL;
    if (loc != BT_CUDA_HOST_LOCATION && (rc = bt_cuda_concurrent_managed(loc, &e)) <= 0) {
        if (rc < 0)
            return bt_raise_diag(st, &e);
        return PyErr_Format(PyExc_ValueError,
                            "prefetch(): device %d has no concurrent managed access "
                            "(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS is 0), so memory "
                            "cannot be prefetched to it; its launches migrate what they use",
                            loc);
    }
    /* after the last write (moving pages a kernel still writes would only
     * move them back); recorded as a read: a later write on another stream,
     * and host_view(), wait for the migration */
    if (bt_cudapy_devarray_wait(a, stream, 0, &e) < 0 ||
        (a->nbytes && bt_cuda_prefetch(a->device, a->ptr, a->nbytes, loc, stream, &e) < 0))
        return bt_raise_diag(st, &e);
    if (bt_cudapy_devarray_read((PyObject *)a, stream, streamo) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* An advice: one of advice_table's names, or its value (an int, MemAdvise):
 * its index in the table, or -1 with ValueError naming them all. */
static int advice_of(PyObject *o)
{
    char names[256] = "";
    size_t n = 0;
    int i;

    for (i = 0; i < N_ADVICE; i++)
        if (PyUnicode_Check(o)
                ? PyUnicode_CompareWithASCIIString(o, advice_table[i].name) == 0
                : PyLong_Check(o) && !PyBool_Check(o) && PyLong_AsLong(o) == advice_table[i].value)
            return i;
    if (PyErr_Occurred())
        PyErr_Clear();
    for (i = 0; i < N_ADVICE && n < sizeof names; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "'%s', ", advice_table[i].name);
    PyErr_Format(PyExc_ValueError,
                 "advise(): %R is not an advice: give one of %sor a bindthem.cuda.MemAdvise", o,
                 names);
    return -1;
}

PyObject *bt_cudapy_managed_advise(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"advice", "location", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *adviceo, *loco = Py_None;
    int i, loc = a->device;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:advise", kwlist, &adviceo, &loco) ||
        need_managed(a, "advise") < 0 || (i = advice_of(adviceo)) < 0)
        return NULL;
    if (loco == Py_None && advice_table[i].located)
        return PyErr_Format(PyExc_ValueError,
                            "advise(): %R needs a location: a device ordinal or 'host'", adviceo);
    if (loco != Py_None && location_of(st, loco, "advise", &loc) < 0)
        return NULL;
    if (a->nbytes &&
        bt_cuda_advise(a->device, a->ptr, a->nbytes, advice_table[i].value, loc, &e) < 0)
        return bt_raise_diag(st, &e);
    Py_RETURN_NONE;
}

/* Waits, the GIL released, for the array's pending work: its last write and
 * its pending reads (the host may write), through dev's legacy stream. */
static int settle(BtState *st, BtDeviceArray *a)
{
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    if (bt_cudapy_devarray_wait(a, BT_CUDA_STREAM_LEGACY, 1, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_managed_settle(a->device, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        bt_raise_diag(st, &e);
    return rc;
}

PyObject *bt_cudapy_managed_host_view(BtDeviceArray *a, PyObject *unused)
{
    BtState *st = bt_state_from_type(Py_TYPE(a));
    npy_intp dims[NPY_MAXDIMS];
    int nd = (int)PyTuple_GET_SIZE(a->shape), i; /* <= NPY_MAXDIMS: devarray_make */
    PyObject *out;

    if (need_managed(a, "host_view") < 0 || settle(st, a) < 0)
        return NULL;
    for (i = 0; i < nd; i++)
        dims[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(a->shape, i));
    Py_INCREF(a->dtype);
    out = PyArray_NewFromDescr(&PyArray_Type, a->dtype, nd, dims, NULL, (void *)(uintptr_t)a->ptr,
                               NPY_ARRAY_CARRAY, NULL);
    /* the view keeps the DeviceArray, and so the memory, alive */
    if (out && PyArray_SetBaseObject((PyArrayObject *)out, Py_NewRef(a)) < 0)
        Py_CLEAR(out);
    return out;
}

PyObject *bt_cudapy_managed_array(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None, *view, *out;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:__array__", kwlist, &dtype, &copy))
        return NULL;
    if (!a->managed)
        return PyErr_Format(PyExc_TypeError,
                            "a DeviceArray in device memory has no host view: copy it with "
                            ".copy_to_host() (managed memory, from bindthem.cuda.managed_empty(), "
                            "has one)");
    if (!(view = bt_cudapy_managed_host_view(a, NULL)))
        return NULL;
    if (dtype != Py_None)
        out = PyObject_CallMethod(view, "astype", "O", dtype);
    else if (copy == Py_True)
        out = PyArray_NewCopy((PyArrayObject *)view, NPY_CORDER);
    else
        return view;
    Py_DECREF(view);
    return out;
}
