/* bt_slot.c - argument slots: dispatch codes, array checks, sizes, scalar conversion. */
#include "bt_slot.h"

#include "bt_numpy.h"

#include "bt_fntype.h"
#include "bt_handle.h"
#include "bt_lex.h"
#include "bt_pyname.h"
#include "bt_record.h"

#include <float.h>
#include <math.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "integers are stored as 64-bit values whose low bytes the narrower parameters read"
#endif

_Static_assert(BT_ARR_C_CONTIGUOUS == NPY_ARRAY_C_CONTIGUOUS &&
                   BT_ARR_F_CONTIGUOUS == NPY_ARRAY_F_CONTIGUOUS &&
                   BT_ARR_ALIGNED == NPY_ARRAY_ALIGNED && BT_ARR_WRITEABLE == NPY_ARRAY_WRITEABLE,
               "BT_ARR_* are NumPy's flags");
_Static_assert(BT_K_ARRAY + BT_NTYPES <= BT_K_ARRAY_OTHER && BT_K_NPSCALAR + BT_NTYPES <= BT_K_BOOL,
               "dispatch codes of every type id fit their range");
_Static_assert(sizeof(BtValue) == BT_TYPE_MAX_SCALAR, "16 bytes per argument (bt_types.h)");

/* NumPy type number -> canonical type id (or -1), from the table at import.
 * Built-in type numbers are small; others (user types: 256+) are no dtype
 * of ours. */
enum { N_NPY = 32 };
static int8_t npy_ids[N_NPY];
/* NumPy's built-in descriptor of each type number we know (static objects,
 * held for the process): the keys of arrays (bt_slot_keys). */
static PyArray_Descr *npy_descrs[N_NPY];
/* str() of each descriptor of npy_descrs ("float32", "int64"), read at
 * import: a no-match message names an array's dtype without calling
 * into NumPy (str(dtype) costs ~30000 instructions). "" where unknown. */
static char npy_strs[N_NPY][24];

/* Fills npy_strs[t] (as npy_ids: no write when it holds the text already). */
static int descr_str(int t)
{
    PyObject *s = PyObject_Str((PyObject *)npy_descrs[t]);
    const char *u = s ? PyUnicode_AsUTF8(s) : NULL;

    if (!u) {
        Py_XDECREF(s);
        return -1;
    }
    if (strlen(u) < sizeof npy_strs[t] && strcmp(npy_strs[t], u) != 0)
        strcpy(npy_strs[t], u);
    Py_DECREF(s);
    return 0;
}

/* NumPy's integer and floating scalar types (numpy.int64, numpy.float32,
 * ...), with their kind ('i', 'u', 'f') and size, read at import
 * (np_numbers_init): bt_slot_np_int and bt_slot_np_float read their value
 * in place. */
enum { BT_NP_NUMBERS = 12 };
typedef struct BtNpNumber {
    const PyTypeObject *type; /* NULL: none (a NumPy without it) */
    char kind;
    uint8_t size;
} BtNpNumber;
static BtNpNumber np_numbers_read[BT_NP_NUMBERS];

/* A NumPy scalar's object: the value right after the object header, as
 * NumPy's scalar structs (PyLongScalarObject, ...) lay it out. */
typedef struct BtNpScalarObject {
    PyObject_HEAD
    uint64_t obval; /* its bytes: the value, of its type's size */
} BtNpScalarObject;

/* Whether o is a NumPy number of kind `kind` ('f', or 'i' for signed and
 * unsigned integers): its row, else NULL. */
static const BtNpNumber *np_number(PyObject *o, char kind)
{
    const PyTypeObject *tp = Py_TYPE(o);
    int i;

    for (i = 0; i < BT_NP_NUMBERS; i++)
        if (np_numbers_read[i].type == tp)
            return (np_numbers_read[i].kind == 'f') == (kind == 'f') ? &np_numbers_read[i] : NULL;
    return NULL;
}

int bt_slot_np_int(PyObject *o, long long *v)
{
    const BtNpNumber *n = np_number(o, 'i');
    const void *p = &((const BtNpScalarObject *)o)->obval;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    uint64_t u;

    if (!n)
        return 0;
    switch (n->size) {
    case 1:
        memcpy(&i8, p, 1);
        *v = n->kind == 'u' ? (long long)(uint8_t)i8 : i8;
        return 1;
    case 2:
        memcpy(&i16, p, 2);
        *v = n->kind == 'u' ? (long long)(uint16_t)i16 : i16;
        return 1;
    case 4:
        memcpy(&i32, p, 4);
        *v = n->kind == 'u' ? (long long)(uint32_t)i32 : i32;
        return 1;
    default:
        memcpy(&u, p, 8);
        if (n->kind == 'u' && u > (uint64_t)INT64_MAX)
            return 0;
        *v = (long long)u;
        return 1;
    }
}

