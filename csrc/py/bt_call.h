/* bt_call.h - the libffi frame of a CPU call: the ffi_cif, ffi_call through
 * the C++ guard, the return value.
 *
 * Everything that can be decided at bind time is: the ffi_cif and the
 * argument slots (bt_slot.h). A call stores each argument through its slot
 * into stack storage and calls, with no heap allocation. */
#ifndef BT_CALL_H
#define BT_CALL_H

#include "bt_state.h"

#include <ffi.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bt_direct.h"
#include "bt_guard.h"
#include "bt_numpy.h"
#include "bt_slot.h"

/* Release the GIL around a kernel whose arrays hold at least this many
 * elements in all; smaller calls keep it. Releasing and retaking it costs
 * ~20 ns uncontended (gauss_seidel with no work: 253 ns per call at 2000
 * elements, 271 ns at 2048), ~8% of a tiny call, while a kernel touching
 * 2048 elements already runs for microseconds. */
#define BT_GIL_RELEASE_MIN 2048

/* How a call treats the GIL: a Function's own (from its Library's
 * build/load arguments), overridden inside `with bindthem.options(...)`
 * (bt_opts.c). */
enum { BT_GIL_AUTO, BT_GIL_RELEASE, BT_GIL_KEEP }; /* by size (above), always, never */
typedef struct BtCallOpts {
    uint8_t gil;
    uint8_t copy_const; /* the option as given; it changes nothing (every array the call
                         * can take, it takes: bt_call.c) */
    uint8_t ffi;        /* call through libffi even where a direct call applies */
} BtCallOpts;

/* The copies an overload's calls made (Function.stats): C11 atomics,
 * added to relaxed, so that calls counting at once in threads of a
 * free-threaded build lose none (with the GIL they never race). */
typedef struct BtCallStats {
    _Atomic uint64_t aligned_copies; /* unaligned arrays passed as aligned temporaries */
    _Atomic uint64_t copy_backs;     /* of those, written ones copied back */
    _Atomic uint64_t const_copies;   /* 0: copy_const made such copies once; kept, as
                                      * Function.stats names it */
    _Atomic uint64_t layout_copies;  /* an annotated function's arrays copied to a layout it
                                      * takes (bt_note_call.h) */
    _Atomic uint64_t general;        /* calls the general path made (not the fused entry:
                                      * Function._general_calls) */
    _Atomic uint64_t quick;          /* of those, an annotated function's that its quick
                                      * call took (bt_note_quick.h: Function._quick_calls) */
} BtCallStats;

/* Whether a call whose arrays hold `total` elements releases the GIL
 * (opts->gil; BT_GIL_AUTO: BT_GIL_RELEASE_MIN elements or more). */
static inline int bt_call_releases_gil(const BtCallOpts *opts, Py_ssize_t total)
{
    if (opts->gil == BT_GIL_AUTO)
        return total >= BT_GIL_RELEASE_MIN;
    return opts->gil == BT_GIL_RELEASE;
}

static inline void bt_call_count(_Atomic uint64_t *counter, int n)
{
    atomic_fetch_add_explicit(counter, (uint64_t)n, memory_order_relaxed);
}

/* A prepared call frame for one overload. */
typedef struct BtCall {
    void (*fn)(void);
    ffi_cif cif;
    ffi_type **atypes;
    int n_c;          /* C parameters */
    int n_py;         /* Python parameters (C minus the size ones) */
    BtArgSlot *slots; /* n_py */
    BtTypeId ret;
    uint8_t ret_string; /* returns a C string (`const char *`): a str, or None for NULL */
    /* returns a function pointer: its C type, "int (*)(int)"; the value a
     * bindthem.FunctionPointer (None for NULL); else NULL */
    const char *ret_fntype;
    const char *signature;
    const char *symbol;
    BtDirect direct;    /* the call without libffi, where direct.variant != 0 */
    BtGuardSite site;   /* and its guarded call site (bt_guard_site) */
    uint8_t *order;     /* the slots in the order a call stores them (bt_slot_build) */
    BtCallStats *stats; /* a C function's (NULL for a kernel) */
    /* the fused entry applies (bt_call_fused_store): a direct call whose
     * slots are arrays with their size parameters, and scalars that
     * bt_slot_store_fast converts */
    uint8_t fused;
    /* handles (bt_handle_call.h): the call takes a handle or a `void *`
     * (slot kinds 'h', 'v') or returns a handle (ret is then the pointer's
     * integer type), and goes through bt_handle_invoke; never fused */
    uint8_t handles;
    uint8_t destroys;   /* it frees its handle argument (handles=): the call closes it */
    uint8_t ret_none;   /* a NULL handle returned gives None, not NullHandleError */
    PyObject *ret_type; /* a returned handle's HandleType (borrowed: the LibraryHandle holds
                         * it), or NULL */
    /* it returns a struct by value (bt_record.h): a numpy.void record, through libffi
     * (invoke_record), or NULL */
    struct BtRecord *ret_rec;
    /* callbacks (bt_callback.h): the plans of its function pointer
     * parameters (slot kind 'k'), or NULL; such a call goes through
     * bt_callback_invoke; never fused */
    const struct BtCallbacks *callbacks;
    const char *fntype; /* its own type, "double (*)(double)" (bt_fntype_put_overload): a
                         * Function passed as a callback must have the parameter's (CPU) */
    /* an annotated function (bt_note_call.h): its calls go through bt_note_invoke;
     * never direct, never fused; NULL for any other */
    const struct BtNoteCall *notes;
} BtCall;

