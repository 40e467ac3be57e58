/* bt_cudapy_queue.c - one launch queued: context, CUfunction, waits, the launch, its writes. */

#include "bt_cudapy_kernel_impl.h"

#include "bt_cudapy_graph.h"

#include <stdio.h>
#include <string.h>

/* The context to launch in: the arrays' (*ctx, from
 * CU_POINTER_ATTRIBUTE_CONTEXT), else the thread's current one when it is
 * on dev, else dev's primary one. A cuModuleLoadDataEx module runs only in
 * its device's primary context. */
static int launch_context(BtState *st, const BtCudaKernel *k, int dev, void **ctx, PyObject *who)
{
    void *primary, *cur;
    BtDiag e;
    int cdev;

    bt_diag_init(&e);
    if (bt_cuda_primary_ctx(dev, &primary, &e) < 0)
        goto error;
    if (!*ctx) {
        if (bt_cuda_current_ctx(&cur, &e) < 0 || (cur && bt_cuda_current_device(&cdev, &e) < 0))
            goto error;
        *ctx = cur && cdev == dev && k->module_device < 0 ? cur : primary;
        return 0;
    }
    if (*ctx != primary && k->module_device >= 0) {
        PyErr_Format(PyExc_ValueError,
                     "%U(): argument '%U' is memory of a CUDA context that is not device %d's "
                     "primary one (cuCtxCreate, PyCUDA's make_context), and this module was "
                     "loaded with cuModuleLoadDataEx into the primary context (drivers before "
                     "12.0); allocate it in the primary context (bindthem.cuda, CuPy, PyTorch "
                     "do) or use a 12.0+ driver",
                     k->d.name, who, dev);
        return -1;
    }
    return 0;
error:
    bt_raise_diag(st, &e);
    return -1;
}

/* "void axpy<float>(...) launch with grid=(1,1,1) block=(256,1,1)": what
 * launch errors start with, into buf. */
static void launch_label(const BtCudaKernel *k, int ov, const BtLaunchConfig *c, char *buf,
                         size_t size)
{
    const char *sig = PyUnicode_AsUTF8(PyTuple_GET_ITEM(k->d.overloads, ov));
    int n;

    if (!sig) {
        PyErr_Clear();
        sig = k->d.cname;
    }
    n = snprintf(buf, size, "%s launch with grid=(%u,%u,%u) block=(%u,%u,%u)", sig, c->grid[0],
                 c->grid[1], c->grid[2], c->block[0], c->block[1], c->block[2]);
    if (c->shared && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " shared_mem=%u", c->shared);
}

/* Raises e with the launch's label in front of its message. */
static void raise_launch(BtState *st, const BtCudaKernel *k, int ov, const BtLaunchConfig *c,
                         BtDiag *e)
{
    char label[1024];
    size_t n;

    if (bt_cuda_is_sticky(e->code)) { /* an earlier kernel's fault: this launch is innocent */
        bt_raise_diag(st, e);
        return;
    }
    launch_label(k, ov, c, label, sizeof label);
    n = strlen(label) + 2; /* "label: message", the message's tail cut if need be */
    memmove(e->message + n, e->message, sizeof e->message - n);
    memcpy(e->message, label, n - 2);
    memcpy(e->message + n - 2, ": ", 2);
    e->message[sizeof e->message - 1] = '\0';
    bt_raise_diag(st, e);
}

/* Dynamic shared memory above 48 KiB needs the kernel's opt-in attribute,
 * set once per overload, device and size increase; a size above the
 * device's opt-in maximum is refused before the driver sees it. */
