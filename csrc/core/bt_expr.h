/* bt_expr.h - the annotations' expression language: sizes, strides and
 * leading dimensions computed from a call's arrays and scalars.
 *
 * Pure C. An annotation (bt_note.h) says what a C parameter gets ("n:
 * len(x)", "lda: ld(a)"), what an array's shape must be ("shape: [n, n]")
 * and what must hold before the call ("check: [m >= n]"), each an
 * expression in a small subset of C:
 *
 *   expr    -> cond
 *   cond    -> or ('?' expr ':' cond)?
 *   or      -> and ('||' and)*         and -> eq ('&&' eq)*
 *   eq      -> rel (('=='|'!=') rel)*  rel -> shift (('<'|'<='|'>'|'>=') shift)*
 *   shift   -> sum (('<<'|'>>') sum)*  sum -> term (('+'|'-') term)*
 *   term    -> unary (('*'|'/'|'%') unary)*
 *   unary   -> ('-'|'+'|'!') unary | primary
 *   primary -> integer | name | '(' expr ')'
 *            | len(x) | shape(x, k) | stride(x) | ld(x) | ndim(x)
 *            | layout(x, ROW, COL) | min(e, e, ...) | max(e, e, ...)
 *
 * C's precedence and associativity throughout. An integer is C's: decimal,
 * 0x hex (0 octal, 0b binary), u/l suffixes; a name a C identifier; the
 * function names are names unless '(' follows. A text is at most
 * BT_EXPR_MAX_LEN characters, nested (parentheses, calls, unary operators,
 * '?:') at most BT_EXPR_MAX_DEPTH deep: a deeper one is an error, never a
 * deep recursion.
 *
 * Values are 64-bit signed integers; '/' and '%' are C's (truncating), and
 * a division by zero, an overflow or a shift out of range is an error at
 * evaluation, never undefined behaviour. A name is a parameter of the
 * function (its value in this call: a Python argument, or another
 * annotated parameter's value, computed first) or a constant the header
 * declares (an enum member, an integer #define), resolved when the
 * expression is bound to its function (bt_expr_bind). '&&', '||' and '?:'
 * evaluate only the operands they need: an error in one they skip is none.
 * The array queries take a parameter that is an array:
 *   len(x)        x.shape[0]
 *   shape(x, k)   x.shape[k], 1 past its last axis (a 1-D b has shape(b, 1) == 1);
 *                 k a constant
 *   stride(x)     x's element stride along its one axis (BLAS's incx: negative
 *                 for a reversed view; the call passes the pointer BLAS expects)
 *   ld(x)         x's leading dimension: the element stride of its outer axis
 *                 in x's layout (at least max(1, its inner extent), LAPACK's rule)
 *   ndim(x)       x.ndim
 *   layout(x, ROW, COL)  ROW where x is laid out by rows (C order), COL by
 *                 columns (Fortran order); two constants
 * What an array query returns is the caller's business (bt_expr_eval asks
 * its env): the call layer decides layouts and copies. Every expression
 * costs time linear in its text, parsing and evaluating. */
#ifndef BT_EXPR_H
#define BT_EXPR_H

#include "bt_arena.h"
#include "bt_diag.h"
#include "bt_parse.h"

#define BT_EXPR_MAX_LEN 4096 /* characters of one expression */
#define BT_EXPR_MAX_DEPTH 64 /* nesting levels */

/* Array queries (BtExprNode.op BT_X_QUERY, .k the query): of its shape and
 * layout, and of an integer array's values (the least and greatest, and
 * of their absolute values: a pivot array's range, read at each call). */
enum {
    BT_Q_LEN,
    BT_Q_SHAPE,
    BT_Q_STRIDE,
    BT_Q_LD,
    BT_Q_NDIM,
    BT_Q_LAYOUT,
    BT_Q_MINVAL,
    BT_Q_MAXVAL,
    BT_Q_MINABS,
    BT_Q_MAXABS
};

/* Node operations. */
enum {
    BT_X_INT,    /* v */
    BT_X_NAME,   /* name: unresolved (bt_expr_bind resolves it) */
    BT_X_PARAM,  /* parameter index `param` */
    BT_X_QUERY,  /* query k of array parameter `param`; shape's axis is expression a, layout's
                  * ROW and COL expressions a and b, constants: bt_expr_bind puts their
                  * values in v (the axis, or ROW) and w (COL) */
    BT_X_NEG,    /* -a */
    BT_X_NOT,    /* !a */
    BT_X_BINARY, /* a op b; op in `binop` ('+', '-', '*', '/', '%', '<' (<<), '>' (>>),
                  * 'E' ==, 'N' !=, 'l' <, 'L' <=, 'g' >, 'G' >=, '&' &&, '|' ||) */
    BT_X_COND,   /* a ? b : c */
    BT_X_MIN,    /* min of args[0 .. n_args) */
    BT_X_MAX
};

