/* bt_parse_const.c - integer constant expressions, and the header's
 * #define constants.
 *
 *   expr  -> or ['?' expr ':' expr]
 *   or    -> binary operators by C's precedence, from || down to * / %
 *   unary -> ('+' | '-' | '~' | '!') unary | '(' int-type ')' unary | primary
 *   primary -> NUMBER | CHAR | IDENT (an enum member or a constant) | '(' expr ')'
 *
 * Values are C's `long long`: an operation that overflows it, a division by
 * zero, a shift out of range or anything else makes the expression not a
 * constant (never undefined behaviour here). The lexer's punctuators are one
 * character: `<<` is two adjacent '<' tokens. */
#include "bt_parse_impl.h"

#include <limits.h>

#define MAX_EVAL_DEPTH 64

typedef struct Eval {
    Parser *p;
    const BtToken *v;
    int i, b;
    int depth;
    int unsigned_seen, negative_seen; /* both: C's unsigned arithmetic, not evaluated here */
} Eval;

enum { BAD = 1 };

static long long expr(Eval *e, int *bad);
static int define_value(Parser *p, int k, long long *out);

static int punct(const Eval *e, int i, char c)
{
    return i < e->b && e->v[i].kind == BT_TOK_PUNCT && e->v[i].len == 1 && *e->v[i].s == c;
}

/* Two adjacent one-character tokens at i spelling c1 c2. */
static int punct2(const Eval *e, int i, char c1, char c2)
{
    return punct(e, i, c1) && punct(e, i + 1, c2) && e->v[i + 1].s == e->v[i].s + 1;
}

/* The binary operator at e->i: its precedence (1 for ||, ... 10 for * / %),
 * its code in *op and its length in *len; 0 when none. */
static int binop(const Eval *e, int *op, int *len)
{
    static const struct {
        char a, b;
        int prec;
    } ops[] = {{'|', '|', 1}, {'&', '&', 2}, {'=', '=', 6}, {'!', '=', 6}, {'<', '=', 7},
               {'>', '=', 7}, {'<', '<', 8}, {'>', '>', 8}, {'|', 0, 3},   {'^', 0, 4},
               {'&', 0, 5},   {'<', 0, 7},   {'>', 0, 7},   {'+', 0, 9},   {'-', 0, 9},
               {'*', 0, 10},  {'/', 0, 10},  {'%', 0, 10}};
    size_t k;

    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        if (ops[k].b ? punct2(e, e->i, ops[k].a, ops[k].b) : punct(e, e->i, ops[k].a)) {
            *op = ops[k].a * 256 + ops[k].b;
            *len = ops[k].b ? 2 : 1;
            return ops[k].prec;
        }
    }
    return 0;
}

static long long apply(int op, long long x, long long y, int *bad)
{
    long long r = 0;

    switch (op) {
    case '|' * 256 + '|': return x || y;
    case '&' * 256 + '&': return x && y;
    case '=' * 256 + '=': return x == y;
    case '!' * 256 + '=': return x != y;
    case '<' * 256 + '=': return x <= y;
    case '>' * 256 + '=': return x >= y;
    case '<' * 256: return x < y;
    case '>' * 256: return x > y;
    case '|' * 256: return x | y;
    case '^' * 256: return x ^ y;
    case '&' * 256: return x & y;
    case '<' * 256 + '<':
        if (y < 0 || y > 62 || x < 0 || x > (LLONG_MAX >> y))
            break;
        return x << y;
    case '>' * 256 + '>':
        if (y < 0 || y > 63 || x < 0)
            break;
        return x >> y;
    case '+' * 256:
        if (__builtin_add_overflow(x, y, &r))
            break;
        return r;
    case '-' * 256:
        if (__builtin_sub_overflow(x, y, &r))
            break;
        return r;
    case '*' * 256:
        if (__builtin_mul_overflow(x, y, &r))
            break;
        return r;
    case '/' * 256:
    case '%' * 256:
        if (y == 0 || (x == LLONG_MIN && y == -1))
            break;
        return op == '/' * 256 ? x / y : x % y;
    }
    *bad = BAD;
    return 0;
}

