/* bt_yaml.c - instantiate.yml into an instantiation table.
 *
 * With bt_yaml_note.c (`annotate:`), the only file that includes yaml.h
 * (through bt_yaml_impl.h). Loads the document with libyaml's document API,
 * then walks the node tree. Grammar accepted:
 *
 *   file     -> entries
 *             | {instantiate: entries?, annotate: annotate?, remaps: remaps?}
 *                                                  (instantiate or annotate, or both)
 *   entries  -> [entry, ...]                       (non-empty)
 *   entry    -> {types: types, functions: [ident, ...]}
 *   types    -> null | [tuple, ...]
 *   tuple    -> null | [item, ...]
 *   item     -> typename                           (C++ spelling, bt_types)
 *             | literal                            (integer, true/false, 'c': a value)
 *   remaps   -> null | [{ident: ident}, ...]       (C++ name -> Python name)
 *   annotate -> null | {fname: fnote, ...}         (bt_note.h says what each means)
 *   fname    -> ident | glob                       (identifier characters with * and ?)
 *   fnote    -> {pname: pnote, ..., check: exprs, status: {ok: exprs}}
 *   pnote    -> expr
 *             | {intent: in|out|inout, shape: exprs, trim: ident, type: typename}
 *   exprs    -> [expr, ...] | expr                 (non-empty)
 *   expr     -> scalar                             (its text, bt_expr_parse)
 *
 * Each entry expands function-major: func1 x every tuple, then func2 ...
 * An exact repeat of a (function, tuple) pair is kept once, first wins.
 * The mapping without `instantiate` (annotations alone) plans every
 * bindable untemplated function, as no YAML does (BtInstTable.plans_all).
 * In an fnote, `check` and `status` are the function's: a parameter so
 * named cannot be annotated. A function pattern, or a parameter within one
 * function, is annotated once.
 *
 * Limits keep a small file from costing minutes or gigabytes. libyaml's
 * scanner is quadratic in nesting depth and its loader in anchors x
 * aliases, so a pass over the events checks those before the document is
 * loaded; an alias repeats a whole node each time it is used, so the walk
 * counts what it expands (names, pairs and expressions, an alias's each
 * time). */
#include "bt_yaml_impl.h"

#define MAX_DEPTH 64 /* the grammar needs 6 */
#define MAX_ANCHORS 1000
#define MAX_ALIASES 10000
#define MAX_NODES 2000000L /* twice what MAX_EXPANSION lets through */

typedef struct Tuple {
    BtInstArg *ids; /* NULL for `null` */
    int n;
    int line, col;
    const char *path;
} Tuple;

static int fail_mark(Reader *r, const yaml_mark_t *m, const char *fmt, ...) BT_PRINTF(3, 4);

static int fail_mark(Reader *r, const yaml_mark_t *m, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = vfail(r, m, fmt, ap);
    va_end(ap);
    return rc;
}

/* A scalar holding a plain identifier (no NUL inside)? */
static int is_ident_node(const yaml_node_t *n) { return is_text(n) && is_ident(sval(n)); }

/* A scalar holding a plain identifier; `what` names it in messages. */
static const char *ident_at(Reader *r, const yaml_node_t *n, const char *what)
{
    const char *v;

    if (n->type != YAML_SCALAR_NODE || is_null(n)) {
        fail_at(r, n, "%s must be a function name, not %s", what, describe(r, n));
        return NULL;
    }
    if (strlen(sval(n)) != n->data.scalar.length || !is_ident(sval(n))) {
        fail_at(r, n, "'%.200s' in %s is not a plain identifier", sval(n), what);
        return NULL;
    }
    /* copied: the document is freed before the table is used */
    v = bt_arena_strdup(r->arena, sval(n));
    if (!v)
        nomem(r);
    return v;
}

/* A (function, tuple) pair, to look up among r->insts. */
typedef struct Pair {
    const Reader *r;
    const char *func;
    const BtInstArg *ids;
    int n;
} Pair;

