/* bt_dispatch.c - binding, cached overload selection and the no-match error. */

/* Shared by bindthem.Function (bt_function.c) and bindthem.cuda.Kernel
 * (bt_cuda_kernel.c); see bt_dispatch.h. */
#include "bt_dispatch.h"

#include <string.h>

#define CACHE_MIN 16
#define CACHE_MAX 4096

int bt_dispatch_init(BtDispatch *d, BtState *st, const char *name, const BtOverload *ovs,
                     const BtCall *calls, int n, const char *what)
{
    int i, j;

    memset(d, 0, sizeof *d);
    d->n_ovs = n;
    d->n_py = calls[0].n_py;
    d->slots = PyMem_Calloc((size_t)n, sizeof *d->slots);
    if (!d->slots) {
        PyErr_NoMemory();
        return -1;
    }
    for (j = 0; j < n; j++)
        d->slots[j] = calls[j].slots;
    d->name = PyUnicode_InternFromString(name);
    if (!d->name)
        return -1;
    d->qualname = Py_NewRef(d->name);
    d->cname = PyUnicode_AsUTF8(d->name);
    d->names = PyTuple_New(d->n_py);
    d->overloads = PyTuple_New(n);
    if (!d->cname || !d->names || !d->overloads)
        return -1;
    for (i = 0; i < d->n_py; i++) {
        PyObject *s = PyUnicode_InternFromString(ovs[0].decl->params[calls[0].slots[i].cidx].name);
        if (!s)
            return -1;
        PyTuple_SET_ITEM(d->names, i, s);
    }
    for (j = 0; j < n; j++) {
        PyObject *s;
        if (calls[j].n_py != d->n_py)
            goto differ;
        for (i = 0; i < d->n_py; i++)
            if (strcmp(ovs[j].decl->params[calls[j].slots[i].cidx].name,
                       ovs[0].decl->params[calls[0].slots[i].cidx].name) != 0)
                goto differ;
        s = PyUnicode_FromString(calls[j].signature);
        if (!s)
            return -1;
        PyTuple_SET_ITEM(d->overloads, j, s);
    }
    return 0;
differ:
    PyErr_Format(st->BindError,
                 "cannot bind '%s': its overloads %s and %s take different Python parameters; "
                 "remapped %s must share one parameter list",
                 name, calls[0].signature, calls[j].signature, what);
    return -1;
}

void bt_dispatch_clear(BtDispatch *d)
{
    Py_CLEAR(d->name);
    Py_CLEAR(d->qualname);
    Py_CLEAR(d->names);
    Py_CLEAR(d->overloads);
    PyMem_Free(d->slots);
    PyMem_Free(d->cache);
    PyMem_Free(d->cache_keys);
    memset(d, 0, sizeof *d);
}

/* ---- binding ---- */

