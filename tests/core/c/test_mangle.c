/* test_mangle.c - bt_mangle against g++.
 *
 * One table of declarations, built by hand (no parser). From it the driver
 * writes, into OUTDIR:
 *   decls.h           the declarations in the bindthem dialect, with bodies
 *   instantiate.yml   their instantiations, in the BindThem README shape
 *   instantiate.cpp   decls.h plus explicit instantiations, for g++
 *   names.tsv         per instantiation: bt_mangle's name, TAB, the
 *                     declaration c++filt should print for it
 * run_mangle_test.sh compiles instantiate.cpp with g++ -shared, and checks
 * the names against nm -D and c++filt, and the files against the fixtures
 * in tests/data/mangle/.
 *
 * Usage: test_mangle OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt_arena.h"
#include "bt_mangle.h"
#include "bt_parse.h"
#include "bt_types.h"

#define MAXP 40 /* written parameters; each array also gets its _size */
#define MAXI 16
#define MAXT 4

typedef struct Ty {
    int used;
    int tparam; /* -1 for concrete */
    BtTypeId type;
    int is_const, is_array, cplx;
    const char *spell; /* C++ spelling when not the canonical one (size_t) */
} Ty;

/* by value: V, const by value: CV, T x[]: A, const T x[]: CA */
#define V(id)                                                                                      \
    {                                                                                              \
        1, -1, id, 0, 0, 0, NULL                                                                   \
    }
#define CV(id)                                                                                     \
    {                                                                                              \
        1, -1, id, 1, 0, 0, NULL                                                                   \
    }
#define A(id)                                                                                      \
    {                                                                                              \
        1, -1, id, 0, 1, 0, NULL                                                                   \
    }
#define CA(id)                                                                                     \
    {                                                                                              \
        1, -1, id, 1, 1, 0, NULL                                                                   \
    }
#define SV(id, s)                                                                                  \
    {                                                                                              \
        1, -1, id, 0, 0, 0, s                                                                      \
    }
#define CSV(id, s)                                                                                 \
    {                                                                                              \
        1, -1, id, 1, 0, 0, s                                                                      \
    }
#define CSA(id, s)                                                                                 \
    {                                                                                              \
        1, -1, id, 1, 1, 0, s                                                                      \
    }
#define T(i)                                                                                       \
    {                                                                                              \
        1, i, BT_VOID, 0, 0, 0, NULL                                                               \
    }
#define CT(i)                                                                                      \
    {                                                                                              \
        1, i, BT_VOID, 1, 0, 0, NULL                                                               \
    }
#define TA(i)                                                                                      \
    {                                                                                              \
        1, i, BT_VOID, 0, 1, 0, NULL                                                               \
    }
#define CTA(i)                                                                                     \
    {                                                                                              \
        1, i, BT_VOID, 1, 1, 0, NULL                                                               \
    }
#define X(i)                                                                                       \
    {                                                                                              \
        1, i, BT_VOID, 0, 0, 1, NULL                                                               \
    } /* std::complex<T> */
#define CX(i)                                                                                      \
    {                                                                                              \
        1, i, BT_VOID, 1, 0, 1, NULL                                                               \
    }
#define XA(i)                                                                                      \
    {                                                                                              \
        1, i, BT_VOID, 0, 1, 1, NULL                                                               \
    }
#define CXA(i)                                                                                     \
    {                                                                                              \
        1, i, BT_VOID, 1, 1, 1, NULL                                                               \
    }
#define VOID V(BT_VOID)

#define B_ BT_BOOL
#define C_ BT_CHAR
#define SC_ BT_SCHAR
#define UC_ BT_UCHAR
#define S_ BT_SHORT
#define US_ BT_USHORT
#define I_ BT_INT
#define U_ BT_UINT
#define L_ BT_LONG
#define UL_ BT_ULONG
#define LL_ BT_LLONG
#define ULL_ BT_ULLONG
#define F_ BT_FLOAT
#define D_ BT_DOUBLE
#define CF_ BT_CFLOAT
#define CD_ BT_CDOUBLE

