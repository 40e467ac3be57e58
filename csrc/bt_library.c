/* bt_library.c - dlopen handles and _core.bind().
 *
 * bind() loads the metadata, opens the library, resolves every planned
 * overload's symbol (plain name for extern "C", Itanium-mangled otherwise),
 * prepares its call frame and groups overloads into Function objects. Each
 * Function holds the Handle; the library itself is opened RTLD_NODELETE and
 * stays mapped until the process exits (threads it started may still run in
 * it). */
#include "bt_library.h"

#include "bt_diag_py.h"
#include "bt_function.h"
#include "bt_mangle.h"
#include "bt_meta_py.h"
#include "bt_sym.h"

typedef struct BtHandle {
    PyObject_HEAD
    void *handle;
    PyObject *path; /* str: the file the loader opened */
} BtHandle;

static void handle_dealloc(BtHandle *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    bt_sym_close(h->handle);
    Py_CLEAR(h->path);
    tp->tp_free(h);
    Py_DECREF(tp);
}

static PyObject *handle_repr(BtHandle *h)
{
    return PyUnicode_FromFormat("<bindthem library handle %R>", h->path);
}

static PyMemberDef handle_members[] = {
    {"path", T_OBJECT, offsetof(BtHandle, path), READONLY, "The file the loader opened."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_repr, handle_repr},
    {Py_tp_members, handle_members},
    {0, NULL},
};

PyType_Spec bt_handle_spec = {
    .name = "bindthem._core.Handle",
    .basicsize = sizeof(BtHandle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = handle_slots,
};

/* New reference: a Handle for path (bytes), or NULL. */
static PyObject *open_handle(BtState *st, PyObject *path)
{
    BtHandle *h;
    BtDiag diag;
    BtArena scratch;
    const char *real;
    void *lib;

    bt_diag_init(&diag);
    lib = bt_sym_open(PyBytes_AS_STRING(path), &diag);
    if (!lib)
        return bt_raise_diag(st, &diag);
    h = PyObject_New(BtHandle, st->HandleType);
    if (!h) {
        bt_sym_close(lib);
        return NULL;
    }
    h->handle = lib;
    bt_arena_init(&scratch);
    real = bt_sym_path(lib, &scratch);
    h->path = real && real[0] ? PyUnicode_DecodeFSDefault(real)
                              : PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(path));
    bt_arena_free(&scratch);
    if (!h->path) {
        Py_DECREF(h);
        return NULL;
    }
    return (PyObject *)h;
}

/* "ns::f" for messages and near-miss search (arena string). */
static const char *qualified(const BtDecl *d, BtArena *a)
{
    BtBuf b;
    const char *r;
    int i;

    bt_buf_init(&b);
    for (i = 0; i < d->n_ns; i++) {
        bt_buf_puts(&b, d->ns[i]);
        bt_buf_puts(&b, "::");
    }
    bt_buf_puts(&b, d->name);
    r = b.failed ? NULL : bt_arena_strdup(a, bt_buf_str(&b));
    bt_buf_free(&b);
    return r;
}

/* Raises SymbolError for a missing overload. Returns NULL. */
static PyObject *missing_symbol(BtState *st, const BtOverload *ov, const char *symbol,
                                PyObject *libpath, const char *header)
{
    BtArena a;
    const BtDecl *d = ov->decl;
    const char *q, *near, *paren;
    PyObject *path = NULL;
    BtBuf inst;
    int i;

    bt_arena_init(&a);
    bt_buf_init(&inst);
    q = qualified(d, &a);
    bt_buf_puts(&inst, q ? q : d->name);
    if (d->n_tparams) {
        bt_buf_putc(&inst, '<');
        for (i = 0; i < d->n_tparams; i++)
            bt_buf_printf(&inst, "%s%s", i ? ", " : "", bt_type(ov->targs[i])->cname);
        bt_buf_putc(&inst, '>');
    }
    path = PyUnicode_EncodeFSDefault(libpath);
    near = path && q ? bt_sym_near_misses(PyBytes_AS_STRING(path), q, &a) : NULL;
    PyErr_Clear();
    paren = strchr(ov->signature, '(');
    if (d->is_inline || d->is_static) {
        PyErr_Format(st->SymbolError,
                     "%s: %s is declared %s at %s:%d, so %U does not export it (symbol %s); "
                     "drop `%s` from the declaration, or use bindthem.build(), which compiles "
                     "the header's functions into a library of its own",
                     d->name, bt_buf_str(&inst), d->is_inline ? "inline" : "static", header,
                     d->line, libpath, symbol, d->is_inline ? "inline" : "static");
    } else {
        PyErr_Format(st->SymbolError,
                     "%s: %s (symbol %s) is not in %U; %s%s%s. Compile an explicit "
                     "instantiation `template %s %s%s;` into the library, or let "
                     "bindthem.build(header, instantiate) compile the header and its "
                     "instantiations for you",
                     d->name, bt_buf_str(&inst), symbol, libpath, near ? "it has " : "",
                     near ? near : "it has no function of that name", near ? " only" : "",
                     bt_type(ov->ret)->cname, bt_buf_str(&inst), paren ? paren : "()");
    }
    Py_XDECREF(path);
    bt_buf_free(&inst);
    bt_arena_free(&a);
    return NULL;
}

