/* bt_note_call.c - calls of annotated functions (bt_note_call.h). */
#include "bt_note_call.h"

#include "bt_from_c.h"
#include "bt_guard.h"
#include "bt_handle.h"
#include "bt_handle_call.h"
#include "bt_note_quick.h"
#include "bt_numpy.h"

#include <errno.h>
#include <limits.h>
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

/* ================= one call's state ================= */

typedef struct Frame {
    const BtCall *call;
    const BtNoteCall *nc;
    const char *fname;
    PyObject *const *args;
    BtValue vals[BT_MAX_PARAMS]; /* what each C parameter gets */
    BtValue refs[BT_MAX_PARAMS]; /* a scalar by pointer's storage */
    void *avalues[BT_MAX_PARAMS];
    PyObject *hin[BT_MAX_PARAMS];       /* a pointer to a handle: the caller's Handle or None */
    char held[BT_MAX_PARAMS];           /* hin's Handle held (bt_handle_hold) through the call */
    PyArrayObject *arr[BT_MAX_PARAMS];  /* the array passed (a copy or an allocation: owned) */
    PyArrayObject *orig[BT_MAX_PARAMS]; /* the caller's, where arr is a copy to write back */
    char owned[BT_MAX_PARAMS];
    long long ival[BT_MAX_PARAMS]; /* a hidden parameter's value */
    Py_ssize_t stride[BT_MAX_PARAMS], ld[BT_MAX_PARAMS];
    int layout; /* the function's: -1 none yet, 0 rows (C order), 1 columns */
    int err;    /* errno as the call left it (a returned handle's NULL says it) */
    char buf[256];
} Frame;

static int role(const Frame *f, int i) { return f->nc->plan->params[i].role; }

/* The integer value of type t in v (its low bytes). 0, or -1 with why. */
static int int_value(BtTypeId t, const BtValue *v, long long *out)
{
    const BtType *ty = bt_type(t);
    int shift = 64 - 8 * (int)ty->size;

    if (!strchr("biu", ty->kind))
        return -1;
    *out = ty->kind == 'i' ? (int64_t)(v->u64 << shift) >> shift
                           : (long long)(v->u64 << shift >> shift);
    return 0;
}

static int env_param(void *ctx, int i, long long *v, const char **why)
{
    Frame *f = ctx;
    int r = role(f, i);

    if (r == BT_ROLE_HIDDEN || r == BT_ROLE_HIDDEN_REF) {
        *v = f->ival[i];
        return 0;
    }
    if (r == BT_ROLE_ARRAY || r == BT_ROLE_OUT || f->nc->params[i].t.is_array) {
        snprintf(f->buf, sizeof f->buf, "'%s' is an array: len(%s) is its length", f->nc->names[i],
                 f->nc->names[i]);
        *why = f->buf;
        return -1;
    }
    if (int_value(f->nc->types[i], r == BT_ROLE_PLAIN ? &f->vals[i] : &f->refs[i], v) < 0) {
        snprintf(f->buf, sizeof f->buf, "'%s' is a %s, not an integer", f->nc->names[i],
                 bt_type(f->nc->types[i])->cname);
        *why = f->buf;
        return -1;
    }
    return 0;
}

/* The least and greatest of the n integers of type ty at p, stride s
 * bytes apart, and of their absolute values, folded into r[4] (minval,
 * maxval, minabs, maxabs; an unsigned one above LLONG_MAX counts as
 * LLONG_MAX, |LLONG_MIN| as LLONG_MAX). */
static void fold_values(const char *p, Py_ssize_t n, Py_ssize_t s, const BtType *ty, long long *r)
{
    for (Py_ssize_t j = 0; j < n; j++, p += s) {
        long long x, ax;
        uint64_t u = 0;
        memcpy(&u, p, ty->size); /* little-endian: the low bytes */
        if (ty->kind == 'i') {
            int shift = 64 - 8 * (int)ty->size;
            x = (long long)((int64_t)(u << shift) >> shift);
        } else {
            x = u > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)u;
        }
        ax = x == LLONG_MIN ? LLONG_MAX : x < 0 ? -x : x;
        r[0] = x < r[0] ? x : r[0];
        r[1] = x > r[1] ? x : r[1];
        r[2] = ax < r[2] ? ax : r[2];
        r[3] = ax > r[3] ? ax : r[3];
    }
}

