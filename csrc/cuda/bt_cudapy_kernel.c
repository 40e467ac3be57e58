/* bt_cudapy_kernel.c - bindthem.cuda.Kernel and Launch: configuration, argument checks, launch. */

/* kernel[grid, block] is a Launch; calling either binds and dispatches the
 * arguments with the CPU Function's dispatcher (bt_dispatch.c: exact dtype
 * dispatch, then scalar conversions, cached by dispatch codes), checks them
 * as a CPU call does (C-contiguous; writable unless const; sizes filled),
 * checks that the arrays are device memory on one device and context,
 * makes the arrays' context current (the thread's own is given back after)
 * and queues the launch after the arrays' producers' streams. */
#include "bt_cudapy.h"

#include "bt_callable.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ================= launch configuration ================= */

typedef struct LaunchConfig {
    unsigned grid[3], block[3];
    unsigned shared;
    uint64_t stream;      /* CUstream value; 0 = legacy default stream */
    PyObject *stream_obj; /* borrowed: the stream as given (NULL: none) */
    int ex;               /* cluster=, cooperative= or priority= given: cuLaunchKernelEx */
    BtCudaLaunchAttrs attrs;
} LaunchConfig;

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
            return bt_cudapy_value_error(kname, 1, "%s=%R has %zd dimensions; give 1 to 3", what, o,
                                         n);
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
            return bt_cudapy_value_error(kname, 1,
                                         "%s must be an int or a tuple of 1 to 3 ints, not %.100s "
                                         "(%R)%s",
                                         what, Py_TYPE(x)->tp_name, x,
                                         PyFloat_Check(x) ? "; round up with (n + b - 1) // b"
                                                          : "");
        x = PyNumber_Index(x);
        if (!x)
            return -1;
        s = PyLong_AsLongLongAndOverflow(x, &overflow);
        Py_DECREF(x);
        if (s == -1 && PyErr_Occurred())
            return -1;
        if (overflow || s < 1 || (unsigned long long)s > lim[i]) {
            if (!overflow && s < 1)
                return bt_cudapy_value_error(kname, 1, "%s=%R: every dimension must be at least 1",
                                             what, o);
            return bt_cudapy_value_error(kname, 1, "%s=%R: dimension %c may be at most %llu", what,
                                         o, "xyz"[i], lim[i]);
        }
        v = (unsigned long long)s;
        out[i] = (unsigned)v;
    }
    if (what[0] == 'b' && (unsigned long long)out[0] * out[1] * out[2] > 1024)
        return bt_cudapy_value_error(kname, 1,
                                     "block=%R has %llu threads; a block holds at most 1024", o,
                                     (unsigned long long)out[0] * out[1] * out[2]);
    return 0;
}

/* shared_mem: any integer (int, numpy.int64, anything with __index__). */
static int parse_shared(PyObject *o, const char *kname, unsigned *out)
{
    long long v;
    int overflow = 0;

    if (PyBool_Check(o) || !PyIndex_Check(o))
        return bt_cudapy_value_error(kname, 1,
                                     "shared_mem must be an int (bytes of dynamic shared memory), "
                                     "not %.100s",
                                     Py_TYPE(o)->tp_name);
    o = PyNumber_Index(o);
    if (!o)
        return -1;
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(o);
        return -1;
    }
    if (overflow || v < 0 || v > UINT_MAX) {
        bt_cudapy_value_error(kname, 1, "shared_mem=%R is out of range", o);
        Py_DECREF(o);
        return -1;
    }
    Py_DECREF(o);
    *out = (unsigned)v;
    return 0;
}

/* The launch attributes (each NULL or None: not asked for): cluster= (an
 * int or 1 to 3 ints dividing the grid), cooperative= (a bool), priority=
 * (an int); any of them makes the launch a cuLaunchKernelEx. */
