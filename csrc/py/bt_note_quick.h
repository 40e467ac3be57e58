/* bt_note_quick.h - the quick call of an annotated function: the common
 * conventions (BLAS's hidden sizes and increments, arrays whose shape the
 * notes state) compiled at bind time into a plan of direct operations, so
 * that a call makes one pass over its arguments and calls the C function
 * directly, with no frame, no expression walk and no allocation.
 *
 * A plan exists where every parameter is one of: a scalar by value, or an
 * `intent: in` scalar by pointer, that bt_slot_store_fast converts (kinds
 * i, u, f, b, c); a caller's array passed as it is (a 1-D strided view
 * where the function takes its stride, else C-contiguous and aligned); a
 * hidden value or a dialect size whose expression is one of
 *   an integer, a parameter (a hidden one, or an integer scalar),
 *   len(x), shape(x, k), stride(x), ndim(x);
 * every stated shape of those expressions; no check, no status, no out
 * array or scalar, no trim, no handle, no callback, no leading dimension
 * or layout; a direct call (bt_direct.h); a return that is void or a
 * number. Anything else has no plan: bt_note_invoke's general path.
 *
 * A call the plan cannot take as it is (another array layout, a view whose
 * stride is no whole number of elements, a shape that does not match, a
 * value out of its C type's range, a scalar the quick conversion leaves,
 * libffi forced) declines before it has done anything visible: the general
 * path then takes it from the start, with its copies and its messages.
 *
 * Two ways in: the fused entry (bt_function.c), where the arguments have
 * the dispatcher's memo keys, checked in the same pass, before any
 * dispatch (bt_note_quick_fused: not counted as the general path's); and
 * bt_note_invoke, once the dispatcher chose the overload. Both count the
 * call in BtCallStats.quick (Function._quick_calls). */
#ifndef BT_NOTE_QUICK_H
#define BT_NOTE_QUICK_H

#include "bt_dispatch.h"
#include "bt_note_call.h"

#include <string.h>

/* The quick plan of nc's overload (call's slots), allocated from arena,
 * into nc->quick; NULL there where the overload has none. 0, or -1 with
 * MemoryError. */
BT_HIDDEN int bt_note_quick_plan(BtNoteCall *nc, const BtCall *call, BtArena *arena);

/* The fused entry's way (bt_function.c) for an annotated overload: the
 * call of args[n_py], all given by position, when each has the key the
 * dispatcher's memo holds (d->last_keys, read at sequence seq) and the
 * quick call takes them, with the Function's options opts (no
 * bindthem.options() block, libffi not forced). Returns 1 with the call
 * made (*r), or 0 with nothing done: the general path takes the call. */
BT_HIDDEN int bt_note_quick_fused(const BtCall *call, PyObject *const *args, const BtDispatch *d,
                                  unsigned seq, const BtCallOpts *opts, PyObject **r);

/* ================= the plan (bt_note_quick.c makes it) =================
 *
 * Where a value comes from: one operation, decided at bind time. */
enum {
    BT_QV_INT,    /* the constant v */
    BT_QV_HIDDEN, /* C parameter p's computed value, where it is a float (a computed
                   * integer is BT_QV_WORD) */
    BT_QV_WORD,   /* integer p's value, in its word (a scalar's, a computed one's) */
    BT_QV_LEN,    /* len(p): its first extent (a 0-d array declines) */
    BT_QV_SHAPE,  /* shape(p, v): extent v, 1 past the last axis */
    BT_QV_AXIS,   /* a dialect size: extent v (an array with fewer axes declines) */
    BT_QV_STRIDE, /* stride(p) in elements */
    BT_QV_NDIM    /* ndim(p) */
};

typedef struct BtNoteQVal {
    uint8_t op; /* BT_QV_* */
    uint8_t p;  /* the C parameter it reads */
    uint8_t word;
    long long v;
} BtNoteQVal;

