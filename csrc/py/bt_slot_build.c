/* bt_slot_build.c - an overload's argument slots, made once at bind time
 * (bt_slot_build): scalars, arrays with their size parameters, enums,
 * callbacks, records, fixed shapes, the take order; and its defaults
 * (bt_slot_defaults, bt_slot_literal). */
#include "bt_slot.h"

#include "bt_fntype.h"
#include "bt_lex.h"
#include "bt_pyname.h"
#include "bt_record.h"

#include <string.h>

/* New reference: the Python value of a literal. */
static PyObject *literal_object(const BtLiteral *l)
{
    PyObject *v, *r;

    switch (l->kind) {
    case BT_LIT_BOOL: return PyBool_FromLong((long)l->u);
    case BT_LIT_FLOAT: return PyFloat_FromDouble(l->d);
    case BT_LIT_CHAR: return PyUnicode_FromOrdinal((int)l->u);
    default: break;
    }
    v = PyLong_FromUnsignedLongLong(l->u);
    if (!v || !l->neg)
        return v;
    r = PyNumber_Negative(v);
    Py_DECREF(v);
    return r;
}

/* A default as written into *lit: a C literal (bt_lex_literal), or for a
 * parameter of enum e (not NULL) one of its members by name ("ABOVE",
 * "level::ABOVE"), as an integer. 0, or -1 when it is neither. */
static int default_literal(const char *text, const BtEnum *e, BtLiteral *lit)
{
    size_t n = e ? strlen(e->name) : 0;
    int i;

    if (bt_lex_literal(text, lit) == 0)
        return 0;
    if (!e)
        return -1;
    if (n && strncmp(text, e->name, n) == 0 && strncmp(text + n, "::", 2) == 0)
        text += n + 2;
    for (i = 0; i < e->n_members; i++) {
        long long v = e->members[i].value;
        if (strcmp(text, e->members[i].name) != 0)
            continue;
        memset(lit, 0, sizeof *lit);
        lit->kind = BT_LIT_INT;
        lit->neg = v < 0;
        lit->u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        return 0;
    }
    return -1;
}

PyObject *bt_slot_literal(const char *text, const BtEnum *e)
{
    BtLiteral lit;

    return default_literal(text, e, &lit) < 0 ? NULL : literal_object(&lit);
}

/* One scalar parameter's default (see bt_slot_defaults; e: its enum, or
 * NULL): a new reference to the value shown (as the parameter's Python
 * type: `double w = 1` shows 1.0), the C value in *out; NULL without an
 * exception when it has none. */
static PyObject *param_default(const BtParam *p, BtTypeId t, const BtEnum *e, BtValue *out)
{
    BtArgSlot s;
    BtLiteral lit;
    PyObject *o = NULL, *name = NULL, *shown = NULL;
    Py_complex c;

    if (!p->defval || default_literal(p->defval, e, &lit) < 0)
        return NULL;
    memset(&s, 0, sizeof s);
    s.type = t;
    o = literal_object(&lit);
    name = PyUnicode_FromString(p->name);
    if (!o || !name)
        goto done;
    /* as a passed argument: a float for an int, or -1 for an unsigned, is refused */
    if (!bt_slot_accepts(&s, bt_slot_code(o), 2) || bt_slot_store_scalar(out, t, o, "", name) < 0) {
        if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_MemoryError))
            PyErr_Clear();
        goto done;
    }
    switch (bt_type(t)->kind) {
    case 'b': shown = PyBool_FromLong(out->u8); break;
    case 'f': shown = PyNumber_Float(o); break;
    case 'c':
        c = PyComplex_AsCComplex(o);
        shown = PyErr_Occurred() ? NULL : PyComplex_FromCComplex(c);
        break;
    default: shown = PyBool_Check(o) ? PyLong_FromLong(o == Py_True) : Py_NewRef(o); break;
    }
done:
    Py_XDECREF(o);
    Py_XDECREF(name);
    return shown;
}

int bt_slot_defaults(const BtOverload *ov, PyObject **pydefs, BtValue *cvals)
{
    const BtDecl *d = ov->decl;
    int i;

    for (i = 0; i < d->n_params; i++)
        pydefs[i] = NULL;
    /* trailing Python parameters only: a required one ends the run */
    for (i = d->n_params - 1; i >= 0; i--) {
        const BtParam *p = &d->params[i];
        BtValue v;
        memset(&v, 0, sizeof v);
        if (!bt_pyname_takes(d, i))
            continue;
        if (!p->t.is_array && !p->t.is_string && !p->t.handle_ref &&
            !p->t.is_voidp) /* a C string, a handle or a void * takes no default */
            pydefs[i] = param_default(p, ov->ptypes[i], bt_plan_enum(ov, &p->t), &v);
        if (!pydefs[i])
            break;
        if (cvals)
            cvals[i] = v;
    }
    if (!PyErr_Occurred())
        return 0;
    for (i = 0; i < d->n_params; i++)
        Py_CLEAR(pydefs[i]);
    return -1;
}

