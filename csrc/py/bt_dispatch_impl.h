/* bt_dispatch_impl.h - what the dispatcher's files (bt_dispatch*.c) share, and no one else. */

/* The files, one job each: bt_dispatch.c (set-up, clear, docstring),
 * bt_dispatch_bind.c (arguments to parameters: the keyword map, groups),
 * bt_dispatch_cache.c (the lock-free cache's writers), bt_dispatch_pick.c
 * (selection: scan, cache, memo), bt_dispatch_error.c (the no-bind and
 * no-match TypeErrors), bt_dispatch_open.c (open dispatchers, adding
 * overloads). Callers include bt_dispatch.h. The cache's readers and the
 * code reader are static inlines here: the call path inlines them. */
#ifndef BT_DISPATCH_IMPL_H
#define BT_DISPATCH_IMPL_H

#include "bt_dispatch.h"

#include <string.h>

/* ---- the cache's readers (bt_dispatch_cache.c writes it) ---- */

static inline uint64_t bt_dispatch_key_hash(const uint8_t *codes, int n)
{
    uint64_t h = 1469598103934665603ULL;
    int i;
    for (i = 0; i < n; i++) {
        h ^= codes[i];
        h *= 1099511628211ULL;
    }
    return h | 1; /* never 0 */
}

/* The cached overload for key (key_len bytes, hash h), or -1. */
static inline int bt_dispatch_cache_find(const BtDispatch *d, const uint8_t *key, uint64_t h,
                                         int *pass)
{
    const BtDispatchTable *t = BT_FT_LOAD(&d->cache);
    size_t j, mask, kl = (size_t)d->key_len;
    int ov;

    if (!t)
        return -1;
    mask = (size_t)t->cap - 1;
    for (j = (size_t)h & mask; (ov = BT_FT_LOAD(&t->e[j].ov)) >= 0; j = (j + 1) & mask) {
        if (t->e[j].hash == h && memcmp(t->keys + j * kl, key, kl) == 0) {
            *pass = t->e[j].pass;
            return ov;
        }
    }
    return -1;
}

/* Remembers key -> (ov, pass) unless another thread just did; a failed
 * grow just means no caching. */
BT_HIDDEN void bt_dispatch_cache_put(BtDispatch *d, const uint8_t *key, uint64_t h, int ov,
                                     int pass);

/* The cache's: frees table t and the tables it replaced. */
BT_HIDDEN void bt_dispatch_cache_free(BtDispatchTable *t);

/* ---- binding (bt_dispatch_bind.c) ---- */

/* The given arguments of a call: the positional ones, then the keyword
 * ones that name a parameter of some group (j numbers them so). */
typedef struct BtDispatchGiven {
    Py_ssize_t nargs;
    int nkw;
    int kid[BT_MAX_PARAMS];      /* keyword: its name id */
    PyObject *kw[BT_MAX_PARAMS]; /* keyword: its name */
    PyObject *obj[BT_MAX_PARAMS];
    uint8_t code[BT_MAX_PARAMS];
} BtDispatchGiven;

static inline int bt_dispatch_read_code(PyObject *o, int j, PyObject *name,
                                        const BtDispatchHow *how)
{
    return how && how->code ? how->code(o, j, name, how->ctx) : bt_slot_code(o);
}

/* d->kw_map for d->names, but for the positional-only ones (d->posonly,
 * set before). 0, or -1 with an exception set. */
BT_HIDDEN int bt_dispatch_kw_map_build(BtDispatch *d);

/* One group: binds args[nargs] and the keywords named by kwnames into
 * slots[n_py] (NULL: left out), src (when not NULL) the given number of
 * each, or -1. Returns how many parameters were given, or -1 with
 * CPython's TypeError. */
BT_HIDDEN int bt_dispatch_bind_one(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames, PyObject **slots,
                                   const BtDispatchExtra *extra, int *src);

/* Several groups: binds the given arguments to group g into p (codes
 * included). 1 when they bind, 0 when they don't. */
BT_HIDDEN int bt_dispatch_group_bind(const BtDispatch *d, int g, const BtDispatchGiven *gv,
                                     BtDispatchPick *p);

/* Several groups: sorts the keywords and reads the codes into gv. 0, 1
 * when the call has more arguments than any group takes, or -1 with an
 * exception. */
BT_HIDDEN int bt_dispatch_read_given(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                                     PyObject *kwnames, const BtDispatchExtra *extra,
                                     const BtDispatchHow *how, BtDispatchGiven *gv);

/* ---- set-up (bt_dispatch.c) ---- */

/* New reference: parameter i's Python name (bt_pyname_put), interned. */
BT_HIDDEN PyObject *bt_dispatch_py_name(const BtDecl *decl, int i);

/* Records name, a positional-only parameter's, as never a keyword. 0 or -1. */
BT_HIDDEN int bt_dispatch_add_posonly(BtDispatch *d, PyObject *name);

/* ---- errors (bt_dispatch_error.c) ---- */

/* New reference: the overloads one per line, for the errors (d->ov_list). */
BT_HIDDEN PyObject *bt_dispatch_overload_list(const BtDispatch *d);

/* TypeError: the call binds to no group's parameters. Returns NULL. */
BT_HIDDEN PyObject *bt_dispatch_no_bind(const BtDispatch *d, Py_ssize_t nargs, PyObject *kwnames,
                                        const BtDispatchExtra *extra);

/* TypeError naming the argument where the best overload stops matching.
 * One group: p holds the bound call (gv NULL). Several: gv, rebound into
 * p for each overload's group. *text (text not NULL) receives a new
 * reference to the message, when it built one. Returns NULL. */
BT_HIDDEN PyObject *bt_dispatch_mismatch(const BtDispatch *d, const BtDispatchGiven *gv,
                                         BtDispatchPick *p, const BtDispatchHow *how,
                                         PyObject **text);

#endif
