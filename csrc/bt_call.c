/* bt_call.c - call frames: dispatch codes, checks, marshalling, ffi_call. */
#include "bt_call.h"

#include "bt_numpy.h"

#include "bt_guard.h"
#include "bt_lex.h"

#include <complex.h>
#include <float.h>
#include <limits.h>
#include <string.h>

/* Storage for one C argument or return value. */
typedef union BtValue {
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f;
    double d;
    float complex cf;
    double complex cd;
    void *p;
    ffi_arg ret;
    ffi_sarg sret;
} BtValue;

/* long long and long are both 64-bit here: NumPy's int64 and longlong arrays
 * both match a `long` or `long long` parameter. */
static int norm_npy(int t)
{
    if (t == NPY_LONGLONG)
        return NPY_LONG;
    if (t == NPY_ULONGLONG)
        return NPY_ULONG;
    return t;
}

static int our_npy(int t) { return t >= 0 && t <= NPY_CDOUBLE && t != NPY_LONGDOUBLE; }

static char npy_kind(int t)
{
    switch (t) {
    case NPY_BOOL: return 'b';
    case NPY_BYTE:
    case NPY_SHORT:
    case NPY_INT:
    case NPY_LONG:
    case NPY_LONGLONG: return 'i';
    case NPY_UBYTE:
    case NPY_USHORT:
    case NPY_UINT:
    case NPY_ULONG:
    case NPY_ULONGLONG: return 'u';
    case NPY_FLOAT:
    case NPY_DOUBLE: return 'f';
    case NPY_CFLOAT:
    case NPY_CDOUBLE: return 'c';
    default: return '?';
    }
}

uint8_t bt_call_code(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);

    if (tp == &PyLong_Type)
        return BT_K_INT;
    if (tp == &PyFloat_Type)
        return BT_K_FLOAT;
    if (PyArray_Check(o)) {
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)o);
        int t = d->type_num;
        if (!our_npy(t) || !PyArray_ISNBO(d->byteorder))
            return BT_K_ARRAY_OTHER;
        return (uint8_t)(BT_K_ARRAY + norm_npy(t));
    }
    if (tp == &PyBool_Type)
        return BT_K_BOOL;
    if (tp == &PyComplex_Type)
        return BT_K_COMPLEX;
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int t = d ? d->type_num : -1;
        Py_XDECREF(d);
        if (!d)
            PyErr_Clear();
        return our_npy(t) ? (uint8_t)(BT_K_NPSCALAR + norm_npy(t)) : BT_K_OTHER;
    }
    if (PyBool_Check(o))
        return BT_K_BOOL;
    if (PyLong_Check(o))
        return BT_K_INT;
    if (PyFloat_Check(o))
        return BT_K_FLOAT;
    if (PyComplex_Check(o))
        return BT_K_COMPLEX;
    if (PyUnicode_Check(o) || PyBytes_Check(o))
        return BT_K_CHAR;
    return BT_K_OTHER;
}

/* Scalar conversions of pass 2: from a value of kind `from` into `to`. */
static int converts(char from, char to)
{
    switch (from) {
    case 'b': return to == 'b' || to == 'i' || to == 'u';
    /* an integer is a truth value in pass 2, as pybind11's bool caster
     * takes it when converting (pyamg passes 0/1 for bool parameters) */
    case 'i':
    case 'u': return to == 'i' || to == 'u' || to == 'f' || to == 'c' || to == 'b';
    case 'f': return to == 'f' || to == 'c';
    case 'c': return to == 'c';
    default: return 0;
    }
}