int bt_slot_np_float(PyObject *o, double *d)
{
    const BtNpNumber *n = np_number(o, 'f');
    float f;

    if (!n)
        return 0;
    if (n->size == 8) {
        memcpy(d, &((const BtNpScalarObject *)o)->obval, sizeof *d);
        return 1;
    }
    memcpy(&f, &((const BtNpScalarObject *)o)->obval, sizeof f);
    *d = f;
    return 1;
}

/* The NumPy numbers of np_numbers_read, the commonest first. */
static const int np_numbers[BT_NP_NUMBERS] = {
    NPY_LONG, NPY_DOUBLE, NPY_INT,    NPY_FLOAT, NPY_LONGLONG, NPY_ULONG,
    NPY_UINT, NPY_SHORT,  NPY_USHORT, NPY_BYTE,  NPY_UBYTE,    NPY_ULONGLONG,
};

/* Fills np_numbers_read (as npy_ids: no write when it holds the row). */
static int np_numbers_init(void)
{
    int i;

    for (i = 0; i < BT_NP_NUMBERS; i++) {
        PyArray_Descr *d = PyArray_DescrFromType(np_numbers[i]);
        BtNpNumber row;
        if (!d)
            return -1;
        memset(&row, 0, sizeof row); /* padding too: memcmp below */
        row.type = d->typeobj;
        row.kind = d->kind;
        row.size = (uint8_t)PyDataType_ELSIZE(d);
        Py_DECREF(d);
        /* the value sits where BtNpScalarObject says, and has a width it reads */
        if (!(row.kind == 'f' ? row.size == 4 || row.size == 8
                              : (row.kind == 'i' || row.kind == 'u') && row.size <= 8) ||
            row.type->tp_basicsize < (Py_ssize_t)(offsetof(BtNpScalarObject, obval) + row.size)) {
            row.type = NULL;
        }
        if (memcmp(&np_numbers_read[i], &row, sizeof row) != 0)
            np_numbers_read[i] = row;
    }
    return 0;
}

int bt_slot_init(void)
{
    int t, id;

    if (np_numbers_init() < 0)
        return -1;

    for (t = 0; t < N_NPY; t++) {
        int8_t id8 = (int8_t)bt_type_from_npy(t);
        /* an import after the first (a new interpreter, or _core loaded
         * again) finds the same values: no write, so no race with calls */
        if (npy_ids[t] != id8)
            npy_ids[t] = id8;
        if (npy_ids[t] >= 0 && !npy_descrs[t] && !(npy_descrs[t] = PyArray_DescrFromType(t)))
            return -1;
        if (npy_descrs[t] && descr_str(t) < 0)
            return -1;
    }
    for (id = 1; id < BT_NTYPES; id++) {
        const BtType *ty = bt_type((BtTypeId)id);
        PyArray_Descr *d;
        if (ty->npy_type < 0) /* found at run time (npy_id) */
            continue;
        d = PyArray_DescrFromType(ty->npy_type);
        int ok = d && d->kind == ty->kind && PyDataType_ELSIZE(d) == (Py_ssize_t)ty->size;
        Py_XDECREF(d);
        PyErr_Clear();
        /* the conversions know these representations (bt_slot_store_scalar, bt_call.c's return) */
        ok = ok && ty->npy_type < N_NPY &&
             (ty->kind == 'i' || ty->kind == 'u' || (ty->kind == 'b' && ty->size == 1) ||
              (ty->kind == 'f' && (ty->size == 2 || ty->size == 4 || ty->size == 8 ||
                                   ty->size == sizeof(long double))) ||
              (ty->kind == 'c' &&
               (ty->size == 8 || ty->size == 16 || ty->size == 2 * sizeof(long double))));
        if (!ok) {
            PyErr_Format(PyExc_ImportError,
                         "bindthem: the type table's row for %s (NumPy type %d, kind '%c', %zu "
                         "bytes) does not match this NumPy, or has no conversion in bt_slot.c",
                         ty->cname, ty->npy_type, ty->kind, ty->size);
            return -1;
        }
    }
    return 0;
}

