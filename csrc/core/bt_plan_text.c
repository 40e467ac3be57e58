/* bt_plan_text.c - a planned overload as C and C++ spell it: its
 * signature, its explicit instantiation, its address as an expression,
 * its types and template arguments (bt_plan.h). The plan's facts, printed;
 * bt_plan.c decides them. */
#include "bt_plan.h"

#include <string.h>

#include "bt_fntype.h"

const char *bt_plan_cname(BtTypeId id)
{
    const BtType *t = bt_type(id);
    return t ? t->cname : "?";
}

const BtEnum *bt_plan_enum(const BtOverload *ov, const BtTypeRef *r)
{
    return r->enum_ref > 0 && ov->enums ? &ov->enums[r->enum_ref - 1] : NULL;
}

const BtStruct *bt_plan_struct(const BtOverload *ov, const BtTypeRef *r)
{
    return r->struct_ref > 0 && ov->header ? &ov->header->structs[r->struct_ref - 1] : NULL;
}

const char *bt_plan_type_name(const BtOverload *ov, const BtTypeRef *r, BtTypeId id)
{
    const BtEnum *e = bt_plan_enum(ov, r);
    const BtStruct *s = bt_plan_struct(ov, r);
    size_t n, k;

    if (s) { /* "struct point" for its tag, else its typedef's name ("z_stream") */
        n = strlen(s->name), k = strlen(s->key);
        return n && (k <= n || strcmp(s->key + k - n, s->name) || s->key[k - n - 1] != ' ')
                   ? s->name
                   : s->key;
    }
    return e && e->name[0] ? e->name : bt_plan_cname(id);
}

/* Whether type ref r is spelled with a '*' before the name: a C string, a
 * struct by pointer. */
static int starred(const BtTypeRef *r) { return r->is_string || (r->struct_ref && r->is_array); }

/* "const double", "color", "const char *", "const struct point *": type
 * ref r of ov (concrete type id) as a declaration spells it before the name. */
static void put_type(BtBuf *b, const BtOverload *ov, const BtTypeRef *r, BtTypeId id)
{
    bt_buf_puts(b, r->is_const ? "const " : "");
    bt_buf_puts(b, bt_plan_type_name(ov, r, id));
    bt_buf_puts(b, starred(r) ? " *" : "");
}

void bt_plan_put_targ(BtBuf *b, const BtTArg *a)
{
    char kind = bt_type(a->type)->kind;

    if (!a->is_value)
        bt_buf_puts(b, bt_plan_cname(a->type));
    else if (kind == 'b')
        bt_buf_puts(b, a->mag ? "true" : "false");
    else if (a->type == BT_CHAR && a->mag >= 32 && a->mag < 127 && a->mag != '\'' && a->mag != '\\')
        bt_buf_printf(b, "'%c'", (int)a->mag);
    else if (a->neg && a->mag > 0x7fffffffffffffffULL) /* no literal spells -2^63 */
        bt_buf_puts(b, "(-9223372036854775807 - 1)");
    else
        bt_buf_printf(b, "%s%llu%s", a->neg ? "-" : "", a->mag,
                      kind == 'u' && a->mag > 0x7fffffffULL ? "u" : "");
}

void bt_plan_put_name(BtBuf *b, const BtDecl *d, const BtTArg *targs)
{
    int i;

    for (i = 0; i < d->n_ns; i++) {
        bt_buf_puts(b, d->ns[i]);
        bt_buf_puts(b, "::");
    }
    bt_buf_puts(b, d->name);
    if (!targs || !d->n_tparams)
        return;
    bt_buf_putc(b, '<');
    for (i = 0; i < d->n_tparams; i++) {
        bt_buf_puts(b, i ? ", " : "");
        bt_plan_put_targ(b, &targs[i]);
    }
    bt_buf_putc(b, '>');
}

void bt_plan_put_instantiation(BtBuf *b, const BtOverload *ov)
{
    bt_buf_puts(b, ov->decl->is_global ? "template __global__ " : "template ");
    bt_buf_puts(b, ov->signature);
    bt_buf_putc(b, ';');
}