typedef struct Case {
    const char *doc;
    const char *ns; /* "amg::relax", or NULL */
    int extern_c;
    const char *tparams; /* "I T F", or NULL */
    const char *name;    /* unique over the whole table */
    Ty ret;
    Ty params[MAXP];
    const char *names; /* parameter names, space-separated; default a, b, ... */
    int n_inst;
    BtTypeId inst[MAXI][MAXT];
} Case;

static const Case cases[] = {
    /* pyamg-like relaxation kernels */
    {"Gauss-Seidel relaxation (pyamg's signature).",
     NULL,
     0,
     "I T F",
     "gauss_seidel",
     VOID,
     {CTA(0), CTA(0), CTA(1), TA(1), CTA(1), CT(0), CT(0), CT(0)},
     "Ap Aj Ax x b row_start row_stop row_step",
     4,
     {{I_, D_, D_}, {I_, CF_, F_}, {L_, D_, D_}, {I_, CD_, D_}}},
    {"Weighted Jacobi.",
     NULL,
     0,
     "I T F",
     "jacobi",
     VOID,
     {CTA(0), CTA(0), CTA(1), CTA(1), CTA(1), TA(1), CT(0), CT(0), CT(0), CTA(2)},
     "Ap Aj Ax x b temp row_start row_stop row_step omega",
     3,
     {{I_, F_, F_}, {I_, D_, D_}, {I_, CF_, F_}}},
    {"CSR matrix-vector product.",
     NULL,
     0,
     "I T",
     "csr_matvec",
     VOID,
     {CT(0), CT(0), CTA(0), CTA(0), CTA(1), CTA(1), TA(1)},
     "n_row n_col Ap Aj Ax Xx Yx",
     3,
     {{I_, D_}, {L_, F_}, {I_, CD_}}},
    {"Returns the second template parameter: T0_.",
     NULL,
     0,
     "I T",
     "zero_value",
     T(1),
     {CT(0)},
     "n",
     3,
     {{I_, D_}, {L_, CF_}, {I_, I_}}},
    {"Returns I.",
     NULL,
     0,
     "I T",
     "count_nonzero",
     T(0),
     {CTA(0), CTA(1)},
     "Ap Ax",
     2,
     {{I_, D_}, {L_, CD_}}},
    {"Returns bool.", NULL, 0, "I", "is_sorted", V(B_), {CTA(0), CT(0)}, "Aj n", 2, {{I_}, {L_}}},
    {"Returns int from a template.",
     NULL,
     0,
     "I",
     "max_nnz",
     V(I_),
     {CTA(0)},
     "Ap",
     2,
     {{I_}, {LL_}}},
    {"Four template parameters: T2_.",
     NULL,
     0,
     "I J T F",
     "four_params",
     T(3),
     {CTA(0), CTA(1), TA(2), T(3), CT(1)},
     NULL,
     2,
     {{I_, L_, D_, F_}, {I_, I_, CD_, D_}}},
    {"The brief's example, at file scope.",
     NULL,
     0,
     "I T",
     "myfunc_flat",
     VOID,
     {TA(0), V(I_)},
     "x n",
     1,
     {{I_, D_}}},

    /* std::complex<T> */
    {"Complex arrays and a complex scalar.",
     NULL,
     0,
     "T",
     "scale_complex",
     VOID,
     {CXA(0), XA(0), X(0)},
     "x y alpha",
     2,
     {{F_}, {D_}}},
    {"Complex return.",
     NULL,
     0,
     "T",
     "complex_dot",
     X(0),
     {CXA(0), CXA(0)},
     "x y",
     2,
     {{F_}, {D_}}},
    {"std::complex<T> first, then T: St7complexIT_E, then S_ for T_.",
     NULL,
     0,
     "T",
     "complex_first",
     VOID,
     {X(0), CTA(0), T(0), CX(0)},
     "a b c d",
     2,
     {{D_}, {F_}}},
    {"Concrete complex next to std::complex<T>.",
     NULL,
     0,
     "T",
     "mixed_complex",
     VOID,
     {CTA(0), CA(CD_), V(CD_), X(0), A(CF_)},
     "x y z w v",
     2,
     {{D_}, {CD_}}},
    {"Complex template arguments, twice.",
     NULL,
     0,
     "T U",
     "pair_copy",
     VOID,
     {CTA(0), TA(1)},
     "a b",
     4,
     {{CF_, CF_}, {CD_, CF_}, {D_, CD_}, {CF_, CD_}}},
    {"bool result from complex input.",
     NULL,
     0,
     "T",
     "has_nan",
     V(B_),
     {CXA(0)},
     "x",
     2,
     {{F_}, {D_}}},
    {"Untemplated complex return.", NULL, 0, NULL, "cdouble_sum", V(CD_), {CA(CD_)}, "x", 0, {{0}}},
    {"Untemplated complex float by value and arrays.",
     NULL,
     0,
     NULL,
     "cfloat_axpy",
     VOID,
     {V(CF_), CA(CF_), A(CF_), CV(CF_)},
     "a x y b",
     0,
     {{0}}},

    /* long, int64_t, size_t */
    {"int64_t is long: l, distinct from T_ even when I is long.",
     NULL,
     0,
     "I",
     "int64_index",
     VOID,
     {CSA(L_, "int64_t"), TA(0), CSV(L_, "int64_t")},
     "idx out n",
     2,
     {{I_}, {L_}}},
    {"size_t is unsigned long: m.",
     NULL,
     0,
     NULL,
     "size_fill",
     VOID,
     {A(D_), SV(UL_, "size_t"), CSV(UL_, "size_t")},
     "x n stride",
     0,
     {{0}}},
    {"long long is x, not l.",
     NULL,
     0,
     NULL,
     "llong_sum",
     V(LL_),
     {CA(LL_), CA(L_), V(LL_)},
     "x y n",
     0,
     {{0}}},
    {"Templated on long and size types.",
     NULL,
     0,
     "I T",
     "long_kernel",
     T(0),
     {CTA(0), CSV(UL_, "size_t"), TA(1), CSV(L_, "int64_t")},
     "Ap n x m",
     3,
     {{L_, D_}, {UL_, F_}, {LL_, CF_}}},

    /* namespaces */
    {"The brief's example: _ZN2ns6myfuncIidEEvPT_i.",
     "ns",
     0,
     "I T",
     "myfunc",
     VOID,
     {TA(0), V(I_)},
     "x n",
     1,
     {{I_, D_}}},
    {"Successive over-relaxation in two namespaces.",
     "amg::relax",
     0,
     "I T F",
     "sor",
     VOID,
     {CTA(0), CTA(0), CTA(1), TA(1), CTA(1), CT(2)},
     "Ap Aj Ax x b omega",
     2,
     {{I_, D_, D_}, {I_, CF_, F_}}},
    {"Three namespaces deep.",
     "a::b::c",
     0,
     "T",
     "deep_apply",
     VOID,
     {TA(0), CTA(0)},
     "x y",
     2,
     {{F_}, {CD_}}},
    {"One namespace, returning T.",
     "amg",
     0,
     "I T",
     "prolong",
     T(1),
     {CTA(0), TA(1)},
     "Ap x",
     2,
     {{I_, D_}, {L_, F_}}},
    {"Untemplated, in namespaces.",
     "amg::util",
     0,
     NULL,
     "axpy",
     VOID,
     {CA(D_), A(D_), V(D_)},
     "x y a",
     0,
     {{0}}},
    {"Untemplated, one namespace, no parameters.",
     "amg",
     0,
     NULL,
     "amg_version",
     V(I_),
     {{0}},
     NULL,
     0,
     {{0}}},
    {"Namespaced template, complex of T.",
     "amg::krylov",
     0,
     "T",
     "cg_step",
     X(0),
     {CXA(0), XA(0), CT(0)},
     "r p tol",
     2,
     {{F_}, {D_}}},
    {"Namespaced, same parameter types as axpy.",
     "amg::util",
     0,
     NULL,
     "axpy2",
     VOID,
     {CA(D_), A(D_), V(D_), CA(D_)},
     "x y a z",
     0,
     {{0}}},

    /* untemplated C++ with repeated pointer types */
    {"Repeated const double*: PKd, then S0_.",
     NULL,
     0,
     NULL,
     "dot_d",
     V(D_),
     {CA(D_), CA(D_)},
     "x y",
     0,
     {{0}}},
    {"PKd, S0_, then Pd.",
     NULL,
     0,
     NULL,
     "add_d",
     VOID,
     {CA(D_), CA(D_), A(D_)},
     "x y z",
     0,
     {{0}}},
    {"Interleaved pointer types.",
     NULL,
     0,
     NULL,
     "mixed_ptrs",
     VOID,
     {CA(I_), CA(D_), CA(I_), A(D_), CA(D_), A(I_), A(D_)},
     NULL,
     0,
     {{0}}},

    /* extern "C" */
    {"extern \"C\": the plain name.",
     NULL,
     1,
     NULL,
     "c_axpy",
     VOID,
     {CA(D_), A(D_), V(D_)},
     "x y a",
     0,
     {{0}}},
    {"extern \"C\", no parameters.", NULL, 1, NULL, "c_noargs", VOID, {{0}}, NULL, 0, {{0}}},
    {"extern \"C\", returns int.",
     NULL,
     1,
     NULL,
     "c_count",
     V(I_),
     {CA(I_), V(L_)},
     "x n",
     0,
     {{0}}},

    /* scalar types */
    {"Every scalar type by value.",
     NULL,
     0,
     NULL,
     "scalars_all",
     VOID,
     {V(B_), V(C_), V(SC_), V(UC_), V(S_), V(US_), V(I_), V(U_), V(L_), V(UL_), V(LL_), V(ULL_),
      V(F_), V(D_), V(CF_), V(CD_)},
     NULL,
     0,
     {{0}}},
    {"Every scalar type as const by value (const dropped).",
     NULL,
     0,
     NULL,
     "scalars_const",
     V(UC_),
     {CV(B_), CV(C_), CV(SC_), CV(UC_), CV(S_), CV(US_), CV(I_), CV(U_), CV(L_), CV(UL_), CV(LL_),
      CV(ULL_), CV(F_), CV(D_)},
     NULL,
     0,
     {{0}}},
    {"Pointers to several scalars.",
     NULL,
     0,
     NULL,
     "scalar_ptrs",
     V(B_),
     {CA(B_), A(C_), CA(UC_), CA(LL_), A(ULL_), CA(S_), A(US_), CA(U_), A(F_), CA(SC_)},
     NULL,
     0,
     {{0}}},
    {"Identity on every scalar type.",
     NULL,
     0,
     "T",
     "identity",
     T(0),
     {T(0)},
     "x",
     16,
     {{B_},
      {C_},
      {SC_},
      {UC_},
      {S_},
      {US_},
      {I_},
      {U_},
      {L_},
      {UL_},
      {LL_},
      {ULL_},
      {F_},
      {D_},
      {CF_},
      {CD_}}},
    {"const T return: g++ keeps KT_.",
     NULL,
     0,
     "T",
     "first_of",
     CT(0),
     {CTA(0)},
     "x",
     2,
     {{D_}, {CF_}}},
    {"const int return of a template: Ki.",
     NULL,
     0,
     "T",
     "const_int_ret",
     CV(I_),
     {CTA(0)},
     "x",
     1,
     {{F_}}},

    /* many substitutions */
    {"Twenty-four parameters: substitutions past S9_ into SA_.",
     NULL,
     0,
     NULL,
     "big_mix",
     VOID,
     {CA(D_),  CA(I_), A(D_),   A(I_),  CA(F_), A(F_),  CA(L_),  A(L_),
      CA(D_),  CA(I_), A(D_),   A(I_),  V(D_),  V(I_),  CA(CD_), A(CD_),
      CA(CF_), A(CF_), CA(UL_), A(UL_), CA(D_), A(CD_), CA(UL_), V(F_)},
     NULL,
     0,
     {{0}}},
    {"Every scalar as const T[] and T[]: substitutions past SZ_ into S10_.",
     NULL,
     0,
     NULL,
     "every_pointer",
     VOID,
     {CA(B_),  A(B_),   CA(C_),  A(C_),   CA(SC_),  A(SC_),  CA(UC_), A(UC_), CA(S_),
      A(S_),   CA(US_), A(US_),  CA(I_),  A(I_),    CA(U_),  A(U_),   CA(L_), A(L_),
      CA(UL_), A(UL_),  CA(LL_), A(LL_),  CA(ULL_), A(ULL_), CA(F_),  A(F_),  CA(D_),
      A(D_),   CA(CF_), A(CF_),  CA(CD_), A(CD_),   CA(D_),  A(CF_),  CA(B_), A(ULL_)},
     NULL,
     0,
     {{0}}},
    {"Template with many repeats.",
     NULL,
     0,
     "I T F",
     "big_template",
     T(2),
     {CTA(0), TA(0), CTA(1), TA(1),  CTA(2), TA(2), CXA(2), XA(2),  CT(0), T(1),   X(2),
      CA(D_), A(D_), CTA(0), CTA(1), CXA(2), V(I_), CT(2),  CA(I_), A(I_), CA(CD_)},
     NULL,
     3,
     {{I_, D_, D_}, {L_, CF_, F_}, {I_, CD_, D_}}},
    {"Namespaced template with many repeats.",
     "amg::big",
     0,
     "I T",
     "ns_big",
     VOID,
     {CTA(0), CTA(0), CTA(1), TA(1), CTA(1), TA(0), CT(0), CT(0), CA(D_), A(D_), CA(D_), CXA(1),
      XA(1), CTA(1)},
     NULL,
     2,
     {{I_, D_}, {L_, CD_}}},

    /* no parameters */
    {"No parameters: v.", NULL, 0, NULL, "nothing", VOID, {{0}}, NULL, 0, {{0}}},
    {"Template, no parameters: return T then v.",
     NULL,
     0,
     "T",
     "make_zero",
     T(0),
     {{0}},
     NULL,
     3,
     {{D_}, {I_}, {CF_}}},
    {"Template, void, no parameters.", NULL, 0, "I", "tick", VOID, {{0}}, NULL, 2, {{I_}, {L_}}},
    {"Namespaced template, no parameters.",
     "amg::util",
     0,
     "I T",
     "ns_zero",
     T(1),
     {{0}},
     NULL,
     1,
     {{I_, CD_}}},

    /* const/non-const by value */
    {"const T and T by value mix.",
     NULL,
     0,
     "T",
     "axpby",
     VOID,
     {CT(0), TA(0), T(0), TA(0)},
     "a x b y",
     2,
     {{F_}, {CD_}}},
};

