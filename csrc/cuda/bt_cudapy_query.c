/* bt_cudapy_query.c - what the driver says of a kernel: attributes, occupancy. */

#include "bt_cudapy_kernel_impl.h"

#include <string.h>

/* The overload a query names (None: the only one; an index; a signature
 * of k.overloads) and the device (None: the module's, else the current
 * one); 0 or -1 with an exception. */
static int query_target(BtCudaKernel *k, const char *who, PyObject *ov, PyObject *devo, int *o,
                        int *dev)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    Py_ssize_t i, n = PyTuple_GET_SIZE(k->d.overloads);
    BtDiag e;

    bt_diag_init(&e);
    *o = -1;
    if (!ov || ov == Py_None) {
        if (n != 1) {
            PyErr_Format(PyExc_TypeError,
                         "%U.%s(): the kernel has %zd overloads; name one with overload= (an "
                         "index, or one of %R)",
                         k->d.name, who, n, k->d.overloads);
            return -1;
        }
        *o = 0;
    } else if (PyLong_Check(ov) && !PyBool_Check(ov)) {
        i = PyLong_AsSsize_t(ov);
        if (i == -1 && PyErr_Occurred())
            return -1;
        if (i < 0 || i >= n) {
            PyErr_Format(PyExc_IndexError, "%U.%s(): overload=%zd is out of range (%zd overloads)",
                         k->d.name, who, i, n);
            return -1;
        }
        *o = (int)i;
    } else {
        for (i = 0; i < n && *o < 0; i++) {
            int eq = PyObject_RichCompareBool(ov, PyTuple_GET_ITEM(k->d.overloads, i), Py_EQ);
            if (eq < 0)
                return -1;
            if (eq)
                *o = (int)i;
        }
        if (*o < 0) {
            PyErr_Format(PyExc_ValueError, "%U.%s(): overload=%R is not one of %R", k->d.name, who,
                         ov, k->d.overloads);
            return -1;
        }
    }
    if (!devo || devo == Py_None) {
        if (k->module_device >= 0)
            *dev = k->module_device;
        else if (bt_cuda_current_device(dev, &e) < 0) {
            bt_raise_diag(st, &e);
            return -1;
        }
        return 0;
    }
    *dev = PyLong_Check(devo) && !PyBool_Check(devo) ? (int)PyLong_AsLong(devo) : -1;
    if (*dev == -1 && PyErr_Occurred())
        return -1;
    if (*dev < 0 || *dev >= BT_CUDA_MAX_DEVICES ||
        (k->module_device >= 0 && *dev != k->module_device)) {
        PyErr_Format(PyExc_ValueError, "%U.%s(): device=%R is not %s", k->d.name, who, devo,
                     k->module_device >= 0 ? "the device this module was loaded on"
                                           : "a device ordinal");
        return -1;
    }
    return 0;
}

