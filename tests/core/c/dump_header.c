/* dump_header.c - prints what bt_parse_header reads from a header, for
 * golden tests: `dump_header FILE`. Exits 1 with the formatted diagnostic
 * on an error.
 *
 * Format, one block per declaration:
 *   decl NAME @LINE:COL
 *     ns: a::b | -
 *     flags: extern_c inline static global device | -
 *     tparams: I, T | -
 *     return: TYPE
 *     param NAME: TYPE [size_of=K [axis=A]] [= DEFAULT] @LINE:COL
 *     unbindable: REASON          (only when unbindable)
 *     doc:                        (then each line as "    | text", "    |" if blank)
 * where TYPE is [const ](cname|tparam:T|std::complex<tparam:T>)[ []], then a
 * kind where the type has one: ` string`, ` void*`, ` enum=NAME`,
 * ` handle=NAME`, ` callback=NAME`, ` struct=NAME`. After the declarations:
 *   enum NAME TYPE [flags] [included] @LINE, then "  MEMBER = VALUE" lines
 *   const NAME = VALUE | "TEXT" @LINE
 *   handle NAME (KEY) [complete] [returned]
 *   callback NAME: ok | REASON, then its return and params as above
 *   struct NAME (KEY) size=S align=A [union] | REASON, then
 *     "  field NAME @OFFSET size=S [*] [TYPE] [dims=DxD]" lines */
#include <stdio.h>
#include <stdlib.h>

#include "bt_parse.h"
#include "driver.h"

static const BtHeader *header; /* the one being printed: what refs index */

static void print_type(const BtDecl *d, const BtTypeRef *t)
{
    if (t->is_const)
        printf("const ");
    if (t->is_complex_of_tparam)
        printf("std::complex<tparam:%s>", d->tparams[t->tparam]);
    else if (t->tparam >= 0)
        printf("tparam:%s", d->tparams[t->tparam]);
    else
        printf("%s", bt_type(t->type)->cname);
    if (t->is_array)
        printf(" []");
    if (t->is_string)
        printf(" string");
    if (t->is_voidp)
        printf(" void*");
    if (t->enum_ref)
        printf(" enum=%s", header->enums[t->enum_ref - 1].name);
    if (t->handle_ref)
        printf(" handle=%s", header->handles[t->handle_ref - 1].name);
    if (t->callback_ref)
        printf(" callback=%s", header->callbacks[t->callback_ref - 1].name);
    if (t->struct_ref)
        printf(" struct=%s", header->structs[t->struct_ref - 1].name);
}

static void print_signature(const BtDecl *d)
{
    int i;

    printf("  return: ");
    print_type(d, &d->ret);
    printf("\n");
    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        printf("  param %s: ", p->name);
        print_type(d, &p->t);
        if (p->size_of >= 0)
            printf(" size_of=%d", p->size_of);
        if (p->size_axis > 0)
            printf(" axis=%d", p->size_axis);
        if (p->defval)
            printf(" = %s", p->defval);
        printf(" @%d:%d\n", p->line, p->col);
    }
}

static void print_names(const BtHeader *h)
{
    int i, k;

    for (i = 0; i < h->n_enums; i++) {
        const BtEnum *e = &h->enums[i];
        printf("enum %s %s%s%s @%d\n", e->name[0] ? e->name : "-", bt_type(e->type)->cname,
               e->is_flags ? " flags" : "", e->in_header ? "" : " included", e->line);
        for (k = 0; k < e->n_members; k++)
            printf("  %s = %lld\n", e->members[k].name, e->members[k].value);
    }
    for (i = 0; i < h->n_consts; i++) {
        const BtConst *c = &h->consts[i];
        if (c->is_string)
            printf("const %s = \"%s\" @%d\n", c->name, c->text, c->line);
        else
            printf("const %s = %lld @%d\n", c->name, c->value, c->line);
    }
    for (i = 0; i < h->n_handles; i++)
        printf("handle %s (%s)%s%s\n", h->handles[i].name, h->handles[i].key,
               h->handles[i].complete ? " complete" : "",
               h->handles[i].returned ? " returned" : "");
    for (i = 0; i < h->n_callbacks; i++) {
        const BtDecl *sig = h->callbacks[i].sig;
        printf("callback %s: %s\n", h->callbacks[i].name, sig->unbindable ? sig->unbindable : "ok");
        print_signature(sig);
    }
    for (i = 0; i < h->n_structs; i++) {
        const BtStruct *s = &h->structs[i];
        printf("struct %s (%s)", s->name, s->key);
        if (s->reason) {
            printf(": %s\n", s->reason);
            continue;
        }
        printf(" size=%zu align=%zu%s\n", s->size, s->align, s->is_union ? " union" : "");
        for (k = 0; k < s->n_fields; k++) {
            const BtField *f = &s->fields[k];
            printf("  field %s @%zu size=%zu", f->name, f->offset, f->size);
            if (f->is_pointer)
                printf(" *");
            else if (f->struct_ref)
                printf(" struct=%s", h->structs[f->struct_ref - 1].name);
            else
                printf(" %s", bt_type(f->type)->cname);
            for (int j = 0; j < f->n_dims; j++)
                printf("%s%lld", j ? "x" : " dims=", f->dims[j]);
            printf("\n");
        }
    }
}

static void print_decl(const BtDecl *d)
{
    const char *s;
    int i;

    printf("decl %s @%d:%d\n  ns: ", d->name, d->line, d->col);
    for (i = 0; i < d->n_ns; i++)
        printf("%s%s", i ? "::" : "", d->ns[i]);
    printf("%s\n  flags:", d->n_ns ? "" : "-");
    if (d->extern_c)
        printf(" extern_c");
    if (d->is_inline)
        printf(" inline");
    if (d->is_static)
        printf(" static");
    if (d->is_global)
        printf(" global");
    if (d->is_device)
        printf(" device");
    if (!d->extern_c && !d->is_inline && !d->is_static && !d->is_global && !d->is_device)
        printf(" -");
    printf("\n  tparams: ");
    for (i = 0; i < d->n_tparams; i++)
        printf("%s%s", i ? ", " : "", d->tparams[i]);
    printf("%s\n", d->n_tparams ? "" : "-");
    print_signature(d);
    if (d->unbindable)
        printf("  unbindable: %s\n", d->unbindable);
    printf("  doc:\n");
    s = d->doc;
    while (*s) {
        const char *e = s;
        while (*e && *e != '\n')
            e++;
        printf("    |%s%.*s\n", e > s ? " " : "", (int)(e - s), s);
        s = *e ? e + 1 : e;
    }
}

int main(int argc, char **argv)
{
    BtArena arena;
    BtDiag diag;
    BtHeader h;
    char *text = NULL;
    long len;
    FILE *f;
    int i, rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: dump_header FILE\n");
        return 2;
    }
    bt_arena_init(&arena);
    bt_diag_init(&diag);
    f = fopen(argv[1], "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        perror(argv[1]);
        goto error;
    }
    text = malloc((size_t)len + 1);
    if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
        perror(argv[1]);
        goto error;
    }
    if (bt_parse_header(argv[1], text, (size_t)len, 1, &arena, &h, &diag) < 0) {
        print_diag(&diag);
        goto error;
    }
    header = &h;
    for (i = 0; i < h.n_decls; i++)
        print_decl(&h.decls[i]);
    print_names(&h);
    rc = 0;
error:
    if (f)
        fclose(f);
    free(text);
    bt_arena_free(&arena);
    return rc;
}
