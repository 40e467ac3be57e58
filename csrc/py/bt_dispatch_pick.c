/* bt_dispatch_pick.c - selection: the scan, the cache, the last-call memo, one group or several. */

#include "bt_dispatch_impl.h"

#include <string.h>

static int accepts_all(const BtArgSlot *s, const uint8_t *codes, int n, int pass)
{
    int i;
    for (i = 0; i < n; i++)
        if (!bt_slot_accepts(&s[i], codes[i], pass))
            return 0;
    return 1;
}

/* Scan for the first overload accepting all codes in `pass`. -1 if none. */
static int scan(const BtDispatch *d, const uint8_t *codes, int pass)
{
    int o, n = BT_FT_LOAD(&d->n_ovs); /* bt_dispatch_add publishes a grown count */
    for (o = 0; o < n; o++)
        if (accepts_all(d->slots[o], codes, d->n_py, pass))
            return o;
    return -1;
}

int bt_dispatch_select(BtDispatch *d, const uint8_t *codes, int *pass)
{
    uint64_t h = 0;
    int ov, many = BT_FT_LOAD(&d->n_ovs) > 1; /* once: bt_dispatch_add may grow it */

    BT_FT_ADD(&d->selects, 1);
    if (many) {
        h = bt_dispatch_key_hash(codes, d->key_len);
        ov = bt_dispatch_cache_find(d, codes, h, pass);
        if (ov >= 0)
            return ov;
        BT_FT_ADD(&d->scans, 1);
    }
    ov = scan(d, codes, 1);
    *pass = 1;
    if (ov < 0) {
        ov = scan(d, codes, 2);
        *pass = 2;
    }
    if (ov >= 0 && many)
        bt_dispatch_cache_put(d, codes, h, ov, *pass);
    return ov;
}

void bt_dispatch_remember(BtDispatch *d, PyObject *const *args, int ov)
{
    const void *keys[BT_MAX_PARAMS];
    int i;
#ifdef Py_GIL_DISABLED
    uint32_t seq = __atomic_load_n(&d->last_seq, __ATOMIC_RELAXED);
    int last = __atomic_load_n(&d->last_ov, __ATOMIC_RELAXED);

    if (!bt_slot_keys(args, d->n_py, keys))
        ov = -1;
    /* one writer; one that finds another at work leaves the memo to it */
    if ((seq & 1) || !__atomic_compare_exchange_n(&d->last_seq, &seq, seq + 1, 0, __ATOMIC_ACQUIRE,
                                                  __ATOMIC_RELAXED))
        return;
    /* the last call becomes the one before (its keys copied: readers never see a
     * pointer change) */
    for (i = 0; last >= 0 && i < d->n_py; i++)
        __atomic_store_n(&d->prev_keys[i], __atomic_load_n(&d->last_keys[i], __ATOMIC_RELAXED),
                         __ATOMIC_RELEASE);
    __atomic_store_n(&d->prev_ov, last, __ATOMIC_RELEASE);
    for (i = 0; ov >= 0 && i < d->n_py; i++)
        __atomic_store_n(&d->last_keys[i], keys[i], __ATOMIC_RELEASE);
    __atomic_store_n(&d->last_ov, ov, __ATOMIC_RELEASE);
    __atomic_store_n(&d->last_seq, seq + 2, __ATOMIC_RELEASE);
#else
    if (!bt_slot_keys(args, d->n_py, keys))
        ov = -1;
    /* the last call becomes the one before */
    for (i = 0; d->last_ov >= 0 && i < d->n_py; i++)
        d->prev_keys[i] = d->last_keys[i];
    d->prev_ov = d->last_ov;
    for (i = 0; ov >= 0 && i < d->n_py; i++)
        d->last_keys[i] = keys[i];
    d->last_ov = ov;
#endif
}

