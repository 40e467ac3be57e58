/* bt_parse.c - header reader: templates and function declarations into
 * declaration records; bodies skipped by brace matching.
 *
 * The grammar it accepts (tokens from bt_lex.c; preprocessor lines and
 * comments are already gone, the comment block above a token is its doc):
 *
 *   header    -> item* EOF
 *   item      -> ';'
 *              | ['inline'] 'namespace' [IDENT ('::' ['inline'] IDENT)*] '{' item* '}'
 *              | 'extern' STRING '{' item* '}'
 *              | 'extern' STRING item
 *              | 'template' '<' [tparam (',' tparam)*] '>' decl
 *              | decl
 *   tparam    -> ('class' | 'typename') [IDENT] ['=' balanced]
 *              | balanced                            (non-type: unbindable)
 *   decl      -> spec* (function | other)
 *   spec      -> 'inline' | 'static' | 'extern' [STRING] | 'constexpr'
 *              | '__global__' | '__device__' | '__host__' | '__forceinline__'
 *              | '__attribute__' '(' balanced ')' | '[' '[' balanced ']' ']'
 *   function  -> type IDENT '(' params ')' trailer* (';' | '=' IDENT ';' | body)
 *   params    -> [ 'void' | param (',' param)* ]
 *   param     -> '...' | type [IDENT] ('[' balanced ']')* ['=' balanced]
 *   type      -> (cv | name)+ ('*' | '&' | '&&' | cv)*
 *   name      -> ['::'] IDENT ['<' balanced '>'] ('::' IDENT ['<' balanced '>'])*
 *   trailer   -> cv | 'noexcept' ['(' balanced ')'] | 'throw' '(' balanced ')'
 *              | 'override' | 'final' | '-' '>' type | '__attribute__' '(' balanced ')'
 *   body      -> '{' (any token, braces matched) '}'
 *   other     -> (any token, ([{ balanced)* up to ';', or up to a '{...}' group
 *                when the statement needs no ';' (not struct/class/union/enum/
 *                typedef/using, no '=' initializer))
 *
 * A function is recognised by its head: an identifier, after at least one
 * type token, followed by '(' at angle depth 0. Everything else at file
 * scope is "other" and skipped. Functions the dialect can't bind are kept
 * with an unbindable reason; only malformed syntax is an error. */
#include "bt_parse.h"

#include <stdio.h>
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
    int fail_tok;     /* token index of the last error fail() recorded */
    int eof_recorded; /* an unreadable declaration ending at end of file is recorded */
    int knr_names;    /* the last parameter list was bare names: `f(a, b)` */
} Parser;

/* What parse_type learned from a type (and maybe a declarator name). */
typedef struct TypeInfo {
    char spelling[256]; /* normalized base type, cv left out */
    int is_const;
    int nptr, nref;
    const char *elaborated; /* "struct", "union", "class", "enum", or NULL */
    int name;               /* token index of the name, or -1 */
} TypeInfo;

static int parse_items(Parser *p, int inside);

/* ---- tokens ---- */

static const BtToken *tok(const Parser *p, int i)
{
    return &p->toks.v[i < p->toks.n ? i : p->toks.n - 1];
}

static const BtToken *cur(const Parser *p) { return tok(p, p->pos); }

static int is(const Parser *p, int i, const char *s) { return bt_lex_is(tok(p, i), s); }

static void advance(Parser *p)
{
    if (p->pos < p->toks.n - 1)
        p->pos++;
}

static int at_end(const BtToken *t) { return t->kind == BT_TOK_EOF || t->kind == BT_TOK_ERROR; }

static const char *near(const BtToken *t, char *buf, size_t size)
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
static int fail(Parser *p, const BtToken *t, const char *fmt, ...) BT_PRINTF(3, 4);
static int fail(Parser *p, const BtToken *t, const char *fmt, ...)
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

static int expected(Parser *p, const BtToken *t, const char *what)
{
    char nb[64];
    return fail(p, t, "expected %s near %s", what, near(t, nb, sizeof nb));
}

static char *tokdup(Parser *p, const BtToken *t)
{
    return bt_arena_strndup(p->arena, t->s, (size_t)t->len);
}

static int is_any(const BtToken *t, const char *const *list)
{
    for (; *list; list++)
        if (bt_lex_is(t, *list))
            return 1;
    return 0;
}

static const char *const builtin_words[] = {
    "void",   "bool",    "char",    "short",    "int",      "long", "signed",   "unsigned", "float",
    "double", "wchar_t", "char8_t", "char16_t", "char32_t", "auto", "__int128", NULL};
static const char *const cv_words[] = {"const",      "volatile",     "restrict",
                                       "__restrict", "__restrict__", NULL};
static const char *const elaborated_words[] = {"struct", "union", "class", "enum", NULL};
static const char *const other_words[] = {
    "struct", "class",    "union",     "enum", "typedef", "using", "static_assert",
    "friend", "template", "namespace", "asm",  "__asm__", NULL};

/* ---- skipping ---- */

static char closer_of(const BtToken *t)
{
    if (t->kind != BT_TOK_PUNCT || t->len != 1)
        return 0;
    return *t->s == '(' ? ')' : *t->s == '[' ? ']' : *t->s == '{' ? '}' : 0;
}

static int is_closer(const BtToken *t)
{
    return t->kind == BT_TOK_PUNCT && t->len == 1 && strchr(")]}", *t->s);
}

/* The error at t when the innermost open bracket wants its closer. */
static int want_closer(Parser *p, const BtToken *t, const char *stack, int sp)
{
    char what[8];
    snprintf(what, sizeof what, "'%c'", stack[sp - 1]);
    return expected(p, t, what);
}

/* One token of a bracket walk: an opener is pushed, a closer must match the
 * innermost opener and pops it; *sp > 0 on entry unless t opens. */
static int nest(Parser *p, const BtToken *t, char *stack, int *sp)
{
    char c = closer_of(t);
    if (c) {
        if (*sp == MAX_STACK)
            return fail(p, t, "brackets nested too deeply");
        stack[(*sp)++] = c;
    } else if (is_closer(t)) {
        if (*t->s != stack[*sp - 1])
            return want_closer(p, t, stack, *sp);
        --*sp;
    }
    return 0;
}