/* Fills the slots' defaults: the C value a call copies, and its spelling. */
static int set_defaults(BtArgSlot *slots, int n_py, const BtOverload *ov, BtArena *arena)
{
    PyObject *pydefs[BT_MAX_PARAMS];
    BtValue cvals[BT_MAX_PARAMS];
    int k, rc = 0;

    if (bt_slot_defaults(ov, pydefs, cvals) < 0)
        return -1;
    for (k = 0; k < n_py; k++) {
        BtArgSlot *s = &slots[k];
        PyObject *r;
        const char *u;
        if (!pydefs[s->cidx])
            continue;
        r = PyObject_Repr(pydefs[s->cidx]);
        u = r ? PyUnicode_AsUTF8(r) : NULL;
        s->defrepr = u ? bt_arena_strdup(arena, u) : NULL;
        Py_XDECREF(r);
        if (!s->defrepr) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            rc = -1;
            break;
        }
        s->has_default = 1;
        s->defval = cvals[s->cidx];
    }
    for (k = 0; k < ov->decl->n_params; k++)
        Py_XDECREF(pydefs[k]);
    return rc;
}

/* ================= building slots ================= */

/* Most members of an enum whose values slot_enum checks for one range (by
 * pairs: bind time grows with the square). */
enum { ENUM_RANGE_MAX = 512 };

/* Enum e into slot s: its members copied (the slot outlives the metadata),
 * and where its values are one range [lo, hi] with hi >= 0 (for flags:
 * [0, all] when all is 2^k - 1), that range as the slot's, so that
 * bt_slot_store_fast checks membership; else kind 'e', the full way. */
static int slot_enum(BtArgSlot *s, const BtEnum *e, BtArena *arena)
{
    BtSlotEnum *x = bt_arena_alloc(arena, sizeof *x);
    long long *values = bt_arena_alloc(arena, sizeof(long long) * (size_t)(e->n_members + 1));
    const char **names = bt_arena_alloc(arena, sizeof(char *) * (size_t)(e->n_members + 1));
    long long lo = 0, hi = -1, all = 0;
    int i, j, distinct = 0, few = e->n_members <= ENUM_RANGE_MAX;

    if (!x || !values || !names || !(x->name = bt_arena_strdup(arena, e->name))) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < e->n_members; i++) {
        long long v = e->members[i].value;
        if (!(names[i] = bt_arena_strdup(arena, e->members[i].name))) {
            PyErr_NoMemory();
            return -1;
        }
        values[i] = v;
        all |= v;
        for (j = 0; few && j < i && values[j] != v; j++)
            ;
        distinct += few && j == i;
        lo = i == 0 || v < lo ? v : lo;
        hi = i == 0 || v > hi ? v : hi;
    }
    x->is_flags = e->is_flags;
    x->all = all;
    x->n = e->n_members;
    x->values = values;
    x->names = names;
    s->en = x;
    if (e->is_flags) {
        lo = 0;
        hi = (all & (all + 1)) == 0 ? all : -1;
    } else if (!few || e->n_members == 0 ||
               (unsigned long long)hi - (unsigned long long)lo + 1 !=
                   (unsigned long long)distinct) {
        hi = -1;
    }
    if (hi < 0) { /* no range the quick check can hold */
        s->kind = 'e';
        return 0;
    }
    if (lo > s->min)
        s->min = lo;
    if ((unsigned long long)hi < s->max)
        s->max = (unsigned long long)hi;
    return 0;
}

/* Function pointer type cb into slot s: kind 'k' (bt_slot_store_arg
 * takes the address the callback layer passes), a pointer's size, its C
 * type for messages. */
static int slot_callback(BtArgSlot *s, const BtOverload *ov, const BtCallbackType *cb,
                         BtArena *arena)
{
    BtBuf b;

    s->kind = 'k';
    s->size = sizeof(void *);
    s->min = 0;
    s->max = 0;
    bt_buf_init(&b);
    bt_fntype_put(&b, ov, cb->sig, "");
    s->fntype = b.failed ? NULL : bt_arena_strdup(arena, bt_buf_str(&b));
    bt_buf_free(&b);
    if (!s->fntype) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Size parameter i of ov as z, one of the array slot's (the last of slots[k]:
 * the parser marks sizes only right after their array). 0 or -1. */
