/* bt_dispatch_error.c - the TypeErrors of a call no overload takes: no-bind, no-match. */

#include "bt_dispatch_impl.h"
#include "bt_numpy.h"

#include <string.h>

/* The overloads one per line: C signatures when all share one Python
 * signature, else "f(x, w=1.0): C signature". New reference; built once,
 * at bt_dispatch_init (d->ov_list), for the errors. */
PyObject *bt_dispatch_overload_list(const BtDispatch *d)
{
    PyObject *lines = NULL, *sep = NULL, *r = NULL;
    int o, same = 1;

    for (o = 1; o < d->n_ovs && same; o++) {
        same = PyUnicode_Compare(PyTuple_GET_ITEM(d->pysigs, 0), PyTuple_GET_ITEM(d->pysigs, o)) ==
               0;
        if (PyErr_Occurred())
            return NULL;
    }
    sep = PyUnicode_FromString("\n    ");
    if (!sep)
        return NULL;
    if (same) {
        r = PyUnicode_Join(sep, d->overloads);
        Py_DECREF(sep);
        return r;
    }
    lines = PyList_New(d->n_ovs);
    if (!lines)
        goto done;
    for (o = 0; o < d->n_ovs; o++) {
        PyObject *s = PyUnicode_FromFormat("%U: %U", PyTuple_GET_ITEM(d->pysigs, o),
                                           PyTuple_GET_ITEM(d->overloads, o));
        if (!s)
            goto done;
        PyList_SET_ITEM(lines, o, s);
    }
    r = PyUnicode_Join(sep, lines);
done:
    Py_XDECREF(lines);
    Py_DECREF(sep);
    return r;
}

/* TypeError: the call binds to no group's parameters. Returns NULL. */
PyObject *bt_dispatch_no_bind(const BtDispatch *d, Py_ssize_t nargs, PyObject *kwnames,
                              const BtDispatchExtra *extra)
{
    PyObject *sigs = Py_NewRef(d->ov_list), *kws = PyList_New(0), *sep = NULL, *joined = NULL;
    Py_ssize_t k, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int j;

    if (!sigs || !kws)
        goto done;
    for (k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k), *r;
        for (j = 0; extra && j < extra->n; j++)
            if (PyUnicode_CompareWithASCIIString(kw, extra->names[j]) == 0)
                break;
        if (extra && j < extra->n)
            continue;
        r = PyObject_Repr(kw);
        if (!r || PyList_Append(kws, r) < 0) {
            Py_XDECREF(r);
            goto done;
        }
        Py_DECREF(r);
    }
    sep = PyUnicode_FromString(", ");
    joined = sep ? PyUnicode_Join(sep, kws) : NULL;
    if (!joined)
        goto done;
    PyErr_Format(PyExc_TypeError,
                 "%U(): no overload takes %zd positional argument%s%s%U; the overloads "
                 "are:\n    %U",
                 d->name, nargs, nargs == 1 ? "" : "s",
                 PyList_GET_SIZE(kws) == 0   ? ""
                 : PyList_GET_SIZE(kws) == 1 ? " and keyword "
                                             : " and keywords ",
                 joined, sigs);
done:
    Py_XDECREF(sigs);
    Py_XDECREF(kws);
    Py_XDECREF(sep);
    Py_XDECREF(joined);
    return NULL;
}

/* Whether overload o is of group g and takes the arguments before k (p's
 * codes, with the conversions). */
static int takes_before(const BtDispatch *d, int g, int o, int k, const BtDispatchPick *p)
{
    int i;

    if (d->ov_group[o] != g)
        return 0;
    for (i = 0; i < k; i++)
        if (!bt_slot_accepts(&d->slots[o][i], p->codes[i], 2))
            return 0;
    return 1;
}

/* New reference: the list of what the overloads of group g that take the
 * arguments before k expect at k (p's codes), each once. */