/* kernel.attributes(overload=None, *, device=None): CU_FUNC_ATTRIBUTE_*. */
PyObject *bt_cudapy_kernel_attributes(BtCudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"overload", "device", NULL};
    static const struct {
        const char *name;
        int attr;
    } attrs[] = {
        {"max_threads_per_block", 0},
        {"shared_size_bytes", 1},
        {"const_size_bytes", 2},
        {"local_size_bytes", 3},
        {"num_regs", 4},
        {"ptx_version", 5},
        {"binary_version", 6},
        {"max_dynamic_shared_size_bytes", 8},
    };
    BtState *st = bt_state_from_type(Py_TYPE(k));
    PyObject *ov = Py_None, *devo = Py_None, *out, *v;
    void *ctx, *prev;
    int o, dev, val, rc = 0;
    size_t i;
    BtDiag e;

    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O$O:attributes", kwlist, &ov, &devo) ||
        query_target(k, "attributes", ov, devo, &o, &dev) < 0)
        return NULL;
    if (!(out = PyDict_New()))
        return NULL;
    if (bt_cuda_primary_ctx(dev, &ctx, &e) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        Py_DECREF(out);
        return bt_raise_diag(st, &e);
    }
    for (i = 0; i < sizeof attrs / sizeof attrs[0] && rc == 0; i++) {
        rc = bt_cuda_kernel_attr(k->kernels[o], dev, attrs[i].attr, &val, &e);
        v = rc == 0 ? PyLong_FromLong(val) : NULL;
        if (rc == 0 && (!v || PyDict_SetItemString(out, attrs[i].name, v) < 0))
            rc = -2;
        Py_XDECREF(v);
    }
    bt_cuda_leave(ctx, prev);
    if (rc < 0) {
        if (rc == -1)
            bt_raise_diag(st, &e);
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* The occupancy queries share their argument reading and context. */
static int occupancy(BtCudaKernel *k, const char *who, PyObject *ov, PyObject *devo, int block,
                     unsigned long long shared, int limit, int *a, int *b)
{
    BtState *st = bt_state_from_type(Py_TYPE(k));
    void *ctx, *prev;
    int o, dev, rc;
    BtDiag e;

    bt_diag_init(&e);
    if (query_target(k, who, ov, devo, &o, &dev) < 0)
        return -1;
    if (bt_cuda_primary_ctx(dev, &ctx, &e) < 0 || bt_cuda_enter(ctx, &prev, &e) < 0) {
        bt_raise_diag(st, &e);
        return -1;
    }
    rc = block ? bt_cuda_occupancy(k->kernels[o], block, (size_t)shared, a, &e)
               : bt_cuda_occupancy_block(k->kernels[o], (size_t)shared, limit, a, b, &e);
    bt_cuda_leave(ctx, prev);
    if (rc < 0)
        bt_raise_diag(st, &e);
    return rc;
}

/* kernel.max_active_blocks_per_sm(block, *, shared_mem=0, overload=None, device=None) */
PyObject *bt_cudapy_kernel_max_active(BtCudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"block", "shared_mem", "overload", "device", NULL};
    PyObject *blocko, *ov = Py_None, *devo = Py_None, *sho = NULL;
    unsigned dims[3], shared = 0;
    int n = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOO:max_active_blocks_per_sm", kwlist,
                                     &blocko, &sho, &ov, &devo) ||
        bt_cudapy_config_dims(blocko, "block", k->d.cname, dims) < 0 ||
        (sho && bt_cudapy_config_shared(sho, k->d.cname, &shared) < 0) ||
        occupancy(k, "max_active_blocks_per_sm", ov, devo, (int)(dims[0] * dims[1] * dims[2]),
                  shared, 0, &n, NULL) < 0)
        return NULL;
    return PyLong_FromLong(n);
}

/* kernel.max_potential_block_size(*, shared_mem=0, block_size_limit=0, overload=None,
 * device=None) -> (min_grid_size, block_size) */
PyObject *bt_cudapy_kernel_max_block(BtCudaKernel *k, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"shared_mem", "block_size_limit", "overload", "device", NULL};
    PyObject *ov = Py_None, *devo = Py_None, *sho = NULL;
    unsigned shared = 0;
    int limit = 0, grid = 0, block = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OiOO:max_potential_block_size", kwlist, &sho,
                                     &limit, &ov, &devo) ||
        (sho && bt_cudapy_config_shared(sho, k->d.cname, &shared) < 0))
        return NULL;
    if (limit < 0 || limit > 1024) {
        PyErr_Format(PyExc_ValueError,
                     "%U.max_potential_block_size(): block_size_limit=%d: give 0 (none) to 1024",
                     k->d.name, limit);
        return NULL;
    }
    if (occupancy(k, "max_potential_block_size", ov, devo, 0, shared, limit, &grid, &block) < 0)
        return NULL;
    return Py_BuildValue("(ii)", grid, block);
}
