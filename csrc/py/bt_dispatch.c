/* bt_dispatch.c - setting up a dispatcher: names, signature groups, docstring; clearing it. */

/* Shared by bindthem.Function (bt_function.c) and bindthem.cuda.Kernel
 * (bt_cudapy_kernel.c); see bt_dispatch.h. The call's side is in the
 * other bt_dispatch_*.c files (bt_dispatch_impl.h lists them). */
#include "bt_dispatch_impl.h"

#include <string.h>

#include "bt_pyname.h"

/* New reference: "(a, b, c=1.0)", overload ov's Python signature
 * (bt_pyname_signature) with call c's defaults. */
static PyObject *params_text(const BtOverload *ov, const BtCall *c)
{
    const char *defaults[BT_MAX_PARAMS] = {NULL};
    BtBuf b;
    PyObject *r;
    int i;

    for (i = 0; i < c->n_py; i++)
        if (c->slots[i].has_default)
            defaults[c->slots[i].cidx] = c->slots[i].defrepr;
    bt_buf_init(&b);
    bt_pyname_signature(&b, ov->decl, defaults);
    r = b.failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(&b));
    bt_buf_free(&b);
    return r;
}

/* New reference: parameter i's Python name (bt_pyname_put: "lambda_" for
 * `lambda`), interned, so that a keyword spelled in the caller's code is
 * the same object. */
PyObject *bt_dispatch_py_name(const BtDecl *decl, int i)
{
    BtBuf b;
    PyObject *r;

    bt_buf_init(&b);
    bt_pyname_put(&b, decl, i);
    r = b.failed ? PyErr_NoMemory() : PyUnicode_InternFromString(bt_buf_str(&b));
    bt_buf_free(&b);
    return r;
}

