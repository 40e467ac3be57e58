/* bt_cudapy_kernel.c - bindthem.cuda.Kernel: the callable head, its call, kernel[grid, block]. */

/* kernel[grid, block] is a Launch (bt_cudapy_launch.c); calling either
 * binds and dispatches the arguments with the CPU Function's dispatcher
 * (bt_dispatch.h: exact dtype dispatch, then scalar conversions, cached by
 * dispatch codes; a launch's readers in bt_cudapy_launch_args.c), checks
 * them as a CPU call does (C-contiguous; writable unless const; sizes
 * filled), checks that the arrays are device memory on one device and
 * context, makes the arrays' context current (the thread's own is given
 * back after) and queues the launch after the arrays' producers' streams
 * (bt_cudapy_queue.c). Its driver queries are in bt_cudapy_query.c. */
#include "bt_cudapy_kernel_impl.h"

#include <string.h>

static PyObject *kernel_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    BtLaunchConfig cfg;

    /* grid=, block=, shared_mem=, stream= that name no parameter configure it */
    memset(&cfg, 0, sizeof cfg);
    return bt_cudapy_kernel_launch((BtCudaKernel *)self, args, PyVectorcall_NARGS(nargsf), kwnames,
                                   &cfg, 0);
}

/* kernel[grid, block], kernel[grid, block, shared_mem],
 * kernel[grid, block, shared_mem, stream] */
static PyObject *kernel_getitem(BtCudaKernel *k, PyObject *key)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    PyObject *items[4] = {NULL, NULL, NULL, NULL};
    BtCudaLaunch *l;
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
    l = PyObject_GC_New(BtCudaLaunch, st->CudaLaunchType);
    if (!l)
        return NULL;
    l->kernel = (BtCudaKernel *)Py_NewRef(k);
    l->stream = Py_NewRef(items[3] ? items[3] : Py_None);
    l->given = (1 << n) - 1;
    memset(&l->cfg, 0, sizeof l->cfg); /* filled below; seen by repr only after */
    PyObject_GC_Track(l);
    if (bt_cudapy_config_parse(items[0], items[1], items[2], items[3], k->d.cname, &l->cfg) < 0) {
        Py_DECREF(l);
        return NULL;
    }
    return (PyObject *)l;
}

static PyObject *kernel_repr(PyObject *self)
{
    return bt_callable_repr(self, "bindthem.cuda kernel");
}

/* As a Function's: pickling by value, copies, notebook display. */
static PyMethodDef kernel_methods[] = {
    BT_CALLABLE_METHODS,
    {"attributes", (PyCFunction)(void (*)(void))bt_cudapy_kernel_attributes,
     METH_VARARGS | METH_KEYWORDS,
     "attributes($self, /, overload=None, *, device=None)\n--\n\n"
     "The driver's CU_FUNC_ATTRIBUTE_* of one overload on a device: a dict of\n"
     "max_threads_per_block, num_regs, shared/const/local_size_bytes,\n"
     "max_dynamic_shared_size_bytes, ptx_version, binary_version."},
    {"max_active_blocks_per_sm", (PyCFunction)(void (*)(void))bt_cudapy_kernel_max_active,
     METH_VARARGS | METH_KEYWORDS,
     "max_active_blocks_per_sm($self, /, block, *, shared_mem=0, overload=None, device=None)\n"
     "--\n\ncuOccupancyMaxActiveBlocksPerMultiprocessor: how many blocks of this size fit\n"
     "on one multiprocessor at once."},
    {"max_potential_block_size", (PyCFunction)(void (*)(void))bt_cudapy_kernel_max_block,
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
    BT_CALLABLE_MEMBERS(BtCudaKernel),
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
    .basicsize = sizeof(BtCudaKernel),
    .flags = BT_CALLABLE_FLAGS,
    .slots = kernel_slots,
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
    BtCudaKernel *k;

    k = (BtCudaKernel *)bt_callable_new(st, st->CudaKernelType, kernel_vectorcall, f, ovs, calls, n,
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
