/* bt_parse.c - header reader: templates and function declarations into
 * declaration records; bodies skipped by brace matching. The type, param
 * and params rules are bt_parse_param.c's; errors at a token and bracket
 * matching bt_parse_tok.c's (what they share: bt_parse_impl.h).
 *
 * The grammar it accepts (tokens from bt_lex.c; preprocessor lines and
 * comments are already gone, the comment block above a token is its doc):
 *
 *   header    -> item* EOF
 *   item      -> ';'
 *              | ['inline'] 'namespace' [IDENT ('::' ['inline'] IDENT)*] '{' item* '}'
 *              | 'extern' STRING '{' item* '}'
 *              | 'extern' STRING item
 *              | 'template' '<' [tparam (',' tparam)*] '>' decl
 *              | decl
 *   tparam    -> ('class' | 'typename') [IDENT] ['=' balanced]
 *              | balanced                            (non-type: unbindable)
 *   decl      -> spec* (function | other)
 *   spec      -> 'inline' | 'static' | 'extern' [STRING] | 'constexpr'
 *              | '__global__' | '__device__' | '__host__' | '__forceinline__'
 *              | '__attribute__' '(' balanced ')' | '[' '[' balanced ']' ']'
 *   function  -> type IDENT '(' params ')' trailer* (';' | '=' IDENT ';' | body)
 *   params    -> [ 'void' | param (',' param)* ]
 *   param     -> '...' | type [IDENT] ('[' balanced ']')* ['=' balanced]
 *   type      -> (cv | name)+ ('*' | '&' | '&&' | cv)*
 *   name      -> ['::'] IDENT ['<' balanced '>'] ('::' IDENT ['<' balanced '>'])*
 *   trailer   -> cv | 'noexcept' ['(' balanced ')'] | 'throw' '(' balanced ')'
 *              | 'override' | 'final' | '-' '>' type | '__attribute__' '(' balanced ')'
 *   body      -> '{' (any token, braces matched) '}'
 *   other     -> (any token, ([{ balanced)* up to ';', or up to a '{...}' group
 *                when the statement needs no ';' (not struct/class/union/enum/
 *                typedef/using, no '=' initializer))
 *
 * A function is recognised by its head: an identifier, after at least one
 * type token, followed by '(' at angle depth 0. Everything else at file
 * scope is "other" and skipped. Functions the dialect can't bind are kept
 * with an unbindable reason; only malformed syntax is an error. */
#include "bt_parse_impl.h"

#include <stdio.h>

#include "bt_cpp.h"

static const char *const other_words[] = {
    "struct", "class",    "union",     "enum", "typedef", "using", "static_assert",
    "friend", "template", "namespace", "asm",  "__asm__", NULL};

static int parse_items(Parser *p, int inside);

/* ---- skipping ---- */

/* body -> '{' (any token, braces matched) '}' */
static int skip_body(Parser *p, const char *fname)
{
    int depth = 0, open_line = cur(p)->line;

    do {
        const BtToken *t = cur(p);
        if (at_end(t))
            return bt_parse_fail(
                p, t, "unexpected end of file in function body of '%s' (opened at line %d)", fname,
                open_line);
        if (bt_lex_is(t, "{"))
            depth++;
        else if (bt_lex_is(t, "}"))
            depth--;
        advance(p);
    } while (depth > 0);
    return 0;
}

/* other -> tokens up to ';', or a '{...}' group when no ';' is needed */
static int skip_other(Parser *p)
{
    int needs_semi = 0;

    for (;;) {
        const BtToken *t = cur(p);
        if (at_end(t))
            return bt_parse_expected(p, t, "';'");
        if (bt_lex_is(t, ";")) {
            advance(p);
            return 0;
        }
        if (bt_lex_is(t, "}"))
            return 0;
        if (bt_lex_is(t, "{")) {
            if (bt_parse_skip_balanced(p) < 0)
                return -1;
            if (!needs_semi)
                return 0;
            continue;
        }
        if (closer_of(t)) {
            if (bt_parse_skip_balanced(p) < 0)
                return -1;
            continue;
        }
        if (is_closer(t)) {
            char nb[64];
            return bt_parse_fail(p, t, "unexpected %s", bt_parse_near(t, nb, sizeof nb));
        }
        if (is_any(t, other_words) || bt_lex_is(t, "="))
            needs_semi = 1;
        advance(p);
    }
}

/* ---- functions ---- */

