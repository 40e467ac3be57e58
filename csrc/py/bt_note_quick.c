/* bt_note_quick.c - the quick call of an annotated function (bt_note_quick.h). */
#include "bt_note_quick.h"

#include <limits.h>
#include <string.h>

/* ================= the plan (bind time) ================= */

static int role(const BtNoteCall *nc, int i) { return nc->plan->params[i].role; }

/* Whether C parameter i is an array the plan takes (a Python argument). */
static int plan_array(const BtNoteCall *nc, const BtCall *call, int i)
{
    const BtNoteParam *np = &nc->plan->params[i];
    const BtArgSlot *s;
    size_t sz;

    if (nc->slot[i] < 0 || (role(nc, i) != BT_ROLE_PLAIN && role(nc, i) != BT_ROLE_ARRAY))
        return 0;
    s = &call->slots[nc->slot[i]];
    sz = bt_type(nc->types[i])->size;
    return s->is_array && !s->n_fixed && np->trim < 0 && !np->ld && !np->follows && sz &&
           !(sz & (sz - 1));
}

/* Whether C parameter i is a dialect size of an array the plan takes. */
static int dialect_size(const BtNoteCall *nc, const BtCall *call, int i)
{
    const BtParam *p = &nc->params[i];

    return p->size_of >= 0 && plan_array(nc, call, p->size_of);
}

/* e as one operation into *q, where it is one node the plan knows. 1, or 0. */
static int compile(const BtNoteCall *nc, const BtCall *call, const BtExpr *e, BtNoteQVal *q)
{
    const BtExprNode *x;
    const BtArgSlot *s;
    int p, r;

    if (!e || e->n_nodes != 1)
        return 0;
    x = &e->nodes[e->root];
    memset(q, 0, sizeof *q);
    q->p = (uint8_t)(p = x->param);
    q->v = x->v;
    if (x->op == BT_X_INT) {
        q->op = BT_QV_INT;
        return 1;
    }
    if (p < 0 || p >= nc->plan->n_params)
        return 0;
    r = role(nc, p);
    if (x->op == BT_X_PARAM) {
        /* a computed integer is in its word as it is: read there */
        q->op = strchr("biu", bt_type(nc->types[p])->kind) ? BT_QV_WORD : BT_QV_HIDDEN;
        q->word = nc->direct.pos[p];
        if (r == BT_ROLE_HIDDEN || (r == BT_ROLE_PLAIN && nc->slot[p] < 0))
            return r == BT_ROLE_HIDDEN || dialect_size(nc, call, p);
        if (r != BT_ROLE_PLAIN || nc->slot[p] < 0)
            return 0;
        s = &call->slots[nc->slot[p]];
        q->op = BT_QV_WORD;
        q->word = nc->direct.pos[p];
        return !s->is_array && strchr("biu", s->kind) != NULL;
    }
    if (x->op != BT_X_QUERY || !plan_array(nc, call, p))
        return 0;
    switch (x->k) {
    case BT_Q_LEN: q->op = BT_QV_LEN; return 1;
    case BT_Q_SHAPE: q->op = BT_QV_SHAPE; return 1;
    case BT_Q_STRIDE: q->op = BT_QV_STRIDE; return 1;
    case BT_Q_NDIM: q->op = BT_QV_NDIM; return 1;
    default: return 0;
    }
}

/* Whether C parameter i is one the plan takes (bt_note_quick.h's list). */
static int param_fits(const BtNoteCall *nc, const BtCall *call, int i)
{
    const BtArgSlot *s = nc->slot[i] >= 0 ? &call->slots[nc->slot[i]] : NULL;
    const BtType *t = bt_type(nc->types[i]);
    BtNoteQVal q;

    if (nc->params[i].size_of >= 0 && role(nc, i) != BT_ROLE_PLAIN && role(nc, i) != BT_ROLE_HIDDEN)
        return 0;
    switch (role(nc, i)) {
    case BT_ROLE_PLAIN:
        if (!s)
            return dialect_size(nc, call, i) && strchr("biu", t->kind) != NULL;
        return s->is_array ? plan_array(nc, call, i) : strchr("iufbc", s->kind) != NULL;
    case BT_ROLE_ARRAY: return plan_array(nc, call, i);
    case BT_ROLE_SCALAR_IN: return s && !s->is_array && strchr("iufbc", s->kind) != NULL;
    case BT_ROLE_HIDDEN:
        return compile(nc, call, nc->plan->params[i].value, &q) && strchr("biuf", t->kind) &&
               (t->kind != 'f' || t->size == 4 || t->size == 8);
    default: return 0;
    }
}

/* Whether the overload has a plan: a direct call, no check or status,
 * every parameter one the plan takes, every stated shape compiled. */
static int plan_fits(const BtNoteCall *nc, const BtCall *call)
{
    const BtNotePlan *pl = nc->plan;
    BtNoteQVal q;
    int i, k;

    if (!nc->direct.variant || nc->by_address || pl->n_checks || pl->n_ok || call->ret_string)
        return 0;
    for (i = 0; i < pl->n_params; i++) {
        if (!param_fits(nc, call, i))
            return 0;
        for (k = 0; pl->params[i].role == BT_ROLE_ARRAY && k < pl->params[i].n_shape; k++)
            if (!compile(nc, call, &pl->params[i].shape[k], &q))
                return 0;
    }
    return 1;
}

/* max - min of integer type t, max at most LLONG_MAX (a value is a long
 * long): v is in range when (unsigned)v - (unsigned)min <= the span. */
static unsigned long long range_span(const BtType *t)
{
    unsigned long long max = t->max > (unsigned long long)LLONG_MAX ? LLONG_MAX : t->max;

    return max - (unsigned long long)t->min;
}

