/* bt_parse_impl.h - what the parser's files (bt_parse*.c) share, and no one else.
 *
 * The files, one job each, bottom to top: bt_parse_tok.c (errors at a
 * token, the word lists, bracket matching), bt_parse_param.c (types and
 * parameters: type, param, params and the size rule, the return type),
 * bt_parse.c (the rest of the grammar: items, namespaces, templates,
 * declarations and functions; recovery; bt_parse_header). Callers include
 * bt_parse.h. The token cursor is static inlines here: every rule calls it. */
#ifndef BT_PARSE_IMPL_H
#define BT_PARSE_IMPL_H

#include "bt_parse.h"

#include <string.h>

#include "bt_lex.h"

#define MAX_NEST 200
#define MAX_STACK 64

typedef struct Tmpl {
    const char **names;
    BtTParam *info; /* one per name */
    int n;
    const char *reason; /* why the template makes the function unbindable */
} Tmpl;

typedef struct Parser {
    const char *file;
    BtTokens toks;
    int pos;
    BtArena *arena;
    BtDiag *diag;
    const char **ns;
    int n_ns;
    int extern_c; /* inside extern "C" { } */
    int anon_ns;  /* inside namespace { } */
    int depth;
    BtDecl *decls; /* a block of its own (bt_arena_resize) */
    int n_decls, cap_decls;
    struct Range *ranges; /* split_params' output, reused for every function */
    int cap_ranges;
    int strict;       /* an unreadable declaration is an error, not a record */
    int fail_tok;     /* token index of the last error bt_parse_fail recorded */
    int eof_recorded; /* an unreadable declaration ending at end of file is recorded */
    int knr_names;    /* the last parameter list was bare names: `f(a, b)` */
} Parser;

/* What bt_parse_type learned from a type (and maybe a declarator name). */
typedef struct TypeInfo {
    char spelling[256]; /* normalized base type, cv left out */
    int is_const;
    int nptr, nref;
    const char *elaborated; /* "struct", "union", "class", "enum", or NULL */
    int name;               /* token index of the name, or -1 */
} TypeInfo;

/* A parameter's tokens [a, b) (split_params). */
typedef struct Range {
    int a, b;
} Range;

/* ---- the token cursor ---- */

static inline const BtToken *tok(const Parser *p, int i)
{
    return &p->toks.v[i < p->toks.n ? i : p->toks.n - 1];
}

static inline const BtToken *cur(const Parser *p) { return tok(p, p->pos); }

static inline int is(const Parser *p, int i, const char *s) { return bt_lex_is(tok(p, i), s); }

static inline void advance(Parser *p)
{
    if (p->pos < p->toks.n - 1)
        p->pos++;
}

static inline int at_end(const BtToken *t)
{
    return t->kind == BT_TOK_EOF || t->kind == BT_TOK_ERROR;
}

static inline char *tokdup(Parser *p, const BtToken *t)
{
    return bt_arena_strndup(p->arena, t->s, (size_t)t->len);
}

static inline int is_any(const BtToken *t, const char *const *list)
{
    for (; *list; list++)
        if (bt_lex_is(t, *list))
            return 1;
    return 0;
}

static inline char closer_of(const BtToken *t)
{
    if (t->kind != BT_TOK_PUNCT || t->len != 1)
        return 0;
    return *t->s == '(' ? ')' : *t->s == '[' ? ']' : *t->s == '{' ? '}' : 0;
}

static inline int is_closer(const BtToken *t)
{
    return t->kind == BT_TOK_PUNCT && t->len == 1 && strchr(")]}", *t->s);
}

/* ---- bt_parse_tok.c: errors, words, brackets ---- */

/* Spelling of the C/C++ built-in type words, and of cv-qualifiers. */
BT_HIDDEN extern const char *const bt_parse_builtin_words[];
BT_HIDDEN extern const char *const bt_parse_cv_words[];

/* Token t for messages, into buf: "'tok'" (cut at 40 bytes), or "end of file". */
BT_HIDDEN const char *bt_parse_near(const BtToken *t, char *buf, size_t size);

/* Records an error at token t (at the lexer's error token, the lexer's
 * error) and returns -1; bt_parse_expected: "expected WHAT near 'tok'". */
BT_HIDDEN int bt_parse_fail(Parser *p, const BtToken *t, const char *fmt, ...) BT_PRINTF(3, 4);
BT_HIDDEN int bt_parse_expected(Parser *p, const BtToken *t, const char *what);

/* The error at t when the innermost open bracket of stack[sp] wants its closer. */
BT_HIDDEN int bt_parse_want_closer(Parser *p, const BtToken *t, const char *stack, int sp);

/* One token of a bracket walk: an opener is pushed, a closer must match the
 * innermost opener and pops it; *sp > 0 on entry unless t opens. */
BT_HIDDEN int bt_parse_nest(Parser *p, const BtToken *t, char *stack, int *sp);

/* balanced -> opener (any token | balanced)* matching closer, from p->pos. */
BT_HIDDEN int bt_parse_skip_balanced(Parser *p);

/* First token in [a, b) at bracket depth 0 spelling s, or b. */
BT_HIDDEN int bt_parse_find_top(const Parser *p, int a, int b, const char *s);

/* ---- bt_parse_param.c: types and parameters ---- */

/* type -> (cv | name)+ ('*' | '&' | '&&' | cv)* [IDENT], over tokens [a, b)
 * into *ti (a name only where allow_name). what: the expected-token text
 * for errors ("')'"). 0 or -1. */
BT_HIDDEN int bt_parse_type(Parser *p, int a, int b, int allow_name, const char *what,
                            TypeInfo *ti);

/* Resolves ti's base spelling to a template parameter of tm (may be NULL)
 * or a scalar type, into *ref; -1 when it is neither. */
BT_HIDDEN int bt_parse_resolve(const TypeInfo *ti, const Tmpl *tm, BtTypeRef *ref);

/* params -> [ 'void' | param (',' param)* ] at p->pos ('('), into d, then
 * the size rule; leaves p->pos after ')'. 0 or -1. */
BT_HIDDEN int bt_parse_params(Parser *p, BtDecl *d, const Tmpl *tm);

/* The return type in tokens [a, b) into d->ret; a reason (arena) when it
 * cannot be bound, NULL when it can, or "" for a lone `auto`; *rc -1 on
 * an error. */
BT_HIDDEN const char *bt_parse_return_type(Parser *p, BtDecl *d, const Tmpl *tm, int a, int b,
                                           int *rc);

#endif
