/* bt_note.c - annotations bound to a declaration: which parameters are
 * hidden, arrays, outputs or scalars by pointer, and the order a call
 * computes them in (bt_note.h). */
#include "bt_note.h"

#include <stdio.h>
#include <string.h>

/* What binding one declaration's notes needs. */
typedef struct Binder {
    const BtNoteTable *t;
    const BtDecl *d;
    const BtHeader *h;
    BtArena *arena;
    BtDiag *diag;
    const BtNoteFunc **fns; /* the entries that match d, exact names first */
    int n_fns;
    const BtNoteArg **arg; /* per parameter: its note, or NULL */
    char *from_glob;       /* per parameter: its note came from a glob */
    char *queried;         /* per parameter: an expression queries it (len, stride...) */
    char *sized;           /* per parameter: len() or shape() reads it */
    const char *why;       /* a glob's note that does not fit d: d is left out for it */
    int has_layout;        /* an expression asks a layout(): the call has one */
    BtNotePlan *plan;
    BtDecl *copy;
} Binder;

/* Whether name matches glob pattern g (* any run, ? one character), in
 * time linear in their lengths (the one-star backtrack). */
static int glob_match(const char *g, const char *name)
{
    const char *star = NULL, *resume = NULL;

    while (*name) {
        if (*g == '?' || (*g && *g == *name)) {
            g++;
            name++;
        } else if (*g == '*') {
            star = g++;
            resume = name;
        } else if (star) {
            g = star + 1;
            name = ++resume;
        } else {
            return 0;
        }
    }
    while (*g == '*')
        g++;
    return *g == 0;
}

/* The entries of t that apply to d: exact names (in file order), then
 * globs. */
static int match_entries(Binder *b)
{
    const BtNoteTable *t = b->t;
    int i, pass;

    b->n_fns = 0;
    if (!t || t->n_funcs == 0)
        return 0;
    b->fns = bt_arena_alloc(b->arena, sizeof *b->fns * (size_t)t->n_funcs);
    if (!b->fns)
        return bt_diag_nomem(b->diag);
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < t->n_funcs; i++) {
            const BtNoteFunc *f = &t->funcs[i];
            if (f->is_glob != pass)
                continue;
            if (pass ? glob_match(f->pattern, b->d->name) : strcmp(f->pattern, b->d->name) == 0)
                b->fns[b->n_fns++] = f;
        }
    return 0;
}

static int param_index(const BtDecl *d, const char *name)
{
    for (int i = 0; i < d->n_params; i++)
        if (strcmp(d->params[i].name, name) == 0)
            return i;
    return -1;
}

/* A note of an exact entry naming no parameter of d: an error, with the
 * parameters d has. */
static int unknown_param(Binder *b, const BtNoteArg *a)
{
    BtBuf names;
    int i, rc;

    bt_buf_init(&names);
    for (i = 0; i < b->d->n_params; i++)
        bt_buf_printf(&names, "%s%s", i ? ", " : "", b->d->params[i].name);
    rc = bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                     "'%s' annotates parameter '%s', which %s does not have; its parameters "
                     "are: %s",
                     b->d->name, a->name, b->d->name, names.failed ? "?" : bt_buf_str(&names));
    bt_buf_free(&names);
    return rc;
}

/* Each parameter's note: the first entry that names it. */
static int pick_notes(Binder *b)
{
    int k, j;

    for (k = 0; k < b->n_fns; k++) {
        const BtNoteFunc *f = b->fns[k];
        for (j = 0; j < f->n_args; j++) {
            int i = param_index(b->d, f->args[j].name);
            if (i < 0 && !f->is_glob)
                return unknown_param(b, &f->args[j]);
            if (i < 0 || b->arg[i])
                continue;
            b->arg[i] = &f->args[j];
            b->from_glob[i] = (char)f->is_glob;
        }
    }
    return 0;
}