/* balanced -> opener (any token | balanced)* matching closer */
static int skip_balanced(Parser *p)
{
    char stack[MAX_STACK];
    int sp = 0;

    /* from an opener on, sp > 0 wherever stack[sp - 1] is read */
    if (!closer_of(cur(p)))
        return expected(p, cur(p), "'(', '[' or '{'");
    do {
        const BtToken *t = cur(p);
        if (at_end(t))
            return want_closer(p, t, stack, sp);
        if (nest(p, t, stack, &sp) < 0)
            return -1;
        advance(p);
    } while (sp > 0);
    return 0;
}

/* body -> '{' (any token, braces matched) '}' */
static int skip_body(Parser *p, const char *fname)
{
    int depth = 0, open_line = cur(p)->line;

    do {
        const BtToken *t = cur(p);
        if (at_end(t))
            return fail(p, t, "unexpected end of file in function body of '%s' (opened at line %d)",
                        fname, open_line);
        if (bt_lex_is(t, "{"))
            depth++;
        else if (bt_lex_is(t, "}"))
            depth--;
        advance(p);
    } while (depth > 0);
    return 0;
}

/* other -> tokens up to ';', or a '{...}' group when no ';' is needed */
static int skip_other(Parser *p)
{
    int needs_semi = 0;

    for (;;) {
        const BtToken *t = cur(p);
        if (at_end(t))
            return expected(p, t, "';'");
        if (bt_lex_is(t, ";")) {
            advance(p);
            return 0;
        }
        if (bt_lex_is(t, "}"))
            return 0;
        if (bt_lex_is(t, "{")) {
            if (skip_balanced(p) < 0)
                return -1;
            if (!needs_semi)
                return 0;
            continue;
        }
        if (closer_of(t)) {
            if (skip_balanced(p) < 0)
                return -1;
            continue;
        }
        if (is_closer(t)) {
            char nb[64];
            return fail(p, t, "unexpected %s", near(t, nb, sizeof nb));
        }
        if (is_any(t, other_words) || bt_lex_is(t, "="))
            needs_semi = 1;
        advance(p);
    }
}

/* Skips '<' ... '>' (nested) starting at token i, within [i, b); returns the
 * index after '>', or -1 when it does not close before b. */
static int skip_angles(const Parser *p, int i, int b)
{
    int depth = 0;

    for (; i < b; i++) {
        if (is(p, i, "<"))
            depth++;
        else if (is(p, i, ">") && --depth == 0)
            return i + 1;
    }
    return -1;
}

/* ---- types ---- */

static void append(char *buf, size_t size, const char *s, size_t n)
{
    size_t len = strlen(buf);
    if (len + n + 1 < size) {
        memcpy(buf + len, s, n);
        buf[len + n] = '\0';
    }
}

/* type -> (cv | name)+ ('*' | '&' | '&&' | cv)* [IDENT], over tokens [a, b).
 * what: the expected-token text for errors ("')'"). */
static int parse_type(Parser *p, int a, int b, int allow_name, const char *what, TypeInfo *ti)
{
    char raw[512] = "";
    size_t before_last = 0;
    int i = a, seen_ptr = 0, ngroups = 0, last_start = -1, last_end = -1;

    memset(ti, 0, sizeof *ti);
    ti->name = -1;
    while (i < b) {
        const BtToken *t = tok(p, i);
        if (is_any(t, cv_words)) {
            if (bt_lex_is(t, "const") && !seen_ptr)
                ti->is_const = 1;
            i++;
        } else if (is_any(t, elaborated_words) && !seen_ptr) {
            ti->elaborated = bt_lex_is(t, "struct")  ? "struct"
                             : bt_lex_is(t, "union") ? "union"
                             : bt_lex_is(t, "enum")  ? "enum"
                                                     : "class";
            append(raw, sizeof raw, ti->elaborated, strlen(ti->elaborated));
            append(raw, sizeof raw, " ", 1);
            i++;
        } else if (bt_lex_is(t, "typename") && !seen_ptr) {
            i++;
        } else if ((bt_lex_is(t, "*") || bt_lex_is(t, "&")) && ngroups > 0) {
            if (*t->s == '*')
                ti->nptr++;
            else
                ti->nref++;
            seen_ptr = 1;
            i++;
        } else if (seen_ptr && t->kind == BT_TOK_IDENT && allow_name && ti->name < 0) {
            ti->name = i++;
        } else if (!seen_ptr && (t->kind == BT_TOK_IDENT || bt_lex_is(t, "::"))) {
            int start = i;
            if (bt_lex_is(t, "::"))
                i++;
            if (i >= b || tok(p, i)->kind != BT_TOK_IDENT)
                return expected(p, tok(p, i), "type name");
            i++;
            for (;;) {
                if (i < b && is(p, i, "<")) {
                    int j = skip_angles(p, i, b);
                    if (j < 0)
                        return expected(p, tok(p, b), "'>'");
                    i = j;
                } else if (i + 1 < b && is(p, i, "::") && tok(p, i + 1)->kind == BT_TOK_IDENT) {
                    i += 2;
                } else {
                    break;
                }
            }
            before_last = strlen(raw);
            for (int k = start; k < i; k++) {
                append(raw, sizeof raw, " ", 1);
                append(raw, sizeof raw, tok(p, k)->s, (size_t)tok(p, k)->len);
            }
            ngroups++;
            last_start = start;
            last_end = i;
        } else {
            return expected(p, t, what);
        }
    }
    if (ngroups == 0)
        return expected(p, tok(p, a < b ? a : b), "type name");
    if (!seen_ptr && allow_name && ngroups >= 2 && last_end == last_start + 1 &&
        !is_any(tok(p, last_start), builtin_words)) {
        ti->name = last_start;
        raw[before_last] = '\0';
        if (last_end != b)
            return expected(p, tok(p, last_end), what);
    }
    bt_type_normalize(raw, strlen(raw), ti->spelling, sizeof ti->spelling);
    return 0;
}

