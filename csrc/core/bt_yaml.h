/* bt_yaml.h - instantiate.yml reader.
 *
 * Pure C; bt_yaml.c and bt_yaml_note.c (sharing bt_yaml_impl.h) are the
 * only files that include yaml.h. Accepts both shapes:
 *   - a top-level sequence of {types: [...], functions: [...]} entries
 *     (the BindThem README), and
 *   - a mapping {instantiate: [...same entries...], remaps: [{from: to}, ...]}
 *     (pyamg), which may also have, or have instead of `instantiate`, an
 *     `annotate: {function: {parameter: note, ...}, ...}` (bt_note.h).
 * `types: null`, or a `null` entry in the types list, marks untemplated
 * functions. Type names are looked up in bt_types; an item that is no type
 * name may be an integer, bool or character literal (a non-type template
 * argument; a one-character quoted string is a character). */
#ifndef BT_YAML_H
#define BT_YAML_H

#include "bt_arena.h"
#include "bt_diag.h"
#include "bt_lex.h"
#include "bt_note.h"
#include "bt_types.h"

/* One item of a type tuple: a type name, or a literal for a non-type
 * template parameter (`4`, `-1`, `true`, `'a'`); the plan matches it to
 * its parameter. */
typedef struct BtInstArg {
    int is_value;
    BtTypeId type;    /* a type name's row */
    BtLiteral lit;    /* a value: BT_LIT_BOOL, BT_LIT_INT or BT_LIT_CHAR */
    const char *text; /* as the YAML writes it, for messages */
} BtInstArg;

/* One (function, type tuple) pair, in YAML order. */
typedef struct BtInst {
    const char *func;
    const BtInstArg *args; /* NULL for an untemplated (`null`) entry */
    int n_types;
    int line, col;     /* of the function name in the YAML */
    int tline, tcol;   /* of the type tuple (or of `null`) */
    const char *path;  /* "instantiate[2].functions[1]" for messages */
    const char *tpath; /* "instantiate[2].types[0]" */
} BtInst;

typedef struct BtRemap {
    const char *from; /* C++ function name */
    const char *to;   /* Python name */
    int line, col;
    const char *path;
} BtRemap;

typedef struct BtInstTable {
    const char *file;
    BtInst *insts;
    int n_insts;
    BtRemap *remaps;
    int n_remaps;
    /* the mapping shape's `annotate:` (bt_note.h): empty when absent */
    BtNoteTable notes;
    /* the mapping shape without `instantiate:` (annotations alone): every
     * bindable untemplated function is planned, as without a YAML */
    int plans_all;
} BtInstTable;

/* Returns 0, or -1 with diag set (BT_DIAG_INSTANTIATE with file:line:col). */
BT_HIDDEN int bt_yaml_read(const char *file, const char *text, size_t len, BtArena *arena,
                           BtInstTable *out, BtDiag *diag);

#endif
