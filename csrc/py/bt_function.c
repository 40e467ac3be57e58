/* bt_function.c - bindthem.Function, a bound kernel: the shared dispatcher
 * (bt_dispatch.c) picks the overload, bt_call_invoke makes the ffi call;
 * plus repr, pickling and the introspection attributes. */
#include "bt_function.h"

#include "bt_dispatch.h"
#include "bt_opts.h"

#include <string.h>

typedef struct BtFunction {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    BtDispatch dispatch; /* name, qualname, parameter names, signatures, cache */
    PyObject *module;    /* str */
    PyObject *doc;       /* str */
    PyObject *owner;     /* keeps the library loaded */
    PyObject *info;      /* its Library's LibraryInfo (pickling, .library), or NULL */
    PyObject *weakreflist;
    BtCallOpts opts; /* GIL policy, const copies (its Library's build/load options) */
    BtState *st;     /* its module's state (the type keeps the module alive) */
    BtArena arena;   /* calls and their slots */
    BtCall *calls;
} BtFunction;

/* invoke() with copies of the const arrays that are not C-contiguous (copy_const). */
static PyObject *invoke_copying(BtFunction *f, int ov, PyObject *const *argv, PyObject *names,
                                const BtCallOpts *opts)
{
    PyObject *args[BT_MAX_PARAMS], *held[BT_MAX_PARAMS], *r;
    int n = bt_opts_copy_const(&f->calls[ov], argv, args, held);

    if (n < 0)
        return NULL;
    r = bt_call_invoke(&f->calls[ov], args, f->dispatch.cname, names, opts);
    while (n > 0)
        Py_DECREF(held[--n]);
    return r;
}

/* Calls overload ov with the Function's options as bindthem.options()
 * leaves them: the GIL policy, and copies of misfit const arrays. */
static PyObject *invoke(BtFunction *f, int ov, PyObject *const *argv, PyObject *names)
{
    BtCallOpts opts = f->opts;

    if (bt_opts_current(f->st, &opts) < 0)
        return NULL;
    if (opts.copy_const)
        return invoke_copying(f, ov, argv, names, &opts);
    return bt_call_invoke(&f->calls[ov], argv, f->dispatch.cname, names, &opts);
}

/* Keywords, left-out defaults or several parameter lists. */
static PyObject *function_call_general(BtFunction *f, PyObject *const *args, Py_ssize_t nargs,
                                       PyObject *kwnames)
{
    BtDispatchPick p;

    if (bt_dispatch_pick(&f->dispatch, args, nargs, kwnames, NULL, NULL, &p) < 0)
        return NULL;
    return invoke(f, p.ov, p.argv, p.names);
}

static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    BtFunction *f = (BtFunction *)self;
    BtDispatch *d = &f->dispatch;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    uint8_t codes[BT_MAX_PARAMS];
    int i, ov, pass;

    /* the common call: every parameter given by position, one parameter list */
    if (nargs != d->fast_n || (kwnames && PyTuple_GET_SIZE(kwnames) != 0))
        return function_call_general(f, args, nargs, kwnames);
    ov = bt_dispatch_last(d, args); /* the same dtypes as last time */
    if (ov < 0) {
        for (i = 0; i < d->n_py; i++)
            codes[i] = bt_slot_code(args[i]);
        ov = bt_dispatch_select(d, codes, &pass);
        if (ov < 0)
            return bt_dispatch_no_match(d, args, codes);
        bt_dispatch_remember(d, args, ov);
    }
    return invoke(f, ov, args, d->names);
}

static PyObject *function_repr(BtFunction *f)
{
    return PyUnicode_FromFormat("<bindthem function %U.%U with %d overload%s>", f->module,
                                f->dispatch.qualname, f->dispatch.n_ovs,
                                f->dispatch.n_ovs == 1 ? "" : "s");
}

/* Like a builtin function stored on a class: no binding. Having __get__
 * also makes inspect treat it as a builtin, so inspect.signature reads
 * __text_signature__. */
