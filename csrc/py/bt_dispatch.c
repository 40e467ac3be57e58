/* bt_dispatch.c - binding, cached overload selection and the no-match error. */

/* Shared by bindthem.Function (bt_function.c) and bindthem.cuda.Kernel
 * (bt_cudapy_kernel.c); see bt_dispatch.h. */
#include "bt_dispatch.h"

#include <string.h>

#include "bt_pyname.h"

#define CACHE_MIN 16
#define CACHE_MAX 4096

/* ---- set-up ---- */

static PyObject *overload_list(const BtDispatch *d);

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
static PyObject *py_name(const BtDecl *decl, int i)
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
        PyObject *s = py_name(ov->decl, c->slots[i].cidx);
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
static int add_posonly(BtDispatch *d, PyObject *name)
{
    if (!d->posonly && !(d->posonly = PySet_New(NULL)))
        return -1;
    return PySet_Add(d->posonly, name);
}

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

/* The slot of name pointer p in a keyword map of mask + 1 slots. */
static size_t kw_hash(const PyObject *p, size_t mask) { return ((uintptr_t)p >> 4) & mask; }

/* d->kw_map for d->names (interned: a keyword spelled in the caller's code
 * is the same object), but for the positional-only ones (d->posonly, set
 * before): a keyword the map finds is a parameter's and may be passed so.
 * 0, or -1 with an exception set. */
static int kw_map_build(BtDispatch *d)
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
            if (c->slots[i].posonly && add_posonly(d, PyTuple_GET_ITEM(d->groups[g].names, i)) < 0)
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
    d->ov_list = overload_list(d);
    if (!d->ov_list)
        return -1;
    d->n_py = d->groups[0].n_py;
    d->names = Py_NewRef(d->groups[0].names);
    d->last_ov = -1;
    d->last_keys = PyMem_Calloc((size_t)d->n_py + 1, sizeof *d->last_keys);
    if (!d->last_keys) {
        PyErr_NoMemory();
        return -1;
    }
    if (kw_map_build(d) < 0)
        return -1;
    d->key_len = d->n_py;
    d->fast_n = d->n_groups > 1 ? -1 : d->n_py;
    d->min_n = d->n_groups > 1 ? d->n_py + 1 : d->n_py;
    while (d->n_groups == 1 && d->min_n > 0 && d->groups[0].optional[d->min_n - 1])
        d->min_n--;
    return d->n_groups > 1 ? number_names(st, d) : 0;
}

