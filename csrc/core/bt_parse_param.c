/* bt_parse_param.c - types and parameters: the type, param and params
 * rules (the size rule with them), the return type.
 *
 *   params    -> [ 'void' | param (',' param)* ]
 *   param     -> '...' | type [IDENT] ('[' balanced ']')* ['=' balanced]
 *   type      -> (cv | name)+ ('*' | '&' | '&&' | cv)*
 *   name      -> ['::'] IDENT ['<' balanced '>'] ('::' IDENT ['<' balanced '>'])*
 *
 * (the whole grammar: bt_parse.c). A parameter the dialect can't bind
 * gets a reason; only malformed syntax is an error. */
#include "bt_parse_impl.h"

static const char *const elaborated_words[] = {"struct", "union", "class", "enum", NULL};

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
int bt_parse_type(Parser *p, int a, int b, int allow_name, const char *what, TypeInfo *ti)
{
    char raw[512] = "";
    size_t before_last = 0;
    int i = a, seen_ptr = 0, ngroups = 0, last_start = -1, last_end = -1;

    memset(ti, 0, sizeof *ti);
    ti->name = -1;
    while (i < b) {
        const BtToken *t = tok(p, i);
        if (is_any(t, bt_parse_cv_words)) {
            if (bt_lex_is(t, "const"))
                *(seen_ptr ? &ti->inner_const : &ti->is_const) = 1;
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
                return bt_parse_expected(p, tok(p, i), "type name");
            i++;
            for (;;) {
                if (i < b && is(p, i, "<")) {
                    int j = skip_angles(p, i, b);
                    if (j < 0)
                        return bt_parse_expected(p, tok(p, b), "'>'");
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
            return bt_parse_expected(p, t, what);
        }
    }
    if (ngroups == 0)
        return bt_parse_expected(p, tok(p, a < b ? a : b), "type name");
    if (!seen_ptr && allow_name && ngroups >= 2 && last_end == last_start + 1 &&
        !is_any(tok(p, last_start), bt_parse_builtin_words)) {
        ti->name = last_start;
        raw[before_last] = '\0';
        if (last_end != b)
            return bt_parse_expected(p, tok(p, last_end), what);
    }
    bt_type_normalize(raw, strlen(raw), ti->spelling, sizeof ti->spelling);
    return 0;
}

/* Resolves a base spelling to a template parameter or a scalar type. */
int bt_parse_resolve(const TypeInfo *ti, const Tmpl *tm, BtTypeRef *ref)
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
    if (ti->elaborated || ti->reason)
        return -1;
    ref->enum_ref = ti->enum_ref;
    return bt_type_lookup(ti->spelling, &ref->type);
}

/* A typedef's name in ti stands for its type, unless a type parameter of tm
 * has that name; a type the table refuses gets its reason. */
static void expand(const Parser *p, const Tmpl *tm, TypeInfo *ti)
{
    int k;

    for (k = 0; tm && k < tm->n; k++)
        if (tm->names[k][0] && !tm->info[k].is_value && strcmp(tm->names[k], ti->spelling) == 0)
            return;
    bt_parse_apply_typedef(p, ti);
    if (!ti->reason && !ti->elaborated) /* _Float128 and kin: a reason, not "unknown type" */
        ti->reason = bt_type_refused(ti->spelling);
}

int bt_parse_base_end(const Parser *p, int a)
{
    int i;

    for (i = a; !at_end(tok(p, i)); i++) {
        const BtToken *t = tok(p, i);
        if (bt_lex_is(t, "*") || bt_lex_is(t, "&") || bt_lex_is(t, "(") || bt_lex_is(t, ";") ||
            (bt_lex_is(t, ":") && i > a)) /* an unnamed bit-field's width */
            return i;
        if (t->kind == BT_TOK_IDENT && i > a && !is_any(t, bt_parse_cv_words) &&
            !bt_parse_type_keyword(t) &&
            (is(p, i + 1, ",") || is(p, i + 1, ";") || is(p, i + 1, "[") || is(p, i + 1, ":") ||
             is(p, i + 1, "(")))
            return i;
        if (bt_lex_is(t, "<")) /* a template argument list: skip it */
            for (int depth = 0; !at_end(tok(p, i)); i++)
                if ((depth += is(p, i, "<") - is(p, i, ">")) == 0)
                    break;
    }
    return i;
}

/* ---- parameters ---- */

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
            return bt_parse_want_closer(p, t, stack, sp);
        if (bt_parse_nest(p, t, stack, &sp) < 0)
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
                return bt_parse_expected(p, t, "parameter declaration");
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

static const char *label(Parser *p, const BtParam *pr, int index)
{
    if (pr->name && pr->name[0])
        return bt_arena_printf(p->arena, "'%s'", pr->name);
    return bt_arena_printf(p->arena, "%d", index + 1);
}

/* A parameter declared in parentheses, tokens [paren, eq): `(*cb)(int)`,
 * `(&a)[3]`. Its name, if it has one, into pr; why it cannot be bound
 * into *reason (arena). */
static int paren_declarator(Parser *p, int a, int paren, int eq, int b, int index, BtParam *pr,
                            const char **reason)
{
    const char *lb;
    int i, close;

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
    close = bt_parse_find_top(p, paren + 1, eq, ")");
    if (is(p, paren + 1, "*") && is(p, close + 1, "(") && close <= paren + 3 && !p->context) {
        int saved = p->pos;
        if (bt_parse_callback(p, a, paren, close + 1, pr->name[0] ? pr->name : "callback",
                              &pr->t.callback_ref) < 0)
            return -1;
        p->pos = saved;
        if (!pr->name[0]) {
            pr->unnamed = 1;
            pr->name = bt_arena_printf(p->arena, "arg%d", index);
        }
        if (eq < b)
            *reason = bt_arena_printf(p->arena, "parameter %s has a default argument", lb);
    } else {
        *reason = bt_arena_printf(p->arena, "parameter %s has an unsupported declarator", lb);
    }
    return 0;
}

int bt_parse_callback(Parser *p, int ret_a, int ret_b, int params_at, const char *name, int *ref)
{
    Range *ranges = p->ranges;
    int cap = p->cap_ranges, knr = p->knr_names, rc;
    BtCallbackType *c;
    BtDecl *sig;

    if (++p->depth > MAX_NEST)
        return bt_parse_fail(p, tok(p, params_at), "function pointers nested too deeply");
    if (p->n_callbacks == p->cap_callbacks) {
        int n = p->cap_callbacks < 8 ? 8 : p->cap_callbacks * 2;
        BtCallbackType *v = bt_arena_resize(p->arena, p->callbacks, (size_t)n * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag);
        p->callbacks = v;
        p->cap_callbacks = n;
    }
    if (!(sig = bt_arena_alloc(p->arena, sizeof *sig)) || !(name = bt_arena_strdup(p->arena, name)))
        return bt_diag_nomem(p->diag);
    memset(sig, 0, sizeof *sig);
    sig->name = name;
    sig->doc = "";
    sig->line = tok(p, params_at)->line;
    sig->col = bt_lex_col(&p->toks, tok(p, params_at));
    p->in_callback++;
    sig->unbindable = bt_parse_return_type(p, sig, NULL, ret_a, ret_b, &rc);
    p->in_callback--;
    if (rc < 0)
        return -1;
    p->ranges = NULL; /* the parameter list being read holds the outer one's */
    p->cap_ranges = 0;
    p->pos = params_at;
    rc = bt_parse_params(p, sig, NULL);
    p->ranges = ranges;
    p->cap_ranges = cap;
    p->knr_names = knr;
    p->depth--;
    if (rc < 0)
        return -1;
    for (int k = 0; k < sig->n_params && !sig->unbindable; k++)
        if (sig->params[k].n_fixed) /* bt_callback.c makes views of sized arrays only */
            sig->unbindable = bt_arena_printf(p->arena,
                                              "parameter '%s' is a fixed-size array (a Python "
                                              "callable cannot take one yet)",
                                              sig->params[k].name);
    c = &p->callbacks[p->n_callbacks];
    c->name = name;
    c->sig = sig;
    *ref = ++p->n_callbacks;
    return 0;
}

/* ('[' balanced ']')* over tokens [br, eq): how many into *ndims, each
 * one's extent into dims (the first BT_MAX_FIXED_DIMS): a positive integer
 * constant expression's value, else -1 (`[]`, `[n]`). */
static int array_dims(Parser *p, int br, int eq, int *ndims, long long *dims)
{
    int i, save = p->pos;

    for (i = br, *ndims = 0; i < eq; ++*ndims) {
        long long v = -1;
        if (!is(p, i, "["))
            return bt_parse_expected(p, tok(p, i), "')'");
        p->pos = i;
        if (bt_parse_skip_balanced(p) < 0)
            return -1;
        if (bt_parse_const_expr(p, p->toks.v, i + 1, p->pos - 1, &v) || v <= 0)
            v = -1;
        if (*ndims < BT_MAX_FIXED_DIMS)
            dims[*ndims] = v;
        i = p->pos;
        p->pos = save;
    }
    return 0;
}

/* A fixed-size array parameter: its brackets' extents (ndims of dims), then
 * those of the array typedef ti names, each a constant (`double m[3][3]`,
 * `uuid_t uu`), no pointer in ti. Its shape into pr->fixed (ti's reason,
 * "an array type", then holds no more): 1, else 0; -1 out of memory. */
static int fixed_shape(Parser *p, BtParam *pr, TypeInfo *ti, int ndims, const long long *dims)
{
    int n = ndims + ti->n_dims, k;
    long long *v;

    if (n == 0 || n > BT_MAX_FIXED_DIMS || ti->nptr || ti->nref || ti->callback_ref ||
        (ti->reason && !ti->n_dims))
        return 0;
    for (k = 0; k < ndims; k++)
        if (dims[k] <= 0)
            return 0;
    if (!(v = bt_arena_alloc(p->arena, sizeof *v * (size_t)n)))
        return bt_diag_nomem(p->diag);
    memcpy(v, dims, sizeof *dims * (size_t)ndims);
    memcpy(v + ndims, ti->dims, sizeof *dims * (size_t)ti->n_dims);
    pr->fixed = v;
    pr->n_fixed = n;
    ti->reason = NULL;
    return 1;
}

/* type [IDENT] ('[' balanced ']')* over tokens [a, eq), the first '[' at br:
 * the type into *ti (typedefs expanded), the name into pr, and into *ndims
 * the pointers the brackets make: one for a fixed-size array (fixed_shape;
 * of structs, its struct_ref: even one opaque by convention), else one a
 * bracket. 0 or -1. */
static int param_declarator(Parser *p, int a, int br, int eq, const Tmpl *tm, TypeInfo *ti,
                            BtParam *pr, int *ndims)
{
    long long dims[BT_MAX_FIXED_DIMS];
    int fixed;

    if (array_dims(p, br, eq, ndims, dims) < 0 || bt_parse_type(p, a, br, 1, "')'", ti) < 0)
        return -1;
    expand(p, tm, ti);
    if (ti->name >= 0) {
        const BtToken *nt = tok(p, ti->name);
        pr->name = tokdup(p, nt);
        pr->line = nt->line;
        pr->col = bt_lex_col(&p->toks, nt);
    }
    if ((fixed = fixed_shape(p, pr, ti, *ndims, dims)) < 0)
        return -1;
    if (fixed) {
        *ndims = 1;
        if (ti->elaborated && strcmp(ti->elaborated, "enum")) /* of structs: records, always */
            pr->t.struct_ref = bt_parse_struct_laid(p, ti->spelling);
    }
    return 0;
}

/* The default argument after '=' at token eq of parameter r into
 * pr->defval, as written (none when eq is r.b). */
static int param_default(Parser *p, Range r, int eq, BtParam *pr)
{
    const BtToken *e = tok(p, r.b - 1);

    if (eq + 1 == r.b)
        return bt_parse_expected(p, tok(p, r.b), "default argument");
    if (eq + 1 < r.b) {
        pr->defval = bt_arena_strndup(p->arena, tok(p, eq + 1)->s,
                                      (size_t)(e->s + e->len - tok(p, eq + 1)->s));
        if (!pr->defval)
            return bt_diag_nomem(p->diag);
    }
    return 0;
}

/* A pointer to a struct or union: a handle. */
static int is_handle(const TypeInfo *ti, int ndims)
{
    return ti->elaborated && strcmp(ti->elaborated, "enum") != 0 && !ti->nref && !ti->reason &&
           ti->nptr + ndims == 1;
}

/* `H **` or `void **` (H a struct or union), with no const after the
 * first '*': one handle by address, or an array of them. A function that
 * writes an H by address makes H a handle type, as one that returns an H
 * does (BtHandleType.returned). */
static int is_handle_ptr(const Parser *p, const TypeInfo *ti, int ndims)
{
    if (ti->nref || ti->reason || ti->inner_const || ti->nptr + ndims != 2 || ndims > 1 ||
        ti->callback_ref || p->in_callback)
        return 0;
    if (!ti->elaborated)
        return strcmp(ti->spelling, "void") == 0;
    return strcmp(ti->elaborated, "enum") != 0;
}

/* `char **` or `const char **` (no const after the first '*'): one
 * string by address, or an array of them. */
static int is_string_ptr(const TypeInfo *ti, int ndims)
{
    return !ti->nref && !ti->reason && !ti->inner_const && !ti->elaborated && ndims == 0 &&
           ti->nptr == 2 && strcmp(ti->spelling, "char") == 0;
}

/* `void *`: an opaque pointer when no size parameter follows. */
static int is_voidp(const TypeInfo *ti, int ndims)
{
    return !ti->nref && !ti->elaborated && ti->nptr + ndims == 1 &&
           strcmp(ti->spelling, "void") == 0;
}

/* Whether t, the type a C++ reference `T &` refers to, is a scalar a call
 * can pass by address: a number, a bool or a template parameter. */
static int is_ref_scalar(const BtTypeRef *t)
{
    if (t->tparam >= 0)
        return !t->is_array;
    return !t->is_array && !t->enum_ref && !t->struct_ref && !t->handle_ref &&
           strchr("biufc", bt_type(t->type)->kind) != NULL;
}

/* Why parameter pr (labelled lb; its type ti, resolved into pr->t, with
 * ndims brackets; a default when has_default) cannot be bound, or `why`
 * when no rule here says (NULL: it can). */
static const char *param_reason(Parser *p, const BtParam *pr, const TypeInfo *ti, int ndims,
                                int has_default, const char *lb, const char *why)
{
    if (ti->reason)
        return bt_arena_printf(p->arena, "parameter %s has type '%s', %s", lb,
                               ti->alias ? ti->alias : ti->spelling, ti->reason);
    if (ti->nref)
        return bt_arena_printf(p->arena, "parameter %s is a reference (%s %s)", lb, ti->spelling,
                               ti->nref > 1 ? "&&" : "&");
    if (ndims > 1)
        return bt_arena_printf(p->arena, "parameter %s is a multi-dimensional array", lb);
    if (ti->nptr + ndims > 1)
        return bt_arena_printf(p->arena, "parameter %s is a pointer to pointer (%s **)", lb,
                               ti->spelling);
    if (pr->t.struct_ref && p->structs[pr->t.struct_ref - 1].reason)
        return bt_arena_printf(p->arena, "parameter %s is %s: %s", lb, ti->spelling,
                               p->structs[pr->t.struct_ref - 1].reason);
    if (ti->elaborated && !pr->t.struct_ref)
        return bt_arena_printf(
            p->arena, "parameter %s has %s type '%s'%s", lb, ti->elaborated, ti->spelling,
            strcmp(ti->elaborated, "enum") ? ", whose fields are not declared" : "");
    if (has_default && pr->t.is_array)
        return bt_arena_printf(p->arena, "parameter %s has a default argument", lb);
    if (!why && pr->t.tparam < 0 && pr->t.type == BT_VOID && !pr->t.is_array &&
        !pr->t.callback_ref && !pr->t.struct_ref)
        return bt_arena_printf(p->arena, "parameter %s has type void", lb);
    return why;
}

/* Parameter pr of type ti (ndims brackets) as a handle (`gzFile`), a
 * pointer to a string (`char **`) or a pointer to a handle (`sqlite3 **`):
 * 1 when it is one (pr set; the last two have no size, which the size rule
 * says), 0 when it is none of them, -1 on error. */
static int pointer_kind(Parser *p, const TypeInfo *ti, int ndims, BtParam *pr)
{
    if (is_handle(ti, ndims) && !pr->n_fixed) {
        pr->t.is_array = 0;
        pr->t.is_const = ti->is_const;
    } else if (is_string_ptr(ti, ndims)) {
        pr->string_ptr = 1;
        pr->t.is_array = 1;
        pr->t.type = BT_CHAR;
        pr->t.is_const = ti->is_const;
        return 1;
    } else if (is_handle_ptr(p, ti, ndims)) {
        pr->handle_ptr = 1;
        pr->t.is_array = 1;
    } else {
        return 0;
    }
    if (!p->context && !(pr->t.handle_ref = bt_parse_handle(p, ti, pr->line)))
        return -1;
    if (pr->handle_ptr && !p->context)
        p->handles[pr->t.handle_ref - 1].returned = 1;
    return 1;
}

/* param -> '...' | type [IDENT] ('[' balanced ']')* ['=' balanced]
 * Sets *reason (arena) when the parameter can't be bound. */
static int parse_param(Parser *p, Range r, int index, const Tmpl *tm, BtParam *pr,
                       const char **reason)
{
    const BtToken *first = tok(p, r.a);
    TypeInfo ti;
    int eq, br, ndims, paren, k;
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
    eq = bt_parse_find_top(p, r.a, r.b, "=");
    if (eq == r.a)
        return bt_parse_expected(p, first, "parameter declaration");
    paren = bt_parse_find_top(p, r.a, eq, "(");
    if (paren < eq)
        return paren_declarator(p, r.a, paren, eq, r.b, index, pr, reason);
    br = bt_parse_find_top(p, r.a, eq, "[");
    if (param_declarator(p, r.a, br, eq, tm, &ti, pr, &ndims) < 0 ||
        param_default(p, r, eq, pr) < 0)
        return -1;
    if (pr->name && !pr->name[0]) {
        pr->unnamed = 1; /* named by its position, which an annotation names too */
        pr->name = bt_arena_printf(p->arena, "arg%d", index);
    }
    if (!pr->name)
        return bt_diag_nomem(p->diag);
    lb = label(p, pr, index);
    pr->t.is_array = ti.nptr + ndims == 1;
    if (ti.callback_ref) {
        pr->t.is_array = 0;
        pr->t.type = BT_VOID;
        if (ti.nptr + ndims != ti.fn_type || ti.nref)
            *reason = bt_arena_printf(p->arena, "parameter %s points to a function pointer", lb);
        else
            pr->t.callback_ref = ti.callback_ref;
        return 0;
    }
    if (ti.elaborated && strcmp(ti.elaborated, "enum") && !ti.nref && ti.nptr + ndims == 0)
        pr->t.struct_ref = bt_parse_struct_ref(p, ti.spelling); /* by value */
    if ((k = pointer_kind(p, &ti, ndims, pr)) != 0)
        return k < 0 ? -1 : 0;
    if (bt_parse_resolve(&ti, tm, &pr->t) < 0 && !ti.elaborated && !ti.reason && !ti.nref &&
        ti.nptr + ndims < 2)
        *reason = strcmp(ti.spelling, "__builtin_va_list") == 0
                      ? bt_arena_printf(p->arena, "parameter %s is a va_list (variadic)", lb)
                  : p->preprocessed
                      ? bt_arena_printf(p->arena,
                                        "parameter %s has unknown type '%s', which neither the "
                                        "header nor what it includes declares: include the "
                                        "header that does first (cppflags=['-include', "
                                        "'stdio.h'] for FILE)",
                                        lb, ti.spelling)
                      : bt_arena_printf(p->arena, "parameter %s has unknown type '%s'", lb,
                                        ti.spelling);
    if (ti.nref == 1 && ti.nptr + ndims == 0 && !ti.elaborated && !ti.reason && !*reason &&
        is_ref_scalar(&pr->t)) {
        pr->is_ref = 1; /* `T &`: passed as a pointer (bt_note.h: a scalar in and out) */
        ti.nref = 0;
    }
    *reason = param_reason(p, pr, &ti, ndims, eq < r.b, lb, *reason);
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

/* Array x has no size parameter after it: left out for that (BT_RULE_SIZES)
 * unless an annotation says its size (bt_note.h: x->no_size), the first
 * such array's reason kept; the walk goes on, so that the later parameters
 * are read (their sizes, strings, `void *`) for the annotation. */
static int size_missing(Parser *p, BtDecl *d, BtParam *x)
{
    x->no_size = 1;
    if (d->unbindable)
        return 0;
    d->unbindable = x->handle_ptr || x->string_ptr
                        ? bt_arena_printf(
                              p->arena,
                              "parameter '%s' is a pointer to a %s with no size: one %s or an "
                              "array of them (annotate it: {intent: out} for one the function "
                              "writes)",
                              x->name, x->handle_ptr ? "handle" : "string (char **)",
                              x->handle_ptr ? "handle" : "string")
                    : x->unnamed
                        ? bt_arena_printf(p->arena,
                                          "parameter '%s' (unnamed) is a pointer with no size "
                                          "after it: name it and follow it with its "
                                          "'NAME_size', or annotate '%s'",
                                          x->name, x->name)
                        : bt_arena_printf(p->arena,
                                          "parameter '%s' is a pointer with no '%s_size' after it",
                                          x->name, x->name);
    d->unbindable_rule = BT_RULE_SIZES;
    d->sizes_missing = 1;
    return d->unbindable ? 0 : bt_diag_nomem(p->diag);
}

/* The size parameters right after array i (`x_size`, `x_sizeK`; why: each
 * parameter's own reason) marked as its; returns the index past them, with
 * *bad (arena) set where one cannot be a size. */
static int size_params(Parser *p, BtDecl *d, int i, const char *const *why, const char **bad)
{
    const BtParam *x = &d->params[i];
    int j;

    for (j = i + 1; j < d->n_params; j++) {
        BtParam *s = &d->params[j];
        int axis = size_axis(x->name, s->name);
        if (axis == -1)
            break;
        if (axis == -2)
            *bad = bt_arena_printf(p->arena,
                                   "parameter '%s' names an axis of '%s' past the last one "
                                   "bindthem passes ('%s_size%d')",
                                   s->name, x->name, x->name, BT_MAX_SIZE_AXES - 1);
        else if (!why[j] && !is_size_type(&s->t))
            *bad = bt_arena_printf(p->arena, "parameter '%s' (size of '%s') is not an integer",
                                   s->name, x->name);
        if (*bad)
            break;
        s->size_of = i;
        s->size_axis = axis;
    }
    return j;
}

/* Fixed-size array x (BtParam.fixed) with its `x_size` after it when sized:
 * the dialect's array, its bracket's extent no part of it (n_fixed 0), or
 * left out for a multi-dimensional one or one of structs. 0, or -1 when
 * it leaves d out (or out of memory: diag set). */
static int fixed_sized(Parser *p, BtDecl *d, BtParam *x, int sized)
{
    const char *why;

    if (!sized)
        return 0;
    if (x->n_fixed == 1 && !x->t.struct_ref) {
        x->n_fixed = 0;
        return 0;
    }
    why = bt_arena_printf(p->arena,
                          x->n_fixed > 1 ? "parameter '%s' is a multi-dimensional array"
                                         : "parameter '%s' is an array of structs with a size "
                                           "parameter (not bound yet)",
                          x->name);
    if (!why)
        return bt_diag_nomem(p->diag);
    bt_parse_leave_out(d, why, BT_RULE_UNBINDABLE);
    return -1;
}

/* params -> [ 'void' | param (',' param)* ], then the size rule: each
 * array is followed by one or more of its size parameters (a fixed-size
 * array's shape is its size). */
int bt_parse_params(Parser *p, BtDecl *d, const Tmpl *tm)
{
    Range *r = NULL;
    const char **why;
    int n = 0, i, j, k;

    if (split_params(p, &r, &n) < 0)
        return -1;
    if (n == 1 && r[0].b == r[0].a + 1 && is(p, r[0].a, "void"))
        n = 0;
    p->knr_names = n > 0;
    for (i = 0; i < n; i++)
        p->knr_names &= r[i].b == r[i].a + 1 && tok(p, r[i].a)->kind == BT_TOK_IDENT &&
                        !is_any(tok(p, r[i].a), bt_parse_builtin_words);
    d->n_params = n;
    d->params = bt_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *d->params);
    why = bt_arena_alloc(p->arena, (size_t)(n ? n : 1) * sizeof *why);
    if (!d->params || !why)
        return bt_diag_nomem(p->diag);
    for (i = 0; i < n; i++)
        if (parse_param(p, r[i], i, tm, &d->params[i], &why[i]) < 0)
            return -1;
    for (i = 0; i < n && (!d->unbindable || d->sizes_missing); i++) {
        BtParam *x = &d->params[i];
        const char *bad = NULL;
        if (why[i]) { /* a reason of its own outranks a pointer's missing size */
            d->unbindable = why[i];
            d->unbindable_rule = BT_RULE_UNBINDABLE;
            d->sizes_missing = 0;
            break;
        }
        if (!x->t.is_array)
            continue;
        j = size_params(p, d, i, why, &bad);
        if (bad) {
            d->unbindable = bad;
            d->unbindable_rule = BT_RULE_SIZES;
            d->sizes_missing = 0;
            break;
        }
        if (x->n_fixed && (k = fixed_sized(p, d, x, j > i + 1)) < 0)
            break;
        if (x->n_fixed) /* its shape says its size */
            continue;
        if ((x->handle_ptr || x->string_ptr) && j > i + 1) {
            d->unbindable = bt_arena_printf(p->arena,
                                            "parameter '%s' is an array of %s (not "
                                            "bound yet)",
                                            x->name, x->handle_ptr ? "handles" : "strings");
            d->unbindable_rule = BT_RULE_UNBINDABLE;
            d->sizes_missing = 0;
            break;
        }
        if (x->handle_ptr || x->string_ptr) {
            if (size_missing(p, d, x) < 0)
                return -1;
            continue;
        }
        if (j == i + 1 && x->t.tparam < 0 && x->t.type == BT_CHAR && x->t.is_const) {
            x->t.is_array = 0; /* a NUL-terminated string */
            x->t.is_string = 1;
            continue;
        }
        if (j == i + 1 && x->t.tparam < 0 && x->t.type == BT_VOID) {
            x->t.is_array = 0; /* an opaque pointer */
            x->t.is_voidp = 1;
            continue;
        }
        if (x->t.tparam < 0 && x->t.type == BT_VOID) {
            d->unbindable = bt_arena_printf(p->arena, "parameter '%s' is a void pointer", x->name);
            d->unbindable_rule = BT_RULE_SIZES;
            d->sizes_missing = 0;
            break;
        }
        if (j == i + 1 && size_missing(p, d, x) < 0)
            return -1;
    }
    return 0;
}

/* The return type in tokens [a, b) into d->ret; a reason (arena) when it
 * cannot be bound, NULL when it can, or "" for a lone `auto`. */
const char *bt_parse_return_type(Parser *p, BtDecl *d, const Tmpl *tm, int a, int b, int *rc)
{
    TypeInfo ti;

    *rc = bt_parse_type(p, a, b, 0, "function name", &ti);
    if (*rc < 0)
        return NULL;
    d->ret.tparam = -1;
    d->ret.type = BT_VOID;
    expand(p, tm, &ti);
    if (ti.reason)
        return bt_arena_printf(p->arena, "return value has type '%s', %s",
                               ti.alias ? ti.alias : ti.spelling, ti.reason);
    if (ti.callback_ref && p->in_callback)
        return bt_arena_printf(p->arena, "return value is a function pointer ('%s')",
                               ti.alias ? ti.alias : ti.spelling);
    if (ti.callback_ref) { /* its address, as an int (0 for NULL): what a callback parameter
                            * takes as a raw function pointer */
        _Static_assert(sizeof(unsigned long) == sizeof(void (*)(void)),
                       "a function pointer is an unsigned long");
        d->ret.callback_ref = ti.callback_ref;
        d->ret.type = BT_ULONG;
        return NULL;
    }
    if (strcmp(ti.spelling, "auto") == 0 && !ti.nptr && !ti.nref)
        return "";
    if (bt_parse_resolve(&ti, tm, &d->ret) < 0 && !ti.elaborated && !ti.nref && !ti.nptr)
        return bt_arena_printf(p->arena, "unknown type '%s' of return value", ti.spelling);
    if (ti.nref)
        return bt_arena_printf(p->arena, "return value is a reference (%s &)", ti.spelling);
    if (ti.nptr == 1 && !ti.elaborated && !ti.inner_const && strcmp(ti.spelling, "char") == 0 &&
        (ti.is_const || !p->in_callback)) {
        d->ret.is_string = 1; /* `const char *`, `char *`: returned as a str (never freed) */
        return NULL;
    }
    if (is_voidp(&ti, 0) && !p->in_callback) { /* an untyped Handle (or None for NULL) */
        d->ret.handle_ref = p->context ? 0 : bt_parse_handle(p, &ti, tok(p, a)->line);
        *rc = d->ret.handle_ref || p->context ? 0 : -1;
        return NULL;
    }
    if (is_handle(&ti, 0)) {
        d->ret.handle_ref = p->context ? 0 : bt_parse_handle(p, &ti, tok(p, a)->line);
        *rc = d->ret.handle_ref || p->context ? 0 : -1;
        if (d->ret.handle_ref && !p->in_callback) /* a function's, not a callback's */
            p->handles[d->ret.handle_ref - 1].returned = 1;
        return NULL;
    }
    if (ti.nptr)
        return bt_arena_printf(p->arena, "return value is a pointer (%s *)", ti.spelling);
    if (ti.elaborated && strcmp(ti.elaborated, "enum") && !ti.nptr && !ti.nref &&
        (d->ret.struct_ref = bt_parse_struct_ref(p, ti.spelling)) != 0) {
        const char *why = p->structs[d->ret.struct_ref - 1].reason;
        return why ? bt_arena_printf(p->arena, "return value is %s: %s", ti.spelling, why) : NULL;
    }
    if (ti.elaborated)
        return bt_arena_printf(p->arena, "return value has %s type '%s'", ti.elaborated,
                               ti.spelling);
    return NULL;
}
