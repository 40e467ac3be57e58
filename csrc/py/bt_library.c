/* bt_library.c - dlopen handles and _core.bind(): the CPU back end.
 *
 * bind() loads the metadata, opens the library and walks the plan with
 * bt_bind_plan, resolving symbols with dlsym; each Python name becomes a
 * Function (bt_function.c) whose calls hold their symbol's address. Each
 * Function holds the LibraryHandle, which holds the Library's HandleTypes
 * (bt_handle_bind.h); the library itself is opened RTLD_NODELETE and stays
 * mapped until the process exits (threads it started may still run in
 * it). */
#include "bt_library.h"
#include "bt_note_call.h"

#include "bt_bind.h"
#include "bt_callback.h"
#include "bt_diag_py.h"
#include "bt_function.h"
#include "bt_handle_bind.h"
#include "bt_plan_py.h"
#include "bt_record.h"
#include "bt_struct_py.h"
#include "bt_sym.h"

typedef struct BtHandle {
    PyObject_HEAD
    void *handle;
    PyObject *path;  /* str: the file the loader opened */
    PyObject *types; /* tuple: the Library's HandleTypes (bt_handle_bind.h), which its
                      * Functions' calls borrow; NULL until bound */
    /* {name: dtype}: the header's struct dtypes (bt_struct_py.h), which its
     * Functions' record slots borrow; NULL until bound */
    PyObject *structs;
} BtHandle;

static int handle_traverse(BtHandle *h, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(h));
    Py_VISIT(h->types); /* a HandleType's destructor is a Function, which holds this */
    Py_VISIT(h->structs);
    return 0;
}

static int handle_clear(BtHandle *h)
{
    Py_CLEAR(h->types);
    Py_CLEAR(h->structs);
    return 0;
}

static void handle_dealloc(BtHandle *h)
{
    PyTypeObject *tp = Py_TYPE(h);
    PyObject_GC_UnTrack(h);
    bt_sym_close(h->handle);
    Py_CLEAR(h->path);
    handle_clear(h);
    tp->tp_free(h);
    Py_DECREF(tp);
}

/* {name: HandleType}: the Library's handle types. */
static PyObject *handle_types(BtHandle *h, void *unused)
{
    PyObject *d = PyDict_New();
    Py_ssize_t i;

    for (i = 0; d && h->types && i < PyTuple_GET_SIZE(h->types); i++) {
        PyObject *t = PyTuple_GET_ITEM(h->types, i), *name = PyObject_GetAttrString(t, "name");
        if (!name || PyDict_SetItem(d, name, t) < 0)
            Py_CLEAR(d);
        Py_XDECREF(name);
    }
    return d;
}

static PyObject *handle_repr(BtHandle *h)
{
    return PyUnicode_FromFormat("<bindthem library handle %R>", h->path);
}

static PyMemberDef handle_members[] = {
    {"path", T_OBJECT, offsetof(BtHandle, path), READONLY, "The file the loader opened."},
    {"struct_dtypes", T_OBJECT, offsetof(BtHandle, structs), READONLY,
     "The header's structs and unions as NumPy dtypes, {name: dtype} (None until bound)."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"handle_types", (getter)handle_types, NULL, "The Library's handle types, {name: HandleType}.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_repr, handle_repr},
    {Py_tp_members, handle_members},
    {Py_tp_getset, handle_getset},
    {0, NULL},
};

PyType_Spec bt_library_handle_spec = {
    .name = "bindthem._core.LibraryHandle",
    .basicsize = sizeof(BtHandle),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = handle_slots,
};

/* New reference: a LibraryHandle for path (bytes), or NULL. */
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
    h = PyObject_GC_New(BtHandle, st->LibraryHandleType);
    if (!h) {
        bt_sym_close(lib);
        return NULL;
    }
    h->handle = lib;
    h->path = h->types = NULL;
    h->structs = NULL;
    PyObject_GC_Track(h);
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

const char bt_library_loaded_doc[] =
    "_loaded(path, load=False, fd=-1)\n--\n\n"
    "The object dlopen(path) returns when one is loaded already (of that name,\n"
    "or from that file's device and inode: RTLD_NOLOAD), or with load=True the\n"
    "one it loads (pinned: RTLD_NODELETE, as bind() opens). Returns None when\n"
    "none is loaded, else (object, same): object, its link map's address (which\n"
    "object it is); same, with fd (the file that was hashed, open), whether its\n"
    "code and read-only data are that file's bytes (None without fd).";

PyObject *bt_library_loaded(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"path", "load", "fd", NULL};
    PyObject *path = NULL, *r = NULL;
    BtDiag diag;
    void *h = NULL;
    int load = 0, fd = -1, same = -1;

    bt_diag_init(&diag);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|pi:_loaded", kwlist, PyUnicode_FSConverter,
                                     &path, &load, &fd))
        return NULL;
    h = load ? bt_sym_open(PyBytes_AS_STRING(path), &diag) : bt_sym_loaded(PyBytes_AS_STRING(path));
    if (!h) {
        r = load ? bt_raise_diag(bt_state(module), &diag) : Py_NewRef(Py_None);
        goto done;
    }
    if (fd >= 0 && (same = bt_sym_same_code(h, fd, &diag)) < 0) {
        bt_raise_diag(bt_state(module), &diag);
        goto done;
    }
    r = Py_BuildValue("(NN)", PyLong_FromVoidPtr((void *)bt_sym_object(h)),
                      same < 0 ? Py_NewRef(Py_None) : PyBool_FromLong(same));
