/* bt_dispatch_cache.c - the lock-free overload cache's writers: insert, grow, free. */

/* Its readers (bt_dispatch_key_hash, bt_dispatch_cache_find) are static inlines in
 * bt_dispatch_impl.h, inlined into the call path. */
#include "bt_dispatch_impl.h"

#include <string.h>

#define CACHE_MIN 16
#define CACHE_MAX 4096

/* Writer (d->lock held): replaces the table by one twice its size. */
static int cache_grow(BtDispatch *d)
{
    size_t kl = (size_t)(d->key_len ? d->key_len : 1);
    BtDispatchTable *old = d->cache, *t;
    int cap = old ? old->cap * 2 : CACHE_MIN, i;

    t = PyMem_Calloc(1, sizeof *t + (size_t)cap * (sizeof t->e[0] + kl));
    if (!t)
        return -1;
    t->cap = cap;
    t->keys = (uint8_t *)&t->e[cap];
    for (i = 0; i < cap; i++)
        t->e[i].ov = -1;
    for (i = 0; old && i < old->cap; i++) {
        const BtDispatchEntry *e = &old->e[i];
        size_t j;
        if (e->ov < 0)
            continue;
        j = (size_t)e->hash & (size_t)(cap - 1);
        while (t->e[j].ov >= 0)
            j = (j + 1) & (size_t)(cap - 1);
        t->e[j] = *e;
        memcpy(t->keys + j * kl, old->keys + (size_t)i * kl, kl);
    }
#ifdef Py_GIL_DISABLED
    t->retired = old; /* a reader may still be probing it: freed with d */
#else
    PyMem_Free(old);
#endif
    BT_FT_STORE(&d->cache, t);
    return 0;
}

/* Remembers key -> (ov, pass) unless another thread just did; a failed
 * grow just means no caching. */
void bt_dispatch_cache_put(BtDispatch *d, const uint8_t *key, uint64_t h, int ov, int pass)
{
    BtDispatchTable *t;
    size_t j, mask;
    int seen, cap;

    BT_FT_LOCK(&d->lock);
    if (bt_dispatch_cache_find(d, key, h, &seen) >= 0)
        goto done;
    cap = d->cache ? d->cache->cap : 0;
    if ((d->cache_used + 1) * 2 > cap && cap < CACHE_MAX && cache_grow(d) < 0)
        goto done;
    t = d->cache;
    if (!t || (d->cache_used + 1) * 2 > t->cap)
        goto done;
    mask = (size_t)t->cap - 1;
    for (j = (size_t)h & mask; t->e[j].ov >= 0; j = (j + 1) & mask)
        ;
    t->e[j].hash = h;
    t->e[j].pass = pass;
    memcpy(t->keys + j * (size_t)d->key_len, key, (size_t)d->key_len);
    BT_FT_STORE(&t->e[j].ov, ov); /* publishes the entry */
    BT_FT_STORE_RELAXED(&d->cache_used, d->cache_used + 1);
done:
    BT_FT_UNLOCK(&d->lock);
}

/* The cache's: frees table t and the tables it replaced. */
void bt_dispatch_cache_free(BtDispatchTable *t)
{
    while (t) {
        BtDispatchTable *next = t->retired;
        PyMem_Free(t);
        t = next;
    }
}
