/* bt_meta.h - the metadata pipeline: files -> header -> table -> plan.
 *
 * Pure C. Reads a header and an optional instantiate.yml from disk and runs
 * the stages, all into one arena. */
#ifndef BT_META_H
#define BT_META_H

#include "bt_plan.h"

typedef struct BtMeta {
    BtArena arena;
    BtHeader header;
    BtInstTable table;
    int has_table;
    BtPlan plan;
} BtMeta;

/* Fills *m (call bt_meta_free afterwards, on success or failure).
 * yaml_path may be NULL. Returns 0, or -1 with diag set. */
BT_HIDDEN int bt_meta_load(BtMeta *m, const char *header_path, const char *yaml_path, int strict,
                           BtDiag *diag);
BT_HIDDEN void bt_meta_free(BtMeta *m);

#endif
