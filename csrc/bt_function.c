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
    BtDispatch dispatch;  /* name, qualname, parameter names, signatures, cache */
    PyObject *module;     /* str */
    PyObject *doc;        /* str */
    PyObject *owner;      /* keeps the library loaded */
    PyObject *text_sig;   /* str: "(a, b, c)" */
    PyObject *info;       /* its Library's LibraryInfo (pickling, .library), or NULL */
    PyObject *weakreflist;
    BtCallOpts opts;      /* GIL policy, const copies (its Library's build/load options) */
    BtArena arena;        /* calls and their slots */
    BtCall *calls;
} BtFunction;

/* The call with misfit const arrays replaced by aligned, contiguous copies. */
static PyObject *invoke_copying(BtFunction *f, int ov, PyObject *const *argv,
                                const uint8_t *codes, const BtCallOpts *opts)
{
    PyObject *args[BT_MAX_PARAMS], *held[BT_MAX_PARAMS], *r;
    int n = bt_opts_copy_const(&f->calls[ov], argv, args, held);

    if (n < 0)
        return NULL;
    r = bt_call_invoke(&f->calls[ov], args, codes, f->dispatch.cname, f->dispatch.names, opts);
    while (n > 0)
        Py_DECREF(held[--n]);
    return r;
}

static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    BtFunction *f = (BtFunction *)self;
    BtDispatch *d = &f->dispatch;
    BtCallOpts opts;
    PyObject *slots[BT_MAX_PARAMS];
    uint8_t codes[BT_MAX_PARAMS];
    PyObject *const *argv;
    int i, ov, pass;

    if (bt_dispatch_bind(d, args, nargsf, kwnames, slots, &argv) < 0)
        return NULL;
    for (i = 0; i < d->n_py; i++)
        codes[i] = bt_call_code(argv[i]);
    ov = bt_dispatch_select(d, codes, &pass);
    if (ov < 0)
        return bt_dispatch_no_match(d, argv, codes, NULL);
    opts = f->opts;
    if (bt_opts_current(bt_state_from_type(Py_TYPE(self)), &opts) < 0)
        return NULL;
    if (opts.copy_const)
        return invoke_copying(f, ov, argv, codes, &opts);
    return bt_call_invoke(&f->calls[ov], argv, codes, d->cname, d->names, &opts);
}

static PyObject *function_repr(BtFunction *f)
{
    return PyUnicode_FromFormat("<bindthem function %U.%U with %d overload%s>", f->module,
                                f->dispatch.qualname, f->dispatch.n_ovs, f->dispatch.n_ovs == 1 ? "" : "s");
}

static PyObject *function_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    /* like a builtin function stored on a class: no binding */
    return Py_NewRef(self);
}

/* New reference: f->info.<method>(name). Pickling and dask tokens are the
 * LibraryInfo's business (bindthem/_travel.py): it holds the kernel's source. */
static PyObject *ask_info(BtFunction *f, const char *method)
{
    if (!f->info) {
        PyErr_Format(PyExc_TypeError, "cannot pickle %U: it belongs to no bindthem Library",
                     f->dispatch.name);
        return NULL;
    }
    return PyObject_CallMethod(f->info, method, "O", f->dispatch.name);
}

static PyObject *function_reduce(BtFunction *f, PyObject *unused)
{
    return ask_info(f, "_reduce_function");
}

static PyObject *function_dask_tokenize(BtFunction *f, PyObject *unused)
{
    return ask_info(f, "_token");
}

/* copy.copy and copy.deepcopy: a bound kernel is immutable, as a function is. */
static PyObject *function_copy(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

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

/* New reference: bindthem._display.<name>(*argv). Rich display is text
 * formatting, written in Python. */
static PyObject *display(const char *name, PyObject *const *argv, Py_ssize_t n)
{
    PyObject *mod = NULL, *fn = NULL, *r = NULL;

    mod = PyImport_ImportModule("bindthem._display");
    if (!mod)
        goto error;
    fn = PyObject_GetAttrString(mod, name);
    if (!fn)
        goto error;
    r = PyObject_Vectorcall(fn, argv, (size_t)n, NULL);
error:
    Py_XDECREF(mod);
    Py_XDECREF(fn);
    return r;
}

static PyObject *function_repr_html(PyObject *self, PyObject *unused)
{
    return display("function_html", &self, 1);
}

/* _repr_pretty_(p, cycle): IPython's pretty-printer protocol. */
static PyObject *function_repr_pretty(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *argv[3];

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "_repr_pretty_() takes 2 arguments (p, cycle)");
        return NULL;
    }
    argv[0] = self;
    argv[1] = args[0];
    argv[2] = args[1];
    return display("function_pretty", argv, 3);
}

