/* bt_callback.h - function pointer parameters: a Python callable called
 * through a libffi closure, or a raw C function pointer.
 *
 * A C function that takes a function pointer (BtTypeRef.callback_ref; its
 * slot has kind 'k') goes through bt_callback_invoke, around the call
 * (bt_handle_invoke where it also takes handles, else bt_call_invoke).
 * Each callback argument becomes a C address before the call: the walk
 * then stores it as an int (bt_slot_store_arg). The argument may be
 *   - a raw C function pointer, called with no Python in between: a
 *     bindthem Function whose one overload has the parameter's C type (its
 *     symbol's address; another type is a TypeError showing both), or
 *     what bindthem._from_c.callback_address finds an address in (a
 *     ctypes CFUNCTYPE or cffi function pointer, an object with an
 *     integer `address` such as numba.cfunc's);
 *   - any other callable, where a Python callable can stand for the C type
 *     (bt_fntype_refused): a libffi closure made for the call and freed
 *     after it, whose handler takes the GIL (PyGILState_Ensure: the C
 *     function may call it from threads of its own while the call has
 *     released the GIL, which a call with a closure does unless its policy
 *     is "keep"), converts the C arguments (scalars as returns are read,
 *     bt_call_value; an enum as int; `const char *` as str or None;
 *     `void *` as int or None; a handle as its int address; an array with
 *     its sizes as a NumPy view of the memory, read-only where const,
 *     valid for that invocation only), calls the callable and converts its
 *     result (a scalar as an argument is: bt_slot_accepts's pass 2,
 *     bt_slot_store_scalar). The first exception a callable raises (or a
 *     result of the wrong type) is kept: that invocation returns zero, the
 *     later ones of the call return zero without calling Python, and the
 *     call raises it, traceback kept, once the C function returns.
 * None and anything else: a TypeError naming the parameter and its C
 * type. The closure lives as long as the call: a C library that keeps the
 * pointer for later needs a raw one the caller keeps alive. */
#ifndef BT_CALLBACK_H
#define BT_CALLBACK_H

#include "bt_call.h"

/* How the handler passes one C parameter of a callback, or reads its return. */
enum {
    BT_CB_SCALAR, /* a scalar or an enum (its integer type); void as a return */
    BT_CB_STRING, /* `const char *`: str, or None for NULL */
    BT_CB_VOIDP,  /* `void *`: int, or None for NULL */
    BT_CB_HANDLE, /* a pointer to a handle type: its int address */
    BT_CB_ARRAY,  /* a pointer with its size parameters: a NumPy view */
    BT_CB_SIZE    /* a size parameter: an array's extent, not passed */
};

typedef struct BtCbParam {
    uint8_t how;      /* BT_CB_* */
    uint8_t is_const; /* an array's: a read-only view */
    BtTypeId type;    /* a scalar's, an array element's, a size's */
    int ndim;         /* an array's axes */
    const int *sizes; /* an array's: the C parameter holding each axis's extent */
} BtCbParam;

/* One function pointer parameter of an overload, planned at bind time. */
typedef struct BtCallback {
    int slot;            /* its Python argument */
    const char *fntype;  /* its C type, "double (*)(double, void *)" (the slot's) */
    const char *refused; /* why no Python callable can stand for it, or NULL */
    /* what a closure needs (refused NULL): */
    ffi_cif cif;
    int n_c;            /* C parameters */
    int n_py;           /* what the callable is passed: the C ones less the sizes */
    BtCbParam *params;  /* n_c */
    BtCbParam ret;      /* BT_CB_SCALAR (BT_VOID: nothing), _VOIDP or _HANDLE */
    BtArgSlot ret_slot; /* a returned scalar as a slot: what a result may be */
    size_t ret_bytes;   /* what the handler zeroes first (an ffi_arg at least) */
} BtCallback;

typedef struct BtCallbacks {
    BtState *st; /* its module's (the Function type); its Functions keep the module */
    int n;
    BtCallback *at;
} BtCallbacks;

/* What calling overload ov needs for its function pointer parameters, at
 * bind time (the CPU back end's prepare, after bt_call_prepare_frame):
 * call->fntype always, call->callbacks when the slots have kind 'k'.
 * Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_callback_prepare(BtState *st, BtCall *call, const BtOverload *ov, BtArena *arena);

/* The call of a C function with callbacks (call->callbacks), as this
 * file's comment says; the rest as bt_call_invoke. New reference, or
 * NULL. */
BT_HIDDEN PyObject *bt_callback_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                                       PyObject *names, const BtCallOpts *opts);

#endif