static int parse_attrs(PyObject *cluster, PyObject *coop, PyObject *prio, const char *kname,
                       LaunchConfig *cfg)
{
    BtCudaLaunchAttrs *a = &cfg->attrs;
    int i, overflow = 0;
    long v;

    if (cluster && cluster != Py_None) {
        if (parse_dims(cluster, "cluster", kname, a->cluster) < 0)
            return -1;
        for (i = 0; i < 3; i++)
            if (cfg->grid[i] % a->cluster[i])
                return bt_cudapy_value_error(kname, 1,
                                             "cluster=%R does not divide grid=(%u, %u, %u): "
                                             "each grid dimension must be a multiple of the "
                                             "cluster's",
                                             cluster, cfg->grid[0], cfg->grid[1], cfg->grid[2]);
        cfg->ex = 1;
    }
    if (coop && coop != Py_None) {
        if (!PyBool_Check(coop))
            return bt_cudapy_value_error(kname, 1, "cooperative must be True or False, not %.100s",
                                         Py_TYPE(coop)->tp_name);
        a->cooperative = coop == Py_True;
        cfg->ex |= a->cooperative;
    }
    if (prio && prio != Py_None) {
        if (PyBool_Check(prio) || !PyLong_Check(prio))
            return bt_cudapy_value_error(kname, 1, "priority must be an int, not %.100s",
                                         Py_TYPE(prio)->tp_name);
        v = PyLong_AsLongAndOverflow(prio, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow || v < INT_MIN || v > INT_MAX)
            return bt_cudapy_value_error(kname, 1, "priority=%R is out of range", prio);
        a->has_priority = 1;
        a->priority = (int)v;
        cfg->ex = 1;
    }
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
    if (stream && bt_cudapy_stream_arg(stream, kname, 1, &cfg->stream) < 0)
        return -1;
    cfg->stream_obj = stream;
    return 0;
}

/* ================= Kernel ================= */

typedef struct CudaKernel {
    BT_CALLABLE_HEAD     /* calls: argument slots per overload (no ffi call is made) */
        void **kernels;  /* CUkernel / CUfunction per overload */
    unsigned *shared_ok; /* per overload and device: dynamic shared memory opted in to */
    /* free-threaded: one raise of shared_ok at a time; funcs/func_ctx pairs
     * read and written whole */
    BT_FT_FIELD(PyMutex shared_lock)
    int module_device; /* cuModuleLoadDataEx: the device it lives on; else -1 */
    /* per overload and device: the CUfunction launched (cuKernelGetFunction)
     * and the context it belongs to, resolved once per (kernel, context) */
    void **funcs, **func_ctx;
    BtCudaModule *cmod; /* the loaded module (owner keeps it), which resolves them */
} CudaKernel;

typedef struct CudaLaunch {
    PyObject_HEAD
    CudaKernel *kernel;
    PyObject *stream; /* as given, for repr */
    LaunchConfig cfg;
    int given; /* bit i: configuration item i was given in the brackets */
} CudaLaunch;

/* The configuration items, in bracket order (the first 4), and the launch
 * attributes, keywords only; each is a keyword. */
enum { N_CFG = 7 };
static const char *const cfg_names[N_CFG] = {"grid",    "block",       "shared_mem", "stream",
                                             "cluster", "cooperative", "priority"};

/* The arguments of one launch as read; j numbers them as bt_dispatch_pick
 * does. cfg_kw: the configuration keywords (grid=, ...); given: the items
 * a Launch's brackets fixed. */
typedef struct Reading {
    BtState *st;
    const CudaKernel *k;
    LaunchConfig *cfg;
    PyObject **cfg_kw;
    int given;
    BtCudaArg a[BT_MAX_PARAMS];
    uint8_t read[BT_MAX_PARAMS];
} Reading;