/* What identifies an item: its type, or its value. */
static uint64_t arg_key(const BtInstArg *a)
{
    if (!a->is_value)
        return (uint64_t)a->type;
    return ((uint64_t)a->lit.kind << 56 | (uint64_t)a->lit.neg << 55) ^ a->lit.u ^ 1u << 31;
}

static int same_pair(const void *ctx, int id)
{
    const Pair *k = ctx;
    const BtInst *a = &k->r->insts[id];
    int i;

    if (a->n_types != k->n || (a->args == NULL) != (k->ids == NULL) ||
        strcmp(a->func, k->func) != 0)
        return 0;
    for (i = 0; i < k->n; i++)
        if (a->args[i].is_value != k->ids[i].is_value ||
            arg_key(&a->args[i]) != arg_key(&k->ids[i]) ||
            (a->args[i].is_value && a->args[i].lit.u != k->ids[i].lit.u))
            return 0;
    return 1;
}

static uint64_t pair_hash(const BtIndex *x, const char *func, const BtInstArg *ids, int n)
{
    uint64_t h = bt_hash_int(bt_hash_str(x, func), ids ? (uint64_t)n : (uint64_t)-1);
    int i;

    for (i = 0; ids && i < n; i++)
        h = bt_hash_int(h, arg_key(&ids[i]));
    return h;
}

/* A bigger index of r->insts, when the current one is full. */
static int grow_index(Reader *r)
{
    BtIndex x;
    int i;

    if (r->inst_index.slot && bt_index_has_room(&r->inst_index, (size_t)r->n_insts))
        return 0;
    if (bt_index_init(&x, r->arena, 2 * (size_t)r->n_insts + 64) < 0)
        return nomem(r);
    for (i = 0; i < r->n_insts; i++) {
        const BtInst *in = &r->insts[i];
        Pair k = {r, in->func, in->args, in->n_types};
        size_t at;
        bt_index_find(&x, pair_hash(&x, in->func, in->args, in->n_types), same_pair, &k, &at);
        bt_index_put(&x, at, i);
    }
    bt_index_release(&r->inst_index, r->arena);
    r->inst_index = x;
    return 0;
}

/* Adds (function fn, tuple tu) unless it is a repeat. The function's name
 * and path ("instantiate[2].functions[1]") are copied into *name and *fpath
 * on its first new pair only, so that an alias repeating an entry costs no
 * memory. */
static int add_inst(Reader *r, const yaml_node_t *fn, const char *epath, int index,
                    const char **name, const char **fpath, const Tuple *tu)
{
    const char *func = sval(fn);
    Pair k = {r, func, tu->ids, tu->n};
    BtInst *in;
    size_t at;

    if (grow_index(r) < 0)
        return -1;
    if (bt_index_find(&r->inst_index, pair_hash(&r->inst_index, func, tu->ids, tu->n), same_pair,
                      &k, &at) >= 0)
        return 0; /* exact repeat (pyamg lists filter_matrix_rows twice) */
    if (r->n_insts == r->cap_insts) {
        int cap = r->cap_insts < 64 ? 64 : r->cap_insts + r->cap_insts / 2;
        BtInst *p = bt_arena_resize(r->arena, r->insts, (size_t)cap * sizeof *p);
        if (!p)
            return nomem(r);
        r->insts = p;
        r->cap_insts = cap;
    }
    if (!*name && !(*name = bt_arena_strdup(r->arena, func))) /* the document is freed */
        return nomem(r);
    if (!*fpath && !(*fpath = bt_arena_printf(r->arena, "%s.functions[%d]", epath, index)))
        return nomem(r);
    bt_index_put(&r->inst_index, at, r->n_insts);
    in = &r->insts[r->n_insts++];
    in->func = *name;
    in->args = tu->ids;
    in->n_types = tu->n;
    in->line = (int)fn->start_mark.line + 1;
    in->col = (int)fn->start_mark.column + 1;
    in->tline = tu->line;
    in->tcol = tu->col;
    in->path = *fpath;
    in->tpath = tu->path;
    return 0;
}