static PyObject *wants_at(const BtDispatch *d, int g, int k, const BtDispatchPick *p,
                          const BtDispatchHow *how)
{
    const char *(*wants_fn)(const BtArgSlot *, char *, size_t) = how && how->wants ? how->wants
                                                                                   : bt_slot_wants;
    PyObject *wants = PyList_New(0), *w;
    char buf[128];
    int o, c;

    for (o = 0; wants && o < d->n_ovs; o++) {
        if (!takes_before(d, g, o, k, p))
            continue;
        w = PyUnicode_FromString(wants_fn(&d->slots[o][k], buf, sizeof buf));
        c = w ? PySequence_Contains(wants, w) : -1;
        if (c == 0)
            c = PyList_Append(wants, w);
        Py_XDECREF(w);
        if (c < 0)
            Py_CLEAR(wants);
    }
    return wants;
}

/* The conversion that would match, for a NumPy array of another dtype where
 * every overload of group g that takes the arguments before k wants an array
 * of one dtype at k: "\nIf that is what you meant, convert it (a copy):
 * x.astype(np.int32)", and for an array the function writes, where to read
 * the results. "" when there is none to suggest. New reference. */
static PyObject *conversion_hint(const BtDispatch *d, int g, int k, const BtDispatchPick *p)
{
    const BtArgSlot *want = NULL, *s;
    PyObject *arg = p->argv[k];
    int o, written = 0;

    if (!arg || !PyArray_Check(arg))
        return PyUnicode_FromString("");
    for (o = 0; o < d->n_ovs; o++) {
        if (!takes_before(d, g, o, k, p))
            continue;
        s = &d->slots[o][k];
        if (!s->is_array || s->is_string || bt_slot_is_record(s) ||
            bt_type(s->type)->npy_type < 0 || (want && want->type != s->type))
            return PyUnicode_FromString("");
        want = s;
        written |= !s->is_const;
    }
    if (!want || PyArray_TYPE((PyArrayObject *)arg) == bt_type(want->type)->npy_type)
        return PyUnicode_FromString("");
    if (written)
        return PyUnicode_FromFormat("\nIf that is what you meant, convert it (a copy, which the "
                                    "function writes): %U2 = %U.astype(np.%s), pass %U2 and read "
                                    "the results from it.",
                                    PyTuple_GET_ITEM(p->names, k), PyTuple_GET_ITEM(p->names, k),
                                    bt_type(want->type)->npname, PyTuple_GET_ITEM(p->names, k));
    return PyUnicode_FromFormat(
        "\nIf that is what you meant, convert it (a copy): %U.astype(np.%s)",
        PyTuple_GET_ITEM(p->names, k), bt_type(want->type)->npname);
}

/* TypeError naming the argument where the best overload stops matching.
 * One group: p holds the bound call. Several: gv, rebound into p for each
 * overload's group. *text (text not NULL) receives a new reference to
 * the message it raised with, when it built one. Returns NULL. */
