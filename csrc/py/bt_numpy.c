/* bt_numpy.c - the NumPy C-API table (bt_ARRAY_API), defined and imported here.
 *
 * A file of its own so that the files using NumPy depend on this leaf, not
 * on bt_module.c (which calls them: a cycle). */
#define BT_NUMPY_IMPORT
#include "bt_numpy.h"

int bt_numpy_import(void) { return _import_array(); }
