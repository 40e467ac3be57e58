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

typedef struct Planner {
    const BtHeader *h;
    const BtInstTable *t;
    BtArena *arena;
    BtDiag *diag;
    char *used;             /* per decl: some overload binds it */
    char *listed;           /* per decl: the table names it */
} Planner;

const char *bt_plan_cname(BtTypeId id)
{
    const BtType *t = bt_type(id);
    return t ? t->cname : "?";
}

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

/* A likely typo: equal ignoring case, or within 2 edits of a name of at
 * least 5 characters (shorter names are too close to everything). The
 * distance is at least the length difference, so more than 2 rules a pair
 * out without the full distance (a shared YAML, as pyamg's, has many names
 * absent from each header). Sets *dist when it is one. */
static int near_miss(const char *a, const char *b, int *dist)
{
    size_t la = strlen(a), lb = strlen(b);

    if ((la > lb ? la - lb : lb - la) > 2)
        return 0;
    *dist = bt_plan_distance(a, b);
    if (la == lb && *dist == 0)
        return 1;
    return la >= 5 && lb >= 5 && *dist <= 2;
}

/* The closest header name to `name` that is a near miss, among decls not
 * listed in the table when only_unlisted; NULL if none. */
static const BtDecl *suggest(const Planner *p, const char *name, int only_unlisted)
{
    const BtDecl *best = NULL;
    int i, bd = 1 << 30;

    for (i = 0; i < p->h->n_decls; i++) {
        const BtDecl *d = &p->h->decls[i];
        int dist;
        if ((only_unlisted && p->listed[i]) || !near_miss(name, d->name, &dist))
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
                           "mean '%s' (declared at %s:%d:%d)?", in->func, p->h->file, hint->name,
                           p->h->file, hint->line, hint->col);
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "'%s' is listed in instantiate.yml but not declared in %s", in->func,
                       p->h->file);
}

/* "[int, double]", or "null" */
static void put_tuple(BtBuf *b, const BtTypeId *ids, int n)
{
    int i;

    if (!ids) {
        bt_buf_puts(b, "null");
        return;
    }
    bt_buf_putc(b, '[');
    for (i = 0; i < n; i++)
        bt_buf_printf(b, "%s%s", i ? ", " : "", bt_plan_cname(ids[i]));
    bt_buf_putc(b, ']');
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
        bt_buf_printf(&b, "takes %d template parameter%s <", d->n_tparams,
                      d->n_tparams == 1 ? "" : "s");
        for (i = 0; i < d->n_tparams; i++)
            bt_buf_printf(&b, "%sclass %s", i ? ", " : "", d->tparams[i]);
        bt_buf_putc(&b, '>');
    }
    bt_buf_printf(&b, " but %s gives ", in->tpath);
    if (in->types)
        bt_buf_printf(&b, "%d: ", in->n_types);
    put_tuple(&b, in->types, in->n_types);
    if (!in->types)
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

/* The declaration an instantiation binds: the first bindable one of that
 * name and arity. *decl = NULL (returning 0) when the header lacks the name. */
static int pick(Planner *p, const BtInst *in, const BtDecl **decl)
{
    const BtDecl *first = NULL, *bindable = NULL, *unbindable_match = NULL;
    int i;

    *decl = NULL;
    for (i = 0; i < p->h->n_decls; i++) {
        const BtDecl *d = &p->h->decls[i];
        if (strcmp(d->name, in->func) != 0)
            continue;
        if (!first)
            first = d;
        if (d->unbindable) {
            if (!unbindable_match && d->n_tparams == in->n_types)
                unbindable_match = d;
            continue;
        }
        if (!bindable)
            bindable = d;
        if (d->n_tparams == in->n_types) {
            *decl = d;
            return 0;
        }
    }
    if (!first)
        return 0;
    if (!unbindable_match && bindable)
        return arity_error(p, in, bindable);
    if (!unbindable_match)
        unbindable_match = first;
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "instantiate.yml lists '%s', which the header declares at %s:%d:%d but "
                       "cannot bind: %s", in->func, p->h->file, unbindable_match->line,
                       unbindable_match->col, unbindable_match->unbindable);
}