int bt_call_accepts(const BtArgSlot *s, uint8_t code, int pass)
{
    const BtType *t;
    char kind, from;

    if (s->is_array)
        return code == s->array_code;
    if (code == BT_K_OMITTED)
        return s->has_default;
    if (code == BT_K_CHAR) /* exact, as pybind11's char caster */
        return s->type == BT_CHAR;
    t = bt_type(s->type);
    kind = t->kind;
    if (code >= BT_K_NPSCALAR && code < BT_K_BOOL) {
        int n = code - BT_K_NPSCALAR;
        if (n == norm_npy(t->npy_type))
            return 1;
        from = npy_kind(n);
        return pass == 2 && converts(from, kind);
    }
    switch (code) {
    case BT_K_BOOL: from = 'b'; break;
    case BT_K_INT: from = 'i'; break;
    case BT_K_FLOAT: from = 'f'; break;
    case BT_K_COMPLEX: from = 'c'; break;
    default: return 0;
    }
    if (pass == 1)
        return from == kind || (from == 'i' && kind == 'u');
    return converts(from, kind);
}

PyObject *bt_call_describe(PyObject *o)
{
    if (PyArray_Check(o)) {
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)o);
        PyObject *s = PyObject_Str((PyObject *)d), *r;
        if (!s)
            return NULL;
        if (!PyArray_ISNBO(d->byteorder))
            r = PyUnicode_FromFormat("numpy.ndarray of %U (non-native byte order)", s);
        else
            r = PyUnicode_FromFormat("numpy.ndarray of %U", s);
        Py_DECREF(s);
        return r;
    }
    /* NumPy's scalar types are already named "numpy.int64" */
    return PyUnicode_FromString(Py_TYPE(o)->tp_name);
}

const char *bt_call_slot_wants(const BtArgSlot *s, char *buf, size_t size)
{
    const BtType *t = bt_type(s->type);

    if (s->is_array)
        snprintf(buf, size, "%s array", t->npname);
    else if (s->type == BT_CHAR)
        snprintf(buf, size, "int (char) or a 1-character str");
    else
        snprintf(buf, size, "%s (%s)", t->pyname, t->cname);
    return buf;
}

/* Fills the slots' defaults: the C value a call copies, and its spelling. */
static int set_defaults(BtCall *call, const BtOverload *ov, BtArena *arena)
{
    PyObject *pydefs[BT_MAX_PARAMS];
    unsigned char cvals[BT_MAX_PARAMS][16];
    int k, rc = 0;

    if (bt_call_defaults(ov, pydefs, cvals) < 0)
        return -1;
    for (k = 0; k < call->n_py; k++) {
        BtArgSlot *s = &call->slots[k];
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
        memcpy(s->defval, cvals[s->cidx], sizeof s->defval);
    }
    for (k = 0; k < ov->decl->n_params; k++)
        Py_XDECREF(pydefs[k]);
    return rc;
}

