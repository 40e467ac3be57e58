/* bt_parse_typedef.c - typedefs and enums, and the names they declare.
 *
 *   typedef    -> 'typedef' base declarator (',' declarator)* ';'
 *               | 'using' IDENT '=' type ';'
 *   base       -> type | enum | ('struct' | 'union') [TAG] '{' balanced '}'
 *   declarator -> ('*' | cv)* (IDENT ['[' expr ']'] | '(' '*' IDENT ')' '(' balanced ')')
 *               | IDENT '(' balanced ')'
 *   enum       -> 'enum' ['class' | 'struct'] [TAG] [':' type] '{' [member (',' member)* [',']] '}'
 *   member     -> IDENT ['=' expr]
 *
 * (the whole grammar: bt_parse.c). A typedef stands for its type wherever
 * its name is used: `uLong` is `unsigned long`, `typedef double fftw_complex[2]`
 * a complex double (the layout C99 and FFTW give it), an enum its integer
 * type. What bindthem cannot pass (a function pointer, an array) keeps a
 * reason that a parameter of that type gives. Typedefs it cannot read are
 * skipped: a parameter using one is then of an unknown type. */
#include "bt_parse_impl.h"

#include <limits.h>
#include <stdio.h>

static int declare_type(Parser *p, const char *name, const TypeInfo *ti)
{
    Name *n = bt_parse_declare(p, name, NAME_TYPE);

    if (!n || !(n->ti = bt_arena_alloc(p->arena, sizeof *n->ti)))
        return bt_diag_nomem(p->diag);
    *n->ti = *ti;
    n->ti->name = -1;
    return 0;
}

/* ---- enums ---- */

static BtEnum *add_enum(Parser *p)
{
    if (p->n_enums == p->cap_enums) {
        int cap = p->cap_enums < 8 ? 8 : p->cap_enums * 2;
        BtEnum *v = bt_arena_resize(p->arena, p->enums, (size_t)cap * sizeof *v);
        if (!v) {
            bt_diag_nomem(p->diag);
            return NULL;
        }
        p->enums = v;
        p->cap_enums = cap;
    }
    memset(&p->enums[p->n_enums], 0, sizeof *p->enums);
    return &p->enums[p->n_enums++];
}

/* The integer type GCC gives an enum without a fixed one: unsigned int when
 * no member is negative, else int; long (unsigned long) when that is too
 * narrow. */
static BtTypeId enum_type(const BtEnum *e)
{
    long long lo = 0, hi = 0;
    int i;

    for (i = 0; i < e->n_members; i++) {
        lo = e->members[i].value < lo ? e->members[i].value : lo;
        hi = e->members[i].value > hi ? e->members[i].value : hi;
    }
    if (lo >= 0)
        return hi <= UINT_MAX ? BT_UINT : BT_ULONG;
    return lo >= INT_MIN && hi <= INT_MAX ? BT_INT : BT_LONG;
}

/* Every member 0 or a distinct power of two, at least three of them not 0
 * (0, 1, 2 is a sequence as much as flags: checked as a sequence). */
static int is_flags(const BtEnum *e)
{
    unsigned long long seen = 0;
    int i, bits = 0;

    for (i = 0; i < e->n_members; i++) {
        long long v = e->members[i].value;
        if (v < 0 || (v & (v - 1)) != 0)
            return 0;
        if (v == 0)
            continue;
        if (seen & (unsigned long long)v)
            return 0;
        seen |= (unsigned long long)v;
        bits++;
    }
    return bits >= 3;
}

/* member -> IDENT ['=' expr], at *i; the next value after it in *next. */
static int enum_member(Parser *p, BtEnum *e, int *i, int close, long long *next)
{
    int a = *i, b = a + 1;
    BtEnumMember *m;
    Name *n;

    if (tok(p, a)->kind != BT_TOK_IDENT)
        return 1;
    while (b < close && !is(p, b, ","))
        b++;
    if (b > a + 1 && (!is(p, a + 1, "=") || bt_parse_const_expr(p, p->toks.v, a + 2, b, next)))
        return 1;
    m = &e->members[e->n_members++];
    if (!(m->name = tokdup(p, tok(p, a))) || !(n = bt_parse_declare(p, m->name, NAME_VALUE)))
        return bt_diag_nomem(p->diag);
    m->value = n->value = *next;
    if (*next == LLONG_MAX)
        return 1;
    ++*next;
    *i = b < close ? b + 1 : b;
    return 0;
}

