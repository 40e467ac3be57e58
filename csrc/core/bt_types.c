/* bt_types.c - the scalar type table (Linux LP64: x86-64 and aarch64). */
#include "bt_types.h"

#include <ctype.h>
#include <ffi.h>
#include <float.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* Every platform-defined fact of an integer row (size, signedness, range,
 * NumPy and libffi types) comes from <limits.h> and sizeof on the compiler
 * that builds bindthem, the one that builds the kernels: char is signed on
 * x86-64 (int8) and unsigned on aarch64 Linux (uint8, as gcc
 * -funsigned-char); long is 8 bytes on LP64. bt_slot_init checks each row
 * against NumPy's descriptors at import. Columns: id, C++ spelling, Itanium
 * code, NumPy number, kind, size, alignment, Python type, NumPy name, libffi
 * type, DLPack code, CAI typestr, parts of a complex, integer range, a
 * returned scalar's Python type (NULL: the parameter's). */
_Static_assert(sizeof(short) == 2 && sizeof(int) == 4 && sizeof(long long) == 8 &&
                   sizeof(_Bool) == 1 && CHAR_BIT == 8,
               "the table knows 8-bit bytes, 2-byte short, 4-byte int, 8-byte long long");
_Static_assert(LONG_MAX == INT64_MAX || LONG_MAX == INT32_MAX, "long is 4 or 8 bytes");

/* An integer row: sign i or u (the kind), width in bytes 1, 2, 4 or 8, as
 * tokens, so that the NumPy name, typestr and libffi type follow them. */
