/* bt_slot_store.c - one Python argument into its C value: numbers of every
 * type id (range-checked), chars, C strings, enums, handles and function
 * addresses, with the messages of a refusal (bt_slot_store_scalar,
 * bt_slot_store_arg). */
#include "bt_slot.h"

#include "bt_numpy.h"

#include "bt_handle.h"
#include "bt_record.h"

#include <float.h>
#include <math.h>
#include <string.h>

int bt_slot_store_complex(const BtArgSlot *s, PyObject *o, uint64_t *out)
{
    double re, im;
    float f[2];

    if (Py_TYPE(o) == &PyComplex_Type) {
        re = ((PyComplexObject *)o)->cval.real;
        im = ((PyComplexObject *)o)->cval.imag;
    } else if (Py_TYPE(o) == &PyFloat_Type) {
        re = PyFloat_AS_DOUBLE(o);
        im = 0.0;
    } else {
        return 0;
    }
    if (s->size == 16) {
        memcpy(&out[0], &re, sizeof re);
        memcpy(&out[1], &im, sizeof im);
        return 1;
    }
    if (s->size != 8 || !(re >= -FLT_MAX && re <= FLT_MAX) || !(im >= -FLT_MAX && im <= FLT_MAX))
        return 0;
    f[0] = (float)re;
    f[1] = (float)im;
    memcpy(out, f, sizeof f);
    return 1;
}

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

/* An integer in the row's range [min, max], stored as 64 bits (the
 * parameter reads its low bytes). */
static int store_int(BtValue *out, const BtType *ty, PyObject *o, const char *fname, PyObject *name)
{
    long long v;
    unsigned long long u;
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
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        goto error;
    if (overflow > 0 && ty->min == 0) { /* above LLONG_MAX: an unsigned 64-bit value? */
        u = PyLong_AsUnsignedLongLong(o);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto range;
        }
    } else if (overflow || v < ty->min || (v >= 0 && (unsigned long long)v > ty->max)) {
        goto range;
    } else {
        u = (unsigned long long)v;
    }
    if (u > ty->max && ty->min == 0)
        goto range;
    out->u64 = u;
    Py_XDECREF(idx);
    return 0;
range:
    if (ty->id == BT_CHAR) { /* the platform's range (bt_types.c): say which */
        char what[80];
        snprintf(what, sizeof what, "char (%lld..%llu: char is %s on this platform)", ty->min,
                 ty->max, ty->min < 0 ? "signed" : "unsigned");
        does_not_fit(fname, name, o, what);
    } else {
        does_not_fit(fname, name, o, ty->cname);
    }
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
    out->i64 = (char)(unsigned char)c; /* the value a char holds: signed or not */
    return 0;
}

/* The bits of a 16-bit float with m mantissa bits and smallest normal
 * exponent emin (binary16: 10, -14; bfloat16: 7, -126) nearest to d, ties
 * to even, as NumPy's float16 and ml_dtypes' bfloat16 round; infinity for a
 * finite d that overflows. */
static uint16_t small_float_bits(double d, int m, int emin)
{
    uint16_t sign = signbit(d) ? 0x8000 : 0, inf = (uint16_t)(0x7fff >> m << m);
    double q;
    int k, e;

    if (isnan(d))
        return sign | inf | (uint16_t)(1 << (m - 1));
    d = fabs(d);
    if (d == 0)
        return sign;
    if (isinf(d))
        return sign | inf;
    frexp(d, &k);
    e = k - 1 < emin ? emin : k - 1; /* exponent of the binade; subnormals share emin's */
    if (e > -emin + 1)               /* beyond the largest binade, whatever the rounding */
        return sign | inf;
    q = rint(ldexp(d, m - e)); /* m + 1 significant bits, exactly rounded to even */
    /* (e - emin) << m plus q: a carry out of q bumps the exponent (up to
     * infinity's), and a subnormal (q < 2^m, e = emin) gets exponent 0 */
    return sign | (uint16_t)(((e - emin) << m) + (int)q);
}

/* A real part value d into a half (2 bytes), float (4), double (8) or long
 * double (16) part at p. */
static int store_real(void *p, size_t size, double d)
{
    if (size == sizeof(long double)) {
        long double ld = d;
        memcpy(p, &ld, sizeof ld);
        return 0;
    }
    if (size == 2) { /* __half; a bfloat16 is stored by store_bf16 */
        uint16_t h = small_float_bits(d, 10, -14);
        if ((h & 0x7fff) == 0x7c00 && isfinite(d))
            return -1;
        memcpy(p, &h, 2);
    } else if (size == 4) {
        if (isfinite(d) && fabs(d) > FLT_MAX)
            return -1;
        *(float *)p = (float)d;
    } else {
        *(double *)p = d;
    }
    return 0;
}

/* o into a long double without a double in between where o has more
 * precision: a numpy.longdouble as it is, a Python or NumPy integer of 64
 * bits exactly (a double rounds those above 2**53). 1 when stored; 0 for
 * anything else, which goes by its double (a float's is exact). */
