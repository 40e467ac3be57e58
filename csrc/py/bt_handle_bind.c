/* bt_handle_bind.c - a Library's handle types: made, given to its calls, given destructors. */
#include "bt_handle_bind.h"

#include "bt_callable.h"
#include "bt_from_c.h"
#include "bt_handle.h"
#include "bt_note_call.h"

#include <stdarg.h>
#include <string.h>

PyObject *bt_handle_types(BtState *st, const BtHeader *h)
{
    PyObject *t = PyTuple_New(h->n_handles);
    int i;

    for (i = 0; t && i < h->n_handles; i++) {
        PyObject *ht = bt_handle_type_new(st, h->handles[i].name, h->handles[i].key);
        if (!ht)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, ht);
    }
    return t;
}

static BtHandleTypeObject *type_at(PyObject *types, int ref)
{
    return ref > 0 && ref <= PyTuple_GET_SIZE(types)
               ? (BtHandleTypeObject *)PyTuple_GET_ITEM(types, ref - 1)
               : NULL;
}

/* Whether a NULL return of function fname gives None: options'
 * "null_handles" ("none", "raise", or {name: either}); absent: dflt (1 for
 * an untyped `void *`, for which NULL is as often a value as an error).
 * 1, 0, or -1 with ValueError. */
static int null_is_none(PyObject *options, const char *fname, int dflt)
{
    PyObject *v = options != Py_None ? PyDict_GetItemString(options, "null_handles") : NULL;

    if (v && PyDict_Check(v))
        v = PyDict_GetItemString(v, fname); /* borrowed */
    if (!v || v == Py_None)
        return dflt;
    if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "none") == 0)
        return 1;
    if (PyUnicode_Check(v) && PyUnicode_CompareWithASCIIString(v, "raise") == 0)
        return 0;
    PyErr_Format(PyExc_ValueError, "bind(): null_handles=%R for %s: expected 'raise' or 'none'", v,
                 fname);
    return -1;
}

int bt_handle_calls(PyObject *types, const BtFunc *f, BtCall *calls, BtArena *arena,
                    PyObject *options)
{
    int k, i, none;

    for (k = 0; k < f->n_ovs; k++) {
        const BtDecl *d = f->ovs[k].decl;
        BtCall *c = &calls[k];
        for (i = 0; i < c->n_py; i++) {
            BtArgSlot *s = &c->slots[i];
            BtHandleTypeObject *t = s->kind == 'h' ? type_at(types, d->params[s->cidx].t.handle_ref)
                                                   : NULL;
            BtSlotHandle *sh = t ? bt_arena_alloc(arena, sizeof *sh) : NULL;
            if (!t)
                continue;
            if (!sh || !(sh->key = bt_arena_strdup(arena, t->ckey)) ||
                !(sh->name = bt_arena_strdup(arena, t->cname))) {
                PyErr_NoMemory();
                return -1;
            }
            s->handle = sh;
        }
        for (i = 0; c->notes && i < d->n_params; i++)
            if (d->params[i].handle_ptr)
                ((BtNoteCall *)c->notes)->htypes[i] = (PyObject *)type_at(
                    types, d->params[i].t.handle_ref);
        if (!(c->ret_type = (PyObject *)type_at(types, d->ret.handle_ref)))
            continue;
        if ((none = null_is_none(
                 options, f->name,
                 bt_handle_key_untyped(((BtHandleTypeObject *)c->ret_type)->ckey))) < 0)
            return -1;
        c->ret_none = (uint8_t)none;
    }
    return 0;
}

/* BindValueError with the formatted message. Returns -1. */
static int refuse(const char *fmt, ...)
{
    PyObject *cls = bt_from_c("BindValueError");
    va_list va;

    if (!cls)
        return -1;
    va_start(va, fmt);
    PyErr_FormatV(cls, fmt, va);
    va_end(va);
    Py_DECREF(cls);
    return -1;
}

/* New reference: the names of the HandleTypes in types, ", "-joined. */
static PyObject *type_names(PyObject *types)
{
    PyObject *names = PyList_New(0), *sep = PyUnicode_FromString(", "), *r = NULL;
    Py_ssize_t i;

    for (i = 0; names && sep && i < PyTuple_GET_SIZE(types); i++)
        if (PyList_Append(names, ((BtHandleTypeObject *)PyTuple_GET_ITEM(types, i))->name) < 0)
            goto done;
    if (names && sep)
        r = PyUnicode_Join(sep, names);
done:
    Py_XDECREF(names);
    Py_XDECREF(sep);
    return r;
}

/* The Function named fname in funcs (borrowed), or NULL with why it is not
 * there (BindValueError: what = the option and its entry, for messages). */
