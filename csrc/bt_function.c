/* bt_function.c - bound kernel objects: argument binding, dispatch, repr.
 *
 * A call binds positional and keyword arguments to the Python parameters
 * (the header's, minus `_size`), computes one dispatch code per argument,
 * finds the overload in a small open-addressing cache keyed by those codes
 * (cost independent of the number of overloads), and hands over to
 * bt_call_invoke. A cache miss scans the overloads: exact pass first, then
 * the pass with scalar conversions, as pybind11 does. */
#include "bt_function.h"

#include <string.h>

#define CACHE_MIN 16
#define CACHE_MAX 4096

typedef struct CacheEntry {
    uint64_t hash;
    int32_t ov;    /* overload index; -1 = empty slot */
    int32_t pass;  /* pass that matched */
} CacheEntry;

typedef struct BtFunction {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name;       /* str */
    PyObject *qualname;   /* str */
    PyObject *module;     /* str */
    PyObject *doc;        /* str */
    PyObject *owner;      /* keeps the library loaded */
    PyObject *names;      /* tuple of parameter names (str, interned) */
    PyObject *overloads;  /* tuple of C signatures (str) */
    PyObject *text_sig;   /* str: "(a, b, c)" */
    PyObject *library;    /* weakref to the Library module, for pickling, or NULL */
    PyObject *weakreflist;
    const char *cname;    /* UTF-8 of name, for messages */
    BtArena arena;        /* calls and their slots */
    BtCall *calls;
    int n_calls;
    int n_py;
    CacheEntry *cache;    /* cap entries, keys beside them */
    uint8_t *cache_keys;  /* cap * n_py */
    int cache_cap;
    int cache_used;
} BtFunction;

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
static int scan(const BtFunction *f, const uint8_t *codes, int pass)
{
    int o, i;
    for (o = 0; o < f->n_calls; o++) {
        const BtCall *c = &f->calls[o];
        for (i = 0; i < f->n_py; i++)
            if (!bt_call_accepts(&c->slots[i], codes[i], pass))
                break;
        if (i == f->n_py)
            return o;
    }
    return -1;
}

static int cache_grow(BtFunction *f)
{
    int cap = f->cache_cap ? f->cache_cap * 2 : CACHE_MIN, i;
    CacheEntry *e = PyMem_Calloc((size_t)cap, sizeof *e);
    uint8_t *k = PyMem_Calloc((size_t)cap, (size_t)(f->n_py ? f->n_py : 1));

    if (!e || !k) {
        PyMem_Free(e);
        PyMem_Free(k);
        return -1;
    }
    for (i = 0; i < cap; i++)
        e[i].ov = -1;
    for (i = 0; i < f->cache_cap; i++) {
        CacheEntry *old = &f->cache[i];
        size_t j;
        if (old->ov < 0)
            continue;
        j = (size_t)old->hash & (size_t)(cap - 1);
        while (e[j].ov >= 0)
            j = (j + 1) & (size_t)(cap - 1);
        e[j] = *old;
        memcpy(k + j * (size_t)f->n_py, f->cache_keys + (size_t)i * (size_t)f->n_py,
               (size_t)f->n_py);
    }
    PyMem_Free(f->cache);
    PyMem_Free(f->cache_keys);
    f->cache = e;
    f->cache_keys = k;
    f->cache_cap = cap;
    return 0;
}

