/* bt_plan.c - bind plan: header declarations x instantiation table.
 *
 * With a table, each BtInst picks a declaration by name and template arity
 * (the first bindable one: C++ overloads may share a name), its template
 * arguments are substituted into the parameter types, and the overload is
 * filed under its Python name (after remaps), in YAML order. Every
 * bindable untemplated, exported declaration the table does not list (all of
 * them without a table) is planned too, one overload each, in header order,
 * as BindThem's generator binds them. Either way, what is left out is listed in
 * `skipped` with the reason. Errors point into the YAML (BT_DIAG_INSTANTIATE),
 * since the YAML is what asked for the impossible. */
#include "bt_plan.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "bt_hash.h"
#include "bt_mangle.h"

/* Comparisons of missing names with header names for near misses; past
 * this (tens of thousands of missing names x header functions), the rest
 * of the missing names are not checked. Each costs at most ~5 x 64 cells. */
#define NEAR_MISS_BUDGET 20000000L

typedef struct Planner {
    const BtHeader *h;
    const BtInstTable *t;
    BtArena *arena;
    BtDiag *diag;
    char *used;   /* per decl: some overload binds it */
    char *listed; /* per decl: the table names it */
    /* Lookups in time independent of the header's size. Per decl i:
     * name_head[i] is the first decl of its name, key_head[i] the first of
     * its name and template arity; at a head, the first bindable decl of
     * the name (by_name_bindable) or of the key (by_key_bindable) and the
     * first unbindable one of the key (by_key_unbindable), or -1. */
    BtIndex byname, keys, remaps;
    int *name_head, *key_head;
    int *by_name_bindable, *by_key_bindable, *by_key_unbindable;
    char *has_defaults; /* per name head: a decl of the name has defaulted template parameters */
    long near_budget;
    BtOverload *ovs;    /* in YAML (or header) order, before grouping */
    const char **names; /* their Python names */
    BtIndex missing;    /* out->missing by name */
    char *name_listed;  /* per name head: the table names it */
} Planner;

/* A key to look up: a name, and for the keys index a template arity. */
typedef struct Key {
    const Planner *p;
    const char *name;
    int arity;
} Key;

static int nomem(Planner *p) { return bt_diag_nomem(p->diag); }

/* Names are short, so a small fixed matrix will do. */
int bt_plan_distance(const char *a, const char *b)
{
    enum { MAXN = 64 };
    int d[MAXN + 1][MAXN + 1];
    int la = (int)strlen(a), lb = (int)strlen(b), i, j;

    if (la > MAXN || lb > MAXN)
        return la > lb ? la : lb;
    for (i = 0; i <= la; i++)
        d[i][0] = i;
    for (j = 0; j <= lb; j++)
        d[0][j] = j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

/* The distance of a and b when it is at most 2, else 3: only cells within 2
 * of the diagonal can lie on a path that cheap, so the band is enough. */
static int distance_upto2(const char *a, int la, const char *b, int lb)
{
    enum { MAXN = 64, W = 5, FAR = 3 };
    int d[MAXN + 1][W]; /* d[i][j - i + 2] */
    int i, j, best = FAR;

#define CELL(i, j) ((j) - (i) < -2 || (j) - (i) > 2 || (j) < 0 ? FAR : d[i][(j) - (i) + 2])
    for (i = 0; i <= la; i++) {
        for (j = i - 2; j <= i + 2; j++) {
            int v, ca, cb;
            if (j < 0 || j > lb) {
                if (j >= 0)
                    d[i][j - i + 2] = FAR;
                continue;
            }
            if (i == 0 || j == 0) {
                d[i][j - i + 2] = i > j ? i : j;
                continue;
            }
            ca = tolower((unsigned char)a[i - 1]);
            cb = tolower((unsigned char)b[j - 1]);
            v = CELL(i - 1, j - 1) + (ca != cb);
            if (CELL(i - 1, j) + 1 < v)
                v = CELL(i - 1, j) + 1;
            if (j >= 1 && CELL(i, j - 1) + 1 < v)
                v = CELL(i, j - 1) + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && CELL(i - 2, j - 2) + 1 < v)
                v = CELL(i - 2, j - 2) + 1;
            d[i][j - i + 2] = v < FAR ? v : FAR;
        }
    }
    if (lb - la >= -2 && lb - la <= 2)
        best = d[la][lb - la + 2];
#undef CELL
    return best;
}

