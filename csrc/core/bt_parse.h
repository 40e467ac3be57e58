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
} BtTypeRef;

/* Size parameters follow their array x: `x_size` gets x.shape[0] and
 * `x_sizeK` gets x.shape[K] (the seed generator's rule), K below this. */
#define BT_MAX_SIZE_AXES 32

typedef struct BtParam {
    const char *name;
    BtTypeRef t;
    int size_of;        /* for a size parameter of array x: index of x; else -1 */
    int size_axis;      /* for a size parameter: the axis K it gets (0 for `x_size`) */
    const char *defval; /* a scalar's default argument, as written ("2"), or NULL */
    int unnamed;        /* the header gives no name: `name` is "argN", N its index */
    int line, col;      /* of the parameter's name (of its first token when unnamed) */
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
    int extern_c; /* extern "C" prefix or inside an extern "C" block */
    int is_inline;
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
    int unreadable;         /* a declaration the parser could not read (unbindable says why) */
    int line, col;          /* of the function's name */
    int first_line;         /* its doc comment's (or template's, or first word's) line */
    int last_line;          /* of its closing '}' or ';' */
} BtDecl;

typedef struct BtHeader {
    const char *file;
    BtDecl *decls;
    int n_decls;
    const BtDirective *dirs; /* its `#pragma omp` and `#include "..."` lines (bt_lex) */
    int n_dirs;
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
