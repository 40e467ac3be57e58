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
#include "bt_slot.h"

/* Release the GIL around a kernel whose arrays hold at least this many
 * elements in all; smaller calls keep it. Releasing and retaking it costs
 * ~20 ns uncontended (gauss_seidel with no work: 253 ns per call at 2000
 * elements, 271 ns at 2048), ~8% of a tiny call, while a kernel touching
 * 2048 elements already runs for microseconds. */
#define BT_GIL_RELEASE_MIN 2048

/* How a call treats the GIL and const arrays that are not C-contiguous: a
 * Function's own (from its Library's build/load arguments),
 * overridden inside `with bindthem.options(...)` (bt_opts.c). */
enum { BT_GIL_AUTO, BT_GIL_RELEASE, BT_GIL_KEEP }; /* by size (above), always, never */
typedef struct BtCallOpts {
    uint8_t gil;
    uint8_t copy_const; /* copy such const arrays instead of refusing them */
    uint8_t ffi;        /* call through libffi even where a direct call applies */
} BtCallOpts;

/* The copies an overload's calls made (Function.stats): C11 atomics,
 * added to relaxed, so that calls counting at once in threads of a
 * free-threaded build lose none (with the GIL they never race). */
typedef struct BtCallStats {
    _Atomic uint64_t aligned_copies; /* unaligned arrays passed as aligned temporaries */
    _Atomic uint64_t copy_backs;     /* of those, written ones copied back */
    _Atomic uint64_t const_copies;   /* const arrays that are not C-contiguous (copy_const) */
} BtCallStats;

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
    const char *signature;
    const char *symbol;
    BtDirect direct;    /* the call without libffi, where direct.variant != 0 */
    uint8_t *order;     /* the slots in the order a call stores them (bt_slot_build) */
    BtCallStats *stats; /* a C function's (NULL for a kernel) */
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

#endif
