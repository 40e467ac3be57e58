/* bt_types.c - the scalar type table (Linux x86-64, LP64). */
#include "bt_types.h"

#include <ctype.h>
#include <ffi.h>
#include <limits.h>
#include <string.h>

/* Sizes and alignments are LP64's (bt_slot_init checks them against NumPy's
 * descriptors, and the NumPy type numbers, at import). Columns: id, C++
 * spelling, Itanium code, NumPy number, kind, size, alignment, Python type,
 * NumPy name, libffi type, DLPack code, CAI typestr, parts of a complex,
 * integer range. */
_Static_assert(sizeof(short) == 2 && sizeof(int) == 4 && sizeof(long) == 8 &&
                   sizeof(long long) == 8 && sizeof(_Bool) == 1,
               "the table's sizes are LP64's");

/* clang-format off */
static const BtType table[BT_NTYPES] = {
    {BT_VOID,    "void",                 "v",             -1, 'v', 0,            1, "None",    "None",       &ffi_type_void,           -1, "",     BT_VOID,   0,         0},
    {BT_BOOL,    "bool",                 "b",             0,  'b', 1,            1, "bool",    "bool_",      &ffi_type_uint8,          6,  "|b1",  BT_VOID,   0,         1},
    {BT_CHAR,    "char",                 "c",             1,  'i', 1,            1, "int",     "int8",       &ffi_type_sint8,          0,  "|i1",  BT_VOID,   SCHAR_MIN, SCHAR_MAX},
    {BT_SCHAR,   "signed char",          "a",             1,  'i', 1,            1, "int",     "int8",       &ffi_type_sint8,          0,  "|i1",  BT_VOID,   SCHAR_MIN, SCHAR_MAX},
    {BT_UCHAR,   "unsigned char",        "h",             2,  'u', 1,            1, "int",     "uint8",      &ffi_type_uint8,          1,  "|u1",  BT_VOID,   0,         UCHAR_MAX},
    {BT_SHORT,   "short",                "s",             3,  'i', 2,            2, "int",     "int16",      &ffi_type_sint16,         0,  "<i2",  BT_VOID,   SHRT_MIN,  SHRT_MAX},
    {BT_USHORT,  "unsigned short",       "t",             4,  'u', 2,            2, "int",     "uint16",     &ffi_type_uint16,         1,  "<u2",  BT_VOID,   0,         USHRT_MAX},
    {BT_INT,     "int",                  "i",             5,  'i', 4,            4, "int",     "int32",      &ffi_type_sint32,         0,  "<i4",  BT_VOID,   INT_MIN,   INT_MAX},
    {BT_UINT,    "unsigned int",         "j",             6,  'u', 4,            4, "int",     "uint32",     &ffi_type_uint32,         1,  "<u4",  BT_VOID,   0,         UINT_MAX},
    {BT_LONG,    "long",                 "l",             7,  'i', 8,            8, "int",     "int64",      &ffi_type_sint64,         0,  "<i8",  BT_VOID,   LONG_MIN,  LONG_MAX},
    {BT_ULONG,   "unsigned long",        "m",             8,  'u', 8,            8, "int",     "uint64",     &ffi_type_uint64,         1,  "<u8",  BT_VOID,   0,         ULONG_MAX},
    {BT_LLONG,   "long long",            "x",             9,  'i', 8,            8, "int",     "longlong",   &ffi_type_sint64,         0,  "<i8",  BT_VOID,   LLONG_MIN, LLONG_MAX},
    {BT_ULLONG,  "unsigned long long",   "y",             10, 'u', 8,            8, "int",     "ulonglong",  &ffi_type_uint64,         1,  "<u8",  BT_VOID,   0,         ULLONG_MAX},
    {BT_FLOAT,   "float",                "f",             11, 'f', 4,            4, "float",   "float32",    &ffi_type_float,          2,  "<f4",  BT_VOID,   0,         0},
    {BT_DOUBLE,  "double",               "d",             12, 'f', 8,            8, "float",   "float64",    &ffi_type_double,         2,  "<f8",  BT_VOID,   0,         0},
    {BT_CFLOAT,  "std::complex<float>",  "St7complexIfE", 14, 'c', 8,            4, "complex", "complex64",  &ffi_type_complex_float,  5,  "<c8",  BT_FLOAT,  0,         0},
    {BT_CDOUBLE, "std::complex<double>", "St7complexIdE", 15, 'c', 16,           8, "complex", "complex128", &ffi_type_complex_double, 5,  "<c16", BT_DOUBLE, 0,         0},
    {BT_HALF,    "__half",               "6__half",       23, 'f', 2,            2, "float",   "float16",    &ffi_type_uint16,         2,  "<f2",  BT_VOID,   0,         0},
    {BT_BF16,    "__nv_bfloat16",        "13__nv_bfloat16", -1, 'f', 2,          2, "float",   "bfloat16",   &ffi_type_uint16,         4,  "<V2",  BT_VOID,   0,         0},
};
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
    /* cuda_fp16.h: half and __nv_half are typedefs of the class __half */
    {"__half", BT_HALF},
    {"half", BT_HALF},
    {"__nv_half", BT_HALF},
    /* cuda_bf16.h: nv_bfloat16 is a typedef of the class __nv_bfloat16 */
    {"__nv_bfloat16", BT_BF16},
    {"nv_bfloat16", BT_BF16},
    /* <stdint.h> / <cstdint> on glibc x86-64 */
    {"int8_t", BT_SCHAR},
    {"uint8_t", BT_UCHAR},
    {"int16_t", BT_SHORT},
    {"uint16_t", BT_USHORT},
    {"int32_t", BT_INT},
    {"uint32_t", BT_UINT},
    {"int64_t", BT_LONG},
    {"uint64_t", BT_ULONG},
    {"size_t", BT_ULONG},
    {"ssize_t", BT_LONG},
    {"ptrdiff_t", BT_LONG},
    {"intptr_t", BT_LONG},
    {"uintptr_t", BT_ULONG},
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

int bt_type_lookup(const char *spelling, BtTypeId *out)
{
    char norm[128];
    const char *p;
    size_t i;

    bt_type_normalize(spelling, strlen(spelling), norm, sizeof norm);
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
           "double, std::complex<float>, std::complex<double>, int8_t..uint64_t, size_t, "
           "ssize_t, ptrdiff_t, intptr_t, uintptr_t, _Bool (C), "
           "__half and __nv_bfloat16 (CUDA kernels)";
}
