/* bt_note_call.c - calls of annotated functions (bt_note_call.h): their
 * preparation at bind time, the call (bt_note_frame.h: the frame, its
 * arguments taken by bt_note_take.c), its results and status. */
#include "bt_note_frame.h"

#include "bt_from_c.h"
#include "bt_guard.h"
#include "bt_handle.h"
#include "bt_handle_call.h"
#include "bt_note_quick.h"
#include "bt_numpy.h"

#include <errno.h>
#include <string.h>

/* One constant into nc's status names when it has prefix (n bytes). */
static int add_status_name(BtNoteCall *nc, const char *name, long long v, const char *prefix,
                           size_t n, BtArena *arena)
{
    if (strncmp(name, prefix, n) != 0)
        return 0;
    if (!(nc->status_names[nc->n_status] = bt_arena_strdup(arena, name)))
        return -1;
    nc->status_values[nc->n_status++] = v;
    return 0;
}

/* The names a failing status may have: the header's integer constants and
 * enum members that share the prefix of the first ok value's name ("Z_"
 * of Z_OK), none when it is no such name. 0, or -1 with MemoryError. */
static int status_names(BtNoteCall *nc, const BtHeader *h, BtArena *arena)
{
    const char *ok = nc->plan->n_ok ? nc->plan->ok[0].text : "";
    const char *us = strchr(ok, '_');
    size_t n = us ? (size_t)(us - ok) + 1 : 0, cap = 0;
    int i, j, rc = 0;

    nc->n_status = 0;
    if (!n || !h)
        return 0;
    for (i = 0; ok[i]; i++)
        if (!(ok[i] == '_' || (ok[i] >= 'A' && ok[i] <= 'Z') || (ok[i] >= 'a' && ok[i] <= 'z') ||
              (i && ok[i] >= '0' && ok[i] <= '9')))
            return 0; /* an expression, not a name */
    cap = (size_t)h->n_consts + 1;
    for (i = 0; i < h->n_enums; i++)
        cap += (size_t)h->enums[i].n_members;
    nc->status_names = bt_arena_alloc(arena, sizeof *nc->status_names * cap);
    nc->status_values = bt_arena_alloc(arena, sizeof *nc->status_values * cap);
    rc = nc->status_names && nc->status_values ? 0 : -1;
    for (i = 0; rc == 0 && i < h->n_consts; i++)
        if (!h->consts[i].is_string)
            rc = add_status_name(nc, h->consts[i].name, h->consts[i].value, ok, n, arena);
    for (i = 0; rc == 0 && i < h->n_enums; i++)
        for (j = 0; rc == 0 && j < h->enums[i].n_members; j++)
            rc = add_status_name(nc, h->enums[i].members[j].name, h->enums[i].members[j].value, ok,
                                 n, arena);
    if (rc < 0)
        PyErr_NoMemory();
    return rc;
}

/* nc->take: call->order, with the layout followers last (stable). */
static int take_order(BtNoteCall *nc, const BtCall *call, BtArena *arena)
{
    int k, n = 0, pass;

    if (!(nc->take = bt_arena_alloc(arena, (size_t)call->n_py + 1))) {
        PyErr_NoMemory();
        return -1;
    }
    for (pass = 0; pass < 2; pass++)
        for (k = 0; k < call->n_py; k++) {
            const BtArgSlot *s = &call->slots[call->order[k]];
            if (pass == (s->is_array && nc->plan->params[s->cidx].follows))
                nc->take[n++] = call->order[k];
        }
    return 0;
}