const char bt_library_bind_doc[] =
    "bind(library, header, instantiate=None, *, module, strict=False)\n--\n\n"
    "Open a shared library and bind the kernels a header (and instantiate.yml)\n"
    "plan. Returns (handle, {name: Function}, metadata capsule (metadata() makes\n"
    "it a dict), [unexported names]).";

PyObject *bt_library_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"library", "header", "instantiate", "module", "strict", NULL};
    BtState *st = bt_state(module);
    PyObject *lib = NULL, *header = NULL, *inst = NULL, *modname = NULL, *handle = NULL;
    PyObject *funcs = NULL, *meta_py = NULL, *unexported = NULL, *r = NULL;
    PyObject *libpath;
    BtMeta meta;
    BtArena arena;
    int strict = 0, i, j;

    memset(&meta, 0, sizeof meta);
    bt_arena_init(&arena);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O&|O&$Up:bind", kwlist, PyUnicode_FSConverter,
                                     &lib, PyUnicode_FSConverter, &header, bt_path_converter, &inst,
                                     &modname, &strict))
        goto error;
    if (!modname) {
        PyErr_SetString(PyExc_TypeError, "bind() needs module=");
        goto error;
    }
    if (!inst)
        inst = Py_NewRef(Py_None);
    if (bt_meta_load_py(st, &meta, header, inst, strict) < 0)
        goto error;
    handle = open_handle(st, lib);
    funcs = PyDict_New();
    unexported = PyList_New(0);
    if (!handle || !funcs || !unexported)
        goto error;
    libpath = ((BtHandle *)handle)->path;
    for (i = 0; i < meta.plan.n_funcs; i++) {
        const BtFunc *f = &meta.plan.funcs[i];
        BtFunc kept = *f;
        BtCall *calls;
        PyObject *fn;
        int n = 0;

        calls = bt_arena_alloc(&arena, sizeof(BtCall) * (size_t)f->n_ovs);
        kept.ovs = bt_arena_alloc(&arena, sizeof(BtOverload) * (size_t)f->n_ovs);
        if (!calls || !kept.ovs) {
            PyErr_NoMemory();
            goto error;
        }
        for (j = 0; j < f->n_ovs; j++) {
            const BtOverload *ov = &f->ovs[j];
            const char *sym = bt_mangle(ov->decl, ov->targs, &arena);
            void *addr;
            if (!sym) {
                PyErr_Format(PyExc_MemoryError, "out of memory mangling %s", ov->signature);
                goto error;
            }
            addr = bt_sym_find(((BtHandle *)handle)->handle, sym);
            if (!addr) {
                PyObject *s;
                if (ov->inst) { /* listed: an error; planned as untemplated: unexported */
                    missing_symbol(st, ov, sym, libpath, meta.header.file);
                    goto error;
                }
                /* unlisted (or no instantiate.yml): bind what the library exports */
                s = PyUnicode_FromString(ov->signature);
                if (!s || PyList_Append(unexported, s) < 0) {
                    Py_XDECREF(s);
                    goto error;
                }
                Py_DECREF(s);
                continue;
            }
            if (bt_call_prepare(&calls[n], ov, addr, sym, &arena) < 0)
                goto error;
            kept.ovs[n++] = *ov;
        }
        if (n == 0)
            continue;
        kept.n_ovs = n;
        /* the function takes over the arena holding its calls */
        fn = bt_function_new(st, &kept, calls, &arena, handle, modname);
        bt_arena_init(&arena);
        if (!fn)
            goto error;
        if (PyDict_SetItemString(funcs, f->name, fn) < 0) {
            Py_DECREF(fn);
            goto error;
        }
        Py_DECREF(fn);
    }
    meta_py = bt_meta_capsule(&meta);
    if (!meta_py)
        goto error;
    r = PyTuple_Pack(4, handle, funcs, meta_py, unexported);
error:
    bt_arena_free(&arena);
    bt_meta_free(&meta);
    Py_XDECREF(lib);
    Py_XDECREF(header);
    Py_XDECREF(inst);
    Py_XDECREF(handle);
    Py_XDECREF(funcs);
    Py_XDECREF(meta_py);
    Py_XDECREF(unexported);
    return r;
}
