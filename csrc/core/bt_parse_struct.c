/* bt_parse_struct.c - structs and unions with their fields, laid out as
 * the C ABI lays them out.
 *
 *   body   -> '{' member* '}'
 *   member -> base declarator (',' declarator)* ';'
 *           | ('struct' | 'union') [TAG] '{' member* '}' declarator (',' declarator)* ';'
 *   declarator -> ('*' | cv)* (IDENT ('[' expr ']')* | '(' '*' IDENT ')' '(' balanced ')')
 *
 * (the whole grammar: bt_parse.c). Each field sits at the next multiple of
 * its alignment (a union's at 0), and the size is a multiple of the largest
 * alignment: the System V x86-64 and AAPCS64 rules for what NumPy can
 * describe. A struct bindthem cannot lay out faithfully keeps a reason: a
 * bit-field, a flexible array member, an attribute on it (`packed`,
 * `aligned`: the lexer removed it, so its bytes are looked at), any
 * `#pragma pack`, a field of a type it does not know. */
#include "bt_parse_impl.h"

#include <stdio.h>

#define MAX_STRUCT_SIZE ((size_t)1 << 40)

static BtStruct *add_struct(Parser *p)
{
    if (p->n_structs == p->cap_structs) {
        int cap = p->cap_structs < 8 ? 8 : p->cap_structs * 2;
        BtStruct *v = bt_arena_resize(p->arena, p->structs, (size_t)cap * sizeof *v);
        if (!v) {
            bt_diag_nomem(p->diag);
            return NULL;
        }
        p->structs = v;
        p->cap_structs = cap;
    }
    memset(&p->structs[p->n_structs], 0, sizeof *p->structs);
    return &p->structs[p->n_structs++];
}

/* Whether every field of the body '{' at token open has a reserved name
 * (a leading '_': glibc's FILE): the struct is opaque by convention. */
static int reserved_fields(const Parser *p, int open)
{
    int i, depth = 0, fields = 0;

    for (i = open; !at_end(tok(p, i)); i++) {
        const BtToken *t = tok(p, i);
        if (closer_of(t))
            depth++;
        else if (is_closer(t) && --depth == 0)
            break;
        else if (depth == 1 && t->kind == BT_TOK_IDENT &&
                 (is(p, i + 1, ";") || is(p, i + 1, "[") || is(p, i + 1, ":") ||
                  is(p, i + 1, ","))) {
            if (t->s[0] != '_')
                return 0;
            fields++;
        }
    }
    return fields > 0;
}

/* Whether the source bytes [a, b) hold an attribute the lexer removed. */
static int has_attribute(const char *a, const char *b)
{
    static const char *const words[] = {"__attribute__", "alignas", "_Alignas", "__declspec", NULL};
    int k;

    for (; a < b; a++)
        for (k = 0; words[k]; k++)
            if ((size_t)(b - a) >= strlen(words[k]) && !memcmp(a, words[k], strlen(words[k])))
                return 1;
    return 0;
}

/* The size and alignment of a field of type ti (typedefs expanded) into f;
 * a reason when bindthem cannot lay it out, NULL when it can. */
static const char *field_type(Parser *p, const TypeInfo *ti, BtField *f, size_t *align)
{
    if (ti->nptr || ti->callback_ref) {
        f->is_pointer = 1;
        f->size = *align = sizeof(void *);
        return NULL;
    }
    if (ti->reason || ti->nref)
        return ti->reason ? ti->reason : "a reference";
    if (ti->elaborated && strcmp(ti->elaborated, "enum") != 0) {
        const BtStruct *s;
        if (!(f->struct_ref = bt_parse_struct_laid(p, ti->spelling)))
            return "a struct whose fields are not declared";
        s = &p->structs[f->struct_ref - 1];
        if (s->reason)
            return s->reason;
        f->size = s->size;
        *align = s->align;
        return NULL;
    }
    f->enum_ref = ti->enum_ref;
    if (ti->elaborated || bt_type_lookup(ti->spelling, &f->type) < 0 || f->type == BT_VOID ||
        bt_type_cuda_only(f->type))
        return "a type bindthem does not know";
    f->size = bt_type(f->type)->size;
    *align = bt_type(f->type)->align;
    return NULL;
}