/* New reference: a tuple with one dict per row of the type table. */
static PyObject *scalar_types(PyObject *module, PyObject *unused)
{
    PyObject *r = PyTuple_New(BT_NTYPES), *row;
    int id;

    for (id = 0; r && id < BT_NTYPES; id++) {
        const BtType *t = bt_type((BtTypeId)id);
        row = Py_BuildValue("{s:s,s:s,s:i,s:C,s:n,s:s,s:s,s:s,s:i,s:s}", "c", t->cname, "mangle",
                            t->mangle, "npy_type", t->npy_type, "kind", t->kind, "size",
                            (Py_ssize_t)t->size, "python", t->pyname, "python_return",
                            bt_type_pyret((BtTypeId)id), "numpy", t->npname, "dlpack", t->dl_code,
                            "typestr", t->typestr);
        if (!row)
            Py_CLEAR(r);
        else
            PyTuple_SET_ITEM(r, id, row);
    }
    return r;
}

PyMethodDef bt_slot_methods[] = {
    {"scalar_types", scalar_types, METH_NOARGS,
     "scalar_types($module, /)\n--\n\nThe C scalar types bindthem knows, one dict per type: "
     "'c' (the C++ spelling), 'mangle', 'npy_type', 'kind', 'size', 'python' (the Python "
     "type of a scalar, as stubs write it), 'python_return' (a returned scalar's: "
     "numpy.longdouble for long double), 'numpy' (the dtype's name), 'dlpack' (its DLPack "
     "type code, -1 for none) and 'typestr' (__cuda_array_interface__)."},
    {NULL, NULL, 0, NULL},
};

/* ================= dispatch codes ================= */

/* ml_dtypes' bfloat16, once seen: NumPy numbers user types as they
 * register (256 and up). Threads may find it at once: each stores the
 * same number (relaxed atomics, bt_ft.h). */
static int bf16_num = -1;

/* The type id of a user type number (ml_dtypes.bfloat16), or -1. */
static int user_type_id(int t)
{
    int known = BT_FT_LOAD_RELAXED(&bf16_num), ok;
    PyArray_Descr *d;

    if (t == known)
        return BT_BF16;
    if (known >= 0 || t < NPY_USERDEF)
        return -1;
    d = PyArray_DescrFromType(t);
    if (!d) {
        PyErr_Clear();
        return -1;
    }
    ok = PyDataType_ELSIZE(d) == 2 && strcmp(d->typeobj->tp_name, "ml_dtypes.bfloat16") == 0;
    Py_DECREF(d);
    if (!ok)
        return -1;
    BT_FT_STORE_RELAXED(&bf16_num, t);
    return BT_BF16;
}

static int npy_id(int t) { return (unsigned)t < N_NPY ? npy_ids[t] : user_type_id(t); }

uint8_t bt_slot_array_code(int id)
{
    return id < 0 ? BT_K_ARRAY_OTHER : (uint8_t)(BT_K_ARRAY + bt_type_canonical((BtTypeId)id));
}

uint8_t bt_slot_descr_code(PyObject *descr)
{
    PyArray_Descr *d = (PyArray_Descr *)descr;
    int id = npy_id(d->type_num);

    if (id < 0 || !PyArray_ISNBO(d->byteorder))
        return d->type_num == NPY_VOID && PyDataType_HASFIELDS(d) ? BT_K_RECORDS : BT_K_ARRAY_OTHER;
    return (uint8_t)(BT_K_ARRAY + id);
}

const char *bt_slot_code_name(uint8_t code)
{
    if (code >= BT_K_ARRAY && code < BT_K_ARRAY + BT_NTYPES)
        return bt_type((BtTypeId)(code - BT_K_ARRAY))->npname;
    return "an unsupported dtype";
}

