/* bt_yaml_impl.h - what the instantiate.yml reader's files share, and no one else.
 *
 * bt_yaml.c reads the document and its `instantiate:` and `remaps:`;
 * bt_yaml_note.c reads `annotate:` (bt_note.h). They, through this header,
 * are the only files that include yaml.h. Callers include bt_yaml.h. The
 * Reader's helpers are static inlines here: bt_yaml.c calls bt_yaml_note.c,
 * never the reverse, so what both use cannot live in either. */
#ifndef BT_YAML_IMPL_H
#define BT_YAML_IMPL_H

#include "bt_yaml.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "bt_hash.h"
#include "bt_plan.h"

/* names read (function, type, annotated), pairs made, and a part per 4
 * characters of an expression */
#define MAX_EXPANSION 1000000L

typedef struct Reader {
    const char *file;
    const char *afile; /* file, copied into the arena: the table's and expressions' */
    const char *text;
    size_t len;
    yaml_document_t *doc;
    BtArena *arena;
    BtDiag *diag;
    const char *prefix; /* "instantiate" (pyamg shape) or "" (README shape) */
    BtInst *insts;      /* a block of its own (bt_arena_resize) */
    int n_insts, cap_insts;
    BtIndex inst_index; /* insts by (function, tuple), for repeats */
    BtRemap *remaps;
    int n_remaps, cap_remaps;
    BtNoteFunc *nfuncs; /* `annotate:`, in file order */
    int n_nfuncs;
    long budget; /* of MAX_EXPANSION, what is left */
    char *seen;  /* per document node: walked already (an alias) */
} Reader;

/* annotate -> null | {fname: fnote, ...} (bt_yaml_note.c): into
 * r->nfuncs. 0, or -1 with r->diag set. */
BT_HIDDEN int bt_yaml_annotate(Reader *r, const yaml_node_t *n);

static inline yaml_node_t *child(Reader *r, int id) { return yaml_document_get_node(r->doc, id); }

static inline int nomem(Reader *r) { return bt_diag_nomem(r->diag); }

static inline const char *sval(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }

/* An error at mark m (0-based, as libyaml's are; NULL: no position). */
static inline int vfail(Reader *r, const yaml_mark_t *m, const char *fmt, va_list ap)
{
    char msg[1536];

    vsnprintf(msg, sizeof msg, fmt, ap);
    return bt_diag_set(r->diag, BT_DIAG_INSTANTIATE, r->file, m ? (int)m->line + 1 : 0,
                       m ? (int)m->column + 1 : 0, "%s", msg);
}

static inline int fail_at(Reader *r, const yaml_node_t *n, const char *fmt, ...) BT_PRINTF(3, 4);

static inline int fail_at(Reader *r, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(r, n ? &n->start_mark : NULL, fmt, ap);
    va_end(ap);
    return rc;
}

/* Marks node walked; 1 if it was already (it is reached through an alias). */
static inline int seen(Reader *r, const yaml_node_t *node)
{
    size_t id = (size_t)(node - r->doc->nodes.start);
    int was = r->seen[id];

    r->seen[id] = 1;
    return was;
}

/* Counts n more names, pairs or expression parts read at node (path names
 * it; alias: the node was walked before). */
static inline int spend(Reader *r, long n, const yaml_node_t *node, const char *path, int alias)
{
    if (n <= r->budget) {
        r->budget -= n;
        return 0;
    }
    return fail_at(r, node,
                   "%s%s takes instantiate.yml past %ld function names, type names, (function, "
                   "type tuple) pairs and annotations in all (an alias counts each time it is "
                   "used; an expression, one for every 4 characters); list fewer, or split the "
                   "file",
                   path, alias ? " (an alias of the node here)" : "", MAX_EXPANSION);
}

static inline int is_null(const yaml_node_t *n)
{
    const char *v;

    if (!n || n->type != YAML_SCALAR_NODE)
        return 0;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return 1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    v = sval(n);
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* A scalar, not null, with no NUL inside: its text is all of it. */
static inline int is_text(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && !is_null(n) && strlen(sval(n)) == n->data.scalar.length;
}

/* "a sequence", "null", "'foo'" - for "..., not X" messages. */
static inline const char *describe(Reader *r, const yaml_node_t *n)
{
    const char *q;

    if (n->type == YAML_SEQUENCE_NODE)
        return "a sequence";
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (is_null(n))
        return "null";
    q = bt_arena_printf(r->arena, "'%.80s'", sval(n));
    return q ? q : "a scalar";
}

static inline int is_ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static inline int is_ident(const char *s)
{
    if (!is_ident_char(*s) || (*s >= '0' && *s <= '9'))
        return 0;
    for (s++; *s; s++)
        if (!is_ident_char(*s))
            return 0;
    return 1;
}

/* Which of keys[n] scalar node k is, or -1. */
static inline int key_of(const yaml_node_t *k, const char *const *keys, int n)
{
    int i;

    for (i = 0; is_text(k) && i < n; i++)
        if (strcmp(sval(k), keys[i]) == 0)
            return i;
    return -1;
}

/* The one of words[n] closest to node k's text when that is a near miss
 * (bt_plan_near), for "did you mean"; NULL if none. */
static inline const char *nearest(const yaml_node_t *k, const char *const *words, int n)
{
    const char *near = NULL;
    int i, best = 1 << 30;

    for (i = 0; is_text(k) && i < n; i++) {
        int d = bt_plan_distance(sval(k), words[i]);
        if (bt_plan_near(strlen(sval(k)), strlen(words[i]), d) && d < best) {
            best = d;
            near = words[i];
        }
    }
    return near;
}

/* The error for key node k, none of keys[n]: "unknown key 'shap' in
 * annotate.f.y (expected 'intent', 'shape', 'trim' or 'type'); did you mean
 * 'shape'?". kind: "key" or "top-level key"; where: " in annotate.f.y" or "";
 * expected: the keys as the message lists them. */
static inline int unknown_key(Reader *r, const yaml_node_t *k, const char *const *keys, int n,
                              const char *kind, const char *where, const char *expected)
{
    const char *near = nearest(k, keys, n);

    return fail_at(r, k, "unknown %s %s%s (expected %s)%s%s%s", kind, describe(r, k),
                   where ? where : "", expected, near ? "; did you mean '" : "", near ? near : "",
                   near ? "'?" : "");
}

#endif
