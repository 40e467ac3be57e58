/* bt_slot.h - the argument-slot layer: dispatch codes, array checks, size
 * parameters and scalar conversion, for CPU calls and CUDA launches alike.
 *
 * A slot is one Python-visible parameter of one overload. Everything that
 * can be decided at bind time is (bt_slot_build): an array slot's dispatch
 * code and the array flags it needs, a scalar slot's default. A call then
 * computes one byte per argument (bt_slot_code: ndarrays and NumPy scalars
 * through a lookup built from the bt_types table at import), the dispatcher
 * matches codes against slots (bt_slot_accepts), and the one store walk
 * (bt_slot_walk) stores each argument into its C parameter through the
 * back end's writer, with the same order, checks and messages whatever
 * runs the kernel. */
#ifndef BT_SLOT_H
#define BT_SLOT_H

#include "bt_state.h"

#if PY_VERSION_HEX < 0x030B0000
#include <longintrepr.h> /* ob_digit (3.11 on: in Python.h) */
#endif

#include <float.h>
#include <stdint.h>
#include <string.h>

#include "bt_numpy.h"
#include "bt_plan.h"

/* Dispatch codes: one byte per argument.
 *   0          an omitted argument: only a parameter with a default takes it
 *   1 + t      array of canonical type id t (bt_type_canonical), native byte order
 *   64 + t     NumPy scalar of canonical type id t
 *   BT_K_*     Python objects by kind */
enum {
    BT_K_OMITTED = 0,
    BT_K_ARRAY = 1,
    BT_K_ARRAY_OTHER = 40, /* an array of a dtype no kernel takes */
    BT_K_RECORDS = 41,     /* an array of a structured dtype: a struct parameter's (bt_record.h) */
    BT_K_NPSCALAR = 64,
    BT_K_BOOL = 128,
    BT_K_INT,
    BT_K_FLOAT,
    BT_K_COMPLEX,
    BT_K_CHAR,     /* str or bytes: a char parameter takes a single character */
    BT_K_CALLABLE, /* any other callable object: a function pointer parameter takes it */
    BT_K_RECORD,   /* a numpy.void of a structured dtype: a struct's record (bt_record.h) */
    BT_K_OTHER = 255
};

/* BtArgSlot.is_string: a C string slot, and whether it takes None. */
enum { BT_STRING = 1, BT_STRING_OR_NONE = 2 };

/* Array flags, NumPy's values (bt_slot.c checks): what an array argument
 * has, and what a slot needs of it. */
enum {
    BT_ARR_C_CONTIGUOUS = 0x1,
    BT_ARR_F_CONTIGUOUS = 0x2,
    BT_ARR_ALIGNED = 0x100,
    BT_ARR_WRITEABLE = 0x400
};

/* Storage for one C argument or return value (16 bytes, aligned for
 * double complex). */
typedef union BtValue {
    int8_t i8;
    uint8_t u8;
    int64_t i64;
    uint64_t u64;
    float f;
    double d;
    void *p;
    unsigned char bytes[16];
    long double align;
} BtValue;

/* A size parameter: C parameter cidx gets its array's shape[axis]. */
typedef struct BtSizeParam {
    int cidx;
    int axis;
    BtTypeId type;
    unsigned bits;    /* values must be below 1 << bits (64: any extent) */
    uint64_t limit;   /* the largest extent it takes: (1 << bits) - 1, capped */
    const char *name; /* the C name, for messages */
    uint8_t word;     /* the fused entry's word of it (bt_call.h; bt_call_prepare_frame) */
} BtSizeParam;

/* An enum parameter's members, copied at bind time: what a value must be
 * (one of values, or for flags an OR of them: no bit outside `all`, not
 * negative), and the names its refusal lists. */
typedef struct BtSlotEnum {
    const char *name; /* "color" ("" when it has none) */
    int is_flags;
    long long all; /* the OR of the members */
    int n;
    const long long *values;
    const char *const *names;
} BtSlotEnum;

/* A handle parameter's type (kind 'h'), filled by the back end that binds
 * handles (bt_handle_bind.h): the type pointed to ("struct gzFile_s"),
 * which a Handle's type must have, and its name ("gzFile"). */
typedef struct BtSlotHandle {
    const char *key, *name;
} BtSlotHandle;