/* New reference: the Python names of call c's parameters, in order. */
static PyObject *call_names(const BtOverload *ov, const BtCall *c)
{
    PyObject *names = PyTuple_New(c->n_py);
    int i;

    for (i = 0; names && i < c->n_py; i++) {
        PyObject *s = bt_dispatch_py_name(ov->decl, c->slots[i].cidx);
        if (!s) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    return names;
}

/* The group of call c: an existing one with its parameter names, or a new one. */
static int find_group(BtDispatch *d, const BtOverload *ov, const BtCall *c)
{
    BtDispatchGroup *gr;
    PyObject *names = call_names(ov, c);
    int g, same;

    if (!names)
        return -1;
    for (g = 0; g < d->n_groups; g++) {
        same = PyObject_RichCompareBool(d->groups[g].names, names, Py_EQ);
        if (same != 0) {
            Py_DECREF(names);
            return same < 0 ? -1 : g;
        }
    }
    gr = &d->groups[d->n_groups];
    gr->n_py = c->n_py;
    gr->names = names;
    gr->optional = PyMem_Calloc((size_t)c->n_py + 1, 1);
    if (!gr->optional) {
        PyErr_NoMemory();
        return -1;
    }
    if (c->n_py > d->max_py)
        d->max_py = c->n_py;
    return d->n_groups++;
}

/* Records name, a positional-only parameter's (bt_pyname_posonly: one up
 * to the last unnamed or keyword-named one), as never a keyword. 0 or -1. */
int bt_dispatch_add_posonly(BtDispatch *d, PyObject *name)
{
    if (!d->posonly && !(d->posonly = PySet_New(NULL)))
        return -1;
    return PySet_Add(d->posonly, name);
}

/* Several groups: number every name, and map ids to each group's positions. */
static int number_names(BtState *st, BtDispatch *d)
{
    PyObject *all = PyList_New(0);
    Py_ssize_t n;
    int g, i, rc = -1;

    if (!all)
        return -1;
    for (g = 0; g < d->n_groups; g++) {
        for (i = 0; i < d->groups[g].n_py; i++) {
            PyObject *s = PyTuple_GET_ITEM(d->groups[g].names, i);
            int c = PySequence_Contains(all, s);
            if (c < 0 || (c == 0 && PyList_Append(all, s) < 0))
                goto done;
        }
    }
    n = PyList_GET_SIZE(all);
    if (n > 0xFFFF) {
        PyErr_Format(st->BindError, "%s: more than 65535 parameter names", d->cname);
        goto done;
    }
    for (g = 0; g < d->n_groups; g++) {
        BtDispatchGroup *gr = &d->groups[g];
        Py_ssize_t id;
        gr->pos = PyMem_Malloc(sizeof *gr->pos * (size_t)n);
        if (!gr->pos) {
            PyErr_NoMemory();
            goto done;
        }
        for (id = 0; id < n; id++)
            gr->pos[id] = -1;
        for (i = 0; i < gr->n_py; i++) {
            id = PySequence_Index(all, PyTuple_GET_ITEM(gr->names, i));
            if (id < 0)
                goto done;
            gr->pos[id] = i;
        }
    }
    d->all_names = PyList_AsTuple(all);
    /* nargs, number of keywords, a code per positional, (id, code) per keyword */
    d->key_len = 2 + 3 * d->max_py;
    rc = d->all_names ? 0 : -1;
done:
    Py_DECREF(all);
    return rc;
}

int bt_dispatch_init(BtState *st, BtDispatch *d, const char *name, const BtOverload *ovs,
                     const BtCall *calls, int n)
{
    int i, j;

    memset(d, 0, sizeof *d);
    d->n_ovs = n;
    d->slots = PyMem_Calloc((size_t)n, sizeof *d->slots);
    d->ov_group = PyMem_Calloc((size_t)n, sizeof *d->ov_group);
    d->groups = PyMem_Calloc((size_t)n, sizeof *d->groups); /* at most one per overload */
    if (!d->slots || !d->ov_group || !d->groups) {
        PyErr_NoMemory();
        return -1;
    }
    d->name = PyUnicode_InternFromString(name);
    if (!d->name)
        return -1;
    d->qualname = Py_NewRef(d->name);
    d->cname = PyUnicode_AsUTF8(d->name);
    d->overloads = PyTuple_New(n);
    d->pysigs = PyTuple_New(n);
    if (!d->cname || !d->overloads || !d->pysigs)
        return -1;
    for (j = 0; j < n; j++) {
        const BtCall *c = &calls[j];
        PyObject *s, *params;
        int g = find_group(d, &ovs[j], c);
        if (g < 0)
            return -1;
        d->slots[j] = c->slots;
        d->ov_group[j] = g;
        for (i = 0; i < c->n_py; i++) {
            d->groups[g].optional[i] |= (uint8_t)c->slots[i].has_default;
            if (c->slots[i].posonly &&
                bt_dispatch_add_posonly(d, PyTuple_GET_ITEM(d->groups[g].names, i)) < 0)
                return -1;
        }
        s = PyUnicode_FromString(c->signature);
        if (!s)
            return -1;
        PyTuple_SET_ITEM(d->overloads, j, s);
        params = params_text(&ovs[j], c);
        if (!params)
            return -1;
        s = PyUnicode_FromFormat("%U%U", d->name, params);
        if (j == 0)
            d->text_sig = Py_NewRef(params);
        Py_DECREF(params);
        if (!s)
            return -1;
        PyTuple_SET_ITEM(d->pysigs, j, s);
    }
    d->ov_list = bt_dispatch_overload_list(d);
    if (!d->ov_list)
        return -1;
    d->n_py = d->groups[0].n_py;
    d->names = Py_NewRef(d->groups[0].names);
    d->last_ov = d->prev_ov = -1;
    d->last_keys = PyMem_Calloc(2 * ((size_t)d->n_py + 1), sizeof *d->last_keys);
    d->prev_keys = d->last_keys ? d->last_keys + d->n_py + 1 : NULL;
    if (!d->last_keys) {
        PyErr_NoMemory();
        return -1;
    }
    if (bt_dispatch_kw_map_build(d) < 0)
        return -1;
    d->key_len = d->n_py;
    d->fast_n = d->n_groups > 1 ? -1 : d->n_py;
    d->min_n = d->n_groups > 1 ? d->n_py + 1 : d->n_py;
    while (d->n_groups == 1 && d->min_n > 0 && d->groups[0].optional[d->min_n - 1])
        d->min_n--;
    return d->n_groups > 1 ? number_names(st, d) : 0;
}

void bt_dispatch_clear(BtDispatch *d)
{
    int g, n_groups = d->n_ovs > d->n_groups ? d->n_ovs : d->n_groups; /* a failed init's too */

    Py_CLEAR(d->name);
    Py_CLEAR(d->qualname);
    Py_CLEAR(d->names);
    Py_CLEAR(d->overloads);
    Py_CLEAR(d->pysigs);
    Py_CLEAR(d->text_sig);
    Py_CLEAR(d->ov_list);
    Py_CLEAR(d->all_names);
    Py_CLEAR(d->posonly);
    for (g = 0; d->groups && g < n_groups; g++) {
        Py_CLEAR(d->groups[g].names);
        PyMem_Free(d->groups[g].optional);
        PyMem_Free(d->groups[g].pos);
    }
    PyMem_Free(d->groups);
    PyMem_Free(d->ov_group);
    PyMem_Free(d->slots);
    bt_dispatch_cache_free(d->cache);
    PyMem_Free(d->last_keys);
    Py_CLEAR(d->miss_msg);
    PyMem_Free(d->miss_keys);
    PyMem_Free(d->kw_map);
    Py_CLEAR(d->kw_text);
    memset(d, 0, sizeof *d);
}

/* Is overload o's Python signature the same as an earlier one's? */
static int seen_sig(const BtDispatch *d, int o)
{
    int e;
    for (e = 0; e < o; e++) {
        int c = PyUnicode_Compare(PyTuple_GET_ITEM(d->pysigs, e), PyTuple_GET_ITEM(d->pysigs, o));
        if (c == -1 && PyErr_Occurred())
            return -1;
        if (c == 0)
            return 1;
    }
    return 0;
}

PyObject *bt_dispatch_doc(const BtDispatch *d, const BtOverload *ovs)
{
    BtBuf b;
    PyObject *r = NULL;
    int o, e, k = 0, distinct = 0;

    for (o = 0; o < d->n_ovs; o++) {
        int s = seen_sig(d, o);
        if (s < 0)
            return NULL;
        distinct += !s;
    }
    if (distinct == 1)
        return PyUnicode_FromString(ovs[0].decl->doc ? ovs[0].decl->doc : "");
    bt_buf_init(&b);
    bt_buf_puts(&b, "Overloaded function.");
    for (o = 0; o < d->n_ovs; o++) {
        const char *doc = ovs[o].decl->doc;
        const char *sig = PyUnicode_AsUTF8(PyTuple_GET_ITEM(d->pysigs, o));
        int s = seen_sig(d, o);
        if (s < 0 || !sig)
            goto done;
        if (s)
            continue;
        bt_buf_printf(&b, "\n\n%d. %s", ++k, sig);
        /* each header comment once */
        for (e = 0; doc && *doc && e < o; e++)
            if (ovs[e].decl->doc && strcmp(ovs[e].decl->doc, doc) == 0)
                break;
        if (doc && *doc && e == o)
            bt_buf_printf(&b, "\n\n%s", doc);
    }
    r = b.failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(&b));
done:
    bt_buf_free(&b);
    return r;
}
