/* bt_meta.c - the metadata pipeline: files -> header -> table -> plan. */
#define _POSIX_C_SOURCE 200809L
#include "bt_meta.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int os_error(BtDiag *diag, const char *path, const char *what, int err)
{
    bt_diag_set(diag, BT_DIAG_OS, path, 0, 0, "%s: %s", what, strerror(err));
    if (diag->kind == BT_DIAG_OS)
        diag->err = err;
    return -1;
}

int bt_meta_read_file(const char *path, BtArena *arena, char **text, size_t *len, BtDiag *diag)
{
    FILE *f = NULL;
    char *buf = NULL;
    struct stat st;
    long size;
    int rc = -1;

    f = fopen(path, "rb");
    if (!f) {
        os_error(diag, path, "cannot open", errno);
        goto done;
    }
    /* a directory opens fine and "seeks" to LONG_MAX */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        os_error(diag, path, "cannot read", EISDIR);
        goto done;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        os_error(diag, path, "cannot read", errno);
        goto done;
    }
    buf = bt_arena_alloc(arena, (size_t)size + 1);
    if (!buf) {
        bt_diag_nomem(diag);
        goto done;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        os_error(diag, path, "cannot read", ferror(f) ? errno : EIO);
        goto done;
    }
    buf[size] = '\0';
    *text = buf;
    *len = (size_t)size;
    rc = 0;
done:
    if (f)
        fclose(f);
    return rc;
}

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
    if (bt_meta_read_file(header_path, &m->arena, &text, &len, diag) < 0)
        return failed(diag, header_path, "reading the header");
    if (bt_parse_header(header_path, text, len, &m->arena, &m->header, diag) < 0)
        return failed(diag, header_path, "reading the header");
    if (yaml_path) {
        if (bt_meta_read_file(yaml_path, &m->arena, &text, &len, diag) < 0 ||
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
