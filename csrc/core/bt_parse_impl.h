/* bt_parse_impl.h - what the parser's files (bt_parse*.c) share, and no one else.
 *
 * The files, one job each, bottom to top: bt_parse_tok.c (errors at a
 * token, the word lists, bracket matching), bt_parse_names.c (the names a
 * header declares, one index; typedefs expanded; handle types),
 * bt_parse_const.c (integer constant expressions, #define constants),
 * bt_parse_param.c (types and parameters: type, param, params and the size
 * rule, the return type, function pointers), bt_parse_typedef.c (typedefs,
 * enums, which struct pointers are handles), bt_parse.c (the rest of the grammar: items, namespaces, templates,
 * declarations and functions; recovery; the preprocessor's output in two
 * texts (bt_cpp.c); bt_parse_header). Callers include bt_parse.h. The token
 * cursor is static inlines here: every rule calls it. */
#ifndef BT_PARSE_IMPL_H
#define BT_PARSE_IMPL_H

#include "bt_parse.h"

#include <string.h>

#include "bt_hash.h"
#include "bt_lex.h"

#define MAX_NEST 200
#define MAX_STACK 64

typedef struct Tmpl {
    const char **names;
    BtTParam *info; /* one per name */
    int n;
    const char *reason; /* why the template makes the function unbindable */
} Tmpl;

struct TypeInfo;

/* An ordinary identifier (or an `enum TAG` / `struct TAG` key) the header
 * declared: a typedef, an enum, an enum member's value. */
typedef enum NameKind {
    NAME_TYPE = 1,
    NAME_VALUE,
    NAME_DEFINE,
    NAME_HANDLE,  /* key " *struct TAG" */
    NAME_COMPLETE /* key "{struct TAG": its fields were declared; value: its struct index */
} NameKind;

typedef struct Name {
    const char *name;
    NameKind kind;
    struct TypeInfo *ti; /* NAME_TYPE: what it stands for, typedefs expanded */
    long long value;     /* NAME_VALUE; NAME_DEFINE, NAME_HANDLE (key " *struct TAG"): an index */
} Name;

/* A `#define NAME value` of the header itself (bt_parse_const.c). */
typedef struct Define {
    const char *name, *value;
    int line;
    int state; /* 0 not evaluated, 1 being evaluated, 2 a constant, 3 none */
    BtConst c;
} Define;

typedef struct Parser {
    const char *file;
    BtTokens toks;
    int pos;
    BtArena *arena;
    BtDiag *diag;
    const char **ns;
    int n_ns;
    int extern_c; /* inside extern "C" { } */
    int anon_ns;  /* inside namespace { } */
    int depth;
    BtDecl *decls; /* a block of its own (bt_arena_resize) */
    int n_decls, cap_decls;
    struct Range *ranges; /* split_params' output, reused for every function */
    int cap_ranges;
    int strict;           /* an unreadable declaration is an error, not a record */
    int preprocessed;     /* the text is the preprocessor's output (BtHeader.preprocessed) */
    int fail_tok;         /* token index of the last error bt_parse_fail recorded */
    int eof_recorded;     /* an unreadable declaration ending at end of file is recorded */
    int knr_names;        /* the last parameter list was bare names: `f(a, b)` */
    int context;          /* reading what the header includes: only its names are kept */
    const char *own_file; /* reading one of the header's own files other than itself */
    Name *names;          /* typedefs, enum tags and members (bt_parse_typedef.c) */
    int n_names, cap_names;
    BtIndex name_index;
    BtEnum *enums;
    int n_enums, cap_enums;
    BtHandleType *handles;
    int n_handles, cap_handles;
    BtCallbackType *callbacks;
    int n_callbacks, cap_callbacks;
    int n_anon;      /* anonymous structs and unions so far: each its own type */
    int in_callback; /* reading a function pointer's return type */
    BtStruct *structs;
    int n_structs, cap_structs;
    int packed;      /* a `#pragma pack` was seen: no struct's layout is the ABI's */
    Define *defines; /* the header's own, while its constants are evaluated */
    int n_defines;
    int define_depth; /* defines being evaluated, one inside another */
} Parser;

/* What bt_parse_type learned from a type (and maybe a declarator name). */
typedef struct TypeInfo {
    char spelling[256]; /* normalized base type, cv left out */
    int is_const;
    int nptr, nref;
    int inner_const;        /* a const after the first '*' (`T *const *`) */
    const char *elaborated; /* "struct", "union", "class", "enum", or NULL */
    int name;               /* token index of the name, or -1 */
    int enum_ref;           /* an enum: 1 + its index in Parser.enums; else 0 */
    int callback_ref;       /* a function pointer typedef: 1 + its index in Parser.callbacks */
    int fn_type;            /* ...of a function type, not a pointer: `F *f` is the callback */
    const char *reason;     /* a typedef bindthem cannot pass: why (arena), else NULL */
    const char *alias;      /* the typedef's name when the spelling came from one */
    int n_dims;             /* an array typedef of constant extents (`typedef unsigned char
                             * uuid_t[16]`): its dims, outermost first (reason then says "an
                             * array type": only a parameter takes it); else 0 */
    long long dims[BT_MAX_FIXED_DIMS];
} TypeInfo;