/* ('[' expr ']')* over [i, b) into f's dimensions (f->size multiplied). */
static const char *field_dims(Parser *p, int i, int b, BtField *f)
{
    while (i < b && is(p, i, "[")) {
        int close = i + 1;
        long long n = 0;
        while (close < b && !is(p, close, "]"))
            close++;
        if (close == i + 1)
            return "a flexible array member";
        if (f->n_dims == BT_MAX_FIELD_DIMS || bt_parse_const_expr(p, p->toks.v, i + 1, close, &n) ||
            n <= 0 || (size_t)n > MAX_STRUCT_SIZE / (f->size ? f->size : 1))
            return "an array whose size bindthem cannot evaluate";
        f->dims[f->n_dims++] = n;
        f->size *= (size_t)n;
        i = close + 1;
    }
    return i == b ? NULL : "a declarator bindthem cannot read";
}

/* The extents of the array typedef of field f's type ti (none for a
 * pointer) after its own brackets' (f->size multiplied), or a reason. */
static const char *typedef_dims(const TypeInfo *ti, BtField *f)
{
    for (int k = 0; !ti->nptr && k < ti->n_dims; k++) {
        if (f->n_dims == BT_MAX_FIELD_DIMS ||
            (size_t)ti->dims[k] > MAX_STRUCT_SIZE / (f->size ? f->size : 1))
            return "an array whose size bindthem cannot evaluate";
        f->dims[f->n_dims++] = ti->dims[k];
        f->size *= (size_t)ti->dims[k];
    }
    return NULL;
}

/* Places field f (alignment align) in s. */
static void place(BtStruct *s, const BtField *f, size_t align)
{
    size_t at = s->is_union ? 0 : (s->size + align - 1) / align * align;

    s->fields[s->n_fields] = *f;
    s->fields[s->n_fields++].offset = at;
    if (at + f->size > s->size)
        s->size = at + f->size;
    if (align > s->align)
        s->align = align;
    s->bits = s->size * 8;
}

/* The longest name of a run's field: a longer run's ends in ",..." (its
 * text grows with each bit-field: bounded, a header of many costs linear
 * memory). */
#define BITS_NAME_MAX 200

/* The named bit-field name, in bytes [at, end) of struct s: a new field
 * of its bytes, or the last one grown when it is a run of bit-fields. */
static int bits_field(Parser *p, BtStruct *s, const char *name, size_t at, size_t end)
{
    BtField *f = s->n_fields ? &s->fields[s->n_fields - 1] : NULL;

    if (f && f->bits) {
        if (end > f->offset + f->size)
            f->size = (size_t)(f->dims[0] = (long long)(end - f->offset));
        size_t len = strlen(f->name);
        if (len >= 4 && strcmp(f->name + len - 4, ",...") == 0)
            return 0;
        f->name = len + strlen(name) < BITS_NAME_MAX
                      ? bt_arena_printf(p->arena, "%s,%s", f->name, name)
                      : bt_arena_printf(p->arena, "%s,...", f->name);
        return f->name ? 0 : bt_diag_nomem(p->diag);
    }
    f = &s->fields[s->n_fields++];
    memset(f, 0, sizeof *f);
    f->name = name;
    f->bits = 1;
    f->type = BT_UCHAR;
    f->n_dims = 1;
    f->offset = at;
    f->size = (size_t)(f->dims[0] = (long long)(end - at));
    return 0;
}

/* The bit-field [colon, b) (`: width`) of type ti, named name (NULL: an
 * unnamed one), into struct s, as System V x86-64 and AAPCS64 pack them
 * (GCC's and Clang's layout there): at the next bit, unless its bits would
 * cross a boundary of its type's alignment, then at that boundary; a width
 * 0 only moves to the next boundary. A named one's type counts in the
 * struct's alignment, an unnamed one's does not; a named one's bytes are
 * a field (bits_field). A reason, or NULL. */
static const char *bitfield(Parser *p, BtStruct *s, TypeInfo *ti, const char *name, int colon,
                            int b)
{
    BtField f;
    size_t align = 1, unit, o = s->is_union ? 0 : s->bits;
    long long w = 0;

    memset(&f, 0, sizeof f);
    if (ti->nptr || field_type(p, ti, &f, &align) || f.struct_ref ||
        (!f.enum_ref && !strchr("biu", bt_type(f.type)->kind)))
        return "a bit-field of a type other than an integer";
    if (bt_parse_const_expr(p, p->toks.v, colon + 1, b, &w) || w < 0 ||
        (unsigned long long)w > f.size * 8 || (w == 0 && name))
        return "a bit-field whose width bindthem cannot evaluate";
    unit = align * 8;
    if (w == 0 || o % unit + (size_t)w > f.size * 8)
        o = (o + unit - 1) / unit * unit;
    if (name && bits_field(p, s, name, o / 8, (o + (size_t)w + 7) / 8) < 0)
        return "";
    o += (size_t)w;
    if (name && align > s->align)
        s->align = align;
    if ((o + 7) / 8 > s->size)
        s->size = (o + 7) / 8;
    if (!s->is_union)
        s->bits = o;
    s->bitfields = 1;
    return NULL;
}

