/* bt_call.c - the libffi frame: ffi_cif, ffi_call through the guard, the return value. */
#include "bt_call.h"

#include "bt_numpy.h"

#include "bt_guard.h"

#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define BT_ALWAYS_INLINE __attribute__((always_inline))
#define BT_COLD __attribute__((cold, noinline))
#else
#define BT_ALWAYS_INLINE
#define BT_COLD
#endif

int bt_call_prepare(BtState *st, BtCall *call, const BtOverload *ov, void *fn, const char *symbol,
                    BtArena *arena)
{
    const BtDecl *d = ov->decl;
    int is_ptr[BT_MAX_PARAMS];
    ffi_status status;
    int i, k;

    if (d->n_params > BT_MAX_PARAMS) {
        PyErr_Format(st->BindError, "%s has %d parameters; bindthem binds at most %d",
                     ov->signature, d->n_params, BT_MAX_PARAMS);
        return -1;
    }
    memset(call, 0, sizeof *call);
    call->fn = (void (*)(void))fn;
    call->n_c = d->n_params;
    call->ret = ov->ret;
    call->signature = bt_arena_strdup(arena, ov->signature);
    call->symbol = symbol;
    call->slots = bt_arena_alloc(arena, sizeof(BtArgSlot) * (size_t)(d->n_params + 1));
    if (!call->slots || !call->signature) {
        PyErr_NoMemory();
        return -1;
    }
    if (bt_slot_build(call->slots, &call->n_py, ov, arena) < 0)
        return -1;
    call->order = bt_arena_alloc(arena, (size_t)call->n_py + 1);
    if (!call->order) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0, k = 0; i < call->n_py; i++)
        if (!call->slots[i].is_array)
            call->order[k++] = (uint8_t)i;
    for (i = 0; i < call->n_py; i++)
        if (call->slots[i].is_array)
            call->order[k++] = (uint8_t)i;
    if (!fn) /* a kernel: launched, never called through libffi */
        return 0;
    call->atypes = bt_arena_alloc(arena, sizeof(ffi_type *) * (size_t)(d->n_params + 1));
    call->stats = bt_arena_alloc(arena, sizeof *call->stats); /* zeroed */
    if (!call->atypes || !call->stats) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < d->n_params; i++)
        call->atypes[i] = d->params[i].t.is_array ? &ffi_type_pointer : bt_type_ffi(ov->ptypes[i]);
    status = ffi_prep_cif(&call->cif, FFI_DEFAULT_ABI, (unsigned)d->n_params, bt_type_ffi(ov->ret),
                          call->atypes);
    if (status != FFI_OK) {
        PyErr_Format(st->BindError, "libffi cannot prepare a call to %s (ffi_status %d)",
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

/* An ndarray argument as bt_slot reads it. */
static inline BT_ALWAYS_INLINE BtArrayArg ndarray_arg(PyArrayObject *a)
{
    BtArrayArg arr;
    arr.addr = (uint64_t)(uintptr_t)PyArray_DATA(a);
    arr.flags = PyArray_FLAGS(a);
    arr.ndim = PyArray_NDIM(a);
    arr.dims = (const Py_ssize_t *)PyArray_DIMS(a);
    arr.via = NULL;
    return arr;
}

/* The return value, as libffi left it: integers widened to ffi_arg (read
 * back at the declared width), floats and complexes in place. */
static PyObject *convert_return(const BtValue *r, BtTypeId t)
{
    const BtType *ty;
    int shift;
    const float *f = (const float *)r->bytes;
    const double *d = (const double *)r->bytes;

    if (t == BT_VOID) /* most kernels: no look-up */
        Py_RETURN_NONE;
    ty = bt_type(t);
    shift = 64 - 8 * (int)ty->size;
    switch (ty->kind) {
    case 'b': return PyBool_FromLong((uint8_t)r->u64 != 0);
    case 'u': return PyLong_FromUnsignedLongLong(r->u64 << shift >> shift);
    case 'i': return PyLong_FromLongLong((int64_t)(r->u64 << shift) >> shift);
    case 'f': return PyFloat_FromDouble(ty->size == 4 ? f[0] : d[0]);
    default: /* 'c' */
        return ty->size == 8 ? PyComplex_FromDoubles(f[0], f[1])
                             : PyComplex_FromDoubles(d[0], d[1]);
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

/* Whether a call whose arrays hold `total` elements releases the GIL. */
static int releases_gil(const BtCallOpts *opts, npy_intp total)
{
    if (opts->gil == BT_GIL_AUTO)
        return total >= BT_GIL_RELEASE_MIN;
    return opts->gil == BT_GIL_RELEASE;
}

/* The kernel called with the arguments stored: directly on words (the
 * direct plan's), else through ffi_call on avalues; the GIL released as
 * opts says for arrays of `total` elements. The result, or NULL. Inlined
 * into each fast path, where words or avalues is a constant (invoke_temps
 * passes either). */
static inline BT_ALWAYS_INLINE PyObject *run_kernel(const BtCall *call, const BtCallOpts *opts,
                                                    npy_intp total, void **avalues,
                                                    const uint64_t *words, const char *fname)
{
    BtValue rv;
    char what[512];
    int thrown, release = releases_gil(opts, total);
    PyThreadState *ts = release ? PyEval_SaveThread() : NULL;

    rv.u64 = 0;
    if (words)
        thrown = bt_guard_direct(&call->direct, call->fn, &rv, words, what, sizeof what);
    else
        thrown = bt_guard_call((ffi_cif *)&call->cif, call->fn, &rv, avalues, what, sizeof what);
    if (release)
        PyEval_RestoreThread(ts);
    if (thrown)
        return kernel_threw(thrown, what, fname);
    return convert_return(&rv, call->ret);
}

/* The rest of a call with aligned temporaries (below). */
static BT_COLD PyObject *invoke_temps(const BtCall *call, PyObject *const *args, int k,
                                      const char *fname, PyObject *names, const BtCallOpts *opts,
                                      npy_intp total, uint64_t *w, BtValue *vals, void **avalues);

/* The libffi call: every argument into its BtValue through the slots,
 * then ffi_call. */
static PyObject *invoke_ffi(const BtCall *call, PyObject *const *args, const char *fname,
                            PyObject *names, const BtCallOpts *opts)
{
    BtValue vals[BT_MAX_PARAMS];
    void *avalues[BT_MAX_PARAMS];
    npy_intp total = 0;
    int i, k, r;

    for (k = 0; k < call->n_py; k++) { /* scalars, then arrays: see BtCall.order */
        const BtArgSlot *s = &call->slots[i = call->order[k]];
        PyObject *o = args[i];
        avalues[s->cidx] = &vals[s->cidx];
        if (s->is_array) {
            PyArrayObject *a = (PyArrayObject *)o;
            BtArrayArg arr = ndarray_arg(a);
            r = bt_slot_store_array(s, &arr, vals, sizeof vals[0], avalues, fname,
                                    arg_name(names, i));
            if (r) /* -1, or 1: unaligned, the rest with temporaries */
                return r < 0 ? NULL
                             : invoke_temps(call, args, k, fname, names, opts, total, NULL, vals,
                                            avalues);
            total += PyArray_SIZE(a);
            continue;
        }
        if (!o) { /* omitted: the default, converted at bind time */
            vals[s->cidx] = s->defval;
            continue;
        }
        if (bt_slot_store_scalar(&vals[s->cidx], s->type, o, fname, arg_name(names, i)) < 0)
            return NULL;
    }
    return run_kernel(call, opts, total, avalues, NULL, fname);
}

/* Words of a scalar of slot s, from its 16-byte storage. */
static void put_value(uint64_t *w, const BtArgSlot *s, const BtValue *v)
{
    memcpy(w, v->bytes, s->size > 8 ? 16 : 8);
}

/* Size parameters that are not the common one (several, too few
 * dimensions, out of range): bt_slot_store_sizes's checks and messages,
 * then the values into their words. Returns 0 or -1. */
static int put_sizes(const BtArgSlot *s, const uint8_t *pos, PyArrayObject *a, uint64_t *w,
                     const char *fname, PyObject *name)
{
    BtValue vals[BT_MAX_PARAMS];
    void *ptrs[BT_MAX_PARAMS];
    int j;

    if (bt_slot_store_sizes(s, PyArray_NDIM(a), (const Py_ssize_t *)PyArray_DIMS(a), vals,
                            sizeof vals[0], ptrs, fname, name) < 0)
        return -1;
    for (j = 0; j < s->n_sizes; j++)
        w[pos[s->sizes[j].cidx]] = vals[s->sizes[j].cidx].u64;
    return 0;
}

/* Array argument i's address (its data or an aligned temporary's) and
 * size parameters into the words, after its flags check. Returns 0 or -1. */
static inline BT_ALWAYS_INLINE int put_array_at(const BtCall *call, int i, PyArrayObject *a,
                                                uint64_t addr, uint64_t *w, const char *fname,
                                                PyObject *names)
{
    const BtArgSlot *s = &call->slots[i];
    const BtSizeParam *z = s->sizes;
    const uint8_t *pos = call->direct.pos;
    int nd = PyArray_NDIM(a);
    const npy_intp *dims = PyArray_DIMS(a);

    w[pos[s->cidx]] = addr;
    if (s->n_sizes == 0)
        return 0;
    /* the common one: a single size, in range */
    if (s->n_sizes == 1 && nd >= s->min_ndim && (uint64_t)dims[z->axis] <= z->limit) {
        w[pos[z->cidx]] = (uint64_t)dims[z->axis];
        return 0;
    }
    return put_sizes(s, pos, a, w, fname, arg_name(names, i));
}

/* Array argument i into the words: the same checks and messages as
 * bt_slot_store_array (the refusal and the size checks are its own
 * functions), its address and sizes straight into their words. Returns 0,
 * -1, or 1 (nothing stored) when the array lacks only alignment. */
static int put_array(const BtCall *call, int i, PyArrayObject *a, uint64_t *w, npy_intp *total,
                     const char *fname, PyObject *names)
{
    const BtArgSlot *s = &call->slots[i];
    int nd = PyArray_NDIM(a), flags = PyArray_FLAGS(a);
    const npy_intp *dims = PyArray_DIMS(a);
    BtArrayArg arr;

    if ((flags & s->need) != s->need) {
        if (bt_slot_unaligned_only(s, flags))
            return 1;
        arr = ndarray_arg(a);
        return bt_slot_array_refused(s, &arr, fname, arg_name(names, i));
    }
    *total += nd == 1 ? dims[0] : PyArray_SIZE(a);
    return put_array_at(call, i, a, (uint64_t)(uintptr_t)PyArray_DATA(a), w, fname, names);
}

/* ================= unaligned arrays: aligned temporaries =================
 *
 * Entered from a fast path's failed flags check, at the first array that
 * lacks only alignment; the scalars (converted first: BtCall.order) and
 * the arrays before it are already stored. Temporaries are malloc'd (64
 * bytes aligned), never Python objects, so no Python code runs between the
 * checks and the kernel here either; the GIL is held while they are
 * filled and copied back. */

enum { TEMP_ALIGN = 64 };

/* An array argument passed as an aligned temporary. */
typedef struct Temp {
    PyArrayObject *a; /* the caller's (args holds it) */
    char *data;       /* its data when copied */
    void *tmp;
    size_t nbytes;
    int arg;
} Temp;

typedef struct Temps {
    int n;
    Temp t[BT_MAX_PARAMS];
} Temps;

/* An aligned copy of C-contiguous array a (argument i), recorded in ts;
 * NULL with MemoryError. */
static void *temp_new(Temps *ts, PyArrayObject *a, int i)
{
    Temp *t = &ts->t[ts->n];
    size_t n = (size_t)PyArray_NBYTES(a);

    t->tmp = aligned_alloc(TEMP_ALIGN, (n / TEMP_ALIGN + 1) * TEMP_ALIGN);
    if (!t->tmp) {
        PyErr_NoMemory();
        return NULL;
    }
    t->a = a;
    t->data = PyArray_DATA(a);
    t->nbytes = n;
    t->arg = i;
    memcpy(t->tmp, t->data, n);
    ts->n++;
    return t->tmp;
}

/* A ValueError when a temporary stands for memory that another array
 * argument also covers and the kernel writes either of them: through the
 * copy, one's writes would no longer show in the other. Returns 0 or -1. */
static int temps_overlap(const BtCall *call, PyObject *const *args, const Temps *ts,
                         const char *fname, PyObject *names)
{
    int j, n;

    for (n = 0; n < ts->n; n++) {
        const Temp *t = &ts->t[n];
        const BtArgSlot *s = &call->slots[t->arg];
        for (j = 0; j < call->n_py; j++) {
            const BtArgSlot *o = &call->slots[j];
            PyArrayObject *b = (PyArrayObject *)args[j];
            const char *lo;
            if (j == t->arg || !o->is_array || !b || (s->is_const && o->is_const))
                continue;
            lo = PyArray_DATA(b); /* C-contiguous (checked): its bytes are one range */
            if (lo >= t->data + t->nbytes || t->data >= lo + PyArray_NBYTES(b))
                continue;
            PyErr_Format(PyExc_ValueError,
                         "%s(): argument '%U' (position %d) is an unaligned array that shares "
                         "memory with argument '%U' (position %d), and the kernel writes %s: "
                         "bindthem passes an unaligned array as an aligned copy, which would "
                         "change what the kernel sees; pass arrays that do not share memory, "
                         "or aligned views (of a buffer whose address is a multiple of the "
                         "dtype's alignment)",
                         fname, arg_name(names, t->arg), t->arg + 1, arg_name(names, j), j + 1,
                         !s->is_const && !o->is_const ? "both"
                         : !s->is_const               ? "the first"
                                                      : "the second");
            return -1;
        }
    }
    return 0;
}

/* After the kernel ran (ran) or a check refused the call: when it ran, each
 * temporary of a written parameter copied back into its caller's array
 * (also when the kernel threw: r NULL) and the copies counted; then every
 * temporary freed. Returns r, or NULL. */
static PyObject *temps_finish(const BtCall *call, Temps *ts, PyObject *r, int ran,
                              const char *fname, PyObject *names)
{
    int n, back = 0;

    for (n = 0; n < ts->n; n++) {
        Temp *t = &ts->t[n];
        if (ran && !call->slots[t->arg].is_const) {
            /* the caller's buffer is the one copied, unless something moved it meanwhile (a
             * resize from another thread while the kernel ran without the GIL) */
            if (PyArray_DATA(t->a) == t->data && (size_t)PyArray_NBYTES(t->a) >= t->nbytes) {
                memcpy(t->data, t->tmp, t->nbytes);
                back++;
            } else if (r) {
                Py_CLEAR(r);
                PyErr_Format(PyExc_RuntimeError,
                             "%s(): argument '%U' was reallocated while the kernel ran on its "
                             "aligned copy; the kernel's writes to it are lost",
                             fname, arg_name(names, t->arg));
            }
        }
        free(t->tmp);
    }
    if (ran) {
        bt_call_count(&call->stats->aligned_copies, ts->n);
        bt_call_count(&call->stats->copy_backs, back);
    }
    return r;
}

/* The rest of a call from position k of call->order on (arrays only),
 * where argument order[k] lacks only alignment: each array that lacks only
 * alignment passed as an aligned temporary, the others as they are; then
 * the overlap check, the kernel, and temps_finish. Into the direct call's
 * words w, or (w NULL) libffi's vals and avalues. */
static BT_COLD PyObject *invoke_temps(const BtCall *call, PyObject *const *args, int k,
                                      const char *fname, PyObject *names, const BtCallOpts *opts,
                                      npy_intp total, uint64_t *w, BtValue *vals, void **avalues)
{
    Temps ts;
    PyObject *r = NULL;
    int i, ran = 0;

    ts.n = 0;
    for (; k < call->n_py; k++) {
        const BtArgSlot *s = &call->slots[i = call->order[k]];
        PyArrayObject *a = (PyArrayObject *)args[i];
        BtArrayArg arr = ndarray_arg(a);
        if ((arr.flags & s->need) != s->need) {
            void *tmp;
            if (bt_slot_array_refused(s, &arr, fname, arg_name(names, i)) < 0)
                goto done;
            if (!(tmp = temp_new(&ts, a, i))) /* 1: it lacks only alignment */
                goto done;
            arr.addr = (uint64_t)(uintptr_t)tmp;
        }
        if (w) {
            if (put_array_at(call, i, a, arr.addr, w, fname, names) < 0)
                goto done;
        } else {
            avalues[s->cidx] = &vals[s->cidx];
            if (bt_slot_put_array(s, &arr, vals, sizeof vals[0], avalues, fname,
                                  arg_name(names, i)) < 0)
                goto done;
        }
        total += PyArray_SIZE(a);
    }
    if (temps_overlap(call, args, &ts, fname, names) < 0)
        goto done;
    ran = 1;
    r = run_kernel(call, opts, total, avalues, w, fname);
done:
    return temps_finish(call, &ts, r, ran, fname, names);
}

/* The direct call: each argument straight into the word(s) of its register
 * or stack slot (call->direct.pos), no BtValue or avalues on the common
 * path. */
static PyObject *invoke_direct(const BtCall *call, PyObject *const *args, const char *fname,
                               PyObject *names, const BtCallOpts *opts)
{
    uint64_t w[BT_DIRECT_WORDS];
    const uint8_t *pos = call->direct.pos;
    npy_intp total = 0;
    BtValue v;
    int i, k;

    for (k = 0; k < call->n_py; k++) { /* scalars, then arrays: see BtCall.order */
        const BtArgSlot *s = &call->slots[i = call->order[k]];
        PyObject *o = args[i];
        uint64_t *at = &w[pos[s->cidx]];
        if (s->is_array) {
            int r = put_array(call, i, (PyArrayObject *)o, w, &total, fname, names);
            if (r) /* -1, or 1: unaligned, the rest with temporaries */
                return r < 0
                           ? NULL
                           : invoke_temps(call, args, k, fname, names, opts, total, w, NULL, NULL);
        } else if (!o) { /* omitted: the default, converted at bind time */
            put_value(at, s, &s->defval);
        } else if (!bt_slot_store_fast(s, o, at)) {
            if (bt_slot_store_scalar(&v, s->type, o, fname, arg_name(names, i)) < 0)
                return NULL;
            put_value(at, s, &v);
        }
    }
    return run_kernel(call, opts, total, NULL, w, fname);
}

PyObject *bt_call_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                         PyObject *names, const BtCallOpts *opts)
{
    _Static_assert(sizeof(npy_intp) == sizeof(Py_ssize_t), "CPU calls pass NumPy's dims");
    _Static_assert(sizeof(ffi_arg) == 8 && sizeof(BtValue) >= sizeof(ffi_arg), "returns fit");

    if (call->direct.variant && !opts->ffi)
        return invoke_direct(call, args, fname, names, opts);
    return invoke_ffi(call, args, fname, names, opts);
}
