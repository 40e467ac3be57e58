/* bt_plan.h - bind plan: header declarations x instantiation table.
 *
 * Pure C. Expands each listed (function, tuple) into a concrete overload,
 * applies remaps, and groups overloads by Python name in YAML order. Without
 * a table, every bindable untemplated function is planned. */
#ifndef BT_PLAN_H
#define BT_PLAN_H

#include "bt_note.h"
#include "bt_parse.h"
#include "bt_yaml.h"

typedef struct BtOverload {
    const BtDecl *decl;
    const BtTArg *targs;   /* one per decl->n_tparams (defaults filled in); NULL when untemplated */
    BtTypeId ret;          /* concrete return type */
    BtTypeId *ptypes;      /* concrete type of each decl->params[i] */
    const char *signature; /* C signature: "int myfunc<int, double>(const int J[], ...)" */
    const BtInst *inst;    /* the YAML entry, or NULL */
    const BtEnum *enums;   /* the header's enums, which a type's enum_ref indexes */
    const BtHeader *header;  /* its header: the handle, callback and struct types a type's
                             * handle_ref, callback_ref and struct_ref index */
    const BtNotePlan *notes; /* what its annotations (or C++ `T &` parameters) make of its
                              * parameters (bt_note.h), or NULL: none */
} BtOverload;

typedef struct BtFunc {
    const char *name; /* Python name (after remaps) */
    BtOverload *ovs;
    int n_ovs;
    const char *doc; /* the first overload's declaration's doc */
} BtFunc;

typedef struct BtSkipped {
    const BtDecl *decl;
    const char *reason; /* "unbindable: ...", "not listed in instantiate.yml", ... */
    int deliberate;     /* an inline/static helper, or a template the table leaves out */
} BtSkipped;

typedef struct BtPlan {
    BtFunc *funcs;
    int n_funcs;
    BtSkipped *skipped; /* header functions that are not bound, with why */
    int n_skipped;
    const char **missing; /* YAML names absent from this header (shared YAML) */
    int n_missing;
} BtPlan;

/* strict: a YAML function the header lacks is always an error. Otherwise
 * (a YAML shared by several headers, as pyamg's is) it is an error only when
 * the header has none of the YAML's functions, or when the name is a near
 * miss of a header function. Returns 0, or -1 with diag set. */
BT_HIDDEN int bt_plan_build(const BtHeader *h, const BtInstTable *t, int strict, BtArena *arena,
                            BtPlan *out, BtDiag *diag);

/* "ns::f" into b, and with targs (one per template parameter; NULL for
 * none) "ns::f<int, double>": an overload as C++ names it. */
BT_HIDDEN void bt_plan_put_name(BtBuf *b, const BtDecl *d, const BtTArg *targs);

/* "template void f<int, double>(const int x[], double a);" ("template
 * __global__ ..." for a CUDA kernel): the explicit instantiation that
 * compiles templated overload ov. */
BT_HIDDEN void bt_plan_put_instantiation(BtBuf *b, const BtOverload *ov);

/* "static_cast<void (*)(const int *, double)>(&::ns::f<int>)": ov's address
 * cast to its type, an expression that names this one overload (NVRTC
 * lowers it to the symbol). */
BT_HIDDEN void bt_plan_put_address(BtBuf *b, const BtOverload *ov);

/* A template argument as C++ writes it: "double", "4", "-1", "true", "'a'". */
BT_HIDDEN void bt_plan_put_targ(BtBuf *b, const BtTArg *a);

/* The C spelling of a type ("double", "std::complex<float>"), or "?" for an
 * id outside the table. Static string. */
BT_HIDDEN const char *bt_plan_cname(BtTypeId id);

/* The enum type ref r of ov names (NULL: r is no enum). */
BT_HIDDEN const BtEnum *bt_plan_enum(const BtOverload *ov, const BtTypeRef *r);

/* The struct type ref r of ov names (NULL: r is no struct). */
BT_HIDDEN const BtStruct *bt_plan_struct(const BtOverload *ov, const BtTypeRef *r);

/* The C++ spelling of type ref r of ov, whose concrete type is id, without
 * its const or pointer: an enum's name ("color"; its integer type when it
 * has none), else bt_plan_cname(id). */
BT_HIDDEN const char *bt_plan_type_name(const BtOverload *ov, const BtTypeRef *r, BtTypeId id);

/* "int ns::f<int, double>(const int J[], const int J_size, double a)":
 * overload ov's declaration as C++ spells it, in arena; NULL out of memory. */
BT_HIDDEN const char *bt_plan_signature(const BtOverload *ov, BtArena *arena);

/* Optimal string alignment distance (Damerau-Levenshtein without repeated
 * edits), case-insensitive, for did-you-mean hints. Names longer than 64
 * characters get the longer length. */
BT_HIDDEN int bt_plan_distance(const char *a, const char *b);

/* Whether names of la and lb characters at distance dist (bt_plan_distance)
 * are a near miss, a likely typo: at most 1 edit when the shorter has 4
 * characters or fewer, 2 above (0: equal ignoring case). */
BT_HIDDEN int bt_plan_near(size_t la, size_t lb, int dist);

#endif