/* The cache's: frees table t and the tables it replaced. */
static void cache_free(BtDispatchTable *t)
{
    while (t) {
        BtDispatchTable *next = t->retired;
        PyMem_Free(t);
        t = next;
    }
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
    cache_free(d->cache);
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

/* ---- binding (one group) ---- */

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
static int bind_one_group(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
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

/* ---- the cache ---- */

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

/* Writer (d->lock held): replaces the table by one twice its size. */
static int cache_grow(BtDispatch *d)
{
    size_t kl = (size_t)(d->key_len ? d->key_len : 1);
    BtDispatchTable *old = d->cache, *t;
    int cap = old ? old->cap * 2 : CACHE_MIN, i;

    t = PyMem_Calloc(1, sizeof *t + (size_t)cap * (sizeof t->e[0] + kl));
    if (!t)
        return -1;
    t->cap = cap;
    t->keys = (uint8_t *)&t->e[cap];
    for (i = 0; i < cap; i++)
        t->e[i].ov = -1;
    for (i = 0; old && i < old->cap; i++) {
        const BtDispatchEntry *e = &old->e[i];
        size_t j;
        if (e->ov < 0)
            continue;
        j = (size_t)e->hash & (size_t)(cap - 1);
        while (t->e[j].ov >= 0)
            j = (j + 1) & (size_t)(cap - 1);
        t->e[j] = *e;
        memcpy(t->keys + j * kl, old->keys + (size_t)i * kl, kl);
    }
#ifdef Py_GIL_DISABLED
    t->retired = old; /* a reader may still be probing it: freed with d */
#else
    PyMem_Free(old);
#endif
    BT_FT_STORE(&d->cache, t);
    return 0;
}

/* The cached overload for key (key_len bytes, hash h), or -1. */
static inline int cache_find(const BtDispatch *d, const uint8_t *key, uint64_t h, int *pass)
{
    const BtDispatchTable *t = BT_FT_LOAD(&d->cache);
    size_t j, mask, kl = (size_t)d->key_len;
    int ov;

    if (!t)
        return -1;
    mask = (size_t)t->cap - 1;
    for (j = (size_t)h & mask; (ov = BT_FT_LOAD(&t->e[j].ov)) >= 0; j = (j + 1) & mask) {
        if (t->e[j].hash == h && memcmp(t->keys + j * kl, key, kl) == 0) {
            *pass = t->e[j].pass;
            return ov;
        }
    }
    return -1;
}

/* Remembers key -> (ov, pass) unless another thread just did; a failed
 * grow just means no caching. */
static void cache_put(BtDispatch *d, const uint8_t *key, uint64_t h, int ov, int pass)
{
    BtDispatchTable *t;
    size_t j, mask;
    int seen, cap;

    BT_FT_LOCK(&d->lock);
    if (cache_find(d, key, h, &seen) >= 0)
        goto done;
    cap = d->cache ? d->cache->cap : 0;
    if ((d->cache_used + 1) * 2 > cap && cap < CACHE_MAX && cache_grow(d) < 0)
        goto done;
    t = d->cache;
    if (!t || (d->cache_used + 1) * 2 > t->cap)
        goto done;
    mask = (size_t)t->cap - 1;
    for (j = (size_t)h & mask; t->e[j].ov >= 0; j = (j + 1) & mask)
        ;
    t->e[j].hash = h;
    t->e[j].pass = pass;
    memcpy(t->keys + j * (size_t)d->key_len, key, (size_t)d->key_len);
    BT_FT_STORE(&t->e[j].ov, ov); /* publishes the entry */
    BT_FT_STORE_RELAXED(&d->cache_used, d->cache_used + 1);
done:
    BT_FT_UNLOCK(&d->lock);
}

/* ---- selection (one group) ---- */

static int accepts_all(const BtArgSlot *s, const uint8_t *codes, int n, int pass)
{
    int i;
    for (i = 0; i < n; i++)
        if (!bt_slot_accepts(&s[i], codes[i], pass))
            return 0;
    return 1;
}

/* Scan for the first overload accepting all codes in `pass`. -1 if none. */
static int scan(const BtDispatch *d, const uint8_t *codes, int pass)
{
    int o, n = BT_FT_LOAD(&d->n_ovs); /* bt_dispatch_add publishes a grown count */
    for (o = 0; o < n; o++)
        if (accepts_all(d->slots[o], codes, d->n_py, pass))
            return o;
    return -1;
}

int bt_dispatch_select(BtDispatch *d, const uint8_t *codes, int *pass)
{
    uint64_t h = 0;
    int ov, many = BT_FT_LOAD(&d->n_ovs) > 1; /* once: bt_dispatch_add may grow it */

    if (many) {
        h = key_hash(codes, d->key_len);
        ov = cache_find(d, codes, h, pass);
        if (ov >= 0)
            return ov;
        BT_FT_ADD(&d->scans, 1);
    }
    ov = scan(d, codes, 1);
    *pass = 1;
    if (ov < 0) {
        ov = scan(d, codes, 2);
        *pass = 2;
    }
    if (ov >= 0 && many)
        cache_put(d, codes, h, ov, *pass);
    return ov;
}

void bt_dispatch_remember(BtDispatch *d, PyObject *const *args, int ov)
{
#ifdef Py_GIL_DISABLED
    const void *keys[BT_MAX_PARAMS];
    uint32_t seq = __atomic_load_n(&d->last_seq, __ATOMIC_RELAXED);
    int i;

    if (!bt_slot_keys(args, d->n_py, keys))
        ov = -1;
    /* one writer; one that finds another at work leaves the memo to it */
    if ((seq & 1) || !__atomic_compare_exchange_n(&d->last_seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE,
                                                  __ATOMIC_RELAXED))
        return;
    for (i = 0; ov >= 0 && i < d->n_py; i++)
        __atomic_store_n(&d->last_keys[i], keys[i], __ATOMIC_RELEASE);
    __atomic_store_n(&d->last_ov, ov, __ATOMIC_RELEASE);
    __atomic_store_n(&d->last_seq, seq + 2, __ATOMIC_RELEASE);
#else
    d->last_ov = bt_slot_keys(args, d->n_py, d->last_keys) ? ov : -1;
#endif
}

/* ---- several groups ---- */

/* The given arguments of a call: the positional ones, then the keyword
 * ones that name a parameter of some group (j numbers them so). */
typedef struct Given {
    Py_ssize_t nargs;
    int nkw;
    int kid[BT_MAX_PARAMS];      /* keyword: its name id */
    PyObject *kw[BT_MAX_PARAMS]; /* keyword: its name */
    PyObject *obj[BT_MAX_PARAMS];
    uint8_t code[BT_MAX_PARAMS];
} Given;

/* Binds the given arguments to group g into p (codes included). 1 when
 * they bind, 0 when they don't (too many, unknown or twice-given names, a
 * parameter without default left out). */
static int group_bind(const BtDispatch *d, int g, const Given *gv, BtDispatchPick *p)
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

/* The overloads one per line: C signatures when all share one Python
 * signature, else "f(x, w=1.0): C signature". New reference; built once,
 * at bt_dispatch_init (d->ov_list), for the errors. */
static PyObject *overload_list(const BtDispatch *d)
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
static PyObject *no_bind(const BtDispatch *d, Py_ssize_t nargs, PyObject *kwnames,
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

/* ---- no match ---- */

/* TypeError naming the argument where the best overload stops matching.
 * One group: p holds the bound call. Several: gv, rebound into p for each
 * overload's group. *text (text not NULL) receives a new reference to
 * the message it raised with, when it built one. Returns NULL. */
static PyObject *no_match(const BtDispatch *d, const Given *gv, BtDispatchPick *p,
                          const BtDispatchHow *how, PyObject **text)
{
    const char *(*wants_fn)(const BtArgSlot *, char *, size_t) = how && how->wants ? how->wants
                                                                                   : bt_slot_wants;
    int best = -1, first = 0, o, i, k, g, n;
    PyObject *given = NULL, *wants = NULL, *sigs = NULL, *msg = NULL, *w = NULL, *sep = NULL;
    char buf[128];

    if (d->n_ovs == 0) { /* an open Function before its first instantiation */
        PyErr_Format(PyExc_TypeError, "%s() has no instantiation yet", d->cname);
        return NULL;
    }
    for (o = 0; o < d->n_ovs; o++) {
        if (gv && !group_bind(d, d->ov_group[o], gv, p))
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
        group_bind(d, g, gv, p);
    k = best < 0 ? 0 : best;
    if (k >= d->groups[g].n_py) { /* cannot be: that overload would have matched */
        PyErr_SetString(PyExc_SystemError, "bindthem: dispatch found no mismatch");
        return NULL;
    }
    wants = PyList_New(0);
    if (!wants)
        goto error;
    for (o = 0; o < d->n_ovs; o++) {
        int c;
        if (d->ov_group[o] != g)
            continue;
        for (i = 0; i < k; i++)
            if (!bt_slot_accepts(&d->slots[o][i], p->codes[i], 2))
                break;
        if (i < k)
            continue;
        w = PyUnicode_FromString(wants_fn(&d->slots[o][k], buf, sizeof buf));
        if (!w)
            goto error;
        c = PySequence_Contains(wants, w);
        if (c == 0)
            c = PyList_Append(wants, w);
        Py_CLEAR(w);
        if (c < 0)
            goto error;
    }
    if (!p->argv[k])
        given = PyUnicode_FromString("nothing (it was left out)");
    else if (how && how->given)
        given = how->given(p->argv[k], p->src[k], how->ctx);
    else
        given = bt_slot_describe(p->argv[k]);
    sigs = Py_NewRef(d->ov_list);
    sep = PyUnicode_FromString(" or ");
    w = sep ? PyUnicode_Join(sep, wants) : NULL;
    if (!given || !sigs || !w)
        goto error;
    msg = PyUnicode_FromFormat(
        "%U(): argument '%U' (position %d) got %U, expected %U%s.\nThe overloads are:\n    %U",
        d->name, PyTuple_GET_ITEM(p->names, k), k + 1, given, w,
        k > 0 ? " (given the arguments before it)" : "", sigs);
    if (msg)
        PyErr_SetObject(PyExc_TypeError, msg);
    if (msg && text)
        *text = Py_NewRef(msg);
error:
    Py_XDECREF(given);
    Py_XDECREF(wants);
    Py_XDECREF(sigs);
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
    no_match(d, NULL, &p, NULL, &msg);
    if (msg) {
        keep_miss(d, args, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* ---- picking ---- */

static int read_code(PyObject *o, int j, PyObject *name, const BtDispatchHow *how)
{
    return how && how->code ? how->code(o, j, name, how->ctx) : bt_slot_code(o);
}

/* Sorts the keywords (parameters of some group, extra's, or an error) and
 * reads the codes. 0, 1 when the call has more arguments than any group
 * takes, or -1 with an exception. */
static int read_given(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                      const BtDispatchExtra *extra, const BtDispatchHow *how, Given *gv)
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
        c = read_code(gv->obj[j], j, name, how);
        if (c < 0)
            return -1;
        gv->code[j] = (uint8_t)c;
    }
    return 0;
}

static int pick_groups(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                       const BtDispatchExtra *extra, const BtDispatchHow *how, BtDispatchPick *p)
{
    Given gv;
    uint8_t key[2 + 3 * BT_MAX_PARAMS];
    uint64_t h;
    int rc, j, k = 2, o, pass, any = 0;

    rc = read_given(d, args, nargs, kwnames, extra, how, &gv);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        no_bind(d, nargs, kwnames, extra);
        return -1;
    }
    memset(key, 0, (size_t)d->key_len);
    key[0] = (uint8_t)nargs;
    key[1] = (uint8_t)gv.nkw;
    for (j = 0; j < nargs; j++)
        key[k++] = gv.code[j];
    for (j = 0; j < gv.nkw; j++) {
        key[k++] = (uint8_t)(gv.kid[j] & 0xFF);
        key[k++] = (uint8_t)(gv.kid[j] >> 8);
        key[k++] = gv.code[nargs + j];
    }
    h = key_hash(key, d->key_len);
    p->ov = cache_find(d, key, h, &p->pass);
    if (p->ov >= 0) {
        group_bind(d, d->ov_group[p->ov], &gv, p);
        return 0;
    }
    BT_FT_ADD(&d->scans, 1);
    for (pass = 1; pass <= 2; pass++) {
        for (o = 0; o < d->n_ovs; o++) {
            int g = d->ov_group[o];
            if (!group_bind(d, g, &gv, p))
                continue;
            any = 1;
            if (accepts_all(d->slots[o], p->codes, d->groups[g].n_py, pass)) {
                p->ov = o;
                p->pass = pass;
                cache_put(d, key, h, o, pass);
                return 0;
            }
        }
    }
    if (!any)
        no_bind(d, nargs, kwnames, extra);
    else
        no_match(d, &gv, p, how, NULL);
    return -1;
}

int bt_dispatch_pick(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const BtDispatchExtra *extra, const BtDispatchHow *how, BtDispatchPick *p)
{
    int given;

    if (d->n_groups > 1)
        return pick_groups(d, args, nargs, kwnames, extra, how, p);
    p->names = d->names;
    given = bind_one_group(d, args, nargs, kwnames, p->argv, extra, p->src);
    return given < 0 ? -1 : bt_dispatch_pick_bound(d, given, how, p);
}

int bt_dispatch_bind(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const BtDispatchExtra *extra, BtDispatchPick *p)
{
    p->names = d->names;
    return bind_one_group(d, args, nargs, kwnames, p->argv, extra, NULL);
}

int bt_dispatch_pick_bound(BtDispatch *d, int given, const BtDispatchHow *how, BtDispatchPick *p)
{
    int i, all;

    /* arguments read the usual way (some by keyword, some left out): the
     * memo answers as for a positional call (its keys are by parameter,
     * an omitted argument's its own) */
    all = !how;
    if (all && (p->ov = given == d->n_py ? bt_dispatch_last(d, p->argv)
                                         : bt_dispatch_last_as(d, p->argv, 1)) >= 0) {
        p->pass = 0; /* not known: the memo keeps the overload only */
        return 0;
    }
    if (how && how->ready && how->ready(how->ctx) < 0)
        return -1;
    for (i = 0; i < d->n_py; i++) {
        /* src is set only where a `how` reads it (bt_dispatch_bind leaves it) */
        int c = !p->argv[i] ? BT_K_OMITTED
                : how       ? read_code(p->argv[i], p->src[i], PyTuple_GET_ITEM(d->names, i), how)
                            : bt_slot_code(p->argv[i]);
        if (c < 0)
            return -1;
        p->codes[i] = (uint8_t)c;
    }
    p->ov = bt_dispatch_select(d, p->codes, &p->pass);
    if (p->ov < 0) {
        no_match(d, NULL, p, how, NULL);
        return -1;
    }
    if (all)
        bt_dispatch_remember(d, p->argv, p->ov);
    return 0;
}

/* ---- open dispatchers (instantiation on demand) ---- */

/* The defaults of an open function's declaration decl, whose types no
 * instantiation fixes yet: reprs[i] (per C parameter, NULL-initialised) a
 * new reference to the repr of the literal parameter i defaults to, for
 * the trailing run of Python parameters whose defaults are literals
 * (bt_slot_defaults's rule but the type's check), else NULL. 0 or -1. */
static int open_defaults(const BtDecl *decl, PyObject **reprs)
{
    int i;

    for (i = decl->n_params - 1; i >= 0; i--) {
        const BtParam *p = &decl->params[i];
        PyObject *v;
        if (!bt_pyname_takes(decl, i))
            continue;
        if (p->t.is_array || !p->defval || !(v = bt_slot_literal(p->defval)))
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
        if (!(s = py_name(decl, i)) || (reprs[i] && !(defaults[i] = PyUnicode_AsUTF8(reprs[i])))) {
            Py_XDECREF(s);
            return -1;
        }
        gr->optional[k] = reprs[i] != NULL;
        PyTuple_SET_ITEM(gr->names, k++, s);
        if (k <= posonly && add_posonly(d, s) < 0)
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

int bt_dispatch_open(BtDispatch *d, const BtDecl *decl, int cap)
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
    d->last_keys = PyMem_Calloc((size_t)d->n_py + 1, sizeof *d->last_keys);
    if (!d->slots || !d->ov_group || !d->groups || !d->last_keys) {
        PyErr_NoMemory();
        return -1;
    }
    if (open_defaults(decl, reprs) < 0 || open_group(d, decl, reprs) < 0)
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
    d->last_ov = -1;
    rc = kw_map_build(d); /* the names are fixed: bt_dispatch_add takes only the same */
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
    grown = *d; /* the grown tuples, for overload_list */
    grown.n_ovs = n + from->n_ovs;
    grown.pysigs = PySequence_Concat(d->pysigs, from->pysigs);
    grown.overloads = PySequence_Concat(d->overloads, from->overloads);
    if (!grown.pysigs || !grown.overloads)
        goto done;
    if (replace(&d->ov_list, overload_list(&grown), keep) < 0 ||
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