/* One declarator [a, b) of a member whose base is ti: a field of struct
 * number si, or a reason. */
static const char *field(Parser *p, int si, const TypeInfo *base, int a, int b)
{
    TypeInfo ti = *base;
    BtField f;
    size_t align = 1;
    const char *why;
    int i = a;

    memset(&f, 0, sizeof f);
    for (; i < b && (is(p, i, "*") || is_any(tok(p, i), bt_parse_cv_words)); i++)
        ti.nptr += is(p, i, "*");
    if (i < b && is(p, i, "(") && is(p, i + 1, "*")) { /* a function pointer */
        ti.nptr = 1;
        i += 2;
        if (tok(p, i)->kind != BT_TOK_IDENT)
            return "a declarator bindthem cannot read";
        f.name = tokdup(p, tok(p, i));
        b = i = i + 1; /* its parameters are not this field's business */
    } else if (i < b && tok(p, i)->kind == BT_TOK_IDENT) {
        f.name = tokdup(p, tok(p, i++));
    } else if (i < b && is(p, i, ":")) {
        return bitfield(p, &p->structs[si], &ti, NULL, i, b);
    } else {
        return "a member without a name";
    }
    if (!f.name) {
        bt_diag_nomem(p->diag);
        return "";
    }
    if (i < b && is(p, i, ":")) {
        const char *why = bitfield(p, &p->structs[si], &ti, f.name, i, b);
        return why ? bt_arena_printf(p->arena, "%s ('%s')", why, f.name) : NULL;
    }
    if (!ti.nptr && ti.n_dims) /* of an array typedef (`mpz_t _mp_seed`): its extents last */
        ti.reason = NULL;
    if ((why = field_type(p, &ti, &f, &align)) || (why = field_dims(p, i, b, &f)) ||
        (why = typedef_dims(&ti, &f)))
        return bt_arena_printf(p->arena, "field '%s': %s", f.name, why);
    place(&p->structs[si], &f, align);
    return NULL;
}

/* The member [m, e) of struct number si (its declarators split at ','). */
static const char *member(Parser *p, int si, int m, int e)
{
    TypeInfo base;
    int i, b;

    if ((is(p, m, "struct") || is(p, m, "union")) &&
        (is(p, m + 1, "{") || (tok(p, m + 1)->kind == BT_TOK_IDENT && is(p, m + 2, "{")))) {
        memset(&base, 0, sizeof base);
        base.elaborated = is(p, m, "struct") ? "struct" : "union";
        if (is(p, m + 1, "{"))
            snprintf(base.spelling, sizeof base.spelling, "%s <anonymous %d>", base.elaborated,
                     ++p->n_anon);
        else
            snprintf(base.spelling, sizeof base.spelling, "%s %.*s", base.elaborated,
                     (int)tok(p, m + 1)->len, tok(p, m + 1)->s);
        if (bt_parse_complete(p, m, base.spelling) < 0)
            return "";
        p->pos = is(p, m + 1, "{") ? m + 1 : m + 2;
        if (bt_parse_skip_balanced(p) < 0)
            return "";
        i = p->pos;
        if (i == e)
            return "an anonymous struct or union member";
    } else {
        i = bt_parse_base_end(p, m);
        if (i == m || bt_parse_type(p, m, i, 0, "type", &base) < 0) {
            bt_diag_init(p->diag);
            return "a member bindthem cannot read";
        }
        bt_parse_apply_typedef(p, &base);
    }
    for (; i < e; i = b + 1) {
        const char *why;
        for (b = i; b < e && !is(p, b, ","); b++)
            if (closer_of(tok(p, b))) {
                p->pos = b;
                if (bt_parse_skip_balanced(p) < 0)
                    return "";
                b = p->pos - 1;
            }
        if ((why = field(p, si, &base, i, b)) != NULL)
            return why;
    }
    return NULL;
}