/* Resolves a base spelling to a template parameter or a scalar type. */
static int resolve(const TypeInfo *ti, const Tmpl *tm, BtTypeRef *ref)
{
    const char *s = ti->spelling;
    size_t n;
    int k;

    ref->tparam = -1;
    ref->is_const = ti->is_const;
    for (k = 0; tm && k < tm->n; k++) {
        if (tm->names[k][0] && !tm->info[k].is_value && strcmp(tm->names[k], s) == 0) {
            ref->tparam = k;
            return 0;
        }
    }
    if (strncmp(s, "std::", 5) == 0)
        s += 5;
    if (strncmp(s, "complex<", 8) == 0) {
        n = strlen(s + 8);
        for (k = 0; tm && k < tm->n && n > 1; k++) {
            if (tm->names[k][0] && !tm->info[k].is_value && strlen(tm->names[k]) == n - 1 &&
                strncmp(tm->names[k], s + 8, n - 1) == 0 && s[8 + n - 1] == '>') {
                ref->tparam = k;
                ref->is_complex_of_tparam = 1;
                return 0;
            }
        }
    }
    if (ti->elaborated)
        return -1;
    return bt_type_lookup(ti->spelling, &ref->type);
}

/* ---- functions ---- */

typedef struct Range {
    int a, b;
} Range;

/* Splits '(' params ')' at p->pos into ranges; leaves p->pos after ')'. */
static int split_params(Parser *p, Range **out, int *n_out)
{
    char stack[MAX_STACK];
    int sp = 0, angle = 0, n = 0, i = p->pos, seg;

    stack[sp++] = ')';
    seg = ++i;
    for (;; i++) {
        const BtToken *t = tok(p, i);
        int end = 0, was = sp;
        if (at_end(t) || bt_lex_is(t, ";"))
            return want_closer(p, t, stack, sp);
        if (nest(p, t, stack, &sp) < 0)
            return -1;
        if (sp != was) {
            end = sp == 0;
        } else if (sp == 1 && bt_lex_is(t, "<") && tok(p, i - 1)->kind == BT_TOK_IDENT) {
            angle++;
        } else if (sp == 1 && angle > 0 && bt_lex_is(t, ">")) {
            angle--;
        }
        if (end || (sp == 1 && angle == 0 && bt_lex_is(t, ","))) {
            if (seg == i && (n > 0 || !end))
                return expected(p, t, "parameter declaration");
            if (seg < i) {
                if (n == p->cap_ranges) {
                    int cap = p->cap_ranges ? 2 * p->cap_ranges : 16;
                    Range *v = bt_arena_resize(p->arena, p->ranges, (size_t)cap * sizeof *v);
                    if (!v)
                        return bt_diag_nomem(p->diag);
                    p->ranges = v;
                    p->cap_ranges = cap;
                }
                p->ranges[n].a = seg;
                p->ranges[n].b = i;
                n++;
            }
            seg = i + 1;
            if (end)
                break;
        }
    }
    p->pos = i;
    advance(p);
    *out = p->ranges;
    *n_out = n;
    return 0;
}

/* First token in [a, b) at bracket depth 0 spelling s, or b. */
static int find_top(const Parser *p, int a, int b, const char *s)
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

static const char *label(Parser *p, const BtParam *pr, int index)
{
    if (pr->name && pr->name[0])
        return bt_arena_printf(p->arena, "'%s'", pr->name);
    return bt_arena_printf(p->arena, "%d", index + 1);
}

/* param -> '...' | type [IDENT] ('[' balanced ']')* ['=' balanced]
 * Sets *reason (arena) when the parameter can't be bound. */
static int parse_param(Parser *p, Range r, int index, const Tmpl *tm, BtParam *pr,
                       const char **reason)
{
    const BtToken *first = tok(p, r.a);
    TypeInfo ti;
    int eq, br, i, ndims = 0, paren;
    const char *lb;

    pr->size_of = -1;
    pr->size_axis = 0;
    pr->t.tparam = -1;
    pr->name = "";
    pr->line = first->line;
    pr->col = bt_lex_col(&p->toks, first);
    if (bt_lex_is(first, "...") && r.b == r.a + 1) {
        *reason = "variadic function (...)";
        return 0;
    }
    eq = find_top(p, r.a, r.b, "=");
    if (eq == r.a)
        return expected(p, first, "parameter declaration");
    paren = find_top(p, r.a, eq, "(");
    if (paren < eq) {
        /* a declarator in parentheses: (*cb)(int), (&a)[3] */
        for (i = paren + 1; i < eq && !is(p, i, ")"); i++) {
            if (tok(p, i)->kind == BT_TOK_IDENT) {
                if (!(pr->name = tokdup(p, tok(p, i))))
                    return bt_diag_nomem(p->diag);
                pr->line = tok(p, i)->line;
                pr->col = bt_lex_col(&p->toks, tok(p, i));
                break;
            }
        }
        lb = label(p, pr, index);
        if (is(p, paren + 1, "*") && is(p, find_top(p, paren + 1, eq, ")") + 1, "("))
            *reason = bt_arena_printf(p->arena, "parameter %s is a function pointer", lb);
        else
            *reason = bt_arena_printf(p->arena, "parameter %s has an unsupported declarator", lb);
        return 0;
    }
    br = find_top(p, r.a, eq, "[");
    for (i = br; i < eq; ndims++) {
        int save = p->pos;
        if (!is(p, i, "["))
            return expected(p, tok(p, i), "')'");
        p->pos = i;
        if (skip_balanced(p) < 0)
            return -1;
        i = p->pos;
        p->pos = save;
    }
    if (parse_type(p, r.a, br, 1, "')'", &ti) < 0)
        return -1;
    if (ti.name >= 0) {
        const BtToken *nt = tok(p, ti.name);
        pr->name = tokdup(p, nt);
        pr->line = nt->line;
        pr->col = bt_lex_col(&p->toks, nt);
    }
    if (eq + 1 < r.b) {
        const BtToken *e = tok(p, r.b - 1);
        pr->defval = bt_arena_strndup(p->arena, tok(p, eq + 1)->s,
                                      (size_t)(e->s + e->len - tok(p, eq + 1)->s));
        if (!pr->defval)
            return bt_diag_nomem(p->diag);
    } else if (eq + 1 == r.b) {
        return expected(p, tok(p, r.b), "default argument");
    }
    if (pr->name && !pr->name[0] && !pr->t.is_array && ti.nptr + ndims == 0) {
        pr->unnamed = 1; /* a scalar: named by its position */
        pr->name = bt_arena_printf(p->arena, "arg%d", index);
    }
    if (!pr->name)
        return bt_diag_nomem(p->diag);
    lb = label(p, pr, index);
    pr->t.is_array = ti.nptr + ndims == 1;
    if (resolve(&ti, tm, &pr->t) < 0 && !ti.elaborated && !ti.nref && ti.nptr + ndims < 2)
        *reason = bt_arena_printf(p->arena, "parameter %s has unknown type '%s'", lb, ti.spelling);
    if (ti.nref)
        *reason = bt_arena_printf(p->arena, "parameter %s is a reference (%s %s)", lb, ti.spelling,
                                  ti.nref > 1 ? "&&" : "&");
    else if (ndims > 1)
        *reason = bt_arena_printf(p->arena, "parameter %s is a multi-dimensional array", lb);
    else if (ti.nptr + ndims > 1)
        *reason = bt_arena_printf(p->arena, "parameter %s is a pointer to pointer (%s **)", lb,
                                  ti.spelling);
    else if (ti.elaborated)
        *reason = bt_arena_printf(p->arena, "parameter %s has %s type '%s'", lb, ti.elaborated,
                                  ti.spelling);
    else if (!pr->name[0] && pr->t.is_array)
        *reason = bt_arena_printf(p->arena,
                                  "parameter %d is an unnamed array; name it so that its "
                                  "'NAME_size' can follow",
                                  index + 1);
    else if (eq < r.b && pr->t.is_array)
        *reason = bt_arena_printf(p->arena, "parameter %s has a default argument", lb);
    else if (!*reason && pr->t.tparam < 0 && pr->t.type == BT_VOID)
        *reason = bt_arena_printf(
            p->arena,
            pr->t.is_array ? "parameter %s is a void pointer" : "parameter %s has type void", lb);
    return 0;
}