/* Does some overload take an array as parameter `name`? */
static int takes_array(const CudaKernel *k, PyObject *name)
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
static int read_config(void *ctx)
{
    Reading *r = ctx;
    PyObject **kw = r->cfg_kw;
    const char *kname = r->k->d.cname;
    int i;

    for (i = 0; i < N_CFG; i++)
        if (kw[i] && (r->given >> i & 1)) {
            PyErr_Format(PyExc_TypeError,
                         "%U[...](): %s given both in the brackets and as %s=", r->k->d.name,
                         cfg_names[i], cfg_names[i]);
            return -1;
        }
    if (!r->given && (!kw[0] || !kw[1])) {
        PyErr_Format(PyExc_TypeError,
                     "%U() needs grid= and block= (or launch it as %U[grid, block](...))",
                     r->k->d.name, r->k->d.name);
        return -1;
    }
    if ((kw[0] && parse_dims(kw[0], "grid", kname, r->cfg->grid) < 0) ||
        (kw[1] && parse_dims(kw[1], "block", kname, r->cfg->block) < 0) ||
        (kw[2] && parse_shared(kw[2], kname, &r->cfg->shared) < 0) ||
        (kw[3] && bt_cudapy_stream_arg(kw[3], kname, 1, &r->cfg->stream) < 0))
        return -1;
    if (kw[3])
        r->cfg->stream_obj = kw[3]; /* borrowed from the call's arguments */
    return parse_attrs(kw[4], kw[5], kw[6], kname, r->cfg);
}

/* bt_dispatch_pick's code(): reads argument j as a launch sees it. */
static int read_code(PyObject *o, int j, PyObject *name, void *ctx)
{
    Reading *r = ctx;
    BtCudaArg *a = &r->a[j];

    r->read[j] = 1;
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
static PyObject *describe(PyObject *o, int j, void *ctx)
{
    const BtCudaArg *a = &((Reading *)ctx)->a[j];
    if (a->kind == BT_CUDA_ARG_DEVICE)
        return PyUnicode_FromFormat("%s (a device array of %s, via %s)", Py_TYPE(o)->tp_name,
                                    bt_slot_code_name(a->code), a->via);
    return bt_slot_describe(o);
}

static const char *wants(const BtArgSlot *s, char *buf, size_t size)
{
    if (s->is_array) {
        snprintf(buf, size, "%s device array", bt_type(s->type)->npname);
        return buf;
    }
    return bt_slot_wants(s, buf, size);
}

/* Checks that array argument a is device memory, on the launch's one
 * device and in its one context; fills *dev and *ctx (first seen). */
static int check_device(BtState *st, const CudaKernel *k, PyObject *name, const BtCudaArg *a,
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
    if (info.device != *dev) {
        bt_cuda_device_label(info.device, label, sizeof label);
        bt_cuda_device_label(*dev, other, sizeof other);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is on %s, but '%U' is on %s; all arrays of a launch "
                     "must be on one device",
                     k->d.cname, name, label, *dev_name, other);
        return -1;
    }
    return 0;
}

/* The context to launch in: the arrays' (*ctx, from
 * CU_POINTER_ATTRIBUTE_CONTEXT), else the thread's current one when it is
 * on dev, else dev's primary one. A cuModuleLoadDataEx module runs only in
 * its device's primary context. */
static int launch_context(BtState *st, const CudaKernel *k, int dev, void **ctx, PyObject *who)
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
static void launch_label(const CudaKernel *k, int ov, const LaunchConfig *c, char *buf, size_t size)
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
static void raise_launch(BtState *st, const CudaKernel *k, int ov, const LaunchConfig *c, BtDiag *e)
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
static int allow_shared(BtState *st, CudaKernel *k, int ov, int dev, const LaunchConfig *c)
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

/* What reading a launch's array arguments needs (bt_slot_walk's ctx), and
 * the device and context they are on (check_device). */
typedef struct ArrayReading {
    const Reading *r;
    const BtDispatchPick *p;
    int dev;
    void *ctx;
    PyObject *dev_name;
} ArrayReading;

