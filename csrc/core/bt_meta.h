/* bt_meta.h - the metadata pipeline: files -> header -> table -> plan.
 *
 * Pure C. Reads a header and an optional instantiate.yml (from disk, once,
 * or from texts given) and runs the stages, all into one arena, which also
 * keeps the exact bytes parsed: a build compiles and hashes those, never
 * the file read again. */
#ifndef BT_META_H
#define BT_META_H

#include "bt_plan.h"

typedef struct BtMeta {
    BtArena arena;
    BtHeader header;
    BtInstTable table;
    int has_table;
    BtPlan plan;
    /* the bytes parsed (NUL-terminated copies in the arena) */
    const char *header_text, *yaml_text; /* yaml_text NULL without a table */
    size_t header_len, yaml_len;
} BtMeta;

/* The texts bt_meta_parse parses in place of reading a file: text NULL
 * means read the file at the path (once). */
typedef struct BtMetaText {
    const char *text;
    size_t len;
} BtMetaText;

/* Fills *m (call bt_meta_free afterwards, on success or failure).
 * yaml_path may be NULL. Returns 0, or -1 with diag set. */
BT_HIDDEN int bt_meta_load(BtMeta *m, const char *header_path, const char *yaml_path, int strict,
                           BtDiag *diag);
/* bt_meta_load, each file's text taken from *header_text / *yaml_text
 * (copied) where given (non-NULL with a non-NULL text), else read from its
 * path; the paths name the files in diagnostics and metadata either way. */
BT_HIDDEN int bt_meta_parse(BtMeta *m, const char *header_path, const BtMetaText *header_text,
                            const char *yaml_path, const BtMetaText *yaml_text, int strict,
                            BtDiag *diag);
BT_HIDDEN void bt_meta_free(BtMeta *m);

#endif
