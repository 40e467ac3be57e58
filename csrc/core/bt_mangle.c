/* bt_mangle.c - Itanium C++ ABI symbol names, as g++ emits them.
 *
 * The subset the dialect can declare:
 *
 *   mangled   -> _Z encoding
 *   encoding  -> name [ret-type if template] param-types      ("v" if none)
 *   name      -> N prefix* source-name [targs] E              (in namespaces)
 *              | source-name [targs]
 *   targs     -> I (type | L builtin ['n'] digits E)+ E
 *   type      -> builtin | S seq _ | T idx _ | K type | P type
 *              | St7complex I type E | source-name     (an enum, by its name)
 *
 * Substitution candidates, in the order g++ adds them: each namespace
 * prefix, the template name (template-prefix or unscoped template name),
 * then every non-builtin type as it is finished, innermost first (T_, KT_,
 * PKT_; St7complex before St7complexIT_E). Types are compared by their
 * expanded manglings, so a repeat is found whatever it was written as.
 * A prefix or template name (<length><identifier>...) can never equal a
 * type's mangling (a letter first), so those candidates are only counted:
 * nothing is copied per namespace, and `a0::...::a99999` costs its length.
 * Type candidates are found through a hash index. */
#include "bt_mangle.h"

#include <stdlib.h>
#include <string.h>

#include "bt_hash.h"

enum { LV_BASE, LV_CONST, LV_PTR, LV_REF }; /* how much of a BtTypeRef to mangle */

/* The code of a level above the base: P, R (a C++ reference), K. */
static char level_code(int lv) { return lv == LV_PTR ? 'P' : lv == LV_REF ? 'R' : 'K'; }

typedef struct Cand {
    size_t off; /* of the expanded mangling in pool */
    int seq;    /* substitution index */
} Cand;

typedef struct Mangler {
    BtBuf out;
    BtBuf pool;  /* type candidates' expanded manglings, each NUL-terminated */
    Cand *cands; /* type candidates (a block of the arena's own) */
    int n_cands, cap_cands;
    BtIndex index; /* cands by expanded mangling */
    int n_subs;    /* candidates of every kind so far */
    int failed;
    const BtEnum *enums; /* the header's, for an enum type's name; NULL: none known */
} Mangler;

typedef struct CandKey {
    const Mangler *m;
    const char *key;
} CandKey;

static int same_cand(const void *ctx, int id)
{
    const CandKey *k = ctx;
    return strcmp(k->m->pool.data + k->m->cands[id].off, k->key) == 0;
}

/* The substitution index of type candidate key, or -1. */
static int find_sub(const Mangler *m, const char *key, size_t *at)
{
    CandKey k = {m, key};
    int id = bt_index_find(&m->index, bt_hash_str(&m->index, key), same_cand, &k, at);

    return id < 0 ? -1 : m->cands[id].seq;
}

static void add_sub(Mangler *m, const char *key)
{
    size_t at;

    if (m->failed || find_sub(m, key, &at) >= 0)
        return;
    if (m->n_cands == m->cap_cands) { /* bt_mangle sized it; never */
        m->failed = 1;
        return;
    }
    m->cands[m->n_cands].off = m->pool.len;
    m->cands[m->n_cands].seq = m->n_subs++;
    if (bt_buf_append(&m->pool, key, strlen(key) + 1) < 0) {
        m->failed = 1;
        return;
    }
    bt_index_put(&m->index, at, m->n_cands++);
}

