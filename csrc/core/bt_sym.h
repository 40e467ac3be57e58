/* bt_sym.h - shared libraries: dlopen/dlsym, the library's exported symbol
 * list (read from its ELF .dynsym), and demangling for near-miss messages
 * (bt_bind.c builds them).
 *
 * Pure C. */
#ifndef BT_SYM_H
#define BT_SYM_H

#include <stdint.h>

#include "bt_arena.h"
#include "bt_diag.h"

/* dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE): the library stays
 * mapped until the process exits. NULL with dlerror() text in diag. */
BT_HIDDEN void *bt_sym_open(const char *path, BtDiag *diag);
BT_HIDDEN void bt_sym_close(void *handle);
BT_HIDDEN void *bt_sym_find(void *handle, const char *name);
/* bt_sym_find, but only a symbol the library itself defines, not one of a
 * library it links (dlsym searches those too): for plain C names, which
 * libc and libm also export. NULL when it has none. */
BT_HIDDEN void *bt_sym_find_own(void *handle, const char *name);
/* The file the dynamic loader actually opened for handle (arena string). */
BT_HIDDEN const char *bt_sym_path(void *handle, BtArena *arena);
/* The object dlopen(path) would return because one is loaded already (of
 * that name, or from that file's device and inode), without loading one
 * (RTLD_NOLOAD): a handle to bt_sym_close, or NULL when none is. */
BT_HIDDEN void *bt_sym_loaded(const char *path);
/* The address of handle's link map: which object it is (a bindthem library
 * is never unloaded, so the address names one object for the process's life). */
BT_HIDDEN uintptr_t bt_sym_object(void *handle);
/* Whether handle's code and read-only data (every PT_LOAD segment mapped
 * without write permission) are the bytes at the same offsets of the file
 * open at fd: 1 when they are, 0 when one differs or the file is shorter,
 * -1 with diag (unreadable). The bytes that were hashed are the bytes that run. */
BT_HIDDEN int bt_sym_same_code(void *handle, int fd, BtDiag *diag);

/* Defined, exported function symbols of an ELF shared object on disk.
 * Returns 0 and an arena array, or -1 (not ELF, unreadable: diag set). */
BT_HIDDEN int bt_sym_list(const char *path, BtArena *arena, const char ***names, int *n,
                          BtDiag *diag);
/* The same from the file's len bytes at data (what names it in messages):
 * every header, section and name is checked against len before it is read. */
BT_HIDDEN int bt_sym_list_data(const char *data, size_t len, const char *what, BtArena *arena,
                               const char ***names, int *n, BtDiag *diag);

/* Demangled name (arena string), or NULL when the name isn't a mangled one
 * libstdc++'s __cxa_demangle reads. _core itself needs libstdc++ (bt_guard.cpp),
 * so the demangler is always there; it is looked up at run time only because
 * _core's own dependencies are not in the global symbol scope. */
BT_HIDDEN const char *bt_sym_demangle(const char *symbol, BtArena *arena);

/* From a demangled "void ns::f<int, double>(int const*, int)", the
 * function's name without its return type and parameter list:
 * "ns::f<int, double>" (arena string, NULL when out of memory). *start
 * (when not NULL) is set to where the name starts in dem. */
BT_HIDDEN const char *bt_sym_cut_name(const char *dem, const char **start, BtArena *arena);

#endif
