/* bt_diag.h - diagnostics: {kind, file, line, col, message}; first error wins.
 *
 * Pure C. Formatted as Lua does: "relaxation.h:42:17: expected ')' near 'const'".
 * Lines and columns are 1-based; 0 means "unknown". */
#ifndef BT_DIAG_H
#define BT_DIAG_H

#include "bt_arena.h"

typedef enum BtDiagKind {
    BT_DIAG_NONE = 0,
    BT_DIAG_HEADER,      /* header syntax or dialect error -> HeaderError */
    BT_DIAG_INSTANTIATE, /* instantiate.yml error -> InstantiateError */
    BT_DIAG_NOMEM,       /* out of memory -> MemoryError */
    BT_DIAG_OS           /* file could not be read -> OSError */
} BtDiagKind;

typedef struct BtDiag {
    BtDiagKind kind;
    char file[1024];
    int line;
    int col;
    char message[2048];
    int err; /* BT_DIAG_OS: the errno, or 0 (becomes OSError's subclass) */
} BtDiag;

BT_HIDDEN void bt_diag_init(BtDiag *d);
/* Records the error unless one is already recorded; always returns -1. */
BT_HIDDEN int bt_diag_set(BtDiag *d, BtDiagKind kind, const char *file, int line, int col,
                          const char *fmt, ...) BT_PRINTF(6, 7);
BT_HIDDEN int bt_diag_nomem(BtDiag *d);
/* "file:line:col: message" (line/col left out when 0) into buf. */
BT_HIDDEN void bt_diag_format(const BtDiag *d, char *buf, size_t size);

#endif
