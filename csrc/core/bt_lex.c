/* bt_lex.c - tokens of a kernel header, comments kept for docstrings. */
#include "bt_lex.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bt_lex_init(BtLexer *lx, const char *file, const char *text, size_t len)
{
    memset(lx, 0, sizeof *lx);
    lx->file = file;
    lx->p = text;
    lx->end = text + len;
    lx->line = 1;
    lx->col = 1;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* a UTF-8 byte order mark */
        lx->p += 3;
}

/* Length of the well-formed UTF-8 sequence at s (n > 0 bytes there), or 0
 * for a byte that starts none: Python's strict decoder rules (no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_len(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned long cp;
    size_t len, i;

    if (u[0] < 0x80)
        return 1;
    if (u[0] >= 0xC2 && u[0] <= 0xDF)
        len = 2, cp = u[0] & 0x1Fu;
    else if (u[0] >= 0xE0 && u[0] <= 0xEF)
        len = 3, cp = u[0] & 0x0Fu;
    else if (u[0] >= 0xF0 && u[0] <= 0xF4)
        len = 4, cp = u[0] & 0x07u;
    else
        return 0;
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (u[i] & 0x3Fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

/* The parser asks this of every token many times: the first byte decides
 * most of them before strlen. */
int bt_lex_is(const BtToken *t, const char *s)
{
    size_t n;

    if (t->kind == BT_TOK_EOF || t->kind == BT_TOK_ERROR || t->len == 0 || *t->s != *s)
        return 0;
    n = strlen(s);
    return (size_t)t->len == n && memcmp(t->s, s, n) == 0;
}

static int peekc(const BtLexer *lx, size_t k)
{
    return (size_t)(lx->end - lx->p) > k ? (unsigned char)lx->p[k] : -1;
}

static void adv(BtLexer *lx)
{
    if (*lx->p == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->p++;
}

static int is_ident_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c >= 0x80;
}

static int is_digit(int c) { return c >= '0' && c <= '9'; }

/* The error token sits at `at` (line, col), so bt_lex_col finds its column. */
static int fail(BtLexer *lx, BtToken *t, BtDiag *err, const char *at, int line, int col,
                const char *msg)
{
    t->kind = BT_TOK_ERROR;
    t->s = at;
    t->line = line;
    t->len = 0;
    return bt_diag_set(err, BT_DIAG_HEADER, lx->file, line, col, "%s", msg);
}

/* A comment from start (on line start_line) to the current position: joins
 * the block above the next token, unless it trails a token on its line or a
 * blank line separates it from the block so far. */
static void note_comment(BtLexer *lx, const char *start, int start_line)
{
    if (lx->tok_line == start_line) {
        lx->blk = NULL;
        return;
    }
    if (!lx->blk || start_line > lx->blk_line + 1)
        lx->blk = start;
    lx->blk_end = lx->p;
    lx->blk_line = lx->line;
}

static const char *skip_blank(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

/* Whether [s, end) starts with word w followed by no identifier character;
 * the position after it, or NULL. */
static const char *word_at(const char *s, const char *end, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(end - s) < n || memcmp(s, w, n) != 0)
        return NULL;
    s += n;
    return s < end && is_ident_char((unsigned char)*s) ? NULL : s;
}

/* The directive from '#' at s to the end of its first physical line: a
 * BtDirective when bindthem reads it (counted, and stored when lx->dirs). */
static void note_directive(BtLexer *lx, const char *s, int line)
{
    const char *eol = memchr(s, '\n', (size_t)(lx->end - s)), *word, *w, *name = NULL;
    BtDirKind kind = BT_DIR_OMP;
    BtDirective *d;
    size_t n;

    if (!eol)
        eol = lx->end;
    word = skip_blank(s + 1, eol);
    if ((w = word_at(word, eol, "pragma")) && word_at(skip_blank(w, eol), eol, "omp")) {
        n = (size_t)(eol - s);
        while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\f' ||
                     s[n - 1] == '\v'))
            n--;
    } else if ((w = word_at(word, eol, "pragma")) && word_at(skip_blank(w, eol), eol, "pack")) {
        kind = BT_DIR_PACK;
        n = (size_t)(eol - s);
    } else if ((w = word_at(word, eol, "define")) && (w = skip_blank(w, eol)) < eol) {
        kind = BT_DIR_DEFINE;
        s = w;
        n = (size_t)(eol - w);
    } else if ((w = word_at(word, eol, "include")) && (w = skip_blank(w, eol)) < eol && *w == '"') {
        const char *q = memchr(w + 1, '"', (size_t)(eol - w - 1));
        if (!q)
            return;
        name = w + 1;
        n = (size_t)(q - name);
        kind = BT_DIR_INCLUDE;
    } else {
        return;
    }
    if (lx->dirs) {
        d = &lx->dirs[lx->n_dirs];
        d->kind = kind;
        d->line = line;
        d->text = bt_arena_strndup(lx->arena, name ? name : s, n);
    }
    lx->n_dirs++;
}