/* item -> typename | literal (a value: integer, bool, character) */
static int read_item(Reader *r, const yaml_node_t *tn, const char *path, BtInstArg *a)
{
    const char *v = sval(tn);
    int quoted = tn->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                 tn->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;

    memset(a, 0, sizeof *a);
    if (strlen(v) != tn->data.scalar.length)
        return fail_at(r, tn, "unknown type '%.200s' in %s (a NUL inside)%s", v, path,
                       bt_rule_docs[BT_RULE_YAML_TYPES].tail);
    if (!(a->text = bt_arena_strdup(r->arena, v)))
        return nomem(r);
    if (bt_type_lookup(v, &a->type) == 0) {
        if (a->type == BT_VOID)
            return fail_at(r, tn, "'void' in %s cannot be a template argument", path);
        return 0;
    }
    a->is_value = 1;
    if (quoted && tn->data.scalar.length == 1) { /* 'a': a character */
        a->lit.kind = BT_LIT_CHAR;
        a->lit.u = (unsigned char)v[0];
        return 0;
    }
    if (bt_lex_literal(v, &a->lit) == 0) {
        if (a->lit.kind == BT_LIT_FLOAT)
            return fail_at(r, tn,
                           "'%.200s' in %s is a floating value; a template argument is a type "
                           "name or an integer, bool or character value%s",
                           v, path, bt_rule_docs[BT_RULE_YAML_TYPES].tail);
        return 0;
    }
    return fail_at(r, tn,
                   "unknown type '%.200s' in %s; known types: %s (or, for a non-type template "
                   "parameter, an integer, true/false or a character such as 'a')%s",
                   v, path, bt_type_known_spellings(), bt_rule_docs[BT_RULE_YAML_TYPES].tail);
}

/* tuple -> null | [item, ...] */
static int read_tuple(Reader *r, const yaml_node_t *n, const char *path, Tuple *tu)
{
    yaml_node_item_t *it;
    int i = 0;

    tu->ids = NULL;
    tu->n = 0;
    tu->line = (int)n->start_mark.line + 1;
    tu->col = (int)n->start_mark.column + 1;
    tu->path = path;
    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(r, n,
                       "%s must be a sequence of type names such as [int, double], or null "
                       "for an untemplated function; got %s",
                       path, describe(r, n));
    tu->n = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (tu->n == 0)
        return fail_at(r, n,
                       "%s is an empty type tuple; write null for an untemplated "
                       "function",
                       path);
    if (spend(r, tu->n, n, path, seen(r, n)) < 0)
        return -1;
    tu->ids = bt_arena_alloc(r->arena, (size_t)tu->n * sizeof *tu->ids);
    if (!tu->ids)
        return nomem(r);
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
        yaml_node_t *tn = child(r, *it);
        if (tn->type != YAML_SCALAR_NODE || is_null(tn))
            return fail_at(r, tn, "type %d of %s must be a type name, not %s", i, path,
                           describe(r, tn));
        if (read_item(r, tn, path, &tu->ids[i]) < 0)
            return -1;
    }
    return 0;
}

/* An entry's two keys, 'types' and 'functions', into *types and *funcs
 * (epath names the entry in messages). */
static int entry_keys(Reader *r, const yaml_node_t *n, const char *epath, yaml_node_t **types,
                      yaml_node_t **funcs)
{
    static const char *const keys[] = {"types", "functions"};
    yaml_node_pair_t *p;

    *types = *funcs = NULL;
    if (n->type != YAML_MAPPING_NODE)
        return fail_at(r, n, "entry %s must be a mapping with 'types' and 'functions' keys, not %s",
                       epath, describe(r, n));
    for (p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = child(r, p->key);
        int i = key_of(k, keys, 2);
        yaml_node_t **slot = i == 0 ? types : funcs;
        if (i < 0)
            return unknown_key(r, k, keys, 2, "key",
                               bt_arena_printf(r->arena, " in entry %s", epath),
                               "'types' and 'functions'");
        if (*slot)
            return fail_at(r, k, "duplicate key '%s' in entry %s", sval(k), epath);
        *slot = child(r, p->value);
    }
    if (!*funcs)
        return fail_at(r, n, "entry %s has no 'functions' key", epath);
    if (!*types)
        return fail_at(r, n,
                       "entry %s has no 'types' key (write 'types: null' for untemplated "
                       "functions)",
                       epath);
    return 0;
}

