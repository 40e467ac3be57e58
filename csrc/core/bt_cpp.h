/* bt_cpp.h - reading the C preprocessor's output: its line markers.
 *
 * Pure C. `cc -E -dD -C header.h` writes the header with its includes and
 * macros expanded, its #define lines and comments kept, and line markers
 * (`# LINE "FILE" FLAGS`) saying where each line came from. The output is
 * split: the header's own files' lines, each file's put back at its own
 * line numbers (so a declaration's file:line:col and the comment above it
 * are its file's), and the rest (what the header includes, in order),
 * whose typedefs, enums and structs the header's declarations use.
 *
 * The header's own files: the main file, and each file it includes whose
 * name starts with the main file's stem, or which lies in a folder named
 * after it (lzma.h's lzma/base.h, png.h's pngconf.h, math.h's
 * bits/mathcalls.h; a stem of one or two characters owns only the names it
 * starts with an '_' after: z3.h's z3_api.h), at most BT_CPP_MAX_OWN of
 * them: an umbrella header's declarations are its own. */
#ifndef BT_CPP_H
#define BT_CPP_H

#include <stddef.h>

#include "bt_arena.h"
#include "bt_diag.h"

#define BT_CPP_MAX_OWN 64

/* One of the header's own files: its lines at their line numbers. */
typedef struct BtCppFile {
    const char *name; /* as the marker writes it (escapes kept) */
    char *text;       /* NUL-terminated */
    size_t len;
} BtCppFile;

typedef struct BtCppSplit {
    const char *main_file; /* the file the first marker names */
    char *main;            /* its lines at their line numbers (NUL-terminated) */
    size_t main_len;
    BtCppFile *own; /* the header's other own files, in the order they first appear */
    int n_own;
    char *context; /* every other line, in order (NUL-terminated) */
    size_t context_len;
} BtCppSplit;

/* Whether text is the preprocessor's output: its first line is a line
 * marker (`# 0 "name"`, `# 1 "name"`, `#line 1 "name"`). */
BT_HIDDEN int bt_cpp_is_output(const char *text, size_t len);

/* Splits preprocessor output text (len bytes) into *out (arena). A marker
 * that would put a line of the main file past what its size allows (a
 * hostile line number: memory stays linear in len) is an error at its
 * line. Returns 0, or -1 with diag set. */
BT_HIDDEN int bt_cpp_split(const char *file, const char *text, size_t len, BtArena *arena,
                           BtCppSplit *out, BtDiag *diag);

#endif