/* A preprocessor line, with backslash continuations and comments in it. */
static void skip_directive(BtLexer *lx)
{
    note_directive(lx, lx->p, lx->line);
    lx->blk = NULL;
    while (lx->p < lx->end && *lx->p != '\n') {
        int c = *lx->p;
        if (c == '\\' && (peekc(lx, 1) == '\n' || (peekc(lx, 1) == '\r' && peekc(lx, 2) == '\n'))) {
            adv(lx);
            while (*lx->p != '\n')
                adv(lx);
            adv(lx);
        } else if (c == '/' && peekc(lx, 1) == '*') {
            adv(lx);
            adv(lx);
            while (lx->p < lx->end && !(*lx->p == '*' && peekc(lx, 1) == '/'))
                adv(lx);
            if (lx->p < lx->end) {
                adv(lx);
                adv(lx);
            }
        } else if (c == '/' && peekc(lx, 1) == '/') {
            while (lx->p < lx->end && *lx->p != '\n')
                adv(lx);
        } else if (c == '"') {
            adv(lx);
            while (lx->p < lx->end && *lx->p != '"' && *lx->p != '\n') {
                if (*lx->p == '\\' && peekc(lx, 1) != '\n' && peekc(lx, 1) >= 0)
                    adv(lx);
                adv(lx);
            }
            if (lx->p < lx->end && *lx->p == '"')
                adv(lx);
        } else {
            adv(lx);
        }
    }
}

/* Skips whitespace, comments and preprocessor lines. */
static int skip_space(BtLexer *lx, BtToken *t, BtDiag *err)
{
    while (lx->p < lx->end) {
        int c = *lx->p;
        const char *start = lx->p;
        int line = lx->line, col = lx->col;

        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
            adv(lx);
        } else if (c == '\\' && (peekc(lx, 1) == '\n' || peekc(lx, 1) == '\r')) {
            adv(lx);
        } else if (c == '#' && lx->tok_line < lx->line) {
            skip_directive(lx);
        } else if (c == '/' && peekc(lx, 1) == '/') {
            while (lx->p < lx->end && *lx->p != '\n')
                adv(lx);
            note_comment(lx, start, line);
        } else if (c == '/' && peekc(lx, 1) == '*') {
            adv(lx);
            adv(lx);
            while (lx->p < lx->end && !(*lx->p == '*' && peekc(lx, 1) == '/'))
                adv(lx);
            if (lx->p >= lx->end)
                return fail(lx, t, err, start, line, col, "unterminated comment");
            adv(lx);
            adv(lx);
            note_comment(lx, start, line);
        } else {
            break;
        }
    }
    return 0;
}

/* A quoted literal from the opening quote q; escapes skipped. */
static int lex_quoted(BtLexer *lx, BtToken *t, BtDiag *err, int q)
{
    adv(lx);
    for (;;) {
        int c = peekc(lx, 0);
        if (c < 0 || c == '\n')
            return fail(lx, t, err, t->s, t->line, lx->tok_col,
                        q == '"' ? "unterminated string" : "unterminated character literal");
        adv(lx);
        if (c == q)
            return 0;
        if (c == '\\' && lx->p < lx->end)
            adv(lx);
    }
}