/* types -> null | [tuple, ...], of entry epath: its tuples into *tuples
 * (arena), *n_tuples of them (one, a null tuple, for `types: null`). */
static int read_types(Reader *r, const yaml_node_t *types, const char *epath, Tuple **tuples,
                      int *n_tuples)
{
    yaml_node_item_t *it;
    int i, n;

    if (is_null(types)) {
        *n_tuples = 1;
        if (!(*tuples = bt_arena_alloc(r->arena, sizeof **tuples)))
            return nomem(r);
        return read_tuple(r, types, bt_arena_printf(r->arena, "%s.types", epath), *tuples);
    }
    if (types->type != YAML_SEQUENCE_NODE)
        return fail_at(r, types,
                       "%s.types must be a sequence of type tuples or null, "
                       "not %s",
                       epath, describe(r, types));
    n = (int)(types->data.sequence.items.top - types->data.sequence.items.start);
    if (n == 0)
        return fail_at(r, types,
                       "%s.types is empty; write 'types: null' for untemplated "
                       "functions",
                       epath);
    *n_tuples = n;
    if (!(*tuples = bt_arena_alloc(r->arena, (size_t)n * sizeof **tuples)))
        return nomem(r);
    for (it = types->data.sequence.items.start, i = 0; i < n; it++, i++) {
        const char *tpath = bt_arena_printf(r->arena, "%s.types[%d]", epath, i);
        if (!tpath)
            return nomem(r);
        if (read_tuple(r, child(r, *it), tpath, &(*tuples)[i]) < 0)
            return -1;
    }
    return 0;
}

/* functions -> [ident, ...] of entry n (epath; alias: walked before), each
 * paired with every one of tuples[n_tuples], function-major. */
static int read_functions(Reader *r, const yaml_node_t *funcs, const yaml_node_t *n,
                          const char *epath, int alias, const Tuple *tuples, int n_tuples)
{
    yaml_node_item_t *it;
    int i, j;

    if (funcs->type != YAML_SEQUENCE_NODE)
        return fail_at(r, funcs, "%s.functions must be a sequence of function names, not %s", epath,
                       describe(r, funcs));
    if (funcs->data.sequence.items.top == funcs->data.sequence.items.start)
        return fail_at(r, funcs, "%s.functions is empty", epath);
    i = (int)(funcs->data.sequence.items.top - funcs->data.sequence.items.start);
    if (spend(r, (long)i * (n_tuples + 1), n, epath, alias) < 0)
        return -1;
    for (it = funcs->data.sequence.items.start, i = 0; it < funcs->data.sequence.items.top;
         it++, i++) {
        yaml_node_t *fn = child(r, *it);
        const char *name = NULL, *fpath = NULL;
        if (!is_ident_node(fn)) { /* ident_at says why */
            if (!(fpath = bt_arena_printf(r->arena, "%s.functions[%d]", epath, i)))
                return nomem(r);
            ident_at(r, fn, fpath);
            return -1;
        }
        for (j = 0; j < n_tuples; j++)
            if (add_inst(r, fn, epath, i, &name, &fpath, &tuples[j]) < 0)
                return -1;
    }
    return 0;
}

/* entry -> {types: types, functions: [ident, ...]} */
static int read_entry(Reader *r, const yaml_node_t *n, int index)
{
    const char *epath = bt_arena_printf(r->arena, "%s[%d]", r->prefix, index);
    yaml_node_t *types, *funcs;
    Tuple *tuples = NULL;
    int n_tuples = 0, alias;

    if (!epath)
        return nomem(r);
    if (entry_keys(r, n, epath, &types, &funcs) < 0)
        return -1;
    alias = seen(r, n);
    if (read_types(r, types, epath, &tuples, &n_tuples) < 0)
        return -1;
    return read_functions(r, funcs, n, epath, alias, tuples, n_tuples);
}

