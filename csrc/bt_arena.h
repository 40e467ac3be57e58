/* bt_arena.h - bump allocator for metadata, and a tiny growable string.
 *
 * Pure C. Everything the header reader, YAML reader and planner build lives
 * in one arena, freed in one shot, so error exits never leak. */
#ifndef BT_ARENA_H
#define BT_ARENA_H

#include <stdarg.h>
#include <stddef.h>

#if defined(__GNUC__)
#define BT_HIDDEN __attribute__((visibility("hidden")))
#define BT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BT_HIDDEN
#define BT_PRINTF(f, a)
#endif

typedef struct BtArenaBlock BtArenaBlock;

typedef struct BtArena {
    BtArenaBlock *head;
} BtArena;

BT_HIDDEN void bt_arena_init(BtArena *a);
BT_HIDDEN void bt_arena_free(BtArena *a);
/* Zeroed memory aligned for any type, or NULL when out of memory. */
BT_HIDDEN void *bt_arena_alloc(BtArena *a, size_t n);
BT_HIDDEN char *bt_arena_strndup(BtArena *a, const char *s, size_t n);
BT_HIDDEN char *bt_arena_strdup(BtArena *a, const char *s);
BT_HIDDEN char *bt_arena_printf(BtArena *a, const char *fmt, ...) BT_PRINTF(2, 3);

/* Growable NUL-terminated byte string on the C heap. */
typedef struct BtBuf {
    char *data;  /* NULL until the first append */
    size_t len;
    size_t cap;
    int failed;  /* sticky out-of-memory flag */
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
