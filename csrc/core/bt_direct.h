/* bt_direct.h - kernel calls without libffi on x86-64 System V.
 *
 * ffi_call classifies every argument again on every call (~1900 of ~3400
 * instructions of a 13-parameter call). When every parameter and the return
 * are scalars that travel in one register class, the classification can be
 * done once, at bind time, and the call made through an ordinary C function
 * pointer of a fixed, wider type:
 *
 *     ret (*)(u64 g0..g5, double x0..x7, u64 s0..s(K-1))
 *
 * In the System V AMD64 ABI (psABI 1.0, section 3.2.3 "Parameter Passing"),
 * INTEGER-class arguments take rdi, rsi, rdx, rcx, r8, r9 in order, SSE-class
 * ones xmm0-xmm7, and an argument with no register of its class left goes to
 * the next 8-byte stack slot, in argument order; each class is counted on
 * its own. Six u64 and eight double parameters therefore fill exactly those
 * registers, and the K u64 after them are the first K stack slots. A kernel
 * `f(int a, double b, float c, long d)` called this way finds a in edi, b in
 * xmm0, c in the low 32 bits of xmm1, d in rcx. Slots the kernel does not
 * use hold zeros it never reads; the caller pops the stack (cdecl), so extra
 * stack slots are harmless. K is rounded up to 0, 2, 4, 8 or 16 to keep the
 * number of call sites small; more than 16 stack slots uses libffi.
 *
 * Values: a float sits in the low 32 bits of its xmm register or stack slot,
 * an int or unsigned in the low 32 bits of its register or slot; the psABI
 * leaves the upper halves undefined (no compiler reads them) and they carry
 * whatever the value's 16-byte storage held there. bool, char and short are
 * sign- or zero-extended to 64 bits: the psABI leaves that undefined too,
 * but Clang-compiled callees rely on the caller extending them to 32 bits
 * (an unwritten part of the ABI that GCC callers honour), which a full
 * extension satisfies. Returns: rax for integers, bool and pointers (read at
 * the declared width: the bits above it are undefined), xmm0 for float and
 * double, xmm0 (packed) for std::complex<float>, xmm0:xmm1 for
 * std::complex<double>; the call reads rax or xmm0:xmm1 as a whole. Complex
 * arguments: std::complex<float> is one SSE eightbyte (both parts packed in
 * one register or slot), std::complex<double> two, and when fewer than two
 * xmm registers are left it goes whole to the stack (two slots), leaving
 * the last register to later arguments (psABI 3.2.3, rule 4 of the
 * classification of aggregates; GCC and Clang agree).
 *
 * Calling through a function pointer of another type is undefined in ISO C;
 * it is defined by the ABI, which is what this file relies on, and only
 * where the ABI is the one described (__x86_64__ with LP64, not Windows).
 * Elsewhere bt_direct_plan says "not applicable" and libffi is used.
 * Unwinding: a C++ exception thrown by the kernel unwinds through
 * bt_direct_call's frame (x86-64 compilers emit unwind tables for C by
 * default) to bt_guard_direct's catch.
 *
 * Pure C: no Python.h. */
#ifndef BT_DIRECT_H
#define BT_DIRECT_H

#include <stdint.h>

#include "bt_parse.h"
#include "bt_types.h"

/* Most words a direct call passes: 6 + 8 registers, 16 stack slots. */
#define BT_DIRECT_WORDS 30

/* A direct-call plan for one overload; variant 0: use libffi. */
typedef struct BtDirect {
    uint8_t variant; /* call site: return class x stack slots (bt_direct.c) */
    /* C parameter i goes in word pos[i] (0-5 a general register, 6-13 an
     * xmm register, 14 + j stack slot j); a std::complex<double> takes
     * pos[i] and pos[i] + 1 (two xmm registers or two stack slots) */
    uint8_t pos[BT_MAX_PARAMS];
} BtDirect;

/* Whether the direct path applies to a kernel with n parameters of types
 * ptypes (is_ptr[i]: parameter i is a pointer) returning ret; fills plan
 * either way (variant 0 when not). */
BT_HIDDEN int bt_direct_plan(BtDirect *plan, const BtTypeId *ptypes, const int *is_ptr, int n,
                             BtTypeId ret);

/* Calls fn with words[BT_DIRECT_WORDS] in the registers and stack slots
 * plan->variant passes, the caller having written each argument at the
 * word(s) plan->pos names: pointers and 8-byte integers as they are,
 * narrower integers and bool extended to 64 bits (sign or zero, by their
 * type: bt_slot's conversions store them so), a float or int in the low 4
 * bytes (the upper ones are never read), complexes by parts. Words no
 * argument fills go to registers the kernel never reads. rvalue (16 bytes)
 * receives rax, or xmm0 and xmm1. plan->variant must be non-zero. */
BT_HIDDEN void bt_direct_call(const BtDirect *plan, void (*fn)(void), const uint64_t *words,
                              void *rvalue);

#endif