/* A type ref with the template arguments substituted. */
static int concrete(Planner *p, const BtDecl *d, const BtTypeRef *r, const BtTypeId *targs,
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
    id = targs[r->tparam];
    if (!r->is_complex_of_tparam) {
        *out = id;
        return 0;
    }
    if (id == BT_FLOAT || id == BT_DOUBLE) {
        *out = id == BT_FLOAT ? BT_CFLOAT : BT_CDOUBLE;
        return 0;
    }
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t ? p->t->file : p->h->file,
                       in ? in->tline : d->line, in ? in->tcol : d->col,
                       "std::complex<%s> is not supported (%s = %s in %s for '%s'; "
                       "std::complex takes float or double)", bt_plan_cname(id),
                       d->tparams[r->tparam], bt_plan_cname(id), in ? in->tpath : "?",
                       d->name);
}

static void put_type(BtBuf *b, const BtTypeRef *r, BtTypeId id)
{
    bt_buf_printf(b, "%s%s", r->is_const ? "const " : "", bt_plan_cname(id));
}

/* "int ns::f<int, double>(const int J[], const int J_size, double a)" */
static const char *signature(Planner *p, const BtOverload *ov)
{
    const BtDecl *d = ov->decl;
    const char *s;
    BtBuf b;
    int i;

    bt_buf_init(&b);
    put_type(&b, &d->ret, ov->ret);
    bt_buf_puts(&b, d->ret.is_array ? " *" : " ");
    for (i = 0; i < d->n_ns; i++)
        bt_buf_printf(&b, "%s::", d->ns[i]);
    bt_buf_puts(&b, d->name);
    if (d->n_tparams) {
        bt_buf_putc(&b, '<');
        for (i = 0; i < d->n_tparams; i++)
            bt_buf_printf(&b, "%s%s", i ? ", " : "", bt_plan_cname(ov->targs[i]));
        bt_buf_putc(&b, '>');
    }
    bt_buf_putc(&b, '(');
    for (i = 0; i < d->n_params; i++) {
        const BtParam *pa = &d->params[i];
        if (i)
            bt_buf_puts(&b, ", ");
        put_type(&b, &pa->t, ov->ptypes[i]);
        if (pa->name && *pa->name)
            bt_buf_printf(&b, " %s", pa->name);
        if (pa->t.is_array)
            bt_buf_puts(&b, "[]");
    }
    bt_buf_putc(&b, ')');
    s = b.failed ? NULL : bt_arena_strdup(p->arena, bt_buf_str(&b));
    bt_buf_free(&b);
    return s;
}

static int make_overload(Planner *p, const BtDecl *d, const BtInst *in, BtOverload *ov)
{
    int i;

    ov->decl = d;
    ov->inst = in;
    ov->targs = d->n_tparams ? in->types : NULL;
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
                               "parameter must be an integer type (declared at %s:%d:%d)",
                               d->tparams[pa->t.tparam], bt_plan_cname(ov->ptypes[i]), in->tpath,
                               pa->name, d->params[pa->size_of].name, d->name,
                               bt_plan_cname(ov->ptypes[i]), p->h->file, pa->line, pa->col);
    }
    if (!(ov->signature = signature(p, ov)))
        return nomem(p);
    return 0;
}

