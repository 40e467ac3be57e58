/* fuzz_elf.c - libFuzzer harness: arbitrary bytes as a shared object for
 * bt_sym.c's symbol list (near-miss messages read it from the .so on disk).
 * Seeds: small .so files that tests/fuzz/run.sh compiles. */
#include <stdint.h>
#include <string.h>

#include "bt_sym.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    BtArena arena;
    BtDiag diag;
    const char **names;
    char *copy;
    int n, i;
    volatile size_t total = 0; /* every name read to its end (ASan checks) */

    bt_arena_init(&arena);
    bt_diag_init(&diag);
    /* bt_sym_list reads a file into the arena with a NUL after it; so here */
    copy = bt_arena_alloc(&arena, size + 1);
    FUZZ_ASSERT(copy);
    memcpy(copy, data, size);
    if (bt_sym_list_data(copy, size, "fuzz.so", &arena, &names, &n, &diag) < 0) {
        fuzz_check_diag(&diag);
    } else {
        for (i = 0; i < n; i++)
            total += strlen(names[i]);
        (void)total;
    }
    bt_arena_free(&arena);
    return 0;
}