/* bt_slot_walk's reader: device array argument i as the dispatcher read it
 * (device memory is aligned for any element type), checked to be on the
 * launch's one device and in its one context. 0 or -1. */
static int device_arg(void *ctx, PyObject *const *args, int i, BtArrayArg *arr)
{
    ArrayReading *ar = ctx;
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

/* The CUfunction of overload ov in the current context ctx (on device
 * dev), resolved once per (kernel, context): cuKernelGetFunction loads the
 * kernel into the context and may run a JIT deferred by lazy loading, so it
 * runs without the GIL. NULL with an exception set. */
static void *function_in(CudaKernel *k, int ov, int dev, void *ctx, const LaunchConfig *c)
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

/* Binds, checks, marshals and queues a launch of k with cfg; given: the
 * items a Launch's brackets fixed (0 for kernel(..., grid=, block=)). */
static PyObject *launch(CudaKernel *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                        LaunchConfig *cfg, int given)
{
    PyObject *cfg_kw[N_CFG] = {NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    BtDispatchExtra extra = {cfg_names, N_CFG, cfg_kw};
    Reading r;
    BtDispatchHow how = {read_config, read_code, describe, wants, &r};
    BtDispatchPick p;
    BtValue vals[BT_MAX_PARAMS];
    void *params[BT_MAX_PARAMS];
    const BtArgOut out = {BT_OUT_VALUES, vals, NULL, params};
    ArrayReading ar = {&r, &p, -1, NULL, NULL};
    BtArgSource src = {NULL, device_arg, NULL, &ar, k->d.cname, NULL};
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
    if (dev < 0 && bt_cuda_current_device(&dev, &e) < 0) {
        bt_raise_diag(r.st, &e);
        goto done;
    }
    if (k->module_device >= 0 && dev != k->module_device) {
        PyErr_Format(PyExc_ValueError,
                     "%U(): the arrays are on device %d, but this module was loaded into "
                     "device %d's context (drivers before 12.0 have no context-independent "
                     "cuLibrary); load the module again on device %d",
                     k->d.name, dev, k->module_device, dev);
        goto done;
    }
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
    /* the launch's stream waits for each array's producer: a CAI v3
     * stream; a DeviceArray's last write (its event for the per-thread
     * stream) and, when the launch writes it, its pending reads on other
     * streams (DLPack producers did it) */
    for (i = 0; i < call->n_py; i++) {
        const BtCudaArg *a;
        int writes = !call->slots[i].is_const;
        if (!call->slots[i].is_array || p.src[i] < 0) /* (< 0: a scalar's default) */
            continue;
        a = &r.a[p.src[i]];
        if (a->array ? bt_cudapy_wait_for(a->array, ours, writes, &e) < 0
                     : a->has_stream && bt_cuda_stream_wait(ours, a->stream, &e) < 0) {
            bt_raise_diag(r.st, &e);
            goto done;
        }
    }
    if ((cfg->ex ? bt_cuda_launch_ex(func, cfg->grid, cfg->block, cfg->shared, cfg->stream, params,
                                     &cfg->attrs, &e)
                 : bt_cuda_launch(func, cfg->grid, cfg->block, cfg->shared, cfg->stream, params,
                                  &e)) < 0) {
        raise_launch(r.st, k, p.ov, cfg, &e);
        goto done;
    }
    for (i = 0; i < call->n_py; i++) {
        PyObject *o = call->slots[i].is_array && p.src[i] >= 0 ? r.a[p.src[i]].array : NULL;
        if (!o)
            continue;
        if (call->slots[i].is_const ? bt_cudapy_devarray_read(o, ours, cfg->stream_obj) < 0
                                    : bt_cudapy_devarray_wrote(o, ours, cfg->stream_obj) < 0)
            goto done;
    }
    res = Py_NewRef(Py_None);
done:
    if (entered)
        bt_cuda_leave(ctx, prev);
    for (i = 0; i < BT_MAX_PARAMS; i++)
        if (r.read[i])
            Py_XDECREF(r.a[i].keep);
    return res;
}

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    LaunchConfig cfg;

    /* grid=, block=, shared_mem=, stream= that name no parameter configure it */
    memset(&cfg, 0, sizeof cfg);
    return launch((CudaKernel *)self, args, PyVectorcall_NARGS(nargsf), kwnames, &cfg, 0);
}

/* kernel[grid, block], kernel[grid, block, shared_mem],
 * kernel[grid, block, shared_mem, stream] */
static PyObject *kernel_getitem(CudaKernel *k, PyObject *key)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    PyObject *items[4] = {NULL, NULL, NULL, NULL};
    CudaLaunch *l;
    Py_ssize_t n, i;

    if (!PyTuple_Check(key) || (n = PyTuple_GET_SIZE(key)) < 2 || n > 4) {
        PyErr_Format(PyExc_ValueError,
                     "%s[grid, block]: give 2 to 4 items (grid, block[, shared_mem[, stream]]), "
                     "not %R",
                     k->d.cname, key);
        return NULL;
    }
    for (i = 0; i < n; i++)
        items[i] = PyTuple_GET_ITEM(key, i);
    l = PyObject_GC_New(CudaLaunch, st->CudaLaunchType);
    if (!l)
        return NULL;
    l->kernel = (CudaKernel *)Py_NewRef(k);
    l->stream = Py_NewRef(items[3] ? items[3] : Py_None);
    l->given = (1 << n) - 1;
    memset(&l->cfg, 0, sizeof l->cfg); /* filled below; seen by repr only after */
    PyObject_GC_Track(l);
    if (parse_config(items[0], items[1], items[2], items[3], k->d.cname, &l->cfg) < 0) {
        Py_DECREF(l);
        return NULL;
    }
    return (PyObject *)l;
}