static int is_size_type(const BtTypeRef *t)
{
    char kind;
    if (t->is_array || t->is_complex_of_tparam)
        return 0;
    if (t->tparam >= 0)
        return 1;
    kind = bt_type(t->type)->kind;
    return kind == 'i' || kind == 'u';
}

/* The axis a size parameter named `name` gives of array `array`: 0 for
 * `array_size`, K for `array_sizeK`; -1 when it names no size of array,
 * -2 when K is BT_MAX_SIZE_AXES or more. */
static int size_axis(const char *array, const char *name)
{
    size_t len = strlen(array);
    const char *s;
    int k = 0;

    if (strncmp(name, array, len) != 0 || strncmp(name + len, "_size", 5) != 0)
        return -1;
    for (s = name + len + 5; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (k >= BT_MAX_SIZE_AXES)
            continue;
        k = k * 10 + (*s - '0');
    }
    return k < BT_MAX_SIZE_AXES ? k : -2;
}

/* params -> [ 'void' | param (',' param)* ], then the size rule: each
 * array is followed by one or more of its size parameters. */
static int parse_params(Parser *p, BtDecl *d, const Tmpl *tm)
{
    Range *r = NULL;
    const char **why;
    int n = 0, i, j;

    if (split_params(p, &r, &n) < 0)
        return -1;
    if (n == 1 && r[0].b == r[0].a + 1 && is(p, r[0].a, "void"))
        n = 0;
    p->knr_names = n > 0;
    for (i = 0; i < n; i++)
        p->knr_names &= r[i].b == r[i].a + 1 && tok(p, r[i].a)->kind == BT_TOK_IDENT &&
                        !is_any(tok(p, r[i].a), builtin_words);
    d->n_params = n;
    d->params = bt_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *d->params);
    why = bt_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *why);
    if (!d->params || !why)
        return bt_diag_nomem(p->diag);
    for (i = 0; i < n; i++)
        if (parse_param(p, r[i], i, tm, &d->params[i], &why[i]) < 0)
            return -1;
    for (i = 0; i < n && !d->unbindable; i++) {
        BtParam *x = &d->params[i];
        d->unbindable = why[i];
        if (d->unbindable || !x->t.is_array)
            continue;
        for (j = i + 1; j < n; j++) {
            BtParam *s = &d->params[j];
            int axis = size_axis(x->name, s->name);
            if (axis == -1)
                break;
            if (axis == -2)
                d->unbindable = bt_arena_printf(
                    p->arena,
                    "parameter '%s' names an axis of '%s' past the last one bindthem "
                    "passes ('%s_size%d')",
                    s->name, x->name, x->name, BT_MAX_SIZE_AXES - 1);
            else if (!why[j] && !is_size_type(&s->t))
                d->unbindable = bt_arena_printf(
                    p->arena, "parameter '%s' (size of '%s') is not an integer", s->name, x->name);
            if (d->unbindable)
                break;
            s->size_of = i;
            s->size_axis = axis;
        }
        if (!d->unbindable && j == i + 1)
            d->unbindable = bt_arena_printf(
                p->arena, "parameter '%s' is a pointer with no '%s_size' after it", x->name,
                x->name);
        if (d->unbindable) /* past the `continue`: an array's size parameters */
            d->unbindable_rule = BT_RULE_SIZES;
    }
    return 0;
}

/* The return type in tokens [a, b) into d->ret; a reason (arena) when it
 * cannot be bound, NULL when it can, or "" for a lone `auto`. */
static const char *return_type(Parser *p, BtDecl *d, const Tmpl *tm, int a, int b, int *rc)
{
    TypeInfo ti;

    *rc = parse_type(p, a, b, 0, "function name", &ti);
    if (*rc < 0)
        return NULL;
    d->ret.tparam = -1;
    d->ret.type = BT_VOID;
    if (strcmp(ti.spelling, "auto") == 0 && !ti.nptr && !ti.nref)
        return "";
    if (resolve(&ti, tm, &d->ret) < 0 && !ti.elaborated && !ti.nref && !ti.nptr)
        return bt_arena_printf(p->arena, "unknown type '%s' of return value", ti.spelling);
    if (ti.nref)
        return bt_arena_printf(p->arena, "return value is a reference (%s &)", ti.spelling);
    if (ti.nptr)
        return bt_arena_printf(p->arena, "return value is a pointer (%s *)", ti.spelling);
    if (ti.elaborated)
        return bt_arena_printf(p->arena, "return value has %s type '%s'", ti.elaborated,
                               ti.spelling);
    return NULL;
}

