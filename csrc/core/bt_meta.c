/* bt_meta.c - the metadata pipeline: files -> header -> table -> plan. */
#include "bt_meta.h"

#include <stdio.h>
#include <string.h>

#include "bt_file.h"

/* An out-of-memory error says which file was being read. */
static int failed(BtDiag *diag, const char *path, const char *what)
{
    if (diag->kind == BT_DIAG_NOMEM && !diag->file[0]) {
        snprintf(diag->file, sizeof diag->file, "%s", path);
        snprintf(diag->message, sizeof diag->message, "out of memory while %s", what);
    }
    return -1;
}

int bt_meta_load(BtMeta *m, const char *header_path, const char *yaml_path, int strict,
                 BtDiag *diag)
{
    char *text;
    size_t len;

    memset(m, 0, sizeof *m);
    bt_arena_init(&m->arena);
    if (bt_file_read(header_path, &m->arena, &text, &len, diag) < 0)
        return failed(diag, header_path, "reading the header");
    if (bt_parse_header(header_path, text, len, strict, &m->arena, &m->header, diag) < 0)
        return failed(diag, header_path, "reading the header");
    if (yaml_path) {
        if (bt_file_read(yaml_path, &m->arena, &text, &len, diag) < 0 ||
            bt_yaml_read(yaml_path, text, len, &m->arena, &m->table, diag) < 0)
            return failed(diag, yaml_path, "reading instantiate.yml");
        m->has_table = 1;
    }
    if (bt_plan_build(&m->header, m->has_table ? &m->table : NULL, strict, &m->arena, &m->plan,
                      diag) < 0)
        return failed(diag, yaml_path ? yaml_path : header_path, "planning the bindings");
    return 0;
}

void bt_meta_free(BtMeta *m) { bt_arena_free(&m->arena); }