/* One Python-visible parameter of one overload. */
typedef struct BtArgSlot {
    BtTypeId type;
    int is_array;
    int is_string; /* a C string (`const char *`): a str (as UTF-8) or bytes, NUL-terminated
                    * (BT_STRING); BT_STRING_OR_NONE: None too, passed as NULL
                    * (BtTypeRef.nullable); 0: no string */
    int is_const;
    uint8_t array_code; /* the code an array argument must have */
    int need;           /* BT_ARR_* an array argument must have */
    int cidx;           /* index of the C parameter */
    int posonly;        /* positional-only: before the signature's '/' (bt_pyname_posonly) */
    /* by kind, no slot has two: a union keeps the slot's size (the fused loop's indexing) */
    union {
        BtSizeParam *sizes;                /* array: its size parameters (right after it) */
        const struct BtSlotHandle *handle; /* kind 'h': its handle type (bt_handle_calls) */
        struct BtRecord *rec;              /* kinds 'r', 'R': its struct (bt_record.h) */
    };
    int n_sizes;
    int min_ndim; /* array: 1 + the highest axis they name */
    int has_default;
    /* a function pointer parameter's type, "double (*)(double, void *)" (kind
     * 'k'), or NULL; here, in the padding before defval, so that the slot's
     * size (the stride of the fused entry's loop) is what it was */
    const char *fntype;
    BtValue defval;       /* the default, converted to `type` at bind time */
    const char *defrepr;  /* its Python spelling ("1.0", "'T'"), or NULL */
    const BtSlotEnum *en; /* an enum parameter's members, or NULL */
    /* the type's row, read at bind time for bt_slot_store_fast: kind 'b',
     * 'i', 'u', 'f', 'c'; 's' for a C string and 'e' for an enum whose
     * values are no range, which bt_slot_store_fast leaves to
     * bt_slot_store_arg; 'k' for a function pointer, which a call with one
     * hands the walk as its address (bt_callback.h); 'h' for a handle and
     * 'v' for a `void *`, which take a Handle (bt_handle_call.h holds it
     * around the call; bt_slot_store_arg stores its pointer); 'r' and 'R'
     * for a struct by pointer and by value, the full way too (bt_record.h) */
    char kind;
    uint8_t size;    /* bytes */
    uint8_t n_fixed; /* a fixed-size array (BtParam.fixed; n_sizes 0): its axes, else 0 */
    long long min;   /* integers and bool: the range (an enum's values when they are one) */
    unsigned long long max;
    /* the fused entry's plan (bt_call.h; bt_call_prepare_frame, where the
     * direct call applies): the word of this argument (a scalar, an
     * array's pointer) and of an array's one size parameter (a scratch
     * word when it has none), and the longest 1-D array it takes (the size
     * parameter's limit; -1 when a 1-D array is too few dimensions) */
    uint8_t word, size_word;
    uint8_t two_d; /* its size parameters are a 2-D array's two extents, in order */
    Py_ssize_t max_1d;
    const long long *fixed; /* n_fixed: the shape an argument must have, exactly */
} BtArgSlot;

/* Whether slot s takes a struct (kind 'r': by pointer, 'R': by value):
 * s->rec is its. */
static inline int bt_slot_is_record(const BtArgSlot *s) { return s->kind == 'r' || s->kind == 'R'; }

/* An array argument as a caller read it. */
typedef struct BtArrayArg {
    uint64_t addr; /* data pointer (host or device) */
    int flags;     /* BT_ARR_* */
    int ndim;
    const Py_ssize_t *dims; /* at least the axes the slot's size parameters name */
    const char *via;        /* NULL: an ndarray; else how it came ("DLPack", ...) */
} BtArrayArg;

/* At import: checks the bt_types table against NumPy (type numbers, kinds,
 * sizes) and builds the NumPy-number -> code lookup. Returns 0, or -1 with
 * ImportError set. */
BT_HIDDEN int bt_slot_init(void);

/* _core.scalar_types(): the table, for Python (bindthem.stubs). */
BT_HIDDEN extern PyMethodDef bt_slot_methods[];