/* '{' [member (',' member)* [',']] '}' at *i into e. 0, 1 when a member's
 * value is not a constant bindthem can evaluate, or -1. */
static int enum_body(Parser *p, BtEnum *e, int *i)
{
    int close, open = *i, count = 0, k, r;
    long long next = 0;

    p->pos = open;
    if (bt_parse_skip_balanced(p) < 0)
        return -1;
    close = p->pos - 1;
    for (k = open + 1; k < close; k++)
        count += is(p, k, ",");
    e->members = bt_arena_alloc(p->arena, (size_t)(count + 1) * sizeof *e->members);
    if (!e->members)
        return bt_diag_nomem(p->diag);
    for (k = open + 1; k < close;)
        if ((r = enum_member(p, e, &k, close, &next)) != 0)
            return r;
    *i = close + 1;
    return 0;
}

/* 'enum' ['class' | 'struct'] [TAG] [':' type]; the tag's token or -1. */
static int enum_head(const Parser *p, int *i, int *fixed, int *base_a, int *base_b)
{
    int tag = -1;

    ++*i;
    if (is(p, *i, "class") || is(p, *i, "struct"))
        ++*i;
    if (tok(p, *i)->kind == BT_TOK_IDENT)
        tag = (*i)++;
    *fixed = is(p, *i, ":");
    if (*fixed) {
        *base_a = ++*i;
        while (!at_end(tok(p, *i)) && !is(p, *i, "{") && !is(p, *i, ";"))
            ++*i;
        *base_b = *i;
    }
    return tag;
}

int bt_parse_enum(Parser *p, int a, int *end, int *ref)
{
    int i = a, fixed, ba = 0, bb = 0, tag, saved = p->pos, r;
    TypeInfo base;
    BtEnum *e;

    tag = enum_head(p, &i, &fixed, &ba, &bb);
    if (!is(p, i, "{"))
        return 1;
    p->pos = i;
    if (bt_parse_skip_balanced(p) < 0)
        return -1;
    *end = p->pos;
    *ref = 0;
    if (!(e = add_enum(p)))
        return -1;
    e->line = tok(p, tag >= 0 ? tag : a)->line;
    e->in_header = !p->context;
    e->name = tag >= 0 ? tokdup(p, tok(p, tag)) : "";
    if (!e->name)
        return bt_diag_nomem(p->diag);
    r = enum_body(p, e, &i);
    p->pos = saved;
    if (r == 0 && fixed &&
        (bt_parse_type(p, ba, bb, 0, "'{'", &base) < 0 || base.elaborated ||
         bt_type_lookup(base.spelling, &e->type) < 0 || bt_type(e->type)->kind == 'f'))
        r = 1;
    else if (r == 0 && !fixed)
        e->type = enum_type(e);
    if (r != 0) { /* a member bindthem cannot evaluate: the enum is not a type it knows */
        p->n_enums--;
        if (r > 0)
            bt_diag_init(p->diag);
        return r < 0 ? -1 : 0;
    }
    e->is_flags = is_flags(e);
    *ref = p->n_enums;
    if (tag >= 0) {
        char key[sizeof base.spelling];
        memset(&base, 0, sizeof base);
        snprintf(key, sizeof key, "enum %s", e->name);
        snprintf(base.spelling, sizeof base.spelling, "%s", bt_type(e->type)->cname);
        base.enum_ref = *ref;
        if (declare_type(p, key, &base) < 0)
            return -1;
        /* C++ names the type by its tag alone (`color c`); in C no declaration
         * can use the bare tag, so this changes nothing there */
        if (!bt_parse_lookup(p, e->name) && declare_type(p, e->name, &base) < 0)
            return -1;
    }
    return 0;
}