static const char *python_name(const BtInstTable *t, const char *func)
{
    int i;

    for (i = 0; t && i < t->n_remaps; i++)
        if (strcmp(t->remaps[i].from, func) == 0)
            return t->remaps[i].to;
    return func;
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
    const char *name = python_name(p->t, in->func);
    int i;

    if (!is_dunder(name))
        return 0;
    for (i = 0; i < p->t->n_remaps; i++)
        if (strcmp(p->t->remaps[i].from, in->func) == 0)
            return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, p->t->remaps[i].line,
                               p->t->remaps[i].col,
                               "%s remaps '%s' to '%s', which cannot be a kernel's name: "
                               DUNDER_WHY "; pick another name", p->t->remaps[i].path,
                               in->func, name);
    return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, p->t->file, in->line, in->col,
                       "'%s' cannot be a kernel's Python name: " DUNDER_WHY "; bind it under "
                       "another name with a remap ('remaps: [{%s: name}]')", name, name);
}

/* Files ovs[0..n) under names[0..n) into out->funcs, first appearance first. */
static int group(Planner *p, BtOverload *ovs, const char **names, int n, BtPlan *out)
{
    int *fidx = bt_arena_alloc(p->arena, (size_t)n * sizeof *fidx + 1);
    int i, j;

    out->funcs = bt_arena_alloc(p->arena, (size_t)n * sizeof *out->funcs + 1);
    if (!fidx || !out->funcs)
        return nomem(p);
    for (i = 0; i < n; i++) {
        for (j = 0; j < out->n_funcs; j++)
            if (strcmp(out->funcs[j].name, names[i]) == 0)
                break;
        if (j == out->n_funcs) {
            out->funcs[j].name = names[i];
            out->funcs[j].doc = ovs[i].decl->doc ? ovs[i].decl->doc : "";
            out->n_funcs++;
        }
        out->funcs[j].n_ovs++;
        fidx[i] = j;
    }
    for (j = 0; j < out->n_funcs; j++) {
        BtFunc *f = &out->funcs[j];
        f->ovs = bt_arena_alloc(p->arena, (size_t)f->n_ovs * sizeof *f->ovs);
        if (!f->ovs)
            return nomem(p);
        f->n_ovs = 0;
    }
    for (i = 0; i < n; i++) {
        BtFunc *f = &out->funcs[fidx[i]];
        f->ovs[f->n_ovs++] = ovs[i];
    }
    return 0;
}

static const char *skip_reason(Planner *p, const BtDecl *d, int i)
{
    if (d->unbindable)
        return bt_arena_printf(p->arena, "unbindable: %s", d->unbindable);
    if (!p->t && is_dunder(d->name))
        return "its name is not a Python name a kernel can have (" DUNDER_WHY "); bind it "
               "under another name with instantiate.yml's remaps";
    if (!p->t && d->n_tparams)
        return "templated; needs instantiate.yml";
    if (!p->t || (!d->n_tparams && !p->listed[i]))
        return "inline/static; not exported by the library";
    if (p->listed[i]) {
        int j;
        for (j = 0; j < p->h->n_decls; j++) {
            const BtDecl *o = &p->h->decls[j];
            if (p->used[j] && o->n_tparams == d->n_tparams && strcmp(o->name, d->name) == 0)
                return bt_arena_printf(p->arena, "an overload with the same template arity "
                                       "(%d:%d) is bound instead", o->line, o->col);
        }
        return bt_arena_printf(p->arena, "no instantiate.yml entry gives it %d template "
                               "argument%s", d->n_tparams, d->n_tparams == 1 ? "" : "s");
    }
    return "not listed in instantiate.yml";
}

/* Appends an overload for every exported, bindable untemplated declaration
 * that the table does not list (all of them without a table): BindThem's
 * generator binds those whether or not instantiate.yml names them. */
static int plan_untemplated(Planner *p, BtOverload *ovs, const char **names, int *n_ovs)
{
    for (int i = 0; i < p->h->n_decls; i++) {
        const BtDecl *d = &p->h->decls[i];
        if (d->unbindable || d->n_tparams || d->is_inline || d->is_static ||
            is_dunder(d->name) || (p->listed && p->listed[i]))
            continue;
        if (make_overload(p, d, NULL, &ovs[*n_ovs]) < 0)
            return -1;
        p->used[i] = 1;
        names[(*n_ovs)++] = d->name;
    }
    return 0;
}