uint8_t bt_slot_code(PyObject *o)
{
    PyTypeObject *tp = Py_TYPE(o);

    if (tp == &PyLong_Type)
        return BT_K_INT;
    if (tp == &PyFloat_Type)
        return BT_K_FLOAT;
    if (PyArray_Check(o))
        return bt_slot_descr_code((PyObject *)PyArray_DESCR((PyArrayObject *)o));
    if (tp == &PyBool_Type)
        return BT_K_BOOL;
    if (tp == &PyComplex_Type)
        return BT_K_COMPLEX;
    if (PyArray_IsScalar(o, Generic)) {
        PyArray_Descr *d = PyArray_DescrFromScalar(o);
        int id = d ? npy_id(d->type_num) : -1, fields = d && PyDataType_HASFIELDS(d);
        Py_XDECREF(d);
        if (!d)
            PyErr_Clear();
        return id >= 0  ? (uint8_t)(BT_K_NPSCALAR + id)
               : fields ? BT_K_RECORD /* a numpy.void record */
                        : BT_K_OTHER;
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
    if (tp->tp_call) /* a function, a C function pointer's object, a class... */
        return BT_K_CALLABLE;
    return BT_K_OTHER;
}

/* The key of an omitted argument (NULL in args): no object's. */
const char bt_slot_omitted_key;

/* The key of o (see bt_slot_keys), or NULL when it has none. What a call
 * compares with it: bt_slot_key_of and its cases (bt_slot.h). */
static const void *arg_key(PyObject *o)
{
    PyTypeObject *tp;
    PyArray_Descr *d;

    if (!o)
        return &bt_slot_omitted_key;
    tp = Py_TYPE(o);
    if (tp == &PyArray_Type) {
        d = PyArray_DESCR((PyArrayObject *)o);
        return (unsigned)d->type_num < N_NPY && npy_descrs[d->type_num] == d ? d : NULL;
    }
    if ((tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || PyArray_Check(o))
        return NULL;
    return tp;
}

int bt_slot_keys(PyObject *const *args, int n, const void **keys)
{
    int i;

    for (i = 0; i < n; i++)
        if (!(keys[i] = arg_key(args[i])))
            return 0;
    return 1;
}

/* bt_slot_same_keys, and with omitted arguments (NULL in args) where
 * `omitting`: a constant at each caller, so the all-given compare has no
 * NULL test. */
static inline BT_ALWAYS_INLINE int same_keys(PyObject *const *args, const void *const *keys, int n,
                                             int omitting)
{
    int i;

    for (i = 0; i < n; i++) {
        PyObject *o = args[i];
        /* what o compares (bt_slot_key_of: the fused entry's key checks too) */
        const void *k = omitting && !o ? (const void *)&bt_slot_omitted_key : bt_slot_key_of(o);
        if (k != BT_FT_LOAD(&keys[i])) /* free-threaded: the memo's seqlock (bt_dispatch.h) */
            return 0;
    }
    return 1;
}

int bt_slot_same_keys(PyObject *const *args, const void *const *keys, int n)
{
    return same_keys(args, keys, n, 0);
}

int bt_slot_same_keys_omitting(PyObject *const *args, const void *const *keys, int n)
{
    return same_keys(args, keys, n, 1);
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

int bt_slot_accepts(const BtArgSlot *s, uint8_t code, int pass)
{
    char kind, from;

    if (s->is_array)
        return code == s->array_code;
    if (s->is_string) /* str or bytes only: a fixed type, as an array's dtype is */
        return code == BT_K_CHAR ||
               (s->is_string == BT_STRING_OR_NONE && pass == 2 && code == BT_K_OTHER);
    if (bt_slot_is_record(s)) /* a record (its dtype: bt_record_store) */
        return bt_record_accepts(s->rec, code);
    if (s->kind == 'h' || s->kind == 'v') /* any object: its store says what it must be */
        return code != BT_K_OMITTED;
    /* a callable; in pass 2 any other object too, which the callback layer takes (an
     * integer `address`) or refuses naming the C type (None, say) */
    if (s->kind == 'k')
        return code == BT_K_CALLABLE || (pass == 2 && code == BT_K_OTHER);
    if (code == BT_K_OMITTED)
        return s->has_default;
    if (code == BT_K_CHAR) /* exact, as pybind11's char caster */
        return s->type == BT_CHAR;
    kind = bt_type(s->type)->kind;
    if (code >= BT_K_NPSCALAR && code < BT_K_NPSCALAR + BT_NTYPES) {
        BtTypeId n = (BtTypeId)(code - BT_K_NPSCALAR);
        /* the slot's canonical dtype, known at bind time: its array code */
        if (code - BT_K_NPSCALAR == s->array_code - BT_K_ARRAY)
            return 1;
        return pass == 2 && converts(bt_type(n)->kind, kind);
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

PyObject *bt_slot_describe(PyObject *o)
{
    if (PyArray_Check(o)) {
        PyArray_Descr *d = PyArray_DESCR((PyArrayObject *)o);
        PyObject *s, *r;
        if ((unsigned)d->type_num < N_NPY && npy_descrs[d->type_num] == d &&
            npy_strs[d->type_num][0]) /* a built-in descriptor: native order */
            return PyUnicode_FromFormat("numpy.ndarray of %s", npy_strs[d->type_num]);
        s = PyObject_Str((PyObject *)d);
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

const char *bt_slot_wants(const BtArgSlot *s, char *buf, size_t size)
{
    const BtType *t = bt_type(s->type);
    const char *parts[4] = {t->npname, " array", NULL, NULL};
    size_t n = 0, k;
    int i;

    if (s->is_string)
        return s->is_string == BT_STRING_OR_NONE ? "str, bytes or None (const char *)"
                                                 : "str or bytes (const char *)";
    if (bt_slot_is_record(s))
        return bt_record_wants(s->rec, buf, size);
    if (s->kind == 'v')
        return "a Handle or None (void *)";
    if (s->kind == 'h') {
        PyOS_snprintf(buf, size, "a %s handle", s->handle ? s->handle->name : "");
        return buf;
    }
    if (s->kind == 'k') {
        PyOS_snprintf(buf, size, "a callable or C function pointer: %s", s->fntype);
        return buf;
    }
    if (s->type == BT_CHAR && !s->is_array)
        return "int (char) or a 1-character str";
    if (!s->is_array) {
        parts[0] = t->pyname;
        parts[1] = " (";
        parts[2] = t->cname;
        parts[3] = ")";
    }
    if (s->en && s->en->name[0]) {
        parts[1] = " (enum ";
        parts[2] = s->en->name;
    }
    /* no snprintf: a no-match error's cost is mostly its texts */
    for (i = 0; i < 4 && parts[i] && size > 0; i++) {
        k = strlen(parts[i]);
        if (n + k >= size)
            k = size - 1 - n;
        memcpy(buf + n, parts[i], k);
        n += k;
    }
    if (size > 0)
        buf[n] = '\0';
    return buf;
}

/* ================= arrays and sizes ================= */

int bt_slot_array_refused(const BtArgSlot *s, const BtArrayArg *a, const char *fname,
                          PyObject *name)
{
    int missing = s->need & ~a->flags;

    if (!a->via && bt_slot_copy_fixes(s, a->flags))
        return 1;
    if (missing & BT_ARR_WRITEABLE)
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is a read-only array, but the kernel writes to it (the "
                     "parameter is not const)",
                     fname, name);
    else /* a device array: never copied */
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' must be a C-contiguous array (this one, via %s, is "
                     "strided); bindthem never copies device memory: make a contiguous copy and "
                     "pass that",
                     fname, name, a->via ? a->via : "?");
    return -1;
}

/* "(3, 4)" of n extents into buf; "(2,)" for one, "()" for none. */
static void put_extents(char *buf, size_t size, int n, const long long *v, const Py_ssize_t *d)
{
    size_t at = (size_t)snprintf(buf, size, "(");

    for (int k = 0; k < n && at < size; k++)
        at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? ", " : "",
                               v ? v[k] : (long long)d[k]);
    if (at < size)
        snprintf(buf + at, size - at, n == 1 ? ",)" : ")");
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

int bt_slot_fixed_check(const BtArgSlot *s, int nd, const Py_ssize_t *dims, const char *fname,
                        PyObject *name)
{
    char want[200], got[200], ctype[240];
    size_t at;

    if (bt_slot_fixed_ok(s, nd, dims))
        return 0;
    put_extents(want, sizeof want, s->n_fixed, s->fixed, NULL);
    put_extents(got, sizeof got, nd, NULL, dims);
    at = (size_t)snprintf(ctype, sizeof ctype, "%s%s", s->is_const ? "const " : "",
                          bt_slot_is_record(s) ? s->rec->cname : bt_type(s->type)->cname);
    for (int k = 0; k < s->n_fixed && at < sizeof ctype; k++)
        at += (size_t)snprintf(ctype + at, sizeof ctype - at, "[%lld]", s->fixed[k]);
    PyErr_Format(PyExc_ValueError,
                 "%s(): argument '%U' must have shape %s (its C type is %s); it has shape %s",
                 fname, name, want, ctype, got);
    return -1;
}

int bt_slot_store_sizes(const BtArgSlot *s, int nd, const Py_ssize_t *dims, BtArgOut out,
                        const char *fname, PyObject *name)
{
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
        unsigned long long n = (unsigned long long)dims[z->axis];
        if (z->bits < 63 && n >> z->bits) {
            const char *cname = bt_type(z->type)->cname;
            if (nd == 1)
                PyErr_Format(PyExc_OverflowError,
                             "%s(): argument '%U' has %llu elements, more than its '%s' "
                             "parameter (%s) can hold",
                             fname, name, n, z->name, cname);
            else
                PyErr_Format(PyExc_OverflowError,
                             "%s(): argument '%U' has shape[%d] = %llu, more than its '%s' "
                             "parameter (%s) can hold",
                             fname, name, z->axis, n, z->name, cname);
            return -1;
        }
        *bt_arg_at(&out, z->cidx) = n; /* little-endian: a narrower type reads the low bytes */
    }
    return 0;
}

/* ================= scalars ================= */

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

/* ================= defaults ================= */

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
