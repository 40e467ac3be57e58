/* bt_file.h - reading a whole file into an arena.
 *
 * Pure C. The headers, instantiate.yml files (bt_meta) and ELF libraries
 * (bt_sym) are read through it. */
#ifndef BT_FILE_H
#define BT_FILE_H

#include <stddef.h>

#include "bt_diag.h"

/* Reads a whole regular file into the arena (NUL-terminated). 0, or -1 with
 * BT_DIAG_OS (code: the errno) or BT_DIAG_NOMEM in diag. */
BT_HIDDEN int bt_file_read(const char *path, BtArena *arena, char **text, size_t *len,
                           BtDiag *diag);

#endif