static PyObject *kernel_repr(PyObject *self)
{
    return bt_callable_repr(self, "bindthem.cuda kernel");
}

/* ---- what the driver says of a kernel: attributes, occupancy ---- */

/* The overload a query names (None: the only one; an index; a signature
 * of k.overloads) and the device (None: the module's, else the current
 * one); 0 or -1 with an exception. */
static int query_target(CudaKernel *k, const char *who, PyObject *ov, PyObject *devo, int *o,
                        int *dev)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    Py_ssize_t i, n = PyTuple_GET_SIZE(k->d.overloads);
    BtDiag e;

    bt_diag_init(&e);
    *o = -1;
    if (!ov || ov == Py_None) {
        if (n != 1) {
            PyErr_Format(PyExc_TypeError,
                         "%U.%s(): the kernel has %zd overloads; name one with overload= (an "
                         "index, or one of %R)",
                         k->d.name, who, n, k->d.overloads);
            return -1;
        }
        *o = 0;
    } else if (PyLong_Check(ov) && !PyBool_Check(ov)) {
        i = PyLong_AsSsize_t(ov);
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < 0 || i >= n) {
            PyErr_Format(PyExc_IndexError, "%U.%s(): overload=%zd is out of range (%zd overloads)",
                         k->d.name, who, i, n);
            return -1;
        }
        *o = (int)i;
    } else {
        for (i = 0; i < n && *o < 0; i++) {
            int eq = PyObject_RichCompareBool(ov, PyTuple_GET_ITEM(k->d.overloads, i), Py_EQ);
            if (eq < 0)
                return -1;
            if (eq)
                *o = (int)i;
        }
        if (*o < 0) {
            PyErr_Format(PyExc_ValueError, "%U.%s(): overload=%R is not one of %R", k->d.name, who,
                         ov, k->d.overloads);
            return -1;
        }
    }
    if (!devo || devo == Py_None) {
        if (k->module_device >= 0)
            *dev = k->module_device;
        else if (bt_cuda_current_device(dev, &e) < 0) {
            bt_raise_diag(st, &e);
            return -1;
        }
        return 0;
    }
    *dev = PyLong_Check(devo) && !PyBool_Check(devo) ? (int)PyLong_AsLong(devo) : -1;
    if (*dev == -1 && PyErr_Occurred())
        return -1;
    if (*dev < 0 || *dev >= BT_CUDA_MAX_DEVICES ||
        (k->module_device >= 0 && *dev != k->module_device)) {
        PyErr_Format(PyExc_ValueError, "%U.%s(): device=%R is not %s", k->d.name, who, devo,
                     k->module_device >= 0 ? "the device this module was loaded on"
                                           : "a device ordinal");
        return -1;
    }
    return 0;
}

