/* bt_note_call.h - calls of annotated functions (bt_note.h): sizes,
 * strides and leading dimensions taken from the arrays, out arrays and
 * scalars allocated and returned, checks and status codes.
 *
 * A call of such a function goes this way, never the fused or direct
 * one (a dialect function's calls are untouched), unless the quick call
 * (bt_note_quick.h) takes it, which makes the same checks in one pass:
 *   1. the Python arguments (matched to the overload by the dispatcher):
 *      scalars converted as any call converts them (bt_slot_store_arg),
 *      scalars by pointer into storage of their own; arrays in C order,
 *      each passed as it is where the function can take it (a 1-D view
 *      whose stride it takes, BLAS's pointer for a negative one; a 2-D
 *      array with one unit-stride axis where it takes a leading dimension,
 *      the function's layout set by the first such array), else a
 *      contiguous copy in that layout (copied back after the call when
 *      the function writes it; counted in Function.stats, layout_copies);
 *   2. the hidden parameters and out arrays in the plan's order (each
 *      after what it reads), each value checked against its C type's range;
 *   3. every stated shape, then every check: ValueError naming the
 *      function, the parameter, what was expected and what was given;
 *   4. the call through libffi (the GIL as the Function says);
 *   5. copies back, the status (bindthem.StatusError when not ok), and the
 *      result: the C return (unless void or a status), then out arrays
 *      (an array with `trim`: its first n elements, n read back after the
 *      call), out scalars and in/out scalars, in C order: one value bare,
 *      several as a tuple, none as None. */
#ifndef BT_NOTE_CALL_H
#define BT_NOTE_CALL_H

#include "bt_call.h"
#include "bt_note.h"

/* What a call of an annotated overload keeps: the plan, copied into the
 * Function's arena (the metadata may go), and per C parameter its type,
 * its Python slot and its name. */
typedef struct BtNoteCall {
    const BtNotePlan *plan;
    BtTypeId *types;
    int *slot;             /* the slot of C parameter i, or -1 (hidden) */
    uint8_t *take;         /* the slots in the order a call takes them: the call's (scalars,
                            * then arrays), the arrays that follow the layout the others
                            * decide (BtNoteParam.follows) moved last; n_py of them */
    const char **names;    /* C names, for messages */
    const BtParam *params; /* the declaration's parameters, copied: their dialect sizes */
    PyObject *StatusError; /* borrowed: the module's state holds it */
    /* the call without libffi (bt_direct.h) where direct.variant != 0: each
     * parameter's value into its word */
    BtDirect direct;
    BtGuardSite site;
    uint8_t *is_ptr; /* per C parameter: passed as a pointer (one word) */
    /* per C parameter: a pointer to a handle's (BtParam.handle_ptr) HandleType,
     * borrowed from the Library's handle (bt_handle_calls sets them); else NULL */
    PyObject **htypes;
    int by_address; /* a parameter is a pointer to a handle (what a call holds) */
    /* the header's integer constants named like the status's ok value (Z_OK: Z_*),
     * which name a failing status in its message */
    const char **status_names;
    long long *status_values;
    int n_status;
    /* the quick call's plan (bt_note_quick.h), or NULL: every call the general way */
    const struct BtNoteQuick *quick;
} BtNoteCall;

/* Prepares call->notes for ov (ov->notes set), allocating from arena.
 * 0, or -1 with an exception set. */
BT_HIDDEN int bt_note_prepare(BtState *st, BtCall *call, const BtOverload *ov, BtArena *arena);

/* Why the CPU back end does not bind annotated overload ov (a struct by
 * value, returned or passed: not on this path yet), or NULL. A callback
 * parameter is taken as an unannotated call takes it: bt_callback_invoke
 * makes each argument an address, then calls bt_note_invoke. */
BT_HIDDEN const char *bt_note_refuse(const BtOverload *ov);

/* The call (see above). args are the n_py arguments in slot order (NULL:
 * omitted, the default). New reference, or NULL with an exception set. */
BT_HIDDEN PyObject *bt_note_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                                   PyObject *names, const BtCallOpts *opts);

/* Registers StatusError on module (from bindthem.errors). 0 or -1. */
BT_HIDDEN int bt_note_add(PyObject *module);
BT_HIDDEN void bt_note_clear(BtState *st);

#endif