PyObject *bt_dispatch_mismatch(const BtDispatch *d, const BtDispatchGiven *gv, BtDispatchPick *p,
                               const BtDispatchHow *how, PyObject **text)
{
    int best = -1, first = 0, o, i, k, g, n;
    PyObject *given = NULL, *wants = NULL, *sigs = NULL, *msg = NULL, *w = NULL, *sep = NULL;
    PyObject *hint = NULL;

    if (d->n_ovs == 0) { /* an open Function before its first instantiation */
        PyErr_Format(PyExc_TypeError, "%s() has no instantiation yet", d->cname);
        return NULL;
    }
    for (o = 0; o < d->n_ovs; o++) {
        if (gv && !bt_dispatch_group_bind(d, d->ov_group[o], gv, p))
            continue;
        n = d->groups[d->ov_group[o]].n_py;
        for (i = 0; i < n; i++)
            if (!bt_slot_accepts(&d->slots[o][i], p->codes[i], 2))
                break;
        if (i > best) {
            best = i;
            first = o;
        }
    }
    g = d->ov_group[first];
    if (gv)
        bt_dispatch_group_bind(d, g, gv, p);
    k = best < 0 ? 0 : best;
    if (k >= d->groups[g].n_py) { /* cannot be: that overload would have matched */
        PyErr_SetString(PyExc_SystemError, "bindthem: dispatch found no mismatch");
        return NULL;
    }
    wants = wants_at(d, g, k, p, how);
    if (!wants)
        goto error;
    if (!p->argv[k])
        given = PyUnicode_FromString("nothing (it was left out)");
    else if (how && how->given)
        given = how->given(p->argv[k], p->src[k], how->ctx);
    else
        given = bt_slot_describe(p->argv[k]);
    sigs = Py_NewRef(d->ov_list);
    sep = PyUnicode_FromString(" or ");
    w = sep ? PyUnicode_Join(sep, wants) : NULL;
    hint = how && how->wants ? PyUnicode_FromString("") : conversion_hint(d, g, k, p);
    if (!given || !sigs || !w || !hint)
        goto error;
    msg = PyUnicode_FromFormat(
        "%U(): argument '%U' (position %d) got %U, expected %U%s.%U\nThe overloads are:\n    %U",
        d->name, PyTuple_GET_ITEM(p->names, k), k + 1, given, w,
        k > 0 ? " (given the arguments before it)" : "", hint, sigs);
    if (msg)
        PyErr_SetObject(PyExc_TypeError, msg);
    if (msg && text)
        *text = Py_NewRef(msg);
error:
    Py_XDECREF(given);
    Py_XDECREF(wants);
    Py_XDECREF(sigs);
    Py_XDECREF(hint);
    Py_XDECREF(sep);
    Py_XDECREF(w);
    Py_XDECREF(msg);
    return NULL;
}

/* The kept message of the last no-match, when args have its keys (a new
 * reference), else NULL. */
static PyObject *kept_miss(BtDispatch *d, PyObject *const *args)
{
    PyObject *msg = NULL;

    BT_FT_LOCK(&d->lock);
    if (d->miss_msg && bt_slot_same_keys_omitting(args, d->miss_keys, d->n_py))
        msg = Py_NewRef(d->miss_msg);
    BT_FT_UNLOCK(&d->lock);
    return msg;
}

/* Keeps msg as the message of args' no-match, when they have keys. */
static void keep_miss(BtDispatch *d, PyObject *const *args, PyObject *msg)
{
    const void *keys[BT_MAX_PARAMS];
    PyObject *old = NULL;

    if (!bt_slot_keys(args, d->n_py, keys))
        return;
    BT_FT_LOCK(&d->lock);
    if (!d->miss_keys)
        d->miss_keys = PyMem_Calloc((size_t)d->n_py + 1, sizeof *d->miss_keys);
    if (d->miss_keys) {
        memcpy(d->miss_keys, keys, sizeof *keys * (size_t)d->n_py);
        old = d->miss_msg;
        d->miss_msg = Py_NewRef(msg);
    }
    BT_FT_UNLOCK(&d->lock);
    Py_XDECREF(old);
}

PyObject *bt_dispatch_no_match(BtDispatch *d, PyObject *const *args, const uint8_t *codes)
{
    BtDispatchPick p;
    PyObject *msg;
    int i;

    if ((msg = kept_miss(d, args)) != NULL) {
        PyErr_SetObject(PyExc_TypeError, msg);
        Py_DECREF(msg);
        return NULL;
    }
    for (i = 0; i < d->n_py; i++) {
        p.argv[i] = args[i];
        p.codes[i] = codes[i];
        p.src[i] = i;
    }
    p.names = d->names;
    bt_dispatch_mismatch(d, NULL, &p, NULL, &msg);
    if (msg) {
        keep_miss(d, args, msg);
        Py_DECREF(msg);
    }
    return NULL;
}