PyObject *bt_function_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    return Py_NewRef(self);
}

/* Pickling and dask tokens are the LibraryInfo's business
 * (bindthem/_travel.py): it holds the kernel's source. */
PyObject *bt_function_ask_info(PyObject *info, PyObject *name, const char *method)
{
    PyObject *argv[2] = {info, name};

    if (!info) {
        PyErr_Format(PyExc_TypeError, "cannot pickle %U: it belongs to no bindthem Library", name);
        return NULL;
    }
    return bt_from_c_call(method, argv, 2);
}

static PyObject *function_reduce(BtFunction *f, PyObject *unused)
{
    return bt_function_ask_info(f->info, f->dispatch.name, "reduce_function");
}

static PyObject *function_dask_tokenize(BtFunction *f, PyObject *unused)
{
    return bt_function_ask_info(f->info, f->dispatch.name, "dask_token");
}

/* copy.copy and copy.deepcopy: a bound kernel is immutable, as a function is. */
PyObject *bt_function_copy(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

static PyObject *function_set_info(BtFunction *f, PyObject *info)
{
    Py_XSETREF(f->info, Py_NewRef(info));
    Py_RETURN_NONE;
}

/* _configure(gil, copy_const): the options its Library was bound with. */
static PyObject *function_configure(BtFunction *f, PyObject *args)
{
    int gil, copy;

    if (!PyArg_ParseTuple(args, "ip:_configure", &gil, &copy))
        return NULL;
    if (gil < BT_GIL_AUTO || gil > BT_GIL_KEEP) {
        PyErr_SetString(PyExc_ValueError, "_configure: no such GIL policy");
        return NULL;
    }
    f->opts.gil = (uint8_t)gil;
    f->opts.copy_const = (uint8_t)copy;
    Py_RETURN_NONE;
}

/* New reference: bindthem._from_c.<name>, a Python function or class C
 * calls: bindthem/_from_c.py holds every one (rich display, pickling,
 * the exception classes). */
PyObject *bt_from_c(const char *name)
{
    PyObject *mod = PyImport_ImportModule("bindthem._from_c"), *r;

    if (!mod)
        return NULL;
    r = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return r;
}

/* New reference: bindthem._from_c.<name>(*argv). */
PyObject *bt_from_c_call(const char *name, PyObject *const *argv, Py_ssize_t n)
{
    PyObject *fn = bt_from_c(name), *r;

    if (!fn)
        return NULL;
    r = PyObject_Vectorcall(fn, argv, (size_t)n, NULL);
    Py_DECREF(fn);
    return r;
}

PyObject *bt_function_repr_html(PyObject *self, PyObject *unused)
{
    return bt_from_c_call("function_html", &self, 1);
}

/* _repr_pretty_(p, cycle): IPython's pretty-printer protocol. */
PyObject *bt_function_repr_pretty(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *argv[3];

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_repr_pretty_() takes 2 arguments (p, cycle)");
        return NULL;
    }
    argv[0] = self;
    argv[1] = args[0];
    argv[2] = args[1];
    return bt_from_c_call("function_pretty", argv, 3);
}

static PyMethodDef function_methods[] = {
    {"__reduce__", (PyCFunction)function_reduce, METH_NOARGS, NULL},
    {"__copy__", bt_function_copy, METH_NOARGS, NULL},
    {"__deepcopy__", bt_function_copy, METH_O, NULL},
    {"__dask_tokenize__", (PyCFunction)function_dask_tokenize, METH_NOARGS, NULL},
    {"_set_info", (PyCFunction)function_set_info, METH_O, NULL},
    {"_configure", (PyCFunction)function_configure, METH_VARARGS, NULL},
    {"_repr_html_", (PyCFunction)bt_function_repr_html, METH_NOARGS, NULL},
    {"_repr_pretty_", (PyCFunction)(void (*)(void))bt_function_repr_pretty, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *get_doc(BtFunction *f, void *c) { return Py_NewRef(f->doc); }
static PyObject *get_name(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.name); }
static PyObject *get_qualname(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.qualname); }
static PyObject *get_module(BtFunction *f, void *c) { return Py_NewRef(f->module); }
static PyObject *get_overloads(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.overloads); }
static PyObject *get_text_sig(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.text_sig); }
static PyObject *get_params(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.names); }
static PyObject *get_pysigs(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.pysigs); }

