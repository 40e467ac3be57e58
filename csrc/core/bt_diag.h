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
/* The dialect rules a message can point at, each with the page and anchor
 * of the documentation that explains it. One table (bt_diag.c's
 * bt_rule_docs); _core.DOC_ANCHORS exports it, bindthem's Python side reads
 * its tails there, and tests/api/test_docs.py checks that every anchor exists in
 * the built site. BT_RULE_UNBINDABLE is 0: a zeroed BtDecl's rule. */
typedef enum BtRule {
    BT_RULE_UNBINDABLE = 0, /* what binds, what is left out, and why */
    BT_RULE_SIZES,          /* every array is followed by its _size parameters */
    BT_RULE_TEMPLATES,      /* a template binds the tuples instantiate.yml lists */
    BT_RULE_YAML_TYPES,     /* the type names instantiate.yml may use */
    BT_RULE_COUNT
} BtRule;

typedef struct BtRuleDoc {
    const char *name; /* "sizes" */
    const char *page; /* "docs/dialect.rst#sizes" */
    const char *tail; /* " (see docs/dialect.rst#sizes)": what a message ends with */
} BtRuleDoc;

BT_HIDDEN extern const BtRuleDoc bt_rule_docs[BT_RULE_COUNT];

/* "file:line:col: message" (line/col left out when 0) into buf. */
BT_HIDDEN void bt_diag_format(const BtDiag *d, char *buf, size_t size);

#endif