/* S_, S0_, ..., S9_, SA_, ..., SZ_, S10_: seq-id is base 36, one off. */
static void put_sub(Mangler *m, int idx)
{
    char digits[16];
    int n = 0;

    bt_buf_putc(&m->out, 'S');
    if (idx > 0) {
        unsigned v = (unsigned)idx - 1;
        do {
            digits[n++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[v % 36];
            v /= 36;
        } while (v);
        while (n)
            bt_buf_putc(&m->out, digits[--n]);
    }
    bt_buf_putc(&m->out, '_');
}

/* Emits the substitution for key if it is a candidate already: 1, else 0. */
static int use_sub(Mangler *m, const char *key)
{
    int idx = m->failed ? -1 : find_sub(m, key, NULL);

    if (idx < 0)
        return 0;
    put_sub(m, idx);
    return 1;
}

/* T_, T0_, T1_, ... */
static void put_tparam(BtBuf *b, int i)
{
    if (i == 0)
        bt_buf_puts(b, "T_");
    else
        bt_buf_printf(b, "T%d_", i - 1);
}

/* The name of enum type t ("color"), or NULL when t is no enum with one
 * (one without a name is mangled as its integer type). */
static const char *enum_name(const Mangler *m, const BtTypeRef *t)
{
    const char *name;

    if (t->tparam >= 0 || t->enum_ref <= 0 || !m->enums)
        return NULL;
    name = m->enums[t->enum_ref - 1].name;
    return name[0] ? name : NULL;
}

/* A class type of the table (its code is a <source-name>: "6__half"), or
 * an enum by its name: a substitution candidate. */
static int is_class(const Mangler *m, const BtTypeRef *t)
{
    return t->tparam < 0 &&
           ((bt_type(t->type)->mangle[0] >= '0' && bt_type(t->type)->mangle[0] <= '9') ||
            enum_name(m, t));
}

static int is_complex(const BtTypeRef *t)
{
    if (t->tparam >= 0)
        return t->is_complex_of_tparam;
    return bt_type(t->type)->kind == 'c';
}

/* The level below lv: P -> K (if const) -> base. */
static int inner_level(const BtTypeRef *t, int lv)
{
    if ((lv == LV_PTR || lv == LV_REF) && t->is_const)
        return LV_CONST;
    return LV_BASE;
}

/* A concrete type's own code: the table's, or an enum's source name. */
static void put_concrete(BtBuf *b, const Mangler *m, const BtTypeRef *t)
{
    const char *e = enum_name(m, t);

    if (e)
        bt_buf_printf(b, "%zu%s", strlen(e), e);
    else
        bt_buf_puts(b, bt_type(t->type)->mangle);
}

/* The expanded mangling of t at level lv, with no substitutions. */
static void put_key(BtBuf *b, const Mangler *m, const BtTypeRef *t, int lv)
{
    if (lv != LV_BASE) {
        bt_buf_putc(b, level_code(lv));
        put_key(b, m, t, inner_level(t, lv));
    } else if (t->tparam < 0) {
        put_concrete(b, m, t);
    } else if (t->is_complex_of_tparam) {
        bt_buf_puts(b, "St7complexI");
        put_tparam(b, t->tparam);
        bt_buf_putc(b, 'E');
    } else {
        put_tparam(b, t->tparam);
    }
}

static void emit_type(Mangler *m, const BtTypeRef *t, int lv);

/* std::complex<arg>: the template name St7complex is a candidate of its own. */
static void emit_complex(Mangler *m, const BtTypeRef *t)
{
    BtTypeRef arg = *t;

    if (!use_sub(m, "St7complex")) {
        bt_buf_puts(&m->out, "St7complex");
        add_sub(m, "St7complex");
    }
    arg.is_complex_of_tparam = 0;
    if (t->tparam < 0)
        arg.type = bt_type(t->type)->part;
    bt_buf_putc(&m->out, 'I');
    emit_type(m, &arg, LV_BASE);
    bt_buf_putc(&m->out, 'E');
}

/* type -> builtin | substitution | (P | K) type | complex | template param */
static void emit_type(Mangler *m, const BtTypeRef *t, int lv)
{
    BtBuf key;

    /* builtins are never candidates; a class (__half: "6__half") is */
    if (lv == LV_BASE && t->tparam < 0 && !is_complex(t) && !is_class(m, t)) {
        bt_buf_puts(&m->out, bt_type(t->type)->mangle);
        return;
    }
    bt_buf_init(&key);
    put_key(&key, m, t, lv);
    if (key.failed) {
        m->failed = 1;
    } else if (!use_sub(m, key.data)) {
        if (lv != LV_BASE) {
            bt_buf_putc(&m->out, level_code(lv));
            emit_type(m, t, inner_level(t, lv));
        } else if (is_complex(t)) {
            emit_complex(m, t);
        } else if (t->tparam < 0) {
            put_concrete(&m->out, m, t);
        } else {
            put_tparam(&m->out, t->tparam);
        }
        add_sub(m, key.data);
    }
    bt_buf_free(&key);
}

/* source-name -> <length> <identifier> */
static void put_source_name(BtBuf *b, const char *id) { bt_buf_printf(b, "%zu%s", strlen(id), id); }

/* The expanded mangling of fixed-size array parameter p from level k on:
 * 0 the pointer C++ adjusts it to, 1 .. n_fixed - 1 its inner arrays, then
 * its element ("PA3_d" for `double m[2][3]`). */
static void put_fixed_key(BtBuf *b, const Mangler *m, const BtParam *p, int k)
{
    if (k == p->n_fixed) {
        put_key(b, m, &p->t, p->t.is_const ? LV_CONST : LV_BASE);
        return;
    }
    if (k == 0)
        bt_buf_putc(b, 'P');
    else
        bt_buf_printf(b, "A%lld_", p->fixed[k]);
    put_fixed_key(b, m, p, k + 1);
}

/* type -> P (A dim _)+ type: a parameter `T m[N][M]...` as C++ adjusts it
 * (T (*)[M]...), from level k on; each array and the pointer a substitution
 * candidate, innermost first. */
static void emit_fixed(Mangler *m, const BtParam *p, int k)
{
    BtBuf key;

    if (k == p->n_fixed) {
        emit_type(m, &p->t, p->t.is_const ? LV_CONST : LV_BASE);
        return;
    }
    bt_buf_init(&key);
    put_fixed_key(&key, m, p, k);
    if (key.failed) {
        m->failed = 1;
    } else if (!use_sub(m, key.data)) {
        if (k == 0)
            bt_buf_putc(&m->out, 'P');
        else
            bt_buf_printf(&m->out, "A%lld_", p->fixed[k]);
        emit_fixed(m, p, k + 1);
        add_sub(m, key.data);
    }
    bt_buf_free(&key);
}

/* name -> N prefix* source-name [targs] E | source-name [targs] */
static void emit_name(Mangler *m, const BtDecl *d, const BtTArg *targs)
{
    int i;

    if (d->n_ns > 0)
        bt_buf_putc(&m->out, 'N');
    for (i = 0; i < d->n_ns; i++) {
        put_source_name(&m->out, d->ns[i]);
        m->n_subs++; /* the prefix so far */
    }
    put_source_name(&m->out, d->name);
    if (d->n_tparams > 0) {
        m->n_subs++; /* template-prefix / unscoped-template-name */
        bt_buf_putc(&m->out, 'I');
        for (i = 0; i < d->n_tparams; i++) {
            BtTypeRef t = {.tparam = -1, .type = targs[i].type};
            if (targs[i].is_value) /* a literal: its builtin type is no candidate */
                bt_buf_printf(&m->out, "L%s%s%lluE", bt_type(targs[i].type)->mangle,
                              targs[i].neg ? "n" : "", targs[i].mag);
            else
                emit_type(m, &t, LV_BASE);
        }
        bt_buf_putc(&m->out, 'E');
    }
    if (d->n_ns > 0)
        bt_buf_putc(&m->out, 'E');
}

const char *bt_mangle(const BtDecl *decl, const BtTArg *targs, BtArena *arena)
{
    return bt_mangle_enums(decl, targs, NULL, arena);
}

const char *bt_mangle_enums(const BtDecl *decl, const BtTArg *targs, const BtEnum *enums,
                            BtArena *arena)
{
    Mangler m;
    const char *res = NULL;
    int i;

    if (decl->extern_c)
        return bt_arena_strdup(arena, decl->name);
    if (decl->n_tparams > 0 && !targs)
        return NULL; /* caller error: a template needs its arguments */
    memset(&m, 0, sizeof m);
    m.enums = enums;
    bt_buf_init(&m.out);
    bt_buf_init(&m.pool);
    /* each type adds at most 4 candidates: P, K, the base, St7complex; a
     * fixed-size array one more per inner dimension */
    m.cap_cands = 4 * (decl->n_params + decl->n_tparams + 1);
    for (i = 0; i < decl->n_params; i++)
        m.cap_cands += decl->params[i].n_fixed;
    m.cands = bt_arena_resize(arena, NULL, (size_t)m.cap_cands * sizeof *m.cands);
    if (!m.cands || bt_index_init(&m.index, arena, (size_t)m.cap_cands) < 0)
        m.failed = 1;
    bt_buf_puts(&m.out, "_Z");
    emit_name(&m, decl, targs);
    if (decl->n_tparams > 0) {
        /* A template's return type is encoded; g++ keeps its top-level const. */
        const BtTypeRef *r = &decl->ret;
        emit_type(&m, r, r->is_array || r->is_string ? LV_PTR : r->is_const ? LV_CONST : LV_BASE);
    }
    if (decl->n_params == 0)
        bt_buf_putc(&m.out, 'v');
    for (i = 0; i < decl->n_params; i++) {
        const BtTypeRef *t = &decl->params[i].t;
        if (decl->params[i].n_fixed > 1) { /* `double m[3][3]`: double (*)[3] */
            emit_fixed(&m, &decl->params[i], 0);
            continue;
        }
        /* top-level const dropped; a C string is a pointer to const char; a
         * reference's const is its pointee's */
        emit_type(&m, t,
                  decl->params[i].is_ref        ? LV_REF
                  : t->is_array || t->is_string ? LV_PTR
                                                : LV_BASE);
    }
    if (!m.failed && !m.out.failed && !m.pool.failed)
        res = bt_arena_strdup(arena, bt_buf_str(&m.out));
    bt_buf_free(&m.out);
    bt_buf_free(&m.pool);
    bt_index_release(&m.index, arena);
    bt_arena_release(arena, m.cands);
    return res;
}
