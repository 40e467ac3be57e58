/* bt_dispatch_open.c - open dispatchers (instantiation on demand): set-up, adding overloads. */

#include "bt_dispatch_impl.h"

#include "bt_pyname.h"

/* The defaults of an open function's declaration decl (enums: its
 * header's), whose types no instantiation fixes yet: reprs[i] (per C
 * parameter, NULL-initialised) a new reference to the repr of the literal
 * parameter i defaults to, for the trailing run of Python parameters whose
 * defaults are literals or an enum parameter's members (bt_slot_defaults's
 * rule but the type's check; a C string takes none), else NULL. 0 or -1. */
static int open_defaults(const BtDecl *decl, const BtEnum *enums, PyObject **reprs)
{
    int i;

    for (i = decl->n_params - 1; i >= 0; i--) {
        const BtParam *p = &decl->params[i];
        const BtEnum *e = p->t.enum_ref > 0 && enums ? &enums[p->t.enum_ref - 1] : NULL;
        PyObject *v;
        if (!bt_pyname_takes(decl, i))
            continue;
        if (p->t.is_array || p->t.is_string || !p->defval || !(v = bt_slot_literal(p->defval, e)))
            break;
        reprs[i] = PyObject_Repr(v);
        Py_DECREF(v);
        if (!reprs[i])
            return -1;
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* An open dispatcher's one group, from decl: its Python names, which have
 * defaults (reprs, open_defaults'), which are positional-only; and the
 * text signature. 0 or -1. */
static int open_group(BtDispatch *d, const BtDecl *decl, PyObject *const *reprs)
{
    const char *defaults[BT_MAX_PARAMS] = {NULL};
    BtDispatchGroup *gr = &d->groups[0];
    BtBuf b;
    int i, k = 0, posonly = bt_pyname_posonly(decl);

    gr->names = PyTuple_New(d->n_py);
    gr->optional = PyMem_Calloc((size_t)d->n_py + 1, 1);
    if (!gr->names || !gr->optional) {
        if (gr->names)
            PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < decl->n_params; i++) {
        PyObject *s;
        if (!bt_pyname_takes(decl, i))
            continue;
        if (!(s = bt_dispatch_py_name(decl, i)) ||
            (reprs[i] && !(defaults[i] = PyUnicode_AsUTF8(reprs[i])))) {
            Py_XDECREF(s);
            return -1;
        }
        gr->optional[k] = reprs[i] != NULL;
        PyTuple_SET_ITEM(gr->names, k++, s);
        if (k <= posonly && bt_dispatch_add_posonly(d, s) < 0)
            return -1;
    }
    gr->n_py = k;
    d->n_groups = 1;
    d->names = Py_NewRef(gr->names);
    bt_buf_init(&b);
    bt_pyname_signature(&b, decl, defaults);
    d->text_sig = b.failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(&b));
    bt_buf_free(&b);
    return d->text_sig ? 0 : -1;
}

int bt_dispatch_open(BtDispatch *d, const BtDecl *decl, const BtEnum *enums, int cap)
{
    PyObject *reprs[BT_MAX_PARAMS] = {NULL};
    int i, rc = -1;

    memset(d, 0, sizeof *d);
    if (decl->n_params > BT_MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "open function %s: %d parameters, at most %d", decl->name,
                     decl->n_params, BT_MAX_PARAMS);
        return -1;
    }
    for (i = 0; i < decl->n_params; i++)
        d->n_py += bt_pyname_takes(decl, i);
    d->slots = PyMem_Calloc((size_t)cap, sizeof *d->slots);
    d->ov_group = PyMem_Calloc((size_t)cap, sizeof *d->ov_group);
    d->groups = PyMem_Calloc((size_t)cap, sizeof *d->groups);
    d->last_keys = PyMem_Calloc(2 * ((size_t)d->n_py + 1), sizeof *d->last_keys);
    d->prev_keys = d->last_keys ? d->last_keys + d->n_py + 1 : NULL;
    if (!d->slots || !d->ov_group || !d->groups || !d->last_keys) {
        PyErr_NoMemory();
        return -1;
    }
    if (open_defaults(decl, enums, reprs) < 0 || open_group(d, decl, reprs) < 0)
        goto done;
    d->name = PyUnicode_InternFromString(decl->name);
    if (!d->name)
        goto done;
    d->qualname = Py_NewRef(d->name);
    d->cname = PyUnicode_AsUTF8(d->name);
    d->overloads = PyTuple_New(0);
    d->pysigs = PyTuple_New(0);
    d->ov_list = PyUnicode_FromString("");
    if (!d->cname || !d->overloads || !d->pysigs || !d->ov_list)
        goto done;
    d->max_py = d->key_len = d->fast_n = d->min_n = d->n_py;
    while (d->min_n > 0 && d->groups[0].optional[d->min_n - 1])
        d->min_n--;
    d->last_ov = d->prev_ov = -1;
    rc = bt_dispatch_kw_map_build(d); /* the names are fixed: bt_dispatch_add takes only the same */
done:
    for (i = 0; i < decl->n_params; i++)
        Py_XDECREF(reprs[i]);
    return rc;
}

/* Stores o into *field, handing the value it replaces to keep (a reader
 * may still hold it without a reference). 0 or -1. */
static int replace(PyObject **field, PyObject *o, PyObject *keep)
{
    PyObject *old = *field;

    if (!o || PyList_Append(keep, old) < 0) {
        Py_XDECREF(o);
        return -1;
    }
    BT_FT_STORE(field, o);
    Py_DECREF(old);
    return 0;
}

int bt_dispatch_add(BtDispatch *d, const BtDispatch *from, int cap, PyObject *keep)
{
    BtDispatch grown;
    int j, n = d->n_ovs, rc = -1, same;

    if (from->n_groups != 1 || from->min_n != d->min_n ||
        (same = PyObject_RichCompareBool(from->names, d->names, Py_EQ)) == 0) {
        PyErr_Format(PyExc_ValueError,
                     "%s: the overloads to add take other parameters (%R) than it (%R)", d->cname,
                     from->names, d->names);
        return -1;
    }
    if (same < 0)
        return -1;
    if (n + from->n_ovs > cap) {
        PyErr_Format(PyExc_ValueError,
                     "%s has %d overloads, and %d more would pass the most an open function "
                     "takes (%d): list the types it is called with in instantiate.yml",
                     d->cname, n, from->n_ovs, cap);
        return -1;
    }
    BT_FT_LOCK(&d->lock);
    for (j = 0; j < from->n_ovs; j++) {
        d->slots[n + j] = from->slots[j];
        d->ov_group[n + j] = 0;
    }
    grown = *d; /* the grown tuples, for bt_dispatch_overload_list */
    grown.n_ovs = n + from->n_ovs;
    grown.pysigs = PySequence_Concat(d->pysigs, from->pysigs);
    grown.overloads = PySequence_Concat(d->overloads, from->overloads);
    if (!grown.pysigs || !grown.overloads)
        goto done;
    if (replace(&d->ov_list, bt_dispatch_overload_list(&grown), keep) < 0 ||
        replace(&d->overloads, Py_NewRef(grown.overloads), keep) < 0 ||
        replace(&d->pysigs, Py_NewRef(grown.pysigs), keep) < 0)
        goto done;
    Py_CLEAR(d->miss_msg);               /* a kept no-match may match now */
    BT_FT_STORE(&d->n_ovs, grown.n_ovs); /* publishes the overloads: scan reads it last */
    rc = 0;
done:
    Py_XDECREF(grown.pysigs);
    Py_XDECREF(grown.overloads);
    BT_FT_UNLOCK(&d->lock);
    return rc;
}