static int read_entries(Reader *r, const yaml_node_t *n, const char *what)
{
    yaml_node_item_t *it;
    int i = 0;

    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(r, n, "%s must be a sequence of {types, functions} entries, not %s", what,
                       describe(r, n));
    if (n->data.sequence.items.top == n->data.sequence.items.start)
        return fail_at(r, n, "%s lists no entries", what);
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++)
        if (read_entry(r, child(r, *it), i) < 0)
            return -1;
    return 0;
}

/* remaps -> null | [{ident: ident}, ...] */
static int same_from(const void *ctx, int id)
{
    const Pair *k = ctx;
    return strcmp(k->r->remaps[id].from, k->func) == 0;
}

static int read_remaps(Reader *r, const yaml_node_t *n)
{
    yaml_node_item_t *it;
    BtIndex index;
    int i = 0, j, rc = -1;

    if (is_null(n))
        return 0;
    if (n->type != YAML_SEQUENCE_NODE)
        return fail_at(r, n,
                       "remaps must be a sequence of single-pair mappings such as "
                       "'- from_name: to_name', not %s",
                       describe(r, n));
    r->cap_remaps = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (spend(r, r->cap_remaps, n, "remaps", 0) < 0)
        return -1;
    r->remaps = bt_arena_array(r->arena, (size_t)r->cap_remaps + 1, sizeof *r->remaps);
    if (!r->remaps || bt_index_init(&index, r->arena, (size_t)r->cap_remaps) < 0)
        return nomem(r);
    for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
        yaml_node_t *m = child(r, *it);
        const char *path = bt_arena_printf(r->arena, "remaps[%d]", i);
        const char *from, *to;
        int pairs;
        BtRemap *rm;
        Pair k = {r, NULL, NULL, 0};
        size_t at;

        if (!path) {
            nomem(r);
            goto done;
        }
        pairs = m->type == YAML_MAPPING_NODE
                    ? (int)(m->data.mapping.pairs.top - m->data.mapping.pairs.start)
                    : -1;
        if (pairs != 1) {
            fail_at(r, m,
                    "%s must be a single-pair mapping such as "
                    "'fit_candidates_real: fit_candidates', not %s",
                    path,
                    pairs < 0    ? describe(r, m)
                    : pairs == 0 ? "an empty mapping"
                                 : "a mapping with several pairs");
            goto done;
        }
        if (!(from = ident_at(r, child(r, m->data.mapping.pairs.start->key), path)) ||
            !(to = ident_at(r, child(r, m->data.mapping.pairs.start->value), path)))
            goto done;
        k.func = from;
        j = bt_index_find(&index, bt_hash_str(&index, from), same_from, &k, &at);
        if (j >= 0 && strcmp(r->remaps[j].to, to) != 0) {
            fail_at(r, m, "'%s' is remapped twice: to '%s' in %s and to '%s' in %s", from,
                    r->remaps[j].to, r->remaps[j].path, to, path);
            goto done;
        }
        if (j >= 0)
            continue; /* exact repeat */
        bt_index_put(&index, at, r->n_remaps);
        rm = &r->remaps[r->n_remaps++];
        rm->from = from;
        rm->to = to;
        rm->line = (int)m->start_mark.line + 1;
        rm->col = (int)m->start_mark.column + 1;
        rm->path = path;
    }
    rc = 0;
done:
    bt_index_release(&index, r->arena);
    return rc;
}

/* The mapping's keys into v[ROOT_INSTANTIATE...] (NULL: absent). */
enum { ROOT_INSTANTIATE, ROOT_ANNOTATE, ROOT_REMAPS, ROOT_KEYS };

