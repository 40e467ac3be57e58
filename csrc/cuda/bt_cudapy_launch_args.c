/* bt_cudapy_launch_args.c - a launch's arguments as the dispatcher reads them; device checks. */

#include "bt_cudapy_kernel_impl.h"

#include <stdio.h>
#include <string.h>

/* Does some overload take an array as parameter `name`? */
static int takes_array(const BtCudaKernel *k, PyObject *name)
{
    int o, i;

    for (o = 0; o < k->d.n_ovs; o++) {
        PyObject *names = k->d.groups[k->d.ov_group[o]].names;
        for (i = 0; i < PyTuple_GET_SIZE(names); i++)
            if (k->d.slots[o][i].is_array &&
                PyUnicode_Compare(PyTuple_GET_ITEM(names, i), name) == 0)
                return 1;
    }
    return 0;
}

/* bt_dispatch_pick's ready(): kernel(...)'s configuration keywords. */
int bt_cudapy_launch_ready(void *ctx)
{
    BtLaunchReading *r = ctx;
    PyObject **kw = r->cfg_kw;
    const char *kname = r->k->d.cname;
    int i;

    for (i = 0; i < BT_CUDAPY_N_CFG; i++)
        if (kw[i] && (r->given >> i & 1)) {
            PyErr_Format(PyExc_TypeError,
                         "%U[...](): %s given both in the brackets and as %s=", r->k->d.name,
                         bt_cudapy_cfg_names[i], bt_cudapy_cfg_names[i]);
            return -1;
        }
    if (!r->given && (!kw[0] || !kw[1])) {
        PyErr_Format(PyExc_TypeError,
                     "%U() needs grid= and block= (or launch it as %U[grid, block](...))",
                     r->k->d.name, r->k->d.name);
        return -1;
    }
    if ((kw[0] && bt_cudapy_config_dims(kw[0], "grid", kname, r->cfg->grid) < 0) ||
        (kw[1] && bt_cudapy_config_dims(kw[1], "block", kname, r->cfg->block) < 0) ||
        (kw[2] && bt_cudapy_config_shared(kw[2], kname, &r->cfg->shared) < 0) ||
        (kw[3] && bt_cudapy_stream_arg(kw[3], kname, 1, &r->cfg->stream) < 0))
        return -1;
    if (kw[3])
        r->cfg->stream_obj = kw[3]; /* borrowed from the call's arguments */
    return bt_cudapy_config_attrs(kw[4], kw[5], kw[6], kname, r->cfg);
}

/* bt_dispatch_pick's code(): reads argument j as a launch sees it. */
int bt_cudapy_launch_code(PyObject *o, int j, PyObject *name, void *ctx)
{
    BtLaunchReading *r = ctx;
    BtCudaArg *a = &r->a[j];

    r->read[j] = 1;
    if (j >= r->n_read)
        r->n_read = j + 1;
    if (bt_cudapy_read_arg(r->st, o, r->cfg->stream, r->k->d.cname, name, a) < 0)
        return -1;
    if (a->kind == BT_CUDA_ARG_HOST && takes_array(r->k, name)) {
        PyErr_Format(PyExc_TypeError,
                     "%U(): argument '%U' is an array in host memory; CUDA kernels "
                     "take device arrays: pass bindthem.cuda.to_device(%U) (and read "
                     "results back with .copy_to_host())",
                     r->k->d.name, name, name);
        return -1;
    }
    return a->code;
}

/* New reference: "DeviceArray of float32", "numpy.int64", ... */
PyObject *bt_cudapy_launch_given(PyObject *o, int j, void *ctx)
{
    const BtCudaArg *a = &((BtLaunchReading *)ctx)->a[j];
    if (a->kind == BT_CUDA_ARG_DEVICE)
        return PyUnicode_FromFormat("%s (a device array of %s, via %s)", Py_TYPE(o)->tp_name,
                                    bt_slot_code_name(a->code), a->via);
    return bt_slot_describe(o);
}