/* R"delim( ... )delim" from the opening quote. */
static int lex_raw(BtLexer *lx, BtToken *t, BtDiag *err)
{
    const char *delim;
    size_t dlen, i;

    adv(lx);
    delim = lx->p;
    while (lx->p < lx->end && *lx->p != '(' && lx->p - delim <= 16) {
        if (*lx->p == '\n' || *lx->p == '"' || *lx->p == ' ' || *lx->p == ')')
            break;
        adv(lx);
    }
    if (lx->p >= lx->end || *lx->p != '(')
        return fail(lx, t, err, t->s, t->line, lx->tok_col, "invalid raw string delimiter");
    dlen = (size_t)(lx->p - delim);
    adv(lx);
    while (lx->p < lx->end) {
        if (*lx->p == ')' && (size_t)(lx->end - lx->p) > dlen + 1 &&
            memcmp(lx->p + 1, delim, dlen) == 0 && lx->p[dlen + 1] == '"') {
            for (i = 0; i < dlen + 2; i++)
                adv(lx);
            return 0;
        }
        adv(lx);
    }
    return fail(lx, t, err, t->s, t->line, lx->tok_col, "unterminated raw string");
}

/* Identifiers become Python names: their bytes must be UTF-8 (a Latin-1
 * header would fail later, in the decoder, with no location). */
static int check_utf8_ident(BtLexer *lx, BtToken *t, BtDiag *err)
{
    const char *q = t->s;
    char msg[200];
    size_t k;

    for (; q < lx->p; q += k) {
        if (!(k = utf8_len(q, (size_t)(lx->p - q)))) {
            snprintf(msg, sizeof msg,
                     "invalid UTF-8 (byte 0x%02x) in an identifier; bindthem reads headers as "
                     "UTF-8: convert the file, e.g. iconv -f latin1 -t utf-8",
                     (unsigned char)*q);
            return fail(lx, t, err, q, t->line, lx->tok_col + (int)(q - t->s), msg);
        }
    }
    return 0;
}

/* Appends s[0..n) with each byte that starts no well-formed UTF-8 sequence
 * replaced by U+FFFD: comments may be in any encoding, docstrings must be
 * str. */
static void append_utf8_lenient(BtBuf *b, const char *s, size_t n)
{
    size_t i = 0, k;

    while (i < n) {
        if ((k = utf8_len(s + i, n - i))) {
            bt_buf_append(b, s + i, k);
            i += k;
        } else {
            bt_buf_puts(b, "\xEF\xBF\xBD");
            i++;
        }
    }
}

static int is_one_of(const char *s, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == n && memcmp(*list, s, n) == 0)
            return 1;
    return 0;
}

int bt_lex_next(BtLexer *lx, BtToken *t, BtDiag *err)
{
    static const char *const str_prefix[] = {"L", "u", "U", "u8", NULL};
    static const char *const raw_prefix[] = {"R", "LR", "uR", "UR", "u8R", NULL};
    int c, r = 0;

    memset(t, 0, sizeof *t);
    if (skip_space(lx, t, err) < 0)
        return -1;
    t->s = lx->p;
    t->line = lx->line;
    lx->tok_col = lx->col;
    lx->doc = lx->doc_end = NULL;
    if (lx->blk && lx->line <= lx->blk_line + 1) {
        lx->doc = lx->blk;
        lx->doc_end = lx->blk_end;
    }
    lx->blk = NULL;
    if (lx->p >= lx->end) {
        t->kind = BT_TOK_EOF;
        return 0;
    }
    lx->tok_line = lx->line;
    c = (unsigned char)*lx->p;
    if (is_ident_char(c) && !is_digit(c)) {
        size_t n;
        t->kind = BT_TOK_IDENT;
        while (lx->p < lx->end && is_ident_char((unsigned char)*lx->p))
            adv(lx);
        n = (size_t)(lx->p - t->s);
        if (check_utf8_ident(lx, t, err) < 0)
            return -1;
        if (peekc(lx, 0) == '"' && is_one_of(t->s, n, raw_prefix)) {
            t->kind = BT_TOK_STRING;
            r = lex_raw(lx, t, err);
        } else if ((peekc(lx, 0) == '"' || peekc(lx, 0) == '\'') &&
                   is_one_of(t->s, n, str_prefix)) {
            t->kind = peekc(lx, 0) == '"' ? BT_TOK_STRING : BT_TOK_CHAR;
            r = lex_quoted(lx, t, err, peekc(lx, 0));
        }
    } else if (is_digit(c) || (c == '.' && is_digit(peekc(lx, 1)))) {
        t->kind = BT_TOK_NUMBER;
        for (;;) {
            int d = peekc(lx, 0);
            if ((d == '+' || d == '-') && strchr("eEpP", lx->p[-1]))
                adv(lx);
            else if (d == '\'' && is_ident_char(peekc(lx, 1)))
                adv(lx);
            else if (d >= 0 && (is_ident_char(d) || d == '.'))
                adv(lx);
            else
                break;
        }
    } else if (c == '"' || c == '\'') {
        t->kind = c == '"' ? BT_TOK_STRING : BT_TOK_CHAR;
        r = lex_quoted(lx, t, err, c);
    } else {
        t->kind = BT_TOK_PUNCT;
        if (c == ':' && peekc(lx, 1) == ':') {
            adv(lx);
        } else if (c == '.' && peekc(lx, 1) == '.' && peekc(lx, 2) == '.') {
            adv(lx);
            adv(lx);
        }
        adv(lx);
    }
    if (r < 0)
        return -1;
    if (lx->p - t->s >= BT_LEX_MAX_TOKEN)
        return fail(lx, t, err, t->s, t->line, lx->tok_col, "token longer than 128 MiB");
    t->len = (unsigned)(lx->p - t->s);
    return 0;
}