#define KIND_i 'i'
#define KIND_u 'u'
#define DL_i 0 /* kDLInt */
#define DL_u 1 /* kDLUInt */
#define NPNAME_i1 "int8"
#define NPNAME_i2 "int16"
#define NPNAME_i4 "int32"
#define NPNAME_i8 "int64"
#define NPNAME_u1 "uint8"
#define NPNAME_u2 "uint16"
#define NPNAME_u4 "uint32"
#define NPNAME_u8 "uint64"
#define TYPESTR_i1 "|i1"
#define TYPESTR_i2 "<i2"
#define TYPESTR_i4 "<i4"
#define TYPESTR_i8 "<i8"
#define TYPESTR_u1 "|u1"
#define TYPESTR_u2 "<u2"
#define TYPESTR_u4 "<u4"
#define TYPESTR_u8 "<u8"
#define FFI_i1 &ffi_type_sint8
#define FFI_i2 &ffi_type_sint16
#define FFI_i4 &ffi_type_sint32
#define FFI_i8 &ffi_type_sint64
#define FFI_u1 &ffi_type_uint8
#define FFI_u2 &ffi_type_uint16
#define FFI_u4 &ffi_type_uint32
#define FFI_u8 &ffi_type_uint64
/* clang-format off */
#define INT_ROW_(id, cname, mangle, npy, type, sign, bytes, min, max)                               \
    {id, cname, mangle, npy, KIND_##sign, sizeof(type), _Alignof(type), "int", NPNAME_##sign##bytes, \
     FFI_##sign##bytes, DL_##sign, TYPESTR_##sign##bytes, BT_VOID, min, max, NULL}
/* clang-format on */
/* (sign and bytes may be macros: CHAR_SIGN, LONG_BYTES; expanded before pasting) */
#define INT_ROW(id, cname, mangle, npy, type, sign, bytes, min, max)                               \
    INT_ROW_(id, cname, mangle, npy, type, sign, bytes, min, max)

/* char: NumPy's byte (signed char, 1) or ubyte (unsigned char, 2) */
#if CHAR_MIN < 0
#define CHAR_SIGN i
#define CHAR_NPY 1
#else
#define CHAR_SIGN u
#define CHAR_NPY 2
#endif
#if LONG_MAX == INT64_MAX
#define LONG_BYTES 8
#else
#define LONG_BYTES 4
#endif
_Static_assert(sizeof(long) == LONG_BYTES, "LONG_MAX and sizeof(long) agree");

/* long double: 16 bytes, aligned 16, on both (NumPy's longdouble is the
 * platform's C long double: the 80-bit x87 format on x86-64, IEEE binary128
 * on aarch64), so its typestr is "<f16" and its complex's "<c32". DLPack
 * has no code for it (-1, as NumPy exports none). */
_Static_assert(sizeof(long double) == 16 && _Alignof(long double) == 16,
               "long double is 16 bytes, aligned 16 (x86-64 and aarch64 Linux)");
#define LDOUBLE_TYPESTR "<f16"
#define CLDOUBLE_TYPESTR "<c32"

/* clang-format off */
static const BtType table[BT_NTYPES] = {
    {BT_VOID,    "void",                 "v",             -1, 'v', 0,            1, "None",    "None",       &ffi_type_void,           -1, "",     BT_VOID,   0,         0, NULL},
    {BT_BOOL,    "bool",                 "b",             0,  'b', 1,            1, "bool",    "bool_",      &ffi_type_uint8,          6,  "|b1",  BT_VOID,   0,         1, NULL},
    INT_ROW(BT_CHAR,   "char",               "c", CHAR_NPY, char,               CHAR_SIGN, 1,          CHAR_MIN,  CHAR_MAX),
    INT_ROW(BT_SCHAR,  "signed char",        "a", 1,        signed char,        i,         1,          SCHAR_MIN, SCHAR_MAX),
    INT_ROW(BT_UCHAR,  "unsigned char",      "h", 2,        unsigned char,      u,         1,          0,         UCHAR_MAX),
    INT_ROW(BT_SHORT,  "short",              "s", 3,        short,              i,         2,          SHRT_MIN,  SHRT_MAX),
    INT_ROW(BT_USHORT, "unsigned short",     "t", 4,        unsigned short,     u,         2,          0,         USHRT_MAX),
    INT_ROW(BT_INT,    "int",                "i", 5,        int,                i,         4,          INT_MIN,   INT_MAX),
    INT_ROW(BT_UINT,   "unsigned int",       "j", 6,        unsigned int,       u,         4,          0,         UINT_MAX),
    INT_ROW(BT_LONG,   "long",               "l", 7,        long,               i,         LONG_BYTES, LONG_MIN,  LONG_MAX),
    INT_ROW(BT_ULONG,  "unsigned long",      "m", 8,        unsigned long,      u,         LONG_BYTES, 0,         ULONG_MAX),
    {BT_LLONG,   "long long",            "x",             9,  'i', 8,            8, "int",     "longlong",   &ffi_type_sint64,         0,  "<i8",  BT_VOID,   LLONG_MIN, LLONG_MAX, NULL},
    {BT_ULLONG,  "unsigned long long",   "y",             10, 'u', 8,            8, "int",     "ulonglong",  &ffi_type_uint64,         1,  "<u8",  BT_VOID,   0,         ULLONG_MAX, NULL},
    {BT_FLOAT,   "float",                "f",             11, 'f', 4,            4, "float",   "float32",    &ffi_type_float,          2,  "<f4",  BT_VOID,   0,         0, NULL},
    {BT_DOUBLE,  "double",               "d",             12, 'f', 8,            8, "float",   "float64",    &ffi_type_double,         2,  "<f8",  BT_VOID,   0,         0, NULL},
    {BT_CFLOAT,  "std::complex<float>",  "St7complexIfE", 14, 'c', 8,            4, "complex", "complex64",  &ffi_type_complex_float,  5,  "<c8",  BT_FLOAT,  0,         0, NULL},
    {BT_CDOUBLE, "std::complex<double>", "St7complexIdE", 15, 'c', 16,           8, "complex", "complex128", &ffi_type_complex_double, 5,  "<c16", BT_DOUBLE, 0,         0, NULL},
    {BT_HALF,    "__half",               "6__half",       23, 'f', 2,            2, "float",   "float16",    &ffi_type_uint16,         2,  "<f2",  BT_VOID,   0,         0, NULL},
    {BT_BF16,    "__nv_bfloat16",        "13__nv_bfloat16", -1, 'f', 2,          2, "float",   "bfloat16",   &ffi_type_uint16,         4,  "<V2",  BT_VOID,   0,         0, NULL},
    {BT_LDOUBLE, "long double",          "e",             13, 'f', sizeof(long double), _Alignof(long double), "float", "longdouble", &ffi_type_longdouble, -1, LDOUBLE_TYPESTR, BT_VOID, 0, 0, "numpy.longdouble"},
    {BT_CLDOUBLE, "std::complex<long double>", "St7complexIeE", 16, 'c', 2 * sizeof(long double), _Alignof(long double), "complex", "clongdouble", &ffi_type_complex_longdouble, -1, CLDOUBLE_TYPESTR, BT_LDOUBLE, 0, 0, "numpy.clongdouble"},
};
/* clang-format on */

/* The row of an integer typedef: the standard integer type it names. */
/* clang-format off */
#define INT_ID(type)                                                                               \
    _Generic((type)0,                                                                              \
        char: BT_CHAR,                                                                             \
        signed char: BT_SCHAR,                                                                     \
        unsigned char: BT_UCHAR,                                                                   \
        short: BT_SHORT,                                                                           \
        unsigned short: BT_USHORT,                                                                 \
        int: BT_INT,                                                                               \
        unsigned int: BT_UINT,                                                                     \
        long: BT_LONG,                                                                             \
        unsigned long: BT_ULONG,                                                                   \
        long long: BT_LLONG,                                                                       \
        unsigned long long: BT_ULLONG)
/* clang-format on */

typedef struct Alias {
    const char *spelling; /* normalized */
    BtTypeId id;
} Alias;

static const Alias aliases[] = {
    {"void", BT_VOID},
    {"bool", BT_BOOL},
    {"_Bool", BT_BOOL}, /* C's; <stdbool.h>'s bool is a macro for it */
    {"char", BT_CHAR},
    {"signed char", BT_SCHAR},
    {"unsigned char", BT_UCHAR},
    {"short", BT_SHORT},
    {"short int", BT_SHORT},
    {"signed short", BT_SHORT},
    {"signed short int", BT_SHORT},
    {"unsigned short", BT_USHORT},
    {"unsigned short int", BT_USHORT},
    {"int", BT_INT},
    {"signed", BT_INT},
    {"signed int", BT_INT},
    {"unsigned", BT_UINT},
    {"unsigned int", BT_UINT},
    {"long", BT_LONG},
    {"long int", BT_LONG},
    {"signed long", BT_LONG},
    {"signed long int", BT_LONG},
    {"unsigned long", BT_ULONG},
    {"unsigned long int", BT_ULONG},
    {"long long", BT_LLONG},
    {"long long int", BT_LLONG},
    {"signed long long", BT_LLONG},
    {"signed long long int", BT_LLONG},
    {"unsigned long long", BT_ULLONG},
    {"unsigned long long int", BT_ULLONG},
    {"float", BT_FLOAT},
    {"double", BT_DOUBLE},
    {"std::complex<float>", BT_CFLOAT},
    {"complex<float>", BT_CFLOAT},
    {"std::complex<double>", BT_CDOUBLE},
    {"complex<double>", BT_CDOUBLE},
    {"long double", BT_LDOUBLE},
    {"std::complex<long double>", BT_CLDOUBLE},
    {"complex<long double>", BT_CLDOUBLE},
    /* GCC's names of the ISO/IEC TS 18661-3 types (glibc's math.h after
     * preprocessing): each the standard type of its format on x86-64 and
     * aarch64 glibc (bits/floatn.h); _Float128 below */
    {"_Float32", BT_FLOAT},
    {"_Float64", BT_DOUBLE},
    {"_Float32x", BT_DOUBLE},
    {"_Float64x", BT_LDOUBLE},
#if LDBL_MANT_DIG == 113
    {"_Float128", BT_LDOUBLE}, /* aarch64: long double is binary128 */
#endif
    /* cuda_fp16.h: half and __nv_half are typedefs of the class __half */
    {"__half", BT_HALF},
    {"half", BT_HALF},
    {"__nv_half", BT_HALF},
    /* cuda_bf16.h: nv_bfloat16 is a typedef of the class __nv_bfloat16 */
    {"__nv_bfloat16", BT_BF16},
    {"nv_bfloat16", BT_BF16},
    /* <stdint.h>, <stddef.h>, <sys/types.h> (and <cstdint>): each typedef resolves to
     * the row of the type the C library declares it as (int64_t is long on LP64 glibc) */
    {"int8_t", INT_ID(int8_t)},
    {"uint8_t", INT_ID(uint8_t)},
    {"int16_t", INT_ID(int16_t)},
    {"uint16_t", INT_ID(uint16_t)},
    {"int32_t", INT_ID(int32_t)},
    {"uint32_t", INT_ID(uint32_t)},
    {"int64_t", INT_ID(int64_t)},
    {"uint64_t", INT_ID(uint64_t)},
    {"size_t", INT_ID(size_t)},
    {"ssize_t", INT_ID(ssize_t)},
    {"ptrdiff_t", INT_ID(ptrdiff_t)},
    {"intptr_t", INT_ID(intptr_t)},
    {"uintptr_t", INT_ID(uintptr_t)},
};

const BtType *bt_type(BtTypeId id) { return (unsigned)id < BT_NTYPES ? &table[id] : NULL; }

static int is_punct(char c) { return c == '<' || c == '>' || c == ':' || c == ','; }

void bt_type_normalize(const char *s, size_t n, char *out, size_t outsize)
{
    size_t i, o = 0;
    int pending_space = 0;

    if (outsize == 0)
        return;
    for (i = 0; i < n && s[i]; i++) {
        char c = s[i];
        if (isspace((unsigned char)c)) {
            pending_space = o > 0;
            continue;
        }
        if (pending_space && !is_punct(c) && !is_punct(out[o - 1]) && o + 1 < outsize)
            out[o++] = ' ';
        pending_space = 0;
        if (o + 1 < outsize)
            out[o++] = c;
    }
    out[o] = '\0';
}

/* C's type words in any order ("long unsigned int", "double _Complex") in
 * the order the aliases spell them, into out; 0, or -1 when s holds another
 * word. */
static int canonical_words(const char *s, char *out, size_t size)
{
    static const char *const words[] = {"signed", "unsigned", "short",  "long",     "int",
                                        "char",   "float",    "double", "_Complex", NULL};
    int count[9] = {0}, k;

    while (*s) {
        size_t n = strcspn(s, " ");
        for (k = 0; words[k] && !(strlen(words[k]) == n && !strncmp(words[k], s, n)); k++)
            ;
        if (!words[k])
            return -1;
        count[k]++;
        s += n + (s[n] == ' ');
    }
    if (count[8]) /* _Complex: of float, double or long double (C99's layout is std::complex's) */
        return snprintf(out, size, "std::complex<%s>",
                        count[6]   ? "float"
                        : count[3] ? "long double"
                                   : "double") < 0
                   ? -1
                   : 0;
    snprintf(out, size, "%s%s%s%s%s%s%s", count[0] ? "signed " : "", count[1] ? "unsigned " : "",
             count[2] ? "short " : "", count[3] ? "long " : "", count[3] > 1 ? "long " : "",
             count[5]   ? "char"
             : count[6] ? "float"
             : count[7] ? "double"
                        : "int",
             "");
    return 0;
}

int bt_type_lookup(const char *spelling, BtTypeId *out)
{
    char norm[128], words[128];
    const char *p;
    size_t i;

    bt_type_normalize(spelling, strlen(spelling), norm, sizeof norm);
    if (canonical_words(norm, words, sizeof words) == 0 && strcmp(words, norm) != 0 &&
        bt_type_lookup(words, out) == 0)
        return 0;
    p = norm;
    /* std::int64_t and friends */
    if (strncmp(p, "std::", 5) == 0 && strncmp(p + 5, "complex", 7) != 0)
        p += 5;
    for (i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcmp(aliases[i].spelling, p) == 0) {
            *out = aliases[i].id;
            return 0;
        }
    }
    return -1;
}

