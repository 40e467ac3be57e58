/* bt_direct.c - kernel calls without libffi on x86-64 System V (see
 * bt_direct.h for the calling trick and its ABI references). */
#include "bt_direct.h"

#include <string.h>

#if defined(__x86_64__) && defined(__LP64__) && !defined(_WIN32)
#define BT_DIRECT_SYSV 1
#endif

enum { N_GP = 6, N_SSE = 8, MAX_STACK = 16, SSE0 = N_GP, STACK0 = N_GP + N_SSE };
enum { RET_INT, RET_SSE };

/* The stack-slot counts with a call site of their own. */
static const uint8_t stack_sizes[] = {0, 2, 4, 8, 16};
#define N_STACK_SIZES ((int)(sizeof stack_sizes / sizeof stack_sizes[0]))

#ifdef BT_DIRECT_SYSV
_Static_assert((char)-1 < 0, "char is signed in the x86-64 psABI");

/* Parameter type t: its size in bytes (8 for a pointer), whether it is
 * sign-extended, and how many xmm registers it takes (0: an INTEGER-class
 * argument). Returns 0, or -1 for a type with no direct call. */
static int classify(BtTypeId t, int *size, int *is_signed, int *sse)
{
    *is_signed = *sse = 0;
    switch (t) {
    case BT_BOOL:
    case BT_UCHAR: *size = 1; return 0;
    case BT_CHAR:
    case BT_SCHAR:
        *size = 1;
        *is_signed = 1;
        return 0;
    case BT_SHORT:
        *size = 2;
        *is_signed = 1;
        return 0;
    case BT_USHORT: *size = 2; return 0;
    case BT_INT:
        *size = 4;
        *is_signed = 1;
        return 0;
    case BT_UINT: *size = 4; return 0;
    case BT_LONG:
    case BT_ULONG:
    case BT_LLONG:
    case BT_ULLONG: *size = 8; return 0;
    case BT_FLOAT:
        *size = 4;
        *sse = 1;
        return 0;
    case BT_DOUBLE:
    case BT_CFLOAT:
        *size = 8;
        *sse = 1;
        return 0;
    case BT_CDOUBLE:
        *size = 16;
        *sse = 2;
        return 0;
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
        int size = 8, sgn = 0, words = 0, w;
        if (!is_ptr[i] && classify(ptypes[i], &size, &sgn, &words) < 0)
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
        for (w = 0; w < (size > 8 ? 2 : 1); w++) {
            BtDirectMove *m = &plan->moves[plan->n_moves++];
            m->arg = (uint8_t)i;
            m->pos = (uint8_t)(pos + w);
            /* 4-byte values go as they are: the psABI leaves the upper half
             * of their register or slot undefined, and no compiler reads it */
            m->shift = (uint8_t)(size < 4 ? 64 - 8 * size : 0);
            m->is_signed = (uint8_t)sgn;
            m->off = (uint8_t)(8 * w);
        }
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
typedef union Word {
    uint64_t u;
    double d;
} Word;

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
#define G w[0].u, w[1].u, w[2].u, w[3].u, w[4].u, w[5].u
#define X w[6].d, w[7].d, w[8].d, w[9].d, w[10].d, w[11].d, w[12].d, w[13].d
#define S2 w[14].u, w[15].u
#define S4 S2, w[16].u, w[17].u
#define S8 S4, w[18].u, w[19].u, w[20].u, w[21].u
#define S16 S8, w[22].u, w[23].u, w[24].u, w[25].u, w[26].u, w[27].u, w[28].u, w[29].u

void bt_direct_call(const BtDirect *plan, void (*fn)(void), void *const *avalues, void *rvalue)
{
    /* Not initialized: the words no argument fills go to registers and
     * stack slots the kernel never reads (an indeterminate uint64_t or
     * double is an unspecified value, not undefined behaviour: w's address
     * is taken, C11 6.3.2.1p2). */
    Word w[BT_DIRECT_WORDS];
    SsePair rs = {0, 0};
    uint64_t ri = 0;
    int i;

    for (i = 0; i < plan->n_moves; i++) {
        const BtDirectMove *m = &plan->moves[i];
        uint64_t x;
        memcpy(&x, (const char *)avalues[m->arg] + m->off, 8);
        if (m->shift) /* bool, char, short */
            x = m->is_signed ? (uint64_t)((int64_t)(x << m->shift) >> m->shift)
                             : (x << m->shift) >> m->shift;
        w[m->pos].u = x;
    }
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
void bt_direct_call(const BtDirect *plan, void (*fn)(void), void *const *avalues, void *rvalue)
{
    (void)plan;
    (void)fn;
    (void)avalues;
    (void)rvalue;
}
#endif