/* Two passes, so that the arrays are exactly sized: tokens are most of the
 * memory a header costs (16 bytes per token, up to one token per byte). */
int bt_lex_all(const char *file, const char *text, size_t len, BtArena *arena, BtTokens *out,
               BtDiag *diag)
{
    BtLexer lx;
    BtToken t;
    BtDiag scratch;
    unsigned *ls;
    const char *q, *start;
    int pass, n = 0, n_docs = 0, n_lines = 1;

    memset(out, 0, sizeof *out);
    bt_diag_init(&out->err);
    out->text = text;
    if (len > INT_MAX / 2)
        return bt_diag_set(diag, BT_DIAG_HEADER, file, 0, 0,
                           "header is too large (%zu bytes; at most 1 GiB)", len);
    for (q = text; q < text + len && (q = memchr(q, '\n', (size_t)(text + len - q))); q++)
        n_lines++;
    for (pass = 0; pass < 2; pass++) {
        bt_lex_init(&lx, file, text, len);
        lx.dirs = out->dirs;
        lx.arena = arena;
        start = lx.p; /* after a byte order mark */
        bt_diag_init(&scratch);
        for (;;) {
            int r = bt_lex_next(&lx, &t, pass ? &out->err : &scratch);
            if (pass == 0) {
                n++;
                n_docs += lx.doc != NULL;
            } else {
                if (lx.doc) {
                    out->docs[out->n_docs].tok = out->n;
                    out->docs[out->n_docs].doc = lx.doc;
                    out->docs[out->n_docs++].doc_end = lx.doc_end;
                }
                out->v[out->n++] = t;
            }
            if (r < 0 || t.kind == BT_TOK_EOF)
                break;
        }
        if (pass == 1) {
            int i;
            out->n_dirs = lx.n_dirs;
            for (i = 0; i < out->n_dirs; i++)
                if (!out->dirs[i].text)
                    return bt_diag_nomem(diag);
            break;
        }
        out->v = bt_arena_resize(arena, NULL, (size_t)n * sizeof *out->v);
        out->docs = bt_arena_resize(arena, NULL, (size_t)n_docs * sizeof *out->docs);
        out->line_start = ls = bt_arena_resize(arena, NULL, (size_t)n_lines * sizeof *ls);
        out->dirs = bt_arena_alloc(arena, (size_t)lx.n_dirs * sizeof *out->dirs + 1);
        if (!out->v || !out->docs || !ls || !out->dirs)
            return bt_diag_nomem(diag);
        out->n_lines = n_lines;
        ls[0] = (unsigned)(start - text);
        n_lines = 1;
        for (q = text; q < text + len && (q = memchr(q, '\n', (size_t)(text + len - q))); q++)
            ls[n_lines++] = (unsigned)(q + 1 - text);
    }
    return 0;
}

const char *bt_lex_utf8_text(BtArena *arena, const char *s)
{
    size_t n = strlen(s), i = 0;
    char *out = bt_arena_alloc(arena, 4 * n + 1), *w = out;

    if (!out)
        return NULL;
    while (i < n) {
        size_t k = utf8_len(s + i, n - i);
        if (k == 0) {
            w += sprintf(w, "\\x%02x", (unsigned char)s[i]);
            i++;
        } else {
            memcpy(w, s + i, k);
            w += k;
            i += k;
        }
    }
    *w = '\0';
    return out;
}

