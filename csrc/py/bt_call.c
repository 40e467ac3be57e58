/* bt_call.c - the libffi frame: ffi_cif, ffi_call through the guard, the return value. */
#include "bt_call.h"

#include "bt_numpy.h"

#include "bt_fntype.h"
#include "bt_from_c.h"
#include "bt_guard.h"
#include "bt_record.h"

#include <stdlib.h>
#include <string.h>

/* A returned function pointer's C type into call->ret_fntype. 0 or -1. */
static int ret_fntype(BtCall *call, const BtOverload *ov, BtArena *arena)
{
    const BtCallbackType *cb = bt_fntype_of(ov, &ov->decl->ret);
    BtBuf b;

    bt_buf_init(&b);
    if (cb)
        bt_fntype_put(&b, ov, cb->sig, "");
    call->ret_fntype = cb && !b.failed ? bt_arena_strdup(arena, bt_buf_str(&b)) : NULL;
    bt_buf_free(&b);
    if (!call->ret_fntype) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

int bt_call_prepare(BtState *st, BtCall *call, const BtOverload *ov, const char *symbol,
                    BtArena *arena)
{
    const BtDecl *d = ov->decl;
    int i;

    if (d->n_params > BT_MAX_PARAMS) {
        PyErr_Format(st->BindError, "%s has %d parameters; bindthem binds at most %d",
                     ov->signature, d->n_params, BT_MAX_PARAMS);
        return -1;
    }
    memset(call, 0, sizeof *call);
    call->n_c = d->n_params;
    call->ret = ov->ret;
    call->ret_string = (uint8_t)d->ret.is_string;
    call->signature = bt_arena_strdup(arena, ov->signature);
    call->symbol = symbol;
    call->slots = bt_arena_alloc(arena, sizeof(BtArgSlot) * (size_t)(d->n_params + 1));
    call->order = bt_arena_alloc(arena, (size_t)d->n_params + 1);
    if (!call->slots || !call->order || !call->signature) {
        PyErr_NoMemory();
        return -1;
    }
    if (d->ret.handle_ref) { /* the pointer, as an int: bt_handle_invoke makes it a Handle */
        _Static_assert(sizeof(unsigned long) == sizeof(void *), "a pointer is an unsigned long");
        call->ret = BT_ULONG;
        call->handles = 1;
    }
    if (d->ret.callback_ref && ret_fntype(call, ov, arena) < 0)
        return -1;
    if (bt_slot_build(call->slots, call->order, &call->n_py, ov, arena) < 0 ||
        bt_record_return(call, ov, arena) < 0)
        return -1;
    for (i = 0; i < call->n_py; i++)
        if (call->slots[i].kind == 'h' || call->slots[i].kind == 'v')
            call->handles = 1;
    return 0;
}

/* Whether bt_slot_store_fast may take scalar slot s's arguments: not a C
 * string, an enum that is no range, a 2-byte or long double float, a long
 * double complex. */
static int fast_scalar(const BtArgSlot *s)
{
    switch (s->kind) {
    case 's':
    case 'e': return 0;
    case 'f': return s->size == 4 || s->size == 8;
    case 'c': return s->size == 8 || s->size == 16;
    default: return 1;
    }
}

/* The direct call's word of each slot and of its size parameters, and
 * whether the fused entry takes the call (bt_call.h). */
static void plan_words(BtCall *call)
{
    int i;

    call->fused = 1;
    for (i = 0; i < call->n_py; i++) {
        BtArgSlot *s = &call->slots[i];
        s->word = call->direct.pos[s->cidx];
        s->size_word = BT_DIRECT_WORDS; /* the scratch word */
        s->max_1d = bt_slot_max_1d(s);
        if (s->is_array) {
            int j;
            for (j = 0; j < s->n_sizes; j++)
                s->sizes[j].word = call->direct.pos[s->sizes[j].cidx];
            if (s->n_sizes == 1)
                s->size_word = s->sizes->word;
            s->two_d = s->n_sizes == 2 && s->sizes[0].axis == 0 && s->sizes[1].axis == 1;
        } else if (!fast_scalar(s)) {
            call->fused = 0;
        }
        if (s->kind == 'k')
            call->fused = 0; /* a callback: bt_callback_invoke */
        if (bt_slot_is_record(s) || s->n_fixed)
            call->fused = 0; /* a record: bt_record_store; a fixed shape: bt_slot_fixed_check */
    }
    if (call->handles) /* held around the call: bt_handle_invoke */
        call->fused = 0;
}

int bt_call_param_is_ptr(const BtOverload *ov, int i)
{
    const BtParam *p = &ov->decl->params[i];

    return p->t.is_array || p->t.is_string || p->t.handle_ref || p->t.is_voidp ||
           p->t.callback_ref || p->is_ref ||
           (ov->notes && ov->notes->params[i].role >= BT_ROLE_HIDDEN_REF);
}

int bt_call_prepare_frame(BtState *st, BtCall *call, const BtOverload *ov, void *fn, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    int is_ptr[BT_MAX_PARAMS];
    ffi_type *rtype;
    ffi_status status;
    int i, byval, ret_ptr = call->ret_string || d->ret.handle_ref; /* a C string, a handle */

    call->fn = (void (*)(void))fn;
    call->atypes = bt_arena_alloc(arena, sizeof(ffi_type *) * (size_t)(d->n_params + 1));
    call->stats = bt_arena_alloc(arena, sizeof *call->stats); /* zeroed */
    if (!call->atypes || !call->stats) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < d->n_params; i++)
        is_ptr[i] = bt_call_param_is_ptr(ov, i);
    for (i = 0; i < d->n_params; i++)
        call->atypes[i] = is_ptr[i] ? &ffi_type_pointer : bt_type_ffi(ov->ptypes[i]);
    rtype = ret_ptr ? &ffi_type_pointer : bt_type_ffi(ov->ret);
    byval = bt_record_ffi_types(call, call->atypes, &rtype); /* structs by value: libffi only */
    status = ffi_prep_cif(&call->cif, FFI_DEFAULT_ABI, (unsigned)d->n_params, rtype, call->atypes);
    if (status != FFI_OK) {
        PyErr_Format(st->BindError, "libffi cannot prepare a call to %s (ffi_status %d)",
                     ov->signature, (int)status);
        return -1;
    }
    /* a pointer returns as a 64-bit integer does (rax, x0) */
    if (!byval && !ov->notes &&
        bt_direct_plan(&call->direct, ov->ptypes, is_ptr, d->n_params,
                       ret_ptr ? BT_ULONG : ov->ret)) {
        call->site = bt_guard_site(call->direct.variant);
        plan_words(call);
    }
    return 0;
}

