/* bt_parse.h - header reader: kernel headers into declaration records.
 *
 * Pure C. The dialect: comments, an optional `template <class I, ...>` line,
 * then a function declaration or definition (bodies skipped by brace
 * matching), at file scope, in namespaces or in extern "C" blocks.
 * Functions the dialect can't express are kept, marked unbindable with the
 * reason, so that an instantiate.yml naming them gets a precise error. */
#ifndef BT_PARSE_H
#define BT_PARSE_H

#include "bt_arena.h"
#include "bt_diag.h"
#include "bt_lex.h"
#include "bt_types.h"

/* Most C parameters a bound function may have: call frames are sized by it.
 * A function with more is recorded unbindable. */
#define BT_MAX_PARAMS 96

/* A parameter's or return value's type. */
typedef struct BtTypeRef {
    int tparam;               /* index into BtDecl.tparams, or -1 for a concrete type */
    BtTypeId type;            /* the concrete type when tparam < 0 */
    int is_const;             /* const on the scalar, or on the pointee of an array */
    int is_array;             /* `T *x` or `T x[]` */
    int is_complex_of_tparam; /* `std::complex<T>` with T a template param */
    int enum_ref;             /* an enum: 1 + its index in BtHeader.enums (type: the enum's
                               * integer type); 0 for any other type */
    int is_string;            /* `const char *` with no size parameter after it (a parameter)
                               * or returned: a NUL-terminated string (is_array is 0) */
    int nullable;             /* such a parameter that takes None too, passed as NULL: its
                               * annotation says so (bt_note.h's `nullable: true`) */
    int handle_ref;           /* a pointer to a struct or union (`gzFile`, `FILE *`): 1 + its
                               * index in BtHeader.handles (is_array is 0); else 0 */
    int callback_ref;         /* a function pointer: 1 + its index in BtHeader.callbacks */
    int is_voidp;             /* `void *` (or `const void *`) with no size after it: an opaque
                               * pointer (None or a handle); is_array is 0 */
    int struct_ref;           /* a struct or union whose fields the header declares, by value
                               * or (is_array) by pointer: 1 + its index in BtHeader.structs */
} BtTypeRef;

/* Size parameters follow their array x: `x_size` gets x.shape[0] and
 * `x_sizeK` gets x.shape[K] (the seed generator's rule), K below this. */
#define BT_MAX_SIZE_AXES 32

/* Most dimensions of a fixed-size array parameter (BtParam.fixed). */
#define BT_MAX_FIXED_DIMS 8

typedef struct BtParam {
    const char *name;
    BtTypeRef t;
    int size_of;        /* for a size parameter of array x: index of x; else -1 */
    int size_axis;      /* for a size parameter: the axis K it gets (0 for `x_size`) */
    const char *defval; /* a scalar's default argument, as written ("2"), or NULL */
    int unnamed;        /* the header gives no name: `name` is "argN", N its index */
    int hidden;         /* no Python parameter: an annotation computes it, or the call
                         * allocates it (bt_note.h); the plan's copy of the declaration */
    int no_size;        /* a pointer with no size parameter after it (BT_RULE_SIZES): only
                         * an annotation binds it */
    int is_ref;         /* a C++ reference `T &` to a scalar (passed as a pointer) */
    int handle_ptr;     /* a pointer to a handle (`sqlite3 **`, `void **`: t.handle_ref its
                         * type): one handle by address or an array of them, which the
                         * header does not say; no_size until an annotation does */
    int string_ptr;     /* a pointer to a C string (`char **`, `const char **`: t.type
                         * BT_CHAR): one string by address (strtod's endptr) or an array
                         * of them (argv); no_size until an annotation says one */
    int line, col;      /* of the parameter's name (of its first token when unnamed) */
    /* a C array of fixed size (`double m[3][3]`; `uuid_t uu` of `typedef unsigned char
     * uuid_t[16]`), is_array: the shape an argument must have, outermost first (the
     * function gets its address: C passes an array parameter as a pointer); 0 for any
     * other parameter (`T x[]`, `T *x`: sized by `x_size`); in the parser's arena */
    int n_fixed;
    const long long *fixed;
} BtParam;

/* A template parameter: a type (`class T`, `typename T`) or a value
 * (`int B`, `bool B`, `std::size_t N`: an integer or bool type of the table). */