/* trailer -> cv | 'noexcept' [...] | 'throw' (...) | 'override' | 'final' | '-' '>' type
 * *ret_reason is return_type's answer for the leading type; a trailing
 * return type replaces a lone `auto`. */
static int parse_trailer(Parser *p, BtDecl *d, const Tmpl *tm, const char **ret_reason)
{
    static const char *const words[] = {"const", "volatile", "override", "final", "&", NULL};

    for (;;) {
        const BtToken *t = cur(p);
        if (is_any(t, words) || bt_lex_is(t, "&&")) {
            advance(p);
        } else if (bt_lex_is(t, "noexcept") || bt_lex_is(t, "throw")) {
            advance(p);
            if (bt_lex_is(cur(p), "(") && skip_balanced(p) < 0)
                return -1;
        } else if (bt_lex_is(t, "-") && is(p, p->pos + 1, ">")) {
            int a = p->pos + 2, b = a, rc;
            const char *why;
            while (!at_end(tok(p, b)) && !is(p, b, ";") && !is(p, b, "{") && !is(p, b, "=") &&
                   !is(p, b, "override") && !is(p, b, "final"))
                b++; /* a type has no brackets but '<...>', which holds none of these */
            if (b == a)
                return expected(p, tok(p, a), "return type");
            if (is(p, a, "decltype")) {
                if (!*ret_reason || !**ret_reason)
                    *ret_reason = "return type is a decltype(...)";
            } else if (*ret_reason && !**ret_reason) {
                why = return_type(p, d, tm, a, b, &rc);
                if (rc < 0)
                    return -1;
                *ret_reason = why && !*why ? "deduced return type ('auto' after '->')" : why;
            } else if (!*ret_reason) {
                *ret_reason = "trailing return type after a return type other than 'auto'";
            }
            p->pos = b;
        } else {
            return 0;
        }
    }
}

/* Old-style (K&R) parameter declarations between ')' and the body: the
 * parameters were bare names, and a type word follows where a trailer,
 * ';' or '{' should be. */
static int knr_declarations(const Parser *p)
{
    const BtToken *t = cur(p);
    return p->knr_names && t->kind == BT_TOK_IDENT && !bt_lex_is(t, "try");
}

/* function -> type IDENT '(' params ')' trailer* (';' | '=' IDENT ';' | body) */
static int parse_function(Parser *p, BtDecl *d, const Tmpl *tm, int name_at)
{
    const BtToken *nt = tok(p, name_at);
    const char *ret_reason;
    int rc;

    ret_reason = return_type(p, d, tm, p->pos, name_at, &rc);
    if (rc < 0)
        return -1;
    d->name = tokdup(p, nt);
    if (!d->name)
        return bt_diag_nomem(p->diag);
    d->line = nt->line;
    d->col = bt_lex_col(&p->toks, nt);
    p->pos = name_at + 1;
    if (parse_params(p, d, tm) < 0)
        return -1;
    if (parse_trailer(p, d, tm, &ret_reason) < 0)
        return -1;
    if (ret_reason)
        d->unbindable = *ret_reason ? ret_reason : "deduced return type ('auto' without '-> type')";
    if (!d->unbindable && d->n_params > BT_MAX_PARAMS)
        d->unbindable = bt_arena_printf(p->arena, "%d parameters; bindthem binds at most %d",
                                        d->n_params, BT_MAX_PARAMS);
    if (knr_declarations(p)) {
        int brace = find_top(p, p->pos, p->toks.n - 1, "{");
        d->unbindable = "old-style (K&R) parameter declarations; write a prototype";
        if (brace == p->toks.n - 1 || find_top(p, p->pos, brace, "}") < brace)
            return expected(p, cur(p), "';' or '{'");
        p->pos = brace;
    }
    if (bt_lex_is(cur(p), ";")) {
        advance(p);
        return 0;
    }
    if (bt_lex_is(cur(p), "{"))
        return skip_body(p, d->name);
    if (bt_lex_is(cur(p), "=")) {
        advance(p);
        if (cur(p)->kind != BT_TOK_IDENT && cur(p)->kind != BT_TOK_NUMBER)
            return expected(p, cur(p), "'delete' or 'default'");
        advance(p);
        if (!bt_lex_is(cur(p), ";"))
            return expected(p, cur(p), "';'");
        advance(p);
        return 0;
    }
    return expected(p, cur(p), "';' or '{'");
}

static int add_decl(Parser *p, BtDecl **out)
{
    if (p->n_decls == p->cap_decls) {
        int cap = p->cap_decls < 16 ? 16 : p->cap_decls + p->cap_decls / 2;
        BtDecl *v = bt_arena_resize(p->arena, p->decls, (size_t)cap * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag);
        p->decls = v;
        p->cap_decls = cap;
    }
    *out = &p->decls[p->n_decls];
    memset(*out, 0, sizeof **out);
    return 0;
}

/* Where the function name is, if the tokens from p->pos head a function:
 * an identifier after at least one type token, then '(' at angle depth 0. */
static int function_head(const Parser *p)
{
    int j, angle = 0;

    for (j = p->pos;; j++) {
        const BtToken *t = tok(p, j);
        if (at_end(t) || bt_lex_is(t, ";") || bt_lex_is(t, "{") || bt_lex_is(t, "}") ||
            bt_lex_is(t, "operator"))
            return -1;
        if (bt_lex_is(t, "<") && j > p->pos && tok(p, j - 1)->kind == BT_TOK_IDENT)
            angle++;
        else if (bt_lex_is(t, ">") && angle > 0)
            angle--;
        else if (angle == 0 &&
                 (t->kind == BT_TOK_PUNCT && strchr("(=[:,)]", *t->s) && !bt_lex_is(t, "::")))
            break;
    }
    if (!is(p, j, "(") || j < p->pos + 2 || tok(p, j - 1)->kind != BT_TOK_IDENT ||
        is_any(tok(p, j - 1), builtin_words) || is_any(tok(p, j - 1), cv_words) ||
        is(p, j - 2, "::"))
        return -1;
    return j - 1;
}