/* Whether the body [open, close] holds more than fields: a C++ class. */
static int cxx_class(const Parser *p, int open, int close)
{
    static const char *const words[] = {"public",   "private",  "protected", "virtual",
                                        "static",   "template", "using",     "friend",
                                        "operator", "typedef",  NULL};
    int i;

    for (i = open + 1; i < close; i++)
        if (is_any(tok(p, i), words) ||
            (is(p, i, "(") && !is(p, i + 1, "*") && tok(p, i - 1)->kind == BT_TOK_IDENT))
            return 1;
    return 0;
}

/* body -> '{' member* '}' at open into struct number si; close: its '}'. */
static void body(Parser *p, int si, int open, int close)
{
    int m = open + 1, count = 0, i;
    BtStruct *s = &p->structs[si];

    if (cxx_class(p, open, close)) {
        s->reason = "a C++ class (members other than fields)";
        return;
    }
    for (i = open; i < close; i++)
        count += is(p, i, ";") || is(p, i, ",");
    s->fields = bt_arena_alloc(p->arena, (size_t)(count + 1) * sizeof *s->fields);
    if (!s->fields) {
        bt_diag_nomem(p->diag);
        return;
    }
    while (m < close && !p->structs[si].reason) {
        const char *why = NULL;
        int e = m;
        while (e < close && !is(p, e, ";"))
            if (closer_of(tok(p, e))) {
                p->pos = e;
                if (bt_parse_skip_balanced(p) < 0)
                    return;
                e = p->pos;
            } else {
                e++;
            }
        if (e > m)
            why = member(p, si, m, e); /* a nested struct may move p->structs */
        p->structs[si].reason = why;
        m = e + 1;
    }
    s = &p->structs[si];
    if (!s->reason && s->n_fields == 0 && !s->bitfields)
        s->reason = "a struct without fields";
    if (!s->reason && s->size > MAX_STRUCT_SIZE)
        s->reason = "a struct too large";
    if (s->align)
        s->size = (s->size + s->align - 1) / s->align * s->align;
}

/* C++ names a struct by its tag alone (`point p`): the tag of key ("struct
 * point") is a type name, when nothing else has that name (in C no
 * declaration can use the bare tag, so this changes nothing there). */
static int tag_names_type(Parser *p, const char *key)
{
    const char *tag = strchr(key, ' ') + 1;
    Name *n;

    if (tag[0] == '<' || bt_parse_lookup(p, tag))
        return 0;
    if (!(n = bt_parse_declare(p, tag, NAME_TYPE)) ||
        !(n->ti = bt_arena_alloc(p->arena, sizeof *n->ti)))
        return bt_diag_nomem(p->diag);
    memset(n->ti, 0, sizeof *n->ti);
    n->ti->name = -1;
    n->ti->elaborated = strncmp(key, "union", 5) == 0 ? "union" : "struct";
    snprintf(n->ti->spelling, sizeof n->ti->spelling, "%s", key);
    return 0;
}

int bt_parse_complete(Parser *p, int a, const char *key)
{
    char k[sizeof((TypeInfo *)0)->spelling + 2];
    int open = is(p, a + 1, "{") ? a + 1 : a + 2, close, saved = p->pos, end, si;
    BtStruct *s;
    Name *n;
    int opaque = reserved_fields(p, open);

    p->pos = open;
    if (bt_parse_skip_balanced(p) < 0)
        return -1;
    close = p->pos - 1;
    if (!(s = add_struct(p)))
        return -1;
    snprintf(k, sizeof k, "{%s", key);
    if (!(n = bt_parse_declare(p, k, NAME_COMPLETE)))
        return -1;
    si = (int)(n->value = p->n_structs - 1);
    s->key = n->name + 1;
    if (tag_names_type(p, key) < 0) /* (may move p->names: n is not used after it) */
        return -1;
    s->is_union = is(p, a, "union");
    s->opaque = opaque;
    s->line = tok(p, a)->line;
    s->in_header = !p->context;
    for (end = close; !at_end(tok(p, end)) && !is(p, end, ";") && !is(p, end, "{"); end++)
        ; /* its declarators, where an attribute may follow */
    if (++p->depth > MAX_NEST)
        s->reason = "structs nested too deeply";
    else if (p->packed)
        s->reason = "a #pragma pack is in effect";
    else if (has_attribute(tok(p, a)->s, tok(p, end)->s))
        s->reason = "an attribute may change its layout";
    else
        body(p, si, open, close);
    p->depth--;
    p->pos = saved;
    return p->diag->kind == BT_DIAG_NOMEM ? -1 : 0;
}
