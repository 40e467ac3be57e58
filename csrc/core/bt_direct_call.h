/* bt_direct_call.h - the direct call's call sites (bt_direct.h says how
 * they pass the words and why that is the ABI's call): included by the one
 * place that calls kernels directly, bt_guard.cpp, so that the sites sit
 * inside the guard's frame (one call less on every kernel call). C and C++.
 *
 * Pure C: no Python.h. */
#ifndef BT_DIRECT_CALL_H
#define BT_DIRECT_CALL_H

#include <string.h>

#include "bt_direct.h"

#if defined(BT_DIRECT_SYSV) || defined(BT_DIRECT_AAPCS64)
/* Word i of w as the double a floating-point register holds (its bits). */
static inline double bt_direct_fpr(const uint64_t *w, int i)
{
    double d;
    memcpy(&d, &w[i], sizeof d);
    return d;
}

/* Returned in two floating-point registers: xmm0:xmm1 (two SSE eightbytes),
 * or d0:d1 (an HFA of two doubles). */
typedef struct BtFpPair {
    double lo, hi;
} BtFpPair;

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
#define X                                                                                          \
    bt_direct_fpr(v, 0), bt_direct_fpr(v, 1), bt_direct_fpr(v, 2), bt_direct_fpr(v, 3),            \
        bt_direct_fpr(v, 4), bt_direct_fpr(v, 5), bt_direct_fpr(v, 6), bt_direct_fpr(v, 7)
#define S2 s[0], s[1]
#define S4 S2, s[2], s[3]
#define S8 S4, s[4], s[5], s[6], s[7]
#define S16 S8, s[8], s[9], s[10], s[11], s[12], s[13], s[14], s[15]
#define S32                                                                                        \
    S16, s[16], s[17], s[18], s[19], s[20], s[21], s[22], s[23], s[24], s[25], s[26], s[27],       \
        s[28], s[29], s[30], s[31]

/* Calls fn with words[BT_DIRECT_WORDS] in the registers and stack slots
 * plan->variant passes, the caller having written each argument at the
 * word(s) plan->pos names: pointers and 8-byte integers as they are,
 * narrower integers and bool extended to 64 bits (sign or zero, by their
 * type: bt_slot's conversions store them so), a float or int in the low 4
 * bytes (the upper ones are never read), complexes as they are in memory
 * (a std::complex<float> packed in one word). Words no argument fills go to
 * registers the kernel never reads. rvalue (16 bytes) receives the integer
 * return register, or the two floating-point ones (a complex<float> packed
 * in the first 8 bytes). variant is plan->variant, non-zero: a constant
 * where the caller is one call site's (bt_guard.cpp), and the switch folds. */
static inline void bt_direct_call(int variant, const BtDirect *plan, void (*fn)(void),
                                  const uint64_t *words, void *rvalue)
{
    /* Some of words is never written: the words no argument fills go to
     * registers and slots the kernel never reads (an indeterminate uint64_t
     * is an unspecified value, not undefined behaviour: its address is
     * taken, C11 6.3.2.1p2). */
    const uint64_t *w = words, *s = words + BT_DIRECT_STACK0;
    BtFpPair rs = {0, 0};
    uint64_t ri = 0;
#ifdef BT_DIRECT_AAPCS64
    /* each complex<float> in registers: its imaginary part (the upper half
     * of its packed word) into the next register's word */
    uint64_t v[8];
    unsigned m;
    int r;

    memcpy(v, words + BT_DIRECT_FP0, sizeof v);
    for (m = plan->split, r = 0; m; m >>= 1, r++)
        if (m & 1)
            v[r + 1] = v[r] >> 32;
#else
    const uint64_t *v = words + BT_DIRECT_FP0;
    (void)plan;
#endif
    switch (variant) {
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
    case 13: rs = ((BtFpPair(*)(TG, TX))fn)(G, X); break;
    case 14: rs = ((BtFpPair(*)(TG, TX, TS2))fn)(G, X, S2); break;
    case 15: rs = ((BtFpPair(*)(TG, TX, TS4))fn)(G, X, S4); break;
    case 16: rs = ((BtFpPair(*)(TG, TX, TS8))fn)(G, X, S8); break;
    case 17: rs = ((BtFpPair(*)(TG, TX, TS16))fn)(G, X, S16); break;
    case 18: rs = ((BtFpPair(*)(TG, TX, TS32))fn)(G, X, S32); break;
    case 19: rs = ((BtFpPair(*)(TG))fn)(G); break;
    case 20: rs = ((BtFpPair(*)(TG, TS2))fn)(G, S2); break;
    case 21: rs = ((BtFpPair(*)(TG, TS4))fn)(G, S4); break;
    case 22: rs = ((BtFpPair(*)(TG, TS8))fn)(G, S8); break;
    case 23: rs = ((BtFpPair(*)(TG, TS16))fn)(G, S16); break;
    case 24: rs = ((BtFpPair(*)(TG, TS32))fn)(G, S32); break;
    default: break;
    }
    if (variant <= 2 * BT_DIRECT_STACK_SIZES) { /* RET_INT's */
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
static inline void bt_direct_call(int variant, const BtDirect *plan, void (*fn)(void),
                                  const uint64_t *words, void *rvalue)
{
    (void)variant;
    (void)plan;
    (void)fn;
    (void)words;
    (void)rvalue;
}
#endif

#endif
