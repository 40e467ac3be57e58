// bt_guard.cpp - the core's one C++ file: C++ exceptions cannot be caught in
// C, so kernel calls go through this try/catch. libffi's call trampolines
// carry unwind tables, so an exception thrown by the kernel unwinds through
// ffi_call to here.
#include "bt_guard.h"

#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>

static int caught(int kind, const char *what, char *msg, size_t msgsize)
{
    std::snprintf(msg, msgsize, "%s", what ? what : "");
    return kind;
}

extern "C" int bt_guard_call(ffi_cif *cif, void (*fn)(void), void *rvalue, void **avalues,
                             char *msg, size_t msgsize)
{
    try {
        ffi_call(cif, fn, rvalue, avalues);
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