/* A parameter's tokens [a, b) (split_params). */
typedef struct Range {
    int a, b;
} Range;

/* ---- the token cursor ---- */

static inline const BtToken *tok(const Parser *p, int i)
{
    return &p->toks.v[i < p->toks.n ? i : p->toks.n - 1];
}

static inline const BtToken *cur(const Parser *p) { return tok(p, p->pos); }

static inline int is(const Parser *p, int i, const char *s) { return bt_lex_is(tok(p, i), s); }

static inline void advance(Parser *p)
{
    if (p->pos < p->toks.n - 1)
        p->pos++;
}

static inline int at_end(const BtToken *t)
{
    return t->kind == BT_TOK_EOF || t->kind == BT_TOK_ERROR;
}

static inline char *tokdup(Parser *p, const BtToken *t)
{
    return bt_arena_strndup(p->arena, t->s, (size_t)t->len);
}

static inline int is_any(const BtToken *t, const char *const *list)
{
    for (; *list; list++)
        if (bt_lex_is(t, *list))
            return 1;
    return 0;
}

static inline char closer_of(const BtToken *t)
{
    if (t->kind != BT_TOK_PUNCT || t->len != 1)
        return 0;
    return *t->s == '(' ? ')' : *t->s == '[' ? ']' : *t->s == '{' ? '}' : 0;
}

static inline int is_closer(const BtToken *t)
{
    return t->kind == BT_TOK_PUNCT && t->len == 1 && strchr(")]}", *t->s);
}

/* ---- bt_parse_tok.c: errors, words, brackets ---- */

/* Spelling of the C/C++ built-in type words, and of cv-qualifiers. */
BT_HIDDEN extern const char *const bt_parse_builtin_words[];
BT_HIDDEN extern const char *const bt_parse_cv_words[];
/* Whether t is a word that always names a type: a built-in type's word
 * other than C's typedefs of C++'s character types and bool (wchar_t,
 * char8_t, char16_t, char32_t, bool: <stddef.h>, <uchar.h>), or _Bool.
 * Never a declarator's or a typedef's name. */
BT_HIDDEN int bt_parse_type_keyword(const BtToken *t);

/* Token t for messages, into buf: "'tok'" (cut at 40 bytes), or "end of file". */
BT_HIDDEN const char *bt_parse_near(const BtToken *t, char *buf, size_t size);

/* Records an error at token t (at the lexer's error token, the lexer's
 * error) and returns -1; bt_parse_expected: "expected WHAT near 'tok'". */
BT_HIDDEN int bt_parse_fail(Parser *p, const BtToken *t, const char *fmt, ...) BT_PRINTF(3, 4);
BT_HIDDEN int bt_parse_expected(Parser *p, const BtToken *t, const char *what);

/* The error at t when the innermost open bracket of stack[sp] wants its closer. */
BT_HIDDEN int bt_parse_want_closer(Parser *p, const BtToken *t, const char *stack, int sp);

/* One token of a bracket walk: an opener is pushed, a closer must match the
 * innermost opener and pops it; *sp > 0 on entry unless t opens. */
BT_HIDDEN int bt_parse_nest(Parser *p, const BtToken *t, char *stack, int *sp);

/* balanced -> opener (any token | balanced)* matching closer, from p->pos. */
BT_HIDDEN int bt_parse_skip_balanced(Parser *p);

/* First token in [a, b) at bracket depth 0 spelling s, or b. */
BT_HIDDEN int bt_parse_find_top(const Parser *p, int a, int b, const char *s);

/* ---- bt_parse_param.c: types and parameters ---- */

/* type -> (cv | name)+ ('*' | '&' | '&&' | cv)* [IDENT], over tokens [a, b)
 * into *ti (a name only where allow_name). what: the expected-token text
 * for errors ("')'"). 0 or -1. */
BT_HIDDEN int bt_parse_type(Parser *p, int a, int b, int allow_name, const char *what,
                            TypeInfo *ti);

/* Resolves ti's base spelling to a template parameter of tm (may be NULL)
 * or a scalar type, into *ref; -1 when it is neither. */
BT_HIDDEN int bt_parse_resolve(const TypeInfo *ti, const Tmpl *tm, BtTypeRef *ref);

/* The base type of a declaration without a body from token a: the tokens
 * up to its first declarator ('*', '(', or the name before ',' ';' '[' ':' '('). */
BT_HIDDEN int bt_parse_base_end(const Parser *p, int a);

/* params -> [ 'void' | param (',' param)* ] at p->pos ('('), into d, then
 * the size rule; leaves p->pos after ')'. 0 or -1. */
BT_HIDDEN int bt_parse_params(Parser *p, BtDecl *d, const Tmpl *tm);