/* kernel.attributes(overload=None, *, device=None): CU_FUNC_ATTRIBUTE_*. */
static PyObject *kernel_attributes(CudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"overload", "device", NULL};
    static const struct {
        const char *name;
        int attr;
    } attrs[] = {
        {"max_threads_per_block", 0},
        {"shared_size_bytes", 1},
        {"const_size_bytes", 2},
        {"local_size_bytes", 3},
        {"num_regs", 4},
        {"ptx_version", 5},
        {"binary_version", 6},
        {"max_dynamic_shared_size_bytes", 8},
    };
    BtState *st = bt_state_from_type(Py_TYPE(k));
    PyObject *ov = Py_None, *devo = Py_None, *out, *v;
    void *ctx, *prev;
    int o, dev, val, rc = 0;
    size_t i;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:attributes", kwlist, &ov, &devo) ||
        query_target(k, "attributes", ov, devo, &o, &dev) < 0)
        return NULL;
    if (!(out = PyDict_New()))
        return NULL;
    if (bt_cuda_primary_ctx(dev, &ctx, &e) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        Py_DECREF(out);
        return bt_raise_diag(st, &e);
    }
    for (i = 0; i < sizeof attrs / sizeof attrs[0] && rc == 0; i++) {
        rc = bt_cuda_kernel_attr(k->kernels[o], dev, attrs[i].attr, &val, &e);
        v = rc == 0 ? PyLong_FromLong(val) : NULL;
        if (rc == 0 && (!v || PyDict_SetItemString(out, attrs[i].name, v) < 0))
            rc = -2;
        Py_XDECREF(v);
    }
    bt_cuda_leave(ctx, prev);
    if (rc < 0) {
        if (rc == -1)
            bt_raise_diag(st, &e);
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The occupancy queries share their argument reading and context. */
static int occupancy(CudaKernel *k, const char *who, PyObject *ov, PyObject *devo, int block,
                     unsigned long long shared, int limit, int *a, int *b)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    void *ctx, *prev;
    int o, dev, rc;
    BtDiag e;

    bt_diag_init(&e);
    if (query_target(k, who, ov, devo, &o, &dev) < 0)
        return -1;
    if (bt_cuda_primary_ctx(dev, &ctx, &e) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    rc = block ? bt_cuda_occupancy(k->kernels[o], block, (size_t)shared, a, &e)
               : bt_cuda_occupancy_block(k->kernels[o], (size_t)shared, limit, a, b, &e);
    bt_cuda_leave(ctx, prev);
    if (rc < 0)
        bt_raise_diag(st, &e);
    return rc;
}

/* kernel.max_active_blocks_per_sm(block, *, shared_mem=0, overload=None, device=None) */
static PyObject *kernel_max_active(CudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"block", "shared_mem", "overload", "device", NULL};
    PyObject *blocko, *ov = Py_None, *devo = Py_None, *sho = NULL;
    unsigned dims[3], shared = 0;
    int n = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:max_active_blocks_per_sm", kwlist,
                                     &blocko, &sho, &ov, &devo) ||
        parse_dims(blocko, "block", k->d.cname, dims) < 0 ||
        (sho && parse_shared(sho, k->d.cname, &shared) < 0) ||
        occupancy(k, "max_active_blocks_per_sm", ov, devo, (int)(dims[0] * dims[1] * dims[2]),
                  shared, 0, &n, NULL) < 0)
        return NULL;
    return PyLong_FromLong(n);
}

