/* bt_cudapy_peer.c - peer access from Python; arrays used by a launch or copy on another device. */

#include "bt_cudapy_array.h"

/* Two device ordinals from args: (a, b) with b None meaning the current device. */
static int two_devices(BtState *st, PyObject *args, const char *fmt, int *a, int *b)
{
    PyObject *bo = Py_None;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTuple(args, fmt, a, &bo))
        return -1;
    if (bo == Py_None ? bt_cuda_current_device(b, &e) < 0 : 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (bo != Py_None && (*b = PyLong_AsLong(bo)) == -1 && PyErr_Occurred())
        return -1;
    return 0;
}

PyObject *bt_cudapy_can_access_peer(PyObject *module, PyObject *args)
{
    BtState *st = bt_state(module);
    int dev, peer, yes;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTuple(args, "ii:can_access_peer", &dev, &peer))
        return NULL;
    if (bt_cuda_can_access_peer(dev, peer, &yes, &e) < 0)
        return bt_raise_diag(st, &e);
    return PyBool_FromLong(yes);
}

/* enable_peer_access(peer, device) (on) and disable_peer_access. */
static PyObject *set_peer(PyObject *module, PyObject *args, int on)
{
    BtState *st = bt_state(module);
    int dev, peer, n, rc;
    BtDiag e;

    bt_diag_init(&e);
    if (two_devices(st, args, on ? "iO:enable_peer_access" : "iO:disable_peer_access", &peer,
                    &dev) < 0)
        return NULL;
    if (bt_cuda_device_count(&n, &e) < 0)
        return bt_raise_diag(st, &e);
    if (peer < 0 || peer >= n || dev < 0 || dev >= n)
        return PyErr_Format(PyExc_ValueError, "%s_peer_access(%d, device=%d): there %s %d device%s",
                            on ? "enable" : "disable", peer, dev, n == 1 ? "is" : "are", n,
                            n == 1 ? "" : "s");
    if (dev == peer)
        return PyErr_Format(PyExc_ValueError,
                            "%s_peer_access(%d, device=%d): a device reaches its own memory; "
                            "peer access is between two devices",
                            on ? "enable" : "disable", peer, dev);
    rc = on ? bt_cuda_enable_peer(dev, peer, &e) : bt_cuda_disable_peer(dev, peer, &e);
    if (rc < 0)
        return bt_raise_diag(st, &e);
    Py_RETURN_NONE;
}

PyObject *bt_cudapy_enable_peer(PyObject *module, PyObject *args)
{
    return set_peer(module, args, 1);
}

PyObject *bt_cudapy_disable_peer(PyObject *module, PyObject *args)
{
    return set_peer(module, args, 0);
}

int bt_cudapy_peer_ok(int dev, void *ctx, int peer, void *peer_ctx)
{
    void *p = NULL, *q = NULL;
    BtDiag e;

    bt_diag_init(&e);
    if (!bt_cuda_peer_enabled(dev, peer) || bt_cuda_primary_ctx(dev, &p, &e) < 0 ||
        bt_cuda_primary_ctx(peer, &q, &e) < 0)
        return 0;
    return (!ctx || ctx == p) && (!peer_ctx || peer_ctx == q);
}

int bt_cudapy_use_wait(PyObject *o, int dev, uint64_t ours, int write)
{
    BtDeviceArray *a = (BtDeviceArray *)o;
    BtState *st = bt_state_from_type(Py_TYPE(o));
    BtDiag e;
    int yes;

    bt_diag_init(&e);
    if (a->device == dev) {
        if (bt_cudapy_devarray_wait(a, ours, write, &e) < 0)
            goto error;
        return 0;
    }
    if (a->managed && (yes = bt_cuda_concurrent_managed(dev, &e)) <= 0) {
        if (yes < 0)
            goto error;
        PyErr_Format(PyExc_ValueError,
                     "a launch on device %d takes managed memory of device %d, but device %d has "
                     "no concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS "
                     "is 0); launch it on device %d",
                     dev, a->device, dev, a->device);
        return -1;
    }
    /* through the array's device's legacy stream: it waits for the array's
     * producers there, and `ours` waits for it */
    if (bt_cudapy_devarray_wait(a, BT_CUDA_STREAM_LEGACY, write, &e) < 0 ||
        bt_cuda_wait_across(dev, ours, a->device, BT_CUDA_STREAM_LEGACY, &e) < 0)
        goto error;
    return 0;
error:
    bt_raise_diag(st, &e);
    return -1;
}

