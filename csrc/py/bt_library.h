/* bt_library.h - binding a shared library: dlopen handle objects and
 * _core.bind(), which turns metadata + symbols into Function objects. */
#ifndef BT_LIBRARY_H
#define BT_LIBRARY_H

#include "bt_state.h"

BT_HIDDEN extern const char bt_library_bind_doc[];
BT_HIDDEN PyObject *bt_library_bind(PyObject *module, PyObject *args, PyObject *kwargs);

#endif