/* A copy of expression e bound to the declaration's copy. A glob's
 * expression that does not fit this declaration (a name it lacks) leaves
 * it out (b->why) and returns 1; an exact entry's is an error (-1). */
static int bind_copy(Binder *b, const BtExpr *e, int from_glob, const BtExpr **out)
{
    BtExpr *c = bt_arena_alloc(b->arena, sizeof *c);
    BtDiag local;

    if (!c || !(c->nodes = bt_arena_alloc(b->arena, sizeof *c->nodes * (size_t)e->n_nodes + 1)))
        return bt_diag_nomem(b->diag);
    *c = (BtExpr){e->text, c->nodes, e->n_nodes, e->root, e->file, e->line, e->col};
    memcpy(c->nodes, e->nodes, sizeof *c->nodes * (size_t)e->n_nodes);
    *out = c;
    if (!from_glob)
        return bt_expr_bind(c, b->copy, b->h, b->diag);
    bt_diag_init(&local);
    if (bt_expr_bind(c, b->copy, b->h, &local) == 0)
        return 0;
    if (local.kind == BT_DIAG_NOMEM)
        return bt_diag_nomem(b->diag);
    b->why = bt_arena_printf(b->arena, "the annotation at %s:%d:%d does not fit it: %s", local.file,
                             local.line, local.col, local.message);
    return b->why ? 1 : bt_diag_nomem(b->diag);
}

/* Marks what expression e queries (b->queried, b->sized). */
static void mark_queries(Binder *b, const BtExpr *e)
{
    for (int n = 0; n < e->n_nodes; n++) {
        const BtExprNode *x = &e->nodes[n];
        if (x->op != BT_X_QUERY || x->param < 0)
            continue;
        b->queried[x->param] = 1;
        if (x->k == BT_Q_LEN || x->k == BT_Q_SHAPE)
            b->sized[x->param] = 1;
        if (x->k == BT_Q_STRIDE)
            b->plan->params[x->param].strided = 1;
        if (x->k == BT_Q_LD || x->k == BT_Q_LAYOUT)
            b->plan->params[x->param].ld = 1;
        b->has_layout |= x->k == BT_Q_LAYOUT;
    }
}

/* In a call with a layout, its 2-D arrays without a leading dimension are
 * stored in that layout too (BtNoteParam.follows). */
static void set_follows(Binder *b)
{
    for (int i = 0; b->has_layout && i < b->d->n_params; i++) {
        BtNoteParam *np = &b->plan->params[i];
        np->follows = (np->role == BT_ROLE_ARRAY || np->role == BT_ROLE_OUT) && np->n_shape == 2 &&
                      !np->ld && !np->strided;
    }
}

/* The shape of fixed-size array parameter i, whose note states none
 * (uuid_generate's `out: {intent: out}`): its C extents, as constants
 * written where the note is. */
static int fixed_shape(Binder *b, int i)
{
    const BtParam *p = &b->d->params[i];
    BtExpr *sh = bt_arena_alloc(b->arena, sizeof *sh * (size_t)p->n_fixed);

    if (!sh)
        return bt_diag_nomem(b->diag);
    for (int k = 0; k < p->n_fixed; k++) {
        char text[32];
        snprintf(text, sizeof text, "%lld", p->fixed[k]);
        if (bt_expr_parse(text, b->t->file, b->arg[i]->line, b->arg[i]->col, b->arena, &sh[k],
                          b->diag) < 0 ||
            bt_expr_bind(&sh[k], b->copy, b->h, b->diag) < 0)
            return -1;
    }
    b->plan->params[i].shape = sh;
    b->plan->params[i].n_shape = p->n_fixed;
    return 0;
}

