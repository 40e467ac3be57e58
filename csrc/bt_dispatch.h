/* bt_dispatch.h - the dispatcher of CPU functions and CUDA kernels: binding, selection, errors. */

/* A call binds positional and keyword arguments to the Python parameters
 * (the header's, minus `_size`) with CPython's messages, computes one
 * dispatch code per argument, and selects the overload: a small
 * open-addressing cache keyed by those codes makes the cost independent of
 * the number of overloads. A cache miss scans the overloads: exact pass
 * first, then the pass with scalar conversions, as pybind11 does. Only the
 * final call (ffi_call, or a kernel launch) differs between the users. */

#ifndef BT_DISPATCH_H
#define BT_DISPATCH_H

#include "bt_call.h"

typedef struct BtDispatchEntry {
    uint64_t hash;
    int32_t ov;    /* overload index; -1 = empty slot */
    int32_t pass;  /* pass that matched */
} BtDispatchEntry;

typedef struct BtDispatch {
    PyObject *name;           /* str, interned */
    PyObject *qualname;       /* str */
    PyObject *names;          /* tuple of parameter names (str, interned) */
    PyObject *overloads;      /* tuple of C signatures (str) */
    const char *cname;        /* UTF-8 of name, for messages */
    const BtArgSlot **slots;  /* per overload: its n_py slots (the calls own them) */
    int n_ovs;
    int n_py;
    int terse_missing;        /* "missing required argument 'y' (position 2)" */
    BtDispatchEntry *cache;   /* cache_cap entries, keys beside them */
    uint8_t *cache_keys;      /* cache_cap * n_py */
    int cache_cap;
    int cache_used;
} BtDispatch;

/* Keywords a caller takes besides the parameters (a launch's grid=, ...):
 * one that names no parameter and equals names[i] goes to out[i]. */
typedef struct BtDispatchExtra {
    const char *const *names;
    int n;
    PyObject **out;  /* n borrowed references, NULL when not given */
} BtDispatchExtra;

/* How no_match describes arguments and slots; NULL members (or a NULL
 * BtDispatchDescribe) mean bt_call_describe / bt_call_slot_wants. */
typedef struct BtDispatchDescribe {
    PyObject *(*given)(PyObject *o, int i, void *ctx);  /* new reference */
    const char *(*wants)(const BtArgSlot *s, char *buf, size_t size);
    void *ctx;
} BtDispatchDescribe;

/* Sets up d for the n overloads ovs with prepared calls (slots, n_py and
 * signature are read from them; the calls must outlive d). name is the
 * Python name; `what` ("functions", "kernels") is for the BindError raised
 * when the overloads' Python parameters differ. Returns 0, or -1 with an
 * exception set; d can be cleared either way. */
BT_HIDDEN int bt_dispatch_init(BtDispatch *d, BtState *st, const char *name,
                               const BtOverload *ovs, const BtCall *calls, int n,
                               const char *what);

/* Releases what d holds; d is left zeroed (clearing twice is fine). */
BT_HIDDEN void bt_dispatch_clear(BtDispatch *d);

/* The general case of bt_dispatch_bind: binds args[nargs] and the keywords
 * named by kwnames into slots[n_py], or raises TypeError with CPython's
 * message. extra may be NULL. Returns 0 or -1. */
BT_HIDDEN int bt_dispatch_bind_kw(const BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames, PyObject **slots,
                                  const BtDispatchExtra *extra);

/* Binds a vectorcall's arguments to the parameters: *argv becomes args
 * itself when they are exactly the n_py positional arguments, else
 * slots_buf (BT_MAX_PARAMS borrowed references) filled in order. Returns 0,
 * or -1 with TypeError. */
static inline int bt_dispatch_bind(const BtDispatch *d, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames, PyObject **slots_buf,
                                   PyObject *const **argv)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);

    if ((!kwnames || PyTuple_GET_SIZE(kwnames) == 0) && nargs == d->n_py) {
        *argv = args;
        return 0;
    }
    if (bt_dispatch_bind_kw(d, args, nargs, kwnames, slots_buf, NULL) < 0)
        return -1;
    *argv = slots_buf;
    return 0;
}

/* The overload for dispatch codes codes[n_py], with the pass that matched
 * it in *pass; -1 (no exception) when none accepts them. */
BT_HIDDEN int bt_dispatch_select(BtDispatch *d, const uint8_t *codes, int *pass);

/* TypeError naming the argument where the best overload stops matching,
 * with what the overloads expect there and their signatures. how may be
 * NULL. Always NULL. */
BT_HIDDEN PyObject *bt_dispatch_no_match(const BtDispatch *d, PyObject *const *args,
                                         const uint8_t *codes, const BtDispatchDescribe *how);

#endif