int bt_plan_near(size_t la, size_t lb, int dist)
{
    size_t shorter = la < lb ? la : lb;

    return dist >= 0 && dist <= (shorter <= 4 ? 1 : 2);
}

/* A likely typo (bt_plan_near). Names over 64 characters are never near
 * misses. Sets *dist when it is one. */
static int near_miss(Planner *p, const char *a, const char *b, int *dist)
{
    size_t la = strlen(a), lb = strlen(b);

    p->near_budget--;
    if ((la > lb ? la - lb : lb - la) > 2 || la > 64 || lb > 64)
        return 0;
    p->near_budget -= 5 * (long)la;
    *dist = distance_upto2(a, (int)la, b, (int)lb);
    return bt_plan_near(la, lb, *dist);
}

/* The closest header name to `name` that is a near miss, among decls not
 * listed in the table when only_unlisted; NULL if none, or when the budget
 * for these comparisons is spent. */
static const BtDecl *suggest(Planner *p, const char *name, int only_unlisted)
{
    const BtDecl *best = NULL;
    int i, bd = 1 << 30;

    for (i = 0; i < p->h->n_decls && p->near_budget > 0; i++) {
        const BtDecl *d = &p->h->decls[i];
        int dist;
        if (p->name_head[i] != i || (only_unlisted && p->listed[i]) ||
            !near_miss(p, name, d->name, &dist))
            continue;
        if (dist < bd) {
            bd = dist;
            best = d;
        }
    }
    return best;
}

static int missing_error(Planner *p, const BtInst *in, const BtDecl *hint)
{
    if (hint)
        return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                           "'%s' is listed in instantiate.yml but not declared in %s; did you "
                           "mean '%s' (declared at %s:%d:%d)?",
                           in->func, p->h->file, hint->name, p->h->file, hint->line, hint->col);
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "'%s' is listed in instantiate.yml but not declared in %s", in->func,
                       p->h->file);
}

/* "[int, double]", "[double, 4]", or "null" */
static void put_tuple(BtBuf *b, const BtInstArg *args, int n)
{
    int i;

    if (!args) {
        bt_buf_puts(b, "null");
        return;
    }
    bt_buf_putc(b, '[');
    for (i = 0; i < n; i++) {
        bt_buf_puts(b, i ? ", " : "");
        bt_buf_puts(b, args[i].is_value ? args[i].text : bt_plan_cname(args[i].type));
    }
    bt_buf_putc(b, ']');
}

/* "class T", "int B = 4" */
static void put_tparam(BtBuf *b, const BtDecl *d, int k)
{
    const BtTParam *tp = &d->tpinfo[k];

    bt_buf_printf(b, "%s %s", tp->is_value ? bt_plan_cname(tp->type) : "class", d->tparams[k]);
    if (tp->defval)
        bt_buf_printf(b, " = %s", tp->defval);
}

/* How many template arguments d needs: up to its last parameter without a default. */
static int min_arity(const BtDecl *d)
{
    int k = d->n_tparams;

    while (k > 0 && d->tpinfo[k - 1].defval)
        k--;
    return k;
}

static int arity_error(Planner *p, const BtInst *in, const BtDecl *d)
{
    BtBuf b;
    int i;

    bt_buf_init(&b);
    bt_buf_printf(&b, "'%s' ", in->func);
    if (d->n_tparams == 0) {
        bt_buf_puts(&b, "is not a template");
    } else {
        if (min_arity(d) < d->n_tparams)
            bt_buf_printf(&b, "takes %d to %d template parameters <", min_arity(d), d->n_tparams);
        else
            bt_buf_printf(&b, "takes %d template parameter%s <", d->n_tparams,
                          d->n_tparams == 1 ? "" : "s");
        for (i = 0; i < d->n_tparams; i++) {
            bt_buf_puts(&b, i ? ", " : "");
            put_tparam(&b, d, i);
        }
        bt_buf_putc(&b, '>');
    }
    bt_buf_printf(&b, " but %s gives ", in->tpath);
    if (in->args)
        bt_buf_printf(&b, "%d: ", in->n_types);
    put_tuple(&b, in->args, in->n_types);
    if (!in->args)
        bt_buf_puts(&b, d->n_tparams ? " (untemplated); list a type tuple" : "");
    bt_buf_printf(&b, " (declared at %s:%d:%d)", p->h->file, d->line, d->col);
    if (b.failed) {
        bt_buf_free(&b);
        return nomem(p);
    }
    bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->tline, in->tcol, "%s",
                bt_buf_str(&b));
    bt_buf_free(&b);
    return -1;
}

