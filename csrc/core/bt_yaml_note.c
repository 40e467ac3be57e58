/* bt_yaml_note.c - instantiate.yml's `annotate:` into a BtNoteTable.
 *
 * With bt_yaml.c, the only file that includes yaml.h (through
 * bt_yaml_impl.h). The grammar is in bt_yaml.c's opening comment, what a
 * note means in bt_note.h. Each expression is parsed here (bt_expr_parse)
 * at its scalar's position (a quoted one's first character inside the
 * quotes), and counts against the reader's budget as names do. Messages
 * name a note by its path: annotate.f.y.shape[1]. */
#include "bt_yaml_impl.h"

/* Where a node lies, formatted only for a message: annotate.f,
 * annotate.f.y, annotate.f.y.shape[1], annotate.f.status.ok[0]. */
typedef struct Path {
    const char *func;  /* the function's pattern */
    const char *param; /* or NULL */
    const char *key;   /* "shape", "check", "status.ok"... or NULL */
    int index;         /* in key's sequence, or -1 */
} Path;

/* One fnote as it is read: its function, and what it has seen. */
typedef struct Fnote {
    BtNoteFunc *f;
    BtIndex params;                    /* f->args by name */
    const yaml_node_t *check, *status; /* their keys, once read */
} Fnote;

/* A name to look up among args[] (a parameter) or r->nfuncs (a pattern). */
typedef struct Name {
    const void *items;
    const char *name;
} Name;

static const char *path_str(Reader *r, const Path *p)
{
    const char *s = bt_arena_printf(r->arena, "annotate.%.200s%s%.200s%s%s", p->func,
                                    p->param ? "." : "", p->param ? p->param : "",
                                    p->key ? "." : "", p->key ? p->key : "");

    if (s && p->index >= 0)
        s = bt_arena_printf(r->arena, "%s[%d]", s, p->index);
    return s ? s : "annotate";
}

/* "lines 3 and 7", or "line 3, columns 9 and 21": where something first
 * written at line:col is written again, at node k. */
static const char *both_at(Reader *r, int line, int col, const yaml_node_t *k)
{
    int line2 = (int)k->start_mark.line + 1, col2 = (int)k->start_mark.column + 1;
    const char *s = line != line2
                        ? bt_arena_printf(r->arena, "lines %d and %d", line, line2)
                        : bt_arena_printf(r->arena, "line %d, columns %d and %d", line, col, col2);

    return s ? s : "two places";
}

/* spend(), with the path formatted only when the budget is spent. */
static int spend_at(Reader *r, long n, const yaml_node_t *node, const Path *p)
{
    int alias = seen(r, node);

    if (n <= r->budget) {
        r->budget -= n;
        return 0;
    }
    return spend(r, n, node, path_str(r, p), alias);
}

/* expr -> scalar: node n's text parsed into *e (p names it). */
static int read_expr(Reader *r, const yaml_node_t *n, const Path *p, BtExpr *e)
{
    int col = (int)n->start_mark.column + 1;
    const char *text;
    size_t len;

    if (!is_text(n))
        return fail_at(r, n, "%s must be an expression such as 'len(x)' or 'n * 2', not %s",
                       path_str(r, p),
                       n->type == YAML_SCALAR_NODE && !is_null(n) ? "a string with a NUL inside"
                                                                  : describe(r, n));
    len = n->data.scalar.length;
    if (spend_at(r, 1 + (long)(len / 4), n, p) < 0)
        return -1;
    if (!(text = bt_arena_strndup(r->arena, sval(n), len)))
        return nomem(r);
    if (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
        n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE)
        col++; /* its first character inside the quotes */
    return bt_expr_parse(text, r->afile, (int)n->start_mark.line + 1, col, r->arena, e, r->diag);
}

/* exprs -> [expr, ...] | expr: into *out, *count of them (p.key names them). */
static int read_exprs(Reader *r, const yaml_node_t *n, Path p, BtExpr **out, int *count)
{
    yaml_node_item_t *it;
    int i = 0;

    if (n->type != YAML_SEQUENCE_NODE) {
        *count = 1;
        if (!(*out = bt_arena_alloc(r->arena, sizeof **out)))
            return nomem(r);
        return read_expr(r, n, &p, *out);
    }
    *count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (*count == 0)
        return fail_at(r, n, "%s is empty; list one expression or more, or leave the key out",
                       path_str(r, &p));
    if (!(*out = bt_arena_array(r->arena, (size_t)*count, sizeof **out)))
        return nomem(r);
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
        p.index = i;
        if (read_expr(r, child(r, *it), &p, &(*out)[i]) < 0)
            return -1;
    }
    return 0;
}