/* The end of an attribute starting at token i ('[' '[' ... ']' ']', or a word
 * of attr_words then '(' ... ')'): the index after it, or -1 when token i
 * starts none; -1 with *stop past i when it starts one that does not close
 * (a bracket closed by the wrong kind, nesting over 64, end of file). */
static int attribute_end(const BtTokens *tk, int i, int *stop)
{
    static const char *const attr_words[] = {"__attribute__",     "__declspec", "alignas",
                                             "__launch_bounds__", "_Alignas",   NULL};
    char stack[64];
    int sp = 0, k, j = i;

    if (bt_lex_is(&tk->v[i], "[")) {
        if (!bt_lex_is(&tk->v[i + 1], "["))
            return -1;
    } else {
        for (k = 0; attr_words[k] && !bt_lex_is(&tk->v[i], attr_words[k]); k++)
            ;
        if (!attr_words[k] || !bt_lex_is(&tk->v[i + 1], "("))
            return -1;
        j = i + 1;
    }
    for (; j < tk->n - 1; j++) {
        const BtToken *t = &tk->v[j];
        char c = t->kind != BT_TOK_PUNCT || t->len != 1 ? 0 : *t->s;
        if (c == '(' || c == '[' || c == '{') {
            if (sp == (int)sizeof stack)
                break;
            stack[sp++] = c == '(' ? ')' : c == '[' ? ']' : '}';
        } else if (c == ')' || c == ']' || c == '}') {
            if (stack[sp - 1] != c)
                break;
            if (--sp == 0)
                return j + 1;
        }
    }
    *stop = j > i ? j : i + 1;
    return -1;
}

/* Moves the comment blocks above tokens before `upto` to the token at w. */
static void move_docs(BtTokens *tk, int *d, int *nd, int upto, int w)
{
    for (; *d < tk->n_docs && tk->docs[*d].tok < upto; (*d)++) {
        if (*nd > 0 && tk->docs[*nd - 1].tok == w)
            (*nd)--; /* the nearer block wins */
        tk->docs[*nd] = tk->docs[*d];
        tk->docs[(*nd)++].tok = w;
    }
}

int bt_lex_strip_attributes(BtTokens *tk)
{
    int i = 0, w = 0, d = 0, nd = 0, removed = 0;

    while (i < tk->n) {
        int stop = i + 1, e = i < tk->n - 1 ? attribute_end(tk, i, &stop) : -1;
        if (e > i) { /* removed: its comment block moves to the next token kept */
            removed += e - i;
            i = e;
            continue;
        }
        for (; i < stop; i++) {
            move_docs(tk, &d, &nd, i + 1, w);
            tk->v[w++] = tk->v[i];
        }
    }
    tk->n = w;
    tk->n_docs = nd;
    return removed;
}

void bt_lex_release(BtTokens *toks, BtArena *arena)
{
    bt_arena_release(arena, toks->v);
    bt_arena_release(arena, toks->docs);
    bt_arena_release(arena, (void *)toks->line_start);
    toks->v = NULL;
    toks->docs = NULL;
    toks->line_start = NULL;
    toks->n = toks->n_docs = toks->n_lines = 0;
}

int bt_lex_col(const BtTokens *toks, const BtToken *t)
{
    if (!t->s || t->line < 1 || t->line > toks->n_lines)
        return 0;
    return (int)(t->s - toks->text - toks->line_start[t->line - 1]) + 1;
}

int bt_lex_doc_span(const BtTokens *toks, int i, const char **doc, const char **end)
{
    int lo = 0, hi = toks->n_docs;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (toks->docs[mid].tok < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == toks->n_docs || toks->docs[lo].tok != i)
        return 0;
    *doc = toks->docs[lo].doc;
    *end = toks->docs[lo].doc_end;
    return 1;
}

/* ---- docstrings ---- */

typedef struct DocLine {
    const char *s;
    size_t len;
    int first; /* first line of a block comment: indentation not counted */
} DocLine;

typedef struct DocLines {
    DocLine *v;
    int n, cap;
} DocLines;