/* The slots of overload ov: slots (room for ov's C parameter count) and
 * *n_py are filled, sizes and defaults included, allocating from arena;
 * order (room as slots) receives the slots' indices in the order a call
 * stores them: scalars first, then arrays (bt_slot_walk says why).
 * Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_slot_build(BtArgSlot *slots, uint8_t *order, int *n_py, const BtOverload *ov,
                            BtArena *arena);

/* The dispatch code of one argument. */
BT_HIDDEN uint8_t bt_slot_code(PyObject *o);

/* Keys of arguments for a "same dtypes as last time" check in front of the
 * dispatch cache: an ndarray's key is its descriptor when that is NumPy's
 * built-in one for the type (never freed), another object's its type when
 * that is static (int, float, numpy.float64...); the dispatch code is a
 * function of the key. bt_slot_keys fills keys[n] and returns 1, or 0 when
 * some argument has no key (a subclass, a non-native byte order, a heap
 * type); bt_slot_same_keys says whether args[n] have keys[n]. An omitted
 * argument (NULL in args) has a key of its own (its code: BT_K_OMITTED),
 * which only bt_slot_same_keys_omitting reads from args; bt_slot_same_keys
 * takes args without NULLs. */
BT_HIDDEN int bt_slot_keys(PyObject *const *args, int n, const void **keys);
BT_HIDDEN extern const char bt_slot_omitted_key; /* its address: an omitted argument's key */
BT_HIDDEN int bt_slot_same_keys(PyObject *const *args, const void *const *keys, int n);
BT_HIDDEN int bt_slot_same_keys_omitting(PyObject *const *args, const void *const *keys, int n);

/* The dispatch code of an array of type id (-1: none we know), and of one
 * with NumPy descriptor descr (a PyArray_Descr). */
BT_HIDDEN uint8_t bt_slot_array_code(int id);
BT_HIDDEN uint8_t bt_slot_descr_code(PyObject *descr);

/* "float32" for an array dispatch code, "an unsupported dtype" for others. */
BT_HIDDEN const char *bt_slot_code_name(uint8_t code);

/* Whether an argument of dispatch code `code` fits slot s; pass 1 is exact,
 * pass 2 adds the scalar conversions (int -> floating/complex, float ->
 * complex, NumPy integers of other widths). */
BT_HIDDEN int bt_slot_accepts(const BtArgSlot *s, uint8_t code, int pass);

/* New reference: a short description of an argument for messages,
 * e.g. "numpy.ndarray of float32", "int", "numpy.int64", "list". */
BT_HIDDEN PyObject *bt_slot_describe(PyObject *o);

/* What a slot takes, for messages: "float64 array", "int", "float". */
BT_HIDDEN const char *bt_slot_wants(const BtArgSlot *s, char *buf, size_t size);

/* Whether an array whose flags lack some of what slot s needs lacks only
 * alignment or C-contiguity: a CPU call then passes an aligned C-contiguous
 * copy (bt_call_invoke), copied back where the kernel writes it. */
static inline int bt_slot_copy_fixes(const BtArgSlot *s, int flags)
{
    return ((flags | BT_ARR_ALIGNED | BT_ARR_C_CONTIGUOUS) & s->need) == s->need;
}

/* Array a lacks some of s->need. For an ndarray (a->via NULL) that lacks
 * only alignment or C-contiguity, raises nothing and returns 1: the CPU
 * call passes it as an aligned C-contiguous copy. Else raises the
 * ValueError (read-only for a non-const parameter; a device array that is
 * not C-contiguous, which is never copied), with the remedy, and returns
 * -1. */
BT_HIDDEN int bt_slot_array_refused(const BtArgSlot *s, const BtArrayArg *a, const char *fname,
                                    PyObject *name);

/* Whether an array of nd dimensions dims has the shape of fixed-size array
 * slot s (s->n_fixed; for a record slot, a 0-d array stands for a shape of
 * one element). 1 or 0. */
static inline int bt_slot_fixed_ok(const BtArgSlot *s, int nd, const Py_ssize_t *dims)
{
    int k;

    if (nd == 0 && bt_slot_is_record(s))
        for (nd = -1, k = 0; k < s->n_fixed; k++)
            if (s->fixed[k] != 1)
                return 0;
    if (nd < 0)
        return 1;
    if (nd != s->n_fixed)
        return 0;
    for (k = 0; k < nd; k++)
        if (dims[k] != s->fixed[k])
            return 0;
    return 1;
}