static int root_keys(Reader *r, const yaml_node_t *root, yaml_node_t **v)
{
    static const char *const keys[ROOT_KEYS] = {"instantiate", "annotate", "remaps"};
    yaml_node_pair_t *p;

    memset(v, 0, ROOT_KEYS * sizeof *v);
    for (p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = child(r, p->key);
        int i = key_of(k, keys, ROOT_KEYS);
        if (i < 0)
            return unknown_key(r, k, keys, ROOT_KEYS, "top-level key", "",
                               "'instantiate', 'annotate' and 'remaps'; a single entry is "
                               "written '- types: ...'");
        if (v[i])
            return fail_at(r, k, "duplicate top-level key '%s'", sval(k));
        v[i] = child(r, p->value);
    }
    if (!v[ROOT_INSTANTIATE] && !v[ROOT_ANNOTATE])
        return fail_at(r, root,
                       "instantiate.yml has no 'instantiate' key (the templates to "
                       "instantiate) and no 'annotate' key (notes on C functions); give one "
                       "or both");
    return 0;
}

/* file -> entries | {instantiate: entries?, annotate: annotate?, remaps: remaps?} */
static int read_root(Reader *r, const yaml_node_t *root, int *plans_all)
{
    yaml_node_t *v[ROOT_KEYS];

    if (!root || is_null(root))
        return bt_diag_set(r->diag, BT_DIAG_INSTANTIATE, r->file, 0, 0, "empty instantiate.yml");
    if (root->type == YAML_SEQUENCE_NODE) {
        r->prefix = "";
        return read_entries(r, root, "instantiate.yml");
    }
    if (root->type != YAML_MAPPING_NODE)
        return fail_at(r, root,
                       "instantiate.yml must be a sequence of {types, functions} "
                       "entries or a mapping with an 'instantiate' or 'annotate' key, not %s",
                       describe(r, root));
    r->prefix = "instantiate";
    if (root_keys(r, root, v) < 0)
        return -1;
    *plans_all = !v[ROOT_INSTANTIATE];
    if (v[ROOT_INSTANTIATE] && read_entries(r, v[ROOT_INSTANTIATE], "instantiate") < 0)
        return -1;
    if (v[ROOT_ANNOTATE] && bt_yaml_annotate(r, v[ROOT_ANNOTATE]) < 0)
        return -1;
    return v[ROOT_REMAPS] ? read_remaps(r, v[ROOT_REMAPS]) : 0;
}

/* libyaml's 1/0 and its error fields into a BtDiag. */
static int yaml_failed(Reader *r, const yaml_parser_t *parser)
{
    char msg[1024];
    int line, col;

    if (parser->error == YAML_MEMORY_ERROR)
        return nomem(r);
    if (parser->error == YAML_READER_ERROR) {
        size_t i, off = parser->problem_offset;
        line = col = 1;
        for (i = 0; i < off && i < r->len; i++, col++)
            if (r->text[i] == '\n') {
                line++;
                col = 0;
            }
        if (parser->problem_value >= 0)
            snprintf(msg, sizeof msg, "%s (byte 0x%02X)",
                     parser->problem ? parser->problem : "cannot read input",
                     (unsigned)parser->problem_value);
        else
            snprintf(msg, sizeof msg, "%s", parser->problem ? parser->problem : "cannot read");
    } else {
        size_t at = parser->problem_mark.index;
        const char *problem = parser->problem ? parser->problem : "invalid YAML";
        const char *hint = at < r->len && r->text[at] == '\t' ? "; indent with spaces, not tabs"
                                                              : "";
        line = (int)parser->problem_mark.line + 1;
        col = (int)parser->problem_mark.column + 1;
        if (parser->context)
            snprintf(msg, sizeof msg, "%s (%s at line %d, column %d)%s", problem, parser->context,
                     (int)parser->context_mark.line + 1, (int)parser->context_mark.column + 1,
                     hint);
        else
            snprintf(msg, sizeof msg, "%s%s", problem, hint);
    }
    return bt_diag_set(r->diag, BT_DIAG_INSTANTIATE, r->file, line, col, "%s", msg);
}

