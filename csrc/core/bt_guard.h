/* bt_guard.h - kernel calls that turn C++ exceptions into error codes.
 *
 * A C++ kernel that throws would otherwise unwind into C frames and call
 * std::terminate, killing the interpreter. bt_guard_call runs ffi_call
 * inside try/catch (C++'s zero-cost exceptions: nothing is paid unless a
 * kernel throws) and reports what was caught; the direct call's sites do the same
 * for a direct call (bt_direct.h). Pure C interface. */
#ifndef BT_GUARD_H
#define BT_GUARD_H

#include <ffi.h>
#include <stddef.h>
#include <stdint.h>

#include "bt_arena.h"

typedef enum BtGuardKind {
    BT_GUARD_OK = 0,
    BT_GUARD_RUNTIME, /* std::exception (others) or anything else thrown */
    BT_GUARD_MEMORY,  /* std::bad_alloc */
    BT_GUARD_VALUE,   /* std::invalid_argument, std::domain_error, std::length_error */
    BT_GUARD_INDEX,   /* std::out_of_range */
    BT_GUARD_OVERFLOW /* std::overflow_error, std::range_error, std::underflow_error */
} BtGuardKind;

/* ffi_call(cif, fn, rvalue, avalues); returns BT_GUARD_OK, or the kind of
 * exception caught with its what() in msg. Callable without the GIL. */
#ifdef __cplusplus
extern "C"
#endif
    BT_HIDDEN int
    bt_guard_call(ffi_cif *cif, void (*fn)(void), void *rvalue, void **avalues, char *msg,
                  size_t msgsize);

/* A direct call inside the same try/catch: one function per call site
 * (bt_direct.h's variants), picked once when a call is prepared, so that a
 * call pays no switch. site(plan, fn, rvalue, words, msg, msgsize) runs
 * bt_direct_call(plan->variant, plan, fn, words, rvalue) and returns as
 * bt_guard_call does. bt_guard_site(variant): the site of a plan's variant,
 * or NULL for 0 (libffi). */
struct BtDirect;
typedef int (*BtGuardSite)(const struct BtDirect *plan, void (*fn)(void), void *rvalue,
                           const uint64_t *words, char *msg, size_t msgsize);
#ifdef __cplusplus
extern "C"
#endif
    BT_HIDDEN BtGuardSite
    bt_guard_site(int variant);

#endif