/* A Python argument, in slot order: what it is. */
enum {
    BT_QA_STRIDED, /* an array whose stride the function takes (1-D, any stride) */
    BT_QA_ARRAY,   /* an array passed C-contiguous and aligned */
    BT_QA_SCALAR,  /* a scalar by value */
    BT_QA_POINTER  /* a scalar by pointer (`intent: in`) */
};

/* A hidden value that is len(x) or stride(x) of a strided array x: stored
 * as x is taken (the value at hand), into its word and its C type's range. */
typedef struct BtNoteQEmit {
    uint8_t stride; /* stride(x); else len(x) */
    uint8_t cidx, word;
    unsigned long long min, span; /* the type's range: min, max - min (max: at most
                                   * LLONG_MAX), as unsigned */
} BtNoteQEmit;

#define BT_NOTE_Q_EMITS 4 /* per array; more go the computed values' way */

typedef struct BtNoteQArg {
    uint8_t kind; /* BT_QA_* */
    uint8_t n_emit;
    BtNoteQEmit emit[BT_NOTE_Q_EMITS]; /* BT_QA_STRIDED: its hidden values */
    uint8_t cidx, word;
    uint8_t shift;  /* an array: log2 of its element size */
    Py_ssize_t isz; /* an array: its element size */
    int need;       /* an array: the NumPy flags it must have (C order and aligned for
                    * BT_QA_ARRAY, aligned for BT_QA_STRIDED; writable where the function writes it) */
} BtNoteQArg;

/* A computed C parameter (a dialect size, then the hidden ones in the
 * plan's order) and its C type's range. */
typedef struct BtNoteQHidden {
    uint8_t cidx, word;
    char kind; /* the type's: b, i, u or f */
    uint8_t size;
    unsigned long long min, span; /* the type's range, as BtNoteQEmit's */
    BtNoteQVal val;
} BtNoteQHidden;

/* An array's stated shape: n expressions at want. */
typedef struct BtNoteQShape {
    uint8_t p;
    int n;
    const BtNoteQVal *want;
} BtNoteQShape;

typedef struct BtNoteQuick {
    BtNoteQArg *args; /* call->n_py */
    BtNoteQHidden *hidden;
    int n_hidden;
    BtNoteQShape *shapes;
    int n_shapes;
    uint8_t ret_double; /* returns a double: PyFloat_FromDouble */
} BtNoteQuick;

/* ================= the call (inlined into bt_note_invoke) =================
 *
 * bt_note_quick_call: the call of args (n_py, in slot order; none omitted:
 * a default goes the general way) through nc->quick (NULL: none). d:
 * NULL where the dispatcher chose the overload, else the dispatcher whose
 * memo's keys each argument must have (d->last_keys, read under its
 * sequence lock at seq: checked before the call, as the fused entry
 * checks it). Returns 1 with the call
 * made (*r: its result, or NULL with an exception set), or 0 with nothing
 * done. */

/* One call's values: the direct call's words, the arrays (by C parameter),
 * their strides in elements, the computed values, scalars by pointer. */
typedef struct BtNoteQ {
    uint64_t w[BT_DIRECT_WORDS];
    PyArrayObject *arr[BT_MAX_PARAMS];
    Py_ssize_t stride[BT_MAX_PARAMS];
    long long ival[BT_MAX_PARAMS]; /* a computed float's value as an integer */
    uint64_t refs[BT_MAX_PARAMS][2];
} BtNoteQ;