/* Python's own message for missing arguments: 'a', 'b' and 'c'. */
static int missing_args(const BtDispatch *d, PyObject *const *slots)
{
    PyObject *list = NULL, *msg = NULL;
    Py_ssize_t n;
    int k;

    if (d->terse_missing) {
        for (k = 0; slots[k]; k++)
            ;
        PyErr_Format(PyExc_TypeError, "%U() missing required argument '%U' (position %d)",
                     d->qualname, PyTuple_GET_ITEM(d->names, k), k + 1);
        return -1;
    }
    list = PyList_New(0);
    if (!list)
        return -1;
    for (k = 0; k < d->n_py; k++) {
        if (!slots[k]) {
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
            msg = PyUnicode_FromFormat("%U() missing %zd required positional arguments: %U%s and %U",
                                       d->qualname, n, joined, n > 2 ? "," : "",
                                       PyList_GET_ITEM(list, n - 1));
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

int bt_dispatch_bind_kw(const BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, PyObject **slots, const BtDispatchExtra *extra)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, k;
    int i;

    for (i = 0; i < d->n_py; i++)
        slots[i] = i < nargs ? args[i] : NULL;
    for (k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int j, found = -1;
        for (j = 0; j < d->n_py; j++) {
            if (PyTuple_GET_ITEM(d->names, j) == kw) {
                found = j;
                break;
            }
        }
        for (j = 0; found < 0 && j < d->n_py; j++) {
            int eq = PyUnicode_Compare(PyTuple_GET_ITEM(d->names, j), kw);
            if (eq == -1 && PyErr_Occurred())
                return -1;
            if (eq == 0)
                found = j;
        }
        if (found < 0 && extra) {
            for (j = 0; j < extra->n; j++) {
                if (PyUnicode_CompareWithASCIIString(kw, extra->names[j]) == 0) {
                    extra->out[j] = args[nargs + k];
                    break;
                }
            }
            if (j < extra->n)
                continue;
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%S'",
                         d->qualname, kw);
            return -1;
        }
        if (slots[found]) {
            PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%S'",
                         d->qualname, kw);
            return -1;
        }
        slots[found] = args[nargs + k];
    }
    /* after the keywords, as CPython checks them */
    if (nargs > d->n_py) {
        PyErr_Format(PyExc_TypeError, "%U() takes %d positional argument%s but %zd %s given",
                     d->qualname, d->n_py, d->n_py == 1 ? "" : "s", nargs,
                     nargs == 1 ? "was" : "were");
        return -1;
    }
    for (i = 0; i < d->n_py; i++)
        if (!slots[i])
            return missing_args(d, slots);
    return 0;
}

/* ---- selection ---- */

static uint64_t key_hash(const uint8_t *codes, int n)
{
    uint64_t h = 1469598103934665603ULL;
    int i;
    for (i = 0; i < n; i++) {
        h ^= codes[i];
        h *= 1099511628211ULL;
    }
    return h | 1; /* never 0 */
}

/* Scan for the first overload accepting all codes in `pass`. -1 if none. */
static int scan(const BtDispatch *d, const uint8_t *codes, int pass)
{
    int o, i;
    for (o = 0; o < d->n_ovs; o++) {
        const BtArgSlot *s = d->slots[o];
        for (i = 0; i < d->n_py; i++)
            if (!bt_call_accepts(&s[i], codes[i], pass))
                break;
        if (i == d->n_py)
            return o;
    }
    return -1;
}

static int cache_grow(BtDispatch *d)
{
    int cap = d->cache_cap ? d->cache_cap * 2 : CACHE_MIN, i;
    BtDispatchEntry *e = PyMem_Calloc((size_t)cap, sizeof *e);
    uint8_t *k = PyMem_Calloc((size_t)cap, (size_t)(d->n_py ? d->n_py : 1));

    if (!e || !k) {
        PyMem_Free(e);
        PyMem_Free(k);
        return -1;
    }
    for (i = 0; i < cap; i++)
        e[i].ov = -1;
    for (i = 0; i < d->cache_cap; i++) {
        BtDispatchEntry *old = &d->cache[i];
        size_t j;
        if (old->ov < 0)
            continue;
        j = (size_t)old->hash & (size_t)(cap - 1);
        while (e[j].ov >= 0)
            j = (j + 1) & (size_t)(cap - 1);
        e[j] = *old;
        memcpy(k + j * (size_t)d->n_py, d->cache_keys + (size_t)i * (size_t)d->n_py,
               (size_t)d->n_py);
    }
    PyMem_Free(d->cache);
    PyMem_Free(d->cache_keys);
    d->cache = e;
    d->cache_keys = k;
    d->cache_cap = cap;
    return 0;
}