/* Binds every expression of the notes: values, shapes, checks, status. */
static int bind_exprs(Binder *b)
{
    int i, j, r;

    for (i = 0; i < b->d->n_params; i++) {
        const BtNoteArg *a = b->arg[i];
        BtNoteParam *np = &b->plan->params[i];
        if (!a)
            continue;
        if (a->value) {
            if ((r = bind_copy(b, a->value, b->from_glob[i], &np->value)) != 0)
                return r;
            mark_queries(b, np->value);
        }
        if (a->n_shape > BT_MAX_SIZE_AXES)
            return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                               "'%s' of %s has a shape of %d axes; bindthem passes at most %d",
                               a->name, b->d->name, a->n_shape, BT_MAX_SIZE_AXES);
        if (a->n_shape) {
            BtExpr *sh = bt_arena_alloc(b->arena, sizeof *sh * (size_t)a->n_shape);
            if (!sh)
                return bt_diag_nomem(b->diag);
            for (j = 0; j < a->n_shape; j++) {
                const BtExpr *c;
                if ((r = bind_copy(b, &a->shape[j], b->from_glob[i], &c)) != 0)
                    return r;
                sh[j] = *c;
                mark_queries(b, c);
            }
            np->shape = sh;
            np->n_shape = a->n_shape;
        } else if (b->d->params[i].n_fixed && !a->value && (r = fixed_shape(b, i)) != 0) {
            return r;
        }
    }
    return 0;
}

/* The checks and status of the first entry that states them. */
static int bind_function_notes(Binder *b)
{
    const BtNoteFunc *fc = NULL, *fs = NULL;
    int k, r;

    for (k = 0; k < b->n_fns; k++) {
        if (!fc && b->fns[k]->n_checks)
            fc = b->fns[k];
        if (!fs && b->fns[k]->n_ok)
            fs = b->fns[k];
    }
    for (int w = 0; w < 2; w++) {
        const BtNoteFunc *f = w ? fs : fc;
        int n = f ? (w ? f->n_ok : f->n_checks) : 0;
        const BtExpr *src = f ? (w ? f->ok : f->checks) : NULL;
        BtExpr *dst = n ? bt_arena_alloc(b->arena, sizeof *dst * (size_t)n) : NULL;
        if (n && !dst)
            return bt_diag_nomem(b->diag);
        for (k = 0; k < n; k++) {
            const BtExpr *c;
            if ((r = bind_copy(b, &src[k], f->is_glob, &c)) != 0)
                return r;
            dst[k] = *c;
            mark_queries(b, c);
        }
        if (w) {
            b->plan->ok = dst;
            b->plan->n_ok = n;
        } else {
            b->plan->checks = dst;
            b->plan->n_checks = n;
        }
    }
    if (b->plan->n_ok && b->d->ret.tparam < 0 &&
        strchr("iu", bt_type(b->d->ret.type)->kind) == NULL)
        return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, fs->line, fs->col,
                           "'%s' declares a status, but %s returns no integer", fs->pattern,
                           b->d->name);
    return 0;
}

/* Whether parameter p is a pointer an annotation can make an array or a
 * scalar by pointer. */
static int is_pointer(const BtParam *p)
{
    return p->t.is_array || p->t.is_voidp || p->t.is_string || p->is_ref || p->handle_ptr ||
           p->string_ptr;
}