/* kernel.max_potential_block_size(*, shared_mem=0, block_size_limit=0, overload=None,
 * device=None) -> (min_grid_size, block_size) */
static PyObject *kernel_max_block(CudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shared_mem", "block_size_limit", "overload", "device", NULL};
    PyObject *ov = Py_None, *devo = Py_None, *sho = NULL;
    unsigned shared = 0;
    int limit = 0, grid = 0, block = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OiOO:max_potential_block_size", kwlist, &sho,
                                     &limit, &ov, &devo) ||
        (sho && parse_shared(sho, k->d.cname, &shared) < 0))
        return NULL;
    if (limit < 0 || limit > 1024) {
        PyErr_Format(PyExc_ValueError,
                     "%U.max_potential_block_size(): block_size_limit=%d: give 0 (none) to 1024",
                     k->d.name, limit);
        return NULL;
    }
    if (occupancy(k, "max_potential_block_size", ov, devo, 0, shared, limit, &grid, &block) < 0)
        return NULL;
    return Py_BuildValue("(ii)", grid, block);
}

/* As a Function's: pickling by value, copies, notebook display. */
static PyMethodDef kernel_methods[] = {
    BT_CALLABLE_METHODS,
    {"attributes", (PyCFunction)(void (*)(void))kernel_attributes, METH_VARARGS | METH_KEYWORDS,
     "attributes($self, /, overload=None, *, device=None)\n--\n\n"
     "The driver's CU_FUNC_ATTRIBUTE_* of one overload on a device: a dict of\n"
     "max_threads_per_block, num_regs, shared/const/local_size_bytes,\n"
     "max_dynamic_shared_size_bytes, ptx_version, binary_version."},
    {"max_active_blocks_per_sm", (PyCFunction)(void (*)(void))kernel_max_active,
     METH_VARARGS | METH_KEYWORDS,
     "max_active_blocks_per_sm($self, /, block, *, shared_mem=0, overload=None, device=None)\n"
     "--\n\ncuOccupancyMaxActiveBlocksPerMultiprocessor: how many blocks of this size fit\n"
     "on one multiprocessor at once."},
    {"max_potential_block_size", (PyCFunction)(void (*)(void))kernel_max_block,
     METH_VARARGS | METH_KEYWORDS,
     "max_potential_block_size($self, /, *, shared_mem=0, block_size_limit=0, overload=None, "
     "device=None)\n--\n\ncuOccupancyMaxPotentialBlockSize: (min_grid_size, block_size) for "
     "full occupancy."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef kernel_getset[] = {
    BT_CALLABLE_GETSET,
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef kernel_members[] = {
    BT_CALLABLE_MEMBERS(CudaKernel),
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot kernel_slots[] = {
    BT_CALLABLE_SLOTS,
    {Py_tp_repr, kernel_repr},
    {Py_tp_methods, kernel_methods},
    {Py_mp_subscript, kernel_getitem},
    {Py_tp_getset, kernel_getset},
    {Py_tp_members, kernel_members},
    {0, NULL},
};

PyType_Spec bt_cudapy_kernel_spec = {
    .name = "bindthem.cuda.Kernel",
    .basicsize = sizeof(CudaKernel),
    .flags = BT_CALLABLE_FLAGS,
    .slots = kernel_slots,
};

/* ---- Launch: a kernel with its configuration ---- */

static PyObject *launch_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    CudaLaunch *l = (CudaLaunch *)self;
    PyObject *kwnames = NULL, *stack[BT_MAX_PARAMS * 2], *r;
    LaunchConfig cfg = l->cfg;
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
    r = launch(l->kernel, stack, nargs, kwnames, &cfg, l->given);
    Py_XDECREF(kwnames);
    return r;
}

static PyObject *launch_repr(CudaLaunch *l)
{
    const LaunchConfig *c = &l->cfg;
    return PyUnicode_FromFormat("<bindthem.cuda launch %U[(%u, %u, %u), (%u, %u, %u), %u, %R]>",
                                l->kernel->d.name, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                c->block[1], c->block[2], c->shared, l->stream);
}

static PyObject *dims_tuple(const unsigned d[3])
{
    return Py_BuildValue("(III)", d[0], d[1], d[2]);
}
static PyObject *launch_get_grid(CudaLaunch *l, void *c) { return dims_tuple(l->cfg.grid); }
static PyObject *launch_get_block(CudaLaunch *l, void *c) { return dims_tuple(l->cfg.block); }
static PyObject *launch_get_shared_mem(CudaLaunch *l, void *c)
{
    return PyLong_FromUnsignedLong(l->cfg.shared);
}
static PyObject *launch_get_stream(CudaLaunch *l, void *c) { return Py_NewRef(l->stream); }
static PyObject *launch_get_kernel(CudaLaunch *l, void *c) { return Py_NewRef(l->kernel); }

static PyGetSetDef launch_getset[] = {
    {"grid", (getter)launch_get_grid, NULL, NULL, NULL},
    {"block", (getter)launch_get_block, NULL, NULL, NULL},
    {"shared_mem", (getter)launch_get_shared_mem, NULL, "Bytes of dynamic shared memory.", NULL},
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

PyType_Spec bt_cudapy_launch_spec = {
    .name = "bindthem.cuda.Launch",
    .basicsize = sizeof(CudaLaunch),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = launch_slots,
};

/* New reference: the parameters' "(a, x, y)" with the launch keywords
 * after them, as kernel(...) takes them. */
static PyObject *text_signature(PyObject *params)
{
    static const char tail[] = "*, grid, block, shared_mem=0, stream=None, cluster=None, "
                               "cooperative=False, priority=None)";
    Py_ssize_t n = PyUnicode_GET_LENGTH(params);
    PyObject *head = PyUnicode_Substring(params, 0, n - 1), *r;

    if (!head)
        return NULL;
    r = PyUnicode_FromFormat("%U%s%s", head, n > 2 ? ", " : "", tail);
    Py_DECREF(head);
    return r;
}

PyObject *bt_cudapy_kernel_new(BtState *st, const BtFunc *f, const BtOverload *ovs, BtCall *calls,
                               void **kernels, int n, BtArena *arena, PyObject *owner,
                               PyObject *modname, PyObject *info, BtCudaModule *m)
{
    size_t shared = sizeof(unsigned) * BT_CUDA_MAX_DEVICES * (size_t)n;
    size_t funcs = sizeof(void *) * BT_CUDA_MAX_DEVICES * (size_t)n;
    CudaKernel *k;

    k = (CudaKernel *)bt_callable_new(st, st->CudaKernelType, kernel_vectorcall, f, ovs, calls, n,
                                      arena, owner, modname, info);
    if (!k)
        return NULL;
    k->kernels = kernels;
    k->cmod = m;
    k->module_device = bt_cuda_module_device(m);
    k->shared_ok = bt_arena_alloc(&k->arena, shared);
    k->funcs = bt_arena_alloc(&k->arena, funcs);
    k->func_ctx = bt_arena_alloc(&k->arena, funcs);
    if (!k->shared_ok || !k->funcs || !k->func_ctx) {
        PyErr_NoMemory();
        goto error;
    }
    memset(k->shared_ok, 0, shared);
    memset(k->funcs, 0, funcs);
    memset(k->func_ctx, 0, funcs);
    Py_SETREF(k->text_sig, text_signature(k->d.text_sig));
    if (!k->text_sig)
        goto error;
    return (PyObject *)k;
error:
    Py_DECREF(k);
    return NULL;
}
