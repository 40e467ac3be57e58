/* bt_call.h - per-overload call frames: dispatch codes, argument checks,
 * marshalling into stack storage, ffi_call, return conversion.
 *
 * Everything that can be decided at bind time is: the ffi_cif, the argument
 * slots and the dispatch code each array argument must have. A call computes
 * one byte per argument (its dispatch code), picks the overload, checks and
 * marshals, and calls, with no heap allocation. */
#ifndef BT_CALL_H
#define BT_CALL_H

#include "bt_state.h"

#include <ffi.h>
#include <stdint.h>

#include "bt_direct.h"
#include "bt_plan.h"

/* Release the GIL around a kernel whose arrays hold at least this many
 * elements in all; smaller calls keep it. Releasing and retaking it costs
 * ~20 ns uncontended (gauss_seidel with no work: 253 ns per call at 2000
 * elements, 271 ns at 2048), ~8% of a tiny call, while a kernel touching
 * 2048 elements already runs for microseconds. */
#define BT_GIL_RELEASE_MIN 2048

/* How a call treats the GIL and const arrays that are not C-contiguous and
 * aligned: a Function's own (from its Library's build/load arguments),
 * overridden inside `with bindthem.options(...)` (bt_opts.c). */
enum { BT_GIL_AUTO, BT_GIL_RELEASE, BT_GIL_KEEP }; /* by size (above), always, never */
typedef struct BtCallOpts {
    uint8_t gil;
    uint8_t copy_const; /* copy such const arrays instead of refusing them */
    uint8_t ffi;        /* call through libffi even where a direct call applies */
} BtCallOpts;

/* Dispatch codes: one byte per argument.
 *   0          an omitted argument: only a parameter with a default takes it
 *   1 + t      ndarray of (normalized) NumPy type t, native byte order
 *   64 + t     NumPy scalar of type t
 *   BT_K_*     Python objects by kind */
enum {
    BT_K_OMITTED = 0,
    BT_K_ARRAY = 1,
    BT_K_ARRAY_OTHER = 40, /* ndarray of a dtype no kernel takes */
    BT_K_NPSCALAR = 64,
    BT_K_BOOL = 128,
    BT_K_INT,
    BT_K_FLOAT,
    BT_K_COMPLEX,
    BT_K_CHAR, /* str or bytes: a char parameter takes a single character */
    BT_K_OTHER = 255
};

/* A size parameter: C parameter cidx gets its array's shape[axis]. */
typedef struct BtSizeParam {
    int cidx;
    int axis;
    BtTypeId type;
    const char *name; /* the C name, for messages */
} BtSizeParam;

/* One Python-visible parameter of one overload. */
typedef struct BtArgSlot {
    BtTypeId type;
    int is_array;
    int is_const;
    int array_code;           /* the code an array argument must have */
    int cidx;                 /* index of the C parameter */
    const BtSizeParam *sizes; /* array: its size parameters (those right after it) */
    int n_sizes;
    int min_ndim; /* array: 1 + the highest axis they name */
    int has_default;
    unsigned char defval[16]; /* the default, converted to `type` at bind time */
    const char *defrepr;      /* its Python spelling ("1.0", "'T'"), or NULL */
} BtArgSlot;

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
    BtDirect direct; /* the call without libffi, where direct.variant != 0 */
} BtCall;

/* Prepares call for overload ov with symbol address fn, allocating from
 * arena. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_call_prepare(BtCall *call, const BtOverload *ov, void *fn, const char *symbol,
                              BtArena *arena);

/* The dispatch code of one argument. */
BT_HIDDEN uint8_t bt_call_code(PyObject *o);

/* Whether an argument of dispatch code `code` fits slot s; pass 1 is exact,
 * pass 2 adds the scalar conversions (int -> floating/complex, float ->
 * complex, NumPy integers of other widths). */
BT_HIDDEN int bt_call_accepts(const BtArgSlot *s, uint8_t code, int pass);

/* The Python defaults of ov's parameters: pydefs[i] (one per C parameter)
 * is a new reference to what a call that omits argument i passes, or NULL
 * when it must be given; cvals (16 bytes per C parameter), when not NULL,
 * receives them converted to the parameter's type. A header default counts
 * when it is a literal (bt_lex_literal) that the parameter takes as a passed
 * argument (the same conversions and range checks) and every later Python
 * parameter has one too. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_call_defaults(const BtOverload *ov, PyObject **pydefs, void *cvals);

/* Checks, marshals and calls. args are the n_py arguments in order (NULL
 * for an omitted one: the slot's default), codes their dispatch codes.
 * fname and names (tuple of str) are for messages; opts->gil decides the
 * GIL. New reference, or NULL. */
BT_HIDDEN PyObject *bt_call_invoke(const BtCall *call, PyObject *const *args, const uint8_t *codes,
                                   const char *fname, PyObject *names, const BtCallOpts *opts);

/* New reference: a short description of an argument for messages,
 * e.g. "numpy.ndarray of float32", "int", "numpy.int64", "list". */
BT_HIDDEN PyObject *bt_call_describe(PyObject *o);

/* What a slot takes, for messages: "float64 array", "int", "float". */
BT_HIDDEN const char *bt_call_slot_wants(const BtArgSlot *s, char *buf, size_t size);

/* Fills the size parameters of array slot s from the argument's shape (nd
 * dimensions, dims): the value of C parameter z->cidx is written at
 * vals + z->cidx * stride and ptrs[z->cidx] points at it. A ValueError when
 * the array has fewer than s->min_ndim dimensions, an OverflowError when an
 * extent does not fit its parameter's type, both before any kernel runs.
 * Returns 0 or -1. (CPU calls and CUDA launches both use it.) */
BT_HIDDEN int bt_call_store_sizes(const BtArgSlot *s, int nd, const Py_ssize_t *dims, void *vals,
                                  size_t stride, void **ptrs, const char *fname, PyObject *name);

/* Converts scalar o to type t into out, with a CPU call's conversions,
 * range checks and messages. out must hold 16 bytes aligned for double
 * complex. Returns 0, or -1 with an exception set. (The CUDA launcher's
 * kernel parameters use it.) */
BT_HIDDEN int bt_call_store_scalar(void *out, BtTypeId t, PyObject *o, const char *fname,
                                   PyObject *name);

#endif
