/* bt_cudapy_memory.c - DeviceArrays made (to_device, empty, zeros), written, copied; pinned. */

#include "bt_cudapy_array.h"
#include "bt_cudapy_graph.h"

#include "pythread.h"

#include <string.h>

/* A DeviceArray of shape and dtype (stolen) on device, without memory yet. */
static BtDeviceArray *devarray_make(BtState *st, PyObject *shape, PyArray_Descr *dtype, int device)
{
    BtDeviceArray *a = NULL;
    PyObject *dims = NULL;
    Py_ssize_t i, n = 1, nd = PyTuple_GET_SIZE(shape), elsize = PyDataType_ELSIZE(dtype);

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
    a = PyObject_New(BtDeviceArray, st->DeviceArrayType);
    if (!a)
        goto error;
    a->ptr = 0;
    a->stream = 0;
    a->stream_owner = NULL;
    a->event = NULL;
    a->has_event = 0;
    a->writer = 0;
    a->n_readers = 0;
    memset(a->readers, 0, sizeof a->readers);
    a->base = NULL;
    a->pooled = 0;
    a->gen = 0;
    a->managed = 0;
    a->readonly = 0;
    a->nbytes = (size_t)(n * elsize);
    a->size = n;
    a->device = device;
    a->code = bt_slot_descr_code((PyObject *)dtype);
    a->shape = dims;
    a->dtype = dtype;
    return a;
error:
    Py_XDECREF(dims);
    Py_XDECREF(dtype);
    return NULL;
}

/* A stream object (bindthem's, CuPy's, PyTorch's) destroys its CUstream
 * when it goes: held while an array may still be waited on for it. */
static PyObject *stream_owner(PyObject *owner)
{
    return owner && owner != Py_None && !PyLong_Check(owner) ? Py_NewRef(owner) : NULL;
}

/* References an array's section lets go of, released after it: a stream
 * object's dealloc may block, which would suspend the section midway. */
typedef struct Dropped {
    PyObject *o[BT_CUDA_MAX_READERS + 1];
    int n;
} Dropped;

static void drop_later(Dropped *d, PyObject **slot)
{
    if (*slot)
        d->o[d->n++] = *slot;
    *slot = NULL;
}

static void drop_now(Dropped *d)
{
    while (d->n > 0)
        Py_DECREF(d->o[--d->n]);
}

/* The pending reads are waited for (or done): forgotten, events kept (a's
 * section held). */
static void forget_readers(BtDeviceArray *a, Dropped *d)
{
    int i;

    for (i = 0; i < a->n_readers; i++) {
        a->readers[i].stream = 0;
        drop_later(d, &a->readers[i].owner);
    }
    a->n_readers = 0;
}

PyObject *bt_cudapy_devarray_new_on(BtState *st, PyObject *shape, PyArray_Descr *dtype, int device,
                                    uint64_t stream, PyObject *owner)
{
    BtDeviceArray *a = devarray_make(st, shape, dtype, device);
    BtDiag e;

    bt_diag_init(&e);
    if (!a)
        return NULL;
    if (bt_cudapy_capture_alloc(device, a->nbytes, stream, &a->ptr, &a->pooled, &e) < 0) {
        Py_DECREF(a);
        return bt_raise_diag(st, &e);
    }
    if (a->pooled && bt_cudapy_devarray_wrote((PyObject *)a, stream, owner) < 0)
        Py_CLEAR(a);
    return (PyObject *)a;
}

BtDeviceArray *bt_cudapy_devarray_shell(BtState *st, PyObject *shape, PyArray_Descr *dtype,
                                        int device)
{
    return devarray_make(st, shape, dtype, device);
}