static int same_name(const void *ctx, int id)
{
    const Key *k = ctx;
    return strcmp(k->p->h->decls[id].name, k->name) == 0;
}

static int same_key(const void *ctx, int id)
{
    const Key *k = ctx;
    return k->p->h->decls[id].n_tparams == k->arity && same_name(ctx, id);
}

static uint64_t key_hash(const Planner *p, const char *name, int arity)
{
    return bt_hash_int(bt_hash_str(&p->keys, name), (uint64_t)arity);
}

/* The first decl named name (of that arity when arity >= 0), or -1. */
static int find_decl(const Planner *p, const char *name, int arity)
{
    Key k = {p, name, arity};

    if (arity < 0)
        return bt_index_find(&p->byname, bt_hash_str(&p->byname, name), same_name, &k, NULL);
    return bt_index_find(&p->keys, key_hash(p, name, arity), same_key, &k, NULL);
}

/* Files every decl under its name and (name, arity) key, in header order. */
static int index_decls(Planner *p)
{
    int n = p->h->n_decls, i;

    p->name_head = bt_arena_resize(p->arena, NULL, (size_t)n * 5 * sizeof(int) + (size_t)n + 1);
    if (!p->name_head)
        return nomem(p);
    p->has_defaults = (char *)(p->name_head + 5 * (size_t)n);
    p->key_head = p->name_head + n;
    p->by_name_bindable = p->key_head + n;
    p->by_key_bindable = p->by_name_bindable + n;
    p->by_key_unbindable = p->by_key_bindable + n;
    if (bt_index_init(&p->byname, p->arena, (size_t)n) < 0 ||
        bt_index_init(&p->keys, p->arena, (size_t)n) < 0)
        return nomem(p);
    for (i = 0; i < n; i++) {
        const BtDecl *d = &p->h->decls[i];
        Key k = {p, d->name, d->n_tparams};
        size_t at;
        int nh, kh;

        nh = bt_index_find(&p->byname, bt_hash_str(&p->byname, d->name), same_name, &k, &at);
        if (nh < 0) {
            bt_index_put(&p->byname, at, i);
            nh = i;
            p->by_name_bindable[i] = -1;
        }
        kh = bt_index_find(&p->keys, key_hash(p, d->name, d->n_tparams), same_key, &k, &at);
        if (kh < 0) {
            bt_index_put(&p->keys, at, i);
            kh = i;
            p->by_key_bindable[i] = p->by_key_unbindable[i] = -1;
        }
        p->name_head[i] = nh;
        p->key_head[i] = kh;
        p->has_defaults[i] = 0;
        if (d->n_tparams && min_arity(d) < d->n_tparams)
            p->has_defaults[nh] = 1;
        if (d->unbindable) {
            if (p->by_key_unbindable[kh] < 0)
                p->by_key_unbindable[kh] = i;
        } else {
            if (p->by_name_bindable[nh] < 0)
                p->by_name_bindable[nh] = i;
            if (p->by_key_bindable[kh] < 0)
                p->by_key_bindable[kh] = i;
        }
    }
    return 0;
}

/* The declaration an instantiation binds: the first bindable one of that
 * name and arity. *decl = NULL (returning 0) when the header lacks the name. */