done:
    bt_sym_close(h);
    Py_DECREF(path);
    return r;
}

/* ---- the CPU back end (bt_bind.h): dlsym in a Handle ---- */

typedef struct CpuBind {
    BtState *st;
    BtHandle *handle;
    PyObject *modname;
    PyObject *info;    /* LibraryInfo, or NULL */
    PyObject *options; /* {"gil", "copy_const", "handles", "null_handles"} or None */
    /* the struct dtypes made so far (bt_struct_table), and what of */
    PyObject *structs;
    const BtHeader *header;
} CpuBind;

static void *cpu_resolve(void *ctx, const char *symbol, int *missing)
{
    void *addr = bt_sym_find(((CpuBind *)ctx)->handle->handle, symbol);

    *missing = addr == NULL;
    return addr;
}

static void *cpu_resolve_c(void *ctx, const char *name, int *missing)
{
    void *addr = bt_sym_find_own(((CpuBind *)ctx)->handle->handle, name);

    *missing = addr == NULL;
    return addr;
}

/* The library file's exported functions (read from its ELF .dynsym). */
static int cpu_names(void *ctx, BtArena *arena, const char ***names, int *n, BtBuf *why)
{
    PyObject *path = PyUnicode_EncodeFSDefault(((CpuBind *)ctx)->handle->path);
    BtDiag diag;
    int rc = -1;

    bt_diag_init(&diag);
    if (!path) {
        PyErr_Clear();
        bt_buf_puts(why, "the library's path is not a file name");
        return -1;
    }
    rc = bt_sym_list(PyBytes_AS_STRING(path), arena, names, n, &diag);
    if (rc < 0)
        bt_buf_puts(why, diag.message);
    Py_DECREF(path);
    return rc;
}

static PyObject *cpu_make(void *ctx, const BtFunc *f, BtCall *calls, void **addrs, BtArena *arena)
{
    CpuBind *b = ctx;

    (void)addrs; /* each call's fn holds its address */
    if (bt_handle_calls(b->handle->types, f, calls, arena, b->options) < 0 ||
        bt_record_link(calls, f->n_ovs, b->structs, b->header) < 0) {
        bt_arena_free(arena);
        return NULL;
    }
    return bt_function_new(b->st, f, calls, arena, (PyObject *)b->handle, b->modname, b->info,
                           b->options);
}

/* The libffi frame and direct call (bt_call_prepare_frame), an annotated
 * function's plan (bt_note_prepare), and the plans of its function pointer
 * parameters (bt_callback_prepare). */
static int cpu_prepare(BtState *st, BtCall *call, const BtOverload *ov, void *addr, BtArena *arena)
{
    if (bt_call_prepare_frame(st, call, ov, addr, arena) < 0)
        return -1;
    if (ov->notes && bt_note_prepare(st, call, ov, arena) < 0)
        return -1;
    return bt_callback_prepare(st, call, ov, arena);
}

