/* faults.c - allocation failure at every point a header and a YAML need.
 *
 *   faults HEADER [YAML] [--strict]
 *
 * Built with BT_FAULT_INJECTION and BT_ARENA_EXACT (every arena allocation
 * is a malloc of its own, so every allocation site can fail) and ASan: for
 * N = 1, 2, ... the Nth allocation of the pure-C layers fails while the
 * header and the YAML are read and planned and every overload is mangled,
 * until a run needs fewer than N; once with only that allocation failing,
 * once with every later one failing too (as when memory runs out). Each run
 * must fail with a diagnostic that has a message (out of memory, naming the
 * file, or the input's own error) and free everything (LeakSanitizer checks
 * at exit); a run that succeeds although an allocation failed swallowed the
 * failure (an unbindable reason that became NULL, "bindable", did). As
 * Lua's ltests.c does. (libyaml's own allocations are not counted.)
 *
 * Prints "faults: N runs, all failures reported" or what went wrong. */
#include <stdio.h>
#include <string.h>

#include "bt_mangle.h"
#include "bt_meta.h"

/* One run: 0 when everything was read, planned and mangled. */
static int run(const char *header, const char *yaml, int strict, BtDiag *diag)
{
    BtMeta m;
    int i, j, rc;

    bt_diag_init(diag);
    rc = bt_meta_load(&m, header, yaml, strict, diag);
    for (i = 0; rc == 0 && i < m.plan.n_funcs; i++) {
        for (j = 0; j < m.plan.funcs[i].n_ovs; j++) {
            const BtOverload *ov = &m.plan.funcs[i].ovs[j];
            if (!bt_mangle(ov->decl, ov->targs, &m.arena)) { /* as bt_library.c says it */
                rc = bt_diag_set(diag, BT_DIAG_NOMEM, header, 0, 0, "out of memory mangling %s",
                                 ov->signature);
                break;
            }
        }
    }
    bt_meta_free(&m);
    return rc;
}

int main(int argc, char **argv)
{
    const char *header = NULL, *yaml = NULL;
    int strict = 0, i, bad = 0, all;
    long n, needed, runs = 0;
    BtDiag clean, diag;
    char msg[4096];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--strict") == 0)
            strict = 1;
        else if (!header)
            header = argv[i];
        else
            yaml = argv[i];
    }
    if (!header) {
        fprintf(stderr, "usage: faults HEADER [YAML] [--strict]\n");
        return 2;
    }
    bt_mem_fail_after(0, 0);
    run(header, yaml, strict, &clean); /* the input's own outcome */
    needed = bt_mem_count();
    for (all = 0; all < 2 && !bad; all++) {
        for (n = 1; n <= needed + 1 && !bad; n++, runs++) {
            const char *how = all ? "and every later one" : "alone";
            bt_mem_fail_after(n, all);
            if (run(header, yaml, strict, &diag) == 0) {
                if (bt_mem_count() >= n) {
                    printf("FAIL: allocation %ld failed (%s), yet the run succeeded\n", n, how);
                    bad = 1;
                }
                continue;
            }
            bt_diag_format(&diag, msg, sizeof msg);
            if (diag.kind == BT_DIAG_NONE || !diag.message[0]) {
                printf("FAIL: allocation %ld (%s): no diagnostic\n", n, how);
                bad = 1;
            } else if (diag.kind == BT_DIAG_NOMEM &&
                       (!strstr(msg, "out of memory") ||
                        (!strstr(msg, header) && !(yaml && strstr(msg, yaml))))) {
                printf("FAIL: allocation %ld (%s): no file in '%s'\n", n, how, msg);
                bad = 1;
            } else if (diag.kind != BT_DIAG_NOMEM && diag.kind != clean.kind) {
                printf("FAIL: allocation %ld (%s): %s\n", n, how, msg);
                bad = 1;
            }
        }
    }
    bt_mem_fail_after(0, 0);
    if (!bad)
        printf("faults: %ld runs, all failures reported\n", runs);
    return bad;
}