int bt_cudapy_use_record(PyObject *o, int dev, uint64_t ours, PyObject *owner, int write)
{
    BtDeviceArray *a = (BtDeviceArray *)o;
    BtDiag e;

    bt_diag_init(&e);
    if (a->device != dev) {
        /* the use is recorded on the array's device's legacy stream, made
         * to wait for it: what waits for the array there waits for the use */
        if (bt_cuda_wait_across(a->device, BT_CUDA_STREAM_LEGACY, dev, ours, &e) < 0) {
            bt_raise_diag(bt_state_from_type(Py_TYPE(o)), &e);
            return -1;
        }
        ours = BT_CUDA_STREAM_LEGACY;
        owner = NULL;
    }
    return write ? bt_cudapy_devarray_wrote(o, ours, owner)
                 : bt_cudapy_devarray_read(o, ours, owner);
}

static int peer_copy(BtState *st, BtDeviceArray *a, BtDeviceArray *src, uint64_t stream,
                     PyObject *streamo)
{
    int sync = streamo == NULL || streamo == Py_None, rc;
    BtDiag e;

    bt_diag_init(&e);
    stream = stream ? stream : BT_CUDA_STREAM_LEGACY;
    if (bt_cudapy_use_wait((PyObject *)a, a->device, stream, 1) < 0 ||
        bt_cudapy_use_wait((PyObject *)src, a->device, stream, 0) < 0)
        return -1;
    Py_BEGIN_ALLOW_THREADS
    /* managed memory is not a device's: a plain copy, the driver finds the pages */
    rc = a->managed || src->managed
             ? bt_cuda_copy_d2d(a->device, a->ptr, src->ptr, a->nbytes, stream, sync, &e)
             : bt_cuda_copy_peer(a->device, a->ptr, src->device, src->ptr, a->nbytes, stream, sync,
                                 &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (sync) /* done: nothing to record */
        return 0;
    return bt_cudapy_use_record((PyObject *)a, a->device, stream, streamo, 1) < 0 ||
                   bt_cudapy_use_record((PyObject *)src, a->device, stream, streamo, 0) < 0
               ? -1
               : 0;
}

PyObject *bt_cudapy_peer_copy_from(BtDeviceArray *a, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"src", "stream", NULL};
    BtState *st = bt_state_from_type(Py_TYPE(a));
    PyObject *srco, *streamo = Py_None;
    BtDeviceArray *src;
    uint64_t stream = 0;
    int same;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:copy_from", kwlist, &srco, &streamo))
        return NULL;
    src = (BtDeviceArray *)srco;
    if (!Py_IS_TYPE(srco, st->DeviceArrayType) || src->device == a->device ||
        !PyArray_EquivTypes(src->dtype, a->dtype))
        return bt_cudapy_devarray_copy_from(a, args, kwargs); /* its checks, its messages */
    same = PyObject_RichCompareBool(src->shape, a->shape, Py_EQ);
    if (same <= 0)
        return same < 0 ? NULL : bt_cudapy_devarray_copy_from(a, args, kwargs);
    if (bt_cudapy_stream_arg(streamo, "copy_from", 0, &stream) < 0 ||
        peer_copy(st, a, src, stream, streamo) < 0)
        return NULL;
    return Py_NewRef(a);
}