static int slot_size(BtArgSlot *slots, int k, BtSizeParam *z, const BtOverload *ov, int i,
                     BtArena *arena)
{
    const BtParam *p = &ov->decl->params[i];
    const BtType *t = bt_type(ov->ptypes[i]);
    BtArgSlot *a;

    if (k == 0 || slots[k - 1].cidx != p->size_of || bt_slot_is_record(&slots[k - 1])) {
        PyErr_Format(PyExc_SystemError,
                     "bindthem: size parameter '%s' of %s is not right after its array", p->name,
                     ov->signature);
        return -1;
    }
    a = &slots[k - 1];
    z->cidx = i;
    z->axis = p->size_axis;
    z->type = ov->ptypes[i];
    z->bits = (unsigned)t->size * 8 - (t->kind == 'i');
    z->limit = z->bits < 63 ? (1ULL << z->bits) - 1 : UINT64_MAX;
    if (!(z->name = bt_arena_strdup(arena, p->name))) {
        PyErr_NoMemory();
        return -1;
    }
    if (!a->n_sizes)
        a->sizes = z;
    a->n_sizes++;
    if (a->min_ndim <= z->axis)
        a->min_ndim = z->axis + 1;
    return 0;
}

/* Fixed-size array parameter p's shape into slot s, from arena. 0 or -1. */
static int slot_fixed(BtArgSlot *s, const BtParam *p, BtArena *arena)
{
    long long *dims = bt_arena_alloc(arena, sizeof *dims * (size_t)p->n_fixed);

    if (!dims) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(dims, p->fixed, sizeof *dims * (size_t)p->n_fixed);
    s->fixed = dims;
    s->n_fixed = (uint8_t)p->n_fixed;
    return 0;
}

/* The slots' indices, scalars first, then arrays and records (bt_slot_walk:
 * a record by pointer is an address taken as an array's is). */
static void set_order(const BtArgSlot *slots, int n_py, uint8_t *order)
{
    int i, k = 0;

    for (i = 0; i < n_py; i++)
        if (!slots[i].is_array && !bt_slot_is_record(&slots[i]))
            order[k++] = (uint8_t)i;
    for (i = 0; i < n_py; i++)
        if (slots[i].is_array || bt_slot_is_record(&slots[i]))
            order[k++] = (uint8_t)i;
}

int bt_slot_build(BtArgSlot *slots, uint8_t *order, int *n_py, const BtOverload *ov, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    BtSizeParam *sizes;
    int i, k = 0, n_sizes = 0, posonly = bt_pyname_posonly(d);

    sizes = bt_arena_alloc(arena, sizeof(BtSizeParam) * (size_t)(d->n_params + 1));
    if (!sizes) {
        PyErr_NoMemory();
        return -1;
    }
    memset(slots, 0, sizeof(BtArgSlot) * (size_t)d->n_params);
    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        const BtType *t = bt_type(ov->ptypes[i]);
        BtArgSlot *s;
        if (p->size_of >= 0) {
            if (slot_size(slots, k, &sizes[n_sizes++], ov, i, arena) < 0)
                return -1;
            continue;
        }
        if (p->hidden) /* computed or allocated by the call (bt_note_call.h) */
            continue;
        s = &slots[k++];
        s->type = ov->ptypes[i];
        s->is_array = p->t.is_array;
        s->is_const = p->t.is_const;
        s->array_code = bt_slot_array_code(ov->ptypes[i]);
        s->need = BT_ARR_C_CONTIGUOUS | BT_ARR_ALIGNED | (s->is_const ? 0 : BT_ARR_WRITEABLE);
        if (ov->notes && ov->notes->params[i].role == BT_ROLE_ARRAY) /* the notes' call copies */
            s->need = ov->notes->params[i].written ? BT_ARR_WRITEABLE : 0;
        s->cidx = i;
        s->posonly = k <= posonly;
        s->kind = t->kind;
        s->size = (uint8_t)t->size;
        s->min = t->min;
        s->max = t->max;
        if (p->t.handle_ref || p->t.is_voidp) /* a Handle (or None): bt_slot_store_arg */
            s->kind = p->t.handle_ref ? 'h' : 'v';
        if (p->n_fixed && slot_fixed(s, p, arena) < 0)
            return -1;
        if (p->t.is_string) {
            s->is_string = p->t.nullable ? BT_STRING_OR_NONE : BT_STRING;
            s->kind = 's'; /* the full way: bt_slot_store_arg */
        } else if (bt_fntype_of(ov, &p->t)) {
            if (slot_callback(s, ov, bt_fntype_of(ov, &p->t), arena) < 0)
                return -1;
        } else if (p->t.struct_ref) {
            if (bt_record_slot(s, ov, &p->t, arena) < 0) /* kind 'r' or 'R' */
                return -1;
        } else if (bt_plan_enum(ov, &p->t) && slot_enum(s, bt_plan_enum(ov, &p->t), arena) < 0) {
            return -1;
        }
    }
    *n_py = k;
    set_order(slots, k, order);
    return set_defaults(slots, k, ov, arena);
}