/* Argument name i of names, for messages (borrowed). */
static PyObject *arg_name(PyObject *names, int i) { return PyTuple_GET_ITEM(names, i); }

/* bt_slot_walk's reader: ndarray argument i as bt_slot reads it. */
static inline BT_ALWAYS_INLINE int ndarray_arg(void *ctx, PyObject *const *args, int i,
                                               BtArrayArg *arr)
{
    PyArrayObject *a = (PyArrayObject *)args[i];

    (void)ctx;
    arr->addr = (uint64_t)(uintptr_t)PyArray_DATA(a);
    arr->flags = PyArray_FLAGS(a);
    arr->ndim = PyArray_NDIM(a);
    arr->dims = (const Py_ssize_t *)PyArray_DIMS(a);
    arr->via = NULL;
    return 0;
}

/* A returned C string: a str, its UTF-8 decoded with surrogateescape (a
 * byte that is no UTF-8 becomes a lone surrogate, so that any bytes come
 * back through .encode("utf-8", "surrogateescape")); None for NULL. The
 * string stays the callee's: nothing is freed. */
static PyObject *string_return(const BtValue *r)
{
    const char *s = (const char *)(uintptr_t)r->u64;

    if (!s)
        Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "surrogateescape");
}

/* New reference: the long double at r as a numpy.longdouble, with all
 * its precision (a returned long double is one: bt_types.h's pyret). */
static BT_COLD PyObject *long_double_of(const BtValue *r)
{
    PyArray_Descr *d = PyArray_DescrFromType(NPY_LONGDOUBLE);
    PyObject *o = d ? PyArray_Scalar((void *)r->bytes, d, NULL) : NULL;

    Py_XDECREF(d);
    return o;
}

/* The return value, as libffi left it: integers widened to ffi_arg (read
 * back at the declared width), floats and complexes in place (a long
 * double as a numpy.longdouble), a pointer (a C string) whole. */