int bt_note_prepare(BtState *st, BtCall *call, const BtOverload *ov, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    BtNoteCall *nc = bt_arena_alloc(arena, sizeof *nc);
    size_t n = (size_t)d->n_params + 1;
    int i;

    if (!nc || !(nc->plan = bt_note_copy(ov->notes, arena)) ||
        !(nc->types = bt_arena_alloc(arena, sizeof *nc->types * n)) ||
        !(nc->slot = bt_arena_alloc(arena, sizeof *nc->slot * n)) ||
        !(nc->names = bt_arena_alloc(arena, sizeof *nc->names * n)) ||
        !(nc->params = bt_arena_alloc(arena, sizeof *nc->params * n)) ||
        !(nc->htypes = bt_arena_alloc(arena, sizeof *nc->htypes * n))) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy((BtParam *)nc->params, d->params, sizeof *d->params * (size_t)d->n_params);
    nc->by_address = 0;
    for (i = 0; i < d->n_params; i++) {
        nc->types[i] = ov->ptypes[i];
        nc->slot[i] = -1;
        nc->htypes[i] = NULL;
        nc->by_address |= d->params[i].handle_ptr;
        if (!(nc->names[i] = bt_arena_strdup(arena, d->params[i].name))) {
            PyErr_NoMemory();
            return -1;
        }
        ((BtParam *)nc->params)[i].name = nc->names[i];
    }
    for (i = 0; i < call->n_py; i++)
        nc->slot[call->slots[i].cidx] = i;
    if (take_order(nc, call, arena) < 0)
        return -1;
    call->handles = 0; /* a handle argument: its pointer (bt_slot_store_arg) */
    nc->StatusError = st->StatusError;
    if (!(nc->is_ptr = bt_arena_alloc(arena, n))) {
        PyErr_NoMemory();
        return -1;
    }
    {
        int is_ptr[BT_MAX_PARAMS];
        for (i = 0; i < d->n_params; i++)
            nc->is_ptr[i] = (uint8_t)(is_ptr[i] = bt_call_param_is_ptr(ov, i));
        memset(&nc->direct, 0, sizeof nc->direct);
        if (!call->ret_rec && !d->ret.handle_ref &&
            bt_direct_plan(&nc->direct, ov->ptypes, is_ptr, d->n_params,
                           call->ret_string ? BT_ULONG : ov->ret))
            nc->site = bt_guard_site(nc->direct.variant);
    }
    if (bt_note_quick_plan(nc, call, arena) < 0)
        return -1;
    call->notes = nc;
    return status_names(nc, ov->header, arena);
}

const char *bt_note_refuse(const BtOverload *ov)
{
    const BtDecl *d = ov->decl;

    if (d->ret.struct_ref)
        return "an annotated function that returns a struct (not bound yet: annotate no "
               "parameter of it)";
    for (int i = 0; i < d->n_params; i++)
        if (d->params[i].t.struct_ref && !d->params[i].t.is_array && !d->params[i].t.callback_ref)
            return "an annotated function that takes a struct by value (not bound yet: "
                   "annotate no parameter of it)";
    return NULL;
}

/* ================= the call ================= */

/* The status check: NULL when rv is one of the ok values, else the raised
 * StatusError (NULL too, with it set). 0 ok, -1 raised. */
static int status_ok(BtNoteFrame *f, const BtValue *rv)
{
    const char *name;
    const BtNotePlan *pl = f->nc->plan;
    long long v, ok;
    PyObject *e;

    bt_note_int_value(f->call->ret, rv, &v);
    for (int k = 0; k < pl->n_ok; k++) {
        if (bt_note_eval(f, &pl->ok[k], &ok) < 0)
            return -1;
        if (v == ok)
            return 0;
    }
    name = NULL;
    for (int k = 0; k < f->nc->n_status && !name; k++)
        if (f->nc->status_values[k] == v)
            name = f->nc->status_names[k];
    e = PyObject_CallFunction(f->nc->StatusError, "sLsz", f->fname, v, pl->ok[0].text, name);
    if (e)
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_XDECREF(e);
    return -1;
}

/* An out array as returned: trimmed to the length its trim parameter
 * holds after the call. New reference. */
static PyObject *out_array(BtNoteFrame *f, int i)
{
    const BtNoteParam *np = &f->nc->plan->params[i];
    PyObject *a = (PyObject *)(f->orig[i] ? f->orig[i] : f->arr[i]), *sl, *r, *x;
    long long n;

    if (np->trim < 0)
        return Py_NewRef(a);
    if (bt_note_int_value(f->nc->types[np->trim], &f->refs[np->trim], &n) < 0)
        n = 0;
    if (n < 0 || (PyArray_NDIM((PyArrayObject *)a) && n > PyArray_DIM((PyArrayObject *)a, 0))) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): '%s' says %lld elements of '%s' were written; it has %zd", f->fname,
                     f->nc->names[np->trim], n, f->nc->names[i],
                     (Py_ssize_t)PyArray_DIM((PyArrayObject *)a, 0));
        return NULL;
    }
    x = PyLong_FromLongLong(n);
    sl = x ? PySlice_New(NULL, x, NULL) : NULL;
    r = sl ? PyObject_GetItem(a, sl) : NULL;
    Py_XDECREF(x);
    Py_XDECREF(sl);
    return r;
}

