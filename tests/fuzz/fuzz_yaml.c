/* fuzz_yaml.c - libFuzzer harness: arbitrary bytes as instantiate.yml.
 *
 * Reads the YAML, applies its annotations (bt_note_apply) to a copy of one
 * fixed header's declarations (templates of 1 to 3 parameters, overloads of
 * a name by arity, unbindable functions, pointers without sizes, a C++
 * reference, namespaces, extern "C", std::complex<T>) and plans it,
 * non-strict and strict, then mangles every overload. Names from the header
 * are in yaml.dict. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bt_yaml.h"
#include "fuzz_check.h"

static const char header[] =
    "// scale rows\n"
    "template <class I, class T>\n"
    "void scale_rows(const I n, T x[], const int x_size, const T a);\n"
    "template <class T>\n"
    "T dot(const T x[], const int x_size, const T y[], const int y_size);\n"
    "template <class I, class T, class F>\n"
    "int axpy3(const I J[], const int J_size, T x[], const int x_size, F y[], const int y_size);\n"
    "template <class T>\n"
    "void cplx(std::complex<T> z[], const int z_size, T r);\n"
    "int count(const int x[], const int x_size);\n"
    "template <class T> void over(T a);\n"
    "template <class T, class U> void over(T a, U b);\n"
    "void over(int a, int b, int c);\n"
    "template <class T> void by_ref(T &a);\n"
    "void no_size(double *p);\n"
    "int strided(int n, const double *x, int incx, double *y, int *count);\n"
    "namespace outer { namespace inner {\n"
    "template <class T> inline void nested(T x[], const int x_size) {}\n"
    "} }\n"
    "extern \"C\" int c_func(const float x[], const int x_size);\n"
    "static void hidden(int a) {}\n"
    "template <class T> void helper_function(T a);\n";

static BtArena header_arena;
static BtHeader h;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    BtDiag diag;

    (void)argc;
    (void)argv;
    bt_arena_init(&header_arena);
    bt_diag_init(&diag);
    if (bt_parse_header("fixed.h", header, sizeof header - 1, 0, &header_arena, &h, &diag) < 0) {
        fprintf(stderr, "fuzz_yaml: the fixed header does not parse: %s\n", diag.message);
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    BtArena arena;
    BtDiag diag;
    BtInstTable t;
    BtPlan plan;
    BtHeader hc;
    int strict;

    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_yaml_read("fuzz.yml", (const char *)data, size, &arena, &t, &diag) < 0) {
        fuzz_check_diag(&diag);
        bt_arena_free(&arena);
        return 0;
    }
    FUZZ_ASSERT(t.n_insts > 0 || t.plans_all);
    hc = h; /* the notes replace declarations: this input's own copy */
    hc.decls = bt_arena_alloc(&arena, sizeof *hc.decls * (size_t)(h.n_decls + 1));
    FUZZ_ASSERT(hc.decls != NULL);
    memcpy(hc.decls, h.decls, sizeof *hc.decls * (size_t)h.n_decls);
    bt_diag_init(&diag);
    if (bt_note_apply(&hc, &t.notes, &arena, &diag) < 0) {
        fuzz_check_diag(&diag);
        bt_arena_free(&arena);
        return 0;
    }
    for (strict = 0; strict < 2; strict++) {
        bt_diag_init(&diag);
        if (bt_plan_build(&hc, t.plans_all ? NULL : &t, strict, &arena, &plan, &diag) < 0) {
            fuzz_check_diag(&diag);
            continue;
        }
        fuzz_check_plan(&hc, &plan);
        fuzz_mangle_plan(&plan, &arena);
    }
    bt_arena_free(&arena);
    return 0;
}
