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

/* The text of path: given's copy, or the file read once. 0 or -1. */
static int text_of(BtMeta *m, const char *path, const BtMetaText *given, char **text, size_t *len,
                   BtDiag *diag)
{
    if (!given || !given->text)
        return bt_file_read(path, &m->arena, text, len, diag);
    *text = bt_arena_alloc(&m->arena, given->len + 1);
    if (!*text)
        return bt_diag_nomem(diag);
    memcpy(*text, given->text, given->len);
    (*text)[given->len] = '\0';
    *len = given->len;
    return 0;
}

int bt_meta_parse(BtMeta *m, const char *header_path, const BtMetaText *header_text,
                  const char *yaml_path, const BtMetaText *yaml_text, int strict, BtDiag *diag)
{
    char *text;
    size_t len;

    memset(m, 0, sizeof *m);
    bt_arena_init(&m->arena);
    if (text_of(m, header_path, header_text, &text, &len, diag) < 0)
        return failed(diag, header_path, "reading the header");
    m->header_text = text;
    m->header_len = len;
    if (bt_parse_header(header_path, text, len, strict, &m->arena, &m->header, diag) < 0)
        return failed(diag, header_path, "reading the header");
    if (yaml_path) {
        if (text_of(m, yaml_path, yaml_text, &text, &len, diag) < 0)
            return failed(diag, yaml_path, "reading instantiate.yml");
        m->yaml_text = text;
        m->yaml_len = len;
        if (bt_yaml_read(yaml_path, text, len, &m->arena, &m->table, diag) < 0)
            return failed(diag, yaml_path, "reading instantiate.yml");
        m->has_table = 1;
    }
    if (bt_note_apply(&m->header, m->has_table ? &m->table.notes : NULL, &m->arena, diag) < 0)
        return failed(diag, yaml_path ? yaml_path : header_path, "reading the annotations");
    /* a table of annotations alone plans what no table plans */
    if (bt_plan_build(&m->header, m->has_table && !m->table.plans_all ? &m->table : NULL, strict,
                      &m->arena, &m->plan, diag) < 0)
        return failed(diag, yaml_path ? yaml_path : header_path, "planning the bindings");
    return 0;
}

int bt_meta_load(BtMeta *m, const char *header_path, const char *yaml_path, int strict,
                 BtDiag *diag)
{
    return bt_meta_parse(m, header_path, NULL, yaml_path, NULL, strict, diag);
}

void bt_meta_free(BtMeta *m) { bt_arena_free(&m->arena); }