/* intent -> in | out | inout */
static int read_intent(Reader *r, const yaml_node_t *n, const Path *p, int *intent)
{
    static const char *const names[] = {"in", "out", "inout"};
    int i = key_of(n, names, 3);
    const char *near = i < 0 ? nearest(n, names, 3) : NULL;

    if (i < 0)
        return fail_at(r, n, "%s must be in, out or inout, not %s%s%s%s", path_str(r, p),
                       describe(r, n), near ? "; did you mean '" : "", near ? near : "",
                       near ? "'?" : "");
    *intent = BT_INTENT_IN + i;
    return 0;
}

/* trim -> ident */
static int read_trim(Reader *r, const yaml_node_t *n, const Path *p, const char **trim)
{
    if (!is_text(n) || !is_ident(sval(n)))
        return fail_at(r, n,
                       "%s must name a parameter (the one whose value after the call is the "
                       "length returned), not %s",
                       path_str(r, p), describe(r, n));
    if (!(*trim = bt_arena_strdup(r->arena, sval(n))))
        return nomem(r);
    return 0;
}

/* type -> typename (bt_types, as instantiate's type names, or NumPy's: complex128) */
static int read_type(Reader *r, const yaml_node_t *n, const Path *p, BtTypeId *type)
{
    if (!is_text(n))
        return fail_at(r, n, "%s must be a type name such as double, not %s", path_str(r, p),
                       describe(r, n));
    if (bt_type_lookup_numpy(sval(n), type) < 0)
        return fail_at(r, n,
                       "unknown type '%.200s' in %s; known: NumPy's names (complex128) and %s%s",
                       sval(n), path_str(r, p), bt_type_known_spellings(),
                       bt_rule_docs[BT_RULE_YAML_TYPES].tail);
    if (*type == BT_VOID)
        return fail_at(r, n,
                       "'void' in %s is no element type; name the type of the elements the "
                       "pointer points to",
                       path_str(r, p));
    return 0;
}

/* nullable -> true | false */
static int read_nullable(Reader *r, const yaml_node_t *n, const Path *p, int *nullable)
{
    if (!is_text(n) || (strcmp(sval(n), "true") != 0 && strcmp(sval(n), "false") != 0))
        return fail_at(r, n, "%s must be true or false, not %s", path_str(r, p), describe(r, n));
    *nullable = strcmp(sval(n), "true") == 0;
    return 0;
}

/* {intent: in|out|inout, shape: exprs, trim: ident, type: typename, nullable: bool}
 * into a. */
static int read_pmap(Reader *r, const yaml_node_t *n, Path p, BtNoteArg *a)
{
    static const char *const keys[] = {"intent", "shape", "trim", "type", "nullable"};
    const yaml_node_t *got[5] = {NULL, NULL, NULL, NULL, NULL};
    yaml_node_pair_t *q;

    for (q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++) {
        yaml_node_t *k = child(r, q->key), *v = child(r, q->value);
        int i = key_of(k, keys, 5), rc;
        if (i < 0)
            return unknown_key(r, k, keys, 5, "key",
                               bt_arena_printf(r->arena, " in %s", path_str(r, &p)),
                               "'intent', 'shape', 'trim', 'type' or 'nullable'");
        if (got[i])
            return fail_at(r, k, "duplicate key '%s' in %s, at %s", keys[i], path_str(r, &p),
                           both_at(r, (int)got[i]->start_mark.line + 1,
                                   (int)got[i]->start_mark.column + 1, k));
        got[i] = k;
        p.key = keys[i];
        switch (i) {
        case 0: rc = read_intent(r, v, &p, &a->intent); break;
        case 1: rc = read_exprs(r, v, p, &a->shape, &a->n_shape); break;
        case 2: rc = read_trim(r, v, &p, &a->trim); break;
        case 3: rc = read_type(r, v, &p, &a->type); break;
        default: rc = read_nullable(r, v, &p, &a->nullable); break;
        }
        if (rc < 0)
            return -1;
        p.key = NULL;
    }
    return 0;
}