/* A name's value: an enum member, or a constant the header defines. */
static long long name_value(Eval *e, const BtToken *t, int *bad)
{
    char name[256];
    const Name *n;

    if (t->len >= sizeof name) {
        *bad = BAD;
        return 0;
    }
    memcpy(name, t->s, t->len);
    name[t->len] = '\0';
    n = bt_parse_lookup(e->p, name);
    if (n && n->kind == NAME_VALUE)
        return n->value;
    if (n && n->kind == NAME_DEFINE && e->p->define_depth < MAX_EVAL_DEPTH) {
        Define *d = &e->p->defines[n->value];
        if (d->state == 0) {
            d->state = 1; /* a macro naming itself is no constant */
            e->p->define_depth++;
            d->state = define_value(e->p, (int)n->value, &d->c.value) == 0 ? 2 : 3;
            e->p->define_depth--;
        }
        if (d->state == 2 && !d->c.is_string)
            return d->c.value;
    }
    *bad = BAD;
    return 0;
}

/* '(' type-words ')' at e->i: a cast to an integer type, skipped. */
static int skip_cast(Eval *e)
{
    int j = e->i + 1;

    if (!punct(e, e->i, '('))
        return 0;
    while (j < e->b && e->v[j].kind == BT_TOK_IDENT && is_any(&e->v[j], bt_parse_builtin_words)) {
        e->unsigned_seen |= bt_lex_is(&e->v[j], "unsigned");
        j++;
    }
    if (j == e->i + 1 || !punct(e, j, ')'))
        return 0;
    e->i = j + 1;
    return 1;
}

static long long unary(Eval *e, int *bad)
{
    const BtToken *t;
    BtLiteral lit;
    long long x;

    if (e->i >= e->b || ++e->depth > MAX_EVAL_DEPTH) {
        *bad = BAD;
        return 0;
    }
    t = &e->v[e->i];
    if (punct(e, e->i, '-') || punct(e, e->i, '+') || punct(e, e->i, '~') || punct(e, e->i, '!')) {
        char c = *t->s;
        e->i++;
        x = unary(e, bad);
        if (c == '-' && x == LLONG_MIN)
            *bad = BAD;
        x = c == '-' ? -x : c == '~' ? ~x : c == '!' ? !x : x;
    } else if (skip_cast(e)) {
        x = unary(e, bad);
    } else if (punct(e, e->i, '(')) {
        e->i++;
        x = expr(e, bad);
        if (!punct(e, e->i, ')'))
            *bad = BAD;
        e->i++;
    } else if (t->kind == BT_TOK_NUMBER || t->kind == BT_TOK_CHAR) {
        char text[128];
        if (t->len >= sizeof text ||
            (memcpy(text, t->s, t->len), text[t->len] = '\0', bt_lex_literal(text, &lit) < 0) ||
            (lit.kind != BT_LIT_INT && lit.kind != BT_LIT_CHAR) || lit.u > LLONG_MAX)
            *bad = BAD;
        x = (long long)lit.u;
        e->unsigned_seen |= t->kind == BT_TOK_NUMBER && memchr(t->s, 'u', t->len) != NULL;
        e->unsigned_seen |= t->kind == BT_TOK_NUMBER && memchr(t->s, 'U', t->len) != NULL;
        e->i++;
    } else if (t->kind == BT_TOK_IDENT) {
        x = name_value(e, t, bad);
        e->i++;
    } else {
        *bad = BAD;
        x = 0;
    }
    e->depth--;
    e->negative_seen |= x < 0;
    return *bad ? 0 : x;
}

/* Binary operators of precedence min and above (precedence climbing). */
static long long binary(Eval *e, int min, int *bad)
{
    long long x = unary(e, bad), y;
    int op, len, prec;

    while (!*bad && (prec = binop(e, &op, &len)) >= min && prec) {
        e->i += len;
        y = binary(e, prec + 1, bad);
        if (!*bad)
            x = apply(op, x, y, bad);
    }
    return x;
}