#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static int n_params_of(const Case *c)
{
    int n = 0;

    while (n < MAXP && c->params[n].used)
        n++;
    return n;
}

static int n_tparams_of(const Case *c)
{
    int n = 0;
    const char *p;

    if (!c->tparams)
        return 0;
    for (p = c->tparams; *p; p++)
        if (*p != ' ' && (p == c->tparams || p[-1] == ' '))
            n++;
    return n;
}

/* The i-th space-separated word of s into out. */
static void word(const char *s, int i, char *out, size_t size)
{
    size_t n;

    while (*s == ' ')
        s++;
    while (i-- > 0) {
        s += strcspn(s, " ");
        while (*s == ' ')
            s++;
    }
    n = strcspn(s, " ");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), s);
}

static void param_name(const Case *c, int i, char *out, size_t size)
{
    if (c->names)
        word(c->names, i, out, size);
    else if (i < 26)
        snprintf(out, size, "%c", 'a' + i);
    else
        snprintf(out, size, "p%d", i);
}

static BtTypeRef ref_of(const Ty *t)
{
    BtTypeRef r;

    memset(&r, 0, sizeof r); /* what the cases do not say: no enum, string or handle */
    r.tparam = t->tparam;
    r.type = t->type;
    r.is_const = t->is_const;
    r.is_array = t->is_array;
    r.is_complex_of_tparam = t->cplx;
    return r;
}