/* The CPU's refusal: an overload of a type only CUDA device code has. */
static const char *cpu_refuse(const BtDecl *d, const BtOverload *ov, int *deliberate)
{
    int i;

    (void)d;
    *deliberate = 0; /* the header may be meant for both back ends: not deliberate */
    if (!ov)
        return NULL;
    if (ov->notes && bt_note_refuse(ov))
        return bt_note_refuse(ov);
    for (i = -1; i < ov->decl->n_params; i++)
        if (bt_type_cuda_only(i < 0 ? ov->ret : ov->ptypes[i]))
            return "a function of a CUDA-only type (__half and __nv_bfloat16 have no C "
                   "equivalent); bindthem.cuda binds it as a kernel";
    return NULL;
}

static const BtBackend cpu_backend = {
    .noun = "",
    .container = "library",
    .things = "functions",
    .remedy = "let bindthem.build(header, instantiate) compile the header and its "
              "instantiations for you",
    .linkage_hides = 1,
    .host_strings = 1,
    .refuse = cpu_refuse,
    .resolve = cpu_resolve,
    .resolve_c = cpu_resolve_c,
    .names = cpu_names,
    .prepare = cpu_prepare,
    .make = cpu_make,
};

const char bt_library_bind_doc[] =
    "bind(library, header, instantiate=None, *, module, strict=False, info=None,\n"
    "     options=None)\n--\n\n"
    "Open a shared library and bind the kernels a header (and instantiate.yml)\n"
    "plan. header: its path (parsed here), or the Plan parse() made (then\n"
    "instantiate=None and strict its own). Each Function is made with info\n"
    "(its Library's LibraryInfo) and options ({'gil': a policy or {name: policy},\n"
    "'copy_const': bool, and optionally 'handles': {handle type: destructor function},\n"
    "'null_handles': 'raise', 'none' or {function: either}}). Returns (handle: a\n"
    "LibraryHandle, whose handle_types are the HandleTypes, {name: Function}, the Plan (its\n"
    "metadata() is parse_header's dict), [unexported signatures], [left out:\n"
    "{name, line, reason, deliberate}]).";

PyObject *bt_library_bind(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"library", "header", "instantiate", "module",
                             "strict",  "info",   "options",     NULL};
    BtState *st = bt_state(module);
    PyObject *lib = NULL, *header, *inst = Py_None, *modname = NULL, *handle = NULL;
    PyObject *info = Py_None, *options = Py_None, *meta_py = NULL, *r = NULL, *table = NULL;
    BtBound bound = {NULL, NULL, NULL, NULL};
    const BtMeta *meta;
    CpuBind ctx;
    int strict = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&O|O$UpOO:bind", kwlist, PyUnicode_FSConverter,
                                     &lib, &header, &inst, &modname, &strict, &info, &options))
        goto error;
    if (!modname) {
        PyErr_SetString(PyExc_TypeError, "bind() needs module=");
        goto error;
    }
    if (options != Py_None && !PyDict_Check(options)) {
        PyErr_Format(PyExc_TypeError, "bind(): options= must be a dict or None, not %.100s",
                     Py_TYPE(options)->tp_name);
        goto error;
    }
    meta_py = bt_plan_for_bind(st, "bind", header, inst, strict, &meta);
    if (!meta_py)
        goto error;
    handle = open_handle(st, lib);
    if (!handle)
        goto error;
    ctx.st = st;
    ctx.handle = (BtHandle *)handle;
    ctx.modname = modname;
    ctx.info = info == Py_None ? NULL : info;
    ctx.options = options;
    ctx.structs = table = bt_struct_table(&meta->header);
    ctx.header = &meta->header;
    if (!table || !(ctx.handle->types = bt_handle_types(st, &meta->header)) ||
        bt_bind_plan(st, meta, &cpu_backend, &ctx, ctx.handle->path, &bound) < 0 ||
        bt_handle_options(ctx.handle->types, bound.funcs, bound.left_out, &meta->header, options) <
            0)
        goto error;
    if (!(ctx.handle->structs = bt_struct_named(table, &meta->header)))
        goto error;
    r = PyTuple_Pack(5, handle, bound.funcs, meta_py, bound.unexported, bound.left_out);
error:
    bt_bound_clear(&bound);
    Py_XDECREF(lib);
    Py_XDECREF(handle);
    Py_XDECREF(meta_py);
    Py_XDECREF(table);
    return r;
}