/* Prepares call for overload ov (its symbol), allocating from arena: the
 * argument slots and their order (bt_slot_build), all a launched kernel
 * needs. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_call_prepare(BtState *st, BtCall *call, const BtOverload *ov, const char *symbol,
                              BtArena *arena);

/* The rest for a C function at fn (the CPU back end's BtBackend.prepare):
 * the ffi_cif and the direct-call plan. Returns 0, or -1 with an exception
 * set (BindError when libffi refuses the signature). */
BT_HIDDEN int bt_call_prepare_frame(BtState *st, BtCall *call, const BtOverload *ov, void *fn,
                                    BtArena *arena);

/* Whether C parameter i of ov travels as a pointer: an array, a C string,
 * a handle, a `void *`, a function pointer, a C++ reference, an annotated
 * scalar by pointer (bt_note.h). */
BT_HIDDEN int bt_call_param_is_ptr(const BtOverload *ov, int i);

/* Stores the arguments through the slot layer's walk (bt_slot_walk) and
 * calls: straight into the direct call's words where call->direct applies
 * and opts->ffi is off, else into BtValues for ffi_call. args are the n_py arguments in
 * order (NULL for an omitted one: the slot's default), already matched to
 * the overload by the dispatcher.
 * An array that lacks only alignment is passed as an aligned temporary
 * (allocated and freed by the call, counted in call->stats), copied back
 * into the caller's array after the kernel when the parameter is not
 * const, also when the kernel threw; a ValueError instead when such an
 * array shares memory with another array argument and either is written.
 * Aligned arrays take none of this: it is entered from the failed flags
 * check.
 * fname and names (tuple of str) are for messages; opts->gil decides the
 * GIL. New reference, or NULL. */
BT_HIDDEN PyObject *bt_call_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                                   PyObject *names, const BtCallOpts *opts);

/* bt_call_words' GIL-releasing way; what a kernel threw (BT_GUARD_*, its
 * what()) as the Python exception (NULL); and call's return value rvalue
 * (not void) as a new reference. Out of line: the fused entry's rarer ends. */
BT_HIDDEN PyObject *bt_call_words_released(const BtCall *call, Py_ssize_t total, const uint64_t *w,
                                           const char *fname);
BT_HIDDEN BT_COLD PyObject *bt_call_threw(int kind, const char *what, const char *fname);
BT_HIDDEN PyObject *bt_call_return(const BtCall *call, const BtValue *rvalue);

/* New reference: the Python value of a C value of type t as a return is
 * read (an integer at its width from the low bytes of v, a float, a
 * complex; None for void), or of a C string where is_string (a str, None
 * for NULL): what a callback's Python callable is passed (bt_callback.h). */
BT_HIDDEN PyObject *bt_call_value(BtTypeId t, int is_string, const BtValue *v);