/* minval/maxval/minabs/maxabs (q) of integer array a, parameter i, into
 * *v: of no value, minval and minabs are LLONG_MAX, maxval LLONG_MIN and
 * maxabs 0 (a range check of an empty array holds). 0, or -1 with why. */
static int array_values(Frame *f, int i, PyArrayObject *a, int q, long long *v, const char **why)
{
    const BtType *ty = bt_type(f->nc->types[i]);
    long long r[4] = {LLONG_MAX, LLONG_MIN, LLONG_MAX, 0};
    PyArrayObject *flat = a;

    if (!strchr("iu", ty->kind) || (size_t)PyArray_ITEMSIZE(a) != ty->size) {
        snprintf(f->buf, sizeof f->buf, "'%s' is not an array of integers", f->nc->names[i]);
        *why = f->buf;
        return -1;
    }
    if (PyArray_NDIM(a) > 1 && !PyArray_ISCONTIGUOUS(a) && !PyArray_ISFORTRAN(a) &&
        !(flat = (PyArrayObject *)PyArray_NewCopy(a, NPY_CORDER))) {
        PyErr_Clear();
        *why = "out of memory";
        return -1;
    }
    fold_values(PyArray_BYTES(flat), PyArray_SIZE(flat),
                PyArray_NDIM(flat) == 1 ? PyArray_STRIDE(flat, 0) : (Py_ssize_t)ty->size, ty, r);
    if (flat != a)
        Py_DECREF(flat);
    *v = r[q - BT_Q_MINVAL];
    return 0;
}

static int env_query(void *ctx, int q, int i, long long k, long long *v, const char **why)
{
    Frame *f = ctx;
    PyArrayObject *a = f->arr[i];
    int nd;

    if (!a) {
        snprintf(f->buf, sizeof f->buf, "'%s' is not an array of this call", f->nc->names[i]);
        *why = f->buf;
        return -1;
    }
    nd = PyArray_NDIM(a);
    switch (q) {
    case BT_Q_LEN:
        if (nd < 1) {
            snprintf(f->buf, sizeof f->buf, "len(%s): '%s' has no axes", f->nc->names[i],
                     f->nc->names[i]);
            *why = f->buf;
            return -1;
        }
        *v = PyArray_DIM(a, 0);
        return 0;
    case BT_Q_SHAPE: *v = k < nd ? PyArray_DIM(a, (int)k) : 1; return 0;
    case BT_Q_STRIDE: *v = f->stride[i]; return 0;
    case BT_Q_LD: *v = f->ld[i]; return 0;
    case BT_Q_NDIM: *v = nd; return 0;
    case BT_Q_MINVAL:
    case BT_Q_MAXVAL:
    case BT_Q_MINABS:
    case BT_Q_MAXABS: return array_values(f, i, a, q, v, why);
    default: *v = f->layout > 0; return 0; /* BT_Q_LAYOUT: 0 rows, 1 columns */
    }
}

/* ValueError "fname(): in annotation file:line:col 'text': why". */
static int expr_failed(Frame *f, const BtExpr *e, const char *why)
{
    PyErr_Format(PyExc_ValueError, "%s(): %s (the annotation '%s' at %s:%d:%d)", f->fname, why,
                 e->text, e->file ? e->file : "?", e->line, e->col);
    return -1;
}

/* ValueError: check e was false; what it read, with its values. */
static int check_failed(Frame *f, const BtExpr *e)
{
    BtExprEnv env = {env_param, env_query, f};
    char values[256], why[300];

    bt_expr_values(e, &env, values, sizeof values);
    snprintf(why, sizeof why, values[0] ? "a check failed: %s" : "a check failed", values);
    return expr_failed(f, e, why);
}