/* The return type in tokens [a, b) into d->ret; a reason (arena) when it
 * cannot be bound, NULL when it can, or "" for a lone `auto`; *rc -1 on
 * an error. */
BT_HIDDEN const char *bt_parse_return_type(Parser *p, BtDecl *d, const Tmpl *tm, int a, int b,
                                           int *rc);
/* A function pointer type: the return type in tokens [ret_a, ret_b), the
 * parameters at '(' params_at (p->pos is left after its ')'), named name:
 * recorded, *ref 1 + its index. 0 or -1. */
BT_HIDDEN int bt_parse_callback(Parser *p, int ret_a, int ret_b, int params_at, const char *name,
                                int *ref);

/* ---- bt_parse_names.c: the names a header declares, typedefs expanded, handle types ---- */

/* Declares name (copied) as kind, its data cleared; a name declared again
 * takes the new meaning (the last typedef or #define read wins). NULL when
 * out of memory (diag set). */
BT_HIDDEN Name *bt_parse_declare(Parser *p, const char *name, NameKind kind);
/* The name s declares, or NULL. */
BT_HIDDEN const Name *bt_parse_lookup(const Parser *p, const char *s);

/* Replaces ti's spelling by what the typedef (or `enum TAG`) it names
 * stands for, when it names one. */
BT_HIDDEN void bt_parse_apply_typedef(const Parser *p, TypeInfo *ti);
/* The handle type of a pointer to the struct or union ti spells: 1 + its
 * index in p->handles, or 0 when out of memory. */
BT_HIDDEN int bt_parse_handle(Parser *p, const TypeInfo *ti, int line);

/* The struct whose fields are declared that key spells ("struct point"):
 * 1 + its index in p->structs, or 0 (also for one opaque by convention:
 * BtStruct.opaque). bt_parse_struct_laid: the opaque ones too (what a
 * fixed-size array of structs may hold, and what names a struct). */
BT_HIDDEN int bt_parse_struct_ref(const Parser *p, const char *key);
BT_HIDDEN int bt_parse_struct_laid(const Parser *p, const char *key);

/* ---- bt_parse_typedef.c: typedefs, enums, handle types ---- */

/* typedef -> 'typedef' type declarator (',' declarator)* ';', at p->pos
 * ('typedef'), or `using NAME = type;`: recorded when bindthem reads it.
 * Returns 0 past its ';', 1 when it does not (the caller skips it), -1. */
BT_HIDDEN int bt_parse_typedef(Parser *p);
/* enum -> 'enum' ['class' | 'struct'] [TAG] [':' type] '{' [member (',' member)*
 * [',']] '}' at token a, recorded; *end: the token after '}', *ref: 1 + its
 * index. 0, 1 when not an enum with a body (nothing recorded), or -1. */
BT_HIDDEN int bt_parse_enum(Parser *p, int a, int *end, int *ref);
/* After the header: p's enums, handle, callback and struct types handed to
 * out; a pointer to a struct whose fields the header declares and that no
 * function returns is the struct's record by pointer, not a handle. */
BT_HIDDEN int bt_parse_finish_names(Parser *p, BtHeader *out);

/* ---- bt_parse_struct.c: structs and unions with their fields ---- */

/* `struct [TAG] {` or `union [TAG] {` at token a, its type spelled key
 * ("struct TAG", "struct <anonymous N>"): its fields are read and laid out
 * (a BtStruct), unless each has a reserved name (glibc's FILE: opaque by
 * convention, a handle). 0 or -1. */
BT_HIDDEN int bt_parse_complete(Parser *p, int a, const char *key);

/* ---- bt_parse_const.c: constant expressions and #define constants ---- */

/* The value of the integer constant expression in tokens [a, b) of v
 * (literals, enum members and the header's constants, ( ), unary + - ~ !,
 * * / % + - << >> < <= > >= == != & ^ | && || ?:, casts to integer types).
 * 0, or 1 when it is not one. */
BT_HIDDEN int bt_parse_const_expr(Parser *p, const BtToken *v, int a, int b, long long *out);
/* The header's #defines (its BT_DIR_DEFINE directives) known by name, before
 * its declarations are read (an enum member may use one). 0 or -1. */
BT_HIDDEN int bt_parse_defines(Parser *p, const BtDirective *dirs, int n);
/* Those that are integer or string constants into out. 0 or -1 (out of memory). */
BT_HIDDEN int bt_parse_constants(Parser *p, BtHeader *out);

/* Leaves d out for `why` (arena or static), unless it is left out already
 * for another reason than arrays without sizes (which only an annotation
 * could bind: BtDecl.sizes_missing), which this then outranks. */
static inline void bt_parse_leave_out(BtDecl *d, const char *why, BtRule rule)
{
    if (d->unbindable && !d->sizes_missing)
        return;
    d->unbindable = why;
    d->unbindable_rule = rule;
    d->sizes_missing = 0;
}

#endif
