/* bt_expr.c - the annotations' expression language (bt_expr.h): a
 * recursive-descent parser over the text, names bound to a declaration and
 * its header, and checked evaluation.
 *
 *   cond    -> binary ('?' cond ':' cond)?
 *   binary  -> unary (binop unary)*   by C's precedence, lowest first:
 *              ||, &&, == !=, < <= > >=, << >>, + -, * / % (precedence climbing)
 *   unary   -> ('-' | '+' | '!') unary | primary
 *   primary -> integer | name | '(' cond ')' | query '(' name (',' cond)* ')'
 *            | ('min' | 'max') '(' cond (',' cond)+ ')'
 *
 * One loop of `binary` reads a run of operators (`a + b * c - d` at the
 * lowest level: + and -) and makes their nodes together once it has read
 * their operands, so that node k's left operand is node k - 1 (bt_expr.h);
 * `chain` evaluates such a run in a loop. Recursion, parsing and
 * evaluating, is then bounded by the nesting (BT_EXPR_MAX_DEPTH) times the
 * precedence levels, whatever the text's length. */
#include "bt_expr.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bt_lex.h"
#include "bt_plan.h"

#define QUOTE_MAX 200 /* characters of the text a message quotes */

/* printf arguments for "%.*s%s": text t, cut at QUOTE_MAX characters. */
#define QUOTED(t)                                                                                  \
    (int)(strlen(t) > QUOTE_MAX ? QUOTE_MAX : strlen(t)), (t), strlen(t) > QUOTE_MAX ? "..." : ""

/* The functions: an array query, or min/max. */
typedef struct Function {
    const char *name;
    int op;     /* BT_X_QUERY, BT_X_MIN, BT_X_MAX */
    int k;      /* BT_Q_* */
    int n_args; /* a query's, its array's name included */
} Function;

static const Function functions[] = {{"len", BT_X_QUERY, BT_Q_LEN, 1},
                                     {"shape", BT_X_QUERY, BT_Q_SHAPE, 2},
                                     {"stride", BT_X_QUERY, BT_Q_STRIDE, 1},
                                     {"ld", BT_X_QUERY, BT_Q_LD, 1},
                                     {"ndim", BT_X_QUERY, BT_Q_NDIM, 1},
                                     {"layout", BT_X_QUERY, BT_Q_LAYOUT, 3},
                                     {"minval", BT_X_QUERY, BT_Q_MINVAL, 1},
                                     {"maxval", BT_X_QUERY, BT_Q_MAXVAL, 1},
                                     {"minabs", BT_X_QUERY, BT_Q_MINABS, 1},
                                     {"maxabs", BT_X_QUERY, BT_Q_MAXABS, 1},
                                     {"min", BT_X_MIN, 0, 0},
                                     {"max", BT_X_MAX, 0, 0}};

#define N_FUNCTIONS ((int)(sizeof functions / sizeof functions[0]))

/* The binary operators, two-character ones first: code (BtExprNode.binop)
 * and precedence (1 for ||, 7 for * / %). */