/* trailer -> cv | 'noexcept' [...] | 'throw' (...) | 'override' | 'final' | '-' '>' type
 * *ret_reason is bt_parse_return_type's answer for the leading type; a trailing
 * return type replaces a lone `auto`. */
static int parse_trailer(Parser *p, BtDecl *d, const Tmpl *tm, const char **ret_reason)
{
    static const char *const words[] = {"const", "volatile", "override", "final", "&", NULL};

    for (;;) {
        const BtToken *t = cur(p);
        if (is_any(t, words) || bt_lex_is(t, "&&")) {
            advance(p);
        } else if (bt_lex_is(t, "noexcept") || bt_lex_is(t, "throw") || bt_lex_is(t, "__asm__") ||
                   bt_lex_is(t, "asm") || bt_lex_is(t, "__asm")) {
            advance(p);
            if (bt_lex_is(cur(p), "(") && bt_parse_skip_balanced(p) < 0)
                return -1;
        } else if (bt_lex_is(t, "-") && is(p, p->pos + 1, ">")) {
            int a = p->pos + 2, b = a, rc;
            const char *why;
            while (!at_end(tok(p, b)) && !is(p, b, ";") && !is(p, b, "{") && !is(p, b, "=") &&
                   !is(p, b, "override") && !is(p, b, "final"))
                b++; /* a type has no brackets but '<...>', which holds none of these */
            if (b == a)
                return bt_parse_expected(p, tok(p, a), "return type");
            if (is(p, a, "decltype")) {
                if (!*ret_reason || !**ret_reason)
                    *ret_reason = "return type is a decltype(...)";
            } else if (*ret_reason && !**ret_reason) {
                why = bt_parse_return_type(p, d, tm, a, b, &rc);
                if (rc < 0)
                    return -1;
                *ret_reason = why && !*why ? "deduced return type ('auto' after '->')" : why;
            } else if (!*ret_reason) {
                *ret_reason = "trailing return type after a return type other than 'auto'";
            }
            p->pos = b;
        } else {
            return 0;
        }
    }
}

/* Old-style (K&R) parameter declarations between ')' and the body: the
 * parameters were bare names, and a type word follows where a trailer,
 * ';' or '{' should be. */
static int knr_declarations(const Parser *p)
{
    const BtToken *t = cur(p);
    return p->knr_names && t->kind == BT_TOK_IDENT && !bt_lex_is(t, "try");
}

/* function -> type IDENT '(' params ')' trailer* (';' | '=' IDENT ';' | body) */
static int parse_function(Parser *p, BtDecl *d, const Tmpl *tm, int name_at)
{
    const BtToken *nt = tok(p, name_at);
    const char *ret_reason;
    int rc, in_parens = is(p, name_at - 1, "(") && is(p, name_at + 1, ")");

    ret_reason = bt_parse_return_type(p, d, tm, p->pos, name_at - in_parens, &rc);
    if (rc < 0)
        return -1;
    d->name = tokdup(p, nt);
    if (!d->name)
        return bt_diag_nomem(p->diag);
    d->line = nt->line;
    d->col = bt_lex_col(&p->toks, nt);
    p->pos = name_at + 1 + in_parens;
    if (bt_parse_params(p, d, tm) < 0)
        return -1;
    if (parse_trailer(p, d, tm, &ret_reason) < 0)
        return -1;
    if (ret_reason) { /* the return's reason first */
        d->unbindable = *ret_reason ? ret_reason : "deduced return type ('auto' without '-> type')";
        d->unbindable_rule = BT_RULE_UNBINDABLE;
        d->sizes_missing = 0;
    }
    if (d->n_params > BT_MAX_PARAMS)
        bt_parse_leave_out(d,
                           bt_arena_printf(p->arena, "%d parameters; bindthem binds at most %d",
                                           d->n_params, BT_MAX_PARAMS),
                           BT_RULE_UNBINDABLE);
    if (knr_declarations(p)) {
        int brace = bt_parse_find_top(p, p->pos, p->toks.n - 1, "{");
        d->sizes_missing = 0;
        d->unbindable = "old-style (K&R) parameter declarations; write a prototype";
        if (brace == p->toks.n - 1 || bt_parse_find_top(p, p->pos, brace, "}") < brace)
            return bt_parse_expected(p, cur(p), "';' or '{'");
        p->pos = brace;
    }
    if (bt_lex_is(cur(p), ";")) {
        advance(p);
        return 0;
    }
    if (bt_lex_is(cur(p), "{"))
        return skip_body(p, d->name);
    if (bt_lex_is(cur(p), "=")) {
        advance(p);
        if (cur(p)->kind != BT_TOK_IDENT && cur(p)->kind != BT_TOK_NUMBER)
            return bt_parse_expected(p, cur(p), "'delete' or 'default'");
        advance(p);
        if (!bt_lex_is(cur(p), ";"))
            return bt_parse_expected(p, cur(p), "';'");
        advance(p);
        return 0;
    }
    return bt_parse_expected(p, cur(p), "';' or '{'");
}