static int pick(Planner *p, const BtInst *in, const BtDecl **decl)
{
    const BtDecl *decls = p->h->decls, *unbindable_match;
    int first = find_decl(p, in->func, -1), kh;

    *decl = NULL;
    if (first < 0)
        return 0;
    kh = find_decl(p, in->func, in->n_types);
    if (kh >= 0 && p->by_key_bindable[kh] >= 0) {
        *decl = &decls[p->by_key_bindable[kh]];
        return 0;
    }
    if (p->has_defaults[first] && in->args) { /* a tuple leaving out defaulted parameters */
        for (int i = first; i < p->h->n_decls; i++) {
            const BtDecl *d = &decls[i];
            if (p->name_head[i] == first && !d->unbindable && in->n_types < d->n_tparams &&
                in->n_types >= min_arity(d)) {
                *decl = d;
                return 0;
            }
        }
    }
    if ((kh < 0 || p->by_key_unbindable[kh] < 0) && p->by_name_bindable[first] >= 0)
        return arity_error(p, in, &decls[p->by_name_bindable[first]]);
    unbindable_match =
        &decls[kh >= 0 && p->by_key_unbindable[kh] >= 0 ? p->by_key_unbindable[kh] : first];
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "instantiate.yml lists '%s', which the header declares at %s:%d:%d but "
                       "cannot bind: %s%s",
                       in->func, p->h->file, unbindable_match->line, unbindable_match->col,
                       unbindable_match->unbindable,
                       bt_rule_docs[unbindable_match->unbindable_rule].tail);
}

/* A type ref with the template arguments substituted. */
static int concrete(Planner *p, const BtDecl *d, const BtTypeRef *r, const BtTArg *targs,
                    const BtInst *in, BtTypeId *out)
{
    BtTypeId id;

    if (r->tparam < 0) {
        *out = r->type;
        return 0;
    }
    if (r->tparam >= d->n_tparams || !targs)
        return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->h->file, d->line, d->col,
                           "'%s' refers to template parameter %d of %d", d->name, r->tparam,
                           d->n_tparams);
    id = targs[r->tparam].type;
    if (!r->is_complex_of_tparam) {
        *out = id;
        return 0;
    }
    if (bt_type_complex_of(id) >= 0) {
        *out = (BtTypeId)bt_type_complex_of(id);
        return 0;
    }
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t ? p->t->file : p->h->file,
                       in ? in->tline : d->line, in ? in->tcol : d->col,
                       "std::complex<%s> is not supported (%s = %s in %s for '%s'; "
                       "std::complex takes float or double)",
                       bt_plan_cname(id), d->tparams[r->tparam], bt_plan_cname(id),
                       in ? in->tpath : "?", d->name);
}

/* A value for a parameter of type `type` from literal lit into *a: 0, or
 * -1 when it is not one the type holds. */
static int value_of(BtTypeId type, const BtLiteral *lit, BtTArg *a)
{
    const BtType *t = bt_type(type);

    a->type = type;
    a->is_value = 1;
    a->neg = lit->kind == BT_LIT_INT && lit->neg && lit->u != 0;
    a->mag = lit->u;
    if (lit->kind != BT_LIT_INT && lit->kind != BT_LIT_BOOL && lit->kind != BT_LIT_CHAR)
        return -1;
    if (t->kind == 'b')
        return lit->kind != BT_LIT_CHAR && !a->neg && a->mag <= 1 ? 0 : -1;
    if (a->neg) /* -mag >= min */
        return t->min < 0 && a->mag - 1 <= (unsigned long long)(-(t->min + 1)) ? 0 : -1;
    return a->mag <= t->max ? 0 : -1;
}

/* The template arguments of instantiation in for d: the tuple's, then the
 * defaults of the parameters it leaves out. NULL with diag set on error. */
