/* bt_state.h - module state of bindthem._core (PEP 489/573/630).
 *
 * No static PyObject *: everything lives here, reached from the module or,
 * in methods of heap types, from the defining class. */
#ifndef BT_STATE_H
#define BT_STATE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "bt_arena.h"
#include "bt_diag.h"
#include "bt_ft.h"

typedef struct BtState {
    PyObject *BindError;
    PyObject *HeaderError;
    PyObject *InstantiateError;
    PyObject *SymbolError;
    PyObject *BuildError;
    PyTypeObject *FunctionType;
    PyTypeObject *LibraryHandleType; /* an open shared library (bt_library.c) */
    PyTypeObject *PlanType;
    PyTypeObject *LibraryMethodType; /* a kernel in its Library's class (bt_method.c) */
    /* handles (bt_handle.c): Handle, HandleType, NullHandleError, and the
     * open Handles with a destructor, {address: weakref} (the exit hook's) */
    PyTypeObject *HandleType;
    PyTypeObject *HandleTypeType;
    PyObject *NullHandleError;
    PyObject *StatusError; /* an annotated function's status (bt_note_call.c) */
    PyObject *open_handles;
    /* bindthem.cuda (bt_cudapy_module.c registers them) */
    PyObject *CudaError;
    PyObject *NoDriverError;
    PyTypeObject *CudaModuleType;
    PyTypeObject *CudaKernelType;
    PyTypeObject *CudaLaunchType;
    PyTypeObject *DeviceArrayType;
    PyTypeObject *CudaEventType;
    /* stream capture (bt_cudapy_graph.c): the Graph type, and bindthem's open
     * captures, {capture sequence id: Graph} */
    PyTypeObject *CudaGraphType;
    PyObject *captures;
    /* bindthem.options() (bt_opts.c): the override, and how many blocks
     * that set one are open (any thread's: BT_FT_ADD / BT_FT_LOAD_RELAXED) */
    PyObject *opts_var;
    Py_ssize_t opts_active;
    /* calls go through libffi even where a direct call applies
     * (BINDTHEM_FFI=1 at import, _core.force_ffi(); relaxed atomic) */
    int force_ffi;
    /* headers parsed (bt_meta_load_py, bt_plan_py): _core._parse_count(), for tests (BT_FT_ADD) */
    Py_ssize_t parses;
} BtState;

/* Inline, as CPython's _csv.c reaches its state (get_csv_state): a file
 * that needs the state then depends on no other file for it. */
static inline BtState *bt_state(PyObject *module) { return (BtState *)PyModule_GetState(module); }
/* The state of the module that defined type tp (a heap type of ours). */
static inline BtState *bt_state_from_type(PyTypeObject *tp)
{
    return (BtState *)PyType_GetModuleState(tp);
}

/* Type specs and helpers of the other Python-facing files. */
BT_HIDDEN extern PyType_Spec bt_function_spec;
BT_HIDDEN extern PyType_Spec bt_library_handle_spec;

/* bt_cudapy_module.c: the CUDA types, exceptions and cuda_* functions of _core.
 * Adding them loads no driver. */
BT_HIDDEN int bt_cudapy_add(PyObject *module);
BT_HIDDEN int bt_cudapy_traverse(BtState *st, visitproc visit, void *arg);
BT_HIDDEN void bt_cudapy_clear(BtState *st);

#endif