static int add_decl(Parser *p, BtDecl **out)
{
    if (p->n_decls == p->cap_decls) {
        int cap = p->cap_decls < 16 ? 16 : p->cap_decls + p->cap_decls / 2;
        BtDecl *v = bt_arena_resize(p->arena, p->decls, (size_t)cap * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag);
        p->decls = v;
        p->cap_decls = cap;
    }
    *out = &p->decls[p->n_decls];
    memset(*out, 0, sizeof **out);
    (*out)->file = p->own_file;
    return 0;
}

/* A typedef, `using` alias or enum is recorded (bt_parse_typedef.c) when
 * it can be read; anything else of other_words, or what is not read, is
 * skipped. */
static int type_decl(Parser *p)
{
    int r, end, ref;

    if (bt_lex_is(cur(p), "typedef") || bt_lex_is(cur(p), "using")) {
        if ((r = bt_parse_typedef(p)) <= 0)
            return r;
    } else if (bt_lex_is(cur(p), "enum") && (r = bt_parse_enum(p, p->pos, &end, &ref)) <= 0) {
        if (r < 0)
            return -1;
        p->pos = end; /* then its declarators, if any, up to ';' */
    } else if ((bt_lex_is(cur(p), "struct") || bt_lex_is(cur(p), "union")) &&
               tok(p, p->pos + 1)->kind == BT_TOK_IDENT && is(p, p->pos + 2, "{")) {
        char key[300];
        snprintf(key, sizeof key, "%s %.*s", bt_lex_is(cur(p), "union") ? "union" : "struct",
                 (int)tok(p, p->pos + 1)->len, tok(p, p->pos + 1)->s);
        if (bt_parse_complete(p, p->pos, key) < 0)
            return -1;
    }
    return skip_other(p);
}

static int function_head(const Parser *p);

/* A function returning an elaborated type: `struct TAG *f(...)`, `enum TAG f(...)`. */
static int elaborated_function(const Parser *p)
{
    const BtToken *t = cur(p);
    return (bt_lex_is(t, "struct") || bt_lex_is(t, "union") || bt_lex_is(t, "enum")) &&
           tok(p, p->pos + 1)->kind == BT_TOK_IDENT && !is(p, p->pos + 2, "{") &&
           function_head(p) >= 0;
}

/* Where the function name is, if the tokens from p->pos head a function:
 * an identifier after at least one type token, then '(' at angle depth 0. */
static int function_head(const Parser *p)
{
    int j, angle = 0;

    for (j = p->pos;; j++) {
        const BtToken *t = tok(p, j);
        if (at_end(t) || bt_lex_is(t, ";") || bt_lex_is(t, "{") || bt_lex_is(t, "}") ||
            bt_lex_is(t, "operator"))
            return -1;
        if (bt_lex_is(t, "<") && j > p->pos && tok(p, j - 1)->kind == BT_TOK_IDENT)
            angle++;
        else if (bt_lex_is(t, ">") && angle > 0)
            angle--;
        else if (angle == 0 &&
                 (t->kind == BT_TOK_PUNCT && strchr("(=[:,)]", *t->s) && !bt_lex_is(t, "::")))
            break;
    }
    if (is(p, j, "(") && j > p->pos && tok(p, j + 1)->kind == BT_TOK_IDENT && is(p, j + 2, ")") &&
        is(p, j + 3, "(") && !is_any(tok(p, j + 1), bt_parse_builtin_words))
        return j + 1; /* `type (NAME)(params)`: a name in parentheses (libpng's) */
    if (!is(p, j, "(") || j < p->pos + 2 || tok(p, j - 1)->kind != BT_TOK_IDENT ||
        is_any(tok(p, j - 1), bt_parse_builtin_words) || is_any(tok(p, j - 1), bt_parse_cv_words) ||
        is(p, j - 2, "::"))
        return -1;
    return j - 1;
}

/* A declaration's specifiers, before its type. */
typedef struct Specs {
    int is_inline, is_static, is_extern, global, device, host;
} Specs;