/* Value v of operation op. 1, or 0: the general path says why not. */
static inline BT_ALWAYS_INLINE int bt_note_q_qval(const BtNoteQVal *op, const BtNoteQ *q,
                                                  long long *v)
{
    switch (op->op) {
    case BT_QV_INT: *v = op->v; return 1;
    case BT_QV_HIDDEN: *v = q->ival[op->p]; return 1;
    case BT_QV_WORD: *v = (long long)q->w[op->word]; return 1;
    case BT_QV_STRIDE: *v = q->stride[op->p]; return 1;
    case BT_QV_NDIM: *v = PyArray_NDIM(q->arr[op->p]); return 1;
    case BT_QV_LEN:
        if (PyArray_NDIM(q->arr[op->p]) < 1)
            return 0;
        *v = PyArray_DIM(q->arr[op->p], 0);
        return 1;
    case BT_QV_AXIS:
        if (op->v >= PyArray_NDIM(q->arr[op->p]))
            return 0;
        *v = PyArray_DIM(q->arr[op->p], (int)op->v);
        return 1;
    default: /* BT_QV_SHAPE */
        *v = op->v < PyArray_NDIM(q->arr[op->p]) ? PyArray_DIM(q->arr[op->p], (int)op->v) : 1;
        return 1;
    }
}

/* A caller's array as the function takes it, as it is: with the flags it
 * needs; a 1-D view whose stride is a whole number of elements (not 0 for
 * more than one; BLAS's pointer, the lowest address, for a negative one)
 * where it takes the stride, else C-contiguous. 1, or 0. */
static inline BT_ALWAYS_INLINE int bt_note_q_take_array(const BtNoteQArg *g, PyObject *o,
                                                        const void *key, BtNoteQ *q,
                                                        Py_ssize_t *total)
{
    PyArrayObject *a = (PyArrayObject *)o;
    Py_ssize_t n, s, isz = g->isz;
    const BtNoteQEmit *e, *end = g->emit + g->n_emit;
    char *p;

    if ((key ? !BT_SLOT_ARRAY_HAS_KEY(o, key) : !o || !PyArray_CheckExact(o)) ||
        (PyArray_FLAGS(a) & g->need) != g->need)
        return 0;
    q->arr[g->cidx] = a;
    p = PyArray_BYTES(a);
    if (g->kind == BT_QA_ARRAY) {
        if (!PyArray_ISNOTSWAPPED(a)) /* PyArray_ISCARRAY_RO's last condition */
            return 0;
        q->stride[g->cidx] = 1;
        *total += bt_slot_elements(PyArray_NDIM(a), (const Py_ssize_t *)PyArray_DIMS(a));
        q->w[g->word] = (uint64_t)(uintptr_t)p;
        return 1;
    }
    if (PyArray_NDIM(a) != 1)
        return 0;
    n = PyArray_DIM(a, 0);
    s = n <= 1 ? isz : PyArray_STRIDE(a, 0);
    if ((s & (isz - 1)) != 0 || s == 0)
        return 0;
    if (s < 0)
        p += (n - 1) * s;
    *total += n;
    q->stride[g->cidx] = s >>= g->shift; /* exact: a multiple of isz */
    q->w[g->word] = (uint64_t)(uintptr_t)p;
    for (e = g->emit; e < end; e++) {
        uint64_t v = (uint64_t)(e->stride ? s : n);
        if (v - e->min > e->span)
            return 0;
        q->w[e->word] = v;
    }
    return 1;
}

/* The Python arguments into q, each with its key in keys where keys is
 * not NULL (the dispatcher's memo: the call has not been dispatched). 1,
 * or 0. */
static inline BT_ALWAYS_INLINE int bt_note_q_take_args(const BtCall *call, const BtNoteQuick *qp,
                                                       PyObject *const *args,
                                                       const void *const *keys, BtNoteQ *q,
                                                       Py_ssize_t *total)
{
    const BtNoteQArg *g = qp->args;
    const int n = call->n_py; /* read once: the stores below may alias nothing it holds */

    for (int k = 0; k < n; k++, g++) {
        const void *key = keys ? BT_FT_LOAD(&keys[k]) : NULL;
        uint64_t *at;
        if (g->kind <= BT_QA_ARRAY) {
            if (!bt_note_q_take_array(g, args[k], key, q, total))
                return 0;
            continue;
        }
        if (keys ? !bt_slot_scalar_has_key(args[k], key) : !args[k])
            return 0; /* another type, a default: the general way */
        at = g->kind == BT_QA_POINTER ? q->refs[g->cidx] : &q->w[g->word];
        if (!bt_slot_store_fast(&call->slots[k], args[k], at))
            return 0;
        if (g->kind == BT_QA_POINTER)
            q->w[g->word] = (uint64_t)(uintptr_t)at;
    }
    return 1;
}