void *bt_type_ffi(BtTypeId id) { return table[id].ffi; }

BtTypeId bt_type_canonical(BtTypeId id)
{
    int i;

    for (i = 0; i < (int)id; i++)
        if (table[i].kind == table[id].kind && table[i].size == table[id].size &&
            table[i].dl_code == table[id].dl_code) /* __half and __nv_bfloat16 differ */
            return (BtTypeId)i;
    return id;
}

int bt_type_from_npy(int npy)
{
    int i;

    for (i = 1; i < BT_NTYPES; i++)
        if (table[i].npy_type == npy)
            return (int)bt_type_canonical((BtTypeId)i);
    return -1;
}

int bt_type_from_dlpack(int code, int bits, int lanes)
{
    int i;

    for (i = 1; i < BT_NTYPES && lanes == 1; i++)
        if (table[i].dl_code == code && (int)table[i].size * 8 == bits)
            return (int)bt_type_canonical((BtTypeId)i);
    return -1;
}

int bt_type_from_typestr(const char *ts)
{
    int i;

    if (ts[0] != '<' && ts[0] != '|' && ts[0] != '=')
        return -1;
    for (i = 1; i < BT_NTYPES; i++) /* "<V2" is any 2-byte record, not only a bfloat16 */
        if (table[i].npy_type >= 0 && strcmp(table[i].typestr + 1, ts + 1) == 0)
            return (int)bt_type_canonical((BtTypeId)i);
    return -1;
}