static int pick_groups(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                       const BtDispatchExtra *extra, const BtDispatchHow *how, BtDispatchPick *p)
{
    BtDispatchGiven gv;
    uint8_t key[2 + 3 * BT_MAX_PARAMS];
    uint64_t h;
    int rc, j, k = 2, o, pass, any = 0;

    rc = bt_dispatch_read_given(d, args, nargs, kwnames, extra, how, &gv);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        bt_dispatch_no_bind(d, nargs, kwnames, extra);
        return -1;
    }
    memset(key, 0, (size_t)d->key_len);
    key[0] = (uint8_t)nargs;
    key[1] = (uint8_t)gv.nkw;
    for (j = 0; j < nargs; j++)
        key[k++] = gv.code[j];
    for (j = 0; j < gv.nkw; j++) {
        key[k++] = (uint8_t)(gv.kid[j] & 0xFF);
        key[k++] = (uint8_t)(gv.kid[j] >> 8);
        key[k++] = gv.code[nargs + j];
    }
    h = bt_dispatch_key_hash(key, d->key_len);
    p->ov = bt_dispatch_cache_find(d, key, h, &p->pass);
    if (p->ov >= 0) {
        bt_dispatch_group_bind(d, d->ov_group[p->ov], &gv, p);
        return 0;
    }
    BT_FT_ADD(&d->scans, 1);
    for (pass = 1; pass <= 2; pass++) {
        for (o = 0; o < d->n_ovs; o++) {
            int g = d->ov_group[o];
            if (!bt_dispatch_group_bind(d, g, &gv, p))
                continue;
            any = 1;
            if (accepts_all(d->slots[o], p->codes, d->groups[g].n_py, pass)) {
                p->ov = o;
                p->pass = pass;
                bt_dispatch_cache_put(d, key, h, o, pass);
                return 0;
            }
        }
    }
    if (!any)
        bt_dispatch_no_bind(d, nargs, kwnames, extra);
    else
        bt_dispatch_mismatch(d, &gv, p, how, NULL);
    return -1;
}

int bt_dispatch_pick(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const BtDispatchExtra *extra, const BtDispatchHow *how, BtDispatchPick *p)
{
    int given;

    if (d->n_groups > 1)
        return pick_groups(d, args, nargs, kwnames, extra, how, p);
    p->names = d->names;
    given = bt_dispatch_bind_one(d, args, nargs, kwnames, p->argv, extra, p->src);
    return given < 0 ? -1 : bt_dispatch_pick_bound(d, given, how, p);
}

int bt_dispatch_pick_bound(BtDispatch *d, int given, const BtDispatchHow *how, BtDispatchPick *p)
{
    int i, all;

    /* arguments read the usual way (some by keyword, some left out): the
     * memo answers as for a positional call (its keys are by parameter,
     * an omitted argument's its own) */
    all = !how;
    if (all && (p->ov = given == d->n_py ? bt_dispatch_last(d, p->argv)
                                         : bt_dispatch_last_as(d, p->argv, 1)) >= 0) {
        p->pass = 0; /* not known: the memo keeps the overload only */
        return 0;
    }
    if (how && how->ready && how->ready(how->ctx) < 0)
        return -1;
    for (i = 0; i < d->n_py; i++) {
        /* src is set only where a `how` reads it (bt_dispatch_bind leaves it) */
        int c = !p->argv[i] ? BT_K_OMITTED
                : how ? bt_dispatch_read_code(p->argv[i], p->src[i], PyTuple_GET_ITEM(d->names, i),
                                              how)
                      : bt_slot_code(p->argv[i]);
        if (c < 0)
            return -1;
        p->codes[i] = (uint8_t)c;
    }
    p->ov = bt_dispatch_select(d, p->codes, &p->pass);
    if (p->ov < 0) {
        bt_dispatch_mismatch(d, NULL, p, how, NULL);
        return -1;
    }
    if (all)
        bt_dispatch_remember(d, p->argv, p->ov);
    return 0;
}