static int store_long_double(BtValue *out, PyObject *o)
{
    long double ld;
    long long v;
    unsigned long long u;
    int overflow = 0;

    if (PyArray_IsScalar(o, LongDouble)) {
        PyArray_ScalarAsCtype(o, out->bytes);
        return 1;
    }
    if (bt_slot_np_int(o, &v)) {
        ld = (long double)v;
    } else if (PyArray_IsScalar(o, Integer)) { /* a uint64 above INT64_MAX */
        PyObject *i = PyNumber_Index(o);
        int r = i ? store_long_double(out, i) : (PyErr_Clear(), 0);
        Py_XDECREF(i);
        return r;
    } else if (!PyLong_Check(o)) {
        return 0;
    } else if ((v = PyLong_AsLongLongAndOverflow(o, &overflow)) != -1 || !PyErr_Occurred()) {
        if (overflow < 0)
            return 0;
        if (overflow > 0) {
            u = PyLong_AsUnsignedLongLong(o);
            if (u == (unsigned long long)-1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0; /* beyond 64 bits: its double, or the double's OverflowError */
            }
            ld = (long double)u;
        } else {
            ld = (long double)v;
        }
    } else {
        PyErr_Clear();
        return 0;
    }
    memcpy(out->bytes, &ld, sizeof ld);
    return 1;
}

int bt_slot_store_scalar(BtValue *out, BtTypeId t, PyObject *o, const char *fname, PyObject *name)
{
    const BtType *ty = bt_type(t);
    Py_complex c;
    int b;

    switch (ty->kind) {
    case 'b':
        b = PyObject_IsTrue(o);
        if (b < 0)
            return conversion_failed(fname, name, o, ty->cname);
        out->u64 = (uint64_t)b;
        return 0;
    case 'i':
    case 'u':
        if (t == BT_CHAR && (PyUnicode_Check(o) || PyBytes_Check(o)))
            return store_char(out, o, fname, name);
        return store_int(out, ty, o, fname, name);
    case 'f':
        if (ty->size == sizeof(long double) && store_long_double(out, o))
            return 0;
        c.real = PyFloat_AsDouble(o);
        if (c.real == -1.0 && PyErr_Occurred())
            return conversion_failed(fname, name, o, ty->cname);
        if (t == BT_BF16) {
            uint16_t h = small_float_bits(c.real, 7, -126);
            if ((h & 0x7fff) == 0x7f80 && isfinite(c.real))
                return does_not_fit(fname, name, o, ty->cname);
            memcpy(out->bytes, &h, 2);
            return 0;
        }
        if (store_real(out->bytes, ty->size, c.real) < 0)
            return does_not_fit(fname, name, o, ty->cname);
        return 0;
    case 'c':
        c = PyComplex_AsCComplex(o);
        if (c.real == -1.0 && PyErr_Occurred())
            return conversion_failed(fname, name, o, ty->cname);
        /* by parts, not CMPLX (glibc with clang lacks it) nor re + im*I
         * (wrong for infinities): C11 6.2.5p13 lays a complex out as an
         * array of two */
        if (store_real(out->bytes, ty->size / 2, c.real) < 0 ||
            store_real(out->bytes + ty->size / 2, ty->size / 2, c.imag) < 0)
            return does_not_fit(fname, name, o, ty->cname);
        return 0;
    default: PyErr_SetString(PyExc_SystemError, "bindthem: void parameter"); return -1;
    }
}

/* ================= C strings and enums ================= */

/* str o has no UTF-8 (a lone surrogate): the UnicodeEncodeError set as a
 * ValueError naming the argument. Returns -1. */
static int not_utf8(const char *fname, PyObject *name, PyObject *o)
{
    PyObject *type, *value, *tb, *v;

    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    v = value_text(o);
    if (v)
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' = %U cannot be passed as a C string (const char *): "
                     "%S; a str is passed as its UTF-8: pass other bytes as bytes",
                     fname, name, v, value);
    Py_XDECREF(v);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return -1;
}

/* A str (its UTF-8, cached in the str, which the caller holds for the
 * call) or bytes (its buffer) as a NUL-terminated C string. */
static int store_string(BtValue *out, PyObject *o, const char *fname, PyObject *name)
{
    const char *p;
    Py_ssize_t n, at;

    if (PyUnicode_Check(o)) {
        if (!(p = PyUnicode_AsUTF8AndSize(o, &n)))
            return not_utf8(fname, name, o);
    } else if (PyBytes_Check(o)) {
        p = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
    } else {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' must be str or bytes (const char *), not %s", fname, name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    if (memchr(p, 0, (size_t)n)) {
        at = PyUnicode_Check(o) ? PyUnicode_FindChar(o, 0, 0, PyUnicode_GET_LENGTH(o), 1)
                                : (Py_ssize_t)((const char *)memchr(p, 0, (size_t)n) - p);
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' has a NUL %s at index %zd, but the C function takes a "
                     "NUL-terminated string (const char *), which would end there",
                     fname, name, PyUnicode_Check(o) ? "character" : "byte", at);
        return -1;
    }
    out->u64 = (uint64_t)(uintptr_t)p;
    return 0;
}

