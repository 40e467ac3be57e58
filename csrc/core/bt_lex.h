/* bt_lex.h - tokens of a kernel header, with the comments kept for docstrings.
 *
 * Pure C. Whitespace and preprocessor lines are skipped; comments are not
 * tokens, but each token remembers the comment block directly above it
 * (no blank line between). A lexical error (unterminated comment, string or
 * character literal) does not stop the parser at once: the token stream ends
 * with a BT_TOK_ERROR token, so an earlier syntax error still wins. */
#ifndef BT_LEX_H
#define BT_LEX_H

#include <stddef.h>

#include "bt_arena.h"
#include "bt_diag.h"

typedef enum BtTokKind {
    BT_TOK_EOF = 0,
    BT_TOK_ERROR, /* stands for BtTokens.err; always the last token */
    BT_TOK_IDENT, /* identifiers and keywords */
    BT_TOK_NUMBER,
    BT_TOK_STRING, /* "..", L"..", u8"..", R"d(..)d" */
    BT_TOK_CHAR,   /* '..' */
    BT_TOK_PUNCT   /* one character, or "::" or "..." */
} BtTokKind;

/* 16 bytes: a header of n one-character tokens costs 16n bytes of them.
 * The column comes from the line table (bt_lex_col), the comment block
 * above from a side table (bt_lex_doc_span). */
typedef struct BtToken {
    const char *s;     /* into the source text */
    unsigned len : 28; /* < BT_LEX_MAX_TOKEN */
    unsigned kind : 4; /* BtTokKind */
    int line;          /* 1-based */
} BtToken;

#define BT_LEX_MAX_TOKEN (1 << 27)

/* A preprocessor line bindthem reads facts from (the lexer sees directives,
 * so one inside a comment or a string is none): `#pragma omp ...` (text: the
 * line as written, trailing blanks removed), `#include "name"` (text: the
 * name; `<...>` includes are not recorded), `#define NAME ...` (text: its
 * first physical line from NAME on, the constants' source) and `#pragma pack`
 * (the line: structs' layouts are then not the C ABI's). */
typedef enum BtDirKind { BT_DIR_OMP = 1, BT_DIR_INCLUDE, BT_DIR_DEFINE, BT_DIR_PACK } BtDirKind;

typedef struct BtDirective {
    BtDirKind kind;
    int line; /* of its '#' */
    const char *text;
} BtDirective;

typedef struct BtLexer {
    const char *file;
    const char *p, *end;
    int line, col;
    int tok_line;              /* line of the last token, 0 before the first */
    const char *blk, *blk_end; /* comment block being collected */
    int blk_line;              /* line on which that block ends */
    const char *doc, *doc_end; /* the block above the last token, or NULL */
    int tok_col;               /* column of the token being read */
    int n_dirs;                /* directives seen (BtDirective) */
    BtDirective *dirs;         /* where to store them (NULL: count only) */
    BtArena *arena;            /* for their text, with dirs */
} BtLexer;

typedef struct BtTokDoc {
    int tok; /* index of the token the block is above */
    const char *doc, *doc_end;
} BtTokDoc;

typedef struct BtTokens {
    BtToken *v;
    int n; /* v[n - 1] is BT_TOK_EOF or BT_TOK_ERROR */
    const char *text;
    const unsigned *line_start; /* byte offset of each line in text */
    int n_lines;
    BtTokDoc *docs; /* by token index */
    int n_docs;
    BtDiag err;        /* the lexical error a BT_TOK_ERROR token stands for */
    BtDirective *dirs; /* the directives before the stream's end, in order; */
    int n_dirs;        /* kept by bt_lex_release (arena memory) */
} BtTokens;

BT_HIDDEN void bt_lex_init(BtLexer *lx, const char *file, const char *text, size_t len);
/* Reads the next token into *t (and the comment block above it into
 * lx->doc). Returns 0, or -1 with err set (and *t a BT_TOK_ERROR token at
 * the error's position). */
BT_HIDDEN int bt_lex_next(BtLexer *lx, BtToken *t, BtDiag *err);
/* Lexes all of text into out (arena blocks of their own, exactly sized:
 * bt_lex_release frees them). Returns 0, or
 * -1 with diag set when out of memory or when text is over 2 GiB; lexical
 * errors only end the stream (see above). */
BT_HIDDEN int bt_lex_all(const char *file, const char *text, size_t len, BtArena *arena,
                         BtTokens *out, BtDiag *diag);
/* Removes the attributes from toks, wherever they are: `[[...]]`,
 * `__attribute__((...))`, `__declspec(...)`, `alignas(...)`, `_Alignas(...)`,
 * `__launch_bounds__(...)`, brackets matched inside. One that does not close
 * is left in place (the parser then reports it). A comment block above a
 * removed token moves to the next token kept. Linear in the tokens.
 * Returns the number of tokens removed. */
BT_HIDDEN int bt_lex_strip_attributes(BtTokens *toks);
/* s with each byte that is not well-formed UTF-8 written as \\xNN (arena), or
 * NULL when out of memory: text from a header made fit for a Python str. */
BT_HIDDEN const char *bt_lex_utf8_text(BtArena *arena, const char *s);
/* Gives toks' memory back to the arena (toks is then empty). */
BT_HIDDEN void bt_lex_release(BtTokens *toks, BtArena *arena);
/* 1-based column of token t of toks. */
BT_HIDDEN int bt_lex_col(const BtTokens *toks, const BtToken *t);
/* The comment block directly above token i: 1 and [*doc, *end), or 0. */
BT_HIDDEN int bt_lex_doc_span(const BtTokens *toks, int i, const char **doc, const char **end);
/* Turns the comment block [begin, end) into docstring text: markers, common
 * indentation, trailing spaces and leading/trailing blank lines removed.
 * begin == NULL gives "". Returns 0, or -1 with diag set (out of memory). */
BT_HIDDEN int bt_lex_doc(BtArena *arena, const char *begin, const char *end, const char **out,
                         BtDiag *diag);
/* Does token t spell exactly s? */
BT_HIDDEN int bt_lex_is(const BtToken *t, const char *s);

/* The value of a default argument that is one literal. */
typedef enum BtLitKind { BT_LIT_BOOL = 1, BT_LIT_INT, BT_LIT_FLOAT, BT_LIT_CHAR } BtLitKind;

typedef struct BtLiteral {
    BtLitKind kind;
    int neg;              /* INT: written with a unary minus */
    unsigned long long u; /* BOOL (0/1), INT (magnitude), CHAR (code) */
    double d;             /* FLOAT, sign included */
} BtLiteral;

/* Reads text (a default argument as the header writes it) as one literal:
 * true/false; an integer (decimal, 0x, 0b, octal; u/l suffixes); a finite
 * floating literal (f/l suffix); a character literal ('T', '\n', '\x41',
 * '\101'); numbers optionally after a unary - or +. Returns 0, or -1 for
 * anything else (an expression, a name, a macro, a value too large). */
BT_HIDDEN int bt_lex_literal(const char *text, BtLiteral *out);

#endif
