/* fuzz_check.h - invariants the harnesses check (static functions, one copy
 * per harness). A broken one aborts, which libFuzzer reports as a crash. */
#ifndef FUZZ_CHECK_H
#define FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt_mangle.h"
#include "bt_plan.h"

#define FUZZ_ASSERT(c)                                                             \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* A failure has a kind and a message; a position never points before 1:1. */
static inline void fuzz_check_diag(const BtDiag *d)
{
    FUZZ_ASSERT(d->kind != BT_DIAG_NONE);
    FUZZ_ASSERT(d->message[0] != '\0');
    FUZZ_ASSERT(d->line >= 0 && d->col >= 0);
}

static inline int fuzz_valid_type(BtTypeId id) { return id >= 0 && id < BT_NTYPES; }

/* Every declaration is named; every overload binds a bindable declaration
 * with concrete types and a signature; everything left out has a reason. */
static inline void fuzz_check_plan(const BtHeader *h, const BtPlan *p)
{
    int i, j, k;

    for (i = 0; i < h->n_decls; i++) {
        const BtDecl *d = &h->decls[i];
        FUZZ_ASSERT(d->name && d->name[0] && d->doc && d->line >= 1 && d->col >= 1);
        for (k = 0; k < d->n_params; k++)
            FUZZ_ASSERT(d->params[k].name && (d->params[k].size_of < 0 ||
                                              d->params[k].size_of < d->n_params));
    }
    for (i = 0; i < p->n_funcs; i++) {
        const BtFunc *f = &p->funcs[i];
        FUZZ_ASSERT(f->name && f->n_ovs > 0 && f->doc);
        for (j = 0; j < f->n_ovs; j++) {
            const BtOverload *ov = &f->ovs[j];
            FUZZ_ASSERT(ov->decl && !ov->decl->unbindable && ov->signature);
            FUZZ_ASSERT(fuzz_valid_type(ov->ret));
            for (k = 0; k < ov->decl->n_params; k++)
                FUZZ_ASSERT(fuzz_valid_type(ov->ptypes[k]));
        }
    }
    for (i = 0; i < p->n_skipped; i++)
        FUZZ_ASSERT(p->skipped[i].decl && p->skipped[i].reason && p->skipped[i].reason[0]);
}

/* Each planned overload has a symbol name. */
static inline void fuzz_mangle_plan(const BtPlan *p, BtArena *arena)
{
    int i, j;

    for (i = 0; i < p->n_funcs; i++)
        for (j = 0; j < p->funcs[i].n_ovs; j++) {
            const BtOverload *ov = &p->funcs[i].ovs[j];
            const char *sym = bt_mangle(ov->decl, ov->targs, arena);
            FUZZ_ASSERT(sym && (ov->decl->extern_c || strncmp(sym, "_Z", 2) == 0));
        }
}

#endif
