/* expr_driver.c - parses, binds and evaluates annotation expressions
 * (bt_expr.h), for tests/core/test_expr.py:
 *
 *   expr_driver HEADER FUNCTION [-t N] < lines
 *
 * binds each line's expression to FUNCTION of HEADER. A line is
 * "EXPR<TAB>BINDINGS" (or EXPR alone), its expression written at
 * notes.yml:LINE:10 (LINE the line's number), BINDINGS space-separated:
 *   n=5            a scalar parameter's value
 *   x=[3,4]        an array parameter's shape (len 3, ndim 2, shape(x, 2) 1)
 *   x.stride=-1    its stride (default 1), x.ld=4 its leading dimension,
 *   x.layout=F     its layout (C, the default, or F)
 * A value not given is the env's error ("no value for 'n'"). Prints a line
 * each:
 *   RESULT<TAB>USES<TAB>CALLS
 * RESULT "= VALUE", or "! MESSAGE" (a parse or bind error formatted with its
 * file:line:col); USES what bt_expr_uses reports, "n,x?" (? a query) or "-";
 * CALLS how many times evaluation asked the env. With -t, then a line
 * "ns<TAB>NS": the CPU nanoseconds of a parse, two binds and an evaluation, the
 * least of N runs. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bt_expr.h"
#include "bt_file.h"
#include "driver.h"

typedef struct Arg {
    int has_value, has_shape, has_stride, has_ld;
    long long value, stride, ld;
    long long shape[BT_MAX_SIZE_AXES];
    int ndim;
    int fortran;
} Arg;

typedef struct Env {
    const BtDecl *d;
    Arg args[BT_MAX_PARAMS];
    int calls;
    char why[256];
} Env;

static int env_param(void *ctx, int i, long long *v, const char **why)
{
    Env *env = ctx;

    env->calls++;
    if (!env->args[i].has_value) {
        snprintf(env->why, sizeof env->why, "no value for '%s'", env->d->params[i].name);
        *why = env->why;
        return -1;
    }
    *v = env->args[i].value;
    return 0;
}

static int env_query(void *ctx, int q, int i, long long k, long long *v, const char **why)
{
    Env *env = ctx;
    const Arg *a = &env->args[i];

    env->calls++;
    *why = NULL;
    if (!a->has_shape)
        *why = "no array";
    else if (q == BT_Q_LEN && a->ndim == 0)
        *why = "len() of a 0-d array";
    else if (q == BT_Q_LD && !a->has_ld)
        *why = "no leading dimension";
    if (*why)
        return -1;
    switch (q) {
    case BT_Q_LEN: *v = a->shape[0]; break;
    case BT_Q_SHAPE: *v = k < a->ndim ? a->shape[k] : 1; break;
    case BT_Q_STRIDE: *v = a->has_stride ? a->stride : 1; break;
    case BT_Q_LD: *v = a->ld; break;
    case BT_Q_NDIM: *v = a->ndim; break;
    default: *v = a->fortran; break;
    }
    return 0;
}

/* One binding, "name=value" or "name.field=value"; 0, or -1 when malformed. */
static int read_binding(Env *env, char *tok)
{
    char *eq = strchr(tok, '='), *dot = strchr(tok, '.'), *end;
    int i;
    Arg *a;

    if (!eq)
        return -1;
    *eq = '\0';
    if (dot && dot < eq)
        *dot = '\0';
    for (i = 0; i < env->d->n_params && strcmp(env->d->params[i].name, tok); i++)
        ;
    if (i == env->d->n_params)
        return -1;
    a = &env->args[i];
    if (dot && dot < eq && !strcmp(dot + 1, "layout")) {
        a->fortran = eq[1] == 'F';
        return 0;
    }
    if (eq[1] == '[') {
        a->has_shape = 1;
        for (end = eq + 2; *end && *end != ']' && a->ndim < BT_MAX_SIZE_AXES; end++)
            a->shape[a->ndim++] = strtoll(end, &end, 0);
        return 0;
    }
    if (!dot || dot > eq)
        a->value = strtoll(eq + 1, NULL, 0), a->has_value = 1;
    else if (!strcmp(dot + 1, "stride"))
        a->stride = strtoll(eq + 1, NULL, 0), a->has_stride = 1;
    else if (!strcmp(dot + 1, "ld"))
        a->ld = strtoll(eq + 1, NULL, 0), a->has_ld = 1;
    else
        return -1;
    return 0;
}

