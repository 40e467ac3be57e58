/* bt_types.h - the one table of scalar types bindthem understands.
 *
 * Pure C (libffi's ffi.h, no Python.h). Each row maps a canonical C++ spelling
 * to its NumPy type number, ffi_type, Itanium mangling code and size, for the
 * Linux x86-64 (LP64) ABI. Aliases (int64_t, size_t, long int, ...) resolve to
 * a row, so int64_t *is* long, as on the C++ side. */
#ifndef BT_TYPES_H
#define BT_TYPES_H

#include <stddef.h>

#include "bt_arena.h"

typedef enum BtTypeId {
    BT_VOID = 0,
    BT_BOOL,
    BT_CHAR,
    BT_SCHAR,
    BT_UCHAR,
    BT_SHORT,
    BT_USHORT,
    BT_INT,
    BT_UINT,
    BT_LONG,
    BT_ULONG,
    BT_LLONG,
    BT_ULLONG,
    BT_FLOAT,
    BT_DOUBLE,
    BT_CFLOAT,
    BT_CDOUBLE,
    BT_NTYPES
} BtTypeId;

/* Kinds, as NumPy's dtype.kind spells them ('v' for void). */
typedef struct BtType {
    BtTypeId id;
    const char *cname;  /* canonical C++ spelling: "unsigned long", "std::complex<float>" */
    const char *mangle; /* Itanium code: "m", "St7complexIfE" */
    int npy_type;       /* NumPy type number (stable ABI values: NPY_INT == 5, ...) */
    char kind;          /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex, 'v' void */
    size_t size;
    const char *pyname; /* Python scalar: "bool", "int", "float", "complex", "None" */
    const char *npname; /* numpy scalar type name: "int32", "complex128" */
} BtType;

/* The row of a type id (never NULL for a valid id). */
BT_HIDDEN const BtType *bt_type(BtTypeId id);

/* Looks up a C/C++ spelling, ignoring redundant whitespace and a leading
 * "std::" on the fixed-width names: "long int", "unsigned", "int64_t",
 * "std::complex< double >", "size_t". Returns 0 and sets *out, or -1. */
BT_HIDDEN int bt_type_lookup(const char *spelling, BtTypeId *out);

/* Writes a normalized spelling (single spaces, no space around < > ::) of
 * at most n chars of s into out (size outsize). Used for messages and lookup. */
BT_HIDDEN void bt_type_normalize(const char *s, size_t n, char *out, size_t outsize);

/* libffi type of a scalar (void included). Declared as void* so this header
 * stays free of ffi.h; bt_types.c casts. */
BT_HIDDEN void *bt_type_ffi(BtTypeId id);

/* Comma-separated list of accepted spellings, for "unknown type" messages. */
BT_HIDDEN const char *bt_type_known_spellings(void);

#endif
