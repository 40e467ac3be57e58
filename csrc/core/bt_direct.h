/* bt_direct.h - kernel calls without libffi on x86-64 System V and AAPCS64.
 *
 * ffi_call classifies every argument again on every call (~1900 of ~3400
 * instructions of a 13-parameter call). When every parameter and the return
 * are scalars that travel in one register class, the classification can be
 * done once, at bind time, and the call made through an ordinary C function
 * pointer of a fixed, wider type:
 *
 *     ret (*)(u64 g0..g(G-1), double v0..v7, u64 s0..s(K-1))
 *
 * with G = 6 on x86-64, 8 on aarch64. On both ABIs each register class is
 * counted on its own and an argument with no register of its class left goes
 * to the next 8-byte stack slot, in argument order; G u64 and eight double
 * parameters therefore fill exactly the argument registers, and the K u64
 * after them are the first K stack slots. Slots the kernel does not use hold
 * zeros it never reads; the caller pops the stack, so extra stack slots are
 * harmless. K is rounded up to 0, 2, 4, 8, 16 or 32 to keep the number of call
 * sites small; more than 32 stack slots uses libffi. A kernel with no
 * floating-point argument (pointers and integers: most array kernels) is
 * called through the same type without the eight doubles, which spares
 * loading registers it never reads.
 *
 * x86-64 System V (psABI 1.0, section 3.2.3 "Parameter Passing"):
 * INTEGER-class arguments take rdi, rsi, rdx, rcx, r8, r9 in order, SSE-class
 * ones xmm0-xmm7. A kernel `f(int a, double b, float c, long d)` called this
 * way finds a in edi, b in xmm0, c in the low 32 bits of xmm1, d in rcx.
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
 * AAPCS64 (Arm's "Procedure Call Standard for the Arm 64-bit Architecture",
 * IHI 0055, github.com/ARM-software/abi-aa: "Parameter Passing Rules", stage
 * C, rules C.1-C.17; the Linux/ELF variant, little-endian, LP64, not
 * Apple's, which packs stack arguments at their own size): integers, bool
 * and pointers take x0-x7 (rules C.9-C.10: NGRN), float and double v0-v7
 * (C.1: NSRN), each in the low bits of its register; a value narrower than 8
 * bytes on the stack takes a whole 8-byte slot, in its low bytes (C.5,
 * C.16). std::complex<float> and std::complex<double> are homogeneous
 * floating-point aggregates (HFAs) of two members ("Homogeneous Aggregates";
 * compilers pass std::complex as _Complex: tests/core/test_direct.py checks
 * against libffi's complex types with g++, and clang++ where there is one):
 * two consecutive v registers, one member in the low bits of each, when both
 * are free (C.2); otherwise the whole aggregate goes to the stack and NSRN
 * is set to 8, so that no later float, double or complex argument takes a
 * register (C.3); on the stack the members are packed at their own size,
 * rounded up to 8 bytes (C.3-C.6): one slot for a complex<float>, two for a
 * complex<double>. A complex<float> is stored as it is everywhere (one word,
 * both parts packed), so the plan marks the register pairs that take one
 * (BtDirect.split) and the call moves the imaginary part (the word's upper
 * half) into the next register's word. Returns ("Result Return"): the
 * registers the value would take as the first argument: x0 for integers,
 * bool and pointers (read at the declared width), v0 for float and double,
 * v0:v1 for the complexes, which the call reads as the HFA struct {double,
 * double} (d0, d1); for a complex<float> the parts are s0 and s1, the low
 * halves of those two, and are packed back into one 8-byte value
 * (BtDirect.ret_split) as libffi's rvalue and bt_call.c read it.
 *
 * Calling through a function pointer of another type is undefined in ISO C;
 * it is defined by the ABI, which is what this file relies on, and only
 * where the ABI is one described (__x86_64__ with LP64, not Windows;
 * __aarch64__ little-endian with LP64, not Apple or Windows). Elsewhere
 * bt_direct_plan says "not applicable" and libffi is used.
 * Unwinding: the call sites (bt_direct_call.h) are compiled inside
 * the guard's sites (bt_guard.cpp), so a C++ exception thrown by the kernel
 * unwinds straight into its catch.
 *
 * Pure C: no Python.h. */
#ifndef BT_DIRECT_H
#define BT_DIRECT_H

#include <stdint.h>

#include "bt_parse.h"
#include "bt_types.h"

/* The ABIs with a direct call: their general registers for arguments, and
 * the name _core.DIRECT_ABI gives (NULL: None, no direct call here). */
#if defined(__x86_64__) && defined(__LP64__) && !defined(_WIN32)
#define BT_DIRECT_SYSV 1
#define BT_DIRECT_GP 6
#define BT_DIRECT_ABI "x86-64 System V"
#elif defined(__aarch64__) && defined(__AARCH64EL__) && defined(__LP64__) &&                       \
    !defined(__APPLE__) && !defined(_WIN32)
#define BT_DIRECT_AAPCS64 1
#define BT_DIRECT_GP 8
#define BT_DIRECT_ABI "AAPCS64"
#else
#define BT_DIRECT_GP 6 /* none: every plan says "libffi" */
#define BT_DIRECT_ABI NULL
#endif

/* Most words a direct call passes: the general registers, 8 floating-point
 * ones, 32 stack slots; where the floating-point ones and the stack slots
 * begin; and the stack sizes with call sites of their own (0, 2, 4, 8, 16,
 * 32), per return class and use of the floating-point registers. */
#define BT_DIRECT_WORDS (BT_DIRECT_GP + 8 + 32)
enum {
    BT_DIRECT_FP0 = BT_DIRECT_GP,
    BT_DIRECT_STACK0 = BT_DIRECT_GP + 8,
    BT_DIRECT_STACK_SIZES = 6
};

/* A direct-call plan for one overload; variant 0: use libffi. */
typedef struct BtDirect {
    uint8_t
        variant; /* call site: return class x FP registers or none x stack slots (bt_direct.c) */
    /* AAPCS64: bit r set when floating-point register r takes the real part
     * of a std::complex<float> (its word, packed) and r + 1 its imaginary
     * part; the call splits the word. Zero on x86-64. */
    uint8_t split;
    uint8_t ret_split; /* AAPCS64: a std::complex<float> return (s0, s1) */
    /* C parameter i goes in word pos[i] (0 to G-1 a general register, G to
     * G+7 a floating-point one, G + 8 + j stack slot j, G = BT_DIRECT_GP);
     * a std::complex<double> takes pos[i] and pos[i] + 1 (two registers or
     * two stack slots), a std::complex<float> one word (packed) */
    uint8_t pos[BT_MAX_PARAMS];
} BtDirect;

/* Whether the direct path applies to a kernel with n parameters of types
 * ptypes (is_ptr[i]: parameter i is a pointer) returning ret; fills plan
 * either way (variant 0 when not). */
BT_HIDDEN int bt_direct_plan(BtDirect *plan, const BtTypeId *ptypes, const int *is_ptr, int n,
                             BtTypeId ret);

/* The call itself: bt_direct_call (bt_direct_call.h). */

#endif