/* An array argument of nd dimensions dims for fixed-size array slot s:
 * 0 when bt_slot_fixed_ok, else -1 with the ValueError (the shape it must
 * have and the one it has). */
BT_HIDDEN int bt_slot_fixed_check(const BtArgSlot *s, int nd, const Py_ssize_t *dims,
                                  const char *fname, PyObject *name);

/* Where a store walk puts each C parameter's value: the one thing a back
 * end tells the walk (bt_slot_walk). kind is a constant at each call site,
 * so the inlined walk keeps only its own case:
 *   BT_OUT_VALUES  one BtValue per C parameter at base[cidx] (a libffi
 *                  frame, a CUDA launch's parameter buffer)
 *   BT_OUT_WORDS   machine words at base[pos[cidx]] (the direct call's
 *                  registers and stack, bt_direct.h)
 * ptrs, when not NULL, receives the address of each value stored, by C
 * parameter (libffi's avalues, cuLaunchKernel's kernelParams). */
enum { BT_OUT_VALUES, BT_OUT_WORDS };
typedef struct BtArgOut {
    int kind;
    void *base;
    const uint8_t *pos; /* BT_OUT_WORDS: the first word of each C parameter */
    void **ptrs;
} BtArgOut;

/* The storage of C parameter cidx in out (8 bytes, 16 for a complex
 * double), recorded in out->ptrs. */
static inline BT_ALWAYS_INLINE uint64_t *bt_arg_at(const BtArgOut *out, int cidx)
{
    uint64_t *at = out->kind == BT_OUT_WORDS ? (uint64_t *)out->base + out->pos[cidx]
                                             : (uint64_t *)((BtValue *)out->base + cidx);
    if (out->ptrs)
        out->ptrs[cidx] = at;
    return at;
}

/* Fills the size parameters of array slot s from the argument's shape (nd
 * dimensions, dims) into out, each as 64 bits (little-endian: a narrower
 * parameter reads the low bytes). out comes by value: the walk's copy
 * never escapes, so its constant kind folds at each call site. A
 * ValueError when the array has fewer than s->min_ndim dimensions, an
 * OverflowError when an extent does not fit its parameter's type, both
 * before any kernel runs. Returns 0 or -1. */
BT_HIDDEN int bt_slot_store_sizes(const BtArgSlot *s, int nd, const Py_ssize_t *dims, BtArgOut out,
                                  const char *fname, PyObject *name);

/* Converts scalar o to type t into out, with the conversions, range checks
 * and messages of a passed argument. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_slot_store_scalar(BtValue *out, BtTypeId t, PyObject *o, const char *fname,
                                   PyObject *name);

/* Argument o of scalar slot s into out the full way, what
 * bt_slot_store_fast leaves: bt_slot_store_scalar's conversions, a C
 * string's pointer (a str's UTF-8, which the str keeps for as long as it
 * lives, or a bytes' buffer; one with a NUL inside is refused), an enum's
 * value checked against its members, a function pointer's address (an int:
 * the callback layer, bt_callback.h, passes each callback so). Returns 0,
 * or -1 with an exception set. */
BT_HIDDEN int bt_slot_store_arg(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                                PyObject *name);

/* A small Python int (one that fits a C long without CPython's slow
 * path) into *v; 0 for any other object, which the full conversion takes. */
static inline int bt_slot_small_int(PyObject *o, long long *v)
{
    if (Py_TYPE(o) != &PyLong_Type)
        return 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (!PyUnstable_Long_IsCompact((PyLongObject *)o))
        return 0;
    *v = (long long)PyUnstable_Long_CompactValue((PyLongObject *)o);
#else
    {
        Py_ssize_t n = Py_SIZE(o);
        if (n < -1 || n > 1)
            return 0;
        *v = n ? n * (long long)((PyLongObject *)o)->ob_digit[0] : 0;
    }
#endif
    return 1;
}

/* A NumPy integer scalar whose value fits a long long into *v; a NumPy
 * float64 or float32 scalar's value into *d (float32 widened, as its
 * __float__ does). Read in place, without the number protocol (__index__,
 * __float__); 0 for any other object (a uint64 above LLONG_MAX included:
 * the full conversion takes it). Out of line: only the quick conversion's
 * second try. */