/* A parameter's role from its note (a), its type and the queries. */
static const char *role_of(Binder *b, int i, int *role)
{
    const BtParam *p = &b->d->params[i];
    const BtNoteArg *a = b->arg[i];
    int intent = a ? a->intent : BT_INTENT_DEFAULT, array;

    *role = BT_ROLE_PLAIN;
    if (a && a->value) {
        *role = is_pointer(p) ? BT_ROLE_HIDDEN_REF : BT_ROLE_HIDDEN;
        return NULL;
    }
    if (a && a->nullable) /* a C string that takes None: as without notes, but for that */
        return p->t.is_string && !a->intent && !a->n_shape && !a->trim && a->type == BT_VOID &&
                       !b->queried[i]
                   ? NULL
                   : "nullable: is for a `const char *` parameter, and stands alone";
    if (!is_pointer(p)) {
        if (a)
            return "it is no pointer: only a value (\"name: expression\") annotates it";
        return NULL;
    }
    array = !p->is_ref && (b->plan->params[i].n_shape > 0 || b->queried[i]);
    if (array && (p->handle_ptr || p->string_ptr))
        return p->handle_ptr ? "it points to handles: one handle by address ({intent: ...} "
                               "without a shape) binds, an array of handles not yet"
                             : "it points to strings: one string by address ({intent: ...} "
                               "without a shape) binds, an array of strings not yet";
    if (a && a->type != BT_VOID && (p->handle_ptr || p->string_ptr))
        return "type: is for a void pointer";
    if (!a && !array && !p->is_ref)
        return NULL; /* a string, a `void *`, a struct by pointer: as without notes */
    if (intent == BT_INTENT_DEFAULT) /* a `const char **`'s const is its characters' */
        intent = p->t.is_const && !p->string_ptr ? BT_INTENT_IN : BT_INTENT_INOUT;
    if (!array) {
        *role = intent == BT_INTENT_IN    ? BT_ROLE_SCALAR_IN
                : intent == BT_INTENT_OUT ? BT_ROLE_SCALAR_OUT
                                          : BT_ROLE_SCALAR_INOUT;
        return NULL;
    }
    if (intent == BT_INTENT_OUT && b->plan->params[i].n_shape == 0)
        return "an out array needs its shape (shape: [...]) to be allocated";
    if (!b->sized[i] && b->plan->params[i].n_shape == 0)
        return "nothing states its size: give its shape, or pass len(x) as a size";
    *role = intent == BT_INTENT_OUT ? BT_ROLE_OUT : BT_ROLE_ARRAY;
    /* the intent outranks the header's const (OpenBLAS's ?rot writes a const x); the
     * declaration keeps its const, which its C++ name encodes */
    b->plan->params[i].written = intent != BT_INTENT_IN;
    return NULL;
}

/* Sets the roles, and on the declaration's copy what each becomes. */
static int set_roles(Binder *b)
{
    int i;

    for (i = 0; i < b->d->n_params; i++) {
        BtParam *p = &b->copy->params[i];
        const BtNoteArg *a = b->arg[i];
        BtNoteParam *np = &b->plan->params[i];
        const char *bad = role_of(b, i, &np->role);
        if (bad && a && !b->from_glob[i])
            return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                               "'%s' of %s: %s", a->name, b->d->name, bad);
        if (bad) {
            b->why = bt_arena_printf(b->arena, "parameter '%s': %s", p->name, bad);
            return b->why ? 1 : bt_diag_nomem(b->diag);
        }
        if (a && a->type != BT_VOID) {
            if (!p->t.is_voidp && !(p->t.tparam < 0 && p->t.type == a->type))
                return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                                   "'%s' of %s: type: is for a void pointer; it is a pointer "
                                   "to %s",
                                   a->name, b->d->name, bt_type(p->t.type)->cname);
            p->t.type = a->type;
        } else if (p->t.is_voidp && np->role != BT_ROLE_PLAIN) {
            b->why = bt_arena_printf(b->arena,
                                     "parameter '%s' is a void pointer: give its element type "
                                     "(type: float64...)",
                                     p->name);
            return b->why ? 1 : bt_diag_nomem(b->diag);
        }
        p->t.nullable = a && a->nullable;
        if (np->role != BT_ROLE_PLAIN) {
            p->t.is_voidp = 0;
            p->t.is_string = p->string_ptr; /* its Python argument: a str or bytes */
            p->t.is_array = np->role == BT_ROLE_ARRAY || np->role == BT_ROLE_OUT;
        }
        p->hidden = np->role == BT_ROLE_HIDDEN || np->role == BT_ROLE_HIDDEN_REF ||
                    np->role == BT_ROLE_OUT || np->role == BT_ROLE_SCALAR_OUT;
    }
    for (i = 0; i < b->d->n_params; i++)
        if (b->d->params[i].no_size && b->plan->params[i].role == BT_ROLE_PLAIN) {
            if (!b->arg[i] && b->d->unbindable) { /* the parser's reason, as without notes */
                b->why = b->d->unbindable;
                return 1;
            }
            b->why = b->d->params[i].handle_ptr || b->d->params[i].string_ptr
                         ? bt_arena_printf(b->arena,
                                           "parameter '%s' is a pointer to a %s: annotate it "
                                           "({intent: out} for one the function writes)",
                                           b->d->params[i].name,
                                           b->d->params[i].handle_ptr ? "handle" : "string")
                         : bt_arena_printf(b->arena,
                                           "parameter '%s' is a pointer with no size: annotate "
                                           "its shape, or a size parameter as len(%s)",
                                           b->d->params[i].name, b->d->params[i].name);
            return b->why ? 1 : bt_diag_nomem(b->diag);
        }
    return 0;
}