PyObject *bt_cudapy_devarray_view(BtState *st, PyObject *base, uint64_t ptr, size_t nbytes,
                                  PyObject *dtype, int device, int readonly)
{
    PyArray_Descr *d = (PyArray_Descr *)dtype;
    Py_ssize_t elsize = PyDataType_ELSIZE(d);
    PyObject *shape, *n;
    BtDeviceArray *a;

    if (elsize <= 0 || nbytes % (size_t)elsize) {
        PyErr_Format(PyExc_ValueError, "%zu bytes are not a whole number of %S elements", nbytes,
                     dtype);
        Py_DECREF(dtype);
        return NULL;
    }
    n = PyLong_FromSize_t(nbytes / (size_t)elsize);
    shape = n ? PyTuple_Pack(1, n) : NULL;
    Py_XDECREF(n);
    if (!shape) {
        Py_DECREF(dtype);
        return NULL;
    }
    a = devarray_make(st, shape, d, device);
    Py_DECREF(shape);
    if (!a)
        return NULL;
    a->ptr = ptr;
    a->base = Py_NewRef(base);
    a->readonly = readonly;
    return (PyObject *)a;
}

int bt_cudapy_devarray_wrote(PyObject *o, uint64_t stream, PyObject *owner)
{
    BtDeviceArray *a = (BtDeviceArray *)o;
    Dropped d = {.n = 0};
    BtDiag e;
    int rc = bt_cudapy_capture_use(o, stream, 1); /* captured: no state (bt_cudapy_capture.c) */

    if (rc != 0)
        return rc < 0 ? -1 : 0;
    bt_diag_init(&e);
    BT_FT_BEGIN(o);
    drop_later(&d, &a->stream_owner);
    a->stream = stream ? stream : BT_CUDA_STREAM_LEGACY;
    a->stream_owner = stream_owner(owner);
    forget_readers(a, &d); /* the write waited for them */
    a->has_event = 0;
    a->gen++;
    if (stream == BT_CUDA_STREAM_PER_THREAD) {
        if (bt_cuda_record_in(a->device, &a->event, stream, &e) < 0) {
            a->stream = 0; /* nothing to wait on that means the same in every thread */
            rc = -1;
        } else {
            a->has_event = 1;
            a->writer = PyThread_get_thread_ident();
        }
    }
    BT_FT_END();
    drop_now(&d);
    if (rc < 0)
        bt_raise_diag(bt_state_from_type(Py_TYPE(a)), &e);
    return rc;
}

int bt_cudapy_devarray_read(PyObject *o, uint64_t stream, PyObject *owner)
{
    BtDeviceArray *a = (BtDeviceArray *)o;
    BtCudaReader *r = NULL;
    unsigned long me = PyThread_get_thread_ident();
    int i, ptds;
    BtDiag e;

    Dropped d = {.n = 0};
    int rc = bt_cudapy_capture_use(o, stream, 0); /* captured: no state (bt_cudapy_capture.c) */

    if (rc != 0)
        return rc < 0 ? -1 : 0;
    stream = stream ? stream : BT_CUDA_STREAM_LEGACY;
    ptds = stream == BT_CUDA_STREAM_PER_THREAD;
    bt_diag_init(&e);
    BT_FT_BEGIN(o);
    for (i = 0; i < a->n_readers && !r; i++)
        if (a->readers[i].stream == stream && (!ptds || a->readers[i].thread == me))
            r = &a->readers[i];
    if (!r && a->n_readers == BT_CUDA_MAX_READERS) {
        /* this stream waits for the oldest reader and stands for both */
        r = &a->readers[0];
        if (bt_cuda_wait_in(a->device, stream, r->stream,
                            r->stream == BT_CUDA_STREAM_PER_THREAD ? r->event : NULL, &e) < 0)
            rc = -1;
        else
            drop_later(&d, &r->owner);
    } else if (!r) {
        r = &a->readers[a->n_readers++];
    } else if (!ptds) {
        r = NULL; /* a later wait on the stream waits for this read too */
    }
    if (rc == 0 && r) {
        r->stream = stream;
        r->thread = me;
        if (!r->owner)
            r->owner = stream_owner(owner);
        a->gen++;
        if (ptds && bt_cuda_record_in(a->device, &r->event, stream, &e) < 0)
            rc = -1;
    }
    BT_FT_END();
    drop_now(&d);
    if (rc < 0)
        bt_raise_diag(bt_state_from_type(Py_TYPE(a)), &e);
    return rc;
}