static inline BT_ALWAYS_INLINE PyObject *value_of(BtTypeId t, int is_string, const BtValue *r)
{
    const BtType *ty;
    int shift;
    const float *f = (const float *)r->bytes;
    const double *d = (const double *)r->bytes;

    if (t == BT_VOID) /* most kernels: no look-up */
        Py_RETURN_NONE;
    if (is_string)
        return string_return(r);
    ty = bt_type(t);
    shift = 64 - 8 * (int)ty->size;
    switch (ty->kind) {
    case 'b': return PyBool_FromLong((uint8_t)r->u64 != 0);
    case 'u': return PyLong_FromUnsignedLongLong(r->u64 << shift >> shift);
    case 'i': return PyLong_FromLongLong((int64_t)(r->u64 << shift) >> shift);
    case 'f':
        if (ty->size == sizeof(long double)) /* a numpy.longdouble: a float would round it */
            return long_double_of(r);
        return PyFloat_FromDouble(ty->size == 4 ? f[0] : d[0]);
    default: /* 'c' */
        return ty->size == 8 ? PyComplex_FromDoubles(f[0], f[1])
                             : PyComplex_FromDoubles(d[0], d[1]);
    }
}

/* New reference: a returned function pointer r as a bindthem.FunctionPointer
 * of call's return type (None for NULL). */
static BT_COLD PyObject *function_pointer(const BtCall *call, const BtValue *r)
{
    PyObject *argv[2] = {PyLong_FromUnsignedLongLong(r->u64),
                         PyUnicode_FromString(call->ret_fntype)},
             *p = argv[0] && argv[1] ? bt_from_c_call("function_pointer", argv, 2) : NULL;

    Py_XDECREF(argv[0]);
    Py_XDECREF(argv[1]);
    return p;
}

static PyObject *convert_return(const BtCall *call, const BtValue *r)
{
    if (call->ret_fntype)
        return function_pointer(call, r);
    return value_of(call->ret, call->ret_string, r);
}