typedef struct BtTParam {
    int is_value;
    BtTypeId type;      /* a value parameter's type */
    const char *defval; /* the default as written ("int", "T", "4"), or NULL */
} BtTParam;

/* A concrete template argument: a type, or a value parameter's value. */
typedef struct BtTArg {
    BtTypeId type; /* the type; for a value, its parameter's type */
    int is_value;
    int neg;                /* a value below zero */
    unsigned long long mag; /* a value's magnitude (bool: 0 or 1; char: its code) */
} BtTArg;

typedef struct BtDecl {
    const char *name;
    const char **ns; /* enclosing namespaces, outermost first */
    int n_ns;
    int extern_c;  /* extern "C" prefix or inside an extern "C" block */
    int is_inline; /* inline, not `extern inline` (whose symbol the library has) */
    int is_static;
    int is_global;          /* CUDA __global__ */
    int is_device;          /* CUDA __device__ (without __global__) */
    const char **tparams;   /* template parameter names */
    const BtTParam *tpinfo; /* what each is, one per name */
    int n_tparams;          /* 0 for an untemplated function */
    BtTypeRef ret;
    BtParam *params;
    int n_params;
    const char *doc;        /* comment markers and common indentation stripped; "" if none */
    const char *unbindable; /* reason, or NULL when bindable */
    BtRule unbindable_rule; /* the dialect rule unbindable breaks (bt_diag.h) */
    int sizes_missing;      /* unbindable only for arrays with no size after them (their
                             * params' no_size): an annotation can bind it (bt_note.h) */
    int unreadable;         /* a declaration the parser could not read (unbindable says why) */
    const char *file;       /* the file declaring it when that is not the header itself (one
                             * of an umbrella header's own files, bt_cpp.h), else NULL */
    int line, col;          /* of the function's name, in that file */
    /* what its annotations make of its parameters (bt_note.h: bt_note_apply sets it on
     * the annotated copy that replaces it), or NULL */
    const struct BtNotePlan *notes;
    int first_line; /* its doc comment's (or template's, or first word's) line */
    int last_line;  /* of its closing '}' or ';' */
} BtDecl;

/* An enum the header (or a file it includes) declares: `enum TAG {...}`,
 * `typedef enum {...} NAME`, C++'s `enum class TAG : type {...}`. */
typedef struct BtEnumMember {
    const char *name;
    long long value;
} BtEnumMember;

typedef struct BtEnum {
    const char *name;      /* the typedef's name, else the tag; "" when it has neither */
    BtTypeId type;         /* its integer type, as the C ABI sizes it (GCC's rule: unsigned
                            * int when no member is negative, else int; long when wider) */
    int is_flags;          /* every member 0 or a distinct power of two, three or more not 0:
                            * a parameter takes any OR of them */
    BtEnumMember *members; /* in declaration order */
    int n_members;
    int line;      /* of its name (or its 'enum'), in the file that declares it */
    int in_header; /* declared in the header itself, not in a file it includes */
} BtEnum;

/* A constant the header itself defines: `#define NAME value`, value an
 * integer constant expression or a string literal (function-like macros and
 * anything else are not constants). */
typedef struct BtConst {
    const char *name;
    int is_string;
    long long value;  /* an integer's value */
    const char *text; /* a string's bytes (NUL-terminated; no NUL inside) */
    int line;
} BtConst;

/* A struct or union that functions take or return by pointer: a handle type. */
typedef struct BtHandleType {
    const char *key;  /* the type pointed to, as the parser spells it: "struct gzFile_s" */
    const char *name; /* its Python name: a typedef of the struct (FILE, z_stream), else of
                       * the pointer (gzFile), else the tag */
    int line;         /* of the first use */
    int complete;     /* its fields are declared: a struct the caller could fill, which
                       * functions take as a handle only when one returns it */
    int returned;     /* a function returns one */
} BtHandleType;

/* Whether a handle type's key is the untyped one: a `void *` returned (or
 * written by address), which any Handle may stand for and whose NULL is a
 * value (None) by default. */
static inline int bt_handle_key_untyped(const char *key)
{
    /* no <string.h> here: a py/ file includes Python.h before any system header */
    return key[0] == 'v' && key[1] == 'o' && key[2] == 'i' && key[3] == 'd' && !key[4];
}

