/* bt_parse_names.c - the names a header declares: typedefs, enum tags and
 * members, #defines, handle types, one index over them all (bt_parse_impl.h's
 * Name). */
#include "bt_parse_impl.h"

#include <stdio.h>

static int same_name(const void *ctx, int id)
{
    const void *const *c = ctx;
    const Parser *p = c[0];
    return strcmp(p->names[id].name, (const char *)c[1]) == 0;
}

const Name *bt_parse_lookup(const Parser *p, const char *s)
{
    const void *ctx[2] = {p, s};
    int id;

    if (!p->n_names)
        return NULL;
    id = bt_index_find(&p->name_index, bt_hash_str(&p->name_index, s), same_name, ctx, NULL);
    return id < 0 ? NULL : &p->names[id];
}

/* Files names[0..n) in a new index with room for twice as many. */
static int grow_index(Parser *p)
{
    int i;

    bt_index_release(&p->name_index, p->arena);
    if (bt_index_init(&p->name_index, p->arena, (size_t)p->cap_names) < 0)
        return bt_diag_nomem(p->diag);
    for (i = 0; i < p->n_names; i++) {
        const void *ctx[2] = {p, p->names[i].name};
        size_t at;
        bt_index_find(&p->name_index, bt_hash_str(&p->name_index, p->names[i].name), same_name, ctx,
                      &at);
        bt_index_put(&p->name_index, at, i);
    }
    return 0;
}

Name *bt_parse_declare(Parser *p, const char *name, NameKind kind)
{
    const void *ctx[2] = {p, name};
    size_t at;
    int id;
    Name *n;

    if (p->n_names == p->cap_names) {
        int cap = p->cap_names < 64 ? 64 : p->cap_names * 2;
        Name *v = bt_arena_resize(p->arena, p->names, (size_t)cap * sizeof *v);
        if (!v) {
            bt_diag_nomem(p->diag);
            return NULL;
        }
        p->names = v;
        p->cap_names = cap;
        if (grow_index(p) < 0)
            return NULL;
    }
    id = bt_index_find(&p->name_index, bt_hash_str(&p->name_index, name), same_name, ctx, &at);
    if (id < 0) {
        id = p->n_names++;
        bt_index_put(&p->name_index, at, id);
        p->names[id].name = bt_arena_strdup(p->arena, name);
        if (!p->names[id].name) {
            bt_diag_nomem(p->diag);
            return NULL;
        }
    }
    n = &p->names[id];
    n->kind = kind;
    n->ti = NULL;
    n->value = 0;
    return n;
}

void bt_parse_apply_typedef(const Parser *p, TypeInfo *ti)
{
    const Name *n = bt_parse_lookup(p, ti->spelling);
    const TypeInfo *t;

    if (!n || n->kind != NAME_TYPE)
        return;
    t = n->ti;
    if (!ti->elaborated)
        ti->alias = n->name;
    /* `const T` of a pointer typedef makes the pointer const, not what it points to */
    ti->is_const = t->nptr ? t->is_const : ti->is_const || t->is_const;
    ti->nptr += t->nptr;
    ti->nref += t->nref;
    ti->elaborated = t->elaborated;
    ti->enum_ref = t->enum_ref;
    ti->callback_ref = t->callback_ref;
    ti->fn_type = t->fn_type;
    ti->reason = t->reason;
    ti->n_dims = t->n_dims; /* an array typedef's extents */
    memcpy(ti->dims, t->dims, sizeof ti->dims);
    memcpy(ti->spelling, t->spelling, sizeof ti->spelling);
}

/* ---- handle types ---- */

int bt_parse_handle(Parser *p, const TypeInfo *ti, int line)
{
    char key[sizeof ti->spelling + 2];
    const Name *n;
    Name *nn;

    snprintf(key, sizeof key, " *%s", ti->spelling);
    if ((n = bt_parse_lookup(p, key)) && n->kind == NAME_HANDLE)
        return (int)n->value + 1;
    if (p->n_handles == p->cap_handles) {
        int cap = p->cap_handles < 8 ? 8 : p->cap_handles * 2;
        BtHandleType *v = bt_arena_resize(p->arena, p->handles, (size_t)cap * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag), 0;
        p->handles = v;
        p->cap_handles = cap;
    }
    if (!(nn = bt_parse_declare(p, key, NAME_HANDLE)))
        return 0;
    nn->value = p->n_handles;
    memset(&p->handles[p->n_handles], 0, sizeof *p->handles);
    p->handles[p->n_handles].key = nn->name + 2;
    p->handles[p->n_handles].line = line;
    return ++p->n_handles;
}

int bt_parse_struct_laid(const Parser *p, const char *key)
{
    char k[sizeof((TypeInfo *)0)->spelling + 2];
    const Name *n;

    snprintf(k, sizeof k, "{%s", key);
    n = bt_parse_lookup(p, k);
    return n && n->kind == NAME_COMPLETE ? (int)n->value + 1 : 0;
}

int bt_parse_struct_ref(const Parser *p, const char *key)
{
    int ref = bt_parse_struct_laid(p, key);

    return ref && !p->structs[ref - 1].opaque ? ref : 0;
}