/* The BtDecl the parser would build for c: each array followed by its _size. */
static int build_decl(const Case *c, BtArena *a, BtDecl *d)
{
    int np = n_params_of(c), i, k = 0;
    char buf[64];

    memset(d, 0, sizeof *d);
    d->name = c->name;
    d->extern_c = c->extern_c;
    d->doc = c->doc;
    d->ret = ref_of(&c->ret);
    if (c->ns) {
        const char *p = c->ns;
        d->ns = bt_arena_alloc(a, 8 * sizeof *d->ns);
        if (!d->ns)
            return -1;
        while (*p) {
            size_t n = strcspn(p, ":");
            if (!(d->ns[d->n_ns++] = bt_arena_strndup(a, p, n)))
                return -1;
            p += n;
            while (*p == ':')
                p++;
        }
    }
    d->n_tparams = n_tparams_of(c);
    if (d->n_tparams) {
        d->tparams = bt_arena_alloc(a, (size_t)d->n_tparams * sizeof *d->tparams);
        if (!d->tparams)
            return -1;
        for (i = 0; i < d->n_tparams; i++) {
            word(c->tparams, i, buf, sizeof buf);
            if (!(d->tparams[i] = bt_arena_strdup(a, buf)))
                return -1;
        }
    }
    d->params = bt_arena_alloc(a, (size_t)(2 * np + 1) * sizeof *d->params);
    if (!d->params)
        return -1;
    for (i = 0; i < np; i++) {
        BtParam *p = &d->params[k++];
        param_name(c, i, buf, sizeof buf);
        p->name = bt_arena_strdup(a, buf);
        p->t = ref_of(&c->params[i]);
        p->size_of = -1;
        if (c->params[i].is_array) {
            BtParam *s = &d->params[k];
            s->name = bt_arena_printf(a, "%s_size", buf);
            s->t.tparam = -1;
            s->t.type = BT_INT;
            s->t.is_const = 1;
            s->size_of = k - 1;
            k++;
        }
    }
    d->n_params = k;
    return 0;
}