int bt_call_prepare(BtCall *call, const BtOverload *ov, void *fn, const char *symbol,
                    BtArena *arena)
{
    const BtDecl *d = ov->decl;
    BtSizeParam *sizes;
    int i, k = 0, n_sizes = 0, is_ptr[BT_MAX_PARAMS];
    ffi_status status;

    if (d->n_params > BT_MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "%s has %d parameters; bindthem binds at most %d",
                     ov->signature, d->n_params, BT_MAX_PARAMS);
        return -1;
    }
    memset(call, 0, sizeof *call);
    call->fn = (void (*)(void))fn;
    call->n_c = d->n_params;
    call->ret = ov->ret;
    call->signature = bt_arena_strdup(arena, ov->signature);
    call->symbol = symbol;
    call->atypes = bt_arena_alloc(arena, sizeof(ffi_type *) * (size_t)(d->n_params + 1));
    call->slots = bt_arena_alloc(arena, sizeof(BtArgSlot) * (size_t)(d->n_params + 1));
    sizes = bt_arena_alloc(arena, sizeof(BtSizeParam) * (size_t)(d->n_params + 1));
    if (!call->atypes || !call->slots || !call->signature || !sizes) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        call->atypes[i] = p->t.is_array ? &ffi_type_pointer : bt_type_ffi(ov->ptypes[i]);
        if (p->size_of >= 0) {
            /* the parser marks sizes only right after their array: its slot is the last one */
            BtArgSlot *a = &call->slots[k - 1];
            BtSizeParam *z = &sizes[n_sizes++];
            if (k == 0 || a->cidx != p->size_of) {
                PyErr_Format(PyExc_SystemError,
                             "bindthem: size parameter '%s' of %s is not "
                             "right after its array",
                             p->name, ov->signature);
                return -1;
            }
            z->cidx = i;
            z->axis = p->size_axis;
            z->type = ov->ptypes[i];
            if (!(z->name = bt_arena_strdup(arena, p->name))) {
                PyErr_NoMemory();
                return -1;
            }
            if (!a->n_sizes)
                a->sizes = z;
            a->n_sizes++;
            if (a->min_ndim <= z->axis)
                a->min_ndim = z->axis + 1;
            continue;
        }
        call->slots[k].type = ov->ptypes[i];
        call->slots[k].is_array = p->t.is_array;
        call->slots[k].is_const = p->t.is_const;
        call->slots[k].array_code = BT_K_ARRAY + norm_npy(bt_type(ov->ptypes[i])->npy_type);
        call->slots[k].cidx = i;
        k++;
    }
    call->n_py = k;
    if (set_defaults(call, ov, arena) < 0)
        return -1;
    status = ffi_prep_cif(&call->cif, FFI_DEFAULT_ABI, (unsigned)d->n_params, bt_type_ffi(ov->ret),
                          call->atypes);
    if (status != FFI_OK) {
        PyErr_Format(PyExc_RuntimeError, "libffi cannot prepare a call to %s (ffi_status %d)",
                     ov->signature, (int)status);
        return -1;
    }
    for (i = 0; i < d->n_params; i++)
        is_ptr[i] = d->params[i].t.is_array;
    bt_direct_plan(&call->direct, ov->ptypes, is_ptr, d->n_params, ov->ret);
    return 0;
}

/* Argument name i of names, for messages (borrowed). */
static PyObject *arg_name(PyObject *names, int i) { return PyTuple_GET_ITEM(names, i); }

/* New reference: repr(o) for a message, cut to 30 characters ("1234...
 * (603 digits)" for a long int) so that 2**2000 doesn't fill the screen. */
static PyObject *value_text(PyObject *o)
{
    PyObject *r = PyObject_Repr(o), *cut;
    Py_ssize_t n;
    int sign;

    if (!r || (n = PyUnicode_GET_LENGTH(r)) <= 32)
        return r;
    sign = PyUnicode_READ_CHAR(r, 0) == '-';
    cut = PyUnicode_Substring(r, 0, 30);
    Py_DECREF(r);
    if (!cut)
        return NULL;
    if (PyLong_Check(o))
        r = PyUnicode_FromFormat("%U... (%zd digits)", cut, n - sign);
    else
        r = PyUnicode_FromFormat("%U...", cut);
    Py_DECREF(cut);
    return r;
}

/* OverflowError "f(): argument 'x' = 1e+300 does not fit in float". Returns -1. */
static int does_not_fit(const char *fname, PyObject *name, PyObject *o, const char *cname)
{
    PyObject *v = value_text(o);
    if (v) {
        PyErr_Format(PyExc_OverflowError, "%s(): argument '%U' = %U does not fit in %s", fname,
                     name, v, cname);
        Py_DECREF(v);
    }
    return -1;
}

/* A conversion of o into C type cname failed (NumPy's or CPython's error
 * set): the same error, naming the function and argument. Returns -1. */
static int conversion_failed(const char *fname, PyObject *name, PyObject *o, const char *cname)
{
    PyObject *type, *value, *tb, *v;

    if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
        PyErr_Clear();
        return does_not_fit(fname, name, o, cname);
    }
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    v = value_text(o);
    if (v)
        PyErr_Format(type, "%s(): argument '%U' = %U cannot be converted to %s: %S", fname, name, v,
                     cname, value);
    Py_XDECREF(v);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return -1;
}

