/* bt_arena.h - bump allocator for metadata, and a tiny growable string.
 *
 * Pure C. Everything the header reader, YAML reader and planner build lives
 * in one arena, freed in one shot, so error exits never leak.
 *
 * Build switches (for tests, never in a release build):
 *   BT_ARENA_EXACT      every allocation gets its own malloc block of exactly
 *                       its size, so ASan sees an overflow past any object
 *                       (the bump allocator hides it in the block's slack);
 *   BT_FAULT_INJECTION  bt_mem_fail_after(n) makes the nth allocation of the
 *                       pure-C layers fail (arena blocks, BtBuf, the mangler's
 *                       tables), as Lua's ltests.c does. */
#ifndef BT_ARENA_H
#define BT_ARENA_H

#include <stdarg.h>
#include <stddef.h>

#if defined(__GNUC__)
#define BT_HIDDEN __attribute__((visibility("hidden")))
#define BT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BT_ALWAYS_INLINE __attribute__((always_inline))
#define BT_COLD __attribute__((cold, noinline))
#define BT_NOINLINE __attribute__((noinline))
#define BT_HOT __attribute__((hot))
#else
#define BT_HIDDEN
#define BT_PRINTF(f, a)
#define BT_ALWAYS_INLINE
#define BT_COLD
#define BT_NOINLINE
#define BT_HOT
#endif

typedef struct BtArenaBlock BtArenaBlock;

typedef struct BtArena {
    BtArenaBlock *head; /* the block being bumped; older blocks follow */
    size_t bytes;       /* held in blocks now, headers included */
    size_t peak;        /* the most bytes held at once */
    int failed;         /* sticky: some allocation returned NULL */
} BtArena;

BT_HIDDEN void bt_arena_init(BtArena *a);
BT_HIDDEN void bt_arena_free(BtArena *a);
/* Zeroed memory aligned for any type, or NULL when out of memory. */
BT_HIDDEN void *bt_arena_alloc(BtArena *a, size_t n);
/* An array of n elements of size elem (zeroed), or NULL when out of memory
 * or when n * elem overflows. */
BT_HIDDEN void *bt_arena_array(BtArena *a, size_t n, size_t elem);
/* Resizes p, NULL or a pointer this function returned, to n bytes (its
 * contents kept, new bytes zeroed). Such an array has a block of its own, so
 * growing it leaves no dead copies in the arena and a large one is moved by
 * the kernel, not copied. NULL when out of memory (p is then still valid). */
BT_HIDDEN void *bt_arena_resize(BtArena *a, void *p, size_t n);
/* Frees p (NULL, or from bt_arena_resize) before the rest of the arena. */
BT_HIDDEN void bt_arena_release(BtArena *a, void *p);
BT_HIDDEN char *bt_arena_strndup(BtArena *a, const char *s, size_t n);
BT_HIDDEN char *bt_arena_strdup(BtArena *a, const char *s);
BT_HIDDEN char *bt_arena_printf(BtArena *a, const char *fmt, ...) BT_PRINTF(2, 3);

/* The C heap, as the pure-C layers use it outside arenas (counted by fault
 * injection). */
BT_HIDDEN void *bt_mem_realloc(void *p, size_t n);
#ifdef BT_FAULT_INJECTION
/* The nth allocation from now fails (n >= 1), and with `all` every one
 * after it too, until the next call; 0 turns failures off. */
BT_HIDDEN void bt_mem_fail_after(long n, int all);
/* Allocations since the last bt_mem_fail_after. */
BT_HIDDEN long bt_mem_count(void);
#endif

/* Growable NUL-terminated byte string on the C heap. */
typedef struct BtBuf {
    char *data; /* NULL until the first append */
    size_t len;
    size_t cap;
    int failed; /* sticky out-of-memory flag */
} BtBuf;

BT_HIDDEN void bt_buf_init(BtBuf *b);
BT_HIDDEN void bt_buf_free(BtBuf *b);
BT_HIDDEN int bt_buf_append(BtBuf *b, const char *s, size_t n);
BT_HIDDEN int bt_buf_puts(BtBuf *b, const char *s);
BT_HIDDEN int bt_buf_putc(BtBuf *b, char c);
BT_HIDDEN int bt_buf_printf(BtBuf *b, const char *fmt, ...) BT_PRINTF(2, 3);
BT_HIDDEN int bt_buf_vprintf(BtBuf *b, const char *fmt, va_list ap);
/* The contents ("" when empty); valid until the next append. */
BT_HIDDEN const char *bt_buf_str(const BtBuf *b);

#endif
