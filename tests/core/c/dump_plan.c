/* dump_plan.c - prints the bind plan of a header and an instantiate.yml.
 *
 *   dump_plan HEADER [YAML] [--strict]    functions, overloads, skipped, missing
 *   dump_plan --yaml-only YAML            the instantiation table
 *
 * On error prints the formatted diagnostic and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt_plan.h"
#include "driver.h"

static int read_file(const char *path, BtArena *arena, char **text, size_t *len, BtDiag *diag)
{
    FILE *f = fopen(path, "rb");
    long n;

    if (!f)
        return bt_diag_set(diag, BT_DIAG_OS, path, 0, 0, "cannot open");
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(*text = bt_arena_alloc(arena, (size_t)n + 1)) ||
        fread(*text, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return bt_diag_set(diag, BT_DIAG_OS, path, 0, 0, "cannot read");
    }
    fclose(f);
    *len = (size_t)n;
    return 0;
}

static void print_types(const BtInstArg *ids, int n)
{
    int i;

    if (!ids) {
        printf("null");
        return;
    }
    printf("[");
    for (i = 0; i < n; i++)
        printf("%s%s", i ? ", " : "", ids[i].is_value ? ids[i].text : bt_plan_cname(ids[i].type));
    printf("]");
}

static void dump_table(const BtInstTable *t)
{
    int i;

    for (i = 0; i < t->n_insts; i++) {
        const BtInst *in = &t->insts[i];
        printf("inst %s %d:%d %s %s %d:%d ", in->func, in->line, in->col, in->path, in->tpath,
               in->tline, in->tcol);
        print_types(in->args, in->n_types);
        printf("\n");
    }
    for (i = 0; i < t->n_remaps; i++)
        printf("remap %s -> %s %d:%d %s\n", t->remaps[i].from, t->remaps[i].to, t->remaps[i].line,
               t->remaps[i].col, t->remaps[i].path);
}

static void dump_plan(const BtPlan *p)
{
    int i, j;

    for (i = 0; i < p->n_funcs; i++) {
        const BtFunc *f = &p->funcs[i];
        printf("function %s (%d overload%s)\n", f->name, f->n_ovs, f->n_ovs == 1 ? "" : "s");
        for (j = 0; j < f->n_ovs; j++) {
            const BtDecl *d = f->ovs[j].decl;
            printf("  %s%s%s\n", f->ovs[j].signature, d->is_inline ? " [inline]" : "",
                   d->is_static ? " [static]" : "");
        }
    }
    for (i = 0; i < p->n_skipped; i++)
        printf("skipped %s (%d:%d): %s\n", p->skipped[i].decl->name, p->skipped[i].decl->line,
               p->skipped[i].decl->col, p->skipped[i].reason);
    for (i = 0; i < p->n_missing; i++)
        printf("missing %s\n", p->missing[i]);
}

int main(int argc, char **argv)
{
    const char *hpath = NULL, *ypath = NULL;
    int strict = 0, yaml_only = 0, rc = 1, i;
    BtArena arena;
    BtDiag diag;
    BtHeader h;
    BtInstTable t;
    BtPlan plan;
    char *text;
    size_t len;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--strict") == 0)
            strict = 1;
        else if (strcmp(argv[i], "--yaml-only") == 0)
            yaml_only = 1;
        else if (!hpath && !yaml_only)
            hpath = argv[i];
        else if (!ypath)
            ypath = argv[i];
        else
            hpath = NULL, ypath = NULL, i = argc;
    }
    if (yaml_only ? !ypath : !hpath) {
        fprintf(stderr, "usage: dump_plan HEADER [YAML] [--strict] | --yaml-only YAML\n");
        return 2;
    }
    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (ypath && (read_file(ypath, &arena, &text, &len, &diag) < 0 ||
                  bt_yaml_read(ypath, text, len, &arena, &t, &diag) < 0))
        goto error;
    if (yaml_only) {
        dump_table(&t);
        rc = 0;
        goto error;
    }
    if (read_file(hpath, &arena, &text, &len, &diag) < 0 ||
        bt_parse_header(hpath, text, len, 1, &arena, &h, &diag) < 0 ||
        bt_plan_build(&h, ypath ? &t : NULL, strict, &arena, &plan, &diag) < 0)
        goto error;
    dump_plan(&plan);
    rc = 0;
error:
    if (rc)
        print_diag(&diag);
    bt_arena_free(&arena);
    return rc;
}
