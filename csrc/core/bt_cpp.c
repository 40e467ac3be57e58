/* bt_cpp.c - reading the C preprocessor's output: its line markers. */
#include "bt_cpp.h"

#include <string.h>

/* The main file's text holds at most PAD_PER_BYTE lines a byte of output
 * plus PAD_SLACK: a marker's line number past it is refused (memory stays
 * linear in the input; cpp drops the lines of a skipped #if block, so a
 * short output may name long headers' lines). */
#define PAD_PER_BYTE 8
#define PAD_SLACK 100000

typedef struct Marker {
    long line;        /* the line the next line of output is */
    const char *name; /* the file's name as written between the quotes, or NULL */
    size_t name_len;
} Marker;

static const char *skip_blanks(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

/* Whether the line [s, end) is a marker: '#' ['line'] LINE ["NAME" FLAGS*]. */
static int read_marker(const char *s, const char *end, Marker *m)
{
    long line = 0;

    s = skip_blanks(s, end);
    if (s == end || *s != '#')
        return 0;
    s = skip_blanks(s + 1, end);
    if (end - s > 4 && memcmp(s, "line", 4) == 0 && (s[4] == ' ' || s[4] == '\t'))
        s = skip_blanks(s + 4, end);
    if (s == end || *s < '0' || *s > '9')
        return 0;
    for (; s < end && *s >= '0' && *s <= '9'; s++)
        if ((line = line * 10 + (*s - '0')) > 2000000000L)
            return 0;
    m->line = line;
    m->name = NULL;
    m->name_len = 0;
    s = skip_blanks(s, end);
    if (s < end && *s == '"') {
        const char *q = ++s;
        while (q < end && *q != '"')
            q += *q == '\\' && q + 1 < end ? 2 : 1;
        if (q == end)
            return 0;
        m->name = s;
        m->name_len = (size_t)(q - s);
    }
    return 1;
}

static int first_line_is_marker(const char *text, size_t len, Marker *m)
{
    const char *end = memchr(text, '\n', len);
    return read_marker(text, end ? end : text + len, m) && m->name;
}

int bt_cpp_is_output(const char *text, size_t len)
{
    Marker m;
    return first_line_is_marker(text, len, &m);
}

/* Puts line [s, e) of an own file at line number `line` of b, where
 * *written lines are: blank lines up to it, or joined to the last line when
 * the output is already past it. */
static int put_line(BtBuf *b, long *written, long line, const char *s, const char *e)
{
    if (line > *written + 1) {
        for (; *written + 1 < line; ++*written)
            bt_buf_putc(b, '\n');
    } else if (line <= *written && b->len > 0) {
        b->len--; /* its '\n': the line joins the last one */
        bt_buf_putc(b, ' ');
        --*written;
    }
    bt_buf_append(b, s, (size_t)(e - s));
    bt_buf_putc(b, '\n');
    ++*written;
    return b->failed ? -1 : 0;
}

static char *arena_copy(BtArena *arena, const BtBuf *b, size_t *len)
{
    char *r = bt_arena_alloc(arena, b->len + 1);
    if (r) {
        if (b->len)
            memcpy(r, b->data, b->len);
        r[b->len] = '\0';
    }
    *len = b->len;
    return r;
}

/* A file of the header's own (see bt_cpp.h): name [n] against the main
 * file's stem. A stem of one or two characters (z3.h) owns only the names
 * it starts with an '_' after (z3_api.h), not every name of its letters. */
static int is_own(const char *name, size_t n, const char *stem, size_t stem_len)
{
    const char *s = name, *e = name + n, *c;

    if (stem_len == 0)
        return 0;
    while (s < e) { /* each folder component, then the base name */
        c = memchr(s, '/', (size_t)(e - s));
        if (!c)
            return (size_t)(e - s) >= stem_len && memcmp(s, stem, stem_len) == 0 &&
                   (stem_len >= 3 || ((size_t)(e - s) > stem_len && s[stem_len] == '_'));
        if ((size_t)(c - s) == stem_len && memcmp(s, stem, stem_len) == 0)
            return 1;
        s = c + 1;
    }
    return 0;
}

/* The main file's stem: its base name up to the first '.'. */
static void stem_of(const char *name, size_t n, const char **stem, size_t *len)
{
    const char *s = name + n, *dot;

    while (s > name && s[-1] != '/')
        s--;
    dot = memchr(s, '.', (size_t)(name + n - s));
    *stem = s;
    *len = (size_t)((dot ? dot : name + n) - s);
}

typedef struct Own {
    const char *name;
    size_t name_len;
    BtBuf b;
    long written; /* lines put in b */
} Own;

typedef struct Split {
    const char *text;
    size_t len;
    const char *main_name, *stem;
    size_t main_name_len, stem_len;
    Own own[BT_CPP_MAX_OWN + 1]; /* own[0]: the main file */
    int n_own;
    int cur; /* the own file lines now go to, or -1 (the context) */
    BtBuf context;
} Split;

/* The own file a marker names (-1: the context's), added when new. */
static int own_file(Split *sp, const Marker *m)
{
    int i;

    for (i = 0; i < sp->n_own; i++)
        if (sp->own[i].name_len == m->name_len && !memcmp(sp->own[i].name, m->name, m->name_len))
            return i;
    if (sp->n_own > BT_CPP_MAX_OWN || !is_own(m->name, m->name_len, sp->stem, sp->stem_len))
        return -1;
    memset(&sp->own[sp->n_own], 0, sizeof sp->own[0]);
    sp->own[sp->n_own].name = m->name;
    sp->own[sp->n_own].name_len = m->name_len;
    bt_buf_init(&sp->own[sp->n_own].b);
    return sp->n_own++;
}

static int lines(Split *sp, const char *file, BtDiag *diag)
{
    const char *s = sp->text, *end = sp->text + sp->len;
    long line = 1, out_line = 0;
    Marker m;

    while (s < end) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e)
            e = end;
        out_line++;
        if (read_marker(s, e, &m)) {
            line = m.line;
            if (m.name)
                sp->cur = own_file(sp, &m);
        } else if (sp->cur >= 0) {
            Own *o = &sp->own[sp->cur];
            if (line > (long)sp->len * PAD_PER_BYTE + PAD_SLACK)
                return bt_diag_set(diag, BT_DIAG_HEADER, file, (int)out_line, 1,
                                   "line marker names line %ld of %.*s, past what %zu bytes of "
                                   "preprocessor output can hold",
                                   line, (int)o->name_len, o->name, sp->len);
            if (put_line(&o->b, &o->written, line, s, e) < 0)
                return bt_diag_nomem(diag);
            line++;
        } else {
            bt_buf_append(&sp->context, s, (size_t)(e - s));
            bt_buf_putc(&sp->context, '\n');
            line++;
        }
        s = e + 1;
    }
    return 0;
}