static const BtTArg *template_args(Planner *p, const BtDecl *d, const BtInst *in)
{
    BtTArg *t = bt_arena_array(p->arena, (size_t)d->n_tparams, sizeof *t);
    int k;

    if (!t) {
        nomem(p);
        return NULL;
    }
    for (k = 0; k < d->n_tparams; k++) {
        const BtTParam *tp = &d->tpinfo[k];
        const char *given;
        BtLiteral lit;
        int j, bad = 0;
        if (k < in->n_types) {
            const BtInstArg *a = &in->args[k];
            given = a->is_value ? a->text : bt_plan_cname(a->type);
            if (a->is_value != tp->is_value)
                bad = 1;
            else if (tp->is_value)
                bad = value_of(tp->type, &a->lit, &t[k]) < 0;
            else
                t[k].type = a->type;
            if (!bad)
                continue;
        } else { /* a default: a known type, an earlier parameter, or a literal */
            given = NULL;
            for (j = 0; j < k && strcmp(d->tparams[j], tp->defval) != 0; j++)
                ;
            if (j < k && d->tpinfo[j].is_value == tp->is_value &&
                (!tp->is_value || d->tpinfo[j].type == tp->type))
                t[k] = t[j];
            else if (!tp->is_value && bt_type_lookup(tp->defval, &t[k].type) == 0 &&
                     t[k].type != BT_VOID)
                ;
            else if (!tp->is_value || bt_lex_literal(tp->defval, &lit) < 0 ||
                     value_of(tp->type, &lit, &t[k]) < 0)
                bad = 1;
            if (!bad)
                continue;
        }
        {
            BtBuf b;
            bt_buf_init(&b);
            put_tparam(&b, d, k);
            if (given)
                bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->tline, in->tcol,
                            "%s gives %s for template parameter %d of '%s' (%s), which takes %s "
                            "(declared at %s:%d:%d)",
                            in->tpath, given, k + 1, d->name, b.failed ? "?" : bt_buf_str(&b),
                            !tp->is_value ? "a type"
                            : bt_type(tp->type)->kind == 'b'
                                ? "true or false"
                                : bt_arena_printf(p->arena, "an integer value of type %s",
                                                  bt_plan_cname(tp->type)),
                            p->h->file, d->line, d->col);
            else
                bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->tline, in->tcol,
                            "%s leaves out template parameter %d of '%s' (%s), whose default "
                            "bindthem cannot read; give it in the tuple (declared at %s:%d:%d)",
                            in->tpath, k + 1, d->name, b.failed ? "?" : bt_buf_str(&b), p->h->file,
                            d->line, d->col);
            bt_buf_free(&b);
        }
        return NULL;
    }
    return t;
}

static int make_overload(Planner *p, const BtDecl *d, const BtInst *in, BtOverload *ov)
{
    int i;

    ov->decl = d;
    ov->notes = d->notes;
    ov->inst = in;
    ov->enums = p->h->enums;
    ov->header = p->h;
    ov->targs = NULL;
    if (d->n_tparams && !(ov->targs = template_args(p, d, in)))
        return -1;
    ov->ptypes = bt_arena_alloc(p->arena, (size_t)d->n_params * sizeof *ov->ptypes + 1);
    if (!ov->ptypes)
        return nomem(p);
    if (concrete(p, d, &d->ret, ov->targs, in, &ov->ret) < 0)
        return -1;
    for (i = 0; i < d->n_params; i++) {
        const BtParam *pa = &d->params[i];
        char kind;
        if (concrete(p, d, &pa->t, ov->targs, in, &ov->ptypes[i]) < 0)
            return -1;
        kind = bt_type(ov->ptypes[i])->kind;
        /* `const T x_size`: the parser took T on trust, the tuple must keep it an integer */
        if (pa->size_of >= 0 && pa->t.tparam >= 0 && in && kind != 'i' && kind != 'u')
            return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->tline, in->tcol,
                               "%s = %s in %s makes '%s', the size of '%s' in '%s', a %s; a size "
                               "parameter must be an integer type (declared at %s:%d:%d)%s",
                               d->tparams[pa->t.tparam], bt_plan_cname(ov->ptypes[i]), in->tpath,
                               pa->name, d->params[pa->size_of].name, d->name,
                               bt_plan_cname(ov->ptypes[i]), p->h->file, pa->line, pa->col,
                               bt_rule_docs[BT_RULE_SIZES].tail);
    }
    if (!(ov->signature = bt_plan_signature(ov, p->arena)))
        return nomem(p);
    return 0;
}

/* Names in an array of structs (or of strings): the field at base + id *
 * stride, compared with key. */
typedef struct Names {
    const char *base;
    size_t stride;
    const char *key;
} Names;

static int name_eq(const void *ctx, int id)
{
    const Names *s = ctx;
    return strcmp(*(const char *const *)(s->base + (size_t)id * s->stride), s->key) == 0;
}

/* Looks key up among names; when absent and at is not NULL, *at is where
 * to file it. The id, or -1. */
static int find_name(const BtIndex *x, const void *first, size_t stride, const char *key,
                     size_t *at)
{
    Names s = {first, stride, key};
    return bt_index_find(x, bt_hash_str(x, key), name_eq, &s, at);
}

/* The remap of C++ name func, or -1. */
static int find_remap(const Planner *p, const char *func)
{
    const BtInstTable *t = p->t;

    if (!t || !t->n_remaps)
        return -1;
    return find_name(&p->remaps, &t->remaps[0].from, sizeof *t->remaps, func, NULL);
}