static const char *cname(BtTypeId id) { return bt_type(id)->cname; }

/* The base type (no const, no pointer) as C++ spells it: in the template
 * (targs NULL) or instantiated, or as c++filt prints it (demangle). */
static void put_base(BtBuf *b, const Case *c, const Ty *t, const BtTypeId *targs, int demangle)
{
    char tp[32];

    if (t->tparam < 0) {
        bt_buf_puts(b, t->spell && !demangle ? t->spell : cname(t->type));
        return;
    }
    if (targs)
        snprintf(tp, sizeof tp, "%s", cname(targs[t->tparam]));
    else
        word(c->tparams, t->tparam, tp, sizeof tp);
    if (t->cplx)
        bt_buf_printf(b, "std::complex<%s%s>", tp,
                      demangle && tp[strlen(tp) - 1] == '>' ? " " : "");
    else
        bt_buf_puts(b, tp);
}

static void put_qualname(BtBuf *b, const Case *c)
{
    if (c->ns)
        bt_buf_printf(b, "%s::", c->ns);
    bt_buf_puts(b, c->name);
}

/* <int, double> */
static void put_targs(BtBuf *b, const BtTypeId *targs, int n)
{
    int i;
    const char *last = "";

    bt_buf_putc(b, '<');
    for (i = 0; i < n; i++) {
        last = cname(targs[i]);
        bt_buf_printf(b, "%s%s", i ? ", " : "", last);
    }
    bt_buf_puts(b, last[strlen(last) - 1] == '>' ? " >" : ">");
}

