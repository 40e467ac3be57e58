/* dump_notes.c - prints the annotations an instantiate.yml's `annotate:` holds.
 *
 *   dump_notes YAML
 *
 * One line per function, then one per parameter, check and ok value, each
 * expression as its text and where it is written:
 *
 *   plans_all 1, insts 0, remaps 0
 *   func cblas_?dot 3:3 glob
 *     arg n 4:5 value 'len(x)' @4:8
 *     arg y 6:5 intent inout shape ['n' @6:19] trim - type -
 *     check 'level >= -1' @9:14
 *     ok '0' @12:19
 *
 * On error prints the formatted diagnostic and exits 1. */
#include <stdio.h>

#include "bt_file.h"
#include "bt_yaml.h"
#include "driver.h"

static void print_expr(const BtExpr *e) { printf("'%s' @%d:%d", e->text, e->line, e->col); }

static void print_arg(const BtNoteArg *a)
{
    static const char *const intents[] = {"-", "in", "out", "inout"};
    int i;

    printf("  arg %s %d:%d", a->name, a->line, a->col);
    if (a->value) {
        printf(" value ");
        print_expr(a->value);
        printf("\n");
        return;
    }
    printf(" intent %s shape ", intents[a->intent]);
    if (!a->shape)
        printf("-");
    else
        for (i = 0; i < a->n_shape; i++) {
            printf("%s", i ? ", " : "[");
            print_expr(&a->shape[i]);
        }
    printf("%s trim %s type %s\n", a->shape ? "]" : "", a->trim ? a->trim : "-",
           a->type == BT_VOID ? "-" : bt_type(a->type)->cname);
}

static void dump(const BtInstTable *t)
{
    int i, j;

    printf("plans_all %d, insts %d, remaps %d\n", t->plans_all, t->n_insts, t->n_remaps);
    for (i = 0; i < t->notes.n_funcs; i++) {
        const BtNoteFunc *f = &t->notes.funcs[i];
        printf("func %s %d:%d%s\n", f->pattern, f->line, f->col, f->is_glob ? " glob" : "");
        for (j = 0; j < f->n_args; j++)
            print_arg(&f->args[j]);
        for (j = 0; j < f->n_checks; j++) {
            printf("  check ");
            print_expr(&f->checks[j]);
            printf("\n");
        }
        for (j = 0; j < f->n_ok; j++) {
            printf("  ok ");
            print_expr(&f->ok[j]);
            printf("\n");
        }
    }
}

int main(int argc, char **argv)
{
    BtArena arena;
    BtDiag diag;
    BtInstTable t;
    char *text;
    size_t len;
    int rc = 1;

    if (argc != 2) {
        fprintf(stderr, "usage: dump_notes YAML\n");
        return 2;
    }
    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_file_read(argv[1], &arena, &text, &len, &diag) < 0 ||
        bt_yaml_read(argv[1], text, len, &arena, &t, &diag) < 0) {
        print_diag(&diag);
    } else {
        dump(&t);
        rc = 0;
    }
    bt_arena_free(&arena);
    return rc;
}