BT_HIDDEN int bt_slot_np_int(PyObject *o, long long *v);
BT_HIDDEN int bt_slot_np_float(PyObject *o, double *d);

/* A Python complex or float (exact types) into a complex slot's words as
 * bt_slot_store_scalar stores it: a complex double's parts in out[0] and
 * out[1], a complex float's packed in out[0] (finite and in float's range;
 * anything else, and long double complex, the full way). 1, or 0. Out of
 * line: the quick conversions' rarest. */
BT_HIDDEN int bt_slot_store_complex(const BtArgSlot *s, PyObject *o, uint64_t *out);

/* The common scalars the quick way: an int or a NumPy integer in range for
 * an integer slot (an enum's too, when its values are one range: s->min,
 * s->max), a float or a NumPy float64/float32 for a floating one (in range
 * for float), a bool for a bool; the
 * value into out[0] as bt_slot_store_scalar stores it (integers extended
 * to 64 bits). Returns 1, or 0 when the full conversion (bt_slot_store_arg:
 * its checks and messages; a C string's always) must run. */
static inline int bt_slot_store_fast(const BtArgSlot *s, PyObject *o, uint64_t *out)
{
    long long v;
    double d;
    float f;

    switch (s->kind) {
    case 'i':
    case 'u':
        if (!bt_slot_small_int(o, &v) && !bt_slot_np_int(o, &v))
            return 0;
        if (v < s->min || (v >= 0 && (unsigned long long)v > s->max))
            return 0;
        *out = (uint64_t)v;
        return 1;
    case 'f':
        if (Py_TYPE(o) == &PyFloat_Type)
            d = PyFloat_AS_DOUBLE(o);
        else if (!bt_slot_np_float(o, &d))
            return 0;
        if (s->size == 8) {
            memcpy(out, &d, sizeof d);
            return 1;
        }
        if (s->size != 4) /* 2-byte floats: the full way */
            return 0;
        if (!(d >= -FLT_MAX && d <= FLT_MAX)) /* inf, nan and overflow: the full way */
            return 0;
        f = (float)d;
        memcpy(out, &f, sizeof f);
        return 1;
    case 'b':
        if (Py_TYPE(o) != &PyBool_Type)
            return 0;
        *out = o == Py_True;
        return 1;
    default: /* a complex (not a case: the switch stays a chain of compares) */
        return s->kind == 'c' && bt_slot_store_complex(s, o, out);
    }
}

/* ================= the per-argument checks =================
 *
 * One definition of each check a call makes of one argument. Two paths make
 * them: the store walk (bt_slot_walk, below), once the dispatcher has
 * matched the arguments (by their codes, or by the last call's keys:
 * bt_slot_same_keys), and the fused entry (bt_call_fused_store, bt_call.h),
 * which compares the keys and makes the walk's checks in one pass. Both
 * call these, so a check changed here changes for both:
 *   - the key (the memo's, bt_slot_keys): bt_slot_key_of (what an argument
 *     compares with one, whatever the slot: bt_slot_same_keys), and its
 *     cases by slot: BT_SLOT_ARRAY_HAS_KEY (an ndarray of exactly that
 *     built-in descriptor), bt_slot_scalar_has_key, bt_slot_omitted_has_key;
 *   - an array: bt_slot_flags_ok (the flags the slot needs), bt_slot_elements
 *     (the GIL policy's count), BT_SLOT_SIZE_FITS (its one size parameter
 *     takes the extent as it is; bt_slot_max_1d: the same for a 1-D array,
 *     as one bound) and bt_slot_size_value (what that parameter gets);
 *   - a scalar: bt_slot_store_fast (above); an omitted one:
 *     bt_slot_put_default.
 * What a check refuses goes the full way (bt_slot_array_refused,
 * bt_slot_store_sizes, bt_slot_store_arg), with its messages. */

/* Whether an omitted argument's key is k. */
static inline BT_ALWAYS_INLINE int bt_slot_omitted_has_key(const void *k)
{
    return k == (const void *)&bt_slot_omitted_key;
}

/* What argument o (not omitted) compares with a key: an ndarray's
 * descriptor, any other object's type. The key it has (bt_slot_keys) is
 * this when it has one: never an ndarray subclass's type, nor a
 * descriptor that is not NumPy's built-in one. */