static int eval(Frame *f, const BtExpr *e, long long *v)
{
    BtExprEnv env = {env_param, env_query, f};
    char buf[256];
    const char *why = NULL;
    const BtExprNode *x = &e->nodes[e->root];

    /* the common one-node expressions (len(x), stride(x), ld(a), n), without the walk */
    if (e->n_nodes == 1 && x->op == BT_X_INT) {
        *v = x->v;
        return 0;
    }
    if (e->n_nodes == 1 && x->op == BT_X_QUERY && x->k != BT_Q_SHAPE && x->k != BT_Q_LAYOUT &&
        env_query(f, x->k, x->param, 0, v, &why) == 0)
        return 0;

    if (bt_expr_eval(e, &env, v, &why, buf, sizeof buf) == 0)
        return 0;
    return expr_failed(f, e, why ? why : "cannot evaluate it");
}

/* ================= arrays ================= */

/* A copy of a in order (NPY_CORDER, NPY_FORTRANORDER) passed for C
 * parameter i instead, written back after the call where the function
 * writes it. */
static int copy_array(Frame *f, int i, PyArrayObject *a, NPY_ORDER order)
{
    PyArrayObject *c;

    if (f->call->ret_type) { /* the handle keeps the pointer: a copy would not be a */
        PyErr_Format(
            PyExc_ValueError,
            "%s(): '%s' must be passed as it is (%s), since the handle %s returns "
            "keeps its pointer; pass %s",
            f->fname, f->nc->names[i],
            order == NPY_FORTRANORDER ? "Fortran-ordered" : "C-contiguous and aligned", f->fname,
            order == NPY_FORTRANORDER ? "numpy.asfortranarray(a)" : "numpy.ascontiguousarray(a)");
        return -1;
    }
    c = (PyArrayObject *)PyArray_NewCopy(a, order);
    if (!c)
        return -1;
    f->arr[i] = c;
    f->owned[i] = 1;
    if (f->nc->plan->params[i].written)
        f->orig[i] = a;
    bt_call_count(&f->call->stats->layout_copies, 1);
    return 0;
}

/* A 1-D array whose stride the function takes: zero-copy where the
 * stride is a whole number of elements (not 0 for more than one), BLAS's
 * pointer (the lowest address) for a negative one. */
static inline BT_ALWAYS_INLINE int strided_array(Frame *f, int i, PyArrayObject *a)
{
    Py_ssize_t isz = PyArray_ITEMSIZE(a), n, s;
    char *p;

    if (PyArray_NDIM(a) != 1) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): '%s' must be a 1-D array (the function takes its stride); it has %d "
                     "dimensions",
                     f->fname, f->nc->names[i], PyArray_NDIM(a));
        return -1;
    }
    n = PyArray_DIM(a, 0);
    s = PyArray_STRIDE(a, 0);
    if (!PyArray_ISALIGNED(a) || s % isz != 0 || (s == 0 && n > 1)) {
        if (copy_array(f, i, a, NPY_CORDER) < 0)
            return -1;
        a = f->arr[i];
        s = isz;
    } else {
        f->arr[i] = a;
    }
    if (n <= 1)
        s = isz;
    p = PyArray_BYTES(a);
    if (s < 0)
        p += (n - 1) * s;
    f->stride[i] = s / isz;
    f->vals[i].p = p;
    return 0;
}

/* Whether a 2-D (or 1-D: a column) array can be passed with a leading
 * dimension in layout lay (0 rows, 1 columns), and that dimension. */
