/* bt_hash.h - an open-addressing index over an array the caller owns.
 *
 * Pure C. The index maps a hash to element ids (0, 1, ...) of the caller's
 * array; the caller says when two elements are equal. It is sized once for
 * at most n elements (twice that many slots, so probes stay short) and lives
 * in an arena. Hashes are seeded per index from its address, so a file
 * crafted to collide under one run's hash does not collide under the next. */
#ifndef BT_HASH_H
#define BT_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "bt_arena.h"

typedef struct BtIndex {
    int *slot; /* 0: empty, else 1 + an element id */
    size_t mask;
    uint64_t seed;
} BtIndex;

/* Room for n elements (a block of the arena's own). 0, or -1 when out of
 * memory. */
BT_HIDDEN int bt_index_init(BtIndex *x, BtArena *arena, size_t n);
/* Whether one more element fits (else the caller makes a bigger index and
 * files its elements again). */
BT_HIDDEN int bt_index_has_room(const BtIndex *x, size_t n);
/* Gives the index's block back to the arena. */
BT_HIDDEN void bt_index_release(BtIndex *x, BtArena *arena);
/* The seeded hash of n bytes at p; bt_hash_int folds an int into a hash. */
BT_HIDDEN uint64_t bt_hash(const BtIndex *x, const void *p, size_t n);
BT_HIDDEN uint64_t bt_hash_str(const BtIndex *x, const char *s);
BT_HIDDEN uint64_t bt_hash_int(uint64_t h, uint64_t v);
/* The id of an element with hash h for which eq(ctx, id) holds, or -1;
 * *at (if not NULL) is then where bt_index_put files a new one. */
BT_HIDDEN int bt_index_find(const BtIndex *x, uint64_t h, int (*eq)(const void *ctx, int id),
                            const void *ctx, size_t *at);
BT_HIDDEN void bt_index_put(BtIndex *x, size_t at, int id);

#endif