int bt_type_cuda_only(BtTypeId id) { return id == BT_HALF || id == BT_BF16; }

const char *bt_type_host_only(BtTypeId id)
{
    if (id != BT_LDOUBLE && id != BT_CLDOUBLE)
        return NULL;
    return "a kernel of long double: CUDA device code has no long double (nvcc makes it a "
           "double there), so no kernel's parameter can be NumPy's longdouble";
}

const char *bt_type_no_scalar(BtTypeId id)
{
    if (table[id].size <= BT_TYPE_MAX_SCALAR)
        return NULL;
    return "a std::complex<long double> (long double _Complex) by value: 32 bytes, more than "
           "the 16 a scalar argument or return has; pass it in a clongdouble array (a pointer)";
}

const char *bt_type_pyret(BtTypeId id)
{
    return table[id].pyret ? table[id].pyret : table[id].pyname;
}

/* Spellings of types that no row stands for, with why. */
static const struct {
    const char *spelling, *why;
} refused[] = {
#if LDBL_MANT_DIG != 113
    {"_Float128", "IEEE binary128, for which NumPy has no dtype here (its longdouble is this "
                  "platform's long double, the 80-bit x87 format)"},
#endif
    {"__float128", "IEEE binary128, for which NumPy has no dtype (its longdouble is the "
                   "platform's long double)"},
    {"_Float128x", "a format wider than binary128, for which NumPy has no dtype"},
    {"__ibm128", "IBM's double-double, for which NumPy has no dtype here"},
};

