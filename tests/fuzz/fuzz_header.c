/* fuzz_header.c - libFuzzer harness: arbitrary bytes as a kernel header.
 *
 * Lexes and parses, plans every untemplated function (no instantiate.yml)
 * and mangles each overload. Besides what ASan/UBSan see, it checks that a
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
    if (bt_parse_header("fuzz.h", (const char *)data, size, &arena, &h, &diag) < 0 ||
        bt_plan_build(&h, NULL, 0, &arena, &plan, &diag) < 0) {
        fuzz_check_diag(&diag);
    } else {
        fuzz_check_plan(&h, &plan);
        fuzz_mangle_plan(&plan, &arena);
    }
    bt_arena_free(&arena);
    return 0;
}
