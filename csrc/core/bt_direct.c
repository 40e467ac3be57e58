/* bt_direct.c - kernel calls without libffi on x86-64 System V and AAPCS64
 * (see bt_direct.h for the calling trick and its ABI references). */
#include "bt_direct.h"

#include <string.h>

#if defined(BT_DIRECT_SYSV) || defined(BT_DIRECT_AAPCS64)
#define BT_DIRECT_ANY 1
#endif

enum { N_GP = BT_DIRECT_GP, N_FP = 8, MAX_STACK = 32, FP0 = N_GP, STACK0 = N_GP + N_FP };
enum { RET_INT, RET_FP };

#ifdef BT_DIRECT_ANY
/* The stack-slot counts with a call site of their own. */
static const uint8_t stack_sizes[] = {0, 2, 4, 8, 16, 32};
#define N_STACK_SIZES ((int)(sizeof stack_sizes / sizeof stack_sizes[0]))

#ifdef BT_DIRECT_AAPCS64
/* std::complex<float>: an HFA of two (two v registers); a complex that does
 * not fit the registers left closes them to later arguments (rule C.3). */
enum { CFLOAT_REGS = 2, HFA_CLOSES_REGS = 1 };
#else
/* std::complex<float>: one SSE eightbyte; later arguments may still take
 * the registers a spilled complex<double> left. */
enum { CFLOAT_REGS = 1, HFA_CLOSES_REGS = 0 };
#endif

/* Parameter type t: how many floating-point registers it takes (*regs, 0: a
 * general-register argument) and how many stack slots when none is left
 * (*slots). Returns 0, or -1 for a type with no direct call. */
static int classify(BtTypeId t, int *regs, int *slots)
{
    *slots = 1;
    switch (t) {
    case BT_BOOL:
    case BT_UCHAR:
    case BT_CHAR:
    case BT_SCHAR:
    case BT_SHORT:
    case BT_USHORT:
    case BT_INT:
    case BT_UINT:
    case BT_LONG:
    case BT_ULONG:
    case BT_LLONG:
    case BT_ULLONG: *regs = 0; return 0;
    case BT_FLOAT:
    case BT_DOUBLE: *regs = 1; return 0;
    case BT_CFLOAT: *regs = CFLOAT_REGS; return 0;
    case BT_CDOUBLE: *regs = *slots = 2; return 0;
    default: return -1;
    }
}

static int ret_class(BtTypeId t)
{
    switch (t) {
    case BT_FLOAT:
    case BT_DOUBLE:
    case BT_CFLOAT:
    case BT_CDOUBLE: return RET_FP;
    case BT_NTYPES: return -1;
    default: return RET_INT; /* void (the register unread), bool, char, integers */
    }
}
#endif

int bt_direct_plan(BtDirect *plan, const BtTypeId *ptypes, const int *is_ptr, int n, BtTypeId ret)
{
    memset(plan, 0, sizeof *plan);
#ifdef BT_DIRECT_ANY
    int gp = 0, fp = 0, stack = 0, rc = ret_class(ret), i, k, pos;

    if (rc < 0 || n < 0 || n > BT_MAX_PARAMS)
        return 0;
    for (i = 0; i < n; i++) {
        int regs = 0, slots = 1;
        if (!is_ptr[i] && classify(ptypes[i], &regs, &slots) < 0)
            return 0;
        if (!regs && gp < N_GP) {
            pos = gp++;
        } else if (regs && fp + regs <= N_FP) {
            if (regs > slots) /* stored packed in one word, passed one part per register */
                plan->split |= (uint8_t)(1u << fp);
            pos = FP0 + fp;
            fp += regs;
        } else { /* no register left of its class: the next stack slot(s) */
            if (regs > 1 && HFA_CLOSES_REGS)
                fp = N_FP;
            if (stack + slots > MAX_STACK)
                return 0;
            pos = STACK0 + stack;
            stack += slots;
        }
        plan->pos[i] = (uint8_t)pos;
    }
    for (k = 0; stack_sizes[k] < stack; k++)
        ;
    /* per return class: the sites that pass the floating-point registers,
     * then those that pass none (a kernel of integers and pointers only) */
    plan->variant = (uint8_t)(1 + (2 * rc + (fp == 0)) * N_STACK_SIZES + k);
    plan->ret_split = ret == BT_CFLOAT && CFLOAT_REGS == 2;
    return 1;
#else
    (void)ptypes;
    (void)is_ptr;
    (void)n;
    (void)ret;
    return 0;
#endif
}

#ifdef BT_DIRECT_ANY
/* Word i of w as the double a floating-point register holds (its bits). */
static inline double fpr(const uint64_t *w, int i)
{
    double d;
    memcpy(&d, &w[i], sizeof d);
    return d;
}

/* Returned in two floating-point registers: xmm0:xmm1 (two SSE eightbytes),
 * or d0:d1 (an HFA of two doubles). */
typedef struct FpPair {
    double lo, hi;
} FpPair;

/* The parameter lists of the call sites, and their arguments: general
 * registers and stack slots from w, floating-point registers from v. */
