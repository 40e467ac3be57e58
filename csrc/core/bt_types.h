/* bt_types.h - the one table of scalar types bindthem understands.
 *
 * Pure C (libffi's ffi.h, no Python.h). Each row (BtType) is everything
 * bindthem knows of one type, for the platform that builds it (Linux LP64:
 * x86-64, aarch64; char's signedness and long's size from <limits.h>). Other files
 * read rows rather than list types: conversions go by a row's kind and
 * size (char taking a 1-character str is the one rule for a type). Aliases (int64_t, size_t, long int, ...) resolve to
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
    BT_HALF,     /* CUDA's __half (cuda_fp16.h): kernels only, C has no such type */
    BT_BF16,     /* CUDA's __nv_bfloat16 (cuda_bf16.h): kernels only; NumPy's through ml_dtypes */
    BT_LDOUBLE,  /* long double: host only (device code has none) */
    BT_CLDOUBLE, /* std::complex<long double>, C's long double _Complex: arrays only */
    BT_NTYPES
} BtTypeId;

/* One row per type: everything bindthem knows of a dtype. Kinds are NumPy's
 * dtype.kind ('v' for void). Rows of one kind and size are one dtype to a
 * call (long and long long, char and signed char): the first such row is
 * the canonical one (bt_type_canonical). */
typedef struct BtType {
    BtTypeId id;
    const char *cname;   /* canonical C++ spelling: "unsigned long", "std::complex<float>" */
    const char *mangle;  /* Itanium code: "m", "St7complexIfE", "6__half" (a class) */
    int npy_type;        /* NumPy type number (stable ABI; checked against NumPy at import);
                          * -1: a user type NumPy numbers at run time (ml_dtypes' bfloat16) */
    char kind;           /* 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex, 'v' void */
    size_t size;         /* bytes */
    size_t align;        /* as a parameter: a complex aligns as its parts */
    const char *pyname;  /* Python scalar type, for messages and .pyi stubs: "int", "None" */
    const char *npname;  /* numpy scalar type name: "int32", "complex128" */
    void *ffi;           /* the libffi type (an ffi_type *; void * keeps ffi.h out) */
    int dl_code;         /* DLPack type code (kDLInt 0, kDLUInt 1, kDLFloat 2, kDLComplex 5,
                          * kDLBool 6), -1 for void; its bits are size * 8 */
    const char *typestr; /* __cuda_array_interface__ typestr: "<f8", "|b1" */
    BtTypeId part;       /* a complex: the type of its two parts; else BT_VOID */
    long long min;       /* integers and bool: the range a scalar argument must be in */
    unsigned long long max;
    const char *pyret; /* a returned scalar's Python type when not pyname: long double's
                        * "numpy.longdouble", whose precision a Python float would lose */
} BtType;

/* The largest scalar passed by value (a call's 16-byte BtValue): a larger
 * one, std::complex<long double>, is passed in arrays only. */
#define BT_TYPE_MAX_SCALAR 16

/* The row of a type id (never NULL for a valid id). */
BT_HIDDEN const BtType *bt_type(BtTypeId id);

/* Looks up a C/C++ spelling, ignoring redundant whitespace and a leading
 * "std::" on the fixed-width names: "long int", "unsigned", "int64_t",
 * "std::complex< double >", "size_t". Returns 0 and sets *out, or -1. */
BT_HIDDEN int bt_type_lookup(const char *spelling, BtTypeId *out);

/* bt_type_lookup, or a NumPy name ("float64", "complex128", "uint8": the
 * canonical row of that NumPy type), as an annotation's `type:` takes it.
 * Returns 0 and sets *out, or -1. */
BT_HIDDEN int bt_type_lookup_numpy(const char *name, BtTypeId *out);

/* Writes a normalized spelling (single spaces, no space around < > ::) of
 * at most n chars of s into out (size outsize). Used for messages and lookup. */
BT_HIDDEN void bt_type_normalize(const char *s, size_t n, char *out, size_t outsize);

/* libffi type of a scalar (void included): bt_type(id)->ffi. */
BT_HIDDEN void *bt_type_ffi(BtTypeId id);

/* The canonical row of id's kind, size and DLPack code (see BtType). */
BT_HIDDEN BtTypeId bt_type_canonical(BtTypeId id);

/* The canonical row with NumPy type number npy, DLPack (code, bits,
 * lanes), or __cuda_array_interface__ typestr ("<f4"; '<', '|' or '='
 * byte order); -1 when no row has it. */
BT_HIDDEN int bt_type_from_npy(int npy);
BT_HIDDEN int bt_type_from_dlpack(int code, int bits, int lanes);
BT_HIDDEN int bt_type_from_typestr(const char *typestr);

/* Whether id is a CUDA-only type (__half, __nv_bfloat16): no C function
 * can take it. */
BT_HIDDEN int bt_type_cuda_only(BtTypeId id);

/* Why no CUDA kernel takes id (long double and its complex: device code
 * has no long double), or NULL. */
BT_HIDDEN const char *bt_type_host_only(BtTypeId id);

/* Why no call passes a scalar of id by value, as a parameter or a return
 * (std::complex<long double>: larger than BT_TYPE_MAX_SCALAR), or NULL. */
BT_HIDDEN const char *bt_type_no_scalar(BtTypeId id);

/* The Python type of a returned scalar of id: its pyret, else its pyname. */
BT_HIDDEN const char *bt_type_pyret(BtTypeId id);

/* Why a spelling that names a type bindthem knows of is none it passes
 * (_Float128, __float128, __ibm128: no NumPy dtype), or NULL. */
BT_HIDDEN const char *bt_type_refused(const char *spelling);

/* The complex type whose parts are `part` (std::complex<part>), or -1. */
BT_HIDDEN int bt_type_complex_of(BtTypeId part);

/* Comma-separated list of accepted spellings, for "unknown type" messages. */
BT_HIDDEN const char *bt_type_known_spellings(void);

#endif