/* ---- typedefs ---- */

/* The extents of `typedef T NAME[n][m]` (its brackets, tokens [lb, rb]),
 * outermost first, before T's own where T is an array typedef too, into
 * ti->dims: a fixed-size array a parameter may be (bt_parse_param.c). 0, or
 * 1 when an extent is no positive integer constant expression, T is a
 * pointer or another type bindthem cannot pass, or they are too many. */
static int array_extents(Parser *p, TypeInfo *ti, int lb, int rb)
{
    long long dims[BT_MAX_FIXED_DIMS];
    int n = 0, i = lb, save = p->pos, r = 0;

    if (ti->nptr || ti->nref || (ti->reason && !ti->n_dims) || ti->callback_ref)
        return 1;
    while (i <= rb && r == 0) {
        p->pos = i;
        if (!is(p, i, "[") || bt_parse_skip_balanced(p) < 0 || n == BT_MAX_FIXED_DIMS ||
            bt_parse_const_expr(p, p->toks.v, i + 1, p->pos - 1, &dims[n]) || dims[n] <= 0)
            r = 1;
        n++;
        i = p->pos;
    }
    p->pos = save;
    if (r || i != rb + 1 || n + ti->n_dims > BT_MAX_FIXED_DIMS) {
        bt_diag_init(p->diag);
        return 1;
    }
    memmove(ti->dims + n, ti->dims, sizeof *ti->dims * (size_t)ti->n_dims);
    memcpy(ti->dims, dims, sizeof *dims * (size_t)n);
    ti->n_dims += n;
    return 0;
}

/* What `typedef T NAME[n]` stands for: a complex number for T[2] with T
 * a type the table has a complex of, float, double or long double (C99's
 * and FFTW's layout: fftwl_complex), else a reason. */
static void array_typedef(Parser *p, TypeInfo *ti, int lb, int rb)
{
    long long n = 0;
    BtTypeId part;
    int c, ref;

    if (rb == lb + 2 && !bt_parse_const_expr(p, p->toks.v, lb + 1, rb, &n) && n == 2 && !ti->nptr &&
        !ti->elaborated && bt_type_lookup(ti->spelling, &part) == 0 &&
        (c = bt_type_complex_of(part)) >= 0) {
        snprintf(ti->spelling, sizeof ti->spelling, "%s", bt_type((BtTypeId)c)->cname);
        return;
    }
    if (array_extents(p, ti, lb, rb) != 0)
        ti->n_dims = 0;
    else if (ti->elaborated && (ref = bt_parse_struct_laid(p, ti->spelling)) != 0)
        p->structs[ref - 1].held = 1; /* `typedef __mpz_struct mpz_t[1]` */
    ti->reason = "an array type";
}

/* declarator -> ('*' | cv)* (IDENT ['[' expr ']'] | '(' '*' IDENT ')' '(' ... ')')
 *             | IDENT '(' ... ')'
 * over [a, b), on top of base; records the name. 0, 1 when not read, -1. */