/* What a pointer to a handle, C parameter i, holds after the call: the
 * caller's Handle (or None) where the function left it as it was; else
 * None for NULL or a new Handle (owned where its type has a destructor),
 * the caller's Handle closed without its destructor: the function freed
 * or replaced it (png_destroy_read_struct), which a second free must not
 * follow. New reference, or NULL. */
static PyObject *handle_after(BtNoteFrame *f, int i)
{
    PyObject *in = bt_note_role(f, i) == BT_ROLE_SCALAR_INOUT ? f->hin[i] : NULL;
    PyObject *type = f->nc->htypes[i];
    void *p = f->refs[i].p, *was = in && in != Py_None ? ((BtHandleObject *)in)->ptr : NULL;

    if (in && p == was)
        return Py_NewRef(in);
    if (was)
        bt_handle_disown(in);
    if (!p)
        Py_RETURN_NONE;
    if (!type) {
        PyErr_Format(PyExc_SystemError, "%s(): no handle type for '%s'", f->fname, f->nc->names[i]);
        return NULL;
    }
    return bt_handle_new(bt_state_from_type(Py_TYPE(type)), type, p);
}

/* The value C parameter i of role ro adds to the result (new reference),
 * or NULL with *none 1 when it adds none. */
static PyObject *result_part(BtNoteFrame *f, int i, int *none)
{
    int ro = bt_note_role(f, i);

    *none = !bt_note_returned(f->nc->plan, i);
    if (*none)
        return NULL;
    if (ro == BT_ROLE_OUT || ro == BT_ROLE_ARRAY)
        return out_array(f, i);
    if (f->nc->params[i].handle_ptr)
        return handle_after(f, i);
    if (f->nc->params[i].string_ptr) /* the string it points to after the call, copied */
        return bt_call_value(BT_CHAR, 1, &f->refs[i]);
    if (f->nc->types[i] == BT_CHAR) /* a character, as a char parameter takes one */
        return PyUnicode_FromOrdinal(f->refs[i].u8);
    return bt_call_value(f->nc->types[i], 0, &f->refs[i]);
}

/* The C return r (stolen) as the result has it: a returned handle a Handle
 * that keeps the call's arrays alive (an FFTW plan keeps their pointers),
 * else r. */
static PyObject *returned(BtNoteFrame *f, PyObject *r)
{
    PyObject *keep;
    int i, n = 0;

    if (!r || !f->call->ret_type)
        return r;
    r = bt_handle_returned(f->call, r, f->err, f->fname);
    if (!r || r == Py_None)
        return r;
    for (i = 0; i < f->nc->plan->n_params; i++)
        n += f->arr[i] != NULL;
    if (!(keep = PyTuple_New(n))) {
        Py_DECREF(r);
        return NULL;
    }
    for (i = 0, n = 0; i < f->nc->plan->n_params; i++)
        if (f->arr[i])
            PyTuple_SET_ITEM(keep, n++, Py_NewRef((PyObject *)f->arr[i]));
    bt_handle_keep(r, keep);
    Py_DECREF(keep);
    return r;
}

/* The result: the C return, then outs and in/out scalars in C order:
 * one bare, several as a tuple, none as None. */
static PyObject *result(BtNoteFrame *f, const BtValue *rv)
{
    const BtNotePlan *pl = f->nc->plan;
    PyObject *parts[BT_MAX_PARAMS + 1], *r = NULL;
    int i, none, n = 0, ok = 1;

    if (f->call->ret != BT_VOID && !pl->n_ok)
        ok = (parts[n++] = returned(f, bt_call_return(f->call, rv))) != NULL;
    for (i = 0; ok && i < pl->n_params; i++) {
        PyObject *x = result_part(f, i, &none);
        if (!none)
            ok = (parts[n++] = x) != NULL;
    }
    if (ok && n <= 1)
        return n ? parts[0] : Py_NewRef(Py_None);
    if (ok && (r = PyTuple_New(n)) != NULL) {
        for (i = 0; i < n; i++)
            PyTuple_SET_ITEM(r, i, parts[i]);
        return r;
    }
    for (i = 0; i < n; i++)
        Py_XDECREF(parts[i]);
    return NULL;
}

/* Copies back what the function wrote into copies of the caller's arrays. */
static int copy_back(BtNoteFrame *f)
{
    PyObject *type = NULL, *value = NULL, *tb = NULL;
    int rc = 0;

    for (int i = 0; i < f->nc->plan->n_params; i++) {
        if (!f->orig[i])
            continue;
        /* every copy goes back, also after one failed: no array is left half-written */
        if (PyArray_CopyInto(f->orig[i], f->arr[i]) < 0) {
            if (rc == 0)
                PyErr_Fetch(&type, &value, &tb);
            else
                PyErr_Clear();
            rc = -1;
        } else {
            bt_call_count(&f->call->stats->copy_backs, 1);
        }
    }
    if (rc < 0)
        PyErr_Restore(type, value, tb);
    return rc;
}