static int fits_layout(PyArrayObject *a, int lay, Py_ssize_t *ld)
{
    Py_ssize_t isz = PyArray_ITEMSIZE(a), d0, d1, s0, s1, in, out_s;

    if (!PyArray_ISALIGNED(a))
        return 0;
    if (PyArray_NDIM(a) == 1) {
        d0 = PyArray_DIM(a, 0);
        if (d0 > 1 && PyArray_STRIDE(a, 0) != isz)
            return 0;
        *ld = lay ? (d0 > 1 ? d0 : 1) : 1;
        return 1;
    }
    d0 = PyArray_DIM(a, lay ? 1 : 0);
    d1 = PyArray_DIM(a, lay ? 0 : 1);
    s0 = PyArray_STRIDE(a, lay ? 1 : 0);
    s1 = PyArray_STRIDE(a, lay ? 0 : 1);
    in = d1 > 1 ? d1 : 1;     /* the inner extent, the least ld */
    if (d0 == 0 || d1 == 0) { /* no element: any strides (NumPy gives a new one 0s) */
        *ld = in;
        return 1;
    }
    if (d1 > 1 && s1 != isz)
        return 0;
    if (d0 > 1 && (s0 % isz != 0 || s0 / isz < in))
        return 0;
    out_s = d0 > 1 ? s0 / isz : in;
    *ld = out_s > in ? out_s : in;
    return 1;
}

/* An array whose leading dimension the function takes: the function's
 * layout is the first such array's (rows where both fit); later ones are
 * copied into it where they do not fit it. */
static int ld_array(Frame *f, int i, PyArrayObject *a)
{
    Py_ssize_t ld = 0;

    if (PyArray_NDIM(a) != 1 && PyArray_NDIM(a) != 2) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): '%s' must be a 1-D or 2-D array; it has %d dimensions", f->fname,
                     f->nc->names[i], PyArray_NDIM(a));
        return -1;
    }
    if (f->layout < 0)
        f->layout = fits_layout(a, 0, &ld) ? 0 : fits_layout(a, 1, &ld) ? 1 : 0;
    if (!fits_layout(a, f->layout, &ld)) {
        if (copy_array(f, i, a, f->layout ? NPY_FORTRANORDER : NPY_CORDER) < 0)
            return -1;
        a = f->arr[i];
        fits_layout(a, f->layout, &ld);
    } else {
        f->arr[i] = a;
    }
    f->ld[i] = ld;
    f->stride[i] = 1;
    f->vals[i].p = PyArray_BYTES(a);
    return 0;
}

/* An array passed contiguous and aligned, by rows (lay 0: C order) or by
 * columns (1: Fortran order): as it is, else a copy. */
static int contiguous_array(Frame *f, int i, PyArrayObject *a, int lay)
{
    if (lay ? !PyArray_ISFARRAY_RO(a) : !PyArray_ISCARRAY_RO(a)) {
        if (copy_array(f, i, a, lay ? NPY_FORTRANORDER : NPY_CORDER) < 0)
            return -1;
        a = f->arr[i];
    } else {
        f->arr[i] = a;
    }
    f->stride[i] = 1;
    f->vals[i].p = PyArray_BYTES(a);
    return 0;
}

/* A caller's array for C parameter i: writable where the function writes
 * it; passed as the function can take it, else a contiguous copy. */
static inline BT_ALWAYS_INLINE int take_array(Frame *f, int i, PyObject *o)
{
    const BtNoteParam *np = &f->nc->plan->params[i];
    PyArrayObject *a;

    if (!o || !PyArray_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "%s(): '%s' must be a numpy.ndarray", f->fname,
                     f->nc->names[i]);
        return -1;
    }
    a = (PyArrayObject *)o;
    if (np->written && !PyArray_ISWRITEABLE(a)) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): '%s' is read-only, and the function writes it; pass a writable "
                     "array (a copy: x.copy())",
                     f->fname, f->nc->names[i]);
        return -1;
    }
    if (np->strided)
        return strided_array(f, i, a);
    if (np->ld)
        return ld_array(f, i, a);
    if (!np->follows || PyArray_NDIM(a) != 2)
        return contiguous_array(f, i, a, 0);
    /* a 2-D array that follows the call's layout (decided by the arrays
     * taken before it; by this one where none did) */
    if (f->layout < 0)
        f->layout = !PyArray_ISCARRAY_RO(a) && PyArray_ISFARRAY_RO(a);
    return contiguous_array(f, i, a, f->layout);
}