static int declarator(Parser *p, int a, int b, const TypeInfo *base, int ret_a)
{
    TypeInfo ti = *base;
    const BtToken *nt;
    int i = a;

    for (; i < b && (is(p, i, "*") || is_any(tok(p, i), bt_parse_cv_words)); i++)
        ti.nptr += is(p, i, "*");
    if (i < b && is(p, i, "(") && is(p, i + 1, "*")) { /* (*NAME)(...) */
        char name[256];
        int close = bt_parse_find_top(p, i + 1, b, ")");
        nt = tok(p, i + 2);
        if (nt->kind != BT_TOK_IDENT || close != i + 3 || !is(p, close + 1, "("))
            return 1;
        snprintf(name, sizeof name, "%.*s", (int)nt->len, nt->s);
        memset(&ti, 0, sizeof ti);
        snprintf(ti.spelling, sizeof ti.spelling, "%s", name);
        if (ret_a < 0)
            ti.reason = "a function pointer whose return type bindthem cannot read";
        else if (bt_parse_callback(p, ret_a, i, close + 1, name, &ti.callback_ref) < 0)
            return -1;
        p->pos = close + 1;
        if (bt_parse_skip_balanced(p) < 0 || p->pos != b)
            return p->diag->kind == BT_DIAG_NOMEM ? -1 : 1;
        return declare_type(p, name, &ti);
    } else {
        nt = tok(p, i);
        if (i + 1 < b && is(p, i + 1, "(")) { /* a function type: a pointer to it is a callback */
            char name[256];
            if (nt->kind != BT_TOK_IDENT || ret_a < 0)
                return 1;
            snprintf(name, sizeof name, "%.*s", (int)nt->len, nt->s);
            memset(&ti, 0, sizeof ti);
            snprintf(ti.spelling, sizeof ti.spelling, "%s", name);
            ti.fn_type = 1;
            if (bt_parse_callback(p, ret_a, i, i + 1, name, &ti.callback_ref) < 0)
                return -1;
            p->pos = i + 1;
            if (bt_parse_skip_balanced(p) < 0 || p->pos != b)
                return p->diag->kind == BT_DIAG_NOMEM ? -1 : 1;
            return declare_type(p, name, &ti);
        } else if (i + 1 < b && is(p, i + 1, "["))
            array_typedef(p, &ti, i + 1, b - 1);
        else if (i + 1 != b)
            return 1;
    }
    /* (C++'s character types and bool are C's typedefs: declared as such, each the type
     * its C library names) */
    if (nt->kind != BT_TOK_IDENT || bt_parse_type_keyword(nt)) {
        return 1;
    } else {
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)nt->len, nt->s);
        if (!ti.nptr && !ti.elaborated && !ti.reason && strcmp(ti.spelling, "void") == 0) {
            /* `typedef void BZFILE;`: a pointer to it is a handle of its own type */
            ti.elaborated = "void";
            snprintf(ti.spelling, sizeof ti.spelling, "void %.240s", name);
        }
        if (ti.enum_ref && !ti.nptr && !p->enums[ti.enum_ref - 1].name[0] &&
            !(p->enums[ti.enum_ref - 1].name = tokdup(p, nt))) /* typedef enum {...} NAME */
            return bt_diag_nomem(p->diag);
        return declare_type(p, name, &ti);
    }
}

/* The base of a typedef at a, into *base; *i: its first declarator. */
static int typedef_base(Parser *p, int a, int *i, TypeInfo *base)
{
    int r, e, ref, a0 = a;

    memset(base, 0, sizeof *base);
    base->name = -1;
    while (is_any(tok(p, a), bt_parse_cv_words))
        base->is_const |= is(p, a++, "const");
    if (is(p, a, "enum") && (r = bt_parse_enum(p, a, &e, &ref)) <= 0) {
        if (r < 0 || !ref)
            return r < 0 ? -1 : 1;
        snprintf(base->spelling, sizeof base->spelling, "%s",
                 bt_type(p->enums[ref - 1].type)->cname);
        base->enum_ref = ref;
        *i = e;
        return 0;
    }
    if ((is(p, a, "struct") || is(p, a, "union")) &&
        (is(p, a + 1, "{") || (tok(p, a + 1)->kind == BT_TOK_IDENT && is(p, a + 2, "{")))) {
        int has_tag = !is(p, a + 1, "{");
        base->elaborated = is(p, a, "struct") ? "struct" : "union";
        if (has_tag)
            snprintf(base->spelling, sizeof base->spelling, "%s %.*s", base->elaborated,
                     (int)tok(p, a + 1)->len, tok(p, a + 1)->s);
        else /* each its own type */
            snprintf(base->spelling, sizeof base->spelling, "%s <anonymous %d>", base->elaborated,
                     ++p->n_anon);
        if (bt_parse_complete(p, a, base->spelling) < 0)
            return -1;
        p->pos = a + 1 + has_tag;
        if (bt_parse_skip_balanced(p) < 0)
            return -1;
        *i = p->pos;
        return 0;
    }
    e = bt_parse_base_end(p, a0);
    if (e == a0 || bt_parse_type(p, a0, e, 0, "type", base) < 0) {
        bt_diag_init(p->diag);
        return 1;
    }
    bt_parse_apply_typedef(p, base);
    *i = e;
    return 0;
}