static PyObject *bound_function(PyObject *funcs, PyObject *left_out, const BtHeader *h,
                                PyObject *fname, PyObject *what)
{
    PyObject *fn = PyDict_GetItemWithError(funcs, fname);
    Py_ssize_t i;
    int j;

    if (fn || PyErr_Occurred())
        return fn;
    for (i = 0; i < PyList_GET_SIZE(left_out); i++) {
        PyObject *x = PyList_GET_ITEM(left_out, i), *name = PyDict_GetItemString(x, "name");
        if (name && PyUnicode_Compare(name, fname) == 0) {
            refuse("%U: %U is not bound: %S", what, fname, PyDict_GetItemString(x, "reason"));
            return NULL;
        }
    }
    for (j = 0; j < h->n_decls; j++)
        if (PyUnicode_CompareWithASCIIString(fname, h->decls[j].name) == 0)
            break;
    if (j < h->n_decls)
        refuse("%U: %U is not bound", what, fname);
    else
        refuse("%U: the header declares no function %U", what, fname);
    return NULL;
}

/* Whether Function c has one overload of one parameter, a handle of type t. */
static int takes_one(const BtCallable *c, const BtHandleTypeObject *t)
{
    const BtCall *call = &c->calls[0];

    return c->d.n_ovs == 1 && call->n_c == 1 && call->n_py == 1 && call->slots[0].kind == 'h' &&
           call->slots[0].handle && strcmp(call->slots[0].handle->key, t->ckey) == 0;
}

/* Handle type tname of types gets Function fname of funcs as its
 * destructor. 0 or -1. */
static int set_destructor(PyObject *types, PyObject *funcs, PyObject *left_out, const BtHeader *h,
                          PyObject *tname, PyObject *fname)
{
    PyObject *what = PyUnicode_FromFormat("handles={%R: %R}", tname, fname), *fn, *all;
    BtHandleTypeObject *t = NULL;
    BtCallable *c;
    Py_ssize_t i;
    int rc = -1;

    if (!what)
        return -1;
    for (i = 0; i < PyTuple_GET_SIZE(types) && !t; i++)
        if (PyUnicode_Compare(((BtHandleTypeObject *)PyTuple_GET_ITEM(types, i))->name, tname) == 0)
            t = (BtHandleTypeObject *)PyTuple_GET_ITEM(types, i);
    if (!t) {
        if ((all = type_names(types))) {
            refuse("%U: %R is no handle type of this header (%s%U)", what, tname,
                   PyTuple_GET_SIZE(types) ? "its handle types: " : "it has none", all);
            Py_DECREF(all);
        }
        goto done;
    }
    if (!(fn = bound_function(funcs, left_out, h, fname, what)))
        goto done;
    c = (BtCallable *)fn;
    if (!takes_one(c, t)) {
        const BtArgSlot *s = c->calls[0].n_py ? &c->calls[0].slots[0] : NULL;
        if (c->d.n_ovs != 1)
            refuse("%U: a destructor is one C function; %U has %d overloads", what, fname,
                   c->d.n_ovs);
        else if (c->calls[0].n_c != 1 || !s)
            refuse("%U: a destructor takes exactly one parameter, a %s handle (%s); %U takes %d",
                   what, t->cname, t->ckey, fname, c->calls[0].n_c);
        else
            refuse("%U: a destructor takes exactly one parameter, a %s handle (%s); %U takes %s%s",
                   what, t->cname, t->ckey, fname, s->kind == 'h' ? "a handle of type " : "",
                   s->kind == 'h' && s->handle ? s->handle->name : "one that is no handle");
        goto done;
    }
    Py_XSETREF(t->destructor, Py_NewRef(fn));
    c->calls[0].destroys = 1; /* before anything calls it: it was bound just now */
    rc = 0;
done:
    Py_DECREF(what);
    return rc;
}

/* null_handles={name: ...} names a bound function that returns a handle. 0 or -1. */
static int check_null_name(PyObject *funcs, PyObject *left_out, const BtHeader *h, PyObject *fname)
{
    PyObject *what = PyUnicode_FromFormat("null_handles={%R: ...}", fname), *fn;
    int rc = -1;

    if (!what)
        return -1;
    fn = bound_function(funcs, left_out, h, fname, what);
    if (fn && !((BtCallable *)fn)->calls[0].ret_type)
        refuse("%U: %U returns no handle", what, fname);
    else if (fn)
        rc = 0;
    Py_DECREF(what);
    return rc;
}

int bt_handle_options(PyObject *types, PyObject *funcs, PyObject *left_out, const BtHeader *h,
                      PyObject *options)
{
    PyObject *handles, *nulls, *k, *v;
    Py_ssize_t pos = 0;

    if (options == Py_None)
        return 0;
    handles = PyDict_GetItemString(options, "handles"); /* borrowed */
    nulls = PyDict_GetItemString(options, "null_handles");
    while (handles && PyDict_Check(handles) && PyDict_Next(handles, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || !PyUnicode_Check(v)) {
            PyErr_Format(PyExc_TypeError,
                         "bind(): handles={%R: %R}: expected type names to "
                         "function names",
                         k, v);
            return -1;
        }
        if (set_destructor(types, funcs, left_out, h, k, v) < 0)
            return -1;
    }
    pos = 0;
    while (nulls && PyDict_Check(nulls) && PyDict_Next(nulls, &pos, &k, &v)) {
        if (!PyUnicode_Check(k)) {
            PyErr_Format(PyExc_TypeError,
                         "bind(): null_handles={%R: ...}: expected a function "
                         "name",
                         k);
            return -1;
        }
        if (check_null_name(funcs, left_out, h, k) < 0)
            return -1;
    }
    return 0;
}
