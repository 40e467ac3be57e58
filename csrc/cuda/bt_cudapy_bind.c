/* bt_cudapy_bind.c - cuda_bind() and the CUDA module handle: the CUDA back end.
 *
 * cuda_bind() runs the metadata pipeline, loads the module image and walks
 * the plan with bt_bind_plan, finding each __global__ overload with
 * cuLibraryGetKernel / cuModuleGetFunction (bt_cuda_module.c) and checking its
 * parameter layout where the driver can tell. Each Python name becomes a
 * Kernel (bt_cudapy_kernel.c). */
#include "bt_cudapy.h"

#include "bt_bind.h"
#include "bt_meta_py.h"
#include "bt_plan_py.h"
#include "bt_numpy.h"

#include <string.h>

/* ================= module handle ================= */

typedef struct CudaModule {
    PyObject_HEAD
    BtCudaModule *m;
    PyObject *path; /* str: the file, or "<bytes>" */
} CudaModule;

static void cudamodule_dealloc(CudaModule *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    Py_BEGIN_ALLOW_THREADS /* an unload may wait for the device */
    bt_cuda_module_unload(h->m);
    Py_END_ALLOW_THREADS
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

PyType_Spec bt_cudapy_handle_spec = {
    .name = "bindthem._core.CudaModule",
    .basicsize = sizeof(CudaModule),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = cudamodule_slots,
};

/* _core.cuda_global(handle, name, dtype, device, readonly=False): a view of
 * the module's __device__ / __constant__ variable `name` on device (None:
 * the current one), kept alive with the module; read-only when asked. */
PyObject *bt_cudapy_global(PyObject *module, PyObject *args)
{
    BtState *st = bt_state(module);
    PyObject *h, *dto, *devo;
    const char *name;
    PyArray_Descr *dtype = NULL;
    uint64_t ptr = 0;
    size_t size = 0;
    void *ctx, *prev;
    int dev = 0, missing = 0, rc, mdev, readonly = 0;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTuple(args, "O!sOO|p:cuda_global", st->CudaModuleType, &h, &name, &dto, &devo,
                          &readonly))
        return NULL;
    if (devo == Py_None ? bt_cuda_current_device(&dev, &e) < 0
                        : (dev = PyLong_AsLong(devo)) == -1 && PyErr_Occurred())
        return e.kind ? bt_raise_diag(st, &e) : NULL;
    mdev = bt_cuda_module_device(((CudaModule *)h)->m);
    if (mdev >= 0 && devo == Py_None)
        dev = mdev;
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES || (mdev >= 0 && dev != mdev)) {
        PyErr_Format(PyExc_ValueError, "get_global(%s): device=%d %s", name, dev,
                     mdev >= 0 ? "is not the device this module was loaded on (drivers before "
                                 "12.0 load into one device's context)"
                               : "is not a device ordinal");
        return NULL;
    }
    if (!PyArray_DescrConverter(dto, &dtype))
        return NULL;
    if (PyDataType_REFCHK(dtype)) {
        Py_DECREF(dtype);
        PyErr_SetString(PyExc_TypeError, "get_global(): object dtypes cannot be on the device");
        return NULL;
    }
    if (bt_cuda_primary_ctx(dev, &ctx, &e) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        Py_DECREF(dtype);
        return bt_raise_diag(st, &e);
    }
    rc = bt_cuda_module_global(((CudaModule *)h)->m, name, &ptr, &size, &missing, &e);
    bt_cuda_leave(ctx, prev);
    if (rc < 0 || missing) {
        Py_DECREF(dtype);
        if (rc < 0)
            return bt_raise_diag(st, &e);
        PyErr_Format(PyExc_KeyError,
                     "get_global(): the module %R has no __device__ or __constant__ variable "
                     "named '%s' (a variable in a namespace or of C++ linkage inside a class "
                     "has a mangled name; declare it at file scope, or extern \"C\")",
                     ((CudaModule *)h)->path, name);
        return NULL;
    }
    return bt_cudapy_devarray_view(st, h, ptr, size, (PyObject *)dtype, dev, readonly);
}