/* Stores integer value v (already range-checked by the caller's type) */
static int store_int(BtValue *out, BtTypeId t, PyObject *o, const char *fname, PyObject *name)
{
    const BtType *ty = bt_type(t);
    long long v = 0;
    unsigned long long u = 0;
    int overflow = 0;
    PyObject *idx = NULL;

    if (!PyLong_Check(o)) {
        /* NumPy integer scalars; numpy.bool has no __index__ but is 0 or 1,
         * as Python's bool is */
        if (PyArray_IsScalar(o, Bool))
            idx = PyLong_FromLong(PyObject_IsTrue(o));
        else
            idx = PyNumber_Index(o);
        if (!idx)
            return conversion_failed(fname, name, o, ty->cname);
        o = idx;
    }
    if (ty->kind == 'u') {
        v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            goto error;
        if (overflow > 0) {
            u = PyLong_AsUnsignedLongLong(o);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                goto range;
            }
        } else if (overflow < 0 || v < 0) {
            goto range;
        } else {
            u = (unsigned long long)v;
        }
        if (ty->size < 8 && u >> (ty->size * 8))
            goto range;
        switch (ty->size) {
        case 1: out->u8 = (uint8_t)u; break;
        case 2: out->u16 = (uint16_t)u; break;
        case 4: out->u32 = (uint32_t)u; break;
        default: out->u64 = u; break;
        }
    } else {
        long long lo, hi;
        v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred())
            goto error;
        if (overflow)
            goto range;
        hi = ty->size >= 8 ? LLONG_MAX : (1LL << (ty->size * 8 - 1)) - 1;
        lo = -hi - 1;
        if (v < lo || v > hi)
            goto range;
        switch (ty->size) {
        case 1: out->i8 = (int8_t)v; break;
        case 2: out->i16 = (int16_t)v; break;
        case 4: out->i32 = (int32_t)v; break;
        default: out->i64 = v; break;
        }
    }
    Py_XDECREF(idx);
    return 0;
range:
    does_not_fit(fname, name, o, ty->cname);
error:
    Py_XDECREF(idx);
    return -1;
}

/* A one-character str (code point < 256, as pybind11) or bytes into a char. */
static int store_char(BtValue *out, PyObject *o, const char *fname, PyObject *name)
{
    Py_ssize_t n = PyUnicode_Check(o) ? PyUnicode_GET_LENGTH(o) : PyBytes_GET_SIZE(o);
    unsigned long c;

    if (n != 1) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' must be a single character (char), got a string of "
                     "length %zd",
                     fname, name, n);
        return -1;
    }
    c = PyUnicode_Check(o) ? (unsigned long)PyUnicode_READ_CHAR(o, 0)
                           : (unsigned long)(unsigned char)PyBytes_AS_STRING(o)[0];
    if (c > 0xFF) {
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' = %R: character code point not in range(0x100)", fname,
                     name, o);
        return -1;
    }
    out->i8 = (int8_t)(unsigned char)c;
    return 0;
}