int bt_parse_typedef(Parser *p)
{
    int a = p->pos + 1, i, b, r, ret_a;
    TypeInfo base;

    if (is(p, p->pos, "using")) { /* using NAME = type; */
        if (tok(p, a)->kind != BT_TOK_IDENT || !is(p, a + 1, "="))
            return 1;
        b = bt_parse_find_top(p, a + 2, p->toks.n - 1, ";");
        if (bt_parse_type(p, a + 2, b, 0, "';'", &base) < 0) {
            bt_diag_init(p->diag);
            return 1;
        }
        bt_parse_apply_typedef(p, &base);
        r = declarator(p, a, a + 1, &base, -1);
        p->pos = r == 0 ? b + 1 : p->pos;
        return r;
    }
    if ((r = typedef_base(p, a, &i, &base)) != 0)
        return r;
    ret_a = bt_parse_base_end(p, a) == i ? a
                                         : -1; /* no body: the return type's tokens start at a */
    for (;;) {                                 /* declarators, up to ';' */
        b = i;
        while (!at_end(tok(p, b)) && !is(p, b, ",") && !is(p, b, ";"))
            if (closer_of(tok(p, b))) {
                p->pos = b;
                if (bt_parse_skip_balanced(p) < 0)
                    return -1;
                b = p->pos;
            } else {
                b++;
            }
        if (at_end(tok(p, b)) || (r = declarator(p, i, b, &base, ret_a)) != 0)
            return r < 0 ? -1 : 1;
        i = b + 1;
        if (is(p, b, ";")) {
            p->pos = i;
            return 0;
        }
    }
}

/* ---- handle types ---- */

/* Whether name n is the bare tag of key ("point" of "struct point"), which
 * C++ makes a type name: no better name than the tag itself. */
static int is_tag_of(const Name *n, const char *key)
{
    const char *sp = strchr(key, ' ');
    return sp && strcmp(n->name, sp + 1) == 0;
}

/* Each handle type's Python name: a typedef of it (z_stream, FILE), else a
 * typedef of the pointer to it (gzFile, fftw_plan), else its tag; a name
 * without a leading '_' first, then the first typedef read. */
static void name_handles(Parser *p)
{
    int *rank = bt_arena_alloc(p->arena, (size_t)(p->n_handles + 1) * sizeof *rank), i;

    for (i = 0; i < p->n_handles; i++) {
        const char *k = p->handles[i].key, *sp = strchr(k, ' ');
        p->handles[i].name = sp ? sp + 1 : k;
        if (rank)
            rank[i] = 0;
    }
    for (i = 0; rank && i < p->n_names; i++) {
        const Name *n = &p->names[i], *h;
        char key[sizeof n->ti->spelling + 2];
        int r;
        if (n->kind != NAME_TYPE || !n->ti->elaborated || n->ti->nptr > 1 || n->ti->reason ||
            n->name[0] == ' ' || !strncmp(n->name, "enum ", 5) || strchr(n->name, ' '))
            continue;
        snprintf(key, sizeof key, " *%s", n->ti->spelling);
        if (!(h = bt_parse_lookup(p, key)) || h->kind != NAME_HANDLE ||
            is_tag_of(n, n->ti->spelling))
            continue;
        r = (n->ti->nptr ? 2 : 4) + (n->name[0] != '_'); /* FILE before __FILE */
        if (r > rank[h->value]) {
            rank[h->value] = r;
            p->handles[h->value].name = n->name;
        }
    }
}

static void by_pointer(Parser *p, BtDecl *d)
{
    int k;

    for (k = 0; k < d->n_params; k++) {
        BtTypeRef *t = &d->params[k].t;
        const BtHandleType *h;
        if (!t->handle_ref)
            continue;
        h = &p->handles[t->handle_ref - 1];
        if (!h->complete || (h->returned && !p->structs[bt_parse_struct_laid(p, h->key) - 1].held))
            continue;
        t->struct_ref = bt_parse_struct_laid(p, h->key); /* laid out: complete says so */
        t->handle_ref = 0;
        t->is_array = 1;
    }
}

