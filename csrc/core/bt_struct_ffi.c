/* bt_struct_ffi.c - a struct's libffi type, its layout checked with libffi's. */
#include "bt_struct_ffi.h"

#include "bt_types.h"

/* The elements of field f: 1, or its array's extents multiplied. */
static size_t repeats(const BtField *f)
{
    size_t n = 1;
    int d;

    for (d = 0; d < f->n_dims; d++)
        n *= (size_t)f->dims[d];
    return n;
}

/* The scalars struct s holds, nested ones counted, or past the cap; or 0
 * when it holds a union. */
static size_t scalars(const BtStruct *structs, const BtStruct *s)
{
    size_t total = 0, each;
    int i;

    if (s->is_union)
        return 0;
    for (i = 0; i < s->n_fields && total <= BT_STRUCT_FFI_MAX_ELEMENTS; i++) {
        const BtField *f = &s->fields[i];
        each = 1;
        if (!f->is_pointer && f->struct_ref &&
            (each = scalars(structs, &structs[f->struct_ref - 1])) == 0)
            return 0;
        /* an array of a size the parser bounds (bt_parse_struct.c: MAX_STRUCT_SIZE) */
        total += each * repeats(f);
    }
    return total;
}

/* Whether s, or a struct it holds (not through a pointer), has bit-fields. */
static int holds_bitfields(const BtStruct *structs, const BtStruct *s)
{
    int i;

    if (s->bitfields)
        return 1;
    for (i = 0; i < s->n_fields; i++)
        if (!s->fields[i].is_pointer && s->fields[i].struct_ref &&
            holds_bitfields(structs, &structs[s->fields[i].struct_ref - 1]))
            return 1;
    return 0;
}

const char *bt_struct_ffi_refused(const BtStruct *structs, const BtStruct *s)
{
    size_t n;

    if (s->reason)
        return s->reason;
    if (holds_bitfields(structs, s))
        return "it holds bit-fields, which libffi, which calls a function taking or returning a "
               "struct by value, does not describe: pass it by pointer";
    if (s->is_union)
        return "libffi, which calls a function taking or returning a struct by value, has no "
               "unions: pass a union by pointer";
    n = scalars(structs, s);
    if (n == 0)
        return "it holds a union, and libffi, which calls a function taking or returning a "
               "struct by value, has no unions: pass it by pointer";
    if (n > BT_STRUCT_FFI_MAX_ELEMENTS)
        return "it holds more scalars than bindthem passes by value (65536): pass it by pointer";
    return NULL;
}

/* The ffi_type of s, whose every nested struct is no union (checked);
 * NULL when out of memory. */
static ffi_type *build(const BtStruct *structs, const BtStruct *s, BtArena *arena)
{
    ffi_type *t = bt_arena_alloc(arena, sizeof *t), **el;
    size_t n = 0, k, total = 0;
    int i;

    for (i = 0; i < s->n_fields; i++)
        total += repeats(&s->fields[i]);
    el = bt_arena_array(arena, total + 1, sizeof *el);
    if (!t || !el)
        return NULL;
    for (i = 0; i < s->n_fields; i++) {
        const BtField *f = &s->fields[i];
        ffi_type *ft = f->is_pointer ? &ffi_type_pointer
                       : f->struct_ref
                           ? build(structs, &structs[f->struct_ref - 1], arena)
                           : (ffi_type *)bt_type_ffi(f->type); /* an enum's: its integer type */
        if (!ft)
            return NULL;
        for (k = repeats(f); k > 0; k--)
            el[n++] = ft;
    }
    el[n] = NULL;
    t->type = FFI_TYPE_STRUCT;
    t->elements = el;
    return t;
}

/* Whether libffi lays t (s's, from build) out as the header does: 1, 0, or
 * -1 when out of memory. */
static int same_layout(const BtStruct *s, ffi_type *t, BtArena *arena)
{
    size_t n = 0, k, count, *at;
    int i;

    while (t->elements[n])
        n++;
    if (!(at = bt_arena_array(arena, n + 1, sizeof *at)))
        return -1;
    if (ffi_get_struct_offsets(FFI_DEFAULT_ABI, t, at) != FFI_OK)
        return 0;
    n = 0;
    for (i = 0; i < s->n_fields; i++) {
        const BtField *f = &s->fields[i];
        count = repeats(f);
        for (k = 0; k < count; k++, n++)
            if (at[n] != f->offset + k * (f->size / count))
                return 0;
    }
    return t->size == s->size && t->alignment == s->align;
}

ffi_type *bt_struct_ffi(const BtStruct *structs, const BtStruct *s, BtArena *arena,
                        const char **why)
{
    ffi_type *t;
    int same;

    if ((*why = bt_struct_ffi_refused(structs, s)) != NULL)
        return NULL;
    if (!(t = build(structs, s, arena)) || (same = same_layout(s, t, arena)) < 0)
        return NULL;
    if (!same) {
        *why = "libffi lays it out otherwise than the C compiler (bt_parse_struct.c): pass it "
               "by pointer";
        return NULL;
    }
    return t;
}
