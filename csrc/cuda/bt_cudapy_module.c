/* bt_cudapy_module.c - bindthem.cuda's part of _core: its exceptions, types and cuda_* functions.
 *
 * Here: the module-level cuda_* functions (device count, synchronize,
 * streams made and destroyed, the driver's facts) and the registration of
 * the CUDA exceptions (fetched from bindthem._from_c) and types. The types'
 * code is in bt_cudapy_bind.c (CudaModule, cuda_bind), bt_cudapy_kernel.c
 * and its siblings (Kernel, Launch), bt_cudapy_array.c and its siblings (DeviceArray;
 * bt_cudapy_array.h names them) and bt_cudapy_event.c (Event). Nothing here
 * loads the driver until a function is called. */
#include "bt_cudapy.h"
#include "bt_cudapy_graph.h"
#include "bt_from_c.h"

static PyObject *cuda_device_count(PyObject *module, PyObject *unused)
{
    BtDiag e;
    int n;

    bt_diag_init(&e);
    if (bt_cuda_device_count(&n, &e) < 0) {
        if (e.kind == BT_DIAG_NODRIVER)
            return PyLong_FromLong(0);
        return bt_raise_diag(bt_state(module), &e);
    }
    return PyLong_FromLong(n);
}

static PyObject *cuda_synchronize(PyObject *module, PyObject *unused)
{
    void *cur;
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    /* the driver opened and a context current with the GIL held; the wait
     * without it (a host callback queued before may need the GIL) */
    if (bt_cuda_current_ctx(&cur, &e) < 0 || (!cur && bt_cuda_use_device(0, &e) < 0))
        return bt_raise_diag(bt_state(module), &e);
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_sync(&e);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return bt_raise_diag(bt_state(module), &e);
    Py_RETURN_NONE;
}

static PyObject *cuda_stream_synchronize(PyObject *module, PyObject *stream)
{
    uint64_t s;
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    if (bt_cudapy_stream_arg(stream, "stream_synchronize", 0, &s) < 0)
        return NULL;
    if (bt_cuda_init(&e) < 0)
        return bt_raise_diag(bt_state(module), &e);
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_stream_sync(s, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return bt_raise_diag(bt_state(module), &e);
    Py_RETURN_NONE;
}

static PyObject *cuda_stream_create(PyObject *module, PyObject *args)
{
    PyObject *devo;
    uint64_t s;
    BtDiag e;
    int dev = 0, non_blocking;

    bt_diag_init(&e);
    if (!PyArg_ParseTuple(args, "Op:cuda_stream_create", &devo, &non_blocking))
        return NULL;
    if (devo == Py_None ? bt_cuda_current_device(&dev, &e) < 0
                        : (dev = PyLong_AsLong(devo)) == -1 && PyErr_Occurred())
        return e.kind ? bt_raise_diag(bt_state(module), &e) : NULL;
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES) {
        PyErr_Format(PyExc_ValueError, "device=%d is not a device ordinal", dev);
        return NULL;
    }
    if (bt_cuda_stream_create(dev, non_blocking, &s, &e) < 0)
        return bt_raise_diag(bt_state(module), &e);
    return PyLong_FromUnsignedLongLong(s);
}

