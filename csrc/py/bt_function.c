/* bt_function.c - bindthem.Function, a bound kernel: the callable head
 * (bt_callable.c) with its call: the shared dispatcher (bt_dispatch.h)
 * picks the overload, bt_call_invoke makes the call; plus the CPU's own
 * attributes (GIL policy, const copies, copy counts, call paths). */
#include "bt_function.h"

#include "bt_callback.h"
#include "bt_from_c.h"
#include "bt_handle_call.h"
#include "bt_note_call.h"
#include "bt_note_quick.h"
#include "bt_opts.h"
#include "bt_plan_py.h"

#include <string.h>

typedef struct BtFunction {
    BT_CALLABLE_HEAD
    BtCallOpts opts; /* GIL policy, const copies (its Library's build/load options) */
    BtState *st;     /* its module's state (the type keeps the module alive) */
    int cap;         /* open (instantiation on demand): room for this many overloads; else 0 */
} BtFunction;

/* Whether args[nargs] and kwnames bind to f's parameters, the error set
 * left as it is: asked only after a failed call (out of the call paths,
 * whose code stays as it is), of an open Function's one parameter list. */
static int binds(BtFunction *f, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *type, *value, *tb;
    BtDispatchPick p;
    int given;

    PyErr_Fetch(&type, &value, &tb);
    given = bt_dispatch_bind(&f->d, args, nargs, kwnames, NULL, &p);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return given >= 0;
}

/* An open Function's miss (bt_dispatch_no_match's or bt_dispatch_pick's
 * TypeError set): when the arguments bind (else no instantiation would take
 * them: the binding error stands), bindthem._from_c.on_demand(f, args,
 * kwargs, error) deduces the template arguments, compiles and adds the
 * instantiation, and calls f again, or raises. Any other Function, or
 * another error: NULL as it is. */
static PyObject *miss(BtFunction *f, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *type, *value, *tb, *argv[4] = {(PyObject *)f, NULL, NULL, NULL}, *r = NULL;
    Py_ssize_t i, nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;

    if (!f->cap || !PyErr_ExceptionMatches(PyExc_TypeError) || !binds(f, args, nargs, kwnames))
        return NULL;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb)
        PyException_SetTraceback(value, tb);
    argv[1] = PyTuple_New(nargs);
    argv[2] = PyDict_New();
    argv[3] = value;
    if (!argv[1] || !argv[2])
        goto done;
    for (i = 0; i < nargs; i++)
        PyTuple_SET_ITEM(argv[1], i, Py_NewRef(args[i]));
    for (i = 0; i < nk; i++)
        if (PyDict_SetItem(argv[2], PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0)
            goto done;
    r = bt_from_c_call("on_demand", argv, 4);
done:
    Py_XDECREF(argv[1]);
    Py_XDECREF(argv[2]);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return r;
}

/* bt_call_invoke, or around it bt_handle_invoke where the overload takes
 * or returns handles, bt_note_invoke where it is annotated, and
 * bt_callback_invoke (around any of them) where it takes function
 * pointers: a flag each read by every other call. */
static inline BT_ALWAYS_INLINE PyObject *invoke_call(const BtCall *c, PyObject *const *args,
                                                     const char *fname, PyObject *names,
                                                     const BtCallOpts *opts)
{
    if (c->callbacks)
        return bt_callback_invoke(c, args, fname, names, opts);
    if (c->notes)
        return bt_note_invoke(c, args, fname, names, opts);
    if (c->handles)
        return bt_handle_invoke(c, args, fname, names, opts);
    return bt_call_invoke(c, args, fname, names, opts);
}

/* Calls overload ov with the Function's options as bindthem.options()
 * leaves them (the GIL policy; copy_const changes nothing: every array the
 * call can take, it takes, bt_call.c). Inlined into each caller: the fast
 * path has one frame less. */
static inline BT_ALWAYS_INLINE PyObject *invoke(BtFunction *f, int ov, PyObject *const *argv,
                                                PyObject *names)
{
    BtCallOpts opts = f->opts;

    if (bt_opts_current(f->st, &opts) < 0)
        return NULL;
    bt_call_count(&f->calls[ov].stats->general, 1);
    return invoke_call(&f->calls[ov], argv, f->d.cname, names, &opts);
}

