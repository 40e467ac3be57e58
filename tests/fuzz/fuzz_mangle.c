/* fuzz_mangle.c - libFuzzer harness: arbitrary bytes as a header, then every
 * bindable declaration (templated, inline and static ones too) mangled with
 * several type tuples. Each name must demangle (__cxa_demangle, from
 * libstdc++) and contain the function's name; an extern "C" name is the
 * function's name. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"

char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

/* Template arguments: no void (a YAML can't give it). */
static const BtTypeId pool[] = {BT_INT,    BT_DOUBLE, BT_FLOAT, BT_LONG,   BT_CDOUBLE, BT_UCHAR,
                                BT_CFLOAT, BT_SHORT,  BT_BOOL,  BT_ULLONG, BT_CHAR,    BT_SCHAR};
#define NPOOL (sizeof pool / sizeof pool[0])

static void check(const BtDecl *d, const BtTArg *targs, BtArena *arena)
{
    const char *sym = bt_mangle(d, targs, arena);
    char *dem;
    int status = -1;

    FUZZ_ASSERT(sym);
    if (d->extern_c) {
        FUZZ_ASSERT(strcmp(sym, d->name) == 0);
        return;
    }
    /* "_GLOBAL__N..." demangles as "(anonymous namespace)", by design */
    if (strncmp(d->name, "_GLOBAL_", 8) == 0)
        return;
    dem = __cxa_demangle(sym, NULL, NULL, &status);
    if (status != 0 || !dem || !strstr(dem, d->name)) {
        fprintf(stderr, "fuzz_mangle: %s -> %s (status %d)\n", sym, dem ? dem : "NULL", status);
        abort();
    }
    free(dem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    BtArena arena;
    BtDiag diag;
    BtHeader h;
    BtTArg *targs = NULL;
    int i, k, tuple;

    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_parse_header("fuzz.h", (const char *)data, size, 0, &arena, &h, &diag) < 0) {
        fuzz_check_diag(&diag);
        bt_arena_free(&arena);
        return 0;
    }
    for (i = 0; i < h.n_decls; i++) {
        const BtDecl *d = &h.decls[i];
        if (d->unbindable)
            continue;
        if (d->n_tparams == 0) {
            check(d, NULL, &arena);
            continue;
        }
        targs = realloc(targs, sizeof *targs * (size_t)d->n_tparams);
        FUZZ_ASSERT(targs);
        /* all alike, then mixed; the input's bytes pick the mix */
        for (tuple = 0; tuple < 4; tuple++) {
            for (k = 0; k < d->n_tparams; k++) {
                unsigned char byte = data[(size_t)(k + i) % size];
                memset(&targs[k], 0, sizeof targs[k]);
                if (d->tpinfo[k].is_value) { /* a value of the parameter's type */
                    targs[k].type = d->tpinfo[k].type;
                    targs[k].is_value = 1;
                    targs[k].neg = tuple == 3 && bt_type(targs[k].type)->min < 0;
                    targs[k].mag = tuple == 0 ? 0 : (unsigned long long)byte << (tuple * 8);
                    continue;
                }
                targs[k].type = tuple < 2 ? pool[tuple] : pool[(size_t)(byte + tuple + k) % NPOOL];
            }
            check(d, targs, &arena);
        }
    }
    free(targs);
    bt_arena_free(&arena);
    return 0;
}
