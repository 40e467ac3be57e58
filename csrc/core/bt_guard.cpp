// bt_guard.cpp - the core's one C++ file: C++ exceptions cannot be caught in
// C, so kernel calls go through this try/catch. libffi's call trampolines
// carry unwind tables, so an exception thrown by the kernel unwinds through
// ffi_call to here; a direct call's sites are compiled here (bt_direct_call.h).
#include "bt_guard.h"

extern "C" {
#include "bt_direct.h"
}
#include "bt_direct_call.h"  // the call sites, compiled here: inside the try

#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>

static int caught(int kind, const char *what, char *msg, size_t msgsize)
{
    std::snprintf(msg, msgsize, "%s", what ? what : "");
    return kind;
}

// Runs call() and maps what it throws (pybind11's mapping).
template <class Call> static int guarded(const Call &call, char *msg, size_t msgsize)
{
    try {
        call();
        return BT_GUARD_OK;
    } catch (const std::bad_alloc &e) {
        return caught(BT_GUARD_MEMORY, e.what(), msg, msgsize);
    } catch (const std::out_of_range &e) {
        return caught(BT_GUARD_INDEX, e.what(), msg, msgsize);
    } catch (const std::invalid_argument &e) {
        return caught(BT_GUARD_VALUE, e.what(), msg, msgsize);
    } catch (const std::domain_error &e) {
        return caught(BT_GUARD_VALUE, e.what(), msg, msgsize);
    } catch (const std::length_error &e) {
        return caught(BT_GUARD_VALUE, e.what(), msg, msgsize);
    } catch (const std::overflow_error &e) {
        return caught(BT_GUARD_OVERFLOW, e.what(), msg, msgsize);
    } catch (const std::underflow_error &e) {
        return caught(BT_GUARD_OVERFLOW, e.what(), msg, msgsize);
    } catch (const std::range_error &e) {
        return caught(BT_GUARD_OVERFLOW, e.what(), msg, msgsize);
    } catch (const std::exception &e) {
        return caught(BT_GUARD_RUNTIME, e.what(), msg, msgsize);
    } catch (...) {
        return caught(BT_GUARD_RUNTIME, "unknown C++ exception", msg, msgsize);
    }
}

extern "C" int bt_guard_call(ffi_cif *cif, void (*fn)(void), void *rvalue, void **avalues,
                             char *msg, size_t msgsize)
{
    return guarded([&] { ffi_call(cif, fn, rvalue, avalues); }, msg, msgsize);
}

// One call site's guard: bt_direct_call with its variant a constant, so
// that the switch folds to the one call.
template <int V>
static int site(const BtDirect *plan, void (*fn)(void), void *rvalue, const uint64_t *words,
                char *msg, size_t msgsize)
{
    return guarded([&] { bt_direct_call(V, plan, fn, words, rvalue); }, msg, msgsize);
}

// The sites by variant (bt_direct.c numbers them 1 to 4 * BT_DIRECT_STACK_SIZES).
static const BtGuardSite sites[] = {
    nullptr,  site<1>,  site<2>,  site<3>,  site<4>,  site<5>,  site<6>,  site<7>,  site<8>,
    site<9>,  site<10>, site<11>, site<12>, site<13>, site<14>, site<15>, site<16>, site<17>,
    site<18>, site<19>, site<20>, site<21>, site<22>, site<23>, site<24>};
static_assert(sizeof sites / sizeof sites[0] == 4 * BT_DIRECT_STACK_SIZES + 1, "every variant");

extern "C" BtGuardSite bt_guard_site(int variant)
{
    return variant > 0 && variant < (int)(sizeof sites / sizeof sites[0]) ? sites[variant]
                                                                          : nullptr;
}