/* bt_cudapy_devarray_wait, a's section held. */
static int wait_locked(BtDeviceArray *a, uint64_t waiter, int write, BtDiag *e)
{
    /* during a capture (bt_cudapy_capture.c) */
    int i = bt_cudapy_capture_wait(a, waiter, write, e);

    if (i != 0)
        return i < 0 ? -1 : 0;

    waiter = waiter ? waiter : BT_CUDA_STREAM_LEGACY;
    /* (a write on the launch's own stream is ordered already) */
    if (a->stream && (a->stream != waiter || a->has_event) &&
        bt_cuda_wait_in(a->device, waiter, a->stream, a->has_event ? a->event : NULL, e) < 0)
        return -1;
    for (i = 0; write && i < a->n_readers; i++) {
        const BtCudaReader *r = &a->readers[i];
        /* a read on the per-thread stream is waited for through its event;
         * one on the last writer's stream by the wait for the writer (made
         * now, so after the read) */
        if (r->stream == a->stream && !a->has_event && r->stream != BT_CUDA_STREAM_PER_THREAD)
            continue;
        if ((r->stream != waiter || r->stream == BT_CUDA_STREAM_PER_THREAD) &&
            bt_cuda_wait_in(a->device, waiter, r->stream,
                            r->stream == BT_CUDA_STREAM_PER_THREAD ? r->event : NULL, e) < 0)
            return -1;
    }
    return 0;
}

int bt_cudapy_devarray_wait(BtDeviceArray *a, uint64_t waiter, int write, BtDiag *e)
{
    int rc;

    BT_FT_BEGIN(a);
    rc = wait_locked(a, waiter, write, e);
    BT_FT_END();
    return rc;
}

/* a's last write is done (a synchronous copy waited for it): nothing to
 * wait for but its pending reads, and not them either for a write
 * (`readers`: the copy waited for them too). Only if a's ordering state
 * is still what the copy saw (`gen`): a write or read another thread
 * recorded meanwhile is kept, to be waited for. */
static void settled(BtDeviceArray *a, uint64_t gen, int readers)
{
    Dropped d = {.n = 0};

    BT_FT_BEGIN(a);
    if (a->gen == gen) {
        a->stream = 0;
        a->has_event = 0;
        drop_later(&d, &a->stream_owner);
        if (readers)
            forget_readers(a, &d);
    }
    BT_FT_END();
    drop_now(&d);
}

int bt_cudapy_wait_for(PyObject *o, uint64_t waiter, int write, BtDiag *e)
{
    BtState *st = bt_state_from_type(Py_TYPE(o));

    if (Py_TYPE(o) != st->DeviceArrayType)
        return 0;
    return bt_cudapy_devarray_wait((BtDeviceArray *)o, waiter, write, e);
}

/* Copies a's bytes into host memory dst (len a->nbytes). stream: the
 * caller's (NULL/None: the stream of a's last write, synchronously);
 * with a stream, queued there after a's last write, synchronous unless
 * `async`. The GIL is released while it waits. */