/* Trim names: a parameter whose value the call reads back. */
static int set_trims(Binder *b)
{
    for (int i = 0; i < b->d->n_params; i++) {
        const BtNoteArg *a = b->arg[i];
        BtNoteParam *np = &b->plan->params[i];
        int j, r;
        np->trim = -1;
        if (!a || !a->trim)
            continue;
        j = param_index(b->d, a->trim);
        r = j < 0 ? -1 : b->plan->params[j].role;
        if (np->role != BT_ROLE_OUT && np->role != BT_ROLE_ARRAY)
            return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                               "'%s' of %s: trim is for an array", a->name, b->d->name);
        if (r != BT_ROLE_HIDDEN_REF && r != BT_ROLE_SCALAR_OUT && r != BT_ROLE_SCALAR_INOUT)
            return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a->line, a->col,
                               "'%s' of %s: trim: '%s' is %s; it must be a pointer the "
                               "function writes its length to (such as \"%s: len(%s)\")",
                               a->name, b->d->name, a->trim,
                               j < 0 ? "no parameter" : "not written by the call", a->trim,
                               a->name);
        np->trim = j;
    }
    return 0;
}

/* The order: depth-first over what each hidden value or out shape reads. */
typedef struct Order {
    Binder *b;
    char *state; /* 0 new, 1 on the path, 2 done */
    int cycle;
} Order;

static int visit(Order *o, int i);

static int visit_use(int param, int is_query, void *ctx)
{
    Order *o = ctx;
    const BtNoteParam *np = &o->b->plan->params[param];

    (void)is_query;
    if (np->role == BT_ROLE_HIDDEN || np->role == BT_ROLE_HIDDEN_REF || np->role == BT_ROLE_OUT)
        return visit(o, param);
    return 0;
}

static int visit(Order *o, int i)
{
    BtNotePlan *pl = o->b->plan;
    const BtNoteParam *np = &pl->params[i];
    int r = 0;

    if (o->state[i] == 2)
        return 0;
    if (o->state[i] == 1) {
        o->cycle = i;
        return 1;
    }
    o->state[i] = 1;
    if (np->value)
        r = bt_expr_uses(np->value, visit_use, o);
    for (int k = 0; !r && np->role == BT_ROLE_OUT && k < np->n_shape; k++)
        r = bt_expr_uses(&np->shape[k], visit_use, o);
    if (r)
        return r;
    o->state[i] = 2;
    pl->order[pl->n_order++] = i;
    return 0;
}

static int set_order(Binder *b)
{
    BtNotePlan *pl = b->plan;
    Order o = {b, bt_arena_alloc(b->arena, (size_t)b->d->n_params + 1), -1};

    pl->order = bt_arena_alloc(b->arena, sizeof(int) * (size_t)(b->d->n_params + 1));
    if (!o.state || !pl->order)
        return bt_diag_nomem(b->diag);
    memset(o.state, 0, (size_t)b->d->n_params + 1);
    for (int i = 0; i < b->d->n_params; i++) {
        int role = pl->params[i].role;
        if ((role == BT_ROLE_HIDDEN || role == BT_ROLE_HIDDEN_REF || role == BT_ROLE_OUT) &&
            visit(&o, i)) {
            const BtNoteArg *a = b->arg[o.cycle];
            return bt_diag_set(b->diag, BT_DIAG_INSTANTIATE, b->t->file, a ? a->line : 0,
                               a ? a->col : 0,
                               "the annotations of %s compute '%s' from itself (through "
                               "what its value or shape reads)",
                               b->d->name, b->d->params[o.cycle].name);
        }
    }
    return 0;
}

