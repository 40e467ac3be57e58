/* bt_nvrtc_py.h - _core.nvrtc: bt_nvrtc.c's compiler for bindthem.cuda. */
#ifndef BT_NVRTC_PY_H
#define BT_NVRTC_PY_H

#include "bt_state.h"

BT_HIDDEN PyObject *bt_nvrtc_py(PyObject *module, PyObject *args, PyObject *kwargs);
BT_HIDDEN extern const char bt_nvrtc_py_doc[];

#endif