/* spec* -> sp (extern "C" into *extern_c) */
static void read_specs(Parser *p, Specs *sp, int *extern_c)
{
    for (;;) {
        const BtToken *t = cur(p);
        if (bt_lex_is(t, "inline") || bt_lex_is(t, "__inline") || bt_lex_is(t, "__inline__") ||
            bt_lex_is(t, "__forceinline__") || bt_lex_is(t, "__forceinline"))
            sp->is_inline = 1;
        else if (bt_lex_is(t, "static"))
            sp->is_static = 1;
        else if (bt_lex_is(t, "__global__"))
            sp->global = 1;
        else if (bt_lex_is(t, "__device__"))
            sp->device = 1;
        else if (bt_lex_is(t, "__host__"))
            sp->host = 1;
        else if (bt_lex_is(t, "extern")) {
            if (tok(p, p->pos + 1)->kind == BT_TOK_STRING) {
                advance(p);
                *extern_c = bt_lex_is(cur(p), "\"C\"");
            } else {
                sp->is_extern = 1;
            }
        } else if (bt_lex_is(t, "constexpr") || bt_lex_is(t, "virtual") ||
                   bt_lex_is(t, "explicit") || bt_lex_is(t, "__extension__") ||
                   bt_lex_is(t, "_Noreturn")) {
        } else {
            break;
        }
        advance(p);
    }
}

/* decl -> spec* (function | other) */
static int parse_decl(Parser *p, const Tmpl *tm, int extern_c, int doc_at)
{
    Specs sp = {.is_static = p->anon_ns};
    int name_at, spec_at = p->pos, has_doc;
    BtDecl *d = NULL;
    const BtToken *dt;
    const char *s, *doc = NULL, *doc_end = NULL;

    read_specs(p, &sp, &extern_c);
    if (elaborated_function(p)) {
        name_at = function_head(p);
    } else {
        if (is_any(cur(p), other_words) && !tm)
            return type_decl(p);
        if (is_any(cur(p), other_words) || (name_at = function_head(p)) < 0)
            return skip_other(p);
    }
    if (add_decl(p, &d) < 0)
        return -1;
    d->ns = p->ns;
    d->n_ns = p->n_ns;
    d->extern_c = extern_c || p->extern_c;
    /* `extern inline` (GNU's gnu_inline, as GMP's mpz_get_ui; C99's external
     * definition): the library has the symbol, as for a plain declaration */
    d->is_inline = sp.is_inline && !(sp.is_extern && !sp.is_static);
    d->is_static = sp.is_static;
    d->is_global = sp.global;
    d->is_device = sp.device && !sp.global;
    if (tm) {
        d->tparams = tm->names;
        d->tpinfo = tm->info;
        d->n_tparams = tm->n;
    }
    if (parse_function(p, d, tm, name_at) < 0)
        return -1;
    if (tm && tm->reason)
        bt_parse_leave_out(d, tm->reason, BT_RULE_UNBINDABLE);
    if (sp.device && !sp.global && !sp.host)
        bt_parse_leave_out(d, "__device__ function is not a kernel", BT_RULE_UNBINDABLE);
    dt = tok(p, doc_at);
    has_doc = bt_lex_doc_span(&p->toks, doc_at, &doc, &doc_end);
    d->first_line = dt->line;
    for (s = has_doc ? doc : NULL; s && s < dt->s; s++) /* the doc starts this many lines up */
        d->first_line -= *s == '\n';
    d->last_line = tok(p, p->pos - 1)->line;
    if (!has_doc)
        bt_lex_doc_span(&p->toks, spec_at, &doc, &doc_end);
    if (bt_lex_doc(p->arena, doc, doc_end, &d->doc, p->diag) < 0)
        return -1;
    p->n_decls++;
    return 0;
}

/* Skips a template argument up to ',' or '>' at depth 0. */
static int skip_targ(Parser *p)
{
    int angle = 0;

    for (;;) {
        const BtToken *t = cur(p);
        if (at_end(t) || bt_lex_is(t, ";") || bt_lex_is(t, "{") || bt_lex_is(t, "}") ||
            (is_closer(t) && angle == 0))
            return bt_parse_expected(p, t, "'>'");
        if (angle == 0 && (bt_lex_is(t, ",") || bt_lex_is(t, ">")))
            return 0;
        if (bt_lex_is(t, "<"))
            angle++;
        else if (bt_lex_is(t, ">"))
            angle--;
        if (closer_of(t)) {
            if (bt_parse_skip_balanced(p) < 0)
                return -1;
            continue;
        }
        advance(p);
    }
}

