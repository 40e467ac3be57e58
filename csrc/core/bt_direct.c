/* bt_direct.c - kernel calls without libffi on x86-64 System V and AAPCS64
 * (see bt_direct.h for the calling trick and its ABI references). */
#include "bt_direct.h"

#include <string.h>

#if defined(BT_DIRECT_SYSV) || defined(BT_DIRECT_AAPCS64)
#define BT_DIRECT_ANY 1
#endif

enum {
    N_GP = BT_DIRECT_GP,
    N_FP = 8,
    MAX_STACK = 32,
    FP0 = BT_DIRECT_FP0,
    STACK0 = BT_DIRECT_STACK0
};
enum { RET_INT, RET_FP };

#ifdef BT_DIRECT_ANY
/* The stack-slot counts with a call site of their own. */
static const uint8_t stack_sizes[] = {0, 2, 4, 8, 16, 32};
#define N_STACK_SIZES ((int)(sizeof stack_sizes / sizeof stack_sizes[0]))
_Static_assert(N_STACK_SIZES == BT_DIRECT_STACK_SIZES, "the call sites (bt_direct_call.h)");

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
    case BT_LDOUBLE: /* x87's st(0) on x86-64, a q register on aarch64: libffi's */
    case BT_CLDOUBLE:
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