static int push_line(BtArena *arena, DocLines *dl, const char *s, size_t len, int first)
{
    if (dl->n == dl->cap) {
        int ncap = dl->cap ? 2 * dl->cap : 32;
        DocLine *v = bt_arena_alloc(arena, (size_t)ncap * sizeof *v);
        if (!v)
            return -1;
        if (dl->n)
            memcpy(v, dl->v, (size_t)dl->n * sizeof *v);
        dl->v = v;
        dl->cap = ncap;
    }
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    if (first) {
        while (len > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
    }
    dl->v[dl->n].s = s;
    dl->v[dl->n].len = len;
    dl->v[dl->n].first = first;
    dl->n++;
    return 0;
}

/* The lines of one block comment's body [s, e), ' * ' prefixes removed. */
static int split_block(BtArena *arena, DocLines *dl, const char *s, const char *e)
{
    int first = 1;

    while (s < e && *s == '*')
        s++;
    if (s < e && *s == '!') /* Doxygen's Qt-style opener */
        s++;
    for (;;) {
        const char *nl = memchr(s, '\n', (size_t)(e - s));
        const char *le = nl ? nl : e;
        if (!first) {
            const char *q = s;
            while (q < le && (*q == ' ' || *q == '\t'))
                q++;
            if (q < le && *q == '*')
                s = q + 1;
        }
        if (push_line(arena, dl, s, (size_t)(le - s), first) < 0)
            return -1;
        if (!nl)
            return 0;
        s = nl + 1;
        first = 0;
    }
}

static size_t indent_of(const DocLine *l)
{
    size_t i = 0;
    while (i < l->len && (l->s[i] == ' ' || l->s[i] == '\t'))
        i++;
    return i;
}

int bt_lex_doc(BtArena *arena, const char *begin, const char *end, const char **out, BtDiag *diag)
{
    DocLines dl = {NULL, 0, 0};
    BtBuf buf;
    const char *p = begin;
    size_t common = (size_t)-1;
    int i, lo, hi, ret = -1;

    bt_buf_init(&buf);
    *out = "";
    if (!begin)
        return 0;
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || *p == '\f' || *p == '\v') {
            p++;
        } else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
            const char *le = memchr(p, '\n', (size_t)(end - p));
            if (!le)
                le = end;
            p += 2;
            while (p < le && *p == '/')
                p++;
            if (p < le && *p == '!')
                p++;
            if (push_line(arena, &dl, p, (size_t)(le - p), 0) < 0)
                goto error;
            p = le;
        } else if (end - p >= 4 && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            if (split_block(arena, &dl, p + 2, q) < 0)
                goto error;
            p = q + 2;
        } else {
            break; /* not a comment: the lexer never hands us one */
        }
    }
    for (i = 0; i < dl.n; i++) {
        size_t ind = indent_of(&dl.v[i]);
        if (!dl.v[i].first && ind < dl.v[i].len && ind < common)
            common = ind;
    }
    lo = 0;
    hi = dl.n;
    while (lo < hi && dl.v[lo].len == 0)
        lo++;
    while (hi > lo && dl.v[hi - 1].len == 0)
        hi--;
    for (i = lo; i < hi; i++) {
        const DocLine *l = &dl.v[i];
        size_t skip = l->first ? 0 : common;
        if (skip > l->len)
            skip = l->len;
        if (i > lo)
            bt_buf_putc(&buf, '\n');
        append_utf8_lenient(&buf, l->s + skip, l->len - skip);
    }
    if (buf.failed)
        goto error;
    *out = bt_arena_strdup(arena, bt_buf_str(&buf));
    if (!*out)
        goto error;
    ret = 0;
error:
    if (ret < 0) {
        *out = "";
        bt_diag_nomem(diag);
    }
    bt_buf_free(&buf);
    return ret;
}

/* ---- literals (default arguments) ---- */

static const char *skip_blanks(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    return s;
}