static int store_scalar(BtValue *out, BtTypeId t, PyObject *o, const char *fname, PyObject *name)
{
    const BtType *ty = bt_type(t);
    Py_complex c;
    double d;

    switch (ty->kind) {
    case 'b': {
        int b = PyObject_IsTrue(o);
        if (b < 0)
            return conversion_failed(fname, name, o, ty->cname);
        out->u8 = (uint8_t)b;
        return 0;
    }
    case 'i':
    case 'u':
        if (t == BT_CHAR && (PyUnicode_Check(o) || PyBytes_Check(o)))
            return store_char(out, o, fname, name);
        return store_int(out, t, o, fname, name);
    case 'f':
        d = PyFloat_AsDouble(o);
        if (d == -1.0 && PyErr_Occurred())
            return conversion_failed(fname, name, o, ty->cname);
        if (t == BT_FLOAT) {
            if (isfinite(d) && (d > FLT_MAX || d < -FLT_MAX))
                return does_not_fit(fname, name, o, "float");
            out->f = (float)d;
        } else {
            out->d = d;
        }
        return 0;
    case 'c':
        c = PyComplex_AsCComplex(o);
        if (c.real == -1.0 && PyErr_Occurred())
            return conversion_failed(fname, name, o, ty->cname);
        if (t == BT_CFLOAT) {
            if ((isfinite(c.real) && fabs(c.real) > FLT_MAX) ||
                (isfinite(c.imag) && fabs(c.imag) > FLT_MAX))
                return does_not_fit(fname, name, o, "std::complex<float>");
            /* by parts, not CMPLXF (glibc with clang lacks it) nor re + im*I
             * (wrong for infinities): C11 6.2.5p13 lays a complex out as an
             * array of two */
            float *parts = (float *)&out->cf;
            parts[0] = (float)c.real;
            parts[1] = (float)c.imag;
        } else {
            double *parts = (double *)&out->cd;
            parts[0] = c.real;
            parts[1] = c.imag;
        }
        return 0;
    default: PyErr_SetString(PyExc_SystemError, "bindthem: void parameter"); return -1;
    }
}

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

/* One scalar parameter's default (see bt_call_defaults): a new reference
 * to the value shown (as the parameter's Python type: `double w = 1` shows
 * 1.0), the C value in *out; NULL without an exception when it has none. */
