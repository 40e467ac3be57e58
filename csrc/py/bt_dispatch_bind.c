/* bt_dispatch_bind.c - arguments to parameters: the keyword map, groups, CPython's messages. */

#include "bt_dispatch_impl.h"

/* 0, or -1 with CPython's TypeError when keyword kw names a positional-only
 * parameter (one before the signature's '/'). */
static int refuse_posonly(const BtDispatch *d, PyObject *kw)
{
    int c = d->posonly ? PySet_Contains(d->posonly, kw) : 0;
    if (c > 0)
        PyErr_Format(PyExc_TypeError,
                     "%U() got some positional-only arguments passed as keyword arguments: '%S' "
                     "(the parameters up to the last one the header leaves unnamed or names "
                     "with a Python keyword are positional-only; pass it by position)",
                     d->qualname, kw);
    return c ? -1 : 0;
}

/* The slot of name pointer p in a keyword map of mask + 1 slots. */
static size_t kw_hash(const PyObject *p, size_t mask) { return ((uintptr_t)p >> 4) & mask; }

/* d->kw_map for d->names (interned: a keyword spelled in the caller's code
 * is the same object), but for the positional-only ones (d->posonly, set
 * before): a keyword the map finds is a parameter's and may be passed so.
 * 0, or -1 with an exception set. */
int bt_dispatch_kw_map_build(BtDispatch *d)
{
    size_t cap = 4, h;
    int i;

    while (cap < 2 * (size_t)d->n_py)
        cap *= 2;
    d->kw_map = PyMem_Calloc(cap, sizeof *d->kw_map);
    if (!d->kw_map) {
        PyErr_NoMemory();
        return -1;
    }
    d->kw_mask = cap - 1;
    for (i = 0; i < d->n_py; i++) {
        PyObject *name = PyTuple_GET_ITEM(d->names, i);
        int po = d->posonly ? PySet_Contains(d->posonly, name) : 0;
        if (po < 0)
            return -1;
        if (po)
            continue;
        for (h = kw_hash(name, d->kw_mask); d->kw_map[h].name; h = (h + 1) & d->kw_mask)
            ;
        d->kw_map[h].name = name;
        d->kw_map[h].pos = i;
    }
    return 0;
}

/* Python's own message for missing arguments: 'a', 'b' and 'c'. */
static int missing_args(const BtDispatch *d, PyObject *const *slots)
{
    const uint8_t *opt = d->groups[0].optional;
    PyObject *list = NULL, *msg = NULL;
    Py_ssize_t n;
    int k;

    list = PyList_New(0);
    if (!list)
        return -1;
    for (k = 0; k < d->n_py; k++) {
        if (!slots[k] && !opt[k]) {
            PyObject *r = PyObject_Repr(PyTuple_GET_ITEM(d->names, k));
            if (!r || PyList_Append(list, r) < 0) {
                Py_XDECREF(r);
                goto error;
            }
            Py_DECREF(r);
        }
    }
    n = PyList_GET_SIZE(list);
    if (n == 1) {
        msg = PyUnicode_FromFormat("%U() missing 1 required positional argument: %U", d->qualname,
                                   PyList_GET_ITEM(list, 0));
    } else {
        PyObject *head = PyList_GetSlice(list, 0, n - 1), *sep = PyUnicode_FromString(", ");
        PyObject *joined = head && sep ? PyUnicode_Join(sep, head) : NULL;
        if (joined)
            msg = PyUnicode_FromFormat(
                "%U() missing %zd required positional arguments: %U%s and %U", d->qualname, n,
                joined, n > 2 ? "," : "", PyList_GET_ITEM(list, n - 1));
        Py_XDECREF(head);
        Py_XDECREF(sep);
        Py_XDECREF(joined);
    }
    if (msg)
        PyErr_SetObject(PyExc_TypeError, msg);
error:
    Py_XDECREF(list);
    Py_XDECREF(msg);
    return -1;
}

/* Index of keyword kw among names, -1 if none, -2 with an exception. */
static int name_index(PyObject *names, PyObject *kw)
{
    Py_ssize_t n = PyTuple_GET_SIZE(names), j;

    for (j = 0; j < n; j++)
        if (PyTuple_GET_ITEM(names, j) == kw)
            return (int)j;
    for (j = 0; j < n; j++) {
        int eq = PyUnicode_Compare(PyTuple_GET_ITEM(names, j), kw);
        if (eq == -1 && PyErr_Occurred())
            return -2;
        if (eq == 0)
            return (int)j;
    }
    return -1;
}

/* One group: the position of keyword kw among d->names; the keyword map
 * first (one pointer compare, as a name in the caller's code is the
 * interned one; a name it finds is no positional-only one), else the
 * positional-only TypeError (-2) or name_index's compares by value. */
