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

#endif