/* The computed values into their words (each in its C type's range), then
 * the stated shapes. 1, or 0. */
static inline BT_ALWAYS_INLINE int bt_note_q_compute(const BtNoteQuick *qp, BtNoteQ *q)
{
    const BtNoteQHidden *h = qp->hidden, *end = h + qp->n_hidden;
    const BtNoteQShape *s = qp->shapes, *send = s + qp->n_shapes;
    long long v;
    int j;

    for (; h < end; h++) {
        if (!bt_note_q_qval(&h->val, q, &v))
            return 0;
        if (h->kind == 'f') { /* as put_hidden: the value as a float or double */
            double d = (double)v;
            float f = (float)v;
            q->ival[h->cidx] = v; /* BT_QV_HIDDEN reads it */
            q->w[h->word] = 0;
            if (h->size == 4)
                memcpy(&q->w[h->word], &f, sizeof f);
            else
                memcpy(&q->w[h->word], &d, sizeof d);
        } else if ((uint64_t)v - h->min > h->span) {
            return 0;
        } else {
            q->w[h->word] = (uint64_t)v;
        }
    }
    for (; s < send; s++) {
        const PyArrayObject *a = q->arr[s->p];
        int nd = PyArray_NDIM(a);
        if (nd > s->n)
            return 0;
        if (s->n == 1) { /* the common one: a vector's length */
            if (!bt_note_q_qval(s->want, q, &v) || v != (nd ? PyArray_DIM(a, 0) : 1))
                return 0;
            continue;
        }
        for (j = 0; j < s->n; j++)
            if (!bt_note_q_qval(&s->want[j], q, &v) || v != (j < nd ? PyArray_DIM(a, j) : 1))
                return 0;
    }
    return 1;
}

static inline BT_ALWAYS_INLINE int bt_note_quick_call(const BtCall *call, PyObject *const *args,
                                                      const BtDispatch *d, unsigned seq,
                                                      const char *fname, const BtCallOpts *opts,
                                                      PyObject **r)
{
    const BtNoteCall *nc = call->notes;
    const BtNoteQuick *qp = nc->quick;
    Py_ssize_t total = 0;
    PyThreadState *ts;
    BtValue rv;
    char what[512];
    int thrown;
    BtNoteQ q;

    /* (no plan returns a handle or a struct: no direct call, bt_note_prepare;
     * bt_note_refuse) */
    if (!qp || (!d && opts->ffi) || /* the fused entry's caller checked libffi */
        !bt_note_q_take_args(call, qp, args, d ? (const void *const *)d->last_keys : NULL, &q,
                             &total) ||
        !bt_note_q_compute(qp, &q))
        return 0;
    if (d && !BT_FT_SEQ_SAME(&d->last_seq, seq)) /* the memo changed as its keys were read */
        return 0;
    bt_call_count(&call->stats->quick, 1);
    rv.u64 = 0;
    if (bt_call_releases_gil(opts, total)) {
        ts = PyEval_SaveThread();
        thrown = nc->site(&nc->direct, call->fn, &rv, q.w, what, sizeof what);
        PyEval_RestoreThread(ts);
    } else {
        thrown = nc->site(&nc->direct, call->fn, &rv, q.w, what, sizeof what);
    }
    if (thrown)
        *r = bt_call_threw(thrown, what, fname);
    else if (qp->ret_double)
        *r = PyFloat_FromDouble(rv.d);
    else
        *r = call->ret == BT_VOID ? Py_NewRef(Py_None) : bt_call_return(call, &rv);
    return 1;
}

#endif