static int hand_over(Split *sp, BtArena *arena, BtCppSplit *out, BtDiag *diag)
{
    int i;

    for (i = 0; i < sp->n_own; i++)
        if (sp->own[i].b.failed)
            return bt_diag_nomem(diag);
    if (sp->context.failed)
        return bt_diag_nomem(diag);
    out->main = arena_copy(arena, &sp->own[0].b, &out->main_len);
    out->context = arena_copy(arena, &sp->context, &out->context_len);
    out->main_file = bt_arena_strndup(arena, sp->main_name, sp->main_name_len);
    out->own = bt_arena_alloc(arena, (size_t)sp->n_own * sizeof *out->own);
    if (!out->main || !out->context || !out->main_file || !out->own)
        return bt_diag_nomem(diag);
    for (i = 1; i < sp->n_own; i++) {
        BtCppFile *f = &out->own[out->n_own++];
        f->name = bt_arena_strndup(arena, sp->own[i].name, sp->own[i].name_len);
        f->text = arena_copy(arena, &sp->own[i].b, &f->len);
        if (!f->name || !f->text)
            return bt_diag_nomem(diag);
    }
    return 0;
}

int bt_cpp_split(const char *file, const char *text, size_t len, BtArena *arena, BtCppSplit *out,
                 BtDiag *diag)
{
    Split *sp;
    Marker m;
    int i, rc;

    memset(out, 0, sizeof *out);
    if (!first_line_is_marker(text, len, &m))
        return bt_diag_set(diag, BT_DIAG_HEADER, file, 1, 1,
                           "not the C preprocessor's output (no line marker on line 1)");
    if (!(sp = bt_arena_alloc(arena, sizeof *sp)))
        return bt_diag_nomem(diag);
    memset(sp, 0, sizeof *sp);
    sp->text = text;
    sp->len = len;
    sp->main_name = m.name;
    sp->main_name_len = m.name_len;
    stem_of(m.name, m.name_len, &sp->stem, &sp->stem_len);
    sp->own[0].name = m.name;
    sp->own[0].name_len = m.name_len;
    sp->n_own = 1;
    bt_buf_init(&sp->own[0].b);
    bt_buf_init(&sp->context);
    rc = lines(sp, file, diag);
    if (rc == 0)
        rc = hand_over(sp, arena, out, diag);
    for (i = 0; i < sp->n_own; i++)
        bt_buf_free(&sp->own[i].b);
    bt_buf_free(&sp->context);
    return rc;
}
