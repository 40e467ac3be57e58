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

/* How parameter type t loads, and how many xmm registers it takes (0: an
 * INTEGER-class argument). Returns 0, or -1 for a type with no direct call. */
static int classify(BtTypeId t, uint8_t *load, int *sse)
{
    *sse = 0;
    switch (t) {
    case BT_BOOL:
    case BT_UCHAR: *load = BT_DLOAD_U8; return 0;
    case BT_CHAR:
    case BT_SCHAR: *load = BT_DLOAD_S8; return 0;
    case BT_SHORT: *load = BT_DLOAD_S16; return 0;
    case BT_USHORT: *load = BT_DLOAD_U16; return 0;
    case BT_INT: *load = BT_DLOAD_S32; return 0;
    case BT_UINT: *load = BT_DLOAD_U32; return 0;
    case BT_LONG:
    case BT_ULONG:
    case BT_LLONG:
    case BT_ULLONG: *load = BT_DLOAD_64; return 0;
    case BT_FLOAT:
        *load = BT_DLOAD_F32;
        *sse = 1;
        return 0;
    case BT_DOUBLE:
    case BT_CFLOAT:
        *load = BT_DLOAD_64;
        *sse = 1;
        return 0;
    case BT_CDOUBLE:
        *load = BT_DLOAD_128;
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
    int gp = 0, sse = 0, stack = 0, rc = ret_class(ret), i, k;

    if (rc < 0 || n < 0 || n > BT_MAX_PARAMS)
        return 0;
    for (i = 0; i < n; i++) {
        int words;
        if (is_ptr[i]) {
            plan->load[i] = BT_DLOAD_64;
            words = 0;
        } else if (classify(ptypes[i], &plan->load[i], &words) < 0) {
            return 0;
        }
        if (!words && gp < N_GP) {
            plan->pos[i] = (uint8_t)gp++;
        } else if (words && sse + words <= N_SSE) {
            plan->pos[i] = (uint8_t)(SSE0 + sse);
            sse += words;
        } else { /* no register left of its class: the next stack slot(s) */
            if (stack + (words > 1 ? words : 1) > MAX_STACK)
                return 0;
            plan->pos[i] = (uint8_t)(STACK0 + stack);
            stack += words > 1 ? words : 1;
        }
    }
    for (k = 0; stack_sizes[k] < stack; k++)
        ;
    plan->n = (uint8_t)n;
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
    Word w[STACK0 + MAX_STACK] = {{0}};
    SsePair rs = {0, 0};
    uint64_t ri = 0;
    int i;

    for (i = 0; i < plan->n; i++) {
        const unsigned char *v = avalues[i];
        Word *o = &w[plan->pos[i]];
        uint32_t f;
        switch (plan->load[i]) {
        case BT_DLOAD_U8: o->u = *(const uint8_t *)v; break;
        case BT_DLOAD_S8: o->u = (uint64_t)(int64_t) * (const int8_t *)v; break;
        case BT_DLOAD_U16: o->u = *(const uint16_t *)v; break;
        case BT_DLOAD_S16: o->u = (uint64_t)(int64_t) * (const int16_t *)v; break;
        case BT_DLOAD_U32: o->u = *(const uint32_t *)v; break;
        case BT_DLOAD_S32: o->u = (uint64_t)(int64_t) * (const int32_t *)v; break;
        case BT_DLOAD_F32:
            memcpy(&f, v, sizeof f);
            o->u = f;
            break;
        case BT_DLOAD_128: memcpy(&o[1].u, v + 8, 8); /* fall through */
        default: memcpy(&o->u, v, 8); break;
        }
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