/* The text of tokens [a, b) as the header writes it (arena), or NULL. */
static const char *span_text(Parser *p, int a, int b)
{
    const BtToken *e = tok(p, b - 1);
    return bt_arena_strndup(p->arena, tok(p, a)->s, (size_t)(e->s + e->len - tok(p, a)->s));
}

/* A value parameter's declaration in tokens [a, b): `int B`, `std::size_t N`,
 * `bool B`. Sets *name and info->type, or tm->reason. */
static int value_tparam(Parser *p, Tmpl *tm, int a, int b, const char **name, BtTParam *info)
{
    TypeInfo ti;
    BtTypeRef ref;
    char kind;
    int k = tm->n;

    info->is_value = 1;
    if (is(p, a, "template")) {
        tm->reason = tm->reason ? tm->reason : "template template parameter";
        return 0;
    }
    if (bt_parse_type(p, a, b, 1, "'>'", &ti) < 0)
        return -1;
    if (ti.name >= 0 && !(*name = tokdup(p, tok(p, ti.name))))
        return bt_diag_nomem(p->diag);
    if (tm->reason)
        return 0;
    memset(&ref, 0, sizeof ref);
    if (ti.name < 0)
        tm->reason = bt_arena_printf(p->arena, "template parameter %d has no name", k + 1);
    else if (bt_parse_resolve(&ti, tm, &ref) < 0 || ref.tparam >= 0 || ti.nptr || ti.nref ||
             ((kind = bt_type(ref.type)->kind) != 'i' && kind != 'u' && kind != 'b'))
        tm->reason = bt_arena_printf(p->arena,
                                     "non-type template parameter '%s' of type '%s%s'; bindthem "
                                     "instantiates integer and bool values",
                                     *name, ti.spelling,
                                     ti.nptr   ? " *"
                                     : ti.nref ? " &"
                                               : "");
    info->type = ref.type;
    return 0;
}

/* tparam -> ('class' | 'typename') ['...'] [IDENT] ['=' balanced]
 *         | type IDENT ['=' balanced]                 (a value: integer or bool) */
static int parse_tparam(Parser *p, Tmpl *tm, const char **name, BtTParam *info)
{
    const BtToken *t = cur(p);
    int k = tm->n, start = p->pos, eq;

    *name = "";
    memset(info, 0, sizeof *info);
    if (bt_lex_is(t, ",") || bt_lex_is(t, ">"))
        return bt_parse_expected(p, t, "template parameter");
    /* `typename T::type N` is a value of a dependent type */
    if (bt_lex_is(t, "class") ||
        (bt_lex_is(t, "typename") &&
         !(tok(p, p->pos + 1)->kind == BT_TOK_IDENT && is(p, p->pos + 2, "::")))) {
        advance(p);
        if (bt_lex_is(cur(p), "...")) {
            tm->reason = tm->reason ? tm->reason : "variadic template";
            advance(p);
        }
        if (cur(p)->kind == BT_TOK_IDENT) {
            *name = tokdup(p, cur(p));
            advance(p);
        } else if (!tm->reason) {
            tm->reason = bt_arena_printf(p->arena, "template parameter %d has no name", k + 1);
        }
        if (bt_lex_is(cur(p), "=")) {
            int a = p->pos + 1;
            advance(p);
            if (skip_targ(p) < 0)
                return -1;
            if (p->pos == a)
                return bt_parse_expected(p, cur(p), "default template argument");
            if (!(info->defval = span_text(p, a, p->pos)))
                return bt_diag_nomem(p->diag);
        }
        if (!bt_lex_is(cur(p), ",") && !bt_lex_is(cur(p), ">"))
            return bt_parse_expected(p, cur(p), "'>'");
        return 0;
    }
    if (skip_targ(p) < 0)
        return -1;
    eq = bt_parse_find_top(p, start, p->pos, "=");
    if (eq == start)
        return bt_parse_expected(p, tok(p, start), "template parameter");
    if (eq + 1 == p->pos)
        return bt_parse_expected(p, cur(p), "default template argument");
    if (eq < p->pos && !(info->defval = span_text(p, eq + 1, p->pos)))
        return bt_diag_nomem(p->diag);
    return value_tparam(p, tm, start, eq, name, info);
}

