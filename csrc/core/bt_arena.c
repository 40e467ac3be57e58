/* bt_arena.c - bump allocator and growable string. */
#include "bt_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Blocks grow with the arena, from 1 KiB (a bound function's calls fit in
 * one) to 64 KiB; an allocation over a quarter of a block gets its own. */
#define BT_BLOCK_MIN 1024
#define BT_BLOCK_MAX 65536

struct BtArenaBlock {
    BtArenaBlock *next, *prev;
    size_t used;
    size_t cap;
    _Alignas(max_align_t) unsigned char data[];
};

#ifdef BT_FAULT_INJECTION
static long fail_at, count;
static int fail_all;

void bt_mem_fail_after(long n, int all)
{
    fail_at = n;
    fail_all = all;
    count = 0;
}

long bt_mem_count(void) { return count; }

static int inject(void)
{
    count++;
    return fail_at > 0 && (count == fail_at || (fail_all && count > fail_at));
}
#else
static int inject(void) { return 0; }
#endif

void *bt_mem_realloc(void *p, size_t n) { return inject() ? NULL : realloc(p, n ? n : 1); }

void bt_arena_init(BtArena *a)
{
    a->head = NULL;
    a->bytes = a->peak = 0;
    a->failed = 0;
}

void bt_arena_free(BtArena *a)
{
    BtArenaBlock *b = a->head;
    while (b) {
        BtArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    bt_arena_init(a);
}

static void *nomem(BtArena *a)
{
    a->failed = 1;
    return NULL;
}

static void count_bytes(BtArena *a, size_t less, size_t more)
{
    a->bytes = a->bytes - less + more;
    if (a->bytes > a->peak)
        a->peak = a->bytes;
}

/* A block of cap bytes, linked in as the head when bump, else behind the
 * head (the head keeps its free space for the next small allocations). */
static BtArenaBlock *new_block(BtArena *a, size_t cap, int bump)
{
    BtArenaBlock *b;

    if (cap > (size_t)-1 / 2 - sizeof *b)
        return nomem(a);
    b = bt_mem_realloc(NULL, sizeof *b + cap);
    if (!b)
        return nomem(a);
    b->cap = cap;
    b->used = bump ? 0 : cap;
    if (bump || !a->head) {
        b->prev = NULL;
        b->next = a->head;
        if (a->head)
            a->head->prev = b;
        a->head = b;
    } else {
        b->prev = a->head;
        b->next = a->head->next;
        if (b->next)
            b->next->prev = b;
        a->head->next = b;
    }
    count_bytes(a, 0, sizeof *b + cap);
    return b;
}

void *bt_arena_alloc(BtArena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    BtArenaBlock *b = a->head;
    size_t cap;
    void *p;

#ifdef BT_ARENA_EXACT
    b = new_block(a, n ? n : 1, 0);
    if (!b)
        return NULL;
    memset(b->data, 0, b->cap);
    return b->data;
#endif
    if (n > (size_t)-1 / 2)
        return nomem(a);
    n = n ? (n + align - 1) & ~(align - 1) : align;
    cap = a->bytes < BT_BLOCK_MIN   ? BT_BLOCK_MIN
          : a->bytes > BT_BLOCK_MAX ? BT_BLOCK_MAX
                                    : a->bytes;
    if (n > cap / 4) {
        b = new_block(a, n, 0);
        if (!b)
            return NULL;
        memset(b->data, 0, n);
        return b->data;
    }
    if (!b || b->cap - b->used < n) {
        b = new_block(a, cap, 1);
        if (!b)
            return NULL;
    }
    p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void *bt_arena_array(BtArena *a, size_t n, size_t elem)
{
    if (elem && n > (size_t)-1 / 2 / elem)
        return nomem(a);
    return bt_arena_alloc(a, n * elem);
}

void *bt_arena_resize(BtArena *a, void *p, size_t n)
{
    BtArenaBlock *b, *nb;

    if (!n)
        n = 1;
    if (!p) {
        b = new_block(a, n, 0);
        if (!b)
            return NULL;
        memset(b->data, 0, n);
        return b->data;
    }
    b = (BtArenaBlock *)((unsigned char *)p - offsetof(BtArenaBlock, data));
    if (n > (size_t)-1 / 2 - sizeof *b)
        return nomem(a);
    nb = bt_mem_realloc(b, sizeof *nb + n);
    if (!nb)
        return nomem(a);
    if (nb->prev)
        nb->prev->next = nb;
    else
        a->head = nb;
    if (nb->next)
        nb->next->prev = nb;
    if (n > nb->cap)
        memset(nb->data + nb->cap, 0, n - nb->cap);
    count_bytes(a, sizeof *nb + nb->cap, sizeof *nb + n);
    nb->cap = nb->used = n;
    return nb->data;
}

void bt_arena_release(BtArena *a, void *p)
{
    BtArenaBlock *b;

    if (!p)
        return;
    b = (BtArenaBlock *)((unsigned char *)p - offsetof(BtArenaBlock, data));
    if (b->prev)
        b->prev->next = b->next;
    else
        a->head = b->next;
    if (b->next)
        b->next->prev = b->prev;
    count_bytes(a, sizeof *b + b->cap, 0);
    free(b);
}

char *bt_arena_strndup(BtArena *a, const char *s, size_t n)
{
    char *p = bt_arena_alloc(a, n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *bt_arena_strdup(BtArena *a, const char *s) { return bt_arena_strndup(a, s, strlen(s)); }

char *bt_arena_printf(BtArena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    int n;
    char *p;

    va_start(ap, fmt);
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return nomem(a);
    }
    p = bt_arena_alloc(a, (size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return p;
}

void bt_buf_init(BtBuf *b)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

void bt_buf_free(BtBuf *b)
{
    free(b->data);
    bt_buf_init(b);
}

static int reserve(BtBuf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    size_t cap;
    char *p;

    if (b->failed || extra > (size_t)-1 / 4 - b->len) {
        b->failed = 1;
        return -1;
    }
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    p = bt_mem_realloc(b->data, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int bt_buf_append(BtBuf *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int bt_buf_puts(BtBuf *b, const char *s) { return bt_buf_append(b, s, strlen(s)); }

int bt_buf_putc(BtBuf *b, char c) { return bt_buf_append(b, &c, 1); }

int bt_buf_vprintf(BtBuf *b, const char *fmt, va_list ap)
{
    size_t room = b->failed ? 0 : b->cap - b->len; /* with the terminator's byte */
    va_list ap2;
    int n;

    /* one pass when the text fits what the buffer has room for; else measured, grown, written */
    va_copy(ap2, ap);
    n = room ? vsnprintf(b->data + b->len, room, fmt, ap2) : vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n >= 0 && (size_t)n < room) {
        b->len += (size_t)n;
        return 0;
    }
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int bt_buf_printf(BtBuf *b, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = bt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

const char *bt_buf_str(const BtBuf *b) { return b->data ? b->data : ""; }
