/* bt_call.c - the libffi frame: ffi_cif, ffi_call through the guard, the return value. */
#include "bt_call.h"

#include "bt_numpy.h"

#include "bt_guard.h"

#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define BT_ALWAYS_INLINE __attribute__((always_inline))
#else
#define BT_ALWAYS_INLINE
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
    if (!call->atypes) {
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
 * into each path, where words or avalues is a constant. */
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

/* The libffi call: every argument into its BtValue through the slots,
 * then ffi_call. */
static PyObject *invoke_ffi(const BtCall *call, PyObject *const *args, const char *fname,
                            PyObject *names, const BtCallOpts *opts)
{
    BtValue vals[BT_MAX_PARAMS];
    void *avalues[BT_MAX_PARAMS];
    npy_intp total = 0;
    int i, k;

    for (k = 0; k < call->n_py; k++) { /* scalars, then arrays: see BtCall.order */
        const BtArgSlot *s = &call->slots[i = call->order[k]];
        PyObject *o = args[i];
        avalues[s->cidx] = &vals[s->cidx];
        if (s->is_array) {
            PyArrayObject *a = (PyArrayObject *)o;
            BtArrayArg arr;
            arr.addr = (uint64_t)(uintptr_t)PyArray_DATA(a);
            arr.flags = PyArray_FLAGS(a);
            arr.ndim = PyArray_NDIM(a);
            arr.dims = (const Py_ssize_t *)PyArray_DIMS(a);
            arr.via = NULL;
            if (bt_slot_store_array(s, &arr, vals, sizeof vals[0], avalues, fname,
                                    arg_name(names, i), i) < 0)
                return NULL;
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

/* Array argument i into the words: the same checks and messages as
 * bt_slot_store_array (the refusal and the size checks are its own
 * functions), its address and sizes straight into their words. Returns 0
 * or -1. */
static int put_array(const BtCall *call, int i, PyArrayObject *a, uint64_t *w, npy_intp *total,
                     const char *fname, PyObject *names)
{
    const BtArgSlot *s = &call->slots[i];
    const BtSizeParam *z = s->sizes;
    const uint8_t *pos = call->direct.pos;
    int nd = PyArray_NDIM(a), flags = PyArray_FLAGS(a);
    const npy_intp *dims = PyArray_DIMS(a);
    BtArrayArg arr;

    if ((flags & s->need) != s->need) {
        arr.addr = (uint64_t)(uintptr_t)PyArray_DATA(a);
        arr.flags = flags;
        arr.ndim = nd;
        arr.dims = (const Py_ssize_t *)dims;
        arr.via = NULL;
        return bt_slot_array_refused(s, &arr, fname, arg_name(names, i), i);
    }
    w[pos[s->cidx]] = (uint64_t)(uintptr_t)PyArray_DATA(a);
    *total += nd == 1 ? dims[0] : PyArray_SIZE(a);
    if (s->n_sizes == 0)
        return 0;
    /* the common one: a single size, in range */
    if (s->n_sizes == 1 && nd >= s->min_ndim && (uint64_t)dims[z->axis] <= z->limit) {
        w[pos[z->cidx]] = (uint64_t)dims[z->axis];
        return 0;
    }
    return put_sizes(s, pos, a, w, fname, arg_name(names, i));
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
            if (put_array(call, i, (PyArrayObject *)o, w, &total, fname, names) < 0)
                return NULL;
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