/* template -> 'template' '<' [tparam (',' tparam)*] '>' decl */
static int parse_template(Parser *p, int extern_c)
{
    int start = p->pos, cap = 8;
    Tmpl tm = {NULL, NULL, 0, NULL};

    advance(p);
    if (!bt_lex_is(cur(p), "<"))
        return skip_other(p); /* explicit instantiation */
    advance(p);
    tm.names = bt_arena_alloc(p->arena, (size_t)cap * sizeof *tm.names);
    tm.info = bt_arena_alloc(p->arena, (size_t)cap * sizeof *tm.info);
    if (!tm.names || !tm.info)
        return bt_diag_nomem(p->diag);
    if (bt_lex_is(cur(p), ">")) {
        tm.reason = "explicit template specialization";
    } else {
        for (;;) {
            const char *name;
            BtTParam info;
            if (parse_tparam(p, &tm, &name, &info) < 0)
                return -1;
            if (tm.n == cap) {
                const char **v = bt_arena_alloc(p->arena, (size_t)cap * 2 * sizeof *v);
                BtTParam *w = bt_arena_alloc(p->arena, (size_t)cap * 2 * sizeof *w);
                if (!v || !w)
                    return bt_diag_nomem(p->diag);
                memcpy(v, tm.names, (size_t)cap * sizeof *v);
                memcpy(w, tm.info, (size_t)cap * sizeof *w);
                tm.names = v;
                tm.info = w;
                cap *= 2;
            }
            if (!name)
                return bt_diag_nomem(p->diag);
            tm.info[tm.n] = info;
            tm.names[tm.n++] = name;
            if (!bt_lex_is(cur(p), ","))
                break;
            advance(p);
        }
    }
    advance(p); /* '>' */
    if (bt_lex_is(cur(p), "template"))
        return skip_other(p);
    return parse_decl(p, &tm, extern_c, start);
}

/* namespace -> ['inline'] 'namespace' [IDENT ('::' ['inline'] IDENT)*]
 *              ('{' item* '}' | '=' other) */
static int parse_namespace(Parser *p)
{
    const char **saved = p->ns;
    int saved_n = p->n_ns, saved_anon = p->anon_ns, start, n_names = 0;

    if (bt_lex_is(cur(p), "inline"))
        advance(p);
    advance(p);
    start = p->pos;
    if (cur(p)->kind == BT_TOK_IDENT) {
        for (;;) {
            advance(p);
            n_names++;
            if (!bt_lex_is(cur(p), "::"))
                break;
            advance(p);
            if (bt_lex_is(cur(p), "inline")) /* C++20 a::inline b */
                advance(p);
            if (cur(p)->kind != BT_TOK_IDENT)
                return bt_parse_expected(p, cur(p), "namespace name");
        }
    }
    if (bt_lex_is(cur(p), "="))
        return skip_other(p); /* namespace alias */
    if (!bt_lex_is(cur(p), "{"))
        return bt_parse_expected(p, cur(p), n_names ? "'::' or '{'" : "'{'");
    if (n_names == 0) {
        p->anon_ns = 1;
    } else {
        int k = p->n_ns;
        const char **v = bt_arena_alloc(p->arena, (size_t)(k + n_names) * sizeof *v);
        if (!v)
            return bt_diag_nomem(p->diag);
        if (k)
            memcpy(v, p->ns, (size_t)k * sizeof *v);
        for (int i = start; i < p->pos; i++) {
            if (tok(p, i)->kind == BT_TOK_IDENT && !bt_lex_is(tok(p, i), "inline") &&
                !(v[k++] = tokdup(p, tok(p, i))))
                return bt_diag_nomem(p->diag);
        }
        p->ns = v;
        p->n_ns = k;
    }
    advance(p);
    if (parse_items(p, 1) < 0)
        return -1;
    advance(p); /* '}' */
    p->ns = saved;
    p->n_ns = saved_n;
    p->anon_ns = saved_anon;
    return 0;
}

/* item -> ';' | namespace | 'extern' STRING ('{' item* '}' | item) | template | decl */
static int parse_item(Parser *p)
{
    const BtToken *t = cur(p);
    int r;

    if (bt_lex_is(t, ";")) {
        advance(p);
        return 0;
    }
    if (++p->depth > MAX_NEST)
        return bt_parse_fail(p, t, "declarations nested too deeply");
    if (bt_lex_is(t, "namespace") || (bt_lex_is(t, "inline") && is(p, p->pos + 1, "namespace"))) {
        r = parse_namespace(p);
    } else if (bt_lex_is(t, "extern") && tok(p, p->pos + 1)->kind == BT_TOK_STRING) {
        int c = is(p, p->pos + 1, "\"C\"");
        if (is(p, p->pos + 2, "{")) {
            int saved = p->extern_c;
            p->pos += 3;
            p->extern_c = c;
            r = parse_items(p, 1);
            advance(p); /* '}' */
            p->extern_c = saved;
        } else {
            int start = p->pos;
            p->pos += 2;
            if (bt_lex_is(cur(p), "template"))
                r = parse_template(p, c);
            else
                r = parse_decl(p, NULL, c, start);
        }
    } else if (bt_lex_is(t, "template")) {
        r = parse_template(p, 0);
    } else {
        r = parse_decl(p, NULL, 0, p->pos);
    }
    p->depth--;
    return r;
}