static inline BT_ALWAYS_INLINE const void *bt_slot_key_of(PyObject *o)
{
    return Py_TYPE(o) == &PyArray_Type ? (const void *)PyArray_DESCR((PyArrayObject *)o)
                                       : (const void *)Py_TYPE(o);
}

/* Whether o has key k where k is an array slot's (a descriptor): o is an
 * ndarray, not a subclass, with that descriptor (bt_slot_key_of's first
 * case). A macro, as is BT_SLOT_SIZE_FITS: around an inline function that
 * returns a `&&`, GCC 12 lays out the fused loop worse (17 instructions
 * more a call of k63 by keyword, benchmarks/bench_callgrind.py). o is read
 * twice: pass a name. */
#define BT_SLOT_ARRAY_HAS_KEY(o, k)                                                                \
    (Py_TYPE(o) == &PyArray_Type && (const void *)PyArray_DESCR((PyArrayObject *)(o)) == (k))

/* Whether o has key k where k is a scalar slot's (a type, never
 * ndarray's): bt_slot_key_of's compare needs only the type, since an
 * ndarray's descriptor is no type. */
static inline BT_ALWAYS_INLINE int bt_slot_scalar_has_key(PyObject *o, const void *k)
{
    return (const void *)Py_TYPE(o) == k;
}

/* Whether an array with flags (BT_ARR_*) has all that slot s needs. Where
 * not, bt_slot_array_refused says why (or lets an aligned copy stand in). */
static inline BT_ALWAYS_INLINE int bt_slot_flags_ok(const BtArgSlot *s, int flags)
{
    return (flags & s->need) == s->need;
}

/* The elements of an array of nd dimensions dims. */
static inline Py_ssize_t bt_slot_elements(int nd, const Py_ssize_t *dims)
{
    Py_ssize_t n = 1;
    int j;

    if (nd == 1)
        return dims[0];
    if (nd == 2)
        return dims[0] * dims[1];
    for (j = 0; j < nd; j++)
        n *= dims[j];
    return n;
}

/* Whether z, the one size parameter of array slot s (s->n_sizes == 1:
 * z is s->sizes, passed as the caller holds it), takes an array of nd
 * dimensions dims as it is: the axis it names exists and its extent is in
 * the parameter's range. Then z gets bt_slot_size_value; else
 * bt_slot_store_sizes raises. A macro (BT_SLOT_ARRAY_HAS_KEY says why); z
 * is read twice: pass a name. */
#define BT_SLOT_SIZE_FITS(s, z, nd, dims) ((nd) >= (s)->min_ndim && BT_SLOT_AXIS_FITS(z, dims))

/* Whether size parameter z takes the extent of the axis it names (which
 * exists: nd >= the slot's min_ndim). */
#define BT_SLOT_AXIS_FITS(z, dims) ((uint64_t)(dims)[(z)->axis] <= (z)->limit)

/* Whether the size parameters of array slot s (any number: a 2-D array's
 * x_size0, x_size1) take an array of nd dimensions dims as it is: the axes
 * they name exist and each extent is in its parameter's range. Then each
 * gets bt_slot_size_value; else bt_slot_store_sizes raises. For one size
 * parameter, BT_SLOT_SIZE_FITS is the same check. */
static inline BT_ALWAYS_INLINE int bt_slot_sizes_fit(const BtArgSlot *s, int nd,
                                                     const Py_ssize_t *dims)
{
    int j;

    if (nd < s->min_ndim)
        return 0;
    for (j = 0; j < s->n_sizes; j++)
        if (!BT_SLOT_AXIS_FITS(&s->sizes[j], dims))
            return 0;
    return 1;
}

/* BT_SLOT_SIZE_FITS for a 1-D array as one bound on its extent, taken at
 * bind time (BtArgSlot.max_1d): the size parameter's limit, or -1 when it
 * names an axis past the first or s has several (a 1-D array is then
 * bt_slot_sizes_fit's to judge); any extent when s has no size parameter. */
