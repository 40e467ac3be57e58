/* bt_nvrtc.h - NVRTC (CUDA's run-time compiler), reached through dlopen.
 *
 * Pure C: no Python.h, no nvrtc.h, never linked against libnvrtc. The
 * library is opened by the path (or soname) the caller found; dlopen counts
 * references, so each call opens it and none closes it. nvrtcResult is
 * translated here and nowhere else: functions return 0/-1 and fill a
 * BtNvrtcError, whose log is the compiler's own (file(line): error: ...). */
#ifndef BT_NVRTC_H
#define BT_NVRTC_H

#include <stddef.h>

#include "bt_arena.h"

typedef enum BtNvrtcErrKind {
    BT_NVRTC_OK = 0,
    BT_NVRTC_NOLIB,   /* dlopen failed, or the library lacks an entry point */
    BT_NVRTC_COMPILE, /* the program did not compile: see log */
    BT_NVRTC_CALL,    /* another NVRTC call failed (code = its nvrtcResult) */
    BT_NVRTC_NOMEM    /* host memory */
} BtNvrtcErrKind;

typedef struct BtNvrtcError {
    BtNvrtcErrKind kind;
    int code; /* nvrtcResult, or 0 */
    char message[2048];
    char *log; /* malloc'd compiler log, or NULL; freed by bt_nvrtc_error_free */
} BtNvrtcError;

/* A compiled program: the image (CUBIN or PTX, NUL-terminated for PTX),
 * the lowered (mangled) name of each name expression, in their order, and
 * the compiler's log (warnings; "" when silent). All malloc'd. */
typedef struct BtNvrtcOutput {
    char *image;
    size_t size;
    char **lowered;
    int nlowered;
    char *log;
} BtNvrtcOutput;

BT_HIDDEN void bt_nvrtc_error_init(BtNvrtcError *e);
BT_HIDDEN void bt_nvrtc_error_free(BtNvrtcError *e);
BT_HIDDEN void bt_nvrtc_output_free(BtNvrtcOutput *out);

/* nvrtcVersion and nvrtcGetSupportedArchs of the library at lib: the
 * architectures (as 75, 80, ...) go into an arena array. */
BT_HIDDEN int bt_nvrtc_info(const char *lib, int *major, int *minor, int **archs, int *narchs,
                            BtArena *arena, BtNvrtcError *e);

/* Compiles source (named name in the log) with options; each of exprs is
 * added with nvrtcAddNameExpression and its lowered name read back.
 * cubin: nvrtcGetCUBIN (options must name a real -arch=sm_XX), else
 * nvrtcGetPTX. On success out owns the results. */
BT_HIDDEN int bt_nvrtc_compile(const char *lib, const char *source, const char *name,
                               const char *const *options, int noptions, const char *const *exprs,
                               int nexprs, int cubin, BtNvrtcOutput *out, BtNvrtcError *e);

#endif