/* The call through the direct plan: each parameter's value into its
 * words (a complex double's two), then the guarded call site. */
static int call_direct(BtNoteFrame *f, BtValue *rv, char *what, size_t size)
{
    const BtNoteCall *nc = f->nc;
    uint64_t w[BT_DIRECT_WORDS];

    for (int i = 0; i < nc->plan->n_params; i++)
        memcpy(&w[nc->direct.pos[i]], &f->vals[i],
               !nc->is_ptr[i] && bt_type(nc->types[i])->size > 8 ? 16 : 8);
    return nc->site(&nc->direct, f->call->fn, rv, w, what, size);
}

static PyObject *run(BtNoteFrame *f, const BtCallOpts *opts)
{
    BtValue rv;
    char what[512];
    npy_intp total = 0;
    int thrown, release, i;
    PyThreadState *ts;

    for (i = 0; i < f->nc->plan->n_params; i++) {
        f->avalues[i] = &f->vals[i];
        if (f->arr[i])
            total += PyArray_SIZE(f->arr[i]);
    }
    release = bt_call_releases_gil(opts, total);
    rv.u64 = 0;
    memset(rv.bytes, 0, sizeof rv.bytes);
    ts = release ? PyEval_SaveThread() : NULL;
    errno = 0;
    if (f->nc->direct.variant && !opts->ffi)
        thrown = call_direct(f, &rv, what, sizeof what);
    else
        thrown = bt_guard_call((ffi_cif *)&f->call->cif, f->call->fn, &rv, f->avalues, what,
                               sizeof what);
    f->err = errno;
    if (release)
        PyEval_RestoreThread(ts);
    if (copy_back(f) < 0)
        return NULL;
    if (thrown)
        return bt_call_threw(thrown, what, f->fname);
    if (f->nc->plan->n_ok && status_ok(f, &rv) < 0)
        return NULL;
    return result(f, &rv);
}

/* The general path: a frame, each step as bt_note_call.h lists them. */
static BT_NOINLINE PyObject *invoke_general(const BtCall *call, PyObject *const *args,
                                            const char *fname, PyObject *names,
                                            const BtCallOpts *opts)
{
    BtNoteFrame frame,
        *f = &frame; /* on the stack: a heap block of its size costs more than the call */
    PyObject *r = NULL;
    int i, n = call->notes->plan->n_params;

    /* what a call reads before it writes, for its n parameters only (every value
     * of vals is stored before the call: a slot's, a hidden one's, an array's) */
    memset(f->refs, 0, sizeof f->refs[0] * (size_t)n);
    memset(f->arr, 0, sizeof f->arr[0] * (size_t)n);
    memset(f->orig, 0, sizeof f->orig[0] * (size_t)n);
    memset(f->owned, 0, sizeof f->owned[0] * (size_t)n);
    if (call->notes->by_address) {
        memset(f->hin, 0, sizeof f->hin[0] * (size_t)n);
        memset(f->held, 0, sizeof f->held[0] * (size_t)n);
    }
    f->call = call;
    f->nc = call->notes;
    f->fname = fname;
    f->args = args;
    f->layout = -1;
    if (bt_note_take(f, names) == 0)
        r = run(f, opts);
    for (i = 0; i < n; i++)
        if (f->owned[i])
            Py_XDECREF(f->arr[i]);
    for (i = 0; f->nc->by_address && i < n; i++)
        if (f->held[i])
            bt_handle_unhold(f->hin[i]);
    return r;
}

PyObject *bt_note_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                         PyObject *names, const BtCallOpts *opts)
{
    PyObject *r;

    if (call->notes->quick && bt_note_quick_call(call, args, NULL, 0, fname, opts, &r))
        return r;
    return invoke_general(call, args, fname, names, opts);
}

/* ================= StatusError ================= */

int bt_note_add(PyObject *module)
{
    BtState *st = bt_state(module);

    if (!(st->StatusError = bt_from_c("StatusError")))
        return -1;
    return PyModule_AddObjectRef(module, "StatusError", st->StatusError);
}

void bt_note_clear(BtState *st) { Py_CLEAR(st->StatusError); }