/* A caller's array for fixed-size array slot s (`uuid_t uu`): refused
 * unless it has the slot's flags (as a call without notes refuses it: a
 * copy only where it lacks alignment alone, or an annotation's intent
 * relaxed them) and its C shape; then as take_array takes it. */
static int take_fixed(Frame *f, const BtArgSlot *s, PyObject *o, PyObject *name)
{
    PyArrayObject *a = (PyArrayObject *)o;
    BtArrayArg g;

    if (o && PyArray_CheckExact(o)) {
        g.addr = (uint64_t)(uintptr_t)PyArray_DATA(a);
        g.flags = PyArray_FLAGS(a);
        g.ndim = PyArray_NDIM(a);
        g.dims = (const Py_ssize_t *)PyArray_DIMS(a);
        g.via = NULL;
        if ((!bt_slot_flags_ok(s, g.flags) && bt_slot_array_refused(s, &g, f->fname, name) < 0) ||
            bt_slot_fixed_check(s, g.ndim, g.dims, f->fname, name) < 0)
            return -1;
    }
    return take_array(f, s->cidx, o);
}

/* An out array: its shape evaluated, allocated zeroed in the function's
 * layout. */
static int make_out(Frame *f, int i)
{
    const BtNoteParam *np = &f->nc->plan->params[i];
    npy_intp dims[BT_MAX_SIZE_AXES];
    PyArray_Descr *descr;
    long long v;
    int k;

    for (k = 0; k < np->n_shape; k++) {
        if (eval(f, &np->shape[k], &v) < 0)
            return -1;
        if (v < 0) {
            PyErr_Format(PyExc_ValueError, "%s(): out array '%s' would have axis %d of %lld",
                         f->fname, f->nc->names[i], k, v);
            return -1;
        }
        dims[k] = (npy_intp)v;
    }
    descr = PyArray_DescrFromType(bt_type(f->nc->types[i])->npy_type);
    if (!descr)
        return -1;
    if (f->layout < 0 && (np->ld || np->follows))
        f->layout = 0;
    f->arr[i] = (PyArrayObject *)PyArray_Zeros(np->n_shape, dims, descr,
                                               f->layout > 0 && (np->ld || np->follows));
    if (!f->arr[i])
        return -1;
    f->owned[i] = 1;
    f->stride[i] = 1;
    f->ld[i] = 1;
    if (np->ld && !fits_layout(f->arr[i], f->layout, &f->ld[i]))
        f->ld[i] = 1;
    f->vals[i].p = PyArray_BYTES(f->arr[i]);
    return 0;
}

/* ================= scalars and hidden values ================= */

/* A Python argument for C parameter i (slot s): by value, or by pointer
 * into its own storage. */
static int take_scalar(Frame *f, int i, const BtArgSlot *s, PyObject *o, PyObject *name)
{
    int r = role(f, i);
    BtValue *at = r == BT_ROLE_PLAIN ? &f->vals[i] : &f->refs[i];

    if (s->kind == 'h' &&
        f->nc->params[i].handle_ptr) { /* its type's Handle (any for void **) or None */
        const char *key = s->handle && !bt_handle_key_untyped(s->handle->key) ? s->handle->key
                                                                              : NULL;
        f->hin[i] = o;
        if (o == Py_None)
            at->p = NULL;
        else if (bt_handle_arg(o, key, s->handle ? s->handle->name : "", f->fname, name, &at->p) <
                     0 ||
                 bt_handle_hold(o, f->fname, name) < 0)
            return -1;
        else
            f->held[i] = 1;
    } else if (!o) {
        *at = s->defval;
    } else if (bt_slot_store_arg(at, s, o, f->fname, name) < 0) {
        return -1;
    }
    if (r != BT_ROLE_PLAIN)
        f->vals[i].p = &f->refs[i];
    return 0;
}