/* decl -> spec* (function | other) */
static int parse_decl(Parser *p, const Tmpl *tm, int extern_c, int doc_at)
{
    int is_inline = 0, is_static = p->anon_ns, global = 0, device = 0, host = 0, name_at;
    int spec_at = p->pos;
    BtDecl *d = NULL;
    const BtToken *dt;
    const char *s, *doc = NULL, *doc_end = NULL;
    int has_doc;

    for (;;) {
        const BtToken *t = cur(p);
        if (bt_lex_is(t, "inline") || bt_lex_is(t, "__inline") || bt_lex_is(t, "__inline__") ||
            bt_lex_is(t, "__forceinline__") || bt_lex_is(t, "__forceinline"))
            is_inline = 1;
        else if (bt_lex_is(t, "static"))
            is_static = 1;
        else if (bt_lex_is(t, "__global__"))
            global = 1;
        else if (bt_lex_is(t, "__device__"))
            device = 1;
        else if (bt_lex_is(t, "__host__"))
            host = 1;
        else if (bt_lex_is(t, "extern")) {
            if (tok(p, p->pos + 1)->kind == BT_TOK_STRING) {
                advance(p);
                extern_c = bt_lex_is(cur(p), "\"C\"");
            }
        } else if (bt_lex_is(t, "constexpr") || bt_lex_is(t, "virtual") ||
                   bt_lex_is(t, "explicit")) {
        } else {
            break;
        }
        advance(p);
    }
    if (is_any(cur(p), other_words) || (name_at = function_head(p)) < 0)
        return skip_other(p);
    if (add_decl(p, &d) < 0)
        return -1;
    d->ns = p->ns;
    d->n_ns = p->n_ns;
    d->extern_c = extern_c || p->extern_c;
    d->is_inline = is_inline;
    d->is_static = is_static;
    d->is_global = global;
    d->is_device = device && !global;
    if (tm) {
        d->tparams = tm->names;
        d->tpinfo = tm->info;
        d->n_tparams = tm->n;
    }
    if (parse_function(p, d, tm, name_at) < 0)
        return -1;
    if (!d->unbindable && tm && tm->reason)
        d->unbindable = tm->reason;
    if (!d->unbindable && device && !global && !host)
        d->unbindable = "__device__ function is not a kernel";
    dt = tok(p, doc_at);
    has_doc = bt_lex_doc_span(&p->toks, doc_at, &doc, &doc_end);
    d->first_line = dt->line;
    for (s = has_doc ? doc : NULL; s && s < dt->s; s++) /* the doc starts this many lines up */
        d->first_line -= *s == '\n';
    d->last_line = tok(p, p->pos - 1)->line;
    if (!has_doc)
        bt_lex_doc_span(&p->toks, spec_at, &doc, &doc_end);
    if (bt_lex_doc(p->arena, doc, doc_end, &d->doc, p->diag) < 0)
        return -1;
    p->n_decls++;
    return 0;
}

/* Skips a template argument up to ',' or '>' at depth 0. */
static int skip_targ(Parser *p)
{
    int angle = 0;

    for (;;) {
        const BtToken *t = cur(p);
        if (at_end(t) || bt_lex_is(t, ";") || bt_lex_is(t, "{") || bt_lex_is(t, "}") ||
            (is_closer(t) && angle == 0))
            return expected(p, t, "'>'");
        if (angle == 0 && (bt_lex_is(t, ",") || bt_lex_is(t, ">")))
            return 0;
        if (bt_lex_is(t, "<"))
            angle++;
        else if (bt_lex_is(t, ">"))
            angle--;
        if (closer_of(t)) {
            if (skip_balanced(p) < 0)
                return -1;
            continue;
        }
        advance(p);
    }
}

/* The text of tokens [a, b) as the header writes it (arena), or NULL. */
static const char *span_text(Parser *p, int a, int b)
{
    const BtToken *e = tok(p, b - 1);
    return bt_arena_strndup(p->arena, tok(p, a)->s, (size_t)(e->s + e->len - tok(p, a)->s));
}

/* A value parameter's declaration in tokens [a, b): `int B`, `std::size_t N`,
 * `bool B`. Sets *name and info->type, or tm->reason. */
static int value_tparam(Parser *p, Tmpl *tm, int a, int b, const char **name, BtTParam *info)
{
    TypeInfo ti;
    BtTypeRef ref;
    char kind;
    int k = tm->n;

    info->is_value = 1;
    if (is(p, a, "template")) {
        tm->reason = tm->reason ? tm->reason : "template template parameter";
        return 0;
    }
    if (parse_type(p, a, b, 1, "'>'", &ti) < 0)
        return -1;
    if (ti.name >= 0 && !(*name = tokdup(p, tok(p, ti.name))))
        return bt_diag_nomem(p->diag);
    if (tm->reason)
        return 0;
    memset(&ref, 0, sizeof ref);
    if (ti.name < 0)
        tm->reason = bt_arena_printf(p->arena, "template parameter %d has no name", k + 1);
    else if (resolve(&ti, tm, &ref) < 0 || ref.tparam >= 0 || ti.nptr || ti.nref ||
             ((kind = bt_type(ref.type)->kind) != 'i' && kind != 'u' && kind != 'b'))
        tm->reason = bt_arena_printf(p->arena,
                                     "non-type template parameter '%s' of type '%s%s'; bindthem "
                                     "instantiates integer and bool values",
                                     *name, ti.spelling,
                                     ti.nptr   ? " *"
                                     : ti.nref ? " &"
                                               : "");
    info->type = ref.type;
    return 0;
}

/* tparam -> ('class' | 'typename') ['...'] [IDENT] ['=' balanced]
 *         | type IDENT ['=' balanced]                 (a value: integer or bool) */
