/* bt_nvrtc.h - NVRTC (CUDA's run-time compiler), reached through dlopen.
 *
 * Pure C: no Python.h, no nvrtc.h, never linked against libnvrtc. The
 * library is opened by the path (or soname) the caller found; dlopen counts
 * references, so each call opens it and none closes it. nvrtcResult is
 * translated here and nowhere else: functions return 0/-1 and fill a
 * BtDiag (kind BT_DIAG_BUILD, code the nvrtcResult; BT_DIAG_NOMEM); the
 * compiler's own log (file(line): error: ...) is the output's, failed
 * compile or not. */
#ifndef BT_NVRTC_H
#define BT_NVRTC_H

#include <stddef.h>

#include "bt_diag.h"

/* A compiled program: the image (CUBIN or PTX, NUL-terminated for PTX),
 * the lowered (mangled) name of each name expression, in their order, and
 * the compiler's log (warnings or errors; "" when silent). All malloc'd;
 * after a failed compile only the log is set. */
typedef struct BtNvrtcOutput {
    char *image;
    size_t size;
    char **lowered;
    int nlowered;
    char *log;
} BtNvrtcOutput;

BT_HIDDEN void bt_nvrtc_output_free(BtNvrtcOutput *out);

/* nvrtcVersion and nvrtcGetSupportedArchs of the library at lib: the
 * architectures (as 75, 80, ...) go into an arena array. */
BT_HIDDEN int bt_nvrtc_info(const char *lib, int *major, int *minor, int **archs, int *narchs,
                            BtArena *arena, BtDiag *e);

/* Compiles source (named name in the log) with options; each of exprs is
 * added with nvrtcAddNameExpression and its lowered name read back.
 * cubin: nvrtcGetCUBIN (options must name a real -arch=sm_XX), else
 * nvrtcGetPTX. out owns the results (the log only, on failure): free it
 * with bt_nvrtc_output_free either way. */
BT_HIDDEN int bt_nvrtc_compile(const char *lib, const char *source, const char *name,
                               const char *const *options, int noptions, const char *const *exprs,
                               int nexprs, int cubin, BtNvrtcOutput *out, BtDiag *e);

#endif
