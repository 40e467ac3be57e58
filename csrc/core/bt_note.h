/* bt_note.h - annotations: how a C API passes its arrays, from the
 * instantiate.yml's `annotate:` section (a file beside the header, never
 * in it: system headers are not edited).
 *
 * Pure C. The YAML (bt_yaml.c reads it; docs/arrays.rst teaches it):
 *
 *   annotate:
 *     cblas_ddot:              # a function name, or a glob (`cblas_?dot`, `*`)
 *       n: len(x)              # a hidden parameter: its value, an expression (bt_expr.h)
 *       incx: stride(x)
 *       y: {shape: [n]}        # an array: its shape, checked (in, inout) or allocated (out)
 *       incy: stride(y)
 *     LAPACKE_dgesv:
 *       matrix_layout: layout(a, LAPACK_ROW_MAJOR, LAPACK_COL_MAJOR)
 *       n: len(a)
 *       nrhs: shape(b, 1)
 *       a: {intent: inout, shape: [n, n]}
 *       lda: ld(a)
 *       ipiv: {intent: out, shape: [n]}
 *       b: {intent: inout, shape: [n, nrhs]}
 *       ldb: ld(b)
 *       status: {ok: [0]}      # the return is a status code: anything else raises
 *     compress2:
 *       dest: {intent: out, shape: ["sourceLen + (sourceLen >> 12) + 13"], trim: destLen}
 *       destLen: len(dest)     # a pointer given a value: its address is passed, read back
 *       sourceLen: len(source)
 *       check: [level >= -1]   # preconditions, each raised as a ValueError naming it
 *
 * Per parameter, one of:
 *   "<expr>"               hidden from Python, computed before the call (a
 *                          scalar pointer: its address passed, its value
 *                          read back after: zlib's uLongf *destLen)
 *   {intent: in|out|inout, shape: [<expr>, ...], trim: <param>, type: <type>}
 *                          a pointer: an array when it has a shape or an
 *                          expression queries it (len(x), stride(x)...),
 *                          else a scalar passed by pointer (`in`: the
 *                          caller's value; `out`: returned; `inout`: both;
 *                          OpenBLAS's `const void *alpha`). `type` gives a
 *                          `void *` its element type (complex128). `in` (the
 *                          default for `const T *`) and `inout` (for
 *                          `T *`) are passed by the caller, their shape
 *                          checked; `out` is allocated by the call (in the
 *                          layout its leading dimension's function chose) and
 *                          returned; `trim` returns out[:param's value after
 *                          the call]
 *   {nullable: true}       a `const char *` that takes None too, passed as
 *                          NULL (a C function that documents NULL:
 *                          sqlite3_open_v2's zVfs); alone
 * Per function (reserved words, never parameter names):
 *   check: [<expr>, ...]   preconditions
 *   status: {ok: [<expr>, ...]}  the return is a status: a value outside
 *                          ok raises bindthem.StatusError (and is not returned)
 * A function matching several entries takes each parameter's note from
 * the first that names it (exact names before globs, then file order). */
#ifndef BT_NOTE_H
#define BT_NOTE_H

#include "bt_expr.h"

enum { BT_INTENT_DEFAULT = 0, BT_INTENT_IN, BT_INTENT_OUT, BT_INTENT_INOUT };

/* One parameter's note, as written. */
typedef struct BtNoteArg {
    const char *name; /* the C parameter it is about */
    BtExpr *value;    /* "<expr>": hidden, its value; else NULL */
    int intent;       /* BT_INTENT_* */
    BtExpr *shape;    /* shape's expressions, n_shape of them (NULL: none stated) */
    int n_shape;
    const char *trim; /* trim's parameter name, or NULL */
    BtTypeId type;    /* type: the element type of a `void *` (BT_VOID: none stated) */
    int nullable;     /* nullable: true (a `const char *` that takes None) */
    int line, col;    /* of its key in the YAML */
} BtNoteArg;

/* One `annotate:` entry. */
typedef struct BtNoteFunc {
    const char *pattern; /* a name, or a glob with * and ? */
    int is_glob;
    BtNoteArg *args;
    int n_args;
    BtExpr *checks;
    int n_checks;
    BtExpr *ok; /* status ok values; n_ok 0: the return is no status */
    int n_ok;
    int line, col;
} BtNoteFunc;

typedef struct BtNoteTable {
    const char *file;
    BtNoteFunc *funcs;
    int n_funcs;
} BtNoteTable;

/* ---- what the plan makes of the notes, per overload (bt_plan.c) ----
 *
 * Roles of a C parameter in an annotated function. */