static const char *python_name(const Planner *p, const char *func)
{
    int r = find_remap(p, func);
    return r >= 0 ? p->t->remaps[r].to : func;
}

/* Python keeps __dunder__ names for the module itself (a Library is a
 * module: __name__, __all__, __getattr__ ...), so no kernel may take one. */
static int is_dunder(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strncmp(name, "__", 2) == 0 && strcmp(name + n - 2, "__") == 0;
}

#define DUNDER_WHY "Python reserves __dunder__ names for the module itself"

/* -1 with diag set when instantiation in would bind a __dunder__ Python name. */
static int check_python_name(Planner *p, const BtInst *in)
{
    const char *name = python_name(p, in->func);
    int r;

    if (!is_dunder(name))
        return 0;
    if ((r = find_remap(p, in->func)) >= 0)
        return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, p->t->remaps[r].line,
                           p->t->remaps[r].col,
                           "%s remaps '%s' to '%s', which cannot be a kernel's name: " DUNDER_WHY
                           "; pick another name",
                           p->t->remaps[r].path, in->func, name);
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "'%s' cannot be a kernel's Python name: " DUNDER_WHY "; bind it under "
                       "another name with a remap ('remaps: [{%s: name}]')",
                       name, name);
}

/* Files ovs[0..n) under names[0..n) into out->funcs, first appearance first. */
static int group(Planner *p, BtOverload *ovs, const char **names, int n, BtPlan *out)
{
    int *fidx = bt_arena_resize(p->arena, NULL, (size_t)n * sizeof *fidx);
    BtIndex funcs = {NULL, 0, 0};
    int i, j, rc = -1;

    out->funcs = bt_arena_array(p->arena, (size_t)n + 1, sizeof *out->funcs);
    if (!fidx || !out->funcs || bt_index_init(&funcs, p->arena, (size_t)n) < 0) {
        nomem(p);
        goto done;
    }
    for (i = 0; i < n; i++) {
        size_t at;
        j = find_name(&funcs, &out->funcs[0].name, sizeof *out->funcs, names[i], &at);
        if (j < 0) {
            j = out->n_funcs++;
            out->funcs[j].name = names[i];
            out->funcs[j].doc = ovs[i].decl->doc ? ovs[i].decl->doc : "";
            bt_index_put(&funcs, at, j);
        }
        out->funcs[j].n_ovs++;
        fidx[i] = j;
    }
    for (j = 0; j < out->n_funcs; j++) {
        BtFunc *f = &out->funcs[j];
        f->ovs = bt_arena_array(p->arena, (size_t)f->n_ovs, sizeof *f->ovs);
        if (!f->ovs) {
            nomem(p);
            goto done;
        }
        f->n_ovs = 0;
    }
    for (i = 0; i < n; i++) {
        BtFunc *f = &out->funcs[fidx[i]];
        f->ovs[f->n_ovs++] = ovs[i];
    }
    rc = 0;
done:
    bt_index_release(&funcs, p->arena);
    bt_arena_release(p->arena, fidx);
    return rc;
}

static const char *skip_reason(Planner *p, const BtDecl *d, int i)
{
    if (d->unbindable)
        return bt_arena_printf(p->arena, "unbindable: %s", d->unbindable);
    if ((!p->t || (!d->n_tparams && !p->listed[i])) && is_dunder(d->name))
        return "its name is not a Python name a kernel can have (" DUNDER_WHY "); bind it "
               "under another name with instantiate.yml's remaps";
    if (!p->t && d->n_tparams)
        return "templated; needs instantiate.yml";
    if (!p->t || (!d->n_tparams && !p->listed[i]))
        return "inline/static; not exported by the library";
    if (p->listed[i]) {
        /* pick() binds only the first bindable decl of a name and arity */
        int b = p->by_key_bindable[p->key_head[i]];
        if (b >= 0 && p->used[b])
            return bt_arena_printf(p->arena,
                                   "an overload with the same template arity "
                                   "(%d:%d) is bound instead",
                                   p->h->decls[b].line, p->h->decls[b].col);
        return bt_arena_printf(p->arena,
                               "no instantiate.yml entry gives it %d template "
                               "argument%s",
                               d->n_tparams, d->n_tparams == 1 ? "" : "s");
    }
    return "not listed in instantiate.yml";
}