static int same_name(const void *ctx, int id)
{
    const Name *k = ctx;
    return strcmp(((const BtNoteArg *)k->items)[id].name, k->name) == 0;
}

static int same_pattern(const void *ctx, int id)
{
    const Name *k = ctx;
    return strcmp(((const BtNoteFunc *)k->items)[id].pattern, k->name) == 0;
}

/* pname: pnote, in fnote s (p: the function's path) */
static int read_param(Reader *r, Fnote *s, const yaml_node_t *k, const yaml_node_t *v, Path p)
{
    BtNoteFunc *f = s->f;
    Name key = {f->args, is_text(k) ? sval(k) : ""};
    BtNoteArg *a;
    size_t at;
    int j;

    if (!is_text(k) || !is_ident(sval(k)))
        return fail_at(r, k,
                       "%s is no parameter name in %s; annotate a parameter by its name in the "
                       "header, or give the function's 'check' or 'status'",
                       describe(r, k), path_str(r, &p));
    j = bt_index_find(&s->params, bt_hash_str(&s->params, key.name), same_name, &key, &at);
    if (j >= 0)
        return fail_at(r, k, "parameter '%s' of %s is annotated twice, at %s; keep one note",
                       key.name, path_str(r, &p), both_at(r, f->args[j].line, f->args[j].col, k));
    a = &f->args[f->n_args];
    if (!(a->name = bt_arena_strdup(r->arena, key.name)))
        return nomem(r);
    bt_index_put(&s->params, at, f->n_args++);
    a->line = (int)k->start_mark.line + 1;
    a->col = (int)k->start_mark.column + 1;
    p.param = a->name;
    if (v->type == YAML_MAPPING_NODE)
        return read_pmap(r, v, p, a);
    if (!(a->value = bt_arena_alloc(r->arena, sizeof *a->value)))
        return nomem(r);
    return read_expr(r, v, &p, a->value);
}

/* status -> {ok: exprs} */
static int read_status(Reader *r, const yaml_node_t *n, Path p, BtNoteFunc *f)
{
    static const char *const keys[] = {"ok"};
    const yaml_node_t *got = NULL;
    yaml_node_pair_t *q;

    p.key = "status";
    if (n->type != YAML_MAPPING_NODE)
        return fail_at(r, n,
                       "%s must be a mapping such as {ok: [0]}, the return values that mean "
                       "success, not %s",
                       path_str(r, &p), describe(r, n));
    for (q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++) {
        yaml_node_t *k = child(r, q->key);
        if (key_of(k, keys, 1) < 0)
            return unknown_key(r, k, keys, 1, "key",
                               bt_arena_printf(r->arena, " in %s", path_str(r, &p)), "'ok'");
        if (got)
            return fail_at(
                r, k, "duplicate key 'ok' in %s, at %s", path_str(r, &p),
                both_at(r, (int)got->start_mark.line + 1, (int)got->start_mark.column + 1, k));
        got = k;
        p.key = "status.ok";
        if (read_exprs(r, child(r, q->value), p, &f->ok, &f->n_ok) < 0)
            return -1;
        p.key = "status";
    }
    if (!got)
        return fail_at(r, n,
                       "%s has no 'ok' key; write status: {ok: [0]} for a function that "
                       "returns 0 on success",
                       path_str(r, &p));
    return 0;
}

/* One pair of fnote s: its check, its status, or a parameter's note. */
static int fnote_pair(Reader *r, Fnote *s, const yaml_node_t *k, const yaml_node_t *v, Path p)
{
    static const char *const own[] = {"check", "status"};
    int i = key_of(k, own, 2);
    const yaml_node_t **was = i == 0 ? &s->check : &s->status;

    if (i < 0)
        return read_param(r, s, k, v, p);
    if (*was)
        return fail_at(
            r, k, "duplicate key '%s' in %s, at %s", own[i], path_str(r, &p),
            both_at(r, (int)(*was)->start_mark.line + 1, (int)(*was)->start_mark.column + 1, k));
    *was = k;
    if (i == 1)
        return read_status(r, v, p, s->f);
    p.key = "check";
    return read_exprs(r, v, p, &s->f->checks, &s->f->n_checks);
}