static int digit_value(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/* 'c' with the escapes a char can hold (no universal names, no multi-char) */
static int lit_char(const char *s, BtLiteral *out)
{
    static const char plain[] = "n\nt\tr\ra\ab\bf\fv\v\\\\''\"\"??"; /* escape, value */
    unsigned long long c = 0;
    int i, k;

    if (*s == '\\') {
        s++;
        if (*s == 'x') {
            for (s++, k = 0; digit_value((unsigned char)*s) < 16; s++, k++)
                if ((c = c * 16 + (unsigned)digit_value((unsigned char)*s)) > 0xFF)
                    return -1;
            if (k == 0)
                return -1;
        } else if (*s >= '0' && *s <= '7') {
            for (k = 0; k < 3 && *s >= '0' && *s <= '7'; s++, k++)
                c = c * 8 + (unsigned)(*s - '0');
            if (c > 0xFF)
                return -1;
        } else {
            for (i = 0; plain[i] && plain[i] != *s; i += 2)
                ;
            if (!plain[i])
                return -1;
            c = (unsigned char)plain[i + 1];
            s++;
        }
    } else {
        /* one byte: a UTF-8 sequence is no char */
        if (*s == '\'' || *s == '\0' || *s == '\n' || (unsigned char)*s >= 0x80)
            return -1;
        c = (unsigned char)*s++;
    }
    if (*s != '\'' || *skip_blanks(s + 1))
        return -1;
    out->kind = BT_LIT_CHAR;
    out->u = c;
    return 0;
}

/* An integer's digits in base (suffixes already cut); -1 past 64 bits. */
static int lit_int(const char *s, size_t n, int base, BtLiteral *out)
{
    unsigned long long v = 0;
    size_t i;

    if (n == 0)
        return -1;
    for (i = 0; i < n; i++) {
        int d = digit_value((unsigned char)s[i]);
        if (d >= base || v > (~0ULL - (unsigned)d) / (unsigned)base)
            return -1;
        v = v * (unsigned)base + (unsigned)d;
    }
    out->kind = BT_LIT_INT;
    out->u = v;
    return 0;
}

/* A floating literal's text (suffix cut): digits, one point, an exponent. */
static int lit_float(const char *s, size_t n, int hex, BtLiteral *out)
{
    char buf[128], *end;
    size_t i = hex ? 2 : 0;
    int digits = 0, point = 0;
    double d;

    if (n >= sizeof buf)
        return -1;
    for (; i < n && s[i] != (hex ? 'p' : 'e') && s[i] != (hex ? 'P' : 'E'); i++) {
        if (s[i] == '.' && !point)
            point = 1;
        else if (digit_value((unsigned char)s[i]) < (hex ? 16 : 10))
            digits++;
        else
            return -1;
    }
    if (!digits || (hex && i == n))
        return -1;
    if (i < n) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i == n)
            return -1;
        for (; i < n; i++)
            if (!is_digit((unsigned char)s[i]))
                return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    d = strtod(buf, &end);
    if (end != buf + n || !isfinite(d))
        return -1;
    out->kind = BT_LIT_FLOAT;
    out->d = d;
    return 0;
}

int bt_lex_literal(const char *text, BtLiteral *out)
{
    const char *s = skip_blanks(text), *e;
    size_t n, k;
    int neg = 0, hex, is_float, rc;

    memset(out, 0, sizeof *out);
    if (*s == '\'')
        return lit_char(s + 1, out);
    for (e = s; is_ident_char((unsigned char)*e); e++)
        ;
    if (!*skip_blanks(e) &&
        ((e - s == 4 && !memcmp(s, "true", 4)) || (e - s == 5 && !memcmp(s, "false", 5)))) {
        out->kind = BT_LIT_BOOL;
        out->u = *s == 't';
        return 0;
    }
    if (*s == '-' || *s == '+') {
        neg = *s == '-';
        s = skip_blanks(s + 1);
    }
    if (!is_digit((unsigned char)*s) && !(*s == '.' && is_digit((unsigned char)s[1])))
        return -1;
    hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    for (e = s; is_ident_char((unsigned char)*e) || *e == '.' ||
                ((*e == '+' || *e == '-') && strchr(hex ? "pP" : "eE", e[-1]));
         e++)
        ;
    if (*skip_blanks(e))
        return -1;
    n = (size_t)(e - s);
    is_float = hex ? strpbrk(s, "pP.") && strpbrk(s, "pP.") < e
                   : strpbrk(s, "eE.") && strpbrk(s, "eE.") < e;
    if (is_float) {
        if (strchr("fFlL", s[n - 1]))
            n--;
        rc = lit_float(s, n, hex, out);
        out->d = neg ? -out->d : out->d;
        return rc;
    }
    for (k = 0; k < 3 && n > 0 && strchr("uUlL", s[n - 1]); k++)
        n--;
    if (hex)
        rc = lit_int(s + 2, n - 2, 16, out);
    else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        rc = lit_int(s + 2, n - 2, 2, out);
    else if (s[0] == '0')
        rc = lit_int(s, n, 8, out);
    else
        rc = lit_int(s, n, 10, out);
    out->neg = neg;
    return rc;
}