/* Selects the overload for codes: index and pass, or -1. */
static int select_overload(BtFunction *f, const uint8_t *codes, int *pass)
{
    uint64_t h;
    size_t j, mask;
    int ov;

    if (f->n_calls == 1) {
        ov = scan(f, codes, 1);
        *pass = 1;
        if (ov < 0) {
            ov = scan(f, codes, 2);
            *pass = 2;
        }
        return ov;
    }
    h = key_hash(codes, f->n_py);
    if (f->cache_cap) {
        mask = (size_t)f->cache_cap - 1;
        for (j = (size_t)h & mask; f->cache[j].ov >= 0; j = (j + 1) & mask) {
            if (f->cache[j].hash == h &&
                memcmp(f->cache_keys + j * (size_t)f->n_py, codes, (size_t)f->n_py) == 0) {
                *pass = f->cache[j].pass;
                return f->cache[j].ov;
            }
        }
    }
    ov = scan(f, codes, 1);
    *pass = 1;
    if (ov < 0) {
        ov = scan(f, codes, 2);
        *pass = 2;
    }
    if (ov < 0)
        return -1;
    /* remember it (a failed grow just means no caching) */
    if ((f->cache_used + 1) * 2 > f->cache_cap && f->cache_cap < CACHE_MAX && cache_grow(f) < 0)
        return ov;
    if ((f->cache_used + 1) * 2 > f->cache_cap)
        return ov;
    mask = (size_t)f->cache_cap - 1;
    for (j = (size_t)h & mask; f->cache[j].ov >= 0; j = (j + 1) & mask)
        ;
    f->cache[j].hash = h;
    f->cache[j].ov = ov;
    f->cache[j].pass = *pass;
    memcpy(f->cache_keys + j * (size_t)f->n_py, codes, (size_t)f->n_py);
    f->cache_used++;
    return ov;
}

