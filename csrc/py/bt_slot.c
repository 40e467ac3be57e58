/* bt_slot.c - argument slots: dispatch codes, their keys and acceptance, array checks and sizes. */
#include "bt_slot.h"

#include "bt_numpy.h"

#include "bt_record.h"

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
            PyErr_Format(
                PyExc_ImportError,
                "bindthem: the type table's row for %s (NumPy type %d, kind '%c', %zu "
                "bytes) does not match this NumPy, or has no conversion in bt_slot_store.c",
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
    if ((missing & BT_ARR_WRITEABLE) && a->via) /* a device array: never copied */
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is a read-only array, but the kernel writes to it (the "
                     "parameter is not const); it came read-only via %s, and bindthem never "
                     "copies device memory: pass a writable copy of it",
                     fname, name, a->via);
    else if (missing & BT_ARR_WRITEABLE)
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

/* n (a rank or an axis: not negative) as text in buf: for a message that
 * a call in a loop may raise each time (a 0-d array), where
 * PyUnicode_FromFormat's %d would run the C library's sprintf, a third of
 * the call's cost. */
static const char *small_int(char buf[12], int n)
{
    char *p = buf + 11;
    unsigned u = (unsigned)n;

    *p = '\0';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return p;
}

int bt_slot_store_sizes(const BtArgSlot *s, int nd, const Py_ssize_t *dims, BtArgOut out,
                        const char *fname, PyObject *name)
{
    char t[3][12];
    int j;

    if (nd < s->min_ndim) {
        const BtSizeParam *z = s->sizes;
        for (j = 1; j < s->n_sizes; j++)
            if (s->sizes[j].axis > z->axis)
                z = &s->sizes[j];
        PyErr_Format(PyExc_ValueError,
                     "%s(): argument '%U' is a %s-d array, but the kernel's size parameter '%s' "
                     "takes its shape[%s]: pass an array of at least %s dimension%s",
                     fname, name, small_int(t[0], nd), z->name, small_int(t[1], z->axis),
                     small_int(t[2], s->min_ndim), s->min_ndim > 1 ? "s" : "");
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