static const yaml_char_t *anchor_of(const yaml_event_t *e)
{
    switch (e->type) {
    case YAML_SCALAR_EVENT: return e->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT: return e->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT: return e->data.mapping_start.anchor;
    default: return NULL;
    }
}

/* The pass over the events before loading: nesting depth, nodes, anchors
 * and aliases within limits (libyaml's document takes ~100 bytes a node). A
 * syntax error ends it quietly: the loader then reports it where it would
 * have. */
static int prescan(Reader *r)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int depth = 0, anchors = 0, aliases = 0, rc = 0, done = 0;
    long nodes = 0;

    if (!yaml_parser_initialize(&parser))
        return nomem(r);
    yaml_parser_set_input_string(&parser, (const unsigned char *)r->text, r->len);
    while (!done && rc == 0) {
        if (!yaml_parser_parse(&parser, &ev)) {
            if (parser.error == YAML_MEMORY_ERROR)
                rc = nomem(r);
            break;
        }
        if (anchor_of(&ev) && ++anchors > MAX_ANCHORS)
            rc = fail_mark(r, &ev.start_mark, "more than %d anchors (&name) in instantiate.yml",
                           MAX_ANCHORS);
        if ((ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
             ev.type == YAML_MAPPING_START_EVENT) &&
            ++nodes > MAX_NODES)
            rc = fail_mark(r, &ev.start_mark, "more than %ld nodes in instantiate.yml", MAX_NODES);
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > MAX_DEPTH)
                rc = fail_mark(r, &ev.start_mark, "instantiate.yml nests deeper than %d levels",
                               MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_ALIAS_EVENT:
            if (++aliases > MAX_ALIASES)
                rc = fail_mark(r, &ev.start_mark,
                               "more than %d aliases (*name) in "
                               "instantiate.yml",
                               MAX_ALIASES);
            break;
        case YAML_STREAM_END_EVENT: done = 1; break;
        default: break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}

int bt_yaml_read(const char *file, const char *text, size_t len, BtArena *arena, BtInstTable *out,
                 BtDiag *diag)
{
    yaml_parser_t parser;
    yaml_document_t doc, extra;
    int have_doc = 0, have_extra = 0, plans_all = 0, rc = -1;
    Reader r;

    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    r.file = file;
    r.text = text;
    r.len = len;
    r.doc = &doc;
    r.arena = arena;
    r.diag = diag;
    r.budget = MAX_EXPANSION;
    if (prescan(&r) < 0)
        return -1;
    if (!yaml_parser_initialize(&parser))
        return bt_diag_nomem(diag);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_failed(&r, &parser);
        goto done;
    }
    have_doc = 1;
    r.seen = bt_arena_resize(arena, NULL, (size_t)(doc.nodes.top - doc.nodes.start));
    r.afile = bt_arena_strdup(arena, file);
    if (!r.seen || !r.afile) {
        nomem(&r);
        goto done;
    }
    if (read_root(&r, yaml_document_get_root_node(&doc), &plans_all) < 0)
        goto done;
    if (!yaml_parser_load(&parser, &extra)) {
        yaml_failed(&r, &parser);
        goto done;
    }
    have_extra = 1;
    if (yaml_document_get_root_node(&extra)) {
        r.doc = &extra;
        fail_at(&r, yaml_document_get_root_node(&extra),
                "instantiate.yml must hold a single YAML document");
        goto done;
    }
    if (arena->failed) {
        nomem(&r);
        goto done;
    }
    out->file = out->notes.file = r.afile;
    out->insts = r.insts;
    out->n_insts = r.n_insts;
    out->remaps = r.remaps;
    out->n_remaps = r.n_remaps;
    out->notes.funcs = r.nfuncs;
    out->notes.n_funcs = r.n_nfuncs;
    out->plans_all = plans_all;
    rc = 0;
done:
    bt_index_release(&r.inst_index, arena);
    bt_arena_release(arena, r.seen);
    if (have_extra)
        yaml_document_delete(&extra);
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}