/* The declaration in the dialect, template form, with a trivial body. */
static void put_decl(BtBuf *b, const Case *c, int index)
{
    int np = n_params_of(c), nt = n_tparams_of(c), i;
    char name[64];

    bt_buf_printf(b, "// %s\n", c->doc);
    if (nt) {
        bt_buf_puts(b, "template <");
        for (i = 0; i < nt; i++) {
            word(c->tparams, i, name, sizeof name);
            bt_buf_printf(b, "%sclass %s", i ? ", " : "", name);
        }
        bt_buf_puts(b, ">\n");
    }
    if (c->ret.is_const)
        bt_buf_puts(b, "const ");
    put_base(b, c, &c->ret, NULL, 0);
    bt_buf_printf(b, " %s(", c->name);
    for (i = 0; i < np; i++) {
        const Ty *t = &c->params[i];
        param_name(c, i, name, sizeof name);
        if (i)
            bt_buf_puts(b, ", ");
        if (t->is_const)
            bt_buf_puts(b, "const ");
        put_base(b, c, t, NULL, 0);
        if (t->is_array && index % 2)
            bt_buf_printf(b, " *%s, const int %s_size", name, name);
        else if (t->is_array)
            bt_buf_printf(b, " %s[], const int %s_size", name, name);
        else
            bt_buf_printf(b, " %s", name);
    }
    if (c->ret.type == BT_VOID && c->ret.tparam < 0)
        bt_buf_puts(b, ")\n{\n}\n");
    else
        bt_buf_puts(b, ")\n{\n    return {};\n}\n");
}

