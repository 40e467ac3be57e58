/* bt_arena.c - bump allocator and growable string. */
#include "bt_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BT_ARENA_MIN 8192

struct BtArenaBlock {
    BtArenaBlock *next;
    size_t used;
    size_t cap;
    _Alignas(max_align_t) unsigned char data[];
};

void bt_arena_init(BtArena *a) { a->head = NULL; }

void bt_arena_free(BtArena *a)
{
    BtArenaBlock *b = a->head;
    while (b) {
        BtArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

void *bt_arena_alloc(BtArena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    BtArenaBlock *b = a->head;
    void *p;

    n = (n + align - 1) & ~(align - 1);
    if (n == 0)
        n = align;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BT_ARENA_MIN ? n : BT_ARENA_MIN;
        b = malloc(sizeof(BtArenaBlock) + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
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

char *bt_arena_strdup(BtArena *a, const char *s)
{
    return bt_arena_strndup(a, s, strlen(s));
}

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
        return NULL;
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

    if (b->failed)
        return -1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    p = realloc(b->data, cap);
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
    va_list ap2;
    int n;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
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
