/* fuzz_header.c - libFuzzer harness: arbitrary bytes as a kernel header.
 *
 * Lexes and parses (resynchronising after unreadable declarations), plans
 * every untemplated function (no instantiate.yml) and mangles each
 * overload; then parses again in strict mode, which must fail exactly when
 * a declaration was unreadable. Besides what ASan/UBSan see, it checks that a
 * failure always comes with a diagnostic and that the plan holds together. */
#include <stdint.h>
#include <stdlib.h>

#include "bt_mangle.h"
#include "bt_plan.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    BtArena arena;
    BtDiag diag;
    BtHeader h;
    BtPlan plan;

    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_parse_header("fuzz.h", (const char *)data, size, 0, &arena, &h, &diag) < 0 ||
        bt_plan_build(&h, NULL, 0, &arena, &plan, &diag) < 0) {
        fuzz_check_diag(&diag);
    } else {
        BtArena strict_arena;
        BtHeader sh;
        int unreadable = 0, i, rc;
        fuzz_check_plan(&h, &plan);
        fuzz_mangle_plan(&plan, &arena);
        /* strict mode fails exactly when a declaration was unreadable */
        for (i = 0; i < h.n_decls; i++) {
            FUZZ_ASSERT(!h.decls[i].unreadable || h.decls[i].unbindable);
            unreadable |= h.decls[i].unreadable;
        }
        bt_arena_init(&strict_arena);
        bt_diag_init(&diag);
        rc = bt_parse_header("fuzz.h", (const char *)data, size, 1, &strict_arena, &sh, &diag);
        if (rc < 0)
            fuzz_check_diag(&diag);
        FUZZ_ASSERT((rc < 0) == unreadable || diag.kind == BT_DIAG_NOMEM);
        bt_arena_free(&strict_arena);
    }
    bt_arena_free(&arena);
    return 0;
}