/* C parameter i's entry in the computed values: its dialect size (its
 * array's extent) where `dialect`, else its hidden expression. */
static void put_hidden_plan(const BtNoteCall *nc, const BtCall *call, int i, int dialect,
                            BtNoteQHidden *h)
{
    const BtType *t = bt_type(nc->types[i]);

    h->cidx = (uint8_t)i;
    h->word = nc->direct.pos[i];
    h->kind = t->kind;
    h->size = (uint8_t)t->size;
    h->min = (unsigned long long)t->min;
    h->span = range_span(t);
    if (!dialect) {
        compile(nc, call, nc->plan->params[i].value, &h->val);
    } else {
        memset(&h->val, 0, sizeof h->val);
        h->val.op = BT_QV_AXIS;
        h->val.p = (uint8_t)nc->params[i].size_of;
        h->val.v = nc->params[i].size_axis;
    }
}

/* Hidden parameter i as its array's emit, where its value is len(x) or
 * stride(x) of a strided array x, an integer, and no dialect size: 1, or 0
 * (a computed value). */
static int emit(BtNoteQuick *q, const BtNoteCall *nc, const BtCall *call, int i)
{
    const BtType *t = bt_type(nc->types[i]);
    BtNoteQArg *a;
    BtNoteQEmit *e;
    BtNoteQVal v;

    if (!compile(nc, call, nc->plan->params[i].value, &v) || nc->params[i].size_of >= 0 ||
        (v.op != BT_QV_LEN && v.op != BT_QV_STRIDE) || !strchr("biu", t->kind))
        return 0;
    a = &q->args[nc->slot[v.p]];
    if (a->kind != BT_QA_STRIDED || a->n_emit == BT_NOTE_Q_EMITS)
        return 0;
    e = &a->emit[a->n_emit++];
    e->stride = v.op == BT_QV_STRIDE;
    e->cidx = (uint8_t)i;
    e->word = nc->direct.pos[i];
    e->min = (unsigned long long)t->min;
    e->span = range_span(t);
    return 1;
}

/* The plan's arguments, computed values and shapes into q. */
static int fill_plan(BtNoteQuick *q, const BtNoteCall *nc, const BtCall *call, BtArena *arena)
{
    const BtNotePlan *pl = nc->plan;
    int i, k;

    for (k = 0; k < call->n_py; k++) {
        const BtArgSlot *s = &call->slots[k];
        const BtNoteParam *np = &pl->params[s->cidx];
        BtNoteQArg *a = &q->args[k];
        size_t isz = bt_type(nc->types[s->cidx])->size;
        a->cidx = (uint8_t)s->cidx;
        a->n_emit = 0;
        a->word = nc->direct.pos[s->cidx];
        for (a->shift = 0; ((size_t)1 << a->shift) < isz; a->shift++)
            ;
        a->isz = (Py_ssize_t)isz;
        a->kind = s->is_array
                      ? (np->strided ? BT_QA_STRIDED : BT_QA_ARRAY)
                      : (role(nc, s->cidx) == BT_ROLE_SCALAR_IN ? BT_QA_POINTER : BT_QA_SCALAR);
        a->need = (np->written ? NPY_ARRAY_WRITEABLE : 0) | NPY_ARRAY_ALIGNED |
                  (a->kind == BT_QA_ARRAY ? NPY_ARRAY_C_CONTIGUOUS : 0);
    }
    for (i = 0; i < pl->n_params; i++) /* dialect sizes first, as the general path */
        if (dialect_size(nc, call, i))
            put_hidden_plan(nc, call, i, 1, &q->hidden[q->n_hidden++]);
    for (k = 0; k < pl->n_order; k++)
        if (!emit(q, nc, call, pl->order[k]))
            put_hidden_plan(nc, call, pl->order[k], 0, &q->hidden[q->n_hidden++]);
    for (i = 0; i < pl->n_params; i++) {
        const BtNoteParam *np = &pl->params[i];
        BtNoteQVal *want;
        if (np->role != BT_ROLE_ARRAY || !np->n_shape)
            continue;
        if (!(want = bt_arena_alloc(arena, sizeof *want * (size_t)np->n_shape)))
            return -1;
        for (k = 0; k < np->n_shape; k++)
            compile(nc, call, &np->shape[k], &want[k]);
        q->shapes[q->n_shapes++] = (BtNoteQShape){(uint8_t)i, np->n_shape, want};
    }
    return 0;
}

int bt_note_quick_plan(BtNoteCall *nc, const BtCall *call, BtArena *arena)
{
    size_t n = (size_t)nc->plan->n_params + 1;
    const BtType *rt = bt_type(call->ret);
    BtNoteQuick *q;

    nc->quick = NULL;
    if (!plan_fits(nc, call))
        return 0;
    if (!(q = bt_arena_alloc(arena, sizeof *q)) ||
        !(q->args = bt_arena_alloc(arena, sizeof *q->args * ((size_t)call->n_py + 1))) ||
        !(q->hidden = bt_arena_alloc(arena, sizeof *q->hidden * 2 * n)) ||
        !(q->shapes = bt_arena_alloc(arena, sizeof *q->shapes * n))) {
        PyErr_NoMemory();
        return -1;
    }
    q->n_hidden = q->n_shapes = 0;
    q->ret_double = call->ret != BT_VOID && !call->ret_fntype && rt->kind == 'f' && rt->size == 8;
    if (fill_plan(q, nc, call, arena) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    nc->quick = q;
    return 0;
}

/* ================= the fused entry's way ================= */

int bt_note_quick_fused(const BtCall *call, PyObject *const *args, const BtDispatch *d,
                        unsigned seq, const BtCallOpts *opts, PyObject **r)
{
    return bt_note_quick_call(call, args, d, seq, d->cname, opts, r);
}