typedef struct Uses {
    const BtDecl *d;
    char text[4096];
} Uses;

static int add_use(int param, int is_query, void *ctx)
{
    Uses *u = ctx;
    size_t at = strlen(u->text);

    snprintf(u->text + at, sizeof u->text - at, "%s%s%s", at ? "," : "", u->d->params[param].name,
             is_query ? "?" : "");
    return 0;
}

/* Parses, binds (twice: binding again must give the same) and evaluates. */
static void run(const char *text, int line, const BtDecl *d, const BtHeader *h, Env *env, int quiet)
{
    BtArena arena;
    BtDiag diag;
    BtExpr e;
    BtExprEnv xenv = {env_param, env_query, env};
    char buf[512], msg[4096];
    static Uses uses;
    const char *why;
    long long v;

    bt_arena_init(&arena);
    bt_diag_init(&diag);
    env->calls = 0;
    if (bt_expr_parse(text, "notes.yml", line, 10, &arena, &e, &diag) < 0 ||
        bt_expr_bind(&e, d, h, &diag) < 0 || bt_expr_bind(&e, d, h, &diag) < 0) {
        bt_diag_format(&diag, msg, sizeof msg);
        if (!quiet)
            printf("! %s\t-\t0\n", msg);
    } else if (bt_expr_eval(&e, &xenv, &v, &why, buf, sizeof buf) < 0) {
        if (!quiet)
            printf("! %s\t-\t%d\n", why, env->calls);
    } else if (!quiet) {
        uses.d = d;
        uses.text[0] = '\0';
        bt_expr_uses(&e, add_use, &uses);
        printf("= %lld\t%s\t%d\n", v, uses.text[0] ? uses.text : "-", env->calls);
    }
    bt_arena_free(&arena);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const BtDecl *find(const BtHeader *h, const char *name)
{
    int i;

    for (i = 0; i < h->n_decls; i++)
        if (!strcmp(h->decls[i].name, name))
            return &h->decls[i];
    return NULL;
}

/* The line's bindings into env; 0, or -1 (printed) when one is malformed. */
static int read_bindings(Env *env, char *s)
{
    char *tok;

    for (tok = strtok(s, " "); tok; tok = strtok(NULL, " ")) {
        if (read_binding(env, tok) < 0) {
            printf("! bad binding '%s'\n", tok);
            return -1;
        }
    }
    return 0;
}

static void lines(const BtDecl *d, const BtHeader *h, int reps)
{
    static Env env;
    char *line = NULL, *tab;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, k;

    while ((n = getline(&line, &cap, stdin)) >= 0) {
        double best = 1e30;
        lineno++;
        if (n > 0 && line[n - 1] == '\n')
            line[n - 1] = '\0';
        memset(&env, 0, sizeof env);
        env.d = d;
        if ((tab = strchr(line, '\t')) != NULL) {
            *tab = '\0';
            if (read_bindings(&env, tab + 1) < 0)
                continue;
        }
        for (k = 0; k < reps; k++) {
            double t0 = now(), t;
            run(line, lineno, d, h, &env, 1);
            if ((t = now() - t0) < best)
                best = t;
        }
        run(line, lineno, d, h, &env, 0);
        if (reps)
            printf("ns\t%.0f\n", best * 1e9);
        fflush(stdout);
    }
    free(line);
}

int main(int argc, char **argv)
{
    BtArena arena;
    BtDiag diag;
    BtHeader h;
    const BtDecl *d;
    char *text;
    size_t len;
    int reps = argc == 5 && !strcmp(argv[3], "-t") ? atoi(argv[4]) : 0;

    if (argc != 3 && !reps) {
        fprintf(stderr, "usage: expr_driver HEADER FUNCTION [-t N] < lines\n");
        return 2;
    }
    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_file_read(argv[1], &arena, &text, &len, &diag) < 0 ||
        bt_parse_header(argv[1], text, len, 0, &arena, &h, &diag) < 0) {
        print_diag(&diag);
        bt_arena_free(&arena);
        return 1;
    }
    if (!(d = find(&h, argv[2]))) {
        printf("no function %s\n", argv[2]);
        bt_arena_free(&arena);
        return 1;
    }
    lines(d, &h, reps);
    bt_arena_free(&arena);
    return 0;
}