static int parse_tparam(Parser *p, Tmpl *tm, const char **name, BtTParam *info)
{
    const BtToken *t = cur(p);
    int k = tm->n, start = p->pos, eq;

    *name = "";
    memset(info, 0, sizeof *info);
    if (bt_lex_is(t, ",") || bt_lex_is(t, ">"))
        return expected(p, t, "template parameter");
    /* `typename T::type N` is a value of a dependent type */
    if (bt_lex_is(t, "class") ||
        (bt_lex_is(t, "typename") &&
         !(tok(p, p->pos + 1)->kind == BT_TOK_IDENT && is(p, p->pos + 2, "::")))) {
        advance(p);
        if (bt_lex_is(cur(p), "...")) {
            tm->reason = tm->reason ? tm->reason : "variadic template";
            advance(p);
        }
        if (cur(p)->kind == BT_TOK_IDENT) {
            *name = tokdup(p, cur(p));
            advance(p);
        } else if (!tm->reason) {
            tm->reason = bt_arena_printf(p->arena, "template parameter %d has no name", k + 1);
        }
        if (bt_lex_is(cur(p), "=")) {
            int a = p->pos + 1;
            advance(p);
            if (skip_targ(p) < 0)
                return -1;
            if (p->pos == a)
                return expected(p, cur(p), "default template argument");
            if (!(info->defval = span_text(p, a, p->pos)))
                return bt_diag_nomem(p->diag);
        }
        if (!bt_lex_is(cur(p), ",") && !bt_lex_is(cur(p), ">"))
            return expected(p, cur(p), "'>'");
        return 0;
    }
    if (skip_targ(p) < 0)
        return -1;
    eq = find_top(p, start, p->pos, "=");
    if (eq == start)
        return expected(p, tok(p, start), "template parameter");
    if (eq + 1 == p->pos)
        return expected(p, cur(p), "default template argument");
    if (eq < p->pos && !(info->defval = span_text(p, eq + 1, p->pos)))
        return bt_diag_nomem(p->diag);
    return value_tparam(p, tm, start, eq, name, info);
}

/* template -> 'template' '<' [tparam (',' tparam)*] '>' decl */
static int parse_template(Parser *p, int extern_c)
{
    int start = p->pos, cap = 8;
    Tmpl tm = {NULL, NULL, 0, NULL};

    advance(p);
    if (!bt_lex_is(cur(p), "<"))
        return skip_other(p); /* explicit instantiation */
    advance(p);
    tm.names = bt_arena_alloc(p->arena, (size_t)cap * sizeof *tm.names);
    tm.info = bt_arena_alloc(p->arena, (size_t)cap * sizeof *tm.info);
    if (!tm.names || !tm.info)
        return bt_diag_nomem(p->diag);
    if (bt_lex_is(cur(p), ">")) {
        tm.reason = "explicit template specialization";
    } else {
        for (;;) {
            const char *name;
            BtTParam info;
            if (parse_tparam(p, &tm, &name, &info) < 0)
                return -1;
            if (tm.n == cap) {
                const char **v = bt_arena_alloc(p->arena, (size_t)cap * 2 * sizeof *v);
                BtTParam *w = bt_arena_alloc(p->arena, (size_t)cap * 2 * sizeof *w);
                if (!v || !w)
                    return bt_diag_nomem(p->diag);
                memcpy(v, tm.names, (size_t)cap * sizeof *v);
                memcpy(w, tm.info, (size_t)cap * sizeof *w);
                tm.names = v;
                tm.info = w;
                cap *= 2;
            }
            if (!name)
                return bt_diag_nomem(p->diag);
            tm.info[tm.n] = info;
            tm.names[tm.n++] = name;
            if (!bt_lex_is(cur(p), ","))
                break;
            advance(p);
        }
    }
    advance(p); /* '>' */
    if (bt_lex_is(cur(p), "template"))
        return skip_other(p);
    return parse_decl(p, &tm, extern_c, start);
}

/* namespace -> ['inline'] 'namespace' [IDENT ('::' ['inline'] IDENT)*]
 *              ('{' item* '}' | '=' other) */
static int parse_namespace(Parser *p)
{
    const char **saved = p->ns;
    int saved_n = p->n_ns, saved_anon = p->anon_ns, start, n_names = 0;

    if (bt_lex_is(cur(p), "inline"))
        advance(p);
    advance(p);
    start = p->pos;
    if (cur(p)->kind == BT_TOK_IDENT) {
        for (;;) {
            advance(p);
            n_names++;
            if (!bt_lex_is(cur(p), "::"))
                break;
            advance(p);
            if (bt_lex_is(cur(p), "inline")) /* C++20 a::inline b */
                advance(p);
            if (cur(p)->kind != BT_TOK_IDENT)
                return expected(p, cur(p), "namespace name");
        }
    }
    if (bt_lex_is(cur(p), "="))
        return skip_other(p); /* namespace alias */
    if (!bt_lex_is(cur(p), "{"))
        return expected(p, cur(p), n_names ? "'::' or '{'" : "'{'");
    if (n_names == 0) {
        p->anon_ns = 1;
    } else {
        int k = p->n_ns;
        const char **v = bt_arena_alloc(p->arena, (size_t)(k + n_names) * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag);
        if (k)
            memcpy(v, p->ns, (size_t)k * sizeof *v);
        for (int i = start; i < p->pos; i++) {
            if (tok(p, i)->kind == BT_TOK_IDENT && !bt_lex_is(tok(p, i), "inline") &&
                !(v[k++] = tokdup(p, tok(p, i))))
                return bt_diag_nomem(p->diag);
        }
        p->ns = v;
        p->n_ns = k;
    }
    advance(p);
    if (parse_items(p, 1) < 0)
        return -1;
    advance(p); /* '}' */
    p->ns = saved;
    p->n_ns = saved_n;
    p->anon_ns = saved_anon;
    return 0;
}

/* item -> ';' | namespace | 'extern' STRING ('{' item* '}' | item) | template | decl */
static int parse_item(Parser *p)
{
    const BtToken *t = cur(p);
    int r;

    if (bt_lex_is(t, ";")) {
        advance(p);
        return 0;
    }
    if (++p->depth > MAX_NEST)
        return fail(p, t, "declarations nested too deeply");
    if (bt_lex_is(t, "namespace") || (bt_lex_is(t, "inline") && is(p, p->pos + 1, "namespace"))) {
        r = parse_namespace(p);
    } else if (bt_lex_is(t, "extern") && tok(p, p->pos + 1)->kind == BT_TOK_STRING) {
        int c = is(p, p->pos + 1, "\"C\"");
        if (is(p, p->pos + 2, "{")) {
            int saved = p->extern_c;
            p->pos += 3;
            p->extern_c = c;
            r = parse_items(p, 1);
            advance(p); /* '}' */
            p->extern_c = saved;
        } else {
            int start = p->pos;
            p->pos += 2;
            if (bt_lex_is(cur(p), "template"))
                r = parse_template(p, c);
            else
                r = parse_decl(p, NULL, c, start);
        }
    } else if (bt_lex_is(t, "template")) {
        r = parse_template(p, 0);
    } else {
        r = parse_decl(p, NULL, 0, p->pos);
    }
    p->depth--;
    return r;
}

