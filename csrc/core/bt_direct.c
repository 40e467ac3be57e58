/* bt_direct.c - kernel calls without libffi on x86-64 System V (see
 * bt_direct.h for the calling trick and its ABI references). */
#include "bt_direct.h"

#include <string.h>

#if defined(__x86_64__) && defined(__LP64__) && !defined(_WIN32)
#define BT_DIRECT_SYSV 1
#endif

enum { N_GP = 6, N_SSE = 8, MAX_STACK = 16, SSE0 = N_GP, STACK0 = N_GP + N_SSE };
enum { RET_INT, RET_SSE };

#ifdef BT_DIRECT_SYSV
/* The stack-slot counts with a call site of their own. */
static const uint8_t stack_sizes[] = {0, 2, 4, 8, 16};
#define N_STACK_SIZES ((int)(sizeof stack_sizes / sizeof stack_sizes[0]))

/* Parameter type t: how many xmm registers it takes (0: an INTEGER-class
 * argument). Returns 0, or -1 for a type with no direct call. */
static int classify(BtTypeId t, int *sse)
{
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
    case BT_ULLONG: *sse = 0; return 0;
    case BT_FLOAT:
    case BT_DOUBLE:
    case BT_CFLOAT: *sse = 1; return 0;
    case BT_CDOUBLE: *sse = 2; return 0;
    default: return -1;
    }
}

static int ret_class(BtTypeId t)
{
    switch (t) {
    case BT_FLOAT:
    case BT_DOUBLE:
    case BT_CFLOAT:
    case BT_CDOUBLE: return RET_SSE;
    case BT_NTYPES: return -1;
    default: return RET_INT; /* void (rax unread), bool, char, integers */
    }
}
#endif

int bt_direct_plan(BtDirect *plan, const BtTypeId *ptypes, const int *is_ptr, int n, BtTypeId ret)
{
    memset(plan, 0, sizeof *plan);
#ifdef BT_DIRECT_SYSV
    int gp = 0, sse = 0, stack = 0, rc = ret_class(ret), i, k, pos;

    if (rc < 0 || n < 0 || n > BT_MAX_PARAMS)
        return 0;
    for (i = 0; i < n; i++) {
        int words = 0, w;
        if (!is_ptr[i] && classify(ptypes[i], &words) < 0)
            return 0;
        if (!words && gp < N_GP) {
            pos = gp++;
        } else if (words && sse + words <= N_SSE) {
            pos = SSE0 + sse;
            sse += words;
        } else { /* no register left of its class: the next stack slot(s) */
            w = words > 1 ? words : 1;
            if (stack + w > MAX_STACK)
                return 0;
            pos = STACK0 + stack;
            stack += w;
        }
        plan->pos[i] = (uint8_t)pos;
    }
    for (k = 0; stack_sizes[k] < stack; k++)
        ;
    plan->variant = (uint8_t)(1 + rc * N_STACK_SIZES + k);
    return 1;
#else
    (void)ptypes;
    (void)is_ptr;
    (void)n;
    (void)ret;
    return 0;
#endif
}

#ifdef BT_DIRECT_SYSV
/* Word i of w as the double an xmm register holds (its bits). */
static inline double xmm(const uint64_t *w, int i)
{
    double d;
    memcpy(&d, &w[i], sizeof d);
    return d;
}

/* Returned in xmm0:xmm1 (two SSE eightbytes). */
typedef struct SsePair {
    double lo, hi;
} SsePair;

/* The parameter lists of the call sites, and their arguments from w. */
#define U uint64_t
#define D double
#define TG U, U, U, U, U, U
#define TX D, D, D, D, D, D, D, D
#define TS2 U, U
#define TS4 TS2, U, U
#define TS8 TS4, U, U, U, U
#define TS16 TS8, U, U, U, U, U, U, U, U
#define G w[0], w[1], w[2], w[3], w[4], w[5]
#define X xmm(w, 6), xmm(w, 7), xmm(w, 8), xmm(w, 9), xmm(w, 10), xmm(w, 11), xmm(w, 12), xmm(w, 13)
#define S2 w[14], w[15]
#define S4 S2, w[16], w[17]
#define S8 S4, w[18], w[19], w[20], w[21]
#define S16 S8, w[22], w[23], w[24], w[25], w[26], w[27], w[28], w[29]

void bt_direct_call(const BtDirect *plan, void (*fn)(void), const uint64_t *words, void *rvalue)
{
    /* Some of words is never written: the words no argument fills go to
     * registers and slots the kernel never reads (an indeterminate uint64_t
     * is an unspecified value, not undefined behaviour: its address is
     * taken, C11 6.3.2.1p2). */
    const uint64_t *w = words;
    SsePair rs = {0, 0};
    uint64_t ri = 0;
    switch (plan->variant) {
    case 1: ri = ((U(*)(TG, TX))fn)(G, X); break;
    case 2: ri = ((U(*)(TG, TX, TS2))fn)(G, X, S2); break;
    case 3: ri = ((U(*)(TG, TX, TS4))fn)(G, X, S4); break;
    case 4: ri = ((U(*)(TG, TX, TS8))fn)(G, X, S8); break;
    case 5: ri = ((U(*)(TG, TX, TS16))fn)(G, X, S16); break;
    case 6: rs = ((SsePair(*)(TG, TX))fn)(G, X); break;
    case 7: rs = ((SsePair(*)(TG, TX, TS2))fn)(G, X, S2); break;
    case 8: rs = ((SsePair(*)(TG, TX, TS4))fn)(G, X, S4); break;
    case 9: rs = ((SsePair(*)(TG, TX, TS8))fn)(G, X, S8); break;
    case 10: rs = ((SsePair(*)(TG, TX, TS16))fn)(G, X, S16); break;
    default: break;
    }
    if (plan->variant > N_STACK_SIZES)
        memcpy(rvalue, &rs, sizeof rs);
    else
        memcpy(rvalue, &ri, sizeof ri);
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
