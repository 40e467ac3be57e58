// bt_guard.cpp - the core's one C++ file: C++ exceptions cannot be caught in
// C, so kernel calls go through this try/catch. libffi's call trampolines
// carry unwind tables, so an exception thrown by the kernel unwinds through
// ffi_call to here; a direct call unwinds through bt_direct_call's C frame.
#include "bt_guard.h"

extern "C" {
#include "bt_direct.h"
}

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

extern "C" int bt_guard_direct(const BtDirect *plan, void (*fn)(void), void *rvalue,
                               const uint64_t *words, char *msg, size_t msgsize)
{
    return guarded([&] { bt_direct_call(plan, fn, words, rvalue); }, msg, msgsize);
}