/* ================= the fused entry =================
 *
 * A call whose arguments have the keys of the last call (the dispatcher's
 * memo, bt_dispatch.h) goes to that call's overload; when the overload is
 * `fused`, one pass over the arguments checks each one's key and stores it
 * into the direct call's words at the slot's precomputed position. Its
 * checks are bt_slot.h's per-argument checks, the ones bt_slot_walk makes
 * (an array's key, flags, rank and extents: BT_SLOT_ARRAY_HAS_KEY,
 * bt_slot_flags_ok, bt_slot_max_1d / BT_SLOT_SIZE_FITS / bt_slot_sizes_fit; a scalar's key and
 * quick conversion: bt_slot_scalar_has_key, bt_slot_store_fast; an omitted
 * one's: bt_slot_omitted_has_key, bt_slot_put_default), not copies of
 * them. Nothing it does runs Python code
 * or has an effect outside w, so any argument it does not take (another
 * key, an array that lacks a flag, a scalar out of the quick range) sends
 * the whole call to the general path (bt_call_invoke), which raises or
 * copies exactly as before. */

/* The words a fused call stores into: the direct call's, and a scratch
 * word at BT_DIRECT_WORDS (an array's size when it has no size parameter). */
#define BT_FUSED_WORDS (BT_DIRECT_WORDS + 1)

/* ================= temporaries: arrays a kernel cannot take as they are =================
 *
 * An array argument that lacks only alignment or C-contiguity (an unaligned
 * array, a strided view, a Fortran-ordered one) is passed as an aligned
 * C-contiguous temporary of its elements, copied back after the kernel
 * where the parameter is written (bt_call_invoke's way, bt_call.c). A
 * call's temporaries take BT_TEMP_SMALL bytes of its own frame (4 KiB:
 * four arrays of 64 complex doubles, eight of 64 doubles; a malloc and free
 * cost more than the copies of such arrays, bench_callgrind's "k1
 * unaligned"); larger ones are malloc'd.
 * Never Python objects, so no Python code runs between the checks and the
 * kernel. */
enum { BT_TEMP_ALIGN = 64, BT_TEMP_SMALL = 4096 };

/* An array argument passed as a temporary. */
typedef struct BtTemp {
    PyArrayObject *a; /* the caller's (args holds it) */
    char *data;       /* its data when copied */
    void *tmp;
    size_t nbytes; /* the temporary's: its elements, C order */
    int arg;
    int strided; /* not C-contiguous: its elements gathered, scattered back */
    int heap;    /* tmp is malloc'd (else in BtTemps.small) */
} BtTemp;

/* A call's temporaries (n, used 0 before the first). */
typedef struct BtTemps {
    int n;
    size_t used; /* of small */
    _Alignas(BT_TEMP_ALIGN) unsigned char small[BT_TEMP_SMALL];
    BtTemp t[BT_MAX_PARAMS];
} BtTemps;

/* The fused entry's temporaries (bt_function.c: the call that
 * bt_call_fused_store refused without them): an aligned C-contiguous copy
 * of array argument i of slot s in ts's own bytes, when it lacks only
 * alignment or C-contiguity (bt_slot_copy_fixes) and they have room; else
 * NULL (nothing raised: the general path takes the call, and copies what it
 * must). */
BT_HIDDEN BT_COLD void *bt_call_fused_temp(BtTemps *ts, const BtArgSlot *s, PyArrayObject *a,
                                           int i);
/* The kernel of a fused call whose words w hold temporaries ts: the
 * overlap check (a ValueError when a temporary's array shares memory with
 * another array argument and either is written), bt_call_words, then each
 * written temporary copied back and the copies counted in call->stats, as
 * bt_call_invoke does. New reference, or NULL. */
BT_HIDDEN BT_COLD PyObject *bt_call_fused_temps_run(const BtCall *call, PyObject *const *args,
                                                    BtTemps *ts, int gil, Py_ssize_t total,
                                                    const uint64_t *w, const char *fname,
                                                    PyObject *names);

/* How a fused call's arguments come (a constant at each caller): every
 * one given, args[n_py]; the first nargs given and the rest left out; or
 * args[n_py] with NULL for each one left out (a keyword call's binding). */
enum { BT_FUSED_ALL, BT_FUSED_PREFIX, BT_FUSED_NULLS };

/* Stores args (as `omitting` says, a BT_FUSED_*; one left out takes its
 * default) into w when every argument
 * has keys[i] (the memo's, read with its sequence lock held by the caller)
 * and passes its slot's checks; *total accumulates the arrays' elements.
 * With temps (a constant NULL at the fast callers), an array that lacks
 * only alignment or C-contiguity passes as its temporary
 * (bt_call_fused_temp). w has BT_FUSED_WORDS. Returns 1, or 0 (nothing
 * raised) when the general path must take the call. */