/* Whether v is a value of enum e: one of its members, or for flags an OR
 * of them. */
static int enum_has(const BtSlotEnum *e, long long v)
{
    int i;

    if (e->is_flags)
        return v >= 0 && (v & ~e->all) == 0;
    for (i = 0; i < e->n; i++)
        if (e->values[i] == v)
            return 1;
    return 0;
}

/* Most members an enum's refusal lists. */
enum { ENUM_LISTED = 24 };

/* New reference: "RED (0), GREEN (5), BLUE (6)", the first ENUM_LISTED
 * members of e. */
static PyObject *enum_members(const BtSlotEnum *e)
{
    PyObject *parts = PyList_New(0), *sep = NULL, *r = NULL, *m = NULL;
    int i;

    if (!parts)
        return NULL;
    for (i = 0; i < e->n && i <= ENUM_LISTED; i++) {
        m = i < ENUM_LISTED ? PyUnicode_FromFormat("%s (%lld)", e->names[i], e->values[i])
                            : PyUnicode_FromFormat("... (%d in all)", e->n);
        if (!m || PyList_Append(parts, m) < 0)
            goto done;
        Py_CLEAR(m);
    }
    if ((sep = PyUnicode_FromString(", ")))
        r = PyUnicode_Join(sep, parts);
done:
    Py_XDECREF(m);
    Py_XDECREF(sep);
    Py_DECREF(parts);
    return r;
}

/* ValueError: argument o of enum slot s is none of its values. Returns -1. */
static int not_member(const BtArgSlot *s, PyObject *o, const char *fname, PyObject *name)
{
    const BtSlotEnum *e = s->en;
    PyObject *v = value_text(o), *list = v ? enum_members(e) : NULL;

    if (list)
        PyErr_Format(PyExc_ValueError, "%s(): argument '%U' = %U is %s enum %s%s: %U", fname, name,
                     v, e->is_flags ? "not an OR of the flags of" : "not a value of",
                     e->name[0] ? e->name : "(unnamed)", e->is_flags ? "" : ", whose members are",
                     list);
    Py_XDECREF(v);
    Py_XDECREF(list);
    return -1;
}

/* An integer of enum slot s: converted as its integer type, then checked
 * against the members (a value outside the type is none of them). */
static int store_enum(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                      PyObject *name)
{
    if (bt_slot_store_scalar(out, s->type, o, fname, name) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return not_member(s, o, fname, name);
    }
    /* store_int's 64 bits: a signed value sign-extended */
    return enum_has(s->en, (long long)out->u64) ? 0 : not_member(s, o, fname, name);
}

/* A Handle (or for a `void *`, None) as its pointer: bt_handle_invoke
 * checked it and holds it for the call. */
static int store_handle(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                        PyObject *name)
{
    const BtSlotHandle *t = s->kind == 'h' ? s->handle : NULL; /* NULL: a void * */
    void *p;

    if (bt_handle_arg(o, t ? t->key : NULL, t ? t->name : NULL, fname, name, &p) < 0)
        return -1;
    out->u64 = (uint64_t)(uintptr_t)p;
    return 0;
}

/* A function pointer's address: the int the callback layer passes for it
 * (bt_callback.h); nothing else reaches a walk. */
static int store_address(BtValue *out, PyObject *o, const char *fname, PyObject *name)
{
    if (PyLong_CheckExact(o)) {
        out->u64 = (uint64_t)PyLong_AsUnsignedLongLong(o);
        return out->u64 == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
    }
    PyErr_Format(PyExc_SystemError,
                 "%s(): argument '%U' (a function pointer) reached the call without the "
                 "callback layer",
                 fname, name);
    return -1;
}

/* Record o (bt_record_store took it) for record slot s: of its fixed shape
 * where it is a fixed-size array of structs (gmp's mpz_t: a 0-d array or a
 * numpy.void stands for one record). 0 or -1. */
static int record_shape(const BtArgSlot *s, PyObject *o, const char *fname, PyObject *name)
{
    PyArrayObject *a = PyArray_Check(o) ? (PyArrayObject *)o : NULL;

    if (!s->n_fixed)
        return 0;
    return bt_slot_fixed_check(s, a ? PyArray_NDIM(a) : 0,
                               a ? (const Py_ssize_t *)PyArray_DIMS(a) : NULL, fname, name);
}

int bt_slot_store_arg(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                      PyObject *name)
{
    if (s->kind == 'k')
        return store_address(out, o, fname, name);
    if (s->kind == 'h' || s->kind == 'v')
        return store_handle(out, s, o, fname, name);
    if (s->is_string == BT_STRING_OR_NONE && o == Py_None) {
        out->u64 = 0; /* NULL, which the annotation says the function takes */
        return 0;
    }
    if (s->is_string)
        return store_string(out, o, fname, name);
    if (bt_slot_is_record(s))
        return bt_record_store(out, s, o, fname, name) < 0 ? -1 : record_shape(s, o, fname, name);
    if (s->en)
        return store_enum(out, s, o, fname, name);
    return bt_slot_store_scalar(out, s->type, o, fname, name);
}