static int kw_index(const BtDispatch *d, PyObject *kw)
{
    size_t h;

    for (h = kw_hash(kw, d->kw_mask); d->kw_map[h].name; h = (h + 1) & d->kw_mask)
        if (d->kw_map[h].name == kw)
            return d->kw_map[h].pos;
    return refuse_posonly(d, kw) < 0 ? -2 : name_index(d->names, kw);
}

/* Appends repr(s) to list unless s is a positional-only name. 0 or -1. */
static int append_keyword(const BtDispatch *d, PyObject *list, PyObject *s)
{
    int c = d->posonly ? PySet_Contains(d->posonly, s) : 0;
    PyObject *r;

    if (c != 0)
        return c < 0 ? -1 : 0;
    r = PyObject_Repr(s);
    c = r ? PyList_Append(list, r) : -1;
    Py_XDECREF(r);
    return c;
}

/* New reference: what the TypeError for a keyword that names no parameter
 * says after the keyword: every keyword the call takes, the parameters'
 * names (every group's), then extra's. */
static PyObject *keywords_text(const BtDispatch *d, const BtDispatchExtra *extra)
{
    PyObject *names = d->all_names ? d->all_names : d->names, *list = PyList_New(0);
    PyObject *sep = NULL, *joined = NULL, *r = NULL;
    Py_ssize_t j;

    if (!list)
        return NULL;
    for (j = 0; j < PyTuple_GET_SIZE(names); j++)
        if (append_keyword(d, list, PyTuple_GET_ITEM(names, j)) < 0)
            goto done;
    for (j = 0; extra && j < extra->n; j++) {
        PyObject *s = PyUnicode_FromString(extra->names[j]);
        int rc = s ? append_keyword(d, list, s) : -1;
        Py_XDECREF(s);
        if (rc < 0)
            goto done;
    }
    if (PyList_GET_SIZE(list) == 0) {
        r = PyUnicode_FromFormat("it takes %s", PyTuple_GET_SIZE(names)
                                                    ? "no keyword arguments (pass them by position)"
                                                    : "no arguments");
        goto done;
    }
    sep = PyUnicode_FromString(", ");
    joined = sep ? PyUnicode_Join(sep, list) : NULL;
    if (joined)
        r = PyUnicode_FromFormat("the keyword%s it takes %s %U (spelled exactly, case included)",
                                 PyList_GET_SIZE(list) == 1 ? "" : "s",
                                 PyList_GET_SIZE(list) == 1 ? "is" : "are", joined);
done:
    Py_DECREF(list);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return r;
}

/* The TypeError for a keyword kw that names no parameter: bindthem's own
 * text (CPython's differs across versions). Without extra keywords (a
 * Function's call) the list of keywords is built at the first such error
 * and kept (d->kw_text): code that probes with try/except pays for it once. */
static void unknown_keyword(BtDispatch *d, PyObject *kw, const BtDispatchExtra *extra)
{
    PyObject *text = extra ? NULL : BT_FT_LOAD(&d->kw_text);

    if (!text) {
        text = keywords_text(d, extra);
        if (!text)
            return;
        if (!extra) { /* kept; free-threaded, the first of two racing writers wins */
#ifdef Py_GIL_DISABLED
            PyObject *none = NULL;
            if (!__atomic_compare_exchange_n(&d->kw_text, &none, text, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE)) {
                Py_DECREF(text);
                text = none;
            }
#else
            d->kw_text = text;
#endif
        }
    }
    PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%S'; %U", d->qualname,
                 kw, text);
    if (extra)
        Py_DECREF(text);
}

/* A keyword that names no parameter: extra's, or the TypeError. 0 or -1. */
static int other_keyword(BtDispatch *d, PyObject *kw, PyObject *value, const BtDispatchExtra *extra)
{
    int j;

    for (j = 0; extra && j < extra->n; j++) {
        if (PyUnicode_CompareWithASCIIString(kw, extra->names[j]) == 0) {
            extra->out[j] = value;
            return 0;
        }
    }
    unknown_keyword(d, kw, extra);
    return -1;
}

/* One group: binds args[nargs] and the keywords named by kwnames into
 * slots[n_py] (NULL where an argument with a default is left out), or
 * raises TypeError with CPython's message (bindthem's for an unknown
 * keyword). extra may be NULL; src (when not NULL) gets the given number j
 * of each, or -1.
 * Returns how many parameters were given (n_py: none left out), or -1. */