/* The copy of d the plan binds: its own parameters, which set_roles marks. */
static int copy_decl(Binder *b)
{
    size_t n = (size_t)b->d->n_params;

    b->copy = bt_arena_alloc(b->arena, sizeof *b->copy);
    if (!b->copy)
        return bt_diag_nomem(b->diag);
    *b->copy = *b->d;
    b->copy->params = bt_arena_alloc(b->arena, sizeof *b->copy->params * (n ? n : 1));
    if (!b->copy->params)
        return bt_diag_nomem(b->diag);
    memcpy(b->copy->params, b->d->params, sizeof *b->copy->params * n);
    return 0;
}

static int has_refs(const BtDecl *d)
{
    for (int i = 0; i < d->n_params; i++)
        if (d->params[i].is_ref)
            return 1;
    return 0;
}

/* The scratch of a Binder for d's parameters. */
static int alloc_binder(Binder *b)
{
    size_t n = (size_t)b->d->n_params + 1;

    b->arg = bt_arena_alloc(b->arena, sizeof *b->arg * n);
    b->from_glob = bt_arena_alloc(b->arena, 3 * n);
    b->plan = bt_arena_alloc(b->arena, sizeof *b->plan);
    if (!b->arg || !b->from_glob || !b->plan)
        return bt_diag_nomem(b->diag);
    memset(b->arg, 0, sizeof *b->arg * n);
    memset(b->from_glob, 0, 3 * n);
    b->queried = b->from_glob + n;
    b->sized = b->queried + n;
    memset(b->plan, 0, sizeof *b->plan);
    b->plan->n_params = b->d->n_params;
    b->plan->file = b->t ? b->t->file : NULL;
    b->plan->params = bt_arena_alloc(b->arena, sizeof *b->plan->params * n);
    if (!b->plan->params)
        return bt_diag_nomem(b->diag);
    memset(b->plan->params, 0, sizeof *b->plan->params * n);
    return 0;
}

/* Whether any note applies to d: a parameter's, a check or status, a
 * C++ reference. */
static int applies(const Binder *b)
{
    int i;

    for (i = 0; i < b->d->n_params; i++)
        if (b->arg[i] || b->d->params[i].is_ref)
            return 1;
    for (i = 0; i < b->n_fns; i++)
        if (b->fns[i]->n_checks || b->fns[i]->n_ok)
            return 1;
    return 0;
}

int bt_note_bind(const BtNoteTable *t, const BtDecl *d, const BtHeader *h, BtArena *arena,
                 const BtNotePlan **out, const BtDecl **dout, const char **why, BtDiag *diag)
{
    Binder b;
    int r;

    memset(&b, 0, sizeof b);
    b = (Binder){.t = t, .d = d, .h = h, .arena = arena, .diag = diag};
    *out = NULL;
    *dout = d;
    *why = NULL;
    if (d->unbindable && !d->sizes_missing)
        return 0;
    if (match_entries(&b) < 0)
        return -1;
    if (b.n_fns == 0 && !has_refs(d))
        return 0;
    if (alloc_binder(&b) < 0 || pick_notes(&b) < 0)
        return -1;
    if (!applies(&b))
        return 0;
    if (copy_decl(&b) < 0)
        return -1;
    r = bind_exprs(&b);
    if (r == 0)
        r = bind_function_notes(&b);
    if (r == 0)
        r = set_roles(&b);
    if (r == 0 && (set_trims(&b) < 0 || set_order(&b) < 0))
        return -1;
    if (r == 0)
        set_follows(&b);
    if (r < 0)
        return -1;
    if (r > 0) { /* left out, with why */
        *why = b.why;
        return 0;
    }
    b.copy->unbindable = NULL;
    b.copy->sizes_missing = 0;
    b.copy->unbindable_rule = BT_RULE_UNBINDABLE;
    *out = b.plan;
    *dout = b.copy;
    return 0;
}