static int allow_shared(BtState *st, BtCudaKernel *k, int ov, int dev, const BtLaunchConfig *c)
{
    unsigned *ok = &k->shared_ok[ov * BT_CUDA_MAX_DEVICES + dev], optin = 0, stat = 0;
    char label[1024], name[300];
    BtDiag e;
    int rc;

    if (c->shared <= 48 * 1024 || c->shared <= BT_FT_LOAD_RELAXED(ok))
        return 0;
    /* the attribute only grows, so a launch that read a larger *ok is not
     * undercut by a thread setting a smaller size */
    BT_FT_LOCK(&k->shared_lock);
    if (c->shared <= *ok) {
        BT_FT_UNLOCK(&k->shared_lock);
        return 0;
    }
    bt_diag_init(&e);
    rc = bt_cuda_kernel_shared(k->kernels[ov], dev, c->shared, &optin, &stat, &e);
    if (rc == 0)
        BT_FT_STORE_RELAXED(ok, c->shared);
    BT_FT_UNLOCK(&k->shared_lock);
    if (rc < 0) {
        raise_launch(st, k, ov, c, &e);
        return -1;
    }
    if (rc == 1) {
        launch_label(k, ov, c, label, sizeof label);
        bt_cuda_device_label(dev, name, sizeof name);
        PyErr_Format(PyExc_ValueError,
                     "%s: shared_mem=%u bytes is more than %s allows: at most %u bytes of "
                     "shared memory per block (the opt-in maximum), of which the kernel "
                     "uses %u statically, so shared_mem may be at most %u",
                     label, c->shared, name, optin, stat, optin > stat ? optin - stat : 0);
        return -1;
    }
    return 0;
}

/* The CUfunction of overload ov in the current context ctx (on device
 * dev), resolved once per (kernel, context): cuKernelGetFunction loads the
 * kernel into the context and may run a JIT deferred by lazy loading, so it
 * runs without the GIL. NULL with an exception set. */
static void *function_in(BtCudaKernel *k, int ov, int dev, void *ctx, const BtLaunchConfig *c)
{
    size_t i = (size_t)ov * BT_CUDA_MAX_DEVICES + (size_t)dev;
    void *f = NULL, *kernel = k->kernels[ov];
    const char *name = k->d.cname;
    BtDiag e;
    int rc;

    BT_FT_LOCK(&k->shared_lock);
    if (k->funcs[i] && k->func_ctx[i] == ctx)
        f = k->funcs[i];
    BT_FT_UNLOCK(&k->shared_lock);
    if (f)
        return f;
    bt_diag_init(&e);
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_kernel_function(k->cmod, kernel, name, &f, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        raise_launch(bt_state_from_type(Py_TYPE(k)), k, ov, c, &e);
        return NULL;
    }
    BT_FT_LOCK(&k->shared_lock);
    k->funcs[i] = f;
    k->func_ctx[i] = ctx;
    BT_FT_UNLOCK(&k->shared_lock);
    return f;
}

/* The device to launch on: the arrays' (*dev), else the current one; a
 * cuModuleLoadDataEx module's only. 0 or -1. */