/* Whether leaving d out is the header's or the YAML's choice rather than
 * a shortfall: an inline or static helper (never exported; a __global__
 * kernel is), or, with a table, a template the table does not name, even
 * one bindthem could not bind. */
static int deliberate(const Planner *p, const BtDecl *d, int i)
{
    if ((d->is_inline || d->is_static) && !d->is_global)
        return 1;
    return p->t && d->n_tparams && !p->listed[i];
}

/* Whether d's symbol is in the binary: not inline or static, except a
 * __global__ kernel, which a CUDA module holds by name whatever its linkage. */
static int exported(const BtDecl *d) { return d->is_global || !(d->is_inline || d->is_static); }

/* Appends an overload for every exported, bindable untemplated declaration
 * that the table does not list (all of them without a table): BindThem's
 * generator binds those whether or not instantiate.yml names them. */
static int plan_untemplated(Planner *p, int *n_ovs)
{
    const char **syms = bt_arena_array(p->arena, (size_t)p->h->n_decls + 1, sizeof *syms);
    BtIndex seen = {NULL, 0, 0};
    int n_syms = 0;

    if (!syms || bt_index_init(&seen, p->arena, (size_t)p->h->n_decls) < 0)
        return nomem(p);
    for (int i = 0; i < p->h->n_decls; i++) {
        const BtDecl *d = &p->h->decls[i];
        size_t at;
        if (d->unbindable || d->n_tparams || !exported(d) || is_dunder(d->name) || p->listed[i])
            continue;
        /* a function declared again (a prototype, then GMP's extern inline definition):
         * the same symbol, bound once */
        if (!(syms[n_syms] = bt_mangle(d, NULL, p->arena)))
            return nomem(p);
        p->used[i] = 1;
        if (find_name(&seen, syms, sizeof *syms, syms[n_syms], &at) >= 0)
            continue;
        bt_index_put(&seen, at, n_syms++);
        if (make_overload(p, d, NULL, &p->ovs[*n_ovs]) < 0)
            return -1;
        p->names[(*n_ovs)++] = d->name;
    }
    return 0;
}

/* The scratch arrays for n overloads: ovs and their Python names. */
static int alloc_overloads(Planner *p, size_t n)
{
    p->ovs = bt_arena_resize(p->arena, NULL, n * sizeof *p->ovs);
    p->names = bt_arena_resize(p->arena, NULL, n * sizeof *p->names);
    return p->ovs && p->names ? 0 : nomem(p);
}

static int plan_table(Planner *p, BtPlan *out, int strict)
{
    const BtInstTable *t = p->t;
    int n = t->n_insts, n_ovs = 0, found = 0, i;
    const BtInst *first_missing = NULL;

    /* listed + unlisted untemplated */
    if (alloc_overloads(p, (size_t)n + (size_t)p->h->n_decls) < 0)
        return -1;
    p->name_listed = bt_arena_resize(p->arena, NULL, (size_t)p->h->n_decls);
    out->missing = bt_arena_array(p->arena, (size_t)n + 1, sizeof *out->missing);
    if (!p->name_listed || !out->missing || bt_index_init(&p->missing, p->arena, (size_t)n) < 0)
        return nomem(p);
    for (i = 0; i < n; i++) {
        int d = find_decl(p, t->insts[i].func, -1);
        if (d >= 0)
            p->name_listed[d] = 1;
    }
    for (i = 0; i < p->h->n_decls; i++)
        p->listed[i] = p->name_listed[p->name_head[i]];

    for (i = 0; i < n; i++) {
        const BtInst *in = &t->insts[i];
        const BtDecl *d;
        size_t at;
        if (pick(p, in, &d) < 0)
            return -1;
        if (!d) {
            const BtDecl *hint;
            /* a name listed with several tuples is looked at once */
            if (find_name(&p->missing, out->missing, sizeof *out->missing, in->func, &at) >= 0)
                continue;
            hint = suggest(p, in->func, !strict);
            if (strict || hint)
                return missing_error(p, in, hint);
            if (!first_missing)
                first_missing = in;
            bt_index_put(&p->missing, at, out->n_missing);
            out->missing[out->n_missing++] = in->func;
            continue;
        }
        found = 1;
        if (check_python_name(p, in) < 0 || make_overload(p, d, in, &p->ovs[n_ovs]) < 0)
            return -1;
        p->used[d - p->h->decls] = 1;
        p->names[n_ovs++] = python_name(p, in->func);
    }
    if (plan_untemplated(p, &n_ovs) < 0)
        return -1;
    if (!found && n_ovs == 0 && first_missing) {
        const BtDecl *tmpl = NULL; /* a template the YAML could list instead */
        for (int i = 0; i < p->h->n_decls && !tmpl; i++)
            if (p->h->decls[i].n_tparams && !p->h->decls[i].unbindable)
                tmpl = &p->h->decls[i];
        if (tmpl)
            return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, t->file, first_missing->line,
                               first_missing->col,
                               "%s declares none of the functions listed in instantiate.yml "
                               "(the first is '%s'); its templates, such as '%s' (line %d), "
                               "need an entry with their types",
                               p->h->file, first_missing->func, tmpl->name, tmpl->line);
        return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, t->file, first_missing->line,
                           first_missing->col,
                           "%s declares none of the functions listed in instantiate.yml "
                           "(the first is '%s')",
                           p->h->file, first_missing->func);
    }
    return group(p, p->ovs, p->names, n_ovs, out);
}

