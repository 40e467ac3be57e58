/* bt_diag_py.h - a recorded diagnostic (BtDiag) into a Python exception. */
#ifndef BT_DIAG_PY_H
#define BT_DIAG_PY_H

#include "bt_state.h"

/* Raises the exception for d: HeaderError / InstantiateError (with filename,
 * lineno, colno), OSError (its errno subclass), MemoryError, CudaError /
 * NoDriverError (with `code`). The one place a BtDiag becomes an exception,
 * for the CPU and the CUDA side alike. Always NULL. */
BT_HIDDEN PyObject *bt_raise_diag(BtState *st, const BtDiag *d);

#endif