enum {
    BT_ROLE_PLAIN = 0,   /* as without notes: a Python parameter (or a dialect size) */
    BT_ROLE_HIDDEN,      /* computed: value */
    BT_ROLE_HIDDEN_REF,  /* a scalar pointer computed: value, address passed, read back */
    BT_ROLE_ARRAY,       /* an array the caller passes (in or inout) */
    BT_ROLE_OUT,         /* an array the call allocates and returns */
    BT_ROLE_SCALAR_IN,   /* a scalar by pointer: the caller's value (`intent: in`, no
                          * shape; a C++ `const T &`) */
    BT_ROLE_SCALAR_OUT,  /* a scalar by pointer the call allocates and returns */
    BT_ROLE_SCALAR_INOUT /* the caller's value in, the value after the call returned (a
                          * C++ `T &`, or `intent: inout` without shape) */
};

/* The roles of one function's parameters, bound to its declaration. */
typedef struct BtNoteParam {
    int role;            /* BT_ROLE_* (the element type is the overload's: a `void *`'s
                          * from `type:`, set on the declaration's copy) */
    const BtExpr *value; /* HIDDEN, HIDDEN_REF: its expression */
    const BtExpr *shape; /* ARRAY, OUT: n_shape expressions, or NULL */
    int n_shape;
    int trim;    /* OUT, ARRAY: the parameter whose value after the call is the
                          * returned length (-1: none) */
    int written; /* ARRAY, OUT: the function writes it (its intent, which outranks the
                    * header's const): a caller's array must be writable */
    int strided; /* ARRAY, OUT: a stride(x) names it: passed as a strided view */
    int ld;      /* ARRAY, OUT: an ld(x) or layout(x...) names it: a 2-D array with
                          * one unit-stride axis passed as it is */
    int follows; /* ARRAY, OUT: a 2-D array without a leading dimension in a
                    * function whose notes ask a layout(): stored contiguous in the
                    * call's layout (LAPACKE's err_bnds_norm: nrhs x n_err_bnds by
                    * rows or by columns as matrix_layout says) */
} BtNoteParam;

typedef struct BtNotePlan { /* the struct tag: bt_parse.h's BtDecl.notes */
    BtNoteParam *params;    /* one per C parameter */
    int n_params;
    const BtExpr *checks;
    int n_checks;
    const BtExpr *ok;
    int n_ok;
    int *order; /* the hidden parameters and out arrays (roles HIDDEN, HIDDEN_REF, OUT) in
                 * an order that makes each after what it reads (n_order of them) */
    int n_order;
    const char *file; /* the YAML, for messages */
} BtNotePlan;

/* Whether an annotated call's result holds parameter i: an out array (or
 * an array with trim: its first elements), an out or in/out scalar. The
 * C return comes first unless it is void or a status (n_ok). One rule for
 * the call (bt_note_call.c) and the metadata (stubs, help). */
static inline int bt_note_returned(const BtNotePlan *pl, int i)
{
    int r = pl->params[i].role;
    return r == BT_ROLE_OUT || (r == BT_ROLE_ARRAY && pl->params[i].trim >= 0) ||
           r == BT_ROLE_SCALAR_OUT || r == BT_ROLE_SCALAR_INOUT;
}

/* The notes of table t that apply to declaration d (of header h), bound
 * to it: NULL with *why NULL when none applies; NULL with *why set (arena)
 * when they leave d unbindable ("parameter 'x' is a pointer with no size:
 * annotate its shape, or a size parameter as len(x)"); else the plan, with
 * *dout a copy of d whose params say which are hidden (BtParam.hidden) and
 * whose unbindable is cleared where only sizes made it so. -1 with diag set
 * for an annotation that is wrong whatever the call (an unknown parameter,
 * a cycle, a query of a scalar), at its file:line:col. */
BT_HIDDEN int bt_note_bind(const BtNoteTable *t, const BtDecl *d, const BtHeader *h, BtArena *arena,
                           const BtNotePlan **out, const BtDecl **dout, const char **why,
                           BtDiag *diag);

/* Applies table t's notes (NULL: none; a C++ reference `T &` gets its
 * role all the same) to every declaration of h: an annotated one is
 * replaced by bt_note_bind's copy, with its plan (BtDecl.notes); one the
 * notes leave out gets their reason. Returns 0, or -1 with diag set. */
BT_HIDDEN int bt_note_apply(BtHeader *h, const BtNoteTable *t, BtArena *arena, BtDiag *diag);

/* A deep copy of plan p in arena (its expressions' texts and nodes), for
 * what outlives the metadata; NULL when out of memory. */
BT_HIDDEN BtNotePlan *bt_note_copy(const BtNotePlan *p, BtArena *arena);

#endif