static PyMethodDef function_methods[] = {
    {"__reduce__", (PyCFunction)function_reduce, METH_NOARGS, NULL},
    {"__copy__", function_copy, METH_NOARGS, NULL},
    {"__deepcopy__", function_copy, METH_O, NULL},
    {"__dask_tokenize__", (PyCFunction)function_dask_tokenize, METH_NOARGS, NULL},
    {"_set_info", (PyCFunction)function_set_info, METH_O, NULL},
    {"_configure", (PyCFunction)function_configure, METH_VARARGS, NULL},
    {"_repr_html_", (PyCFunction)function_repr_html, METH_NOARGS, NULL},
    {"_repr_pretty_", (PyCFunction)(void (*)(void))function_repr_pretty, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *get_doc(BtFunction *f, void *c) { return Py_NewRef(f->doc); }
static PyObject *get_name(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.name); }
static PyObject *get_qualname(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.qualname); }
static PyObject *get_module(BtFunction *f, void *c) { return Py_NewRef(f->module); }
static PyObject *get_overloads(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.overloads); }
static PyObject *get_text_sig(BtFunction *f, void *c) { return Py_NewRef(f->text_sig); }
static PyObject *get_params(BtFunction *f, void *c) { return Py_NewRef(f->dispatch.names); }

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

static PyGetSetDef function_getset[] = {
    {"__doc__", (getter)get_doc, NULL, NULL, NULL},
    {"__name__", (getter)get_name, NULL, NULL, NULL},
    {"__qualname__", (getter)get_qualname, NULL, NULL, NULL},
    {"__module__", (getter)get_module, NULL, NULL, NULL},
    {"__text_signature__", (getter)get_text_sig, NULL, NULL, NULL},
    {"overloads", (getter)get_overloads, NULL, "C signatures of the overloads, in YAML order.",
     NULL},
    {"symbols", (getter)get_symbols, NULL, "Symbol names of the overloads.", NULL},
    {"parameters", (getter)get_params, NULL, "Python parameter names.", NULL},
    {"library", (getter)get_library, NULL, "The Library it belongs to (None once that is gone).",
     NULL},
    {"gil", (getter)get_gil, NULL,
     "When calls release the GIL: 'auto' (arrays of 2048 elements or more), 'release' "
     "(always) or 'keep' (never); bindthem.options(gil=...) overrides it per call.", NULL},
    {"copy_const", (getter)get_copy_const, NULL,
     "Whether const array arguments that are not C-contiguous and aligned are copied "
     "(True) or refused (False); bindthem.options(copy_const=...) overrides it per call.",
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
    Py_CLEAR(f->text_sig);
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
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, function_repr},
    {Py_tp_descr_get, function_descr_get},
    {Py_tp_methods, function_methods},
    {Py_tp_getset, function_getset},
    {Py_tp_members, function_members},
    {Py_tp_traverse, function_traverse},
    {Py_tp_clear, function_clear},
    {Py_tp_dealloc, function_dealloc},
    {0, NULL},
};

PyType_Spec bt_function_spec = {
    .name = "bindthem.Function",
    .basicsize = sizeof(BtFunction),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = function_slots,
};

/* C++ parameter names that Python can't use as names. */
static int is_py_keyword(const char *s)
{
    static const char *const kw[] = {
        "False", "None", "True", "as", "assert", "async", "await", "def", "del", "elif",
        "except", "finally", "from", "global", "import", "in", "is", "lambda", "nonlocal",
        "pass", "raise", "with", "yield", NULL};
    int i;
    for (i = 0; kw[i]; i++)
        if (strcmp(s, kw[i]) == 0)
            return 1;
    return 0;
}

/* New reference: "(a, b, c)". A parameter named like a Python keyword is
 * written with a trailing underscore and made positional-only (it can't be
 * passed by keyword anyway), as the generated stubs write it, so that
 * inspect.signature() can read it. */
static PyObject *text_signature(PyObject *names)
{
    BtBuf b;
    Py_ssize_t i, n = PyTuple_GET_SIZE(names), last_kw = -1;
    PyObject *r = NULL;

    for (i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
        if (!s)
            return NULL;
        if (is_py_keyword(s))
            last_kw = i;
    }
    bt_buf_init(&b);
    bt_buf_putc(&b, '(');
    for (i = 0; i < n; i++) {
        const char *s = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
        bt_buf_printf(&b, "%s%s%s", i ? ", " : "", s, is_py_keyword(s) ? "_" : "");
        if (i == last_kw)
            bt_buf_puts(&b, ", /");
    }
    bt_buf_putc(&b, ')');
    r = b.failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(&b));
    bt_buf_free(&b);
    return r;
}

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
    f->module = f->doc = f->text_sig = NULL;
    f->info = f->weakreflist = NULL;
    f->opts.gil = BT_GIL_AUTO;
    f->opts.copy_const = 0;
    f->owner = Py_NewRef(owner);
    f->arena = *arena;
    bt_arena_init(arena);
    f->calls = calls;
    PyObject_GC_Track(f);

    if (bt_dispatch_init(&f->dispatch, st, bf->name, bf->ovs, calls, bf->n_ovs, "functions") < 0)
        goto error;
    f->module = Py_NewRef(module);
    f->doc = PyUnicode_FromString(bf->doc ? bf->doc : "");
    if (!f->doc)
        goto error;
    f->text_sig = text_signature(f->dispatch.names);
    if (!f->text_sig)
        goto error;
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}