static PyObject *cuda_stream_destroy(PyObject *module, PyObject *handle)
{
    unsigned long long s = PyLong_AsUnsignedLongLong(handle);

    if (s == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    /* cuStreamDestroy returns at once; the stream's queued work still runs */
    bt_cuda_stream_destroy(s);
    Py_RETURN_NONE;
}

static PyObject *cuda_driver(PyObject *module, PyObject *unused)
{
    BtDiag e;

    bt_diag_init(&e);
    if (bt_cuda_init(&e) < 0)
        return bt_raise_diag(bt_state(module), &e);
    return Py_BuildValue("{s:i,s:s,s:O}", "version", bt_cuda_driver_version(), "path",
                         bt_cuda_driver_path(), "library_api",
                         bt_cuda_uses_library_api() ? Py_True : Py_False);
}

static PyMethodDef cuda_methods[] = {
    {"cuda_bind", (PyCFunction)(void (*)(void))bt_cudapy_bind, METH_VARARGS | METH_KEYWORDS,
     bt_cudapy_bind_doc},
    {"cuda_global", bt_cudapy_global, METH_VARARGS,
     "cuda_global(handle, name, dtype, device, readonly=False, /)\n--\n\nA DeviceArray view "
     "of a module variable."},
    {"cuda_to_device", (PyCFunction)(void (*)(void))bt_cudapy_to_device,
     METH_VARARGS | METH_KEYWORDS,
     "cuda_to_device(array, *, device=None, stream=None)\n--\n\nCopy an array to a new "
     "DeviceArray."},
    {"cuda_empty", (PyCFunction)(void (*)(void))bt_cudapy_empty, METH_VARARGS | METH_KEYWORDS,
     "cuda_empty(shape, dtype=float, *, device=None, stream=None)\n--\n\nAn uninitialized "
     "DeviceArray."},
    {"cuda_zeros", (PyCFunction)(void (*)(void))bt_cudapy_zeros, METH_VARARGS | METH_KEYWORDS,
     "cuda_zeros(shape, dtype=float, *, device=None, stream=None)\n--\n\nA zeroed DeviceArray "
     "(cuMemsetD8Async on the stream)."},
    {"cuda_pinned_empty", (PyCFunction)(void (*)(void))bt_cudapy_pinned_empty,
     METH_VARARGS | METH_KEYWORDS,
     "cuda_pinned_empty(shape, dtype=float)\n--\n\nA NumPy array over page-locked host memory "
     "(cuMemHostAlloc), freed with the array."},
    {"cuda_stream_synchronize", cuda_stream_synchronize, METH_O,
     "cuda_stream_synchronize($module, stream, /)\n--\n\ncuStreamSynchronize, the GIL released."},
    {"cuda_stream_create", cuda_stream_create, METH_VARARGS,
     "cuda_stream_create($module, device, non_blocking, /)\n--\n\nA new CUstream handle (int) in the "
     "device's (None: the current device's) primary context."},
    {"cuda_stream_destroy", cuda_stream_destroy, METH_O,
     "cuda_stream_destroy($module, handle, /)\n--\n\ncuStreamDestroy of a cuda_stream_create handle."},
    {"cuda_device_count", cuda_device_count, METH_NOARGS,
     "cuda_device_count()\n--\n\nCUDA devices (0 without a driver)."},
    {"cuda_capture", (PyCFunction)(void (*)(void))bt_cudapy_capture, METH_VARARGS | METH_KEYWORDS,
     "cuda_capture(stream, mode='thread_local')\n--\n\nA Graph whose `with` block captures "
     "the stream."},
    {"cuda_synchronize", cuda_synchronize, METH_NOARGS,
     "cuda_synchronize()\n--\n\ncuCtxSynchronize on the current (else device 0's) context."},
    {"cuda_driver", cuda_driver, METH_NOARGS,
     "cuda_driver()\n--\n\nLoad the driver; {'version', 'path', 'library_api'}."},
    BT_CUDAPY_MANAGED_FUNCTIONS,
    {NULL, NULL, 0, NULL},
};

int bt_cudapy_add(PyObject *module)
{
    BtState *st = bt_state(module);
    PyObject *advice;

    /* bindthem/errors.py makes the classes (one root, BindError) */
    st->CudaError = bt_from_c("CudaError");
    if (!st->CudaError || PyModule_AddObjectRef(module, "CudaError", st->CudaError) < 0)
        return -1;
    st->NoDriverError = bt_from_c("NoDriverError");
    if (!st->NoDriverError || PyModule_AddObjectRef(module, "NoDriverError", st->NoDriverError) < 0)
        return -1;
#define TYPE(field, spec, pyname)                                                                  \
    st->field = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);                     \
    if (!st->field || PyModule_AddObjectRef(module, pyname, (PyObject *)st->field) < 0)            \
        return -1;
    TYPE(CudaModuleType, bt_cudapy_handle_spec, "CudaModule")
    TYPE(CudaKernelType, bt_cudapy_kernel_spec, "CudaKernel")
    TYPE(CudaLaunchType, bt_cudapy_launch_spec, "CudaLaunch")
    TYPE(DeviceArrayType, bt_cudapy_devarray_spec, "DeviceArray")
    TYPE(CudaEventType, bt_cudapy_event_spec, "CudaEvent")
    TYPE(CudaGraphType, bt_cudapy_graph_spec, "CudaGraph")
#undef TYPE
    if (!(st->captures = PyDict_New()))
        return -1;
    if (PyModule_AddIntConstant(module, "CUDA_STREAM_LEGACY", BT_CUDA_STREAM_LEGACY) < 0 ||
        PyModule_AddIntConstant(module, "CUDA_STREAM_PER_THREAD", BT_CUDA_STREAM_PER_THREAD) < 0)
        return -1;
    advice = bt_cudapy_advice_names();
    if (!advice || PyModule_AddObjectRef(module, "CUDA_MEM_ADVICE", advice) < 0) {
        Py_XDECREF(advice);
        return -1;
    }
    Py_DECREF(advice);
    return PyModule_AddFunctions(module, cuda_methods);
}

int bt_cudapy_traverse(BtState *st, visitproc visit, void *arg)
{
    Py_VISIT(st->CudaError);
    Py_VISIT(st->NoDriverError);
    Py_VISIT(st->CudaModuleType);
    Py_VISIT(st->CudaKernelType);
    Py_VISIT(st->CudaLaunchType);
    Py_VISIT(st->DeviceArrayType);
    Py_VISIT(st->CudaEventType);
    Py_VISIT(st->CudaGraphType);
    Py_VISIT(st->captures);
    return 0;
}

void bt_cudapy_clear(BtState *st)
{
    Py_CLEAR(st->CudaError);
    Py_CLEAR(st->NoDriverError);
    Py_CLEAR(st->CudaModuleType);
    Py_CLEAR(st->CudaKernelType);
    Py_CLEAR(st->CudaLaunchType);
    Py_CLEAR(st->DeviceArrayType);
    Py_CLEAR(st->CudaEventType);
    Py_CLEAR(st->CudaGraphType);
    Py_CLEAR(st->captures);
}
