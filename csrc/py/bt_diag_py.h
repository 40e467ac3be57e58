/* bt_diag_py.h - a recorded diagnostic (BtDiag) into a Python exception. */
#ifndef BT_DIAG_PY_H
#define BT_DIAG_PY_H

#include "bt_state.h"

/* Raises the exception for d: HeaderError / InstantiateError (with filename,
 * lineno, colno), OSError (its errno subclass), MemoryError, CudaError /
 * NoDriverError (with `code`), BuildError. The one place a BtDiag becomes
 * an exception, for the CPU, CUDA and NVRTC sides alike. Always NULL. */
BT_HIDDEN PyObject *bt_raise_diag(BtState *st, const BtDiag *d);
/* The same, with what a compiler printed: a BuildError's `output` (NULL:
 * ""). Other kinds ignore it. Always NULL. */
BT_HIDDEN PyObject *bt_raise_diag_output(BtState *st, const BtDiag *d, const char *output);

#endif
