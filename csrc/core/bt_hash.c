/* bt_hash.c - open-addressing index: linear probing at load <= 1/2. */
#include "bt_hash.h"

#include <string.h>

/* A bijective 64-bit mixer (splitmix64's finalizer). */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9u;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBu;
    x ^= x >> 31;
    return x;
}

int bt_index_init(BtIndex *x, BtArena *arena, size_t n)
{
    size_t cap = 16;

    while (cap < 2 * n && cap <= (size_t)-1 / 4)
        cap *= 2;
    x->slot = cap <= (size_t)-1 / 8 ? bt_arena_resize(arena, NULL, cap * sizeof *x->slot) : NULL;
    x->mask = cap - 1;
    x->seed = mix((uint64_t)(uintptr_t)x->slot ^ 0x9E3779B97F4A7C15u);
    return x->slot ? 0 : -1;
}

int bt_index_has_room(const BtIndex *x, size_t n) { return 2 * (n + 1) <= x->mask + 1; }

void bt_index_release(BtIndex *x, BtArena *arena)
{
    bt_arena_release(arena, x->slot);
    x->slot = NULL;
}

/* Each 8-byte word enters through the seeded state before a bijective mix,
 * so two keys collide only through the seed. */
uint64_t bt_hash(const BtIndex *x, const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = x->seed ^ (n * 0x9E3779B97F4A7C15u);
    uint64_t w;

    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = mix(h ^ w);
    }
    w = 0;
    memcpy(&w, s, n);
    return mix(h ^ w ^ ((uint64_t)n << 56));
}

uint64_t bt_hash_str(const BtIndex *x, const char *s) { return bt_hash(x, s, strlen(s)); }

uint64_t bt_hash_int(uint64_t h, uint64_t v) { return mix(h ^ mix(v + 0x9E3779B97F4A7C15u)); }

int bt_index_find(const BtIndex *x, uint64_t h, int (*eq)(const void *ctx, int id), const void *ctx,
                  size_t *at)
{
    size_t i;

    for (i = h & x->mask; x->slot[i]; i = (i + 1) & x->mask)
        if (eq(ctx, x->slot[i] - 1))
            return x->slot[i] - 1;
    if (at)
        *at = i;
    return -1;
}

void bt_index_put(BtIndex *x, size_t at, int id) { x->slot[at] = id + 1; }