/* The fused entry's call of args (all given) with the keys of the last call
 * or of the one before, where an array lacks only alignment or
 * C-contiguity (an unaligned array, a strided view): each such array as a
 * temporary in this frame (bt_call.h), copied back and counted as the
 * general path does. Returns as fused() does; out of line: the aligned
 * call keeps its frame. */
static BT_NOINLINE BT_COLD int fused_temps(BtFunction *f, PyObject *const *args, Py_ssize_t nargs,
                                           unsigned seq, PyObject **r)
{
    BtDispatch *d = &f->d;
    uint64_t w[BT_FUSED_WORDS];
    Py_ssize_t total;
    const BtCall *c;
    BtTemps ts;

    for (int last = 1; last >= 0; last--) { /* the last call's keys, then the one's before */
        int ov = last ? BT_FT_LOAD(&d->last_ov) : BT_FT_LOAD(&d->prev_ov);
        ts.n = 0;
        ts.used = 0; /* the temporaries are this frame's own bytes: nothing to free */
        total = 0;
        if (ov >= 0 && (c = &f->calls[ov])->fused &&
            bt_call_fused_store(c, args, (int)nargs, last ? d->last_keys : d->prev_keys, w, &total,
                                BT_FUSED_ALL, &ts)) {
            if (!BT_FT_SEQ_SAME(&d->last_seq, seq))
                return 0;
            *r = bt_call_fused_temps_run(c, args, &ts, f->opts.gil, total, w, d->cname, d->names);
            return 1;
        }
    }
    return 0;
}

/* The fused entry (bt_call.h): the call of args as `omitting` says (a
 * BT_FUSED_*, a constant at each caller; nargs: how many are given by
 * position) when they have the last call's keys, its overload is fused
 * and no bindthem.options() block or forced libffi is active. Returns 1
 * with the call made (*r: its result, or NULL with an exception), or 0
 * with nothing done: the general path takes the call. */
static inline BT_ALWAYS_INLINE int fused(BtFunction *f, PyObject *const *args, Py_ssize_t nargs,
                                         int omitting, PyObject **r)
{
    BtDispatch *d = &f->d;
    unsigned seq = BT_FT_SEQ_BEGIN(&d->last_seq);
    int ov = BT_FT_LOAD(&d->last_ov);
    uint64_t w[BT_FUSED_WORDS];
    Py_ssize_t total = 0;
    const BtCall *c;

    if (BT_FT_LOAD_RELAXED(&f->st->opts_active) | BT_FT_LOAD_RELAXED(&f->st->force_ffi))
        return 0;
    if (ov < 0 || !(c = &f->calls[ov])->fused ||
        !bt_call_fused_store(c, args, (int)nargs, d->last_keys, w, &total, omitting, NULL)) {
        if (ov >= 0 && c->notes) /* annotated: its quick call (bt_note_quick.h) */
            return omitting == BT_FUSED_ALL && bt_note_quick_fused(c, args, d, seq, &f->opts, r);
        /* the call before the last one: two overloads called in turn */
        ov = BT_FT_LOAD(&d->prev_ov);
        total = 0;
        if (ov < 0 || !(c = &f->calls[ov])->fused ||
            !bt_call_fused_store(c, args, (int)nargs, d->prev_keys, w, &total, omitting, NULL))
            return omitting == BT_FUSED_ALL && fused_temps(f, args, nargs, seq, r);
    }
    if (!BT_FT_SEQ_SAME(&d->last_seq, seq))
        return 0;
    *r = bt_call_words(c, f->opts.gil, total, w, d->cname);
    return 1;
}

/* Keywords, left-out defaults or several parameter lists. */
static BT_NOINLINE PyObject *function_call_general(BtFunction *f, PyObject *const *args,
                                                   Py_ssize_t nargs, PyObject *kwnames)
{
    BtDispatchPick p;
    PyObject *r;

    int given;

    if (f->d.n_groups > 1) {
        if (bt_dispatch_pick(&f->d, args, nargs, kwnames, NULL, NULL, &p) < 0)
            return miss(f, args, nargs, kwnames);
        return invoke(f, p.ov, p.argv, p.names);
    }
    /* one parameter list: the binding, then the fused entry on it */
    given = bt_dispatch_bind(&f->d, args, nargs, kwnames, NULL, &p);
    if (given == f->d.n_py ? fused(f, p.argv, given, BT_FUSED_ALL, &r)
                           : given >= 0 && fused(f, p.argv, given, BT_FUSED_NULLS, &r))
        return r;
    if (given < 0 || bt_dispatch_pick_bound(&f->d, given, NULL, &p) < 0)
        return miss(f, args, nargs, kwnames);
    return invoke(f, p.ov, p.argv, p.names);
}