int bt_note_apply(BtHeader *h, const BtNoteTable *t, BtArena *arena, BtDiag *diag)
{
    for (int i = 0; i < h->n_decls; i++) {
        const BtNotePlan *np;
        const BtDecl *nd;
        const char *why;
        if (bt_note_bind(t, &h->decls[i], h, arena, &np, &nd, &why, diag) < 0)
            return -1;
        if (np) {
            h->decls[i] = *nd;
            h->decls[i].notes = np;
        } else if (why) {
            h->decls[i].unbindable = why;
            h->decls[i].sizes_missing = 0;
        }
    }
    return 0;
}

/* Expression e into out, every string and array of it in arena. */
static int copy_expr(const BtExpr *e, BtArena *arena, BtExpr *out)
{
    int n;

    *out = *e;
    out->text = bt_arena_strdup(arena, e->text);
    out->file = e->file ? bt_arena_strdup(arena, e->file) : NULL;
    out->nodes = bt_arena_alloc(arena, sizeof *out->nodes * (size_t)(e->n_nodes + 1));
    if (!out->text || (e->file && !out->file) || !out->nodes)
        return -1;
    memcpy(out->nodes, e->nodes, sizeof *out->nodes * (size_t)e->n_nodes);
    for (n = 0; n < e->n_nodes; n++) {
        BtExprNode *x = &out->nodes[n];
        int *args;
        if (x->name && !(x->name = bt_arena_strdup(arena, x->name)))
            return -1;
        if (!x->n_args)
            continue;
        if (!(args = bt_arena_alloc(arena, sizeof(int) * (size_t)x->n_args)))
            return -1;
        memcpy(args, x->args, sizeof(int) * (size_t)x->n_args);
        x->args = args;
    }
    return 0;
}

/* n expressions into a new array of arena (NULL for none): 0 or -1. */
static int copy_exprs(const BtExpr *src, int n, BtArena *arena, const BtExpr **out)
{
    BtExpr *dst;

    *out = NULL;
    if (n == 0)
        return 0;
    if (!(dst = bt_arena_alloc(arena, sizeof *dst * (size_t)n)))
        return -1;
    for (int k = 0; k < n; k++)
        if (copy_expr(&src[k], arena, &dst[k]) < 0)
            return -1;
    *out = dst;
    return 0;
}

BtNotePlan *bt_note_copy(const BtNotePlan *p, BtArena *arena)
{
    BtNotePlan *c = bt_arena_alloc(arena, sizeof *c);
    size_t n = (size_t)p->n_params + 1;
    int i;

    if (!c)
        return NULL;
    *c = *p;
    c->params = bt_arena_alloc(arena, sizeof *c->params * n);
    c->order = bt_arena_alloc(arena, sizeof *c->order * n);
    c->file = p->file ? bt_arena_strdup(arena, p->file) : NULL;
    if (!c->params || !c->order || (p->file && !c->file))
        return NULL;
    memcpy(c->order, p->order, sizeof *c->order * (size_t)p->n_order);
    for (i = 0; i < p->n_params; i++) {
        const BtNoteParam *s = &p->params[i];
        BtNoteParam *d = &c->params[i];
        *d = *s;
        if (copy_exprs(s->value, s->value ? 1 : 0, arena, &d->value) < 0 ||
            copy_exprs(s->shape, s->n_shape, arena, &d->shape) < 0)
            return NULL;
    }
    if (copy_exprs(p->checks, p->n_checks, arena, &c->checks) < 0 ||
        copy_exprs(p->ok, p->n_ok, arena, &c->ok) < 0)
        return NULL;
    return c;
}