static PyObject *get_dispatch_info(BtFunction *f, void *c)
{
    return Py_BuildValue("{s:i,s:n}", "cached", f->dispatch.cache_used, "scans", f->dispatch.scans);
}

static PyObject *get_library(BtFunction *f, void *c)
{
    return f->info ? PyObject_GetAttrString(f->info, "library") : Py_NewRef(Py_None);
}

static PyObject *get_gil(BtFunction *f, void *c)
{
    return PyUnicode_FromString(bt_opts_gil_name(f->opts.gil));
}

static PyObject *get_copy_const(BtFunction *f, void *c)
{
    return PyBool_FromLong(f->opts.copy_const);
}

/* {"aligned_copies", "copy_backs", "const_copies"}: the copies its calls
 * made, over all overloads (BtCallStats). */
static PyObject *get_stats(BtFunction *f, void *c)
{
    unsigned long long n[3] = {0, 0, 0};
    int i;

    for (i = 0; i < f->dispatch.n_ovs; i++) {
        BtCallStats *s = f->calls[i].stats;
        n[0] += atomic_load_explicit(&s->aligned_copies, memory_order_relaxed);
        n[1] += atomic_load_explicit(&s->copy_backs, memory_order_relaxed);
        n[2] += atomic_load_explicit(&s->const_copies, memory_order_relaxed);
    }
    return Py_BuildValue("{s:K,s:K,s:K}", "aligned_copies", n[0], "copy_backs", n[1],
                         "const_copies", n[2]);
}