static long long expr(Eval *e, int *bad)
{
    long long c = binary(e, 1, bad), x, y;

    if (*bad || !punct(e, e->i, '?'))
        return c;
    e->i++;
    x = expr(e, bad);
    if (!punct(e, e->i, ':'))
        *bad = BAD;
    e->i++;
    y = expr(e, bad);
    return c ? x : y;
}

int bt_parse_const_expr(Parser *p, const BtToken *v, int a, int b, long long *out)
{
    Eval e = {p, v, a, b, 0, 0, 0};
    int bad = 0;

    if (a >= b)
        return 1;
    *out = expr(&e, &bad);
    e.negative_seen |= *out < 0;
    return bad || e.i != b || (e.unsigned_seen && e.negative_seen);
}

/* ---- #define constants ---- */

static int define_value(Parser *p, int k, long long *out)
{
    Define *d = &p->defines[k];
    BtTokens toks;
    BtDiag diag;
    int r = 1;

    bt_diag_init(&diag);
    if (bt_lex_all(d->name, d->value, strlen(d->value), p->arena, &toks, &diag) < 0)
        return 1;
    if (toks.n > 1 && toks.v[toks.n - 1].kind == BT_TOK_EOF) {
        int n = toks.n - 1;
        if (n == 1 && toks.v[0].kind == BT_TOK_STRING && toks.v[0].s[0] == '"') {
            d->c.is_string = 1; /* a plain string literal, as written: its escapes kept */
            d->c.text = bt_arena_strndup(p->arena, toks.v[0].s + 1, toks.v[0].len - 2);
            r = d->c.text ? 0 : 1;
        } else {
            r = bt_parse_const_expr(p, toks.v, 0, n, out);
        }
    }
    bt_lex_release(&toks, p->arena);
    return r;
}

/* The directive text "NAME value": the define it makes, or 1 when it is a
 * function-like macro or has no value. */
static int read_define(Parser *p, const BtDirective *x, Define *d)
{
    const char *s = x->text, *e = s;

    while (*e == '_' || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') ||
           (*e >= '0' && *e <= '9'))
        e++;
    if (e == s || *e == '(' || (*e && *e != ' ' && *e != '\t'))
        return 1;
    memset(d, 0, sizeof *d);
    d->name = bt_arena_strndup(p->arena, s, (size_t)(e - s));
    d->value = e;
    d->line = x->line;
    if (!d->name)
        return bt_diag_nomem(p->diag);
    d->c.name = d->name;
    d->c.line = d->line;
    return 0;
}

int bt_parse_defines(Parser *p, const BtDirective *dirs, int n)
{
    int i;

    Define *v = bt_arena_resize(p->arena, p->defines, (size_t)(p->n_defines + n + 1) * sizeof *v);

    if (!v) /* after an own file's, the next's (bt_cpp.h): appended */
        return bt_diag_nomem(p->diag);
    p->defines = v;
    for (i = 0; i < n; i++) {
        Name *nm;
        int r;
        if (dirs[i].kind != BT_DIR_DEFINE)
            continue;
        if ((r = read_define(p, &dirs[i], &p->defines[p->n_defines])) < 0)
            return -1;
        if (r > 0)
            continue;
        if (!(nm = bt_parse_declare(p, p->defines[p->n_defines].name, NAME_DEFINE)))
            return -1;
        nm->value = p->n_defines++;
    }
    return 0;
}

int bt_parse_constants(Parser *p, BtHeader *out)
{
    int i, k = 0;

    out->consts = bt_arena_alloc(p->arena, (size_t)(p->n_defines + 1) * sizeof *out->consts);
    if (!out->consts)
        return bt_diag_nomem(p->diag);
    for (i = 0; i < p->n_defines; i++) {
        Define *d = &p->defines[i];
        const Name *nm = bt_parse_lookup(p, d->name);
        if (!nm || nm->kind != NAME_DEFINE || nm->value != i)
            continue; /* defined again further down (that one is the constant), or redeclared */
        if (d->state == 0) {
            d->state = 1;
            d->state = define_value(p, i, &d->c.value) == 0 ? 2 : 3;
        }
        if (d->state == 2)
            out->consts[k++] = d->c;
    }
    out->n_consts = k;
    if (p->arena->failed)
        return bt_diag_nomem(p->diag);
    return 0;
}