/* Where reading resumes after an unreadable declaration starting at token
 * start: after the first ';' at brace depth 0, or after the '}' closing a
 * brace group the declaration opened; at a '}' closing the enclosing block
 * (not consumed) or at the end. Always past start unless start ends the file. */
static int resync(const Parser *p, int start)
{
    int braces = 0, i;

    for (i = start;; i++) {
        const BtToken *t = tok(p, i);
        if (at_end(t))
            return i;
        if (bt_lex_is(t, ";") && braces == 0)
            return i + 1;
        if (bt_lex_is(t, "{"))
            braces++;
        else if (bt_lex_is(t, "}") && braces == 0)
            return i; /* the enclosing block's */
        else if (bt_lex_is(t, "}") && --braces == 0)
            return i + 1;
    }
}

/* The name of an unreadable declaration in [a, b): the identifier before
 * its first '(' at bracket depth 0, or NULL. */
static const BtToken *unreadable_name(const Parser *p, int a, int b)
{
    int i = find_top(p, a, b, "(");

    if (i < b && i > a && tok(p, i - 1)->kind == BT_TOK_IDENT &&
        !is_any(tok(p, i - 1), builtin_words) && !is_any(tok(p, i - 1), other_words))
        return tok(p, i - 1);
    return NULL;
}

/* The item at token start could not be read (p->diag says why): records it
 * as an unbindable declaration and moves past it (see resync). */
static int recover(Parser *p, int start)
{
    char where[sizeof p->diag->message + 64];
    const char *clean;
    int fail_at = p->fail_tok, end;
    const BtToken *nt;
    BtDecl *d;

    bt_diag_format(p->diag, where, sizeof where);
    bt_diag_init(p->diag);
    end = resync(p, start);
    if (is(p, start, "}") && end == start)
        end = start + 1; /* a stray '}' at file scope */
    p->pos = end;
    if (at_end(tok(p, fail_at)) && at_end(tok(p, end))) {
        if (p->eof_recorded)
            return 0;
        p->eof_recorded = 1;
    }
    if (add_decl(p, &d) < 0)
        return -1;
    nt = unreadable_name(p, start, end > start ? end : start + 1);
    d->name = nt ? tokdup(p, nt) : bt_arena_printf(p->arena, "<line %d>", tok(p, start)->line);
    clean = bt_lex_utf8_text(p->arena, where);
    d->unbindable = clean ? bt_arena_printf(p->arena, "cannot read the declaration: %s", clean)
                          : NULL;
    d->doc = "";
    if (!d->name || !d->unbindable)
        return bt_diag_nomem(p->diag);
    d->unreadable = 1;
    d->ret.tparam = -1;
    d->ret.type = BT_VOID;
    d->ns = p->ns;
    d->n_ns = p->n_ns;
    d->extern_c = p->extern_c;
    d->line = (nt ? nt : tok(p, start))->line;
    d->col = bt_lex_col(&p->toks, nt ? nt : tok(p, start));
    d->first_line = tok(p, start)->line;
    d->last_line = tok(p, end > start ? end - 1 : start)->line;
    p->n_decls++;
    return 0;
}

/* header -> item* EOF; inside braces, item* up to (not past) '}'. Outside
 * strict mode an item that cannot be read is recorded (recover), and
 * reading goes on after it. */
static int parse_items(Parser *p, int inside)
{
    /* `namespace a::b::c {` nests as deep as three namespace blocks */
    if (inside && p->n_ns > MAX_NEST) /* at the namespace's '{' */
        return fail(p, tok(p, p->pos - 1), "namespaces nested too deeply (%d names; at most %d)",
                    p->n_ns, MAX_NEST);
    for (;;) {
        const BtToken *t = cur(p);
        const char **ns = p->ns;
        int start = p->pos, n_ns = p->n_ns, extern_c = p->extern_c, anon = p->anon_ns;
        int depth = p->depth, r;
        if (t->kind == BT_TOK_ERROR || (t->kind == BT_TOK_EOF && inside)) {
            r = expected(p, t, "'}'");
            if (inside || p->strict)
                return r;
            return recover(p, start);
        }
        if (t->kind == BT_TOK_EOF)
            return 0;
        if (bt_lex_is(t, "}") && inside)
            return 0;
        r = bt_lex_is(t, "}") ? fail(p, t, "unexpected '}'") : parse_item(p);
        if (r == 0)
            continue;
        if (p->strict || p->diag->kind == BT_DIAG_NOMEM)
            return -1;
        p->ns = ns;
        p->n_ns = n_ns;
        p->extern_c = extern_c;
        p->anon_ns = anon;
        p->depth = depth;
        if (recover(p, start) < 0)
            return -1;
    }
}

int bt_parse_header(const char *file, const char *text, size_t len, int strict, BtArena *arena,
                    BtHeader *out, BtDiag *diag)
{
    Parser p;

    memset(&p, 0, sizeof p);
    memset(out, 0, sizeof *out);
    p.file = file;
    p.arena = arena;
    p.diag = diag;
    p.strict = strict;
    if (bt_lex_all(file, text, len, arena, &p.toks, diag) < 0)
        return -1;
    bt_lex_strip_attributes(&p.toks);
    if (parse_items(&p, 0) < 0)
        return -1;
    if (arena->failed) /* an unchecked allocation, e.g. an unbindable reason */
        return bt_diag_nomem(diag);
    /* the tokens are most of the memory; the declarations hold copies */
    bt_lex_release(&p.toks, arena);
    if (p.n_decls &&
        !(p.decls = bt_arena_resize(arena, p.decls, (size_t)p.n_decls * sizeof *p.decls)))
        return bt_diag_nomem(diag);
    out->file = bt_arena_strdup(arena, file ? file : "");
    if (!out->file)
        return bt_diag_nomem(diag);
    out->decls = p.decls;
    out->n_decls = p.n_decls;
    out->dirs = p.toks.dirs;
    out->n_dirs = p.toks.n_dirs;
    return 0;
}