static PyObject *get_symbols(BtFunction *f, void *c)
{
    PyObject *t = PyTuple_New(f->dispatch.n_ovs);
    int i;
    if (!t)
        return NULL;
    for (i = 0; i < f->dispatch.n_ovs; i++) {
        PyObject *s = PyUnicode_FromString(f->calls[i].symbol);
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* ("direct" or "ffi" per overload): how calls reach each kernel when
 * _core.force_ffi() is off. */
static PyObject *get_call_paths(BtFunction *f, void *c)
{
    PyObject *t = PyTuple_New(f->dispatch.n_ovs);
    int i;
    if (!t)
        return NULL;
    for (i = 0; i < f->dispatch.n_ovs; i++)
        PyTuple_SET_ITEM(t, i, PyUnicode_FromString(f->calls[i].direct.variant ? "direct" : "ffi"));
    for (i = 0; i < f->dispatch.n_ovs; i++)
        if (!PyTuple_GET_ITEM(t, i)) {
            Py_DECREF(t);
            return NULL;
        }
    return t;
}

static PyGetSetDef function_getset[] = {
    {"__doc__", (getter)get_doc, NULL, NULL, NULL},
    {"__name__", (getter)get_name, NULL, NULL, NULL},
    {"__qualname__", (getter)get_qualname, NULL, NULL, NULL},
    {"__module__", (getter)get_module, NULL, NULL, NULL},
    {"__text_signature__", (getter)get_text_sig, NULL, NULL, NULL},
    {"overloads", (getter)get_overloads, NULL, "C signatures of the overloads, in YAML order.",
     NULL},
    {"symbols", (getter)get_symbols, NULL, "Symbol names of the overloads.", NULL},
    {"parameters", (getter)get_params, NULL, "Python parameter names (the first overload's).",
     NULL},
    {"signatures", (getter)get_pysigs, NULL,
     "Python signatures of the overloads, in YAML order, e.g. 'f(x, omega=1.0)'.", NULL},
    {"_call_paths", (getter)get_call_paths, NULL,
     "How each overload's kernel is called: 'direct' or 'ffi' (libffi).", NULL},
    {"_dispatch_info", (getter)get_dispatch_info, NULL,
     "The dispatch cache: keys cached, and calls that scanned the overloads.", NULL},
    {"library", (getter)get_library, NULL, "The Library it belongs to (None once that is gone).",
     NULL},
    {"gil", (getter)get_gil, NULL,
     "When calls release the GIL: 'auto' (arrays of 2048 elements or more), 'release' "
     "(always) or 'keep' (never); bindthem.options(gil=...) overrides it per call.",
     NULL},
    {"copy_const", (getter)get_copy_const, NULL,
     "Whether const array arguments that are not C-contiguous are copied (True) or refused "
     "(False); bindthem.options(copy_const=...) overrides it per call.",
     NULL},
    {"stats", (getter)get_stats, NULL,
     "Copies its calls made, as a dict: 'aligned_copies' (unaligned arrays passed as aligned "
     "temporaries), 'copy_backs' (of those, arrays the kernel writes, copied back), "
     "'const_copies' (const arrays that are not C-contiguous, copied under copy_const).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int function_traverse(BtFunction *f, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(f));
    Py_VISIT(f->owner);
    Py_VISIT(f->info);
    return 0;
}

static int function_clear(BtFunction *f)
{
    Py_CLEAR(f->owner);
    Py_CLEAR(f->info);
    return 0;
}

static void function_dealloc(BtFunction *f)
{
    PyTypeObject *tp = Py_TYPE(f);

    PyObject_GC_UnTrack(f);
    if (f->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)f);
    function_clear(f);
    bt_dispatch_clear(&f->dispatch);
    Py_CLEAR(f->module);
    Py_CLEAR(f->doc);
    bt_arena_free(&f->arena);
    tp->tp_free(f);
    Py_DECREF(tp);
}

static PyMemberDef function_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BtFunction, vectorcall), READONLY, NULL},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(BtFunction, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot function_slots[] = {
    {Py_tp_call, PyVectorcall_Call},          {Py_tp_repr, function_repr},
    {Py_tp_descr_get, bt_function_descr_get}, {Py_tp_methods, function_methods},
    {Py_tp_getset, function_getset},          {Py_tp_members, function_members},
    {Py_tp_traverse, function_traverse},      {Py_tp_clear, function_clear},
    {Py_tp_dealloc, function_dealloc},        {0, NULL},
};

PyType_Spec bt_function_spec = {
    .name = "bindthem.Function",
    .basicsize = sizeof(BtFunction),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = function_slots,
};

PyObject *bt_function_new(BtState *st, const BtFunc *bf, BtCall *calls, BtArena *arena,
                          PyObject *owner, PyObject *module)
{
    BtFunction *f = NULL;

    f = PyObject_GC_New(BtFunction, st->FunctionType);
    if (!f) {
        bt_arena_free(arena);
        return NULL;
    }
    f->vectorcall = function_vectorcall;
    memset(&f->dispatch, 0, sizeof f->dispatch);
    f->module = f->doc = NULL;
    f->info = f->weakreflist = NULL;
    f->opts.gil = BT_GIL_AUTO;
    f->opts.copy_const = 0;
    f->opts.ffi = 0;
    f->st = st;
    f->owner = Py_NewRef(owner);
    f->arena = *arena;
    bt_arena_init(arena);
    f->calls = calls;
    PyObject_GC_Track(f);

    if (bt_dispatch_init(st, &f->dispatch, bf->name, bf->ovs, calls, bf->n_ovs) < 0)
        goto error;
    f->module = Py_NewRef(module);
    f->doc = bt_dispatch_doc(&f->dispatch, bf->ovs);
    if (!f->doc)
        goto error;
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}