static inline Py_ssize_t bt_slot_max_1d(const BtArgSlot *s)
{
    if (s->n_sizes > 1)
        return -1;
    if (s->n_sizes != 1)
        return PY_SSIZE_T_MAX;
    return s->min_ndim > 1                    ? -1
           : s->sizes->limit < PY_SSIZE_T_MAX ? (Py_ssize_t)s->sizes->limit
                                              : PY_SSIZE_T_MAX;
}

/* What size parameter z gets once BT_SLOT_SIZE_FITS: the extent, as 64
 * bits (little-endian: a narrower parameter reads the low bytes). */
static inline BT_ALWAYS_INLINE uint64_t bt_slot_size_value(const BtSizeParam *z,
                                                           const Py_ssize_t *dims)
{
    return (uint64_t)dims[z->axis];
}

/* A scalar of slot s, from its 16-byte storage, into its words. */
static inline BT_ALWAYS_INLINE void bt_slot_put_value(uint64_t *at, const BtArgSlot *s,
                                                      const BtValue *v)
{
    memcpy(at, v->bytes, 8); /* constant sizes: two moves, no call of memcpy */
    if (s->size > 8)
        memcpy(at + 1, v->bytes + 8, 8);
}

/* An omitted argument of scalar slot s into its words: its default,
 * converted at bind time (a complex double's two words). */
static inline BT_ALWAYS_INLINE void bt_slot_put_default(uint64_t *at, const BtArgSlot *s)
{
    bt_slot_put_value(at, s, &s->defval);
}

/* ================= the store walk =================
 *
 * The one loop that stores a call's arguments, for every back end: the
 * libffi frame, the direct call's words and a CUDA launch's parameter
 * buffer differ only in the BtArgOut they pass, and reading an array
 * argument (an ndarray, a device array) in the BtArgSource. It holds every
 * invariant of a store once:
 *   - the order (bt_slot_build's `order`): scalars first, whose conversion
 *     may run Python code (__float__, __index__), then the arrays, so that
 *     no Python code runs between an array's checks and the kernel (a
 *     resize or setflags there would leave a stale pointer);
 *   - a scalar converted once: the quick way (bt_slot_store_fast), else
 *     bt_slot_store_arg's conversions, checks and messages (a C string, an
 *     enum's members: the full way only); an omitted
 *     one gets its default, converted at bind time (bt_slot_put_default);
 *   - an array checked once against the slot's flags (bt_slot_flags_ok;
 *     the refusal and its message: bt_slot_array_refused), its elements
 *     counted (*total: the GIL policy's measure), its address and size
 *     parameters stored (the common single size in range inline:
 *     BT_SLOT_SIZE_FITS, bt_slot_size_value; else bt_slot_store_sizes);
 *   - an ndarray that lacks only alignment handed to src->unaligned for an
 *     aligned stand-in, or, where that is NULL, the walk stopped before it.
 * Its checks are the per-argument checks above, which the fused entry
 * (bt_call_fused_store, bt_call.h) makes too: a check is changed there,
 * never in one of the two loops.
 */

/* What a walk reads: the arguments by Python parameter (NULL: omitted),
 * and how to read an array argument. */
typedef struct BtArgSource {
    PyObject *const *args;
    /* Array argument i as the back end sees it (its pointer, flags, shape,
     * and how it came): 0, or -1 with an exception set. */
    int (*array)(void *ctx, PyObject *const *args, int i, BtArrayArg *a);
    /* An aligned stand-in for ndarray argument i, which lacks only
     * alignment: a->addr replaced (a CPU call's aligned temporary); 0 or -1.
     * NULL member: the walk returns 1 there instead. */
    int (*unaligned)(void *ctx, PyObject *const *args, int i, BtArrayArg *a);
    void *ctx;         /* the back end's, for these two */
    const char *fname; /* for messages */
    PyObject *names;   /* tuple of str: the parameters' names, for messages */
} BtArgSource;

/* Array argument i (slot s) into out; see the walk. 0, -1, or 1 where it
 * lacks only alignment and src->unaligned is NULL (nothing stored). */