void bt_plan_put_address(BtBuf *b, const BtOverload *ov)
{
    const BtDecl *d = ov->decl;
    int i;

    bt_buf_puts(b, "static_cast<");
    bt_buf_puts(b, d->ret.is_string && d->ret.is_const ? "const " : "");
    bt_buf_puts(b, bt_plan_type_name(ov, &d->ret, ov->ret));
    bt_buf_puts(b, d->ret.is_array || d->ret.is_string ? " *" : "");
    bt_buf_puts(b, " (*)(");
    for (i = 0; i < d->n_params; i++) {
        const BtTypeRef *t = &d->params[i].t;
        int ptr = t->is_array || t->is_string;
        bt_buf_puts(b, i ? ", " : "");
        bt_buf_puts(b, t->is_const && ptr ? "const " : ""); /* a by-value const is no part of it */
        bt_buf_puts(b, bt_plan_type_name(ov, t, ov->ptypes[i]));
        bt_buf_puts(b, ptr ? " *" : "");
    }
    bt_buf_puts(b, ")>(&::");
    bt_plan_put_name(b, d, ov->targs);
    bt_buf_putc(b, ')');
}

/* Fixed-size array parameter pa as declared, its shape in brackets:
 * "double m[3][3]". */
static void put_fixed(BtBuf *b, const BtOverload *ov, const BtParam *pa, BtTypeId id)
{
    bt_buf_puts(b, pa->t.is_const ? "const " : "");
    bt_buf_puts(b, bt_plan_type_name(ov, &pa->t, id));
    bt_buf_putc(b, ' ');
    bt_buf_puts(b, pa->name ? pa->name : "");
    for (int k = 0; k < pa->n_fixed; k++)
        bt_buf_printf(b, "[%lld]", pa->fixed[k]);
}

/* A handle's, a `void *`'s or a pointer to a string's type r (handle_ptr
 * or string_ptr: pointed to by address) as C spells it, its '*'s
 * included: "struct gzFile_s *", "void *", "struct sqlite3 **", "const
 * char **"; 0 when r is none of them. */
static int put_pointer(BtBuf *b, const BtOverload *ov, const BtTypeRef *r, int by_address)
{
    const BtHeader *h = ov->header;

    if (!r->handle_ref && !r->is_voidp && !(by_address && r->type == BT_CHAR))
        return 0;
    bt_buf_puts(b, r->is_const ? "const " : "");
    bt_buf_puts(b, r->handle_ref && h && r->handle_ref <= h->n_handles
                       ? h->handles[r->handle_ref - 1].key
                   : r->handle_ref || r->is_voidp ? "void"
                                                  : "char");
    bt_buf_puts(b, by_address ? " **" : " *");
    return 1;
}

const char *bt_plan_signature(const BtOverload *ov, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    const char *s;
    BtBuf b;
    int i;

    bt_buf_init(&b);
    if (!put_pointer(&b, ov, &d->ret, 0)) {
        put_type(&b, ov, &d->ret, ov->ret);
        bt_buf_puts(&b, d->ret.is_array ? " *" : d->ret.is_string ? "" : " ");
    }
    bt_plan_put_name(&b, d, ov->targs);
    bt_buf_putc(&b, '(');
    for (i = 0; i < d->n_params; i++) {
        const BtParam *pa = &d->params[i];
        if (i)
            bt_buf_puts(&b, ", ");
        if (bt_fntype_of(ov, &pa->t)) { /* "int (*f)(int)" */
            bt_fntype_put(&b, ov, bt_fntype_of(ov, &pa->t)->sig, pa->name ? pa->name : "");
            continue;
        }
        if (pa->n_fixed) { /* "const unsigned char uu[16]", "__mpz_struct arg0[1]" */
            put_fixed(&b, ov, pa, ov->ptypes[i]);
            continue;
        }
        if (put_pointer(&b, ov, &pa->t, pa->handle_ptr || pa->string_ptr)) {
            bt_buf_puts(&b, pa->name ? pa->name : "");
            continue;
        }
        put_type(&b, ov, &pa->t, ov->ptypes[i]);
        if (pa->name && *pa->name) {
            bt_buf_puts(&b, starred(&pa->t) ? "" : " "); /* "const char *s" */
            bt_buf_puts(&b, pa->name);
        }
        if (pa->t.is_array && !starred(&pa->t))
            bt_buf_puts(&b, "[]");
    }
    bt_buf_putc(&b, ')');
    s = b.failed ? NULL : bt_arena_strdup(arena, bt_buf_str(&b));
    bt_buf_free(&b);
    return s;
}
