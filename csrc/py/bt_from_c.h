/* bt_from_c.h - the one way C reaches bindthem's Python code: bindthem._from_c. */
#ifndef BT_FROM_C_H
#define BT_FROM_C_H

#include <Python.h>

#include "bt_arena.h"

/* New reference: bindthem._from_c.<name>, a Python function or class C
 * uses (rich display, pickling, the exception classes); bindthem/_from_c.py
 * holds every one and tests/core/test_from_c.py imports each name C asks for. */
BT_HIDDEN PyObject *bt_from_c(const char *name);

/* New reference: bindthem._from_c.<name>(*argv). */
BT_HIDDEN PyObject *bt_from_c_call(const char *name, PyObject *const *argv, Py_ssize_t n);

#endif