/* Parameter list, instantiated: as C++ (explicit instantiation) or as
 * c++filt prints it. */
static void put_params(BtBuf *b, const Case *c, const BtTypeId *targs, int demangle)
{
    int np = n_params_of(c), i;

    bt_buf_putc(b, '(');
    for (i = 0; i < np; i++) {
        const Ty *t = &c->params[i];
        if (i)
            bt_buf_puts(b, ", ");
        if (t->is_array && t->is_const && !demangle)
            bt_buf_puts(b, "const ");
        put_base(b, c, t, targs, demangle);
        if (t->is_array)
            bt_buf_puts(b, demangle ? (t->is_const ? " const*, int" : "*, int") : "*, const int");
    }
    bt_buf_putc(b, ')');
}

/* template RET ns::name<targs>(params); */
static void put_instantiation(BtBuf *b, const Case *c, const BtTypeId *targs)
{
    bt_buf_puts(b, "template ");
    if (c->ret.is_const)
        bt_buf_puts(b, "const ");
    put_base(b, c, &c->ret, targs, 0);
    bt_buf_putc(b, ' ');
    put_qualname(b, c);
    put_targs(b, targs, n_tparams_of(c));
    put_params(b, c, targs, 0);
    bt_buf_puts(b, ";\n");
}

/* What c++filt prints for the symbol. */
static void put_demangled(BtBuf *b, const Case *c, const BtTypeId *targs)
{
    if (c->extern_c) {
        bt_buf_puts(b, c->name);
        return;
    }
    if (targs) {
        put_base(b, c, &c->ret, targs, 1);
        bt_buf_puts(b, c->ret.is_const ? " const " : " ");
    }
    put_qualname(b, c);
    if (targs)
        put_targs(b, targs, n_tparams_of(c));
    put_params(b, c, targs, 1);
}

static void put_yaml(BtBuf *b, const Case *c)
{
    int nt = n_tparams_of(c), i, j;

    if (!nt) {
        bt_buf_printf(b, "- types: null\n  functions:\n    - %s\n", c->name);
        return;
    }
    bt_buf_puts(b, "- types:\n");
    for (i = 0; i < c->n_inst; i++) {
        bt_buf_puts(b, "    - [");
        for (j = 0; j < nt; j++) {
            const char *s = cname(c->inst[i][j]);
            bt_buf_printf(b, strchr(s, ':') ? "%s\"%s\"" : "%s%s", j ? ", " : "", s);
        }
        bt_buf_puts(b, "]\n");
    }
    bt_buf_printf(b, "  functions:\n    - %s\n", c->name);
}