/* ---- the CUDA back end (bt_bind.h) ---- */

typedef struct CudaBind {
    BtState *st;
    CudaModule *handle;
    PyObject *modname;
    PyObject *info; /* LibraryInfo, or NULL */
} CudaBind;

static const char *cuda_refuse(const BtDecl *d, const BtOverload *ov, int *deliberate)
{
    const char *why;
    int i;

    *deliberate = 1; /* a __global__ kernel's every overload launches */
    if (!d->is_global)
        return "not a __global__ kernel; bindthem.cuda binds kernels only "
               "(bindthem.load binds host functions)";
    *deliberate = 0;
    if (ov && ov->notes)
        return "a kernel with annotations or C++ references (docs/arrays.rst: host functions "
               "only, as yet)";
    for (i = -1; ov && i < d->n_params; i++)
        if ((why = bt_type_host_only(i < 0 ? ov->ret : ov->ptypes[i])))
            return why;
    return NULL;
}

/* A static __global__ kernel compiled with -rdc=true is renamed
 * "__nv_static_<n>__<hash>_<n>_<file>_<hash>_" + its mangled name (without
 * -rdc it keeps the mangled name): the one kernel of the module named so,
 * or NULL (drivers before 12.4 cannot list a module's kernels). */
static const char *rdc_static_name(CudaBind *b, const char *symbol, BtArena *arena)
{
    static const char prefix[] = "__nv_static_";
    size_t len = strlen(symbol), n_len;
    const char **names, *found = NULL;
    int n, i;
    BtDiag e;

    bt_diag_init(&e);
    if (bt_cuda_module_names(b->handle->m, arena, &names, &n, &e) < 0)
        return NULL;
    for (i = 0; i < n; i++) {
        n_len = strlen(names[i]);
        if (n_len > len + sizeof prefix && strncmp(names[i], prefix, sizeof prefix - 1) == 0 &&
            strcmp(names[i] + n_len - len, symbol) == 0 && names[i][n_len - len - 1] == '_') {
            if (found)
                return NULL; /* two files' statics of one name: neither is "the" kernel */
            found = names[i];
        }
    }
    return found;
}

static void *cuda_resolve(void *ctx, const char *symbol, int *missing)
{
    CudaBind *b = ctx;
    BtArena arena;
    const char *renamed;
    BtDiag e;
    void *kernel;

    bt_diag_init(&e);
    /* lazy loading may run the module's JIT here: without the GIL */
    Py_BEGIN_ALLOW_THREADS
    kernel = bt_cuda_module_kernel(b->handle->m, symbol, missing, &e);
    Py_END_ALLOW_THREADS
    if (!kernel && *missing) {
        bt_arena_init(&arena);
        renamed = rdc_static_name(b, symbol, &arena);
        if (renamed) {
            Py_BEGIN_ALLOW_THREADS
            kernel = bt_cuda_module_kernel(b->handle->m, renamed, missing, &e);
            Py_END_ALLOW_THREADS
        }
        bt_arena_free(&arena);
    }
    if (!kernel && !*missing)
        bt_raise_diag(b->st, &e);
    return kernel;
}

static int cuda_names(void *ctx, BtArena *arena, const char ***names, int *n, BtBuf *why)
{
    BtDiag e;

    bt_diag_init(&e);
    if (bt_cuda_module_names(((CudaBind *)ctx)->handle->m, arena, names, n, &e) < 0) {
        bt_buf_puts(why, e.message);
        return -1;
    }
    return 0;
}

/* The kernel's parameter i as the driver reports it (12.4+ drivers). */
static int cuda_param(void *ctx, void *kernel, int i, size_t *offset, size_t *size)
{
    CudaBind *b = ctx;
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    rc = bt_cuda_param_info(b->handle->m, kernel, (size_t)i, offset, size, &e);
    if (rc < 0 && e.kind == BT_DIAG_UNSUPPORTED)
        return 2;
    if (rc < 0)
        bt_raise_diag(b->st, &e);
    return rc;
}

