/* bt_parse_tok.c - the parser's token walk: errors at a token
 * (file:line:col: ... near 'tok'), the word lists, bracket matching. */
#include "bt_parse_impl.h"

#include <stdio.h>

const char *const bt_parse_builtin_words[] = {
    "void",   "bool",    "char",    "short",    "int",      "long", "signed",   "unsigned", "float",
    "double", "wchar_t", "char8_t", "char16_t", "char32_t", "auto", "__int128", NULL};
/* C++'s built-in words that C declares as typedefs (what a C header calls them) */
static const char *const c_typedef_words[] = {"wchar_t",  "char8_t", "char16_t",
                                              "char32_t", "bool",    NULL};

int bt_parse_type_keyword(const BtToken *t)
{
    return (is_any(t, bt_parse_builtin_words) && !is_any(t, c_typedef_words)) ||
           bt_lex_is(t, "_Bool");
}

const char *const bt_parse_cv_words[] = {"const",      "volatile",     "restrict",
                                         "__restrict", "__restrict__", NULL};

const char *bt_parse_near(const BtToken *t, char *buf, size_t size)
{
    int n = t->len;

    if (at_end(t)) {
        snprintf(buf, size, "end of file");
        return buf;
    }
    if (n > 40) /* cut at 40 bytes, not inside a UTF-8 sequence */
        for (n = 40; n > 0 && ((unsigned char)t->s[n] & 0xC0) == 0x80; n--)
            ;
    snprintf(buf, size, "'%.*s'", n, t->s);
    return buf;
}

/* Records an error at token t; at the lexer's error token, the lexer's error. */
int bt_parse_fail(Parser *p, const BtToken *t, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    if (t->kind == BT_TOK_ERROR) {
        const BtDiag *e = &p->toks.err;
        p->fail_tok = p->toks.n - 1;
        return bt_diag_set(p->diag, e->kind, e->file, e->line, e->col, "%s", e->message);
    }
    p->fail_tok = (int)(t - p->toks.v);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bt_diag_set(p->diag, BT_DIAG_HEADER, p->file, t->line, bt_lex_col(&p->toks, t), "%s",
                       msg);
}

int bt_parse_expected(Parser *p, const BtToken *t, const char *what)
{
    char nb[64];
    return bt_parse_fail(p, t, "expected %s near %s", what, bt_parse_near(t, nb, sizeof nb));
}

/* The error at t when the innermost open bracket wants its closer. */
int bt_parse_want_closer(Parser *p, const BtToken *t, const char *stack, int sp)
{
    char what[8];
    snprintf(what, sizeof what, "'%c'", stack[sp - 1]);
    return bt_parse_expected(p, t, what);
}

/* One token of a bracket walk: an opener is pushed, a closer must match the
 * innermost opener and pops it; *sp > 0 on entry unless t opens. */
int bt_parse_nest(Parser *p, const BtToken *t, char *stack, int *sp)
{
    char c = closer_of(t);
    if (c) {
        if (*sp == MAX_STACK)
            return bt_parse_fail(p, t, "brackets nested too deeply");
        stack[(*sp)++] = c;
    } else if (is_closer(t)) {
        if (*t->s != stack[*sp - 1])
            return bt_parse_want_closer(p, t, stack, *sp);
        --*sp;
    }
    return 0;
}

/* balanced -> opener (any token | balanced)* matching closer */
int bt_parse_skip_balanced(Parser *p)
{
    char stack[MAX_STACK];
    int sp = 0;

    /* from an opener on, sp > 0 wherever stack[sp - 1] is read */
    if (!closer_of(cur(p)))
        return bt_parse_expected(p, cur(p), "'(', '[' or '{'");
    do {
        const BtToken *t = cur(p);
        if (at_end(t))
            return bt_parse_want_closer(p, t, stack, sp);
        if (bt_parse_nest(p, t, stack, &sp) < 0)
            return -1;
        advance(p);
    } while (sp > 0);
    return 0;
}

/* First token in [a, b) at bracket depth 0 spelling s, or b. */
int bt_parse_find_top(const Parser *p, int a, int b, const char *s)
{
    int depth = 0;

    for (int i = a; i < b; i++) {
        const BtToken *t = tok(p, i);
        if (depth == 0 && bt_lex_is(t, s))
            return i;
        if (closer_of(t))
            depth++;
        else if (is_closer(t))
            depth--;
    }
    return b;
}