const char *bt_type_refused(const char *spelling)
{
    size_t i;

    for (i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (strcmp(refused[i].spelling, spelling) == 0)
            return refused[i].why;
    return NULL;
}

int bt_type_complex_of(BtTypeId part)
{
    int i;

    for (i = 1; i < BT_NTYPES; i++)
        if (table[i].kind == 'c' && table[i].part == part)
            return i;
    return -1;
}

const char *bt_type_known_spellings(void)
{
    return "void, bool, char, signed char, unsigned char, short, unsigned short, int, "
           "unsigned, long, long int, unsigned long, long long, unsigned long long, float, "
           "double, long double, std::complex<float>, std::complex<double>, "
           "std::complex<long double>, _Float32, _Float64, _Float32x, _Float64x, "
           "int8_t..uint64_t, size_t, "
           "ssize_t, ptrdiff_t, intptr_t, uintptr_t, _Bool (C), "
           "__half and __nv_bfloat16 (CUDA kernels)";
}

int bt_type_lookup_numpy(const char *name, BtTypeId *out)
{
    BtTypeId id;

    if (bt_type_lookup(name, out) == 0)
        return 0;
    for (id = 0; id < BT_NTYPES; id++)
        if (bt_type(id)->npname && strcmp(bt_type(id)->npname, name) == 0 &&
            bt_type_canonical(id) == id) {
            *out = id;
            return 0;
        }
    return -1;
}