int bt_dispatch_bind_one(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         PyObject **slots, const BtDispatchExtra *extra, int *src)
{
    const uint8_t *opt = d->groups[0].optional;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, k;
    int i, j = (int)nargs, given = nargs < d->n_py ? (int)nargs : d->n_py;

    for (i = 0; i < given; i++)
        slots[i] = args[i];
    for (; i < d->n_py; i++)
        slots[i] = NULL;
    for (i = 0; src && i < d->n_py; i++)
        src[i] = i < given ? i : -1;
    for (k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int found = kw_index(d, kw);
        if (found == -2)
            return -1;
        if (found < 0) {
            if (other_keyword(d, kw, args[nargs + k], extra) < 0)
                return -1;
            continue;
        }
        if (slots[found]) {
            PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%S'", d->qualname,
                         kw);
            return -1;
        }
        slots[found] = args[nargs + k];
        if (src)
            src[found] = j;
        j++;
        given++;
    }
    /* after the keywords, as CPython checks them */
    if (nargs > d->n_py) {
        for (i = 0; i < d->n_py && !opt[i]; i++)
            ;
        if (i < d->n_py)
            PyErr_Format(PyExc_TypeError,
                         "%U() takes from %d to %d positional arguments but %zd %s given",
                         d->qualname, i, d->n_py, nargs, nargs == 1 ? "was" : "were");
        else
            PyErr_Format(PyExc_TypeError, "%U() takes %d positional argument%s but %zd %s given",
                         d->qualname, d->n_py, d->n_py == 1 ? "" : "s", nargs,
                         nargs == 1 ? "was" : "were");
        return -1;
    }
    for (i = 0; given < d->n_py && i < d->n_py; i++)
        if (!slots[i] && !opt[i])
            return missing_args(d, slots);
    return given;
}

/* Binds the given arguments to group g into p (codes included). 1 when
 * they bind, 0 when they don't (too many, unknown or twice-given names, a
 * parameter without default left out). */
int bt_dispatch_group_bind(const BtDispatch *d, int g, const BtDispatchGiven *gv, BtDispatchPick *p)
{
    const BtDispatchGroup *gr = &d->groups[g];
    int i, k;

    if (gv->nargs > gr->n_py)
        return 0;
    for (i = 0; i < gr->n_py; i++) {
        p->argv[i] = NULL;
        p->src[i] = -1;
    }
    for (i = 0; i < gv->nargs; i++) {
        p->argv[i] = gv->obj[i];
        p->src[i] = i;
    }
    for (k = 0; k < gv->nkw; k++) {
        int pos = gr->pos[gv->kid[k]];
        if (pos < 0 || p->argv[pos])
            return 0;
        p->argv[pos] = gv->obj[gv->nargs + k];
        p->src[pos] = (int)gv->nargs + k;
    }
    for (i = 0; i < gr->n_py; i++) {
        if (!p->argv[i] && !gr->optional[i])
            return 0;
        p->codes[i] = p->argv[i] ? gv->code[p->src[i]] : BT_K_OMITTED;
    }
    p->names = gr->names;
    return 1;
}

/* Sorts the keywords (parameters of some group, extra's, or an error) and
 * reads the codes. 0, 1 when the call has more arguments than any group
 * takes, or -1 with an exception. */
int bt_dispatch_read_given(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames, const BtDispatchExtra *extra,
                           const BtDispatchHow *how, BtDispatchGiven *gv)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, k;
    int j, g, too_many = nargs > d->max_py;

    gv->nargs = nargs;
    gv->nkw = 0;
    for (k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int id = refuse_posonly(d, kw) < 0 ? -2 : name_index(d->all_names, kw);
        if (id == -2)
            return -1;
        if (id < 0) {
            if (other_keyword(d, kw, args[nargs + k], extra) < 0)
                return -1;
            continue;
        }
        if (too_many || nargs + gv->nkw >= d->max_py) {
            too_many = 1;
            continue;
        }
        gv->kid[gv->nkw] = id;
        gv->kw[gv->nkw] = kw;
        gv->obj[nargs + gv->nkw++] = args[nargs + k];
    }
    if (too_many)
        return 1;
    if (how && how->ready && how->ready(how->ctx) < 0)
        return -1;
    for (j = 0; j < nargs; j++)
        gv->obj[j] = args[j];
    for (j = 0; j < nargs + gv->nkw; j++) {
        PyObject *name = j >= nargs ? gv->kw[j - nargs] : NULL;
        int c;
        for (g = 0; !name; g++) /* a positional: the first group's name there */
            if (d->groups[g].n_py > j)
                name = PyTuple_GET_ITEM(d->groups[g].names, j);
        c = bt_dispatch_read_code(gv->obj[j], j, name, how);
        if (c < 0)
            return -1;
        gv->code[j] = (uint8_t)c;
    }
    return 0;
}

int bt_dispatch_bind(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const BtDispatchExtra *extra, BtDispatchPick *p)
{
    p->names = d->names;
    return bt_dispatch_bind_one(d, args, nargs, kwnames, p->argv, extra, NULL);
}