int bt_dispatch_select(BtDispatch *d, const uint8_t *codes, int *pass)
{
    uint64_t h;
    size_t j, mask;
    int ov;

    if (d->n_ovs == 1) {
        ov = scan(d, codes, 1);
        *pass = 1;
        if (ov < 0) {
            ov = scan(d, codes, 2);
            *pass = 2;
        }
        return ov;
    }
    h = key_hash(codes, d->n_py);
    if (d->cache_cap) {
        mask = (size_t)d->cache_cap - 1;
        for (j = (size_t)h & mask; d->cache[j].ov >= 0; j = (j + 1) & mask) {
            if (d->cache[j].hash == h &&
                memcmp(d->cache_keys + j * (size_t)d->n_py, codes, (size_t)d->n_py) == 0) {
                *pass = d->cache[j].pass;
                return d->cache[j].ov;
            }
        }
    }
    ov = scan(d, codes, 1);
    *pass = 1;
    if (ov < 0) {
        ov = scan(d, codes, 2);
        *pass = 2;
    }
    if (ov < 0)
        return -1;
    /* remember it (a failed grow just means no caching) */
    if ((d->cache_used + 1) * 2 > d->cache_cap && d->cache_cap < CACHE_MAX && cache_grow(d) < 0)
        return ov;
    if ((d->cache_used + 1) * 2 > d->cache_cap)
        return ov;
    mask = (size_t)d->cache_cap - 1;
    for (j = (size_t)h & mask; d->cache[j].ov >= 0; j = (j + 1) & mask)
        ;
    d->cache[j].hash = h;
    d->cache[j].ov = ov;
    d->cache[j].pass = *pass;
    memcpy(d->cache_keys + j * (size_t)d->n_py, codes, (size_t)d->n_py);
    d->cache_used++;
    return ov;
}

/* ---- no match ---- */

PyObject *bt_dispatch_no_match(const BtDispatch *d, PyObject *const *args, const uint8_t *codes,
                               const BtDispatchDescribe *how)
{
    const char *(*wants_fn)(const BtArgSlot *, char *, size_t) =
        how && how->wants ? how->wants : bt_call_slot_wants;
    int best = -1, o, i, k;
    PyObject *given = NULL, *wants = NULL, *sigs = NULL, *msg = NULL;
    char buf[128];

    for (o = 0; o < d->n_ovs; o++) {
        for (i = 0; i < d->n_py; i++)
            if (!bt_call_accepts(&d->slots[o][i], codes[i], 2))
                break;
        if (i > best)
            best = i;
    }
    k = best < 0 ? 0 : best;
    wants = PyList_New(0);
    if (!wants)
        goto error;
    for (o = 0; o < d->n_ovs; o++) {
        PyObject *w;
        int c;
        for (i = 0; i < k; i++)
            if (!bt_call_accepts(&d->slots[o][i], codes[i], 2))
                break;
        if (i < k)
            continue;
        w = PyUnicode_FromString(wants_fn(&d->slots[o][k], buf, sizeof buf));
        if (!w)
            goto error;
        c = PySequence_Contains(wants, w);
        if (c == 0)
            c = PyList_Append(wants, w);
        Py_DECREF(w);
        if (c < 0)
            goto error;
    }
    given = how && how->given ? how->given(args[k], k, how->ctx) : bt_call_describe(args[k]);
    if (!given)
        goto error;
    {
        PyObject *nl = PyUnicode_FromString("\n    ");
        sigs = nl ? PyUnicode_Join(nl, d->overloads) : NULL;
        Py_XDECREF(nl);
        if (!sigs)
            goto error;
    }
    {
        PyObject *sep = PyUnicode_FromString(" or ");
        PyObject *w = sep ? PyUnicode_Join(sep, wants) : NULL;
        Py_XDECREF(sep);
        if (!w)
            goto error;
        msg = PyUnicode_FromFormat(
            "%U(): argument '%U' (position %d) got %U, expected %U%s.\nThe overloads are:\n    %U",
            d->name, PyTuple_GET_ITEM(d->names, k), k + 1, given, w,
            k > 0 ? " (given the arguments before it)" : "", sigs);
        Py_DECREF(w);
    }
    if (msg)
        PyErr_SetObject(PyExc_TypeError, msg);
error:
    Py_XDECREF(given);
    Py_XDECREF(wants);
    Py_XDECREF(sigs);
    Py_XDECREF(msg);
    return NULL;
}