PyObject *bt_call_value(BtTypeId t, int is_string, const BtValue *r)
{
    return value_of(t, is_string, r);
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

/* The kernel called with the arguments stored in out: directly on its
 * words (the direct plan's), else through ffi_call on its value pointers;
 * the GIL released as opts says for arrays of `total` elements. The
 * result, or NULL; a returned struct into ret instead (NULL: none;
 * libffi only), with None. Inlined into each fast path, where out->kind
 * and ret are constants (invoke_temps passes either). */
static inline BT_ALWAYS_INLINE PyObject *run_kernel(const BtCall *call, const BtCallOpts *opts,
                                                    npy_intp total, const BtArgOut *out,
                                                    const char *fname, void *ret)
{
    BtValue rv;
    char what[512];
    int thrown, release = bt_call_releases_gil(opts, total);
    PyThreadState *ts = release ? PyEval_SaveThread() : NULL;

    rv.u64 = 0;
    if (out->kind == BT_OUT_WORDS)
        thrown = call->site(&call->direct, call->fn, &rv, out->base, what, sizeof what);
    else
        thrown = bt_guard_call((ffi_cif *)&call->cif, call->fn, ret ? ret : (void *)&rv, out->ptrs,
                               what, sizeof what);
    if (release)
        PyEval_RestoreThread(ts);
    if (thrown)
        return kernel_threw(thrown, what, fname);
    return convert_return(call, &rv);
}

/* The rest of a call with aligned temporaries (below). */
static BT_COLD PyObject *invoke_temps(const BtCall *call, PyObject *const *args, int k,
                                      const char *fname, PyObject *names, const BtCallOpts *opts,
                                      npy_intp total, BtArgOut out, void *ret);

/* The call: the arguments stored into out by the slot layer's walk
 * (bt_slot_walk), then the kernel (a returned struct into ret: run_kernel).
 * Inlined into invoke_direct and invoke_ffi, each with its own constant
 * out->kind and ret. */
static inline BT_ALWAYS_INLINE PyObject *invoke(const BtCall *call, PyObject *const *args,
                                                const char *fname, PyObject *names,
                                                const BtCallOpts *opts, const BtArgOut *out,
                                                void *ret)
{
    BtArgSource src = {args, ndarray_arg, NULL, NULL, fname, names};
    Py_ssize_t total = 0;
    int k = 0, r = bt_slot_walk(call->slots, call->order, call->n_py, &k, &src, out, &total);

    if (r) /* -1, or 1: unaligned, the rest with temporaries */
        return r < 0 ? NULL : invoke_temps(call, args, k, fname, names, opts, total, *out, ret);
    return run_kernel(call, opts, total, out, fname, ret);
}

/* The libffi call: every argument into its BtValue, then ffi_call (a
 * returned struct into ret). */
static inline BT_ALWAYS_INLINE PyObject *invoke_ffi_into(const BtCall *call, PyObject *const *args,
                                                         const char *fname, PyObject *names,
                                                         const BtCallOpts *opts, void *ret)
{
    BtValue vals[BT_MAX_PARAMS];
    void *avalues[BT_MAX_PARAMS];
    const BtArgOut out = {BT_OUT_VALUES, vals, NULL, avalues};

    return invoke(call, args, fname, names, opts, &out, ret);
}

static PyObject *invoke_ffi(const BtCall *call, PyObject *const *args, const char *fname,
                            PyObject *names, const BtCallOpts *opts)
{
    return invoke_ffi_into(call, args, fname, names, opts, NULL);
}

/* A call that returns a struct (libffi's): its record made first (no
 * Python object is made between the arguments' checks and the kernel),
 * libffi's return written into it, then the numpy.void of it. */
static BT_COLD PyObject *invoke_record(const BtCall *call, PyObject *const *args, const char *fname,
                                       PyObject *names, const BtCallOpts *opts)
{
    void *data;
    PyObject *rec = bt_record_result_new(call->ret_rec, &data), *r;

    if (!rec)
        return NULL;
    r = invoke_ffi_into(call, args, fname, names, opts, data);
    if (!r) {
        Py_DECREF(rec);
        return NULL;
    }
    Py_DECREF(r); /* None */
    return bt_record_result(rec);
}

PyObject *bt_call_words_released(const BtCall *call, Py_ssize_t total, const uint64_t *w,
                                 const char *fname)
{
    const BtCallOpts opts = {BT_GIL_RELEASE, 0, 0};
    const BtArgOut out = {BT_OUT_WORDS, (void *)w, call->direct.pos, NULL};

    return run_kernel(call, &opts, total, &out, fname, NULL);
}

PyObject *bt_call_threw(int kind, const char *what, const char *fname)
{
    return kernel_threw(kind, what, fname);
}

PyObject *bt_call_return(const BtCall *call, const BtValue *r) { return convert_return(call, r); }

/* The direct call: each argument straight into the word(s) of its register
 * or stack slot (call->direct.pos), no BtValue or avalues. Inlined into
 * bt_call_invoke: the common call has one frame less. */
static inline BT_ALWAYS_INLINE PyObject *invoke_direct(const BtCall *call, PyObject *const *args,
                                                       const char *fname, PyObject *names,
                                                       const BtCallOpts *opts)
{
    uint64_t w[BT_DIRECT_WORDS];
    const BtArgOut out = {BT_OUT_WORDS, w, call->direct.pos, NULL};

    return invoke(call, args, fname, names, opts, &out, NULL);
}

/* ================= temporaries (bt_call.h) =================
 *
 * The general path enters them where its walk stopped, at the first array
 * that lacks only alignment or C-contiguity; the scalars (converted first:
 * bt_slot_walk) and the arrays before it are already stored. The fused
 * entry takes such arrays itself where their temporaries fit BT_TEMP_SMALL
 * (bt_call_fused_temp). The GIL is held while temporaries are filled and
 * copied back. */

/* The elements of array a to (gather) or from the C-ordered buffer buf,
 * one at a time in C order, by a's strides. */
static void strided_copy(PyArrayObject *a, char *buf, int gather)
{
    const npy_intp *dims = PyArray_DIMS(a), *strides = PyArray_STRIDES(a);
    npy_intp idx[NPY_MAXDIMS] = {0}, n = PyArray_SIZE(a), e;
    size_t item = (size_t)PyArray_ITEMSIZE(a);
    char *p = PyArray_BYTES(a);
    int nd = PyArray_NDIM(a), k;

    for (e = 0; e < n; e++, buf += item) {
        if (gather)
            memcpy(buf, p, item);
        else
            memcpy(p, buf, item);
        for (k = nd - 1; k >= 0; k--) { /* the next element's address: an odometer */
            if (++idx[k] < dims[k]) {
                p += strides[k];
                break;
            }
            p -= strides[k] * (dims[k] - 1);
            idx[k] = 0;
        }
    }
}

/* memcpy, called: the cold code around it would inline it as `rep movsb`,
 * which is slower than the C library's memcpy for the small arrays that
 * most temporaries hold. */
static BT_NOINLINE BT_HOT void copy_bytes(void *to, const void *from, size_t n)
{
    memcpy(to, from, n);
}

/* The bytes of array a's elements (PyArray_NBYTES without its call into NumPy). */
static size_t nbytes_of(PyArrayObject *a)
{
    return (size_t)bt_slot_elements(PyArray_NDIM(a), PyArray_DIMS(a)) * (size_t)PyArray_ITEMSIZE(a);
}

/* A temporary of array a (argument i): an aligned C-contiguous copy of its
 * elements, recorded in ts; from ts's own bytes while they last, else
 * malloc'd (NULL when small_only). NULL with MemoryError when that fails. */
static void *temp_take(BtTemps *ts, PyArrayObject *a, int i, int small_only)
{
    BtTemp *t = &ts->t[ts->n];
    size_t n = nbytes_of(a);
    size_t room = n ? (n + BT_TEMP_ALIGN - 1) / BT_TEMP_ALIGN * BT_TEMP_ALIGN : BT_TEMP_ALIGN;

    t->heap = room > BT_TEMP_SMALL - ts->used;
    if (t->heap && small_only)
        return NULL;
    t->tmp = t->heap ? aligned_alloc(BT_TEMP_ALIGN, room) : ts->small + ts->used;
    if (!t->tmp) {
        PyErr_NoMemory();
        return NULL;
    }
    ts->used += t->heap ? 0 : room;
    t->a = a;
    t->data = PyArray_DATA(a);
    t->nbytes = n;
    t->arg = i;
    t->strided = !PyArray_IS_C_CONTIGUOUS(a);
    if (t->strided)
        strided_copy(a, t->tmp, 1);
    else
        copy_bytes(t->tmp, t->data, n);
    ts->n++;
    return t->tmp;
}

/* bt_slot_walk's unaligned(): temp_take of ndarray argument i into
 * arr->addr, in the BtTemps ctx; -1 with MemoryError. */
static int temp_new(void *ctx, PyObject *const *args, int i, BtArrayArg *arr)
{
    void *tmp = temp_take(ctx, (PyArrayObject *)args[i], i, 0);

    if (!tmp)
        return -1;
    arr->addr = (uint64_t)(uintptr_t)tmp;
    return 0;
}

void *bt_call_fused_temp(BtTemps *ts, const BtArgSlot *s, PyArrayObject *a, int i)
{
    if (!bt_slot_copy_fixes(s, PyArray_FLAGS(a)))
        return NULL; /* lacks more than alignment and C-contiguity */
    return temp_take(ts, a, i, 1);
}

/* The bytes array a's elements lie in: [*lo, *hi), empty for no elements. */
static void extent(PyArrayObject *a, const char **lo, const char **hi)
{
    const char *p = PyArray_BYTES(a);
    npy_intp down = 0, up = PyArray_ITEMSIZE(a);

    for (int k = 0; k < PyArray_NDIM(a); k++) {
        npy_intp span = PyArray_STRIDES(a)[k] * (PyArray_DIMS(a)[k] - 1);
        if (PyArray_DIMS(a)[k] == 0)
            up = down = 0;
        if (PyArray_DIMS(a)[k] == 0)
            break;
        if (span < 0)
            down += span;
        else
            up += span;
    }
    *lo = p + down;
    *hi = p + up;
}

/* A ValueError when a temporary stands for memory that another array
 * argument also covers (their extents meet) and the kernel writes either of
 * them: through the copy, one's writes would no longer show in the other.
 * Returns 0 or -1. */
static int temps_overlap(const BtCall *call, PyObject *const *args, const BtTemps *ts,
                         const char *fname, PyObject *names)
{
    const char *lo, *hi, *blo, *bhi;
    int j, n;

    for (n = 0; n < ts->n; n++) {
        const BtTemp *t = &ts->t[n];
        const BtArgSlot *s = &call->slots[t->arg];
        int seen = 0; /* its extent, read at the first other array (most calls have none) */
        for (j = 0; j < call->n_py; j++) {
            const BtArgSlot *o = &call->slots[j];
            PyArrayObject *b = (PyArrayObject *)args[j];
            if (j == t->arg || !o->is_array || !b || !PyArray_Check(b) ||
                (s->is_const && o->is_const)) /* a record slot may take a numpy.void */
                continue;
            if (!seen++)
                extent(t->a, &lo, &hi);
            extent(b, &blo, &bhi);
            if (lo == hi || blo == bhi || blo >= hi || lo >= bhi)
                continue;
            PyErr_Format(PyExc_ValueError,
                         "%s(): argument '%U' (position %d) is %s array that shares memory with "
                         "argument '%U' (position %d), and the kernel writes %s: bindthem "
                         "passes such an array as an aligned C-contiguous copy, which would "
                         "change what the kernel sees; pass arrays that do not share memory "
                         "(a copy of one of them)",
                         fname, arg_name(names, t->arg), t->arg + 1,
                         t->strided ? "a non-C-contiguous" : "an unaligned", arg_name(names, j),
                         j + 1,
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
static PyObject *temps_finish(const BtCall *call, BtTemps *ts, PyObject *r, int ran,
                              const char *fname, PyObject *names)
{
    int n, back = 0, strided = 0;

    for (n = 0; n < ts->n; n++) {
        BtTemp *t = &ts->t[n];
        strided += t->strided;
        if (ran && !call->slots[t->arg].is_const) {
            /* the caller's buffer is the one copied, unless something moved it meanwhile (a
             * resize from another thread while the kernel ran without the GIL) */
            if (PyArray_DATA(t->a) == t->data && nbytes_of(t->a) == t->nbytes) {
                if (t->strided)
                    strided_copy(t->a, t->tmp, 0);
                else
                    copy_bytes(t->data, t->tmp, t->nbytes);
                back++;
            } else if (r) {
                Py_CLEAR(r);
                PyErr_Format(PyExc_RuntimeError,
                             "%s(): argument '%U' was reallocated while the kernel ran on its "
                             "aligned copy; the kernel's writes to it are lost",
                             fname, arg_name(names, t->arg));
            }
        }
        if (t->heap)
            free(t->tmp);
    }
    if (ran) { /* each counter a locked add: only those that change */
        if (ts->n > strided)
            bt_call_count(&call->stats->aligned_copies, ts->n - strided);
        if (strided)
            bt_call_count(&call->stats->layout_copies, strided);
        if (back)
            bt_call_count(&call->stats->copy_backs, back);
    }
    return r;
}

/* The rest of a call from position k of call->order on (arrays only),
 * where argument order[k] lacks only alignment: the walk goes on with
 * temp_new for each array that lacks only alignment, the others as they
 * are; then the overlap check, the kernel, and temps_finish. */
static BT_COLD PyObject *invoke_temps(const BtCall *call, PyObject *const *args, int k,
                                      const char *fname, PyObject *names, const BtCallOpts *opts,
                                      npy_intp total, BtArgOut out, void *ret)
{
    BtTemps ts;
    BtArgSource src = {args, ndarray_arg, temp_new, &ts, fname, names};
    PyObject *r = NULL;
    int ran = 0;

    ts.n = 0;
    ts.used = 0;
    if (bt_slot_walk(call->slots, call->order, call->n_py, &k, &src, &out, &total) < 0 ||
        temps_overlap(call, args, &ts, fname, names) < 0)
        goto done;
    ran = 1;
    r = run_kernel(call, opts, total, &out, fname, ret);
done:
    return temps_finish(call, &ts, r, ran, fname, names);
}

PyObject *bt_call_fused_temps_run(const BtCall *call, PyObject *const *args, BtTemps *ts, int gil,
                                  Py_ssize_t total, const uint64_t *w, const char *fname,
                                  PyObject *names)
{
    PyObject *r = NULL;
    /* one argument: no other array to share its memory */
    int ran = call->n_py == 1 || temps_overlap(call, args, ts, fname, names) == 0;

    if (ran)
        r = bt_call_words(call, gil, total, w, fname);
    return temps_finish(call, ts, r, ran, fname, names);
}

PyObject *bt_call_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                         PyObject *names, const BtCallOpts *opts)
{
    _Static_assert(sizeof(npy_intp) == sizeof(Py_ssize_t), "CPU calls pass NumPy's dims");
    _Static_assert(sizeof(ffi_arg) == 8 && sizeof(BtValue) >= sizeof(ffi_arg), "returns fit");

    if (call->direct.variant && !opts->ffi)
        return invoke_direct(call, args, fname, names, opts);
    if (call->ret_rec) /* never direct */
        return invoke_record(call, args, fname, names, opts);
    return invoke_ffi(call, args, fname, names, opts);
}
