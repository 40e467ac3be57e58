/* bt_library.h - binding a shared library: dlopen handle objects and
 * _core.bind(), which turns metadata + symbols into Function objects. */
#ifndef BT_LIBRARY_H
#define BT_LIBRARY_H

#include "bt_state.h"

BT_HIDDEN extern const char bt_library_bind_doc[];
BT_HIDDEN PyObject *bt_library_bind(PyObject *module, PyObject *args, PyObject *kwargs);
/* _core._loaded(): which object dlopen finds for a path, and whether its
 * code is a file's (bindthem/_loading.py decides what to load with it). */
BT_HIDDEN extern const char bt_library_loaded_doc[];
BT_HIDDEN PyObject *bt_library_loaded(PyObject *module, PyObject *args, PyObject *kwargs);

#endif