static int launch_device(BtState *st, const BtCudaKernel *k, int *dev)
{
    BtDiag e;

    bt_diag_init(&e);
    if (*dev < 0 && bt_cuda_current_device(dev, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    if (k->module_device >= 0 && *dev != k->module_device) {
        PyErr_Format(PyExc_ValueError,
                     "%U(): the arrays are on device %d, but this module was loaded into "
                     "device %d's context (drivers before 12.0 have no context-independent "
                     "cuLibrary); load the module again on device %d",
                     k->d.name, *dev, k->module_device, *dev);
        return -1;
    }
    return 0;
}

/* The launch's stream `ours` waits for each array's producer: a CAI v3
 * stream; a DeviceArray's last write (its event for the per-thread
 * stream) and, when the launch writes it, its pending reads on other
 * streams (DLPack producers did it). 0 or -1. */
static int wait_producers(const BtLaunchReading *r, const BtCall *call, const BtDispatchPick *p,
                          int dev, uint64_t ours)
{
    BtDiag e;
    int i;

    bt_diag_init(&e);
    for (i = 0; i < call->n_py; i++) {
        const BtCudaArg *a;
        int writes = !call->slots[i].is_const;
        if (!call->slots[i].is_array || p->src[i] < 0) /* (< 0: a scalar's default) */
            continue;
        a = &r->a[p->src[i]];
        if (a->array) { /* (on another device: peer or managed memory) */
            if (bt_cudapy_use_wait(a->array, dev, ours, writes) < 0)
                return -1;
        } else if (a->has_stream && bt_cudapy_capture_stream_wait(ours, a->stream, &e) < 0) {
            bt_raise_diag(r->st, &e);
            return -1;
        }
    }
    return 0;
}

/* Records the launch on `ours` as each DeviceArray argument's reader or
 * its last writer. 0 or -1. */
static int record_uses(const BtLaunchReading *r, const BtCall *call, const BtDispatchPick *p,
                       int dev, uint64_t ours)
{
    PyObject *stream = r->cfg->stream_obj;
    int i;

    for (i = 0; i < call->n_py; i++) {
        PyObject *o = call->slots[i].is_array && p->src[i] >= 0 ? r->a[p->src[i]].array : NULL;
        if (!o)
            continue;
        if (bt_cudapy_use_record(o, dev, ours, stream, !call->slots[i].is_const) < 0)
            return -1;
    }
    return 0;
}

/* Binds, checks, marshals and queues a launch of k with cfg; given: the
 * items a Launch's brackets fixed (0 for kernel(..., grid=, block=)). */
PyObject *bt_cudapy_kernel_launch(BtCudaKernel *k, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames, BtLaunchConfig *cfg, int given)
{
    PyObject *cfg_kw[BT_CUDAPY_N_CFG] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    BtDispatchExtra extra = {bt_cudapy_cfg_names, BT_CUDAPY_N_CFG, cfg_kw};
    BtLaunchReading r;
    BtDispatchHow how = {bt_cudapy_launch_ready, bt_cudapy_launch_code, bt_cudapy_launch_given,
                         bt_cudapy_launch_wants, &r};
    BtDispatchPick p;
    BtValue vals[BT_MAX_PARAMS];
    void *params[BT_MAX_PARAMS];
    const BtArgOut out = {BT_OUT_VALUES, vals, NULL, params};
    BtLaunchArrays ar = {&r, &p, -1, NULL, NULL};
    BtArgSource src = {NULL, bt_cudapy_launch_device_arg, NULL, &ar, k->d.cname, NULL};
    PyObject *res = NULL;
    const BtCall *call;
    Py_ssize_t total = 0;
    BtDiag e;
    int i, dev, at = 0, entered = 0;
    void *ctx, *prev = NULL, *func;
    uint64_t ours;

    r.st = bt_state_from_type(Py_TYPE(k));
    r.k = k;
    r.cfg = cfg;
    r.cfg_kw = cfg_kw;
    r.given = given;
    memset(r.read, 0, sizeof r.read);
    r.n_read = 0;
    bt_diag_init(&e);
    if (bt_dispatch_pick(&k->d, args, nargs, kwnames, &extra, &how, &p) < 0)
        goto done;
    /* after the pick: a stream= keyword is read there */
    ours = cfg->stream ? cfg->stream : BT_CUDA_STREAM_LEGACY;
    call = &k->calls[p.ov];
    src.args = p.argv;
    src.names = p.names;
    /* device arrays are aligned: the walk never stops at one (returns 0 or -1) */
    if (bt_slot_walk(call->slots, call->order, call->n_py, &at, &src, &out, &total) != 0)
        goto done;
    dev = ar.dev;
    ctx = ar.ctx;
    if (launch_device(r.st, k, &dev) < 0)
        goto done;
    if (launch_context(r.st, k, dev, &ctx, ar.dev_name) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        if (!PyErr_Occurred())
            bt_raise_diag(r.st, &e);
        goto done;
    }
    entered = 1;
    if (allow_shared(r.st, k, p.ov, dev, cfg) < 0)
        goto done;
    if (!(func = function_in(k, p.ov, dev, ctx, cfg)))
        goto done;
    if (wait_producers(&r, call, &p, dev, ours) < 0)
        goto done;
    if ((cfg->ex ? bt_cuda_launch_ex(func, cfg->grid, cfg->block, cfg->shared, cfg->stream, params,
                                     &cfg->attrs, &e)
                 : bt_cuda_launch(func, cfg->grid, cfg->block, cfg->shared, cfg->stream, params,
                                  &e)) < 0) {
        raise_launch(r.st, k, p.ov, cfg, &e);
        goto done;
    }
    if (record_uses(&r, call, &p, dev, ours) < 0)
        goto done;
    res = Py_NewRef(Py_None);
done:
    if (entered)
        bt_cuda_leave(ctx, prev);
    for (i = 0; i < r.n_read; i++)
        if (r.read[i])
            Py_XDECREF(r.a[i].keep);
    return res;
}