const char *bt_cudapy_launch_wants(const BtArgSlot *s, char *buf, size_t size)
{
    if (s->is_array) {
        snprintf(buf, size, "%s device array", bt_type(s->type)->npname);
        return buf;
    }
    return bt_slot_wants(s, buf, size);
}

/* Checks that array argument a is device memory, on the launch's one
 * device and in its one context; fills *dev and *ctx (first seen). */
static int check_device(BtState *st, const BtCudaKernel *k, PyObject *name, const BtCudaArg *a,
                        int *dev, void **ctx, PyObject **dev_name)
{
    BtCudaPtrInfo info;
    BtDiag e;
    char label[300], other[300], addr[32];

    if (a->n == 0 && a->ptr == 0)
        return 0;
    bt_diag_init(&e);
    if (a->array) {
        /* bindthem's own DeviceArray: device memory of its device's primary
         * context, known without asking the driver */
        memset(&info, 0, sizeof info);
        info.memtype = 2;
        info.device = a->device;
        info.managed = bt_cudapy_is_managed(a->array);
        if (bt_cuda_primary_ctx(a->device, &info.ctx, &e) < 0) {
            bt_raise_diag(st, &e);
            return -1;
        }
    } else if (bt_cuda_pointer_info(a->ptr, &info, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (!(info.memtype == 2 || info.memtype == 4 || info.managed ||
          (info.memtype == 1 && info.devptr == a->ptr))) {
        snprintf(addr, sizeof addr, "0x%llx", (unsigned long long)a->ptr);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' (via %s) points at %s, which is %s; kernels "
                     "need device memory: copy it with bindthem.cuda.to_device()",
                     k->d.cname, name, a->via, addr,
                     info.memtype == 1 ? "host memory that the device cannot address"
                                       : "not memory CUDA knows of (host memory?)");
        return -1;
    }
    if (info.device < 0 || info.managed)
        return 0;
    if (*dev < 0) {
        *dev = info.device;
        *ctx = info.ctx;
        *dev_name = name;
        return 0;
    }
    if (info.device == *dev && info.ctx && *ctx && info.ctx != *ctx) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' belongs to another CUDA context than '%U' (on the same "
                     "device); all arrays of a launch must be in one context",
                     k->d.cname, name, *dev_name);
        return -1;
    }
    if (info.device != *dev && !bt_cudapy_peer_ok(*dev, *ctx, info.device, info.ctx)) {
        bt_cuda_device_label(info.device, label, sizeof label);
        bt_cuda_device_label(*dev, other, sizeof other);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is on %s, but '%U' is on %s; all arrays of a launch "
                     "must be on one device (the launch runs on its first array's), unless peer "
                     "access lets that device reach the other's memory: call "
                     "bindthem.cuda.enable_peer_access(%d, device=%d) first",
                     k->d.cname, name, label, *dev_name, other, info.device, *dev);
        return -1;
    }
    return 0;
}

/* bt_slot_walk's reader: device array argument i as the dispatcher read it
 * (device memory is aligned for any element type), checked to be on the
 * launch's one device and in its one context. 0 or -1. */
int bt_cudapy_launch_device_arg(void *ctx, PyObject *const *args, int i, BtArrayArg *arr)
{
    BtLaunchArrays *ar = ctx;
    const BtCudaArg *a = &ar->r->a[ar->p->src[i]];

    arr->addr = a->ptr;
    arr->flags = (a->contiguous ? BT_ARR_C_CONTIGUOUS : 0) | BT_ARR_ALIGNED |
                 (a->readonly ? 0 : BT_ARR_WRITEABLE);
    arr->ndim = a->ndim;
    arr->dims = a->shape;
    arr->via = a->via;
    (void)args; /* read by the dispatcher: ar->r */
    return check_device(ar->r->st, ar->r->k, PyTuple_GET_ITEM(ar->p->names, i), a, &ar->dev,
                        &ar->ctx, &ar->dev_name);
}