static int plan_auto(Planner *p, BtPlan *out)
{
    int n_ovs = 0;

    if (alloc_overloads(p, (size_t)p->h->n_decls) < 0 || plan_untemplated(p, &n_ovs) < 0)
        return -1;
    return group(p, p->ovs, p->names, n_ovs, out);
}

/* The remaps by C++ name (the YAML reader keeps one per name). */
static int index_remaps(Planner *p)
{
    const BtInstTable *t = p->t;
    int i;

    if (bt_index_init(&p->remaps, p->arena, t ? (size_t)t->n_remaps : 0) < 0)
        return nomem(p);
    for (i = 0; t && i < t->n_remaps; i++) {
        size_t at;
        if (find_name(&p->remaps, &t->remaps[0].from, sizeof *t->remaps, t->remaps[i].from, &at) <
            0)
            bt_index_put(&p->remaps, at, i);
    }
    return 0;
}

int bt_plan_build(const BtHeader *h, const BtInstTable *t, int strict, BtArena *arena, BtPlan *out,
                  BtDiag *diag)
{
    Planner p;
    int i, rc = -1;

    memset(out, 0, sizeof *out);
    memset(&p, 0, sizeof p);
    p.h = h;
    p.t = t;
    p.arena = arena;
    p.diag = diag;
    p.near_budget = NEAR_MISS_BUDGET;
    p.used = bt_arena_alloc(arena, (size_t)h->n_decls + 1);
    p.listed = bt_arena_alloc(arena, (size_t)h->n_decls + 1);
    if (!p.used || !p.listed) {
        nomem(&p);
        goto done;
    }
    if (index_decls(&p) < 0 || index_remaps(&p) < 0 ||
        (t ? plan_table(&p, out, strict) : plan_auto(&p, out)) < 0)
        goto done;
    for (i = 0; i < h->n_decls; i++)
        out->n_skipped += !p.used[i];
    out->skipped = bt_arena_array(arena, (size_t)out->n_skipped + 1, sizeof *out->skipped);
    if (!out->skipped) {
        nomem(&p);
        goto done;
    }
    out->n_skipped = 0;
    for (i = 0; i < h->n_decls; i++) {
        BtSkipped *s;
        if (p.used[i])
            continue;
        s = &out->skipped[out->n_skipped++];
        s->decl = &h->decls[i];
        s->deliberate = deliberate(&p, s->decl, i);
        if (!(s->reason = skip_reason(&p, s->decl, i))) {
            nomem(&p);
            goto done;
        }
    }
    rc = arena->failed ? nomem(&p) : 0;
done:
    /* the planner's lookups and scratch arrays are not part of the plan */
    bt_index_release(&p.byname, arena);
    bt_index_release(&p.keys, arena);
    bt_index_release(&p.missing, arena);
    bt_index_release(&p.remaps, arena);
    bt_arena_release(arena, p.name_head);
    bt_arena_release(arena, p.name_listed);
    bt_arena_release(arena, p.ovs);
    bt_arena_release(arena, (void *)p.names);
    return rc;
}