static PyObject *cuda_make(void *ctx, const BtFunc *f, BtCall *calls, void **kernels,
                           BtArena *arena)
{
    CudaBind *b = ctx;

    return bt_cudapy_kernel_new(b->st, f, f->ovs, calls, kernels, f->n_ovs, arena,
                                (PyObject *)b->handle, b->modname, b->info, b->handle->m);
}

static const BtBackend cuda_backend = {
    .noun = "kernel ",
    .container = "module",
    .things = "kernels",
    .remedy = "let bindthem.cuda.build(header, instantiate) do it",
    .lists_all = 1,
    .refuse = cuda_refuse,
    .resolve = cuda_resolve,
    .names = cuda_names,
    .param = cuda_param,
    .make = cuda_make,
};

const char bt_cudapy_bind_doc[] =
    "cuda_bind(image, header, instantiate=None, *, module, filename, strict=False,\n"
    "          info=None)\n--\n\n"
    "Load a CUDA module image (bytes: cubin, fatbin or PTX) and bind the __global__\n"
    "kernels a header (and instantiate.yml) plan. header: its path (parsed here),\n"
    "or the Plan parse() made (instantiate=None). Each Kernel is made with info\n"
    "(its Library's LibraryInfo). Returns (module handle, {name: Kernel}, the\n"
    "Plan (its metadata() is parse_header's dict), [unexported signatures],\n"
    "[non-kernels], [left out: {name, line, reason, deliberate}]).";

PyObject *bt_cudapy_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"image",    "header", "instantiate", "module",
                             "filename", "strict", "info",        NULL};
    BtState *st = bt_state(module);
    PyObject *header, *inst = Py_None, *modname = NULL, *file = NULL, *info = Py_None;
    PyObject *meta_py = NULL, *r = NULL;
    BtBound bound = {NULL, NULL, NULL, NULL};
    CudaModule *handle = NULL;
    Py_buffer image = {0};
    const BtMeta *meta;
    CudaBind ctx;
    BtDiag e;
    int strict = 0, dev;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*O|O$UUpO:cuda_bind", kwlist, &image, &header,
                                     &inst, &modname, &file, &strict, &info))
        goto error;
    if (!modname || !file) {
        PyErr_SetString(PyExc_TypeError, "cuda_bind() needs module= and filename=");
        goto error;
    }
    meta_py = bt_plan_for_bind(st, "cuda_bind", header, inst, strict, &meta);
    if (!meta_py)
        goto error;
    if (bt_cuda_current_device(&dev, &e) < 0) {
        bt_raise_diag(st, &e);
        goto error;
    }
    handle = PyObject_New(CudaModule, st->CudaModuleType);
    if (!handle)
        goto error;
    handle->m = NULL; /* the dealloc unloads it: set before any error */
    handle->path = Py_NewRef(file);
    {
        void *pctx; /* unused: the call retains and caches it */
        /* the primary context retained with the GIL held; then the load
         * (PTX is JIT-compiled there) runs without it */
        if (bt_cuda_primary_ctx(dev, &pctx, &e) < 0) {
            bt_raise_diag(st, &e);
            goto error;
        }
        Py_BEGIN_ALLOW_THREADS
        handle->m = bt_cuda_module_load(image.buf, (size_t)image.len, dev, &e);
        Py_END_ALLOW_THREADS
    }
    if (!handle->m) {
        bt_raise_diag(st, &e);
        goto error;
    }
    ctx.st = st;
    ctx.handle = handle;
    ctx.modname = modname;
    ctx.info = info == Py_None ? NULL : info;
    if (bt_bind_plan(st, meta, &cuda_backend, &ctx, file, &bound) < 0)
        goto error;
    r = PyTuple_Pack(6, handle, bound.funcs, meta_py, bound.unexported, bound.skipped,
                     bound.left_out);
error:
    if (image.obj)
        PyBuffer_Release(&image);
    bt_bound_clear(&bound);
    Py_XDECREF(handle);
    Py_XDECREF(meta_py);
    return r;
}