/* One parameter list, argv[n_py] bound, each given unless `omitting`
 * (NULL: left out; a constant at each caller): the last-call memo first
 * (the same dtypes as last time; an omitted argument has a key of its
 * own), else the dispatch codes (an omitted argument's BT_K_OMITTED, as
 * bt_dispatch_pick gives them), bt_dispatch_select and the memo updated.
 * The overload, or -1 with bt_dispatch_no_match's TypeError set. */
static inline BT_ALWAYS_INLINE int select_bound(BtDispatch *d, PyObject *const *argv, int omitting)
{
    uint8_t codes[BT_MAX_PARAMS];
    int i, ov, pass;

    ov = bt_dispatch_last_as(d, argv, omitting);
    if (ov >= 0)
        return ov;
    for (i = 0; i < d->n_py; i++)
        codes[i] = !omitting || argv[i] ? bt_slot_code(argv[i]) : BT_K_OMITTED;
    ov = bt_dispatch_select(d, codes, &pass);
    if (ov < 0) {
        bt_dispatch_no_match(d, argv, codes);
        return -1;
    }
    bt_dispatch_remember(d, argv, ov);
    return ov;
}

/* One parameter list, the first nargs parameters given by position and
 * the rest left out (each has a default, min_n <= nargs < n_py): the
 * binding is known, so no keyword loop: select_bound with the omitted
 * ones NULL. */
static BT_NOINLINE PyObject *function_call_defaults(BtFunction *f, PyObject *const *args,
                                                    Py_ssize_t nargs)
{
    BtDispatch *d = &f->d;
    PyObject *argv[BT_MAX_PARAMS];
    int i, ov;

    for (i = 0; i < d->n_py; i++)
        argv[i] = i < nargs ? args[i] : NULL;
    ov = select_bound(d, argv, 1);
    return ov < 0 ? miss(f, args, nargs, NULL) : invoke(f, ov, argv, d->names);
}

/* Every parameter given by position, one parameter list, and the fused
 * entry did not take the call: select_bound. Out of line, as the other
 * ways below: the fused entry's frame stays small. */
static BT_NOINLINE PyObject *function_call_positional(BtFunction *f, PyObject *const *args,
                                                      Py_ssize_t nargs)
{
    BtDispatch *d = &f->d;
    int ov = select_bound(d, args, 0);

    return ov < 0 ? miss(f, args, nargs, NULL) : invoke(f, ov, args, d->names);
}