/* Where reading resumes after an unreadable declaration starting at token
 * start: after the first ';' at brace depth 0, or after the '}' closing a
 * brace group the declaration opened; at a '}' closing the enclosing block
 * (not consumed) or at the end. Always past start unless start ends the file. */
static int resync(const Parser *p, int start)
{
    int braces = 0, i;

    for (i = start;; i++) {
        const BtToken *t = tok(p, i);
        if (at_end(t))
            return i;
        if (bt_lex_is(t, ";") && braces == 0)
            return i + 1;
        if (bt_lex_is(t, "{"))
            braces++;
        else if (bt_lex_is(t, "}") && braces == 0)
            return i; /* the enclosing block's */
        else if (bt_lex_is(t, "}") && --braces == 0)
            return i + 1;
    }
}

/* The name of an unreadable declaration in [a, b): the identifier before
 * its first '(' at bracket depth 0, or NULL. */
static const BtToken *unreadable_name(const Parser *p, int a, int b)
{
    int i = bt_parse_find_top(p, a, b, "(");

    if (i < b && i > a && tok(p, i - 1)->kind == BT_TOK_IDENT &&
        !is_any(tok(p, i - 1), bt_parse_builtin_words) && !is_any(tok(p, i - 1), other_words))
        return tok(p, i - 1);
    return NULL;
}

/* The item at token start could not be read (p->diag says why): records it
 * as an unbindable declaration and moves past it (see resync). */
static int recover(Parser *p, int start)
{
    char where[sizeof p->diag->message + 64];
    const char *clean;
    int fail_at = p->fail_tok, end;
    const BtToken *nt;
    BtDecl *d;

    bt_diag_format(p->diag, where, sizeof where);
    bt_diag_init(p->diag);
    end = resync(p, start);
    if (is(p, start, "}") && end == start)
        end = start + 1; /* a stray '}' at file scope */
    p->pos = end;
    if (at_end(tok(p, fail_at)) && at_end(tok(p, end))) {
        if (p->eof_recorded)
            return 0;
        p->eof_recorded = 1;
    }
    if (add_decl(p, &d) < 0)
        return -1;
    nt = unreadable_name(p, start, end > start ? end : start + 1);
    d->name = nt ? tokdup(p, nt) : bt_arena_printf(p->arena, "<line %d>", tok(p, start)->line);
    clean = bt_lex_utf8_text(p->arena, where);
    d->unbindable = clean ? bt_arena_printf(p->arena, "cannot read the declaration: %s", clean)
                          : NULL;
    d->doc = "";
    if (!d->name || !d->unbindable)
        return bt_diag_nomem(p->diag);
    d->unreadable = 1;
    d->ret.tparam = -1;
    d->ret.type = BT_VOID;
    d->ns = p->ns;
    d->n_ns = p->n_ns;
    d->extern_c = p->extern_c;
    d->line = (nt ? nt : tok(p, start))->line;
    d->col = bt_lex_col(&p->toks, nt ? nt : tok(p, start));
    d->first_line = tok(p, start)->line;
    d->last_line = tok(p, end > start ? end - 1 : start)->line;
    p->n_decls++;
    return 0;
}

/* header -> item* EOF; inside braces, item* up to (not past) '}'. Outside
 * strict mode an item that cannot be read is recorded (recover), and
 * reading goes on after it. */
