/* bt_types.c - the scalar type table (Linux x86-64, LP64). */
#include "bt_types.h"

#include <complex.h>
#include <ctype.h>
#include <ffi.h>
#include <stdbool.h>
#include <string.h>

/* NumPy's type numbers are part of its stable ABI; bt_module.c checks them
 * against numpy's headers with static asserts. */
static const BtType table[BT_NTYPES] = {
    {BT_VOID, "void", "v", -1, 'v', 0, "None", "None"},
    {BT_BOOL, "bool", "b", 0, 'b', sizeof(bool), "bool", "bool_"},
    {BT_CHAR, "char", "c", 1, 'i', 1, "int", "int8"},
    {BT_SCHAR, "signed char", "a", 1, 'i', 1, "int", "int8"},
    {BT_UCHAR, "unsigned char", "h", 2, 'u', 1, "int", "uint8"},
    {BT_SHORT, "short", "s", 3, 'i', sizeof(short), "int", "int16"},
    {BT_USHORT, "unsigned short", "t", 4, 'u', sizeof(unsigned short), "int", "uint16"},
    {BT_INT, "int", "i", 5, 'i', sizeof(int), "int", "int32"},
    {BT_UINT, "unsigned int", "j", 6, 'u', sizeof(unsigned), "int", "uint32"},
    {BT_LONG, "long", "l", 7, 'i', sizeof(long), "int", "int64"},
    {BT_ULONG, "unsigned long", "m", 8, 'u', sizeof(unsigned long), "int", "uint64"},
    {BT_LLONG, "long long", "x", 9, 'i', sizeof(long long), "int", "longlong"},
    {BT_ULLONG, "unsigned long long", "y", 10, 'u', sizeof(unsigned long long), "int", "ulonglong"},
    {BT_FLOAT, "float", "f", 11, 'f', sizeof(float), "float", "float32"},
    {BT_DOUBLE, "double", "d", 12, 'f', sizeof(double), "float", "float64"},
    {BT_CFLOAT, "std::complex<float>", "St7complexIfE", 14, 'c', sizeof(float complex), "complex",
     "complex64"},
    {BT_CDOUBLE, "std::complex<double>", "St7complexIdE", 15, 'c', sizeof(double complex),
     "complex", "complex128"},
};

typedef struct Alias {
    const char *spelling; /* normalized */
    BtTypeId id;
} Alias;

static const Alias aliases[] = {
    {"void", BT_VOID},
    {"bool", BT_BOOL},
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

void *bt_type_ffi(BtTypeId id)
{
    switch (id) {
    case BT_VOID: return &ffi_type_void;
    case BT_BOOL: return &ffi_type_uint8;
    case BT_CHAR:
    case BT_SCHAR: return &ffi_type_sint8;
    case BT_UCHAR: return &ffi_type_uint8;
    case BT_SHORT: return &ffi_type_sint16;
    case BT_USHORT: return &ffi_type_uint16;
    case BT_INT: return &ffi_type_sint32;
    case BT_UINT: return &ffi_type_uint32;
    case BT_LONG:
    case BT_LLONG: return &ffi_type_sint64;
    case BT_ULONG:
    case BT_ULLONG: return &ffi_type_uint64;
    case BT_FLOAT: return &ffi_type_float;
    case BT_DOUBLE: return &ffi_type_double;
    case BT_CFLOAT: return &ffi_type_complex_float;
    case BT_CDOUBLE: return &ffi_type_complex_double;
    default: return NULL;
    }
}

const char *bt_type_known_spellings(void)
{
    return "void, bool, char, signed char, unsigned char, short, unsigned short, int, "
           "unsigned, long, long int, unsigned long, long long, unsigned long long, float, "
           "double, std::complex<float>, std::complex<double>, int8_t..uint64_t, size_t, "
           "ptrdiff_t";
}