#define U uint64_t
#define D double
#ifdef BT_DIRECT_AAPCS64
#define TG U, U, U, U, U, U, U, U
#define G w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]
#else
#define TG U, U, U, U, U, U
#define G w[0], w[1], w[2], w[3], w[4], w[5]
#endif
#define TX D, D, D, D, D, D, D, D
#define TS2 U, U
#define TS4 TS2, U, U
#define TS8 TS4, U, U, U, U
#define TS16 TS8, U, U, U, U, U, U, U, U
#define TS32 TS16, TS16
#define X fpr(v, 0), fpr(v, 1), fpr(v, 2), fpr(v, 3), fpr(v, 4), fpr(v, 5), fpr(v, 6), fpr(v, 7)
#define S2 s[0], s[1]
#define S4 S2, s[2], s[3]
#define S8 S4, s[4], s[5], s[6], s[7]
#define S16 S8, s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15]
#define S32                                                                                        \
    S16, s[16], s[17], s[18], s[19], s[20], s[21], s[22], s[23], s[24], s[25], s[26], s[27],       \
        s[28], s[29], s[30], s[31]

void bt_direct_call(const BtDirect *plan, void (*fn)(void), const uint64_t *words, void *rvalue)
{
    /* Some of words is never written: the words no argument fills go to
     * registers and slots the kernel never reads (an indeterminate uint64_t
     * is an unspecified value, not undefined behaviour: its address is
     * taken, C11 6.3.2.1p2). */
    const uint64_t *w = words, *s = words + STACK0;
    FpPair rs = {0, 0};
    uint64_t ri = 0;
#ifdef BT_DIRECT_AAPCS64
    /* each complex<float> in registers: its imaginary part (the upper half
     * of its packed word) into the next register's word */
    uint64_t v[N_FP];
    unsigned m;
    int r;

    memcpy(v, words + FP0, sizeof v);
    for (m = plan->split, r = 0; m; m >>= 1, r++)
        if (m & 1)
            v[r + 1] = v[r] >> 32;
#else
    const uint64_t *v = words + FP0;
#endif
    switch (plan->variant) {
    case 1: ri = ((U(*)(TG, TX))fn)(G, X); break;
    case 2: ri = ((U(*)(TG, TX, TS2))fn)(G, X, S2); break;
    case 3: ri = ((U(*)(TG, TX, TS4))fn)(G, X, S4); break;
    case 4: ri = ((U(*)(TG, TX, TS8))fn)(G, X, S8); break;
    case 5: ri = ((U(*)(TG, TX, TS16))fn)(G, X, S16); break;
    case 6: ri = ((U(*)(TG, TX, TS32))fn)(G, X, S32); break;
    case 7: ri = ((U(*)(TG))fn)(G); break;
    case 8: ri = ((U(*)(TG, TS2))fn)(G, S2); break;
    case 9: ri = ((U(*)(TG, TS4))fn)(G, S4); break;
    case 10: ri = ((U(*)(TG, TS8))fn)(G, S8); break;
    case 11: ri = ((U(*)(TG, TS16))fn)(G, S16); break;
    case 12: ri = ((U(*)(TG, TS32))fn)(G, S32); break;
    case 13: rs = ((FpPair(*)(TG, TX))fn)(G, X); break;
    case 14: rs = ((FpPair(*)(TG, TX, TS2))fn)(G, X, S2); break;
    case 15: rs = ((FpPair(*)(TG, TX, TS4))fn)(G, X, S4); break;
    case 16: rs = ((FpPair(*)(TG, TX, TS8))fn)(G, X, S8); break;
    case 17: rs = ((FpPair(*)(TG, TX, TS16))fn)(G, X, S16); break;
    case 18: rs = ((FpPair(*)(TG, TX, TS32))fn)(G, X, S32); break;
    case 19: rs = ((FpPair(*)(TG))fn)(G); break;
    case 20: rs = ((FpPair(*)(TG, TS2))fn)(G, S2); break;
    case 21: rs = ((FpPair(*)(TG, TS4))fn)(G, S4); break;
    case 22: rs = ((FpPair(*)(TG, TS8))fn)(G, S8); break;
    case 23: rs = ((FpPair(*)(TG, TS16))fn)(G, S16); break;
    case 24: rs = ((FpPair(*)(TG, TS32))fn)(G, S32); break;
    default: break;
    }
    if (plan->variant <= 2 * N_STACK_SIZES) { /* RET_INT's */
        memcpy(rvalue, &ri, sizeof ri);
        return;
    }
#ifdef BT_DIRECT_AAPCS64
    if (plan->ret_split) { /* s0 and s1: the low halves of d0 and d1, packed */
        uint64_t lo, hi;
        memcpy(&lo, &rs.lo, sizeof lo);
        memcpy(&hi, &rs.hi, sizeof hi);
        lo = (lo & 0xFFFFFFFFu) | hi << 32;
        memcpy(rvalue, &lo, sizeof lo);
        return;
    }
#endif
    memcpy(rvalue, &rs, sizeof rs);
}
#else
void bt_direct_call(const BtDirect *plan, void (*fn)(void), const uint64_t *words, void *rvalue)
{
    (void)plan;
    (void)fn;
    (void)words;
    (void)rvalue;
}
#endif