/* Opens/closes the namespace and extern "C" blocks around case i. */
static void put_scope(BtBuf *b, const Case *c, int open)
{
    const char *p = c->ns;

    if (c->extern_c) {
        bt_buf_puts(b, open ? "extern \"C\" {\n" : "}\n");
        return;
    }
    if (!p)
        return;
    while (*p) {
        size_t n = strcspn(p, ":");
        if (open)
            bt_buf_printf(b, "%snamespace %.*s {", p == c->ns ? "" : " ", (int)n, p);
        else
            bt_buf_puts(b, p == c->ns ? "}" : " }");
        p += n;
        while (*p == ':')
            p++;
    }
    bt_buf_putc(b, '\n');
}

static int write_file(const char *dir, const char *name, const BtBuf *b)
{
    char path[4096];
    FILE *f;
    int ok;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    ok = fwrite(bt_buf_str(b), 1, b->len, f) == b->len;
    ok &= fclose(f) == 0;
    if (!ok)
        perror(path);
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    BtArena arena;
    BtBuf hdr, yml, cpp, tsv;
    int i, j, failures = 0, n_names = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    bt_arena_init(&arena);
    bt_buf_init(&hdr);
    bt_buf_init(&yml);
    bt_buf_init(&cpp);
    bt_buf_init(&tsv);
    bt_buf_puts(&hdr,
                "// decls.h - fixture for bt_mangle: one declaration per mangling case.\n"
                "//\n"
                "// Written by tests/core/c/test_mangle.c (run_mangle_test.sh --update); do not edit.\n"
                "// Bindthem dialect: no preprocessor lines, so an includer brings\n"
                "// <complex>, <cstddef> and <cstdint> first. Instantiations are in\n"
                "// instantiate.yml next to this file.\n\n");
    bt_buf_puts(&cpp, "#include <complex>\n#include <cstddef>\n#include <cstdint>\n"
                      "#include \"decls.h\"\n\n");
    for (i = 0; i < N_CASES; i++) {
        const Case *c = &cases[i];
        int nt = n_tparams_of(c);
        int n_inst = nt ? c->n_inst : 1;
        BtDecl d;

        put_scope(&hdr, c, 1);
        put_decl(&hdr, c, i);
        put_scope(&hdr, c, 0);
        bt_buf_putc(&hdr, '\n');
        put_yaml(&yml, c);
        if (build_decl(c, &arena, &d) < 0) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        if (nt && c->n_inst == 0) {
            fprintf(stderr, "%s: template without instantiations\n", c->name);
            failures++;
        }
        for (j = 0; j < n_inst; j++) {
            const BtTypeId *targs = nt ? c->inst[j] : NULL;
            BtTArg args[MAXT];
            const char *m;
            for (int k = 0; k < nt; k++) {
                memset(&args[k], 0, sizeof args[k]);
                args[k].type = targs[k];
            }
            m = bt_mangle(&d, nt ? args : NULL, &arena);
            if (!m) {
                fprintf(stderr, "%s: bt_mangle returned NULL\n", c->name);
                failures++;
                continue;
            }
            if (targs)
                put_instantiation(&cpp, c, targs);
            bt_buf_printf(&tsv, "%s\t", m);
            put_demangled(&tsv, c, targs);
            bt_buf_putc(&tsv, '\n');
            n_names++;
        }
    }
    if (hdr.failed || yml.failed || cpp.failed || tsv.failed) {
        fprintf(stderr, "out of memory\n");
        failures++;
    } else if (write_file(argv[1], "decls.h", &hdr) < 0 ||
               write_file(argv[1], "instantiate.yml", &yml) < 0 ||
               write_file(argv[1], "instantiate.cpp", &cpp) < 0 ||
               write_file(argv[1], "names.tsv", &tsv) < 0) {
        failures++;
    }
    fprintf(stderr, "test_mangle: %d declarations, %d names, %d failures\n", N_CASES, n_names,
            failures);
    bt_buf_free(&hdr);
    bt_buf_free(&yml);
    bt_buf_free(&cpp);
    bt_buf_free(&tsv);
    bt_arena_free(&arena);
    return failures ? 1 : 0;
}