/* TypeError naming the argument where the best overload stops matching. */
static PyObject *no_match(BtFunction *f, PyObject *const *args, const uint8_t *codes)
{
    int best = -1, o, i, k;
    PyObject *given = NULL, *wants = NULL, *sigs = NULL, *msg = NULL;
    char buf[128];

    for (o = 0; o < f->n_calls; o++) {
        for (i = 0; i < f->n_py; i++)
            if (!bt_call_accepts(&f->calls[o].slots[i], codes[i], 2))
                break;
        if (i > best)
            best = i;
    }
    k = best < 0 ? 0 : best;
    wants = PyList_New(0);
    if (!wants)
        goto error;
    for (o = 0; o < f->n_calls; o++) {
        PyObject *w;
        int c;
        for (i = 0; i < k; i++)
            if (!bt_call_accepts(&f->calls[o].slots[i], codes[i], 2))
                break;
        if (i < k)
            continue;
        w = PyUnicode_FromString(bt_call_slot_wants(&f->calls[o].slots[k], buf, sizeof buf));
        if (!w)
            goto error;
        c = PySequence_Contains(wants, w);
        if (c == 0)
            c = PyList_Append(wants, w);
        Py_DECREF(w);
        if (c < 0)
            goto error;
    }
    given = bt_call_describe(args[k]);
    if (!given)
        goto error;
    {
        PyObject *nl = PyUnicode_FromString("\n    ");
        sigs = nl ? PyUnicode_Join(nl, f->overloads) : NULL;
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
            f->name, PyTuple_GET_ITEM(f->names, k), k + 1, given, w,
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

/* Python's own message for missing arguments: 'a', 'b' and 'c'. */
static PyObject *missing_args(BtFunction *f, PyObject *const *slots)
{
    PyObject *list = PyList_New(0), *msg = NULL;
    Py_ssize_t n, i;
    int k;

    if (!list)
        return NULL;
    for (k = 0; k < f->n_py; k++) {
        if (!slots[k]) {
            PyObject *r = PyObject_Repr(PyTuple_GET_ITEM(f->names, k));
            if (!r || PyList_Append(list, r) < 0) {
                Py_XDECREF(r);
                goto error;
            }
            Py_DECREF(r);
        }
    }
    n = PyList_GET_SIZE(list);
    if (n == 1) {
        msg = PyUnicode_FromFormat("%U() missing 1 required positional argument: %U", f->qualname,
                                   PyList_GET_ITEM(list, 0));
    } else {
        PyObject *head = PyList_GetSlice(list, 0, n - 1), *sep = PyUnicode_FromString(", ");
        PyObject *joined = head && sep ? PyUnicode_Join(sep, head) : NULL;
        if (joined)
            msg = PyUnicode_FromFormat("%U() missing %zd required positional arguments: %U%s and %U",
                                       f->qualname, n, joined, n > 2 ? "," : "",
                                       PyList_GET_ITEM(list, n - 1));
        Py_XDECREF(head);
        Py_XDECREF(sep);
        Py_XDECREF(joined);
    }
    if (msg)
        PyErr_SetObject(PyExc_TypeError, msg);
    (void)i;
error:
    Py_XDECREF(list);
    Py_XDECREF(msg);
    return NULL;
}

static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    BtFunction *f = (BtFunction *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *slots[BT_MAX_PARAMS];
    uint8_t codes[BT_MAX_PARAMS];
    PyObject *const *argv = args;
    int i, ov, pass;

    if (nkw || nargs != f->n_py) {
        Py_ssize_t k;
        for (i = 0; i < f->n_py; i++)
            slots[i] = i < nargs ? args[i] : NULL;
        for (k = 0; k < nkw; k++) {
            PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
            int j, found = -1;
            for (j = 0; j < f->n_py; j++) {
                if (PyTuple_GET_ITEM(f->names, j) == kw) {
                    found = j;
                    break;
                }
            }
            for (j = 0; found < 0 && j < f->n_py; j++) {
                int eq = PyUnicode_Compare(PyTuple_GET_ITEM(f->names, j), kw);
                if (eq == -1 && PyErr_Occurred())
                    return NULL;
                if (eq == 0)
                    found = j;
            }
            if (found < 0) {
                PyErr_Format(PyExc_TypeError, "%U() got an unexpected keyword argument '%S'",
                             f->qualname, kw);
                return NULL;
            }
            if (slots[found]) {
                PyErr_Format(PyExc_TypeError, "%U() got multiple values for argument '%S'",
                             f->qualname, kw);
                return NULL;
            }
            slots[found] = args[nargs + k];
        }
        /* after the keywords, as CPython checks them */
        if (nargs > f->n_py) {
            PyErr_Format(PyExc_TypeError, "%U() takes %d positional argument%s but %zd %s given",
                         f->qualname, f->n_py, f->n_py == 1 ? "" : "s", nargs,
                         nargs == 1 ? "was" : "were");
            return NULL;
        }
        for (i = 0; i < f->n_py; i++)
            if (!slots[i])
                return missing_args(f, slots);
        argv = slots;
    }
    for (i = 0; i < f->n_py; i++)
        codes[i] = bt_call_code(argv[i]);
    ov = select_overload(f, codes, &pass);
    if (ov < 0)
        return no_match(f, argv, codes);
    return bt_call_invoke(&f->calls[ov], argv, codes, f->cname, f->names);
}

static PyObject *function_repr(BtFunction *f)
{
    return PyUnicode_FromFormat("<bindthem function %U.%U with %d overload%s>", f->module,
                                f->qualname, f->n_calls, f->n_calls == 1 ? "" : "s");
}

static PyObject *function_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    /* like a builtin function stored on a class: no binding */
    return Py_NewRef(self);
}

static PyObject *function_reduce(BtFunction *f, PyObject *unused)
{
    PyObject *lib = f->library ? PyWeakref_GetObject(f->library) : NULL;
    PyObject *getattr;

    if (!lib || lib == Py_None) {
        PyErr_Format(PyExc_TypeError, "cannot pickle %U: its Library is gone", f->name);
        return NULL;
    }
    getattr = PyDict_GetItemString(PyEval_GetBuiltins(), "getattr"); /* borrowed */
    if (!getattr)
        return NULL;
    return Py_BuildValue("(O(OO))", getattr, lib, f->name);
}

static PyObject *function_set_library(BtFunction *f, PyObject *lib)
{
    PyObject *ref = PyWeakref_NewRef(lib, NULL);
    if (!ref)
        return NULL;
    Py_XSETREF(f->library, ref);
    Py_RETURN_NONE;
}

static PyMethodDef function_methods[] = {
    {"__reduce__", (PyCFunction)function_reduce, METH_NOARGS, NULL},
    {"_set_library", (PyCFunction)function_set_library, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static PyObject *get_doc(BtFunction *f, void *c) { return Py_NewRef(f->doc); }
static PyObject *get_name(BtFunction *f, void *c) { return Py_NewRef(f->name); }
static PyObject *get_qualname(BtFunction *f, void *c) { return Py_NewRef(f->qualname); }
static PyObject *get_module(BtFunction *f, void *c) { return Py_NewRef(f->module); }
static PyObject *get_overloads(BtFunction *f, void *c) { return Py_NewRef(f->overloads); }
static PyObject *get_text_sig(BtFunction *f, void *c) { return Py_NewRef(f->text_sig); }
static PyObject *get_params(BtFunction *f, void *c) { return Py_NewRef(f->names); }

static PyObject *get_symbols(BtFunction *f, void *c)
{
    PyObject *t = PyTuple_New(f->n_calls);
    int i;
    if (!t)
        return NULL;
    for (i = 0; i < f->n_calls; i++) {
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
    {NULL, NULL, NULL, NULL, NULL},
};

static int function_traverse(BtFunction *f, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(f));
    Py_VISIT(f->owner);
    Py_VISIT(f->library);
    return 0;
}

static int function_clear(BtFunction *f)
{
    Py_CLEAR(f->owner);
    Py_CLEAR(f->library);
    return 0;
}

static void function_dealloc(BtFunction *f)
{
    PyTypeObject *tp = Py_TYPE(f);

    PyObject_GC_UnTrack(f);
    if (f->weakreflist)
        PyObject_ClearWeakRefs((PyObject *)f);
    function_clear(f);
    Py_CLEAR(f->name);
    Py_CLEAR(f->qualname);
    Py_CLEAR(f->module);
    Py_CLEAR(f->doc);
    Py_CLEAR(f->names);
    Py_CLEAR(f->overloads);
    Py_CLEAR(f->text_sig);
    PyMem_Free(f->cache);
    PyMem_Free(f->cache_keys);
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

PyObject *bt_function_new(BtState *st, const BtFunc *bf, BtCall *calls, BtArena *arena,
                          PyObject *owner, PyObject *module)
{
    BtFunction *f = NULL;
    PyObject *sig = NULL, *sep = NULL;
    int i, j;

    f = PyObject_GC_New(BtFunction, st->FunctionType);
    if (!f) {
        bt_arena_free(arena);
        return NULL;
    }
    f->vectorcall = function_vectorcall;
    f->name = f->qualname = f->module = f->doc = f->names = f->overloads = f->text_sig = NULL;
    f->library = f->weakreflist = NULL;
    f->owner = Py_NewRef(owner);
    f->arena = *arena;
    bt_arena_init(arena);
    f->calls = calls;
    f->n_calls = bf->n_ovs;
    f->n_py = calls[0].n_py;
    f->cache = NULL;
    f->cache_keys = NULL;
    f->cache_cap = f->cache_used = 0;
    PyObject_GC_Track(f);

    f->name = PyUnicode_InternFromString(bf->name);
    if (!f->name)
        goto error;
    f->qualname = Py_NewRef(f->name);
    f->module = Py_NewRef(module);
    f->cname = PyUnicode_AsUTF8(f->name);
    f->doc = PyUnicode_FromString(bf->doc ? bf->doc : "");
    f->names = PyTuple_New(f->n_py);
    f->overloads = PyTuple_New(f->n_calls);
    if (!f->cname || !f->doc || !f->names || !f->overloads)
        goto error;
    for (i = 0; i < f->n_py; i++) {
        const BtDecl *d = bf->ovs[0].decl;
        PyObject *s = PyUnicode_InternFromString(d->params[calls[0].slots[i].cidx].name);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(f->names, i, s);
    }
    for (j = 0; j < f->n_calls; j++) {
        const BtDecl *d = bf->ovs[j].decl;
        PyObject *s;
        if (calls[j].n_py != f->n_py)
            goto differ;
        for (i = 0; i < f->n_py; i++)
            if (strcmp(d->params[calls[j].slots[i].cidx].name,
                       PyUnicode_AsUTF8(PyTuple_GET_ITEM(f->names, i))) != 0)
                goto differ;
        s = PyUnicode_FromString(calls[j].signature);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(f->overloads, j, s);
    }
    sep = PyUnicode_FromString(", ");
    sig = sep ? PyUnicode_Join(sep, f->names) : NULL;
    if (!sig)
        goto error;
    f->text_sig = PyUnicode_FromFormat("(%U)", sig);
    if (!f->text_sig)
        goto error;
    Py_DECREF(sep);
    Py_DECREF(sig);
    return (PyObject *)f;
differ:
    PyErr_Format(st->BindError,
                 "cannot bind '%s': its overloads %s and %s take different Python parameters; "
                 "remapped functions must share one parameter list",
                 bf->name, calls[0].signature, calls[j].signature);
error:
    Py_XDECREF(sep);
    Py_XDECREF(sig);
    Py_DECREF(f);
    return NULL;
}
