/* bt_numpy.h - the NumPy C-API; its table lives in bt_numpy.c. */
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

/* Imports NumPy's C-API table (the module's exec slot calls it once).
 * 0, or -1 with an exception set. */
BT_HIDDEN int bt_numpy_import(void);

#endif
