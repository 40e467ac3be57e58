/* bt_callable.c - the head of bindthem.Function and bindthem.cuda.Kernel
 * (bt_callable.h): made once, read by one getter, traversed, cleared and
 * freed once for both types. */
#include "bt_callable.h"

#include <string.h>

#include "bt_from_c.h"

/* New reference: a tuple of each call's symbol, read from the calls when
 * asked for (10^5 stored tuples would cost memory and bind time). */
static PyObject *symbols_of(const BtCall *calls, int n)
{
    PyObject *t = PyTuple_New(n);
    int i;

    for (i = 0; t && i < n; i++) {
        PyObject *s = PyUnicode_FromString(calls[i].symbol);
        if (!s)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

BtCallable *bt_callable_new(BtState *st, PyTypeObject *tp, vectorcallfunc call, const BtFunc *f,
                            const BtOverload *ovs, BtCall *calls, int n, BtArena *arena,
                            PyObject *owner, PyObject *module, PyObject *info)
{
    BtCallable *c = (BtCallable *)PyObject_GC_New(BtCallable, tp);

    if (!c) {
        bt_arena_free(arena);
        return NULL;
    }
    /* everything after the object header: the head and the type's fields */
    memset((char *)c + sizeof(PyObject), 0, (size_t)tp->tp_basicsize - sizeof(PyObject));
    c->vectorcall = call;
    c->owner = Py_NewRef(owner);
    c->info = Py_XNewRef(info);
    c->module = Py_NewRef(module);
    c->arena = *arena;
    bt_arena_init(arena);
    c->calls = calls;
    PyObject_GC_Track(c);
    if (bt_dispatch_init(st, &c->d, f->name, ovs, calls, n) < 0)
        goto error;
    c->doc = bt_dispatch_doc(&c->d, ovs);
    c->text_sig = Py_NewRef(c->d.text_sig);
    if (!c->doc)
        goto error;
    bt_ft_deferred((PyObject *)c);
    return c;
error:
    Py_DECREF(c);
    return NULL;
}

/* Like a builtin function stored on a class: no binding. Having __get__
 * also makes inspect treat it as a builtin, so inspect.signature reads
 * __text_signature__. */
PyObject *bt_callable_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    return Py_NewRef(self);
}

int bt_callable_traverse(PyObject *self, visitproc visit, void *arg)
{
    BtCallable *c = (BtCallable *)self;

    Py_VISIT(Py_TYPE(self));
    Py_VISIT(c->owner);
    Py_VISIT(c->info);
    return 0;
}

int bt_callable_clear(PyObject *self)
{
    BtCallable *c = (BtCallable *)self;

    Py_CLEAR(c->owner);
    Py_CLEAR(c->info);
    return 0;
}

void bt_callable_dealloc(PyObject *self)
{
    BtCallable *c = (BtCallable *)self;
    PyTypeObject *tp = Py_TYPE(self);

    PyObject_GC_UnTrack(self);
    if (c->weakreflist)
        PyObject_ClearWeakRefs(self);
    bt_callable_clear(self);
    bt_dispatch_clear(&c->d);
    Py_CLEAR(c->module);
    Py_CLEAR(c->doc);
    Py_CLEAR(c->text_sig);
    bt_arena_free(&c->arena);
    tp->tp_free(self);
    Py_DECREF(tp);
}

PyObject *bt_callable_repr(PyObject *self, const char *what)
{
    BtCallable *c = (BtCallable *)self;

    return PyUnicode_FromFormat("<%s %U.%U with %d overload%s>", what, c->module, c->d.qualname,
                                c->d.n_ovs, c->d.n_ovs == 1 ? "" : "s");
}

/* Pickling and dask tokens are the LibraryInfo's business
 * (bindthem/_travel.py): it holds the kernel's source. New reference:
 * bindthem._from_c.<fn>(info, name). */
static PyObject *ask_info(PyObject *self, const char *fn)
{
    BtCallable *c = (BtCallable *)self;
    PyObject *argv[2];

    if (!c->info) {
        PyErr_Format(PyExc_TypeError, "cannot pickle %U: it belongs to no bindthem Library",
                     c->d.name);
        return NULL;
    }
    argv[0] = c->info;
    argv[1] = c->d.name;
    return bt_from_c_call(fn, argv, 2);
}

PyObject *bt_callable_reduce(PyObject *self, PyObject *unused)
{
    return ask_info(self, "reduce_function");
}

PyObject *bt_callable_dask_tokenize(PyObject *self, PyObject *unused)
{
    return ask_info(self, "dask_token");
}

/* copy.copy and copy.deepcopy: a bound kernel is immutable, as a function is. */
PyObject *bt_callable_copy(PyObject *self, PyObject *unused) { return Py_NewRef(self); }

/* Rich display is text formatting, written in Python (bindthem._display,
 * through bindthem._from_c). */
PyObject *bt_callable_repr_html(PyObject *self, PyObject *unused)
{
    return bt_from_c_call("function_html", &self, 1);
}

/* _repr_pretty_(p, cycle): IPython's pretty-printer protocol. */
PyObject *bt_callable_repr_pretty(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
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

/* New reference: the head attribute `which` (BT_CALLABLE_*). */
PyObject *bt_callable_get(PyObject *self, void *which)
{
    BtCallable *c = (BtCallable *)self;

    switch ((intptr_t)which) {
    case BT_CALLABLE_NAME: return Py_NewRef(c->d.name);
    case BT_CALLABLE_QUALNAME: return Py_NewRef(c->d.qualname);
    case BT_CALLABLE_MODULE: return Py_NewRef(c->module);
    case BT_CALLABLE_DOC: return Py_NewRef(c->doc);
    case BT_CALLABLE_TEXT_SIG: return Py_NewRef(c->text_sig);
    case BT_CALLABLE_OVERLOADS: return Py_NewRef(c->d.overloads);
    case BT_CALLABLE_SYMBOLS: return symbols_of(c->calls, c->d.n_ovs);
    case BT_CALLABLE_PARAMETERS: return Py_NewRef(c->d.names);
    case BT_CALLABLE_SIGNATURES: return Py_NewRef(c->d.pysigs);
    case BT_CALLABLE_LIBRARY:
        return c->info ? PyObject_GetAttrString(c->info, "library") : Py_NewRef(Py_None);
    case BT_CALLABLE_DISPATCH_INFO:
        return Py_BuildValue("{s:i,s:n,s:n}", "cached", BT_FT_LOAD_RELAXED(&c->d.cache_used),
                             "scans", BT_FT_LOAD_RELAXED(&c->d.scans), "selects",
                             BT_FT_LOAD_RELAXED(&c->d.selects));
    }
    PyErr_SetString(PyExc_SystemError, "bt_callable_get: no such attribute");
    return NULL;
}