static PyObject *param_default(const BtParam *p, BtTypeId t, BtValue *out)
{
    BtArgSlot s;
    BtLiteral lit;
    PyObject *o = NULL, *name = NULL, *shown = NULL;
    Py_complex c;

    if (!p->defval || bt_lex_literal(p->defval, &lit) < 0)
        return NULL;
    memset(&s, 0, sizeof s);
    s.type = t;
    o = literal_object(&lit);
    name = PyUnicode_FromString(p->name);
    if (!o || !name)
        goto done;
    /* as a passed argument: a float for an int, or -1 for an unsigned, is refused */
    if (!bt_call_accepts(&s, bt_call_code(o), 2) || store_scalar(out, t, o, "", name) < 0) {
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

int bt_call_defaults(const BtOverload *ov, PyObject **pydefs, void *cvals)
{
    const BtDecl *d = ov->decl;
    int i;

    for (i = 0; i < d->n_params; i++)
        pydefs[i] = NULL;
    /* trailing Python parameters only: a required one ends the run */
    for (i = d->n_params - 1; i >= 0; i--) {
        const BtParam *p = &d->params[i];
        BtValue v;
        if (p->size_of >= 0)
            continue;
        if (!p->t.is_array)
            pydefs[i] = param_default(p, ov->ptypes[i], &v);
        if (!pydefs[i])
            break;
        if (cvals)
            memcpy((char *)cvals + (size_t)i * 16, &v, sizeof v);
    }
    if (!PyErr_Occurred())
        return 0;
    for (i = 0; i < d->n_params; i++)
        Py_CLEAR(pydefs[i]);
    return -1;
}

static PyObject *convert_return(const BtValue *r, BtTypeId t)
{
    const BtType *ty = bt_type(t);

    switch (t) {
    case BT_VOID: Py_RETURN_NONE;
    case BT_BOOL: return PyBool_FromLong((uint8_t)r->ret != 0);
    case BT_FLOAT: return PyFloat_FromDouble(r->f);
    case BT_DOUBLE: return PyFloat_FromDouble(r->d);
    case BT_CFLOAT: return PyComplex_FromDoubles(crealf(r->cf), cimagf(r->cf));
    case BT_CDOUBLE: return PyComplex_FromDoubles(creal(r->cd), cimag(r->cd));
    default: break;
    }
    /* libffi widens integer returns to ffi_arg: read back at the declared width */
    if (ty->kind == 'u') {
        switch (ty->size) {
        case 1: return PyLong_FromUnsignedLong((uint8_t)r->ret);
        case 2: return PyLong_FromUnsignedLong((uint16_t)r->ret);
        case 4: return PyLong_FromUnsignedLong((uint32_t)r->ret);
        default: return PyLong_FromUnsignedLongLong((unsigned long long)r->ret);
        }
    }
    switch (ty->size) {
    case 1: return PyLong_FromLong((int8_t)r->sret);
    case 2: return PyLong_FromLong((int16_t)r->sret);
    case 4: return PyLong_FromLong((int32_t)r->sret);
    default: return PyLong_FromLongLong((long long)r->sret);
    }
}

/* The Python exception for a C++ exception the kernel threw (pybind11's
 * mapping). Returns NULL. */
static PyObject *kernel_threw(int kind, const char *what, const char *fname)
{
    PyObject *type;

    switch (kind) {
    case BT_GUARD_MEMORY: type = PyExc_MemoryError; break;
    case BT_GUARD_VALUE: type = PyExc_ValueError; break;
    case BT_GUARD_INDEX: type = PyExc_IndexError; break;
    case BT_GUARD_OVERFLOW: type = PyExc_OverflowError; break;
    default: type = PyExc_RuntimeError; break;
    }
    PyErr_Format(type, "%s(): the kernel threw a C++ exception: %s", fname, what);
    return NULL;
}

/* Said after the remedy when a const array does not fit. */
#define COPY_HINT                                                                                  \
    " (or opt in to copies of const arrays: copy_const=True in build()/load() or "                 \
    "bindthem.options())"

/* Whether a call whose arrays hold `total` elements releases the GIL. */
static int releases_gil(const BtCallOpts *opts, npy_intp total)
{
    if (opts->gil == BT_GIL_AUTO)
        return total >= BT_GIL_RELEASE_MIN;
    return opts->gil == BT_GIL_RELEASE;
}

/* The kernel call: direct where the plan allows and opts don't force libffi. */
static int guarded_call(const BtCall *call, const BtCallOpts *opts, BtValue *rv, void **avalues,
                        char *what, size_t size)
{
    if (call->direct.variant && !opts->ffi)
        return bt_guard_direct(&call->direct, call->fn, rv, avalues, what, size);
    return bt_guard_call((ffi_cif *)&call->cif, call->fn, rv, avalues, what, size);
}

PyObject *bt_call_invoke(const BtCall *call, PyObject *const *args, const uint8_t *codes,
                         const char *fname, PyObject *names, const BtCallOpts *opts)
{
    BtValue vals[BT_MAX_PARAMS];
    void *avalues[BT_MAX_PARAMS];
    BtValue rv;
    npy_intp total = 0;
    char what[512];
    int i, thrown;

    for (i = 0; i < call->n_py; i++) {
        const BtArgSlot *s = &call->slots[i];
        PyObject *o = args[i];
        avalues[s->cidx] = &vals[s->cidx];
        if (s->is_array) {
            PyArrayObject *a = (PyArrayObject *)o;
            npy_intp n = PyArray_SIZE(a);
            int fl = PyArray_FLAGS(a);
            if (!(fl & NPY_ARRAY_C_CONTIGUOUS)) {
                PyErr_Format(PyExc_ValueError,
                             "%s(): argument '%U' must be a C-contiguous array (this one is "
                             "%s); bindthem never copies, pass numpy.ascontiguousarray(%U) "
                             "and use the result%s",
                             fname, arg_name(names, i),
                             fl & NPY_ARRAY_F_CONTIGUOUS ? "Fortran-ordered" : "strided",
                             arg_name(names, i), s->is_const ? COPY_HINT : "");
                return NULL;
            }
            if (!(fl & NPY_ARRAY_ALIGNED)) {
                PyErr_Format(PyExc_ValueError,
                             "%s(): argument '%U' (position %d) must be an aligned array; "
                             "bindthem never copies, pass numpy.require(%U, "
                             "requirements=\"CA\") and use the result%s",
                             fname, arg_name(names, i), i + 1, arg_name(names, i),
                             s->is_const ? COPY_HINT : "");
                return NULL;
            }
            if (!s->is_const && !(fl & NPY_ARRAY_WRITEABLE)) {
                PyErr_Format(PyExc_ValueError,
                             "%s(): argument '%U' is a read-only array, but the kernel writes "
                             "to it (the parameter is not const)",
                             fname, arg_name(names, i));
                return NULL;
            }
            vals[s->cidx].p = PyArray_DATA(a);
            if (bt_call_store_sizes(s, PyArray_NDIM(a), (const Py_ssize_t *)PyArray_DIMS(a), vals,
                                    sizeof vals[0], avalues, fname, arg_name(names, i)) < 0)
                return NULL;
            total += n;
            continue;
        }
        if (!o) { /* omitted: the default, converted at bind time */
            memcpy(&vals[s->cidx], s->defval, sizeof s->defval);
            continue;
        }
        if (store_scalar(&vals[s->cidx], s->type, o, fname, arg_name(names, i)) < 0)
            return NULL;
    }
    (void)codes;
    memset(&rv, 0, sizeof rv);
    if (releases_gil(opts, total)) {
        Py_BEGIN_ALLOW_THREADS
        thrown = guarded_call(call, opts, &rv, avalues, what, sizeof what);
        Py_END_ALLOW_THREADS
    } else {
        thrown = guarded_call(call, opts, &rv, avalues, what, sizeof what);
    }
    if (thrown)
        return kernel_threw(thrown, what, fname);
    return convert_return(&rv, call->ret);
}

int bt_call_store_sizes(const BtArgSlot *s, int nd, const Py_ssize_t *dims, void *vals,
                        size_t stride, void **ptrs, const char *fname, PyObject *name)
{
    _Static_assert(sizeof(npy_intp) == sizeof(Py_ssize_t), "CPU calls pass NumPy's dims");
    int j;

    if (nd < s->min_ndim) {
        const BtSizeParam *z = s->sizes;
        for (j = 1; j < s->n_sizes; j++)
            if (s->sizes[j].axis > z->axis)
                z = &s->sizes[j];
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is a %d-d array, but the kernel's size parameter '%s' "
                     "takes its shape[%d]: pass an array of at least %d dimension%s",
                     fname, name, nd, z->name, z->axis, s->min_ndim, s->min_ndim > 1 ? "s" : "");
        return -1;
    }
    for (j = 0; j < s->n_sizes; j++) {
        const BtSizeParam *z = &s->sizes[j];
        const BtType *st = bt_type(z->type);
        unsigned long long n = (unsigned long long)dims[z->axis];
        int bits = (int)st->size * 8 - (st->kind == 'i');
        BtValue v;
        if (bits < 63 && n >> bits) {
            if (nd == 1)
                PyErr_Format(PyExc_OverflowError,
                             "%s(): argument '%U' has %llu elements, more than its '%s' "
                             "parameter (%s) can hold",
                             fname, name, n, z->name, st->cname);
            else
                PyErr_Format(PyExc_OverflowError,
                             "%s(): argument '%U' has shape[%d] = %llu, more than its '%s' "
                             "parameter (%s) can hold",
                             fname, name, z->axis, n, z->name, st->cname);
            return -1;
        }
        v.u64 = 0;
        switch (st->size) {
        case 1: v.u8 = (uint8_t)n; break;
        case 2: v.u16 = (uint16_t)n; break;
        case 4: v.u32 = (uint32_t)n; break;
        default: v.u64 = n; break;
        }
        ptrs[z->cidx] = (char *)vals + (size_t)z->cidx * stride;
        memcpy(ptrs[z->cidx], &v.u64, sizeof v.u64);
    }
    return 0;
}

int bt_call_store_scalar(void *out, BtTypeId t, PyObject *o, const char *fname, PyObject *name)
{
    _Static_assert(sizeof(BtValue) <= 16, "bt_call_store_scalar promises 16 bytes");
    return store_scalar((BtValue *)out, t, o, fname, name);
}