static const struct {
    char s[3];
    char op;
    int prec;
} binops[] = {{"||", '|', 1}, {"&&", '&', 2}, {"==", 'E', 3}, {"!=", 'N', 3}, {"<=", 'L', 4},
              {">=", 'G', 4}, {"<<", '<', 5}, {">>", '>', 5}, {"<", 'l', 4},  {">", 'g', 4},
              {"+", '+', 6},  {"-", '-', 6},  {"*", '*', 7},  {"/", '/', 7},  {"%", '%', 7}};

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int ident_start(int c) { return c == '_' || ((c | 32) >= 'a' && (c | 32) <= 'z'); }
static int ident_char(int c) { return ident_start(c) || is_digit(c); }
static int is_blank(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static BT_PRINTF(5, 6) int fail(const BtExpr *e, BtDiag *diag, int off, const char *tail,
                                const char *fmt, ...);

/* Records "MESSAGE in 'TEXT'TAIL" at offset off of e's text; returns -1. */
static int fail(const BtExpr *e, BtDiag *diag, int off, const char *tail, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bt_diag_set(diag, BT_DIAG_INSTANTIATE, e->file, e->line, e->col ? e->col + off : 0,
                       "%s in '%.*s%s'%s", msg, QUOTED(e->text), tail);
}

/* ---- parsing ---- */

/* A pending node of the loop that reads it: an operator (its code, column
 * and right operand) or a min/max argument (node). */
typedef struct Pending {
    int node, col;
    char op;
} Pending;

typedef struct Reader {
    const BtExpr *e; /* text, file, line, col */
    const char *s;
    int len, i;
    int depth;
    BtExprNode *nodes; /* at most one a character */
    int n, cap;
    Pending *stk;
    int n_stk, stk_cap;
    BtArena *arena;
    BtDiag *diag;
} Reader;

static int cond(Reader *r);
static int unary(Reader *r);

static void blank(Reader *r)
{
    while (r->i < r->len && is_blank((unsigned char)r->s[r->i]))
        r->i++;
}

static int too_deep(Reader *r)
{
    return fail(r->e, r->diag, r->i, "", "nested more than %d deep", BT_EXPR_MAX_DEPTH);
}

/* Room in *p, an array of *cap elements of elem bytes, for element n: the
 * array doubled where needed. 0, or -1 (out of memory). */
static int room(Reader *r, void **p, int n, int *cap, size_t elem)
{
    int c = *cap ? *cap * 2 : 16;
    void *q;

    if (n < *cap)
        return 0;
    if (!(q = bt_arena_resize(r->arena, *p, (size_t)c * elem)))
        return bt_diag_nomem(r->diag);
    *p = q;
    *cap = c;
    return 0;
}

/* A new node (fields -1 or zero), or -1. */
static int node(Reader *r, int op, int col)
{
    BtExprNode *n;
    void *p = r->nodes;

    if (room(r, &p, r->n, &r->cap, sizeof *n) < 0)
        return -1;
    r->nodes = p;
    n = &r->nodes[r->n];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->col = col;
    n->a = n->b = n->c = n->param = -1;
    return r->n++;
}

static int push(Reader *r, int node, int col, char op)
{
    void *p = r->stk;

    if (room(r, &p, r->n_stk, &r->stk_cap, sizeof *r->stk) < 0)
        return -1;
    r->stk = p;
    r->stk[r->n_stk].node = node;
    r->stk[r->n_stk].col = col;
    r->stk[r->n_stk].op = op;
    r->n_stk++;
    return 0;
}

/* "expected X" at the point, or "unexpected 'c'" where something else stands. */
static int unexpected(Reader *r, const char *expected)
{
    int c = (unsigned char)r->s[r->i];

    if (r->i >= r->len)
        return fail(r->e, r->diag, r->i, "", "expected %s", expected);
    if (c < 0x20 || c >= 0x7f)
        return fail(r->e, r->diag, r->i, "", "unexpected byte 0x%02x", c);
    return fail(r->e, r->diag, r->i, "", "unexpected '%c'", c);
}

static int expect(Reader *r, char c)
{
    blank(r);
    if (r->i < r->len && r->s[r->i] == c) {
        r->i++;
        return 0;
    }
    return fail(r->e, r->diag, r->i, "", "expected '%c'", c);
}

/* The binary operator at the point: its precedence, code and length; 0 if none. */
static int binop_at(const Reader *r, char *op, int *len)
{
    size_t k;

    for (k = 0; k < sizeof binops / sizeof binops[0]; k++) {
        int n = binops[k].s[1] ? 2 : 1;
        if (r->len - r->i >= n && !memcmp(r->s + r->i, binops[k].s, (size_t)n)) {
            *op = binops[k].op;
            *len = n;
            return binops[k].prec;
        }
    }
    return 0;
}

/* integer -> C's integer literal (bt_lex_literal): 0x, 0, 0b; u/l suffixes */
static int number(Reader *r)
{
    char buf[64];
    BtLiteral lit;
    int off = r->i, len, n;

    while (r->i < r->len && (ident_char((unsigned char)r->s[r->i]) || r->s[r->i] == '.'))
        r->i++;
    len = r->i - off;
    if (len >= (int)sizeof buf)
        return fail(r->e, r->diag, off, "", "'%.20s...' is not an integer", r->s + off);
    memcpy(buf, r->s + off, (size_t)len);
    buf[len] = '\0';
    if (bt_lex_literal(buf, &lit) < 0 || lit.kind != BT_LIT_INT)
        return fail(r->e, r->diag, off, "", "'%s' is not an integer", buf);
    if (lit.u > (unsigned long long)LLONG_MAX)
        return fail(r->e, r->diag, off, "", "integer %s is out of range", buf);
    if ((n = node(r, BT_X_INT, off + 1)) >= 0)
        r->nodes[n].v = (long long)lit.u;
    return n;
}

/* binary -> unary (binop binary')*: the operators of precedence min and
 * up; binary' reads those above the operator's own (left-associative). */
static int binary(Reader *r, int min)
{
    int x, base = r->n_stk, prec, len, k;
    char op;

    if ((x = unary(r)) < 0)
        return -1;
    blank(r);
    while ((prec = binop_at(r, &op, &len)) >= min && prec > 0) {
        int at = r->n_stk, col = r->i + 1;
        r->i += len;
        if (push(r, -1, col, op) < 0 || (r->stk[at].node = binary(r, prec + 1)) < 0)
            return -1;
        blank(r);
    }
    for (k = base; k < r->n_stk; k++) { /* the run's nodes, consecutive */
        int b = node(r, BT_X_BINARY, r->stk[k].col);
        if (b < 0)
            return -1;
        r->nodes[b].binop = r->stk[k].op;
        r->nodes[b].a = x;
        r->nodes[b].b = r->stk[k].node;
        x = b;
    }
    r->n_stk = base;
    return x;
}

/* The function named by len characters at s, or -1. */
static int function(const char *s, int len)
{
    int f;

    for (f = 0; f < N_FUNCTIONS; f++)
        if ((int)strlen(functions[f].name) == len && !memcmp(functions[f].name, s, (size_t)len))
            return f;
    return -1;
}

static const char *query_name(int k)
{
    int f;

    for (f = 0; f < N_FUNCTIONS; f++)
        if (functions[f].op == BT_X_QUERY && functions[f].k == k)
            return functions[f].name;
    return "?";
}

/* query '(' name (',' cond)* ')': the node made after its arguments (children first) */
static int query(Reader *r, const Function *fn, int off)
{
    int name_at, name_len, k, n, args[2] = {-1, -1};
    const char *name;

    blank(r);
    name_at = r->i;
    if (r->i >= r->len || !ident_start((unsigned char)r->s[r->i]))
        return fail(r->e, r->diag, r->i, "", "%s() takes an array parameter's name", fn->name);
    while (r->i < r->len && ident_char((unsigned char)r->s[r->i]))
        r->i++;
    name_len = r->i - name_at;
    for (k = 1; k < fn->n_args; k++) {
        blank(r);
        if (r->i < r->len && r->s[r->i] == ')')
            return fail(r->e, r->diag, r->i, "", "%s() takes %d arguments", fn->name, fn->n_args);
        if (expect(r, ',') < 0 || (args[k - 1] = cond(r)) < 0)
            return -1;
    }
    blank(r);
    if (r->i < r->len && r->s[r->i] == ',')
        return fail(r->e, r->diag, r->i, "", "%s() takes %d argument%s", fn->name, fn->n_args,
                    fn->n_args > 1 ? "s" : "");
    if (expect(r, ')') < 0 || (n = node(r, BT_X_QUERY, off + 1)) < 0)
        return -1;
    if (!(name = bt_arena_strndup(r->arena, r->s + name_at, (size_t)name_len)))
        return bt_diag_nomem(r->diag);
    r->nodes[n].k = fn->k;
    r->nodes[n].name = name;
    r->nodes[n].a = args[0];
    r->nodes[n].b = args[1];
    return n;
}

/* ('min' | 'max') '(' cond (',' cond)+ ')' */
static int extreme_call(Reader *r, const Function *fn, int off)
{
    int base = r->n_stk, count, k, n, x;
    int *args;

    do {
        if ((x = cond(r)) < 0 || push(r, x, 0, 0) < 0)
            return -1;
        blank(r);
    } while (r->i < r->len && r->s[r->i] == ',' && ++r->i);
    if (expect(r, ')') < 0)
        return -1;
    if ((count = r->n_stk - base) < 2)
        return fail(r->e, r->diag, off, "", "%s() takes two arguments or more", fn->name);
    if ((n = node(r, fn->op, off + 1)) < 0)
        return -1;
    if (!(args = bt_arena_array(r->arena, (size_t)count, sizeof *args)))
        return bt_diag_nomem(r->diag);
    for (k = 0; k < count; k++)
        args[k] = r->stk[base + k].node;
    r->n_stk = base;
    r->nodes[n].args = args;
    r->nodes[n].n_args = count;
    return n;
}

/* name, or a call where '(' follows a function's name */
static int name_or_call(Reader *r)
{
    int off = r->i, len, j, f, n;

    while (r->i < r->len && ident_char((unsigned char)r->s[r->i]))
        r->i++;
    len = r->i - off;
    for (j = r->i; j < r->len && is_blank((unsigned char)r->s[j]); j++)
        ;
    if (j < r->len && r->s[j] == '(') {
        if ((f = function(r->s + off, len)) < 0)
            return fail(r->e, r->diag, off, "",
                        "unknown function '%.*s' (the functions are len, shape, stride, ld, "
                        "ndim, layout, min and max)",
                        len, r->s + off);
        r->i = j + 1; /* its arguments are conds, which count the nesting */
        return functions[f].op == BT_X_QUERY ? query(r, &functions[f], off)
                                             : extreme_call(r, &functions[f], off);
    }
    if ((n = node(r, BT_X_NAME, off + 1)) < 0)
        return -1;
    if (!(r->nodes[n].name = bt_arena_strndup(r->arena, r->s + off, (size_t)len)))
        return bt_diag_nomem(r->diag);
    return n;
}

/* primary -> integer | name | '(' cond ')' | call */
static int primary(Reader *r)
{
    int c = r->i < r->len ? (unsigned char)r->s[r->i] : 0, x;

    if (is_digit(c))
        return number(r);
    if (ident_start(c))
        return name_or_call(r);
    if (c != '(')
        return unexpected(r, "an expression");
    r->i++;
    if ((x = cond(r)) < 0 || expect(r, ')') < 0)
        return -1;
    return x;
}

/* unary -> ('-' | '+' | '!') unary | primary */
static int unary(Reader *r)
{
    int c, off, x, n;

    blank(r);
    c = r->i < r->len ? r->s[r->i] : 0;
    if (c != '-' && c != '+' && c != '!')
        return primary(r);
    if (++r->depth > BT_EXPR_MAX_DEPTH)
        return too_deep(r);
    off = r->i++;
    if ((x = unary(r)) < 0)
        return -1;
    r->depth--;
    if (c == '+')
        return x;
    if ((n = node(r, c == '-' ? BT_X_NEG : BT_X_NOT, off + 1)) >= 0)
        r->nodes[n].a = x;
    return n;
}

/* cond -> binary ('?' cond ':' cond)? */
static int cond(Reader *r)
{
    int c, x, y, n, off;

    if (++r->depth > BT_EXPR_MAX_DEPTH)
        return too_deep(r);
    if ((c = binary(r, 1)) < 0)
        return -1;
    blank(r);
    if (r->i < r->len && r->s[r->i] == '?') {
        off = r->i++;
        if ((x = cond(r)) < 0 || expect(r, ':') < 0 || (y = cond(r)) < 0)
            return -1;
        if ((n = node(r, BT_X_COND, off + 1)) < 0)
            return -1;
        r->nodes[n].a = c;
        r->nodes[n].b = x;
        r->nodes[n].c = y;
        c = n;
    }
    r->depth--;
    return c;
}

/* The whole text: cond, then its end. Returns the root, or -1. */
static int parse_text(Reader *r)
{
    int root = cond(r);

    if (root < 0)
        return -1;
    blank(r);
    if (r->i < r->len)
        return unexpected(r, "the end");
    return root;
}

int bt_expr_parse(const char *text, const char *file, int line, int col, BtArena *arena,
                  BtExpr *out, BtDiag *diag)
{
    Reader r;
    size_t len = text ? strlen(text) : 0;
    int root = -1;

    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    out->text = text ? text : "";
    out->file = file;
    out->line = line;
    out->col = col;
    if (len > BT_EXPR_MAX_LEN)
        return fail(out, diag, 0, "", "an expression of %zu characters (at most %d)", len,
                    BT_EXPR_MAX_LEN);
    out->text = bt_arena_strndup(arena, out->text, len);
    out->file = file ? bt_arena_strdup(arena, file) : NULL;
    r.e = out;
    r.s = out->text;
    r.len = (int)len;
    r.arena = arena;
    r.diag = diag;
    if (!out->text || (file && !out->file))
        bt_diag_nomem(diag);
    else
        root = parse_text(&r);
    bt_arena_release(arena, r.stk);
    if (root < 0) {
        bt_arena_release(arena, r.nodes);
        return -1;
    }
    out->nodes = bt_arena_resize(arena, r.nodes, (size_t)r.n * sizeof *r.nodes); /* shrunk */
    out->nodes = out->nodes ? out->nodes : r.nodes;
    out->n_nodes = r.n;
    out->root = root;
    return 0;
}

/* ---- evaluation ---- */

typedef struct Eval {
    const BtExpr *e;
    const BtExprEnv *env; /* NULL: constants only (bt_expr_bind's) */
    const char *why;      /* what failed: static text, msg, or env's */
    int from_env;
    char msg[160];
} Eval;

static int eval(Eval *x, int i, long long *v);

static int stop(Eval *x, const char *why)
{
    x->why = why;
    return -1;
}

/* a op b into *r for the arithmetic and comparison operators; NULL, or
 * what went wrong. */
static const char *arith(char op, long long a, long long b, long long *r)
{
    switch (op) {
    case '+': return __builtin_add_overflow(a, b, r) ? "overflow" : NULL;
    case '-': return __builtin_sub_overflow(a, b, r) ? "overflow" : NULL;
    case '*': return __builtin_mul_overflow(a, b, r) ? "overflow" : NULL;
    case '/':
    case '%':
        if (b == 0)
            return "division by zero";
        if (a == LLONG_MIN && b == -1)
            return "overflow";
        *r = op == '/' ? a / b : a % b;
        return NULL;
    case '<':
    case '>':
        if (b < 0 || b >= 63)
            return "shift count out of range";
        if (op == '<' && a < 0)
            return "left shift of a negative value";
        if (op == '<' && a > (LLONG_MAX >> b))
            return "overflow";
        *r = op == '<' ? a << b : a >> b;
        return NULL;
    case 'E': *r = a == b; return NULL;
    case 'N': *r = a != b; return NULL;
    case 'l': *r = a < b; return NULL;
    case 'L': *r = a <= b; return NULL;
    case 'g': *r = a > b; return NULL;
    case 'G': *r = a >= b; return NULL;
    }
    return "unknown operator";
}

/* The run of binary nodes ending at node i, in a loop: node k's left
 * operand is node k - 1 (bt_expr.h). */
static int chain(Eval *x, int i, long long *v)
{
    const BtExprNode *nodes = x->e->nodes;
    int j = i, k;

    while (j > 0 && nodes[j].a == j - 1 && nodes[j - 1].op == BT_X_BINARY)
        j--;
    if (eval(x, nodes[j].a, v) < 0)
        return -1;
    for (k = j; k <= i; k++) {
        char op = nodes[k].binop;
        const char *why;
        long long b;
        if ((op == '&' && !*v) || (op == '|' && *v)) {
            *v = op == '|'; /* short-circuit: the right operand is not evaluated */
            continue;
        }
        if (eval(x, nodes[k].b, &b) < 0)
            return -1;
        if (op == '&' || op == '|')
            *v = b != 0;
        else if ((why = arith(op, *v, b, v)) != NULL)
            return stop(x, why);
    }
    return 0;
}

/* A parameter's value, or a query's, from the env. */
static int read_call(Eval *x, const BtExprNode *n, long long *v)
{
    const BtExprEnv *env = x->env;
    const char *why = NULL;
    long long q;

    if (!env && n->op == BT_X_PARAM)
        snprintf(x->msg, sizeof x->msg, "'%s' is a parameter", n->name);
    else if (!env)
        snprintf(x->msg, sizeof x->msg, "%s(%s) is not a constant", query_name(n->k), n->name);
    if (!env)
        return stop(x, x->msg);
    if (n->op == BT_X_PARAM) {
        if (env->param(env->ctx, n->param, v, &why) == 0)
            return 0;
    } else if (env->query(env->ctx, n->k, n->param, n->k == BT_Q_SHAPE ? n->v : 0, &q, &why) == 0) {
        *v = n->k != BT_Q_LAYOUT ? q : q ? n->w : n->v;
        return 0;
    }
    x->from_env = 1;
    return stop(x, why ? why : "no value");
}

/* min or max of n's arguments */
static int extreme(Eval *x, const BtExprNode *n, long long *v)
{
    long long a;
    int k;

    for (k = 0; k < n->n_args; k++) {
        if (eval(x, n->args[k], &a) < 0)
            return -1;
        if (k == 0 || (n->op == BT_X_MIN ? a < *v : a > *v))
            *v = a;
    }
    return 0;
}

static int eval(Eval *x, int i, long long *v)
{
    long long a;

    for (;;) {
        const BtExprNode *n = &x->e->nodes[i];
        switch (n->op) {
        case BT_X_INT: *v = n->v; return 0;
        case BT_X_PARAM:
        case BT_X_QUERY: return read_call(x, n, v);
        case BT_X_NEG:
        case BT_X_NOT:
            if (eval(x, n->a, &a) < 0)
                return -1;
            if (n->op == BT_X_NEG && a == LLONG_MIN)
                return stop(x, "overflow");
            *v = n->op == BT_X_NEG ? -a : !a;
            return 0;
        case BT_X_BINARY: return chain(x, i, v);
        case BT_X_COND:
            if (eval(x, n->a, &a) < 0)
                return -1;
            i = a ? n->b : n->c; /* the other branch is not evaluated */
            continue;
        case BT_X_MIN:
        case BT_X_MAX: return extreme(x, n, v);
        }
        snprintf(x->msg, sizeof x->msg, "'%s' is not bound", n->name ? n->name : "?");
        return stop(x, x->msg);
    }
}

int bt_expr_eval(const BtExpr *e, const BtExprEnv *env, long long *v, const char **why, char *buf,
                 size_t size)
{
    Eval x;

    memset(&x, 0, sizeof x);
    x.e = e;
    x.env = env;
    if (e->n_nodes == 0)
        x.why = "an expression not parsed";
    else if (eval(&x, e->root, v) == 0)
        return 0;
    if (x.from_env)
        *why = x.why;
    else if (!buf || !size)
        *why = x.why == x.msg ? "a name not bound" : x.why;
    else {
        snprintf(buf, size, "%s in '%.*s%s'", x.why, QUOTED(e->text));
        *why = buf;
    }
    return -1;
}

void bt_expr_values(const BtExpr *e, const BtExprEnv *env, char *buf, size_t size)
{
    size_t at = 0;
    int i, j;

    if (size)
        buf[0] = '\0';
    for (i = 0; i < e->n_nodes && at < size; i++) {
        const BtExprNode *n = &e->nodes[i];
        long long v;
        Eval x;
        int seen = 0;
        if (n->op != BT_X_PARAM && (n->op != BT_X_QUERY || n->k == BT_Q_LAYOUT))
            continue;
        for (j = 0; j < i && !seen; j++) /* each leaf once: `n` twice is one `n = 4` */
            seen = e->nodes[j].op == n->op && e->nodes[j].param == n->param &&
                   e->nodes[j].k == n->k && e->nodes[j].v == n->v;
        memset(&x, 0, sizeof x);
        x.e = e;
        x.env = env;
        if (seen || read_call(&x, n, &v) < 0)
            continue;
        if (n->op == BT_X_PARAM)
            at += (size_t)snprintf(buf + at, size - at, "%s%s = %lld", at ? ", " : "", n->name, v);
        else if (n->k == BT_Q_SHAPE)
            at += (size_t)snprintf(buf + at, size - at, "%sshape(%s, %lld) = %lld", at ? ", " : "",
                                   n->name, n->v, v);
        else
            at += (size_t)snprintf(buf + at, size - at, "%s%s(%s) = %lld", at ? ", " : "",
                                   query_name(n->k), n->name, v);
    }
}

/* ---- binding ---- */

static int param_index(const BtDecl *d, const char *name)
{
    int i;

    for (i = 0; i < d->n_params; i++)
        if (d->params[i].name && !strcmp(d->params[i].name, name))
            return i;
    return -1;
}

/* The value of h's constant `name`: an enum member or an integer #define. */
static int constant(const BtHeader *h, const char *name, long long *v)
{
    int i, j;

    for (i = 0; h && i < h->n_enums; i++)
        for (j = 0; j < h->enums[i].n_members; j++)
            if (!strcmp(h->enums[i].members[j].name, name)) {
                *v = h->enums[i].members[j].value;
                return 1;
            }
    for (i = 0; h && i < h->n_consts; i++)
        if (!h->consts[i].is_string && !strcmp(h->consts[i].name, name)) {
            *v = h->consts[i].value;
            return 1;
        }
    return 0;
}

/* Keeps candidate c in *near when it is a likely typo of name (bt_plan_near,
 * and not every character changed), closer than *best. */
static void consider(const char *name, const char *c, int *best, const char **near)
{
    size_t la = strlen(name), lb = strlen(c);
    int dist;

    if ((la > lb ? la - lb : lb - la) > 2)
        return;
    dist = bt_plan_distance(name, c);
    if (bt_plan_near(la, lb, dist) && dist < (int)(la > lb ? la : lb) && dist < *best) {
        *best = dist;
        *near = c;
    }
}

/* "; the parameters are n, x, incx; did you mean 'n'?" into buf: d's
 * parameters, and the nearest of them and of h's constants to name. */
static void name_hint(const BtDecl *d, const BtHeader *h, const char *name, char *buf, size_t size)
{
    const char *near = NULL;
    size_t at, room = size > 100 ? size - 100 : size; /* the rest kept for the near miss */
    int i, j, best = INT_MAX;

    snprintf(buf, room, "; %s", d->n_params ? "the parameters are " : "it has no parameters");
    for (i = 0; i < d->n_params; i++) {
        at = strlen(buf);
        snprintf(buf + at, room - at, "%s%s", i ? ", " : "", d->params[i].name);
        consider(name, d->params[i].name, &best, &near);
    }
    for (i = 0; h && i < h->n_enums; i++)
        for (j = 0; j < h->enums[i].n_members; j++)
            consider(name, h->enums[i].members[j].name, &best, &near);
    for (i = 0; h && i < h->n_consts; i++)
        if (!h->consts[i].is_string)
            consider(name, h->consts[i].name, &best, &near);
    at = strlen(buf);
    if (near)
        snprintf(buf + at, size - at, "; did you mean '%s'?", near);
}

static int unknown(const BtExpr *e, const BtDecl *d, const BtHeader *h, const char *what,
                   const char *name, int off, BtDiag *diag)
{
    char hint[1024];

    name_hint(d, h, name, hint, sizeof hint);
    return fail(e, diag, off, hint, "%s '%s'", what, name);
}

/* A query's constant argument (node i) into *v. */
static int const_arg(const BtExpr *e, const BtExprNode *q, int i, const char *which, long long *v,
                     BtDiag *diag)
{
    Eval x;

    memset(&x, 0, sizeof x);
    x.e = e;
    if (eval(&x, i, v) == 0)
        return 0;
    return fail(e, diag, e->nodes[i].col - 1, "", "%s(%s): %s must be a constant (%s)",
                query_name(q->k), q->name, which, x.why);
}

/* The offset of a query's argument in the text: after its name and '('. */
static int arg_offset(const BtExpr *e, const BtExprNode *q)
{
    const char *s = e->text + q->col - 1;

    while (ident_char((unsigned char)*s))
        s++;
    while (is_blank((unsigned char)*s) || *s == '(')
        s++;
    return (int)(s - e->text);
}

static int bind_query(BtExpr *e, BtExprNode *q, const BtDecl *d, const BtHeader *h, BtDiag *diag)
{
    const char *fn = query_name(q->k);
    const BtTypeRef *t;
    int j = param_index(d, q->name), off = arg_offset(e, q);

    if (j < 0)
        return unknown(e, d, h, "unknown parameter", q->name, off, diag);
    t = &d->params[j].t;
    if (!t->is_array && !t->is_voidp && !t->is_string)
        return fail(e, diag, off, "", "%s(%s): '%s' is not an array", fn, q->name, q->name);
    if (q->k >= BT_Q_MINVAL &&
        (!t->is_array || (t->tparam < 0 && !strchr("iu", bt_type(t->type)->kind))))
        return fail(e, diag, off, "", "%s(%s): '%s' is not an array of integers", fn, q->name,
                    q->name);
    q->param = j;
    if (q->k == BT_Q_SHAPE) {
        if (const_arg(e, q, q->a, "its axis", &q->v, diag) < 0)
            return -1;
        if (q->v < 0 || q->v >= BT_MAX_SIZE_AXES)
            return fail(e, diag, e->nodes[q->a].col - 1, "",
                        "shape(%s): axis %lld is out of range (0 to %d)", q->name, q->v,
                        BT_MAX_SIZE_AXES - 1);
    }
    if (q->k == BT_Q_LAYOUT && (const_arg(e, q, q->a, "its row value", &q->v, diag) < 0 ||
                                const_arg(e, q, q->b, "its column value", &q->w, diag) < 0))
        return -1;
    return 0;
}

int bt_expr_bind(BtExpr *e, const BtDecl *d, const BtHeader *h, BtDiag *diag)
{
    int i;

    for (i = 0; i < e->n_nodes; i++) { /* children first: a query's constants before it */
        BtExprNode *n = &e->nodes[i];
        if (n->op == BT_X_QUERY) {
            if (bind_query(e, n, d, h, diag) < 0)
                return -1;
        } else if (n->name) { /* BT_X_NAME, or a BT_X_PARAM or BT_X_INT bound before */
            if ((n->param = param_index(d, n->name)) >= 0)
                n->op = BT_X_PARAM;
            else if (constant(h, n->name, &n->v))
                n->op = BT_X_INT;
            else
                return unknown(e, d, h, "unknown name", n->name, n->col - 1, diag);
        }
    }
    return 0;
}

int bt_expr_uses(const BtExpr *e, int (*fn)(int param, int is_query, void *ctx), void *ctx)
{
    int i, r;

    for (i = 0; i < e->n_nodes; i++) {
        const BtExprNode *n = &e->nodes[i];
        if ((n->op == BT_X_PARAM || n->op == BT_X_QUERY) &&
            (r = fn(n->param, n->op == BT_X_QUERY, ctx)))
            return r;
    }
    return 0;
}