static PyObject *function_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames)
{
    BtFunction *f = (BtFunction *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *r;

    /* the common call: every parameter given by position, one parameter list */
    if (nargs != f->d.fast_n || (kwnames && PyTuple_GET_SIZE(kwnames) != 0)) {
        if (!kwnames && nargs >= f->d.min_n && nargs < f->d.fast_n)
            return fused(f, args, nargs, BT_FUSED_PREFIX, &r)
                       ? r
                       : function_call_defaults(f, args, nargs);
        return function_call_general(f, args, nargs, kwnames);
    }
    if (fused(f, args, nargs, BT_FUSED_ALL, &r))
        return r;
    return function_call_positional(f, args, nargs);
}

static PyObject *function_repr(PyObject *self)
{
    return bt_callable_repr(self, "bindthem function");
}

/* The options its Library was bound with: options=None (the defaults), or
 * build()/load()'s {"gil": a policy or {name: policy}, "copy_const": bool}
 * (a dict: bind() checked; bindthem.library._options checked its values). */
static int configure(BtFunction *f, PyObject *options)
{
    PyObject *gil, *copy;
    int i, truth;

    if (options == Py_None)
        return 0;
    gil = PyDict_GetItemString(options, "gil"); /* borrowed */
    if (gil && PyDict_Check(gil))
        gil = PyDict_GetItemWithError(gil, f->d.name);
    if (!gil && PyErr_Occurred())
        return -1;
    for (i = BT_GIL_AUTO; gil && i <= BT_GIL_KEEP; i++)
        if (PyUnicode_Check(gil) && PyUnicode_CompareWithASCIIString(gil, bt_opts_gil_name(i)) == 0)
            break;
    if (gil && i > BT_GIL_KEEP) {
        PyErr_Format(PyExc_ValueError, "bind(): gil=%R for %U: expected " BT_GIL_POLICY_TEXT, gil,
                     f->d.name);
        return -1;
    }
    f->opts.gil = (uint8_t)(gil ? i : BT_GIL_AUTO);
    copy = PyDict_GetItemString(options, "copy_const");
    truth = copy ? PyObject_IsTrue(copy) : 0;
    if (truth < 0)
        return -1;
    f->opts.copy_const = (uint8_t)truth;
    return 0;
}

/* Function._add(other): an open Function takes other's overloads (a
 * Function of another Library built from the same declaration: the same
 * parameters), beside its own; other is kept alive with it. */
static PyObject *function_add(PyObject *self, PyObject *other)
{
    BtFunction *f = (BtFunction *)self, *o = (BtFunction *)other;
    int n = f->d.n_ovs, j;

    if (!f->cap) {
        PyErr_Format(PyExc_ValueError,
                     "%s is not open: only a Function bound for instantiation "
                     "on demand takes overloads",
                     f->d.cname);
        return NULL;
    }
    if (Py_TYPE(other) != Py_TYPE(self) || o->cap) {
        PyErr_Format(PyExc_TypeError, "%s._add(): expected a bound Function, not %s", f->d.cname,
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    for (j = 0; n + o->d.n_ovs <= f->cap && j < o->d.n_ovs; j++) /* else bt_dispatch_add says */
        f->calls[n + j] = o->calls[j]; /* before bt_dispatch_add publishes them */
    if (PyList_Append(f->owner, other) < 0 || bt_dispatch_add(&f->d, &o->d, f->cap, f->owner) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef function_methods[] = {
    BT_CALLABLE_METHODS,
    {"_add", function_add, METH_O,
     "_add($self, other, /)\n--\n\nAdds other's overloads (instantiation on demand)."},
    {NULL, NULL, 0, NULL},
};

static PyObject *get_gil(BtFunction *f, void *c)
{
    return PyUnicode_FromString(bt_opts_gil_name(f->opts.gil));
}

static PyObject *get_open(BtFunction *f, void *c) { return PyBool_FromLong(f->cap > 0); }

static PyObject *get_copy_const(BtFunction *f, void *c)
{
    return PyBool_FromLong(f->opts.copy_const);
}

/* {"aligned_copies", "copy_backs", "const_copies"}: the copies its calls
 * made, over all overloads (BtCallStats). */
static PyObject *get_stats(BtFunction *f, void *c)
{
    unsigned long long n[4] = {0, 0, 0, 0};
    int i;

    for (i = 0; i < f->d.n_ovs; i++) {
        BtCallStats *s = f->calls[i].stats;
        n[0] += atomic_load_explicit(&s->aligned_copies, memory_order_relaxed);
        n[1] += atomic_load_explicit(&s->copy_backs, memory_order_relaxed);
        n[2] += atomic_load_explicit(&s->const_copies, memory_order_relaxed);
        n[3] += atomic_load_explicit(&s->layout_copies, memory_order_relaxed);
    }
    return Py_BuildValue("{s:K,s:K,s:K,s:K}", "aligned_copies", n[0], "copy_backs", n[1],
                         "const_copies", n[2], "layout_copies", n[3]);
}

/* The calls that the general path made (dispatch by codes, the full
 * conversions, an options() block), over all overloads: those the fused
 * entry took are not counted. */
static PyObject *get_general_calls(BtFunction *f, void *c)
{
    unsigned long long n = 0;
    int i;

    for (i = 0; i < f->d.n_ovs; i++)
        n += atomic_load_explicit(&f->calls[i].stats->general, memory_order_relaxed);
    return PyLong_FromUnsignedLongLong(n);
}

/* Of those, the calls of an annotated overload that its quick call took
 * (bt_note_quick.h), over all overloads. */
static PyObject *get_quick_calls(BtFunction *f, void *c)
{
    unsigned long long n = 0;

    for (int i = 0; i < f->d.n_ovs; i++)
        n += atomic_load_explicit(&f->calls[i].stats->quick, memory_order_relaxed);
    return PyLong_FromUnsignedLongLong(n);
}

/* New reference: a tuple of item(call) per overload, or NULL. */
static PyObject *per_overload(BtFunction *f, PyObject *(*item)(const BtCall *))
{
    PyObject *t = PyTuple_New(f->d.n_ovs), *x;
    int i;

    for (i = 0; t && i < f->d.n_ovs; i++) {
        if (!(x = item(&f->calls[i])))
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, x);
    }
    return t;
}

static PyObject *call_path(const BtCall *c)
{
    return PyUnicode_FromString(c->direct.variant ? "direct" : "ffi");
}

static PyObject *call_fused(const BtCall *c)
{
    return PyBool_FromLong(c->direct.variant && c->fused);
}

/* ("direct" or "ffi" per overload): how calls reach each kernel when
 * _core.force_ffi() is off. */
static PyObject *get_call_paths(BtFunction *f, void *c) { return per_overload(f, call_path); }

/* (bool per overload): whether a call with the last call's argument types
 * goes through the fused entry (bt_call.h), one pass over the arguments. */
static PyObject *get_fused(BtFunction *f, void *c) { return per_overload(f, call_fused); }

/* Attributes: f.__signature__ (the parameters annotated with the types the
 * overloads take: bindthem._from_c.signature, or None, and inspect reads
 * __text_signature__) and f.__call__ (a bound call with f's signature:
 * bindthem._from_c.bound_call; IPython's `f?` would otherwise show the
 * type's `(*args, **kwargs)` beside it) are the instance's only, so that
 * inspect.signature(bindthem.Function) and Function.__call__ stay the
 * type's; everything else is the generic lookup. */
static PyObject *function_getattro(PyObject *self, PyObject *name)
{
    if (PyUnicode_Check(name)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(name);
        if (n == 13 && PyUnicode_CompareWithASCIIString(name, "__signature__") == 0)
            return bt_from_c_call("signature", &self, 1);
        if (n == 8 && PyUnicode_CompareWithASCIIString(name, "__call__") == 0)
            return bt_from_c_call("bound_call", &self, 1);
    }
    return PyObject_GenericGetAttr(self, name);
}

static PyGetSetDef function_getset[] = {
    BT_CALLABLE_GETSET,
    {"_call_paths", (getter)get_call_paths, NULL,
     "How each overload's kernel is called: 'direct' or 'ffi' (libffi).", NULL},
    {"_general_calls", (getter)get_general_calls, NULL,
     "How many of its calls the general path made (the fused entry's are not counted).", NULL},
    {"_quick_calls", (getter)get_quick_calls, NULL,
     "How many of an annotated function's calls its quick call took (one pass, no frame).", NULL},
    {"_fused", (getter)get_fused, NULL,
     "Whether each overload takes a call with the last call's argument types in one pass over "
     "them (the fused entry).",
     NULL},
    {"gil", (getter)get_gil, NULL,
     "When calls release the GIL: " BT_GIL_POLICY_TEXT
     "; bindthem.options(gil=...) overrides it per call.",
     NULL},
    {"open", (getter)get_open, NULL,
     "Whether a call with types no overload takes instantiates the template on demand.", NULL},
    {"copy_const", (getter)get_copy_const, NULL,
     "The copy_const this function was bound with; it changes nothing: every array that is "
     "not C-contiguous or aligned is the call's copy (docs/calls.rst).",
     NULL},
    {"stats", (getter)get_stats, NULL,
     "Copies its calls made, as a dict: 'aligned_copies' (unaligned C-contiguous arrays "
     "passed as aligned temporaries), 'layout_copies' (arrays that are not C-contiguous "
     "passed as C-contiguous temporaries, or an annotated function's copied to a layout it "
     "takes: docs/arrays.rst), 'copy_backs' (of those, arrays the kernel writes, copied "
     "back), 'const_copies' (0: copy_const made such copies once).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef function_members[] = {
    BT_CALLABLE_MEMBERS(BtFunction),
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot function_slots[] = {
    BT_CALLABLE_SLOTS,
    {Py_tp_repr, function_repr},
    {Py_tp_getattro, function_getattro},
    {Py_tp_methods, function_methods},
    {Py_tp_getset, function_getset},
    {Py_tp_members, function_members},
    {0, NULL},
};

PyType_Spec bt_function_spec = {
    .name = "bindthem.Function",
    .basicsize = sizeof(BtFunction),
    .flags = BT_CALLABLE_FLAGS,
    .slots = function_slots,
};

PyObject *bt_function_new(BtState *st, const BtFunc *bf, BtCall *calls, BtArena *arena,
                          PyObject *owner, PyObject *module, PyObject *info, PyObject *options)
{
    BtFunction *f;

    f = (BtFunction *)bt_callable_new(st, st->FunctionType, function_vectorcall, bf, bf->ovs, calls,
                                      bf->n_ovs, arena, owner, module, info);
    if (!f)
        return NULL;
    f->st = st;
    if (configure(f, options) < 0) {
        Py_DECREF(f);
        return NULL;
    }
    return (PyObject *)f;
}

/* Declaration decl (an index into its metadata's "declarations") of plan,
 * a _core.Plan the caller holds, or NULL with an exception; its header's
 * enums into *enums. */
static const BtDecl *plan_decl(BtState *st, PyObject *plan, int decl, const BtEnum **enums)
{
    const BtMeta *m = bt_plan_meta(st, "open_function", plan);

    if (!m)
        return NULL;
    if (decl < 0 || decl >= m->header.n_decls) {
        PyErr_Format(PyExc_IndexError, "open_function(): the plan has %d declarations, not %d",
                     m->header.n_decls, decl + 1);
        return NULL;
    }
    *enums = m->header.enums;
    return &m->header.decls[decl];
}

/* _core.open_function(plan, decl, module, info, options, owner, cap): an
 * open Function of plan's templated declaration decl, with no overload
 * yet; _add gives it some. Its names and signature are the declaration's
 * (bt_dispatch_open). */
static PyObject *open_function(PyObject *module, PyObject *args)
{
    BtState *st = bt_state(module);
    const BtDecl *decl;
    const BtEnum *enums;
    PyObject *plan, *mod, *info, *options, *owner;
    BtFunction *f;
    int index, cap;

    if (!PyArg_ParseTuple(args, "OiUOOOi:open_function", &plan, &index, &mod, &info, &options,
                          &owner, &cap))
        return NULL;
    if (cap < 1 || cap > 4096)
        return PyErr_Format(PyExc_ValueError, "open_function: cap=%d, expected 1 to 4096", cap);
    if (!(decl = plan_decl(st, plan, index, &enums)))
        return NULL;
    f = PyObject_GC_New(BtFunction, st->FunctionType);
    if (!f)
        return NULL;
    memset((char *)f + sizeof(PyObject), 0, sizeof *f - sizeof(PyObject));
    f->vectorcall = function_vectorcall;
    f->owner = PyList_New(0); /* the owner, then what _add keeps alive */
    f->info = info == Py_None ? NULL : Py_NewRef(info);
    f->module = Py_NewRef(mod);
    f->doc = PyUnicode_FromString(decl->doc ? decl->doc : "");
    f->st = st;
    f->cap = cap;
    bt_arena_init(&f->arena);
    PyObject_GC_Track(f);
    if (!f->owner || !f->doc || PyList_Append(f->owner, owner) < 0)
        goto error;
    f->calls = bt_arena_array(&f->arena, (size_t)cap, sizeof *f->calls);
    if (!f->calls) {
        PyErr_NoMemory();
        goto error;
    }
    if (bt_dispatch_open(&f->d, decl, enums, cap) < 0 || configure(f, options) < 0)
        goto error;
    f->text_sig = Py_NewRef(f->d.text_sig);
    bt_ft_deferred((PyObject *)f);
    return (PyObject *)f;
error:
    Py_DECREF(f);
    return NULL;
}

PyMethodDef bt_function_methods[] = {
    {"open_function", open_function, METH_VARARGS,
     "open_function(plan, decl, module, info, options, owner, cap, /)\n--\n\n"
     "An open Function (instantiation on demand) of the Plan's templated declaration decl\n"
     "(an index into its metadata's declarations), with no overload yet. Its parameter\n"
     "names, positional-only ones and signature are the declaration's, by the rule that\n"
     "names an instantiation's."},
    {NULL, NULL, 0, NULL},
};
