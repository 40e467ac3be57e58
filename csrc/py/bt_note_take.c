/* bt_note_take.c - an annotated call's arguments into its frame
 * (bt_note_frame.h): arrays as they are, copied to the layout the function
 * takes, or allocated for an out array; scalars; hidden values; then the
 * shapes and checks. */
#include "bt_note_frame.h"

#include "bt_handle.h"

#include <string.h>

/* ================= arrays ================= */

/* A copy of a in order (NPY_CORDER, NPY_FORTRANORDER) passed for C
 * parameter i instead, written back after the call where the function
 * writes it. */
static int copy_array(BtNoteFrame *f, int i, PyArrayObject *a, NPY_ORDER order)
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
static inline BT_ALWAYS_INLINE int strided_array(BtNoteFrame *f, int i, PyArrayObject *a)
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
static int ld_array(BtNoteFrame *f, int i, PyArrayObject *a)
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
static int contiguous_array(BtNoteFrame *f, int i, PyArrayObject *a, int lay)
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
static inline BT_ALWAYS_INLINE int take_array(BtNoteFrame *f, int i, PyObject *o)
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
static int take_fixed(BtNoteFrame *f, const BtArgSlot *s, PyObject *o, PyObject *name)
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
static int make_out(BtNoteFrame *f, int i)
{
    const BtNoteParam *np = &f->nc->plan->params[i];
    npy_intp dims[BT_MAX_SIZE_AXES];
    PyArray_Descr *descr;
    long long v;
    int k;

    for (k = 0; k < np->n_shape; k++) {
        if (bt_note_eval(f, &np->shape[k], &v) < 0)
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
static int take_scalar(BtNoteFrame *f, int i, const BtArgSlot *s, PyObject *o, PyObject *name)
{
    int r = bt_note_role(f, i);
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
static int put_hidden(BtNoteFrame *f, int i, long long v)
{
    const BtType *t = bt_type(f->nc->types[i]);
    BtValue *at = bt_note_role(f, i) == BT_ROLE_HIDDEN_REF ? &f->refs[i] : &f->vals[i];

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
static int compute(BtNoteFrame *f)
{
    const BtNotePlan *pl = f->nc->plan;
    long long v;

    for (int k = 0; k < pl->n_order; k++) {
        int i = pl->order[k];
        if (pl->params[i].role == BT_ROLE_OUT) {
            if (make_out(f, i) < 0)
                return -1;
        } else if (bt_note_eval(f, pl->params[i].value, &v) < 0 || put_hidden(f, i, v) < 0) {
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
static int check_shapes(BtNoteFrame *f)
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
            if (bt_note_eval(f, &np->shape[k], &want[k]) < 0)
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

static int run_checks(BtNoteFrame *f)
{
    const BtNotePlan *pl = f->nc->plan;
    long long v;

    for (int k = 0; k < pl->n_checks; k++) {
        if (bt_note_eval(f, &pl->checks[k], &v) < 0)
            return -1;
        if (!v)
            return bt_note_check_failed(f, &pl->checks[k]);
    }
    return 0;
}

/* Dialect size parameters of the caller's arrays (`x_size` after x). */
static int dialect_sizes(BtNoteFrame *f)
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

/* The Python arguments into the frame, in nc->take's order: scalars,
 * then arrays, then the arrays that follow the layout those decide. */
static int take_args(BtNoteFrame *f, PyObject *names)
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
        int r = bt_note_role(f, k);
        if (r == BT_ROLE_SCALAR_OUT)
            f->vals[k].p = &f->refs[k];
    }
    return dialect_sizes(f);
}

/* ================= the whole taking ================= */

int bt_note_take(BtNoteFrame *f, PyObject *names)
{
    if (take_args(f, names) < 0 || compute(f) < 0 || check_shapes(f) < 0)
        return -1;
    return run_checks(f);
}
