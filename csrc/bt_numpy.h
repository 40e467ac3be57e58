/* bt_numpy.h - the NumPy C-API, imported once in bt_module.c. */
#ifndef BT_NUMPY_H
#define BT_NUMPY_H

#include "bt_state.h"

#define PY_ARRAY_UNIQUE_SYMBOL bt_ARRAY_API
#ifndef BT_NUMPY_IMPORT
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>

/* NumPy 1.x headers (building against numpy<2): the 2.x accessor. */
#if NPY_ABI_VERSION < 0x02000000 && !defined(PyDataType_ELSIZE)
#define PyDataType_ELSIZE(d) ((Py_ssize_t)(d)->elsize)
#endif

#endif