static int plan_table(Planner *p, BtPlan *out, int strict)
{
    const BtInstTable *t = p->t;
    int n = t->n_insts, n_ovs = 0, found = 0, i, j;
    size_t cap = (size_t)n + (size_t)p->h->n_decls; /* listed + unlisted untemplated */
    const BtInst *first_missing = NULL;
    BtOverload *ovs = bt_arena_alloc(p->arena, cap * sizeof *ovs + 1);
    const char **names = bt_arena_alloc(p->arena, cap * sizeof *names + 1);

    out->missing = bt_arena_alloc(p->arena, (size_t)n * sizeof *out->missing + 1);
    if (!ovs || !names || !out->missing)
        return nomem(p);
    for (i = 0; i < p->h->n_decls; i++)
        for (j = 0; j < n && !p->listed[i]; j++)
            p->listed[i] = strcmp(p->h->decls[i].name, t->insts[j].func) == 0;

    for (i = 0; i < n; i++) {
        const BtInst *in = &t->insts[i];
        const BtDecl *d;
        if (pick(p, in, &d) < 0)
            return -1;
        if (!d) {
            const BtDecl *hint = suggest(p, in->func, !strict);
            if (strict || hint)
                return missing_error(p, in, hint);
            if (!first_missing)
                first_missing = in;
            for (j = 0; j < out->n_missing; j++)
                if (strcmp(out->missing[j], in->func) == 0)
                    break;
            if (j == out->n_missing)
                out->missing[out->n_missing++] = in->func;
            continue;
        }
        found = 1;
        if (check_python_name(p, in) < 0 || make_overload(p, d, in, &ovs[n_ovs]) < 0)
            return -1;
        p->used[d - p->h->decls] = 1;
        names[n_ovs++] = python_name(t, in->func);
    }
    if (plan_untemplated(p, ovs, names, &n_ovs) < 0)
        return -1;
    if (!found && n_ovs == 0 && first_missing)
        return bt_diag_set(p->diag, BT_DIAG_INSTANTIATE, t->file, first_missing->line,
                           first_missing->col,
                           "%s declares none of the functions listed in instantiate.yml "
                           "(the first is '%s')", p->h->file, first_missing->func);
    return group(p, ovs, names, n_ovs, out);
}

static int plan_auto(Planner *p, BtPlan *out)
{
    int n = p->h->n_decls, n_ovs = 0;
    BtOverload *ovs = bt_arena_alloc(p->arena, (size_t)n * sizeof *ovs + 1);
    const char **names = bt_arena_alloc(p->arena, (size_t)n * sizeof *names + 1);

    if (!ovs || !names)
        return nomem(p);
    if (plan_untemplated(p, ovs, names, &n_ovs) < 0)
        return -1;
    return group(p, ovs, names, n_ovs, out);
}

int bt_plan_build(const BtHeader *h, const BtInstTable *t, int strict, BtArena *arena,
                  BtPlan *out, BtDiag *diag)
{
    Planner p;
    int i;

    memset(out, 0, sizeof *out);
    p.h = h;
    p.t = t;
    p.arena = arena;
    p.diag = diag;
    p.used = bt_arena_alloc(arena, (size_t)h->n_decls + 1);
    p.listed = bt_arena_alloc(arena, (size_t)h->n_decls + 1);
    out->skipped = bt_arena_alloc(arena, (size_t)h->n_decls * sizeof *out->skipped + 1);
    if (!p.used || !p.listed || !out->skipped)
        return nomem(&p);
    if ((t ? plan_table(&p, out, strict) : plan_auto(&p, out)) < 0)
        return -1;
    for (i = 0; i < h->n_decls; i++) {
        BtSkipped *s;
        if (p.used[i])
            continue;
        s = &out->skipped[out->n_skipped++];
        s->decl = &h->decls[i];
        if (!(s->reason = skip_reason(&p, s->decl, i)))
            return nomem(&p);
    }
    return 0;
}