typedef struct BtExprNode {
    int op;
    char binop;
    int a, b, c;      /* operand node indices */
    int param;        /* BT_X_PARAM, BT_X_QUERY: the parameter's index (after binding) */
    int k;            /* BT_X_QUERY: BT_Q_* */
    long long v;      /* BT_X_INT's value; BT_X_QUERY's shape axis, or layout's ROW */
    long long w;      /* BT_X_QUERY: layout's COL */
    const char *name; /* BT_X_NAME, BT_X_QUERY: as written (kept once bound) */
    const int *args;  /* BT_X_MIN, BT_X_MAX: operand node indices */
    int n_args;
    int col; /* its column in the text (1-based), for messages */
} BtExprNode;

/* Nodes come children first (post-order), but for one thing: the
 * operators of one run, `a + b * c - d`, are made together after their
 * operands, so that a BT_X_BINARY whose left operand is the node just
 * before it continues that run. Evaluation loops over a run, so a long flat
 * `n + n + ... + n` costs no recursion. */
typedef struct BtExpr {
    const char *text; /* as written (a copy in the arena) */
    BtExprNode *nodes;
    int n_nodes;
    int root;
    const char *file; /* where it is written, for messages (a copy in the arena) */
    int line, col;    /* of its text's first character */
} BtExpr;

/* Parses text (written at file:line:col) into *out, allocating from arena.
 * Returns 0, or -1 with diag set (BT_DIAG_INSTANTIATE, the column of the
 * fault: "cblas.yml:12:18: expected ')' in 'len(x'"). */
BT_HIDDEN int bt_expr_parse(const char *text, const char *file, int line, int col, BtArena *arena,
                            BtExpr *out, BtDiag *diag);

/* Resolves e's names against declaration d (its parameters, first) and
 * header h (enum members, integer #define constants; h may be NULL): a
 * parameter name becomes BT_X_PARAM; a constant's BT_X_INT; an array
 * query's argument must name a pointer parameter (is_array, or a `void *`
 * or `const char *` the annotation makes an array: is_voidp, is_string),
 * shape's axis (0 to BT_MAX_SIZE_AXES - 1) and layout's two values must be
 * constants. Names are resolved from the text each time, so e may be bound
 * again, to another declaration. Returns 0, or -1 with diag set naming the
 * unknown name, d's parameters and a near miss ("unknown name 'nn' in
 * 'len(x) + nn'; the parameters are n, x, incx; did you mean 'n'?"). */
BT_HIDDEN int bt_expr_bind(BtExpr *e, const BtDecl *d, const BtHeader *h, BtDiag *diag);

/* Calls `fn(param, ctx)` for each parameter e reads (by value: BT_X_PARAM;
 * by query: BT_X_QUERY with is_query 1), each occurrence; stops at the
 * first nonzero return and returns it, else 0. */
BT_HIDDEN int bt_expr_uses(const BtExpr *e, int (*fn)(int param, int is_query, void *ctx),
                           void *ctx);

/* How evaluation reads a call: the value of parameter i, and query q of
 * array parameter i (k: shape's axis, else 0; BT_Q_LAYOUT answers 0 for an
 * array laid out by rows, nonzero by columns, and the expression's value is
 * then ROW or COL). Each returns 0, or -1 with *why a static or arena-kept
 * message (the caller's; bt_expr_eval returns it). */
typedef struct BtExprEnv {
    int (*param)(void *ctx, int i, long long *v, const char **why);
    int (*query)(void *ctx, int q, int i, long long k, long long *v, const char **why);
    void *ctx;
} BtExprEnv;

/* "minval(ipiv) = 0, maxval(ipiv) = 4, n = 4" into buf (size bytes, cut
 * where it ends): the value in env of each parameter and query e reads,
 * once each, in the order written, leaving out what env cannot answer and
 * layout()'s; for the message of a check that failed. */
BT_HIDDEN void bt_expr_values(const BtExpr *e, const BtExprEnv *env, char *buf, size_t size);

/* The value of e (bound) in env. Returns 0 with *v, or -1 with *why saying
 * what failed ("division by zero in 'n / k'", "overflow in 'n * m'", or
 * what env said). why points to static text or to buf (size bytes). No
 * allocation; recursion within BT_EXPR_MAX_DEPTH times the precedence
 * levels. */
BT_HIDDEN int bt_expr_eval(const BtExpr *e, const BtExprEnv *env, long long *v, const char **why,
                           char *buf, size_t size);

#endif