/* Hidden value v into C parameter i, checked against its type. */
static int put_hidden(Frame *f, int i, long long v)
{
    const BtType *t = bt_type(f->nc->types[i]);
    BtValue *at = role(f, i) == BT_ROLE_HIDDEN_REF ? &f->refs[i] : &f->vals[i];

    if (strchr("biu", t->kind) && (v < t->min || (v > 0 && (unsigned long long)v > t->max))) {
        PyErr_Format(PyExc_OverflowError,
                     "%s(): '%s' would be %lld, which does not fit its C type %s (the "
                     "annotation '%s')",
                     f->fname, f->nc->names[i], v, t->cname,
                     f->nc->plan->params[i].value ? f->nc->plan->params[i].value->text
                                                  : "its array's extent");
        return -1;
    }
    f->ival[i] = v;
    memset(at, 0, sizeof *at);
    if (t->kind == 'f')
        t->size == 4 ? (void)(at->f = (float)v) : (void)(at->d = (double)v);
    else
        at->i64 = v;
    if (at == &f->refs[i])
        f->vals[i].p = at;
    return 0;
}

/* The hidden values and out arrays, in the plan's order. */
static int compute(Frame *f)
{
    const BtNotePlan *pl = f->nc->plan;
    long long v;

    for (int k = 0; k < pl->n_order; k++) {
        int i = pl->order[k];
        if (pl->params[i].role == BT_ROLE_OUT) {
            if (make_out(f, i) < 0)
                return -1;
        } else if (eval(f, pl->params[i].value, &v) < 0 || put_hidden(f, i, v) < 0) {
            return -1;
        }
    }
    return 0;
}

/* "(3, 4)" of n values into buf. */
static void put_shape(char *buf, size_t size, const long long *v, int n)
{
    size_t at = 0;

    at += (size_t)snprintf(buf, size, "(");
    for (int k = 0; k < n && at < size; k++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? ", " : "", v[k]);
    if (at < size)
        snprintf(buf + at, size - at, n == 1 ? ",)" : ")");
}

/* The caller's arrays' stated shapes: each axis as its expression says,
 * no axis past them. */
static int check_shapes(Frame *f)
{
    const BtNotePlan *pl = f->nc->plan;

    for (int i = 0; i < pl->n_params; i++) {
        const BtNoteParam *np = &pl->params[i];
        long long want[BT_MAX_SIZE_AXES], got[BT_MAX_SIZE_AXES];
        char w[160], g[160];
        int k, nd, bad;
        if (np->role != BT_ROLE_ARRAY || !np->n_shape)
            continue;
        nd = PyArray_NDIM(f->arr[i]);
        bad = nd > np->n_shape;
        for (k = 0; k < np->n_shape; k++) {
            if (eval(f, &np->shape[k], &want[k]) < 0)
                return -1;
            got[k] = k < nd ? PyArray_DIM(f->arr[i], k) : 1;
            bad |= want[k] != got[k];
        }
        if (!bad)
            continue;
        for (k = 0; k < nd && k < BT_MAX_SIZE_AXES; k++)
            got[k] = PyArray_DIM(f->arr[i], k);
        put_shape(w, sizeof w, want, np->n_shape);
        put_shape(g, sizeof g, got, nd < BT_MAX_SIZE_AXES ? nd : BT_MAX_SIZE_AXES);
        PyErr_Format(PyExc_ValueError, "%s(): '%s' must have shape %s, as %s:%d says; it has %s",
                     f->fname, f->nc->names[i], w, np->shape[0].file ? np->shape[0].file : "?",
                     np->shape[0].line, g);
        return -1;
    }
    return 0;
}

static int run_checks(Frame *f)
{
    const BtNotePlan *pl = f->nc->plan;
    long long v;

    for (int k = 0; k < pl->n_checks; k++) {
        if (eval(f, &pl->checks[k], &v) < 0)
            return -1;
        if (!v)
            return check_failed(f, &pl->checks[k]);
    }
    return 0;
}

