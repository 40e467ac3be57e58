/* bt_note_frame.c - the expression environment of an annotated call
 * (bt_note_frame.h): a parameter's value, an array's len, shape, stride or
 * ndim, the values of an array's elements; the evaluation of hidden values
 * and checks, and their messages. */
#include "bt_note_frame.h"

#include <limits.h>
#include <string.h>

/* The integer value of type t in v (its low bytes). 0, or -1 with why. */
int bt_note_int_value(BtTypeId t, const BtValue *v, long long *out)
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
    BtNoteFrame *f = ctx;
    int r = bt_note_role(f, i);

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
    if (bt_note_int_value(f->nc->types[i], r == BT_ROLE_PLAIN ? &f->vals[i] : &f->refs[i], v) < 0) {
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
static int array_values(BtNoteFrame *f, int i, PyArrayObject *a, int q, long long *v,
                        const char **why)
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
    BtNoteFrame *f = ctx;
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
static int expr_failed(BtNoteFrame *f, const BtExpr *e, const char *why)
{
    PyErr_Format(PyExc_ValueError, "%s(): %s (the annotation '%s' at %s:%d:%d)", f->fname, why,
                 e->text, e->file ? e->file : "?", e->line, e->col);
    return -1;
}

/* ValueError: check e was false; what it read, with its values. */
int bt_note_check_failed(BtNoteFrame *f, const BtExpr *e)
{
    BtExprEnv env = {env_param, env_query, f};
    char values[256], why[300];

    bt_expr_values(e, &env, values, sizeof values);
    snprintf(why, sizeof why, values[0] ? "a check failed: %s" : "a check failed", values);
    return expr_failed(f, e, why);
}

int bt_note_eval(BtNoteFrame *f, const BtExpr *e, long long *v)
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
