/* scale.c - time and memory of the pure-C stages on large inputs.
 *
 *   scale stats HEADER [YAML]   parse (+ YAML) + plan + mangle every overload;
 *                               prints "bytes B peak P decls D overloads O
 *                               seconds S" (P: the arena's most bytes at once)
 *   scale mangle-ns N           mangles `void a0::a1::...::a<N-1>::f<int>(int)`;
 *                               prints "seconds S" and the name
 *
 * S is CPU seconds. On an error prints the diagnostic and exits 1. Built without sanitizers
 * (tests/core/c_drivers.py), so the times and byte counts are the real ones. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bt_mangle.h"
#include "bt_meta.h"
#include "driver.h"

/* The process's CPU time, not the wall clock: other processes' load on a
 * shared machine does not inflate it (the stages run on one thread). */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n = -1;

    if (f && fseek(f, 0, SEEK_END) == 0)
        n = ftell(f);
    if (f)
        fclose(f);
    return n;
}

static int stats(const char *header, const char *yaml)
{
    BtMeta m;
    BtDiag diag;
    double t0 = now();
    long n_ovs = 0;
    int i, j, rc = 1;

    bt_diag_init(&diag);
    if (bt_meta_load(&m, header, yaml, 0, &diag) < 0)
        goto done;
    for (i = 0; i < m.plan.n_funcs; i++) {
        for (j = 0; j < m.plan.funcs[i].n_ovs; j++) {
            const BtOverload *ov = &m.plan.funcs[i].ovs[j];
            if (!bt_mangle(ov->decl, ov->targs, &m.arena)) {
                bt_diag_nomem(&diag);
                goto done;
            }
            n_ovs++;
        }
    }
    printf("bytes %ld peak %zu decls %d overloads %ld seconds %.3f\n",
           file_size(header) + (yaml ? file_size(yaml) : 0), m.arena.peak, m.header.n_decls, n_ovs,
           now() - t0);
    rc = 0;
done:
    if (rc)
        print_diag(&diag);
    bt_meta_free(&m);
    return rc;
}

static int mangle_ns(int n)
{
    static const char *tparams[] = {"T"};
    BtArena arena;
    BtDecl d;
    BtParam param;
    const char **ns = malloc(sizeof *ns * (size_t)(n ? n : 1));
    char *names = malloc((size_t)n * 12 + 1);
    const BtTArg targs[] = {{BT_INT, 0, 0, 0}};
    const char *sym;
    double t0;
    int i;

    if (!ns || !names)
        return 1;
    for (i = 0; i < n; i++) {
        ns[i] = names + (size_t)i * 12;
        snprintf(names + (size_t)i * 12, 12, "a%d", i);
    }
    memset(&d, 0, sizeof d);
    memset(&param, 0, sizeof param);
    param.name = "x";
    param.t.tparam = 0;
    param.size_of = -1;
    d.name = "f";
    d.ns = ns;
    d.n_ns = n;
    d.tparams = tparams;
    d.n_tparams = 1;
    d.ret.tparam = -1;
    d.ret.type = BT_VOID;
    d.params = &param;
    d.n_params = 1;
    bt_arena_init(&arena);
    t0 = now();
    sym = bt_mangle(&d, targs, &arena);
    printf("seconds %.3f\n%s\n", now() - t0, sym ? sym : "(out of memory)");
    bt_arena_free(&arena);
    free(ns);
    free(names);
    return sym ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "stats") == 0)
        return stats(argv[2], argc > 3 ? argv[3] : NULL);
    if (argc == 3 && strcmp(argv[1], "mangle-ns") == 0)
        return mangle_ns(atoi(argv[2]));
    fprintf(stderr, "usage: scale stats HEADER [YAML] | scale mangle-ns N\n");
    return 2;
}