/* Dialect size parameters of the caller's arrays (`x_size` after x). */
static int dialect_sizes(Frame *f)
{
    for (int j = 0; j < f->nc->plan->n_params; j++) {
        const BtParam *p = &f->nc->params[j];
        PyArrayObject *a = p->size_of >= 0 ? f->arr[p->size_of] : NULL;
        if (!a)
            continue;
        if (p->size_axis >= PyArray_NDIM(a)) {
            PyErr_Format(PyExc_ValueError, "%s(): '%s' needs at least %d dimensions", f->fname,
                         f->nc->names[p->size_of], p->size_axis + 1);
            return -1;
        }
        if (put_hidden(f, j, PyArray_DIM(a, p->size_axis)) < 0)
            return -1;
    }
    return 0;
}

/* ================= the call ================= */

/* The Python arguments into the frame, in nc->take's order: scalars,
 * then arrays, then the arrays that follow the layout those decide. */
static int take_args(Frame *f, PyObject *names)
{
    const BtCall *c = f->call;
    int k;

    for (k = 0; k < c->n_py; k++) {
        int i = f->nc->take[k];
        const BtArgSlot *s = &c->slots[i];
        PyObject *o = f->args[i], *name = PyTuple_GET_ITEM(names, i);
        if (s->is_array ? (s->n_fixed ? take_fixed(f, s, o, name) : take_array(f, s->cidx, o)) < 0
                        : take_scalar(f, s->cidx, s, o, name) < 0)
            return -1;
    }
    for (k = 0; k < f->nc->plan->n_params; k++) {
        int r = role(f, k);
        if (r == BT_ROLE_SCALAR_OUT)
            f->vals[k].p = &f->refs[k];
    }
    return dialect_sizes(f);
}

/* The status check: NULL when rv is one of the ok values, else the raised
 * StatusError (NULL too, with it set). 0 ok, -1 raised. */
static int status_ok(Frame *f, const BtValue *rv)
{
    const char *name;
    const BtNotePlan *pl = f->nc->plan;
    long long v, ok;
    PyObject *e;

    int_value(f->call->ret, rv, &v);
    for (int k = 0; k < pl->n_ok; k++) {
        if (eval(f, &pl->ok[k], &ok) < 0)
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
static PyObject *out_array(Frame *f, int i)
{
    const BtNoteParam *np = &f->nc->plan->params[i];
    PyObject *a = (PyObject *)(f->orig[i] ? f->orig[i] : f->arr[i]), *sl, *r, *x;
    long long n;

    if (np->trim < 0)
        return Py_NewRef(a);
    if (int_value(f->nc->types[np->trim], &f->refs[np->trim], &n) < 0)
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
static PyObject *handle_after(Frame *f, int i)
{
    PyObject *in = role(f, i) == BT_ROLE_SCALAR_INOUT ? f->hin[i] : NULL;
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
static PyObject *result_part(Frame *f, int i, int *none)
{
    int ro = role(f, i);

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
static PyObject *returned(Frame *f, PyObject *r)
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
static PyObject *result(Frame *f, const BtValue *rv)
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
static int copy_back(Frame *f)
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
static int call_direct(Frame *f, BtValue *rv, char *what, size_t size)
{
    const BtNoteCall *nc = f->nc;
    uint64_t w[BT_DIRECT_WORDS];

    for (int i = 0; i < nc->plan->n_params; i++)
        memcpy(&w[nc->direct.pos[i]], &f->vals[i],
               !nc->is_ptr[i] && bt_type(nc->types[i])->size > 8 ? 16 : 8);
    return nc->site(&nc->direct, f->call->fn, rv, w, what, size);
}

static PyObject *run(Frame *f, const BtCallOpts *opts)
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
    Frame frame, *f = &frame; /* on the stack: a heap block of its size costs more than the call */
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
    if (take_args(f, names) == 0 && compute(f) == 0 && check_shapes(f) == 0 && run_checks(f) == 0)
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
