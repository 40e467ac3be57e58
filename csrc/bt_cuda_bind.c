/* bt_cuda_bind.c - cuda_bind(), the CUDA module handle, driver-level functions, registration. */

/* cuda_bind() runs the CPU metadata pipeline (header -> plan -> mangled
 * names), loads the module image and finds each planned __global__ overload
 * in it (a missing one gets a did-you-mean hint), checking the parameter
 * layout where the driver can tell. Each Python name becomes a Kernel
 * (bt_cuda_kernel.c). */
#include "bt_cuda_py.h"

#include "bt_mangle.h"
#include "bt_meta_py.h"
#include "bt_plan.h"
#include "bt_sym.h"

#include <stdio.h>
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

/* ================= cuda_bind ================= */

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
    return bt_sym_cut_name(strncmp(dem, "void ", 5) == 0 ? dem + 5 : dem, a);
}

/* SymbolError: a planned kernel the module lacks, with what it has. */
static PyObject *missing_kernel(BtState *st, BtCudaModule *m, const BtOverload *ov, const char *sym,
                                PyObject *file)
{
    BtArena a;
    BtBuf have, near, inst;
    BtDiag e;
    const char **names;
    const char *q;
    int n, i, best = 1 << 30;

    bt_arena_init(&a);
    bt_buf_init(&have);
    bt_buf_init(&near);
    bt_buf_init(&inst);
    bt_diag_init(&e);
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
                                  !dem                            ? names[i]
                                  : strncmp(dem, "void ", 5) == 0 ? dem + 5
                                                                  : dem);
                if (!head)
                    continue;
                bl = strcspn(head, "<");
                snprintf(base, sizeof base, "%.*s", (int)bl, head);
                d = q ? bt_plan_distance(base, q) : 99;
                if (!(d == 0 || (q && strlen(q) >= 5 && d <= 2)))
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
    BtDiag e;
    int i, rc;

    bt_diag_init(&e);
    for (i = 0; i <= d->n_params; i++) {
        size_t size = 0, align = 1;
        if (i < d->n_params) {
            const BtType *t = bt_type(ov->ptypes[i]);
            size = d->params[i].t.is_array ? sizeof(void *) : t->size;
            align = d->params[i].t.is_array ? sizeof(void *)
                    : t->kind == 'c'        ? t->size / 2
                                            : t->size;
            off = (off + align - 1) / align * align;
        }
        rc = bt_cuda_param_info(m, kernel, (size_t)i, &koff, &ksize, &e);
        if (rc < 0 && e.kind == BT_DIAG_UNSUPPORTED)
            return 0;
        if (rc < 0) {
            bt_raise_diag(st, &e);
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
                         d->name, i + 1, d->params[i].name, ov->signature, size, off, ksize, koff,
                         sym, file);
            return -1;
        }
        off += size;
    }
    return 0;
}

PyDoc_STRVAR(cuda_bind_doc,
             "cuda_bind(image, header, instantiate=None, *, module, filename, strict=False)\n--\n\n"
             "Load a CUDA module image (bytes: cubin, fatbin or PTX) and bind the __global__\n"
             "kernels a header (and instantiate.yml) plan. Returns (module handle,\n"
             "{name: Kernel}, metadata dict, [unexported signatures], [non-kernels]).");

static PyObject *cuda_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"image",    "header", "instantiate", "module",
                             "filename", "strict", NULL};
    BtState *st = bt_state(module);
    PyObject *header = NULL, *inst = NULL, *modname = NULL, *file = NULL, *funcs = NULL;
    PyObject *meta_py = NULL, *unexported = NULL, *skipped = NULL, *r = NULL;
    CudaModule *handle = NULL;
    Py_buffer image = {0};
    BtDiag e;
    BtMeta meta;
    BtArena arena;
    int strict = 0, dev, i, j;

    memset(&meta, 0, sizeof meta);
    bt_arena_init(&arena);
    bt_diag_init(&e);
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
        bt_raise_diag(st, &e);
        goto error;
    }
    handle = PyObject_New(CudaModule, st->CudaModuleType);
    if (!handle)
        goto error;
    handle->path = Py_NewRef(file);
    handle->m = bt_cuda_module_load(image.buf, (size_t)image.len, dev, &e);
    if (!handle->m) {
        bt_raise_diag(st, &e);
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
                if (ov->inst) { /* the YAML asked for it; else planned as untemplated */
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
                bt_raise_diag(st, &e);
                goto error;
            }
            if (!kern) {
                PyObject *s;
                if (ov->inst) { /* listed: an error; planned as untemplated: unexported */
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
        kobj = bt_cuda_kernel_new(st, f, kept, calls, kernels, n, &arena, (PyObject *)handle,
                                  modname, bt_cuda_module_device(handle->m));
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

/* ================= module functions ================= */

static PyObject *cuda_device_count(PyObject *module, PyObject *unused)
{
    BtDiag e;
    int n;

    bt_diag_init(&e);
    if (bt_cuda_device_count(&n, &e) < 0) {
        if (e.kind == BT_DIAG_NODRIVER)
            return PyLong_FromLong(0);
        return bt_raise_diag(bt_state(module), &e);
    }
    return PyLong_FromLong(n);
}

static PyObject *cuda_synchronize(PyObject *module, PyObject *unused)
{
    BtDiag e;

    bt_diag_init(&e);
    if (bt_cuda_sync(&e) < 0)
        return bt_raise_diag(bt_state(module), &e);
    Py_RETURN_NONE;
}

static PyObject *cuda_driver(PyObject *module, PyObject *unused)
{
    BtDiag e;

    bt_diag_init(&e);
    if (bt_cuda_init(&e) < 0)
        return bt_raise_diag(bt_state(module), &e);
    return Py_BuildValue("{s:i,s:s,s:O}", "version", bt_cuda_driver_version(), "path",
                         bt_cuda_driver_path(), "library_api",
                         bt_cuda_uses_library_api() ? Py_True : Py_False);
}

static PyMethodDef cuda_methods[] = {
    {"cuda_bind", (PyCFunction)(void (*)(void))cuda_bind, METH_VARARGS | METH_KEYWORDS,
     cuda_bind_doc},
    {"cuda_to_device", (PyCFunction)(void (*)(void))bt_cuda_to_device, METH_VARARGS | METH_KEYWORDS,
     "cuda_to_device(array, *, device=None)\n--\n\nCopy an array to a new DeviceArray."},
    {"cuda_empty", (PyCFunction)(void (*)(void))bt_cuda_empty, METH_VARARGS | METH_KEYWORDS,
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
    if (!st->NoDriverError || PyModule_AddObjectRef(module, "NoDriverError", st->NoDriverError) < 0)
        return -1;
#define TYPE(field, spec, pyname)                                                                  \
    st->field = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);                     \
    if (!st->field || PyModule_AddObjectRef(module, pyname, (PyObject *)st->field) < 0)            \
        return -1;
    TYPE(CudaModuleType, cudamodule_spec, "CudaModule")
    TYPE(CudaKernelType, bt_cuda_kernel_spec, "CudaKernel")
    TYPE(CudaLaunchType, bt_cuda_launch_spec, "CudaLaunch")
    TYPE(DeviceArrayType, bt_cuda_devarray_spec, "DeviceArray")
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
