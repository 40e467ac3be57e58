/* bt_method.h - a Library's own class: bindthem._core.LibraryMethod, a
 * kernel as that class holds it, and _library_class, its plain lookups.
 *
 * Each Library is a types.ModuleType, the one instance of a class of its own
 * whose namespace holds its kernels, each wrapped in a LibraryMethod
 * (bindthem/_services/binding.py). The wrapper is a method descriptor
 * (Py_TPFLAGS_METHOD_DESCRIPTOR): CPython specializes `lib.f(x)` for it as it
 * does a method of a class, with no dictionary lookup (a module subclass's
 * own lookup, module_getattro, it never specializes), and calls it with the
 * Library first, which the wrapper drops before calling the kernel. __get__
 * gives the kernel itself, so that `lib.f` is the kernel (never a bound
 * method) and `m.__get__(lib, cls)(*args)` equals `m(lib, *args)`, as the flag
 * asks. */
#ifndef BT_METHOD_H
#define BT_METHOD_H

#include "bt_state.h"

BT_HIDDEN extern PyType_Spec bt_method_spec;
/* _core._library_class(cls): a Library's own class made to look names up in
 * its namespace only (no instance dict), which CPython 3.12+ requires of an
 * object to specialize a method load on it. Each Library stays a
 * types.ModuleType: its module dict holds what ModuleType.__init__ puts
 * there, and no lookup reads it. */
BT_HIDDEN PyObject *bt_library_class(PyObject *module, PyObject *arg);

#endif