/* fnote -> {pname: pnote, ..., check: exprs, status: {ok: exprs}}, of f */
static int read_fnote(Reader *r, const yaml_node_t *n, BtNoteFunc *f)
{
    Path p = {f->pattern, NULL, NULL, -1};
    yaml_node_pair_t *q;
    Fnote s;
    int pairs, rc = -1;

    if (n->type != YAML_MAPPING_NODE)
        return fail_at(r, n,
                       "%s must be a mapping of its parameters' notes (and its check and "
                       "status), such as {n: len(x)}, not %s",
                       path_str(r, &p), describe(r, n));
    pairs = (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (spend_at(r, pairs, n, &p) < 0)
        return -1;
    memset(&s, 0, sizeof s);
    s.f = f;
    f->args = bt_arena_array(r->arena, (size_t)pairs + 1, sizeof *f->args);
    if (!f->args || bt_index_init(&s.params, r->arena, (size_t)pairs) < 0)
        return nomem(r);
    for (q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++)
        if (fnote_pair(r, &s, child(r, q->key), child(r, q->value), p) < 0)
            goto done;
    rc = 0;
done:
    bt_index_release(&s.params, r->arena);
    return rc;
}

/* fname -> ident | glob: key k's text checked, *is_glob set. */
static int check_pattern(Reader *r, const yaml_node_t *k, int *is_glob)
{
    const char *s;

    *is_glob = 0;
    if (!is_text(k))
        return fail_at(r, k,
                       "a key of annotate must be a function name or a glob such as "
                       "'cblas_?dot', not %s",
                       describe(r, k));
    for (s = sval(k); *s && (is_ident_char(*s) || *s == '*' || *s == '?'); s++)
        *is_glob |= *s == '*' || *s == '?';
    if (*s || (!*is_glob && !is_ident(sval(k))))
        return fail_at(r, k,
                       "'%.200s' in annotate is neither a function name nor a glob (identifier "
                       "characters with * for any run and ? for any one character)",
                       sval(k));
    return 0;
}

/* fname: fnote, the next of r->nfuncs (index: those before, by pattern) */
static int read_func(Reader *r, BtIndex *index, const yaml_node_t *k, const yaml_node_t *v)
{
    BtNoteFunc *f = &r->nfuncs[r->n_nfuncs];
    Name key = {r->nfuncs, NULL};
    size_t at;
    int j;

    if (check_pattern(r, k, &f->is_glob) < 0)
        return -1;
    key.name = sval(k);
    j = bt_index_find(index, bt_hash_str(index, key.name), same_pattern, &key, &at);
    if (j >= 0)
        return fail_at(r, k, "'%.200s' is annotated twice, at %s; merge its notes into one entry",
                       key.name, both_at(r, r->nfuncs[j].line, r->nfuncs[j].col, k));
    if (!(f->pattern = bt_arena_strdup(r->arena, key.name)))
        return nomem(r);
    f->line = (int)k->start_mark.line + 1;
    f->col = (int)k->start_mark.column + 1;
    bt_index_put(index, at, r->n_nfuncs++);
    return read_fnote(r, v, f);
}

int bt_yaml_annotate(Reader *r, const yaml_node_t *n)
{
    yaml_node_pair_t *q;
    BtIndex index;
    int pairs, rc = -1;

    if (is_null(n))
        return 0;
    if (n->type != YAML_MAPPING_NODE)
        return fail_at(r, n,
                       "annotate must be a mapping of function names (or globs such as "
                       "'cblas_?dot') to their notes, such as {cblas_ddot: {n: len(x)}}, not %s",
                       describe(r, n));
    pairs = (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    if (spend(r, pairs, n, "annotate", seen(r, n)) < 0)
        return -1;
    r->nfuncs = bt_arena_array(r->arena, (size_t)pairs + 1, sizeof *r->nfuncs);
    if (!r->nfuncs || bt_index_init(&index, r->arena, (size_t)pairs) < 0)
        return nomem(r);
    for (q = n->data.mapping.pairs.start; q < n->data.mapping.pairs.top; q++)
        if (read_func(r, &index, child(r, q->key), child(r, q->value)) < 0)
            goto done;
    rc = 0;
done:
    bt_index_release(&index, r->arena);
    return rc;
}
