/* bt_diag.h - diagnostics: {kind, code, file, line, col, message}; first error wins.
 *
 * Pure C. Formatted as Lua does: "relaxation.h:42:17: expected ')' near 'const'".
 * Lines and columns are 1-based; 0 means "unknown". The one error record of
 * every pure layer, the CUDA driver's included; bt_diag_py.c turns it into
 * a Python exception. */
#ifndef BT_DIAG_H
#define BT_DIAG_H

#include "bt_arena.h"

typedef enum BtDiagKind {
    BT_DIAG_NONE = 0,
    BT_DIAG_HEADER,      /* header syntax or dialect error -> HeaderError */
    BT_DIAG_INSTANTIATE, /* instantiate.yml error -> InstantiateError */
    BT_DIAG_NOMEM,       /* out of memory -> MemoryError */
    BT_DIAG_OS,          /* file could not be read -> OSError */
    BT_DIAG_CUDA,        /* a CUDA driver call failed -> CudaError */
    BT_DIAG_NODRIVER,    /* no usable CUDA driver (stub library, no device) -> NoDriverError */
    BT_DIAG_UNSUPPORTED, /* the driver lacks an optional entry point -> CudaError */
    BT_DIAG_BUILD        /* a compiler (NVRTC) is missing or failed -> BuildError */
} BtDiagKind;

typedef struct BtDiag {
    BtDiagKind kind;
    char file[1024];
    int line;
    int col;
    char message[4096]; /* a PTX JIT log can be long */
    /* BT_DIAG_OS: the errno, or 0 (becomes OSError's subclass); CUDA kinds:
     * the CUresult, or 0 (the exception's `code`, None for 0); BT_DIAG_BUILD:
     * the nvrtcResult, or 0 */
    int code;
} BtDiag;

BT_HIDDEN void bt_diag_init(BtDiag *d);
/* Records the error unless one is already recorded; always returns -1. */
BT_HIDDEN int bt_diag_set(BtDiag *d, BtDiagKind kind, const char *file, int line, int col,
                          const char *fmt, ...) BT_PRINTF(6, 7);
BT_HIDDEN int bt_diag_nomem(BtDiag *d);
/* bt_diag_set for a driver's error: no position, the call's result code.
 * Always returns -1. */
BT_HIDDEN int bt_diag_fail(BtDiag *d, BtDiagKind kind, int code, const char *fmt, ...)
    BT_PRINTF(4, 5);
/* "file:line:col: message" (line/col left out when 0) into buf. */
BT_HIDDEN void bt_diag_format(const BtDiag *d, char *buf, size_t size);

#endif