/* A pointer to a struct whose fields the header declares and that no
 * function returns is a struct passed by pointer (a record of its dtype),
 * not a handle; one bindthem cannot lay out (a bit-field, a #pragma pack, a
 * field of a type it does not know) is a handle: its fields are never
 * read, the pointer only passed (its by-value uses stay out). */
static void structs_by_pointer(Parser *p)
{
    int i;

    for (i = 0; i < p->n_handles; i++) {
        int ref = bt_parse_struct_laid(p, p->handles[i].key);
        p->handles[i].complete = ref && !p->structs[ref - 1].reason &&
                                 (!p->structs[ref - 1].opaque || p->structs[ref - 1].held);
    }
    for (i = 0; i < p->n_decls + p->n_callbacks; i++)
        by_pointer(p, i < p->n_decls ? &p->decls[i] : p->callbacks[i - p->n_decls].sig);
}

static void renumber(BtTypeRef *t, const int *map)
{
    if (t->handle_ref)
        t->handle_ref = map[t->handle_ref - 1];
}

/* Handle types only structs-by-pointer used are no handles: dropped. */
static void drop_unused_handles(Parser *p)
{
    int *map = bt_arena_alloc(p->arena, (size_t)(p->n_handles + 1) * sizeof *map), i, k, n = 0;

    if (!map)
        return;
    for (i = 0; i < p->n_handles; i++) {
        const BtHandleType *h = &p->handles[i];
        map[i] = h->complete && !h->returned ? 0 : ++n;
        if (map[i])
            p->handles[map[i] - 1] = *h;
    }
    for (i = 0; i < p->n_decls; i++) {
        renumber(&p->decls[i].ret, map);
        for (k = 0; k < p->decls[i].n_params; k++)
            renumber(&p->decls[i].params[k].t, map);
    }
    for (i = 0; i < p->n_callbacks; i++) {
        BtDecl *sig = p->callbacks[i].sig;
        renumber(&sig->ret, map);
        for (k = 0; k < sig->n_params; k++)
            renumber(&sig->params[k].t, map);
    }
    p->n_handles = n;
}

/* Each struct's Python name: a typedef of it (without a leading '_' first),
 * else its tag. */
static void name_structs(Parser *p)
{
    int *rank = bt_arena_alloc(p->arena, (size_t)(p->n_structs + 1) * sizeof *rank), i;

    for (i = 0; i < p->n_structs; i++) {
        const char *sp = strchr(p->structs[i].key, ' ');
        p->structs[i].name = sp ? sp + 1 : p->structs[i].key;
        if (rank)
            rank[i] = 0;
    }
    for (i = 0; rank && i < p->n_names; i++) {
        const Name *n = &p->names[i];
        int ref, r;
        if (n->kind != NAME_TYPE || !n->ti->elaborated || n->ti->nptr || n->ti->reason ||
            strchr(n->name, ' ') || !(ref = bt_parse_struct_laid(p, n->ti->spelling)) ||
            is_tag_of(n, n->ti->spelling))
            continue;
        r = 1 + (n->name[0] != '_');
        if (r > rank[ref - 1]) {
            rank[ref - 1] = r;
            p->structs[ref - 1].name = n->name;
        }
    }
}

int bt_parse_finish_names(Parser *p, BtHeader *out)
{
    name_handles(p);
    name_structs(p);
    structs_by_pointer(p);
    drop_unused_handles(p);
    out->enums = p->enums;
    out->n_enums = p->n_enums;
    out->handles = p->handles;
    out->n_handles = p->n_handles;
    out->callbacks = p->callbacks;
    out->n_callbacks = p->n_callbacks;
    out->structs = p->structs;
    out->n_structs = p->n_structs;
    return p->arena->failed ? bt_diag_nomem(p->diag) : 0;
}