/* A field of a struct: a scalar (an enum as its integer type), a pointer of
 * any kind (an address, as uintptr_t), a struct, or an array of one of them. */
#define BT_MAX_FIELD_DIMS 4

typedef struct BtField {
    const char *name;
    BtTypeId type;  /* a scalar's (BT_VOID for a pointer or a struct) */
    int enum_ref;   /* an enum's: 1 + its index in BtHeader.enums */
    int struct_ref; /* a struct's: 1 + its index in BtHeader.structs */
    int is_pointer; /* any pointer (function pointers too): uintptr_t */
    int bits;       /* the bytes of a run of bit-fields (name: theirs, joined by ','), as
                     * unsigned char[n]: NumPy has no bit-fields, but copies these bytes */
    int n_dims;     /* an array's dimensions, outermost first */
    long long dims[BT_MAX_FIELD_DIMS];
    size_t offset; /* from the struct's start, as the C ABI lays it out */
    size_t size;   /* of the whole field (an array's elements together) */
} BtField;

/* A struct or union whose fields the header (or a file it includes)
 * declares: a NumPy structured dtype, laid out as the C ABI lays it out
 * (each field at the next multiple of its alignment; a union's at 0; the
 * size a multiple of the largest alignment). */
typedef struct BtStruct {
    const char *key;  /* "struct point", "union u", "struct <anonymous 3>" */
    const char *name; /* its Python name: a typedef of it, else its tag */
    int is_union;
    BtField *fields;
    int n_fields;
    size_t size, align;
    const char *reason; /* why it has no dtype (a bit-field, `#pragma pack`, a layout
                         * attribute, a field of a type bindthem does not know), or NULL */
    int line;
    int in_header;
    int opaque;    /* every field has a reserved name (glibc's FILE): opaque by convention,
                    * so a pointer to it is a handle, never a record; laid out all the same
                    * for an array of it the caller holds (`typedef __mpz_struct mpz_t[1]`) */
    int held;      /* the header declares an array typedef of it (mpz_t): callers hold it, so
                    * a parameter pointing to it is a record even when opaque or returned */
    int bitfields; /* it holds bit-fields: laid out as the ABI packs them (their bits count in
                    * its size, a named one's type in its alignment), their bytes fields of
                    * BtField.bits; passed by pointer, never by value */
    size_t bits;   /* while its members are laid out: the bit just past the last one */
} BtStruct;

/* A function pointer type: what a callback is called with. */
typedef struct BtCallbackType {
    const char *name;   /* the typedef's name; for one written in a parameter, the parameter's */
    struct BtDecl *sig; /* its return type and parameters; sig->unbindable says why no
                         * Python callable can stand for it (a raw pointer still can) */
} BtCallbackType;

typedef struct BtHeader {
    const char *file;
    int preprocessed; /* the text is the C preprocessor's output (line markers), of which
                       * only the main file's declarations are bound */
    BtDecl *decls;
    int n_decls;
    const BtDirective *dirs; /* its `#pragma omp` and `#include "..."` lines (bt_lex) */
    int n_dirs;
    BtEnum *enums; /* every enum seen, the included files' too */
    int n_enums;
    BtConst *consts; /* the header's own integer and string #defines */
    int n_consts;
    BtHandleType *handles; /* those its declarations use */
    int n_handles;
    BtCallbackType *callbacks; /* those its declarations use, and its typedefs' */
    int n_callbacks;
    BtStruct *structs; /* every struct and union whose fields are declared */
    int n_structs;
} BtHeader;

/* Parses text (len bytes, need not be NUL-terminated) into *out, allocating
 * from arena. A declaration that cannot be read is, when strict, an error;
 * otherwise it is recorded (unreadable, unbindable "cannot read the
 * declaration: file:line:col: ...") and reading resumes after its ';' or
 * its '{...}' at brace depth 0. Returns 0, or -1 with diag set
 * (file:line:col near 'token'; out of memory whatever strict says). */
BT_HIDDEN int bt_parse_header(const char *file, const char *text, size_t len, int strict,
                              BtArena *arena, BtHeader *out, BtDiag *diag);

#endif