static int parse_items(Parser *p, int inside)
{
    /* `namespace a::b::c {` nests as deep as three namespace blocks */
    if (inside && p->n_ns > MAX_NEST) /* at the namespace's '{' */
        return bt_parse_fail(p, tok(p, p->pos - 1),
                             "namespaces nested too deeply (%d names; at most %d)", p->n_ns,
                             MAX_NEST);
    for (;;) {
        const BtToken *t = cur(p);
        const char **ns = p->ns;
        int start = p->pos, n_ns = p->n_ns, extern_c = p->extern_c, anon = p->anon_ns;
        int depth = p->depth, r;
        if (t->kind == BT_TOK_ERROR || (t->kind == BT_TOK_EOF && inside)) {
            r = bt_parse_expected(p, t, "'}'");
            if (inside || p->strict)
                return r;
            return recover(p, start);
        }
        if (t->kind == BT_TOK_EOF)
            return 0;
        if (bt_lex_is(t, "}") && inside)
            return 0;
        r = bt_lex_is(t, "}") ? bt_parse_fail(p, t, "unexpected '}'") : parse_item(p);
        if (r == 0)
            continue;
        if (p->strict || p->diag->kind == BT_DIAG_NOMEM)
            return -1;
        p->ns = ns;
        p->n_ns = n_ns;
        p->extern_c = extern_c;
        p->anon_ns = anon;
        p->depth = depth;
        if (recover(p, start) < 0)
            return -1;
    }
}

/* Reads one text's items into p (the context's: only names kept; the
 * header's own #defines known first). */
static int parse_text(Parser *p, const char *file, const char *text, size_t len)
{
    p->file = file;
    p->pos = 0;
    if (bt_lex_all(file, text, len, p->arena, &p->toks, p->diag) < 0)
        return -1;
    bt_lex_strip_attributes(&p->toks);
    for (int i = 0; i < p->toks.n_dirs; i++)
        p->packed |= p->toks.dirs[i].kind == BT_DIR_PACK;
    if (!p->context && bt_parse_defines(p, p->toks.dirs, p->toks.n_dirs) < 0)
        return -1;
    return parse_items(p, 0);
}

/* The header's own files other than itself (an umbrella header's), in the
 * order they first appear: their declarations are the header's, each
 * recorded with its file. */
static int parse_own(Parser *p, const BtCppSplit *sp)
{
    int i;

    for (i = 0; i < sp->n_own; i++) {
        p->own_file = sp->own[i].name;
        p->eof_recorded = 0;
        if (parse_text(p, sp->own[i].name, sp->own[i].text, sp->own[i].len) < 0)
            return -1;
        bt_lex_release(&p->toks, p->arena);
    }
    p->own_file = NULL;
    p->eof_recorded = 0;
    return 0;
}

/* What the header includes (preprocessed): its typedefs and enums, read
 * whatever else it holds; its declarations dropped. */
static int parse_context(Parser *p, const BtCppSplit *sp)
{
    int strict = p->strict;

    p->context = 1;
    p->strict = 0;
    if (parse_text(p, sp->main_file, sp->context, sp->context_len) < 0)
        return -1;
    bt_lex_release(&p->toks, p->arena);
    p->n_decls = 0;
    p->eof_recorded = 0;
    p->context = 0;
    p->strict = strict;
    return 0;
}

int bt_parse_header(const char *file, const char *text, size_t len, int strict, BtArena *arena,
                    BtHeader *out, BtDiag *diag)
{
    Parser p;
    BtCppSplit sp;

    memset(&p, 0, sizeof p);
    memset(out, 0, sizeof *out);
    p.arena = arena;
    p.diag = diag;
    p.strict = strict;
    if (bt_cpp_is_output(text, len)) {
        if (bt_cpp_split(file, text, len, arena, &sp, diag) < 0 || parse_context(&p, &sp) < 0 ||
            parse_own(&p, &sp) < 0)
            return -1;
        text = sp.main;
        len = sp.main_len;
        out->preprocessed = p.preprocessed = 1;
    }
    if (parse_text(&p, file, text, len) < 0)
        return -1;
    if (bt_parse_constants(&p, out) < 0 || bt_parse_finish_names(&p, out) < 0)
        return -1;
    if (arena->failed) /* an unchecked allocation, e.g. an unbindable reason */
        return bt_diag_nomem(diag);
    /* the tokens are most of the memory; the declarations hold copies */
    bt_lex_release(&p.toks, arena);
    if (p.n_decls &&
        !(p.decls = bt_arena_resize(arena, p.decls, (size_t)p.n_decls * sizeof *p.decls)))
        return bt_diag_nomem(diag);
    out->file = bt_arena_strdup(arena, file ? file : "");
    if (!out->file)
        return bt_diag_nomem(diag);
    out->decls = p.decls;
    out->n_decls = p.n_decls;
    out->dirs = p.toks.dirs;
    out->n_dirs = p.toks.n_dirs;
    return 0;
}