static inline BT_ALWAYS_INLINE int bt_call_fused_store(const BtCall *call, PyObject *const *args,
                                                       int nargs, const void *const *keys,
                                                       uint64_t *w, Py_ssize_t *total, int omitting,
                                                       BtTemps *temps)
{
    int i, n = call->n_py;

    for (i = 0; i < n; i++) {
        const BtArgSlot *s = &call->slots[i];
        const void *k = BT_FT_LOAD(&keys[i]);
        PyObject *o = omitting == BT_FUSED_PREFIX && i >= nargs ? NULL : args[i];
        if (omitting && !o) { /* its default, converted at bind time */
            if (!bt_slot_omitted_has_key(k))
                return 0;
            bt_slot_put_default(&w[s->word], s);
            continue;
        }
        if (s->is_array) {
            PyArrayObject *a = (PyArrayObject *)o;
            const Py_ssize_t *dims;
            void *data;
            int nd;
            if (!BT_SLOT_ARRAY_HAS_KEY(o, k))
                return 0;
            data = PyArray_DATA(a);
            if (!bt_slot_flags_ok(s, PyArray_FLAGS(a)) &&
                (!temps || !(data = bt_call_fused_temp(temps, s, a, i))))
                return 0;
            nd = PyArray_NDIM(a);
            dims = (const Py_ssize_t *)PyArray_DIMS(a);
            w[s->word] = (uint64_t)(uintptr_t)data;
            if (nd == 1) { /* the common one: BT_SLOT_SIZE_FITS as one bound (max_1d) */
                if (dims[0] > s->max_1d)
                    return 0;
                *total += dims[0];                   /* bt_slot_elements(1, dims) */
                w[s->size_word] = (uint64_t)dims[0]; /* the scratch word when it has no size */
                continue;
            }
            if (nd == 2 && s->two_d) { /* x_size0, x_size1: bt_slot_sizes_fit, unrolled */
                if ((uint64_t)dims[0] > s->sizes[0].limit || (uint64_t)dims[1] > s->sizes[1].limit)
                    return 0;
                *total += dims[0] * dims[1]; /* NumPy keeps an array's size in a Py_ssize_t */
                w[s->sizes[0].word] = (uint64_t)dims[0];
                w[s->sizes[1].word] = (uint64_t)dims[1];
                continue;
            }
            *total += bt_slot_elements(nd, dims);
            if (s->n_sizes == 1) {
                if (!BT_SLOT_SIZE_FITS(s, s->sizes, nd, dims))
                    return 0;
                w[s->size_word] = bt_slot_size_value(s->sizes, dims);
            } else if (s->n_sizes) { /* several: a 2-D array's x_size0, x_size1 */
                const BtSizeParam *z = s->sizes, *end = z + s->n_sizes;
                if (nd < s->min_ndim)
                    return 0;
                for (; z < end; z++) { /* bt_slot_sizes_fit, storing as it checks */
                    if (!BT_SLOT_AXIS_FITS(z, dims))
                        return 0;
                    w[z->word] = bt_slot_size_value(z, dims);
                }
            }
        } else if (!bt_slot_scalar_has_key(o, k) || !bt_slot_store_fast(s, o, &w[s->word])) {
            return 0;
        }
    }
    return 1;
}

/* The kernel of a fused call on its words w (bt_call_fused_store's), the
 * GIL released as policy gil says for arrays of `total` elements; as
 * bt_call_invoke ends. Inline, with the GIL kept: the guard is the one
 * call between the entry and the kernel. New reference, or NULL. */
static inline BT_ALWAYS_INLINE PyObject *
bt_call_words(const BtCall *call, int gil, Py_ssize_t total, const uint64_t *w, const char *fname)
{
    BtValue rv;
    char what[512];
    int thrown;

    if (gil == BT_GIL_RELEASE || (gil == BT_GIL_AUTO && total >= BT_GIL_RELEASE_MIN))
        return bt_call_words_released(call, total, w, fname);
    rv.u64 = 0;
    thrown = call->site(&call->direct, call->fn, &rv, w, what, sizeof what);
    if (thrown)
        return bt_call_threw(thrown, what, fname);
    if (call->ret == BT_VOID)
        Py_RETURN_NONE;
    return bt_call_return(call, &rv);
}

#endif