static int copy_out(BtState *st, BtDeviceArray *a, void *dst, PyObject *stream, int async)
{
    uint64_t s = 0, gen;
    BtDiag e;
    int rc, given = stream && stream != Py_None;

    bt_diag_init(&e);
    if (given) {
        if (bt_cudapy_stream_arg(stream, "copy_to_host", 0, &s) < 0)
            return -1;
    } else {
        async = 0;
    }
    /* after the last write: its event (per-thread stream) or its stream;
     * never on another thread's handle 2: the legacy stream waits for the
     * event instead */
    BT_FT_BEGIN(a);
    if (!given)
        s = a->has_event && a->writer != PyThread_get_thread_ident() ? BT_CUDA_STREAM_LEGACY
                                                                     : a->stream;
    gen = a->gen;
    rc = wait_locked(a, s, 0, &e);
    BT_FT_END();
    if (rc < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_copy(a->device, BT_CUDA_DTOH, a->ptr, dst, a->nbytes, s, 0, !async, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (!async) { /* the last write is done: nothing left to wait for */
        settled(a, gen, 0);
        return 0;
    }
    return bt_cudapy_devarray_read((PyObject *)a, s, stream);
}

PyObject *bt_cudapy_devarray_copy_to_host(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "out", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *stream = NULL, *outo = NULL;
    PyArrayObject *out;
    uint64_t s = 0;
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
        if (copy_out(st, a, PyArray_DATA(out), stream, 1) < 0 ||
            (stream && bt_cudapy_stream_arg(stream, "copy_to_host", 0, &s) < 0) ||
            bt_cudapy_capture_keep((PyObject *)a, s, outo) < 0)
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

/* ================= copies into a DeviceArray ================= */

/* Copies src (a DeviceArray: device to device; else anything NumPy reads,
 * safely cast to a's dtype: host to device) into a, same shape. stream=None:
 * synchronous; else queued on stream after a's last write and pending reads
 * and src's last write (their events for the per-thread stream), recorded
 * as a write of a and a read of src. The GIL is released while it waits.
 * Arrays of one device: a copy across devices is bt_cudapy_peer_copy_from's
 * (the type's copy_from), which hands the rest here. */
static int copy_into(BtState *st, BtDeviceArray *a, PyObject *src, PyObject *streamo)
{
    BtDeviceArray *d = NULL;
    PyArrayObject *h = NULL;
    uint64_t stream = 0, gen;
    PyObject *shape = NULL;
    BtDiag e;
    int rc = -1, same, sync = streamo == NULL || streamo == Py_None;

    bt_diag_init(&e);
    if (!sync && bt_cudapy_stream_arg(streamo, "copy_from", 0, &stream) < 0)
        return -1;
    if (Py_IS_TYPE(src, st->DeviceArrayType)) {
        d = (BtDeviceArray *)src;
        shape = Py_NewRef(d->shape);
        if (!PyArray_EquivTypes(d->dtype, a->dtype)) {
            PyErr_Format(PyExc_TypeError,
                         "copy_from(): the source is a device array of %S, this one holds %S; "
                         "a device-to-device copy does not convert (copy to the host and back, "
                         "or run a kernel that converts)",
                         d->dtype, a->dtype);
            goto done;
        }
    } else {
        Py_INCREF(a->dtype);
        h = (PyArrayObject *)PyArray_FromAny(src, a->dtype, 0, 0,
                                             NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED, NULL);
        if (!h)
            goto done;
        shape = PyObject_GetAttrString((PyObject *)h, "shape");
        if (!shape)
            goto done;
    }
    same = PyObject_RichCompareBool(shape, a->shape, Py_EQ);
    if (same < 0)
        goto done;
    if (!same) {
        PyErr_Format(PyExc_ValueError,
                     "copy_from(): the source has shape %R, this device array %R; shapes must "
                     "match",
                     shape, a->shape);
        goto done;
    }
    if (d && d->device != a->device) { /* (bt_cudapy_peer_copy_from takes these) */
        PyErr_Format(PyExc_ValueError, "copy_from(): the source is on device %d, this array on %d",
                     d->device, a->device);
        goto done;
    }
    /* both arrays' states at once (d is a when copied into itself) */
    BT_FT_BEGIN2(a, d ? d : a);
    gen = a->gen;
    rc = wait_locked(a, stream, 1, &e) < 0 || (d && wait_locked(d, stream, 0, &e) < 0) ? -1 : 0;
    BT_FT_END2();
    if (rc < 0) {
        bt_raise_diag(st, &e);
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    rc = d ? bt_cuda_copy_d2d(a->device, a->ptr, d->ptr, a->nbytes, stream, sync, &e)
           : bt_cuda_copy(a->device, BT_CUDA_HTOD, a->ptr, PyArray_DATA(h), a->nbytes, stream, 0,
                          sync, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        bt_raise_diag(st, &e);
        goto done;
    }
    if (sync) {
        settled(a, gen, 1); /* the copy waited for the reads too and is done */
    } else if (bt_cudapy_devarray_wrote((PyObject *)a, stream, streamo) < 0 ||
               (d && bt_cudapy_devarray_read((PyObject *)d, stream, streamo) < 0) ||
               (h && bt_cudapy_capture_keep((PyObject *)a, stream, (PyObject *)h) < 0)) {
        rc = -1;
    }
done:
    Py_XDECREF(shape);
    Py_XDECREF(h);
    return rc;
}

PyObject *bt_cudapy_devarray_copy_from(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"src", "stream", NULL};
    PyObject *src, *stream = Py_None;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:copy_from", kwlist, &src, &stream))
        return NULL;
    if (copy_into(bt_state_from_type(Py_TYPE(a)), a, src, stream) < 0)
        return NULL;
    return Py_NewRef(a);
}

PyObject *bt_cudapy_devarray_copy(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *stream = Py_None, *out;
    uint64_t s = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$O:copy", kwlist, &stream) ||
        bt_cudapy_stream_arg(stream, "copy", 0, &s) < 0)
        return NULL;
    Py_INCREF(a->dtype);
    out = bt_cudapy_devarray_new_on(st, a->shape, a->dtype, a->device, s, stream);
    if (out && copy_into(st, (BtDeviceArray *)out, (PyObject *)a, stream) < 0)
        Py_CLEAR(out);
    return out;
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
    out = bt_cudapy_devarray_new_on(st, shape, PyArray_DESCR(arr), dev, stream, streamo);
    if (!out)
        goto done;
    /* stream=None: synchronous; else queued on the stream, which the array
     * then records as its last write's */
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_copy(dev, BT_CUDA_HTOD, ((BtDeviceArray *)out)->ptr, PyArray_DATA(arr),
                      (size_t)PyArray_NBYTES(arr), stream, 0, streamo == Py_None, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        Py_CLEAR(out);
        bt_raise_diag(st, &e);
    } else if (streamo == Py_None) { /* synchronous: the allocation and the copy are done */
        settled((BtDeviceArray *)out, ((BtDeviceArray *)out)->gen, 0); /* (not shared yet) */
    } else if (bt_cudapy_devarray_wrote(out, stream, streamo) < 0 ||
               bt_cudapy_capture_keep(out, stream, (PyObject *)arr) < 0) {
        Py_CLEAR(out);
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

/* empty(shape, dtype, *, device, stream) and zeros(...): zero is set. */
static PyObject *make_empty(PyObject *module, PyObject *args, PyObject *kwargs, int zero)
{
    static char *kwlist[] = {"shape", "dtype", "device", "stream", NULL};
    BtState *st = bt_state(module);
    PyObject *shapeo, *dto = NULL, *devo = NULL, *shape = NULL, *out = NULL, *streamo = Py_None;
    PyArray_Descr *dtype = NULL;
    uint64_t stream = 0;
    BtDiag e;
    int dev;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, zero ? "O|O$OO:zeros" : "O|O$OO:empty", kwlist,
                                     &shapeo, &dto, &devo, &streamo))
        return NULL;
    if (bt_cudapy_stream_arg(streamo, zero ? "zeros" : "empty", 0, &stream) < 0 ||
        dtype_arg(dto, zero ? "zeros" : "empty", &dtype) < 0)
        return NULL;
    shape = PyLong_Check(shapeo) ? PyTuple_Pack(1, shapeo) : PySequence_Tuple(shapeo);
    if (!shape || device_arg(st, devo, &dev) < 0)
        goto done;
    out = bt_cudapy_devarray_new_on(st, shape, dtype, dev, stream, streamo);
    dtype = NULL;
    if (out && zero) {
        BtDeviceArray *a = (BtDeviceArray *)out;
        bt_diag_init(&e);
        if (bt_cuda_memset(dev, a->ptr, a->nbytes, stream, &e) < 0) {
            Py_CLEAR(out);
            bt_raise_diag(st, &e);
        } else if (bt_cudapy_devarray_wrote(out, stream, streamo) < 0) {
            Py_CLEAR(out);
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