static inline BT_ALWAYS_INLINE int bt_slot_walk_array(const BtArgSlot *s, int i,
                                                      const BtArgSource *src, const BtArgOut *out,
                                                      Py_ssize_t *total)
{
    const BtSizeParam *z = s->sizes;
    BtArrayArg a;

    if (src->array(src->ctx, src->args, i, &a) < 0)
        return -1;
    if (!bt_slot_flags_ok(s, a.flags)) {
        BtArrayArg b = a; /* a copy: `a` itself stays in registers on the common path */
        int r = bt_slot_array_refused(s, &b, src->fname, PyTuple_GET_ITEM(src->names, i));
        if (r < 0 || !src->unaligned)
            return r;
        if (src->unaligned(src->ctx, src->args, i, &b) < 0) /* r == 1: only alignment */
            return -1;
        a.addr = b.addr;
    }
    *total += bt_slot_elements(a.ndim, a.dims);
    *bt_arg_at(out, s->cidx) = a.addr;
    if (s->n_sizes == 0) /* a fixed-size array's shape is its size */
        return s->n_fixed ? bt_slot_fixed_check(s, a.ndim, a.dims, src->fname,
                                                PyTuple_GET_ITEM(src->names, i))
                          : 0;
    /* the common one: a single size, in range */
    if (s->n_sizes == 1 && BT_SLOT_SIZE_FITS(s, z, a.ndim, a.dims)) {
        *bt_arg_at(out, z->cidx) = bt_slot_size_value(z, a.dims);
        return 0;
    }
    if (s->n_sizes > 1 && bt_slot_sizes_fit(s, a.ndim, a.dims)) {
        int j;
        for (j = 0; j < s->n_sizes; j++)
            *bt_arg_at(out, z[j].cidx) = bt_slot_size_value(&z[j], a.dims);
        return 0;
    }
    return bt_slot_store_sizes(s, a.ndim, a.dims, *out, src->fname,
                               PyTuple_GET_ITEM(src->names, i));
}

/* Stores the arguments of the n slots into out, in `order` from position
 * *k on, advancing *k; *total accumulates the arrays' elements. Returns 0;
 * -1 with an exception set; or 1 with *k at an ndarray that lacks only
 * alignment when src->unaligned is NULL: the scalars and the arrays before
 * it are stored, and a walk from *k with src->unaligned set completes the
 * call (every position left is an array). */
static inline BT_ALWAYS_INLINE int bt_slot_walk(const BtArgSlot *slots, const uint8_t *order, int n,
                                                int *k, const BtArgSource *src, const BtArgOut *out,
                                                Py_ssize_t *total)
{
    BtValue v;
    int r;

    for (; *k < n; (*k)++) {
        int i = order[*k];
        const BtArgSlot *s = &slots[i];
        PyObject *o = src->args[i];
        uint64_t *at;
        if (s->is_array) {
            if ((r = bt_slot_walk_array(s, i, src, out, total)) != 0)
                return r;
            continue;
        }
        at = bt_arg_at(out, s->cidx);
        if (!o) { /* omitted: the default, converted at bind time */
            bt_slot_put_default(at, s);
        } else if (!bt_slot_store_fast(s, o, at)) {
            if (bt_slot_store_arg(&v, s, o, src->fname, PyTuple_GET_ITEM(src->names, i)) < 0)
                return -1;
            bt_slot_put_value(at, s, &v);
            if (s->kind == 'R' && out->ptrs) /* a struct by value: libffi reads its bytes */
                out->ptrs[s->cidx] = v.p;
        }
    }
    return 0;
}

/* The Python defaults of ov's parameters: pydefs[i] (one per C parameter)
 * is a new reference to what a call that omits argument i passes, or NULL
 * when it must be given; cvals (one per C parameter), when not NULL,
 * receives them converted to the parameter's type. A header default counts
 * when it is a literal (bt_lex_literal; for an enum parameter, also one of
 * its members by name) that the parameter takes as a passed argument (the
 * same conversions and range checks) and every later Python parameter has
 * one too; a C string takes none. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_slot_defaults(const BtOverload *ov, PyObject **pydefs, BtValue *cvals);

/* New reference: the Python value of the C literal text (bt_lex_literal:
 * `0.5`, `1.5f`, `'T'`, `true`) whatever the parameter's type, or for a
 * parameter of enum e (NULL: none) the value of the member it names
 * (`ABOVE`, `level::ABOVE`); NULL without an exception when it is
 * neither. */
BT_HIDDEN PyObject *bt_slot_literal(const char *text, const BtEnum *e);

#endif
