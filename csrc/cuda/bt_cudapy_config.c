/* bt_cudapy_config.c - a launch's configuration: grid, block, shared memory, stream, attributes. */

#include "bt_cudapy_kernel_impl.h"

#include <limits.h>
#include <string.h>

/* The configuration items, in bracket order (the first 4), and the launch
 * attributes, keywords only; each is a keyword. */
const char *const bt_cudapy_cfg_names[BT_CUDAPY_N_CFG] = {
    "grid", "block", "shared_mem", "stream", "cluster", "cooperative", "priority"};

/* grid or block: an int or a tuple/list of 1 to 3 ints, each >= 1. */
int bt_cudapy_config_dims(PyObject *o, const char *what, const char *kname, unsigned out[3])
{
    static const unsigned long long gmax[3] = {2147483647ULL, 65535, 65535};
    static const unsigned long long bmax[3] = {1024, 1024, 64};
    const unsigned long long *lim = what[0] == 'g' ? gmax : bmax;
    PyObject *items[3] = {NULL, NULL, NULL};
    Py_ssize_t n, i;

    out[0] = out[1] = out[2] = 1;
    if (PyTuple_Check(o) || PyList_Check(o)) {
        n = PySequence_Fast_GET_SIZE(o);
        if (n < 1 || n > 3)
            return bt_cudapy_value_error(kname, 1, "%s=%R has %zd dimensions; give 1 to 3", what, o,
                                         n);
        for (i = 0; i < n; i++)
            items[i] = PySequence_Fast_GET_ITEM(o, i);
    } else {
        n = 1;
        items[0] = o;
    }
    for (i = 0; i < n; i++) {
        unsigned long long v;
        int overflow = 0;
        long long s;
        PyObject *x = items[i];
        if (PyBool_Check(x) || !PyIndex_Check(x))
            return bt_cudapy_value_error(kname, 1,
                                         "%s must be an int or a tuple of 1 to 3 ints, not %.100s "
                                         "(%R)%s",
                                         what, Py_TYPE(x)->tp_name, x,
                                         PyFloat_Check(x) ? "; round up with (n + b - 1) // b"
                                                          : "");
        x = PyNumber_Index(x);
        if (!x)
            return -1;
        s = PyLong_AsLongLongAndOverflow(x, &overflow);
        Py_DECREF(x);
        if (s == -1 && PyErr_Occurred())
            return -1;
        if (overflow || s < 1 || (unsigned long long)s > lim[i]) {
            if (!overflow && s < 1)
                return bt_cudapy_value_error(kname, 1, "%s=%R: every dimension must be at least 1",
                                             what, o);
            return bt_cudapy_value_error(kname, 1, "%s=%R: dimension %c may be at most %llu", what,
                                         o, "xyz"[i], lim[i]);
        }
        v = (unsigned long long)s;
        out[i] = (unsigned)v;
    }
    if (what[0] == 'b' && (unsigned long long)out[0] * out[1] * out[2] > 1024)
        return bt_cudapy_value_error(kname, 1,
                                     "block=%R has %llu threads; a block holds at most 1024", o,
                                     (unsigned long long)out[0] * out[1] * out[2]);
    return 0;
}

/* shared_mem: any integer (int, numpy.int64, anything with __index__). */
int bt_cudapy_config_shared(PyObject *o, const char *kname, unsigned *out)
{
    long long v;
    int overflow = 0;

    if (PyBool_Check(o) || !PyIndex_Check(o))
        return bt_cudapy_value_error(kname, 1,
                                     "shared_mem must be an int (bytes of dynamic shared memory), "
                                     "not %.100s",
                                     Py_TYPE(o)->tp_name);
    o = PyNumber_Index(o);
    if (!o)
        return -1;
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(o);
        return -1;
    }
    if (overflow || v < 0 || v > UINT_MAX) {
        bt_cudapy_value_error(kname, 1, "shared_mem=%R is out of range", o);
        Py_DECREF(o);
        return -1;
    }
    Py_DECREF(o);
    *out = (unsigned)v;
    return 0;
}

/* The launch attributes (each NULL or None: not asked for): cluster= (an
 * int or 1 to 3 ints dividing the grid), cooperative= (a bool), priority=
 * (an int); any of them makes the launch a cuLaunchKernelEx. */
int bt_cudapy_config_attrs(PyObject *cluster, PyObject *coop, PyObject *prio, const char *kname,
                           BtLaunchConfig *cfg)
{
    BtCudaLaunchAttrs *a = &cfg->attrs;
    int i, overflow = 0;
    long v;

    if (cluster && cluster != Py_None) {
        if (bt_cudapy_config_dims(cluster, "cluster", kname, a->cluster) < 0)
            return -1;
        for (i = 0; i < 3; i++)
            if (cfg->grid[i] % a->cluster[i])
                return bt_cudapy_value_error(kname, 1,
                                             "cluster=%R does not divide grid=(%u, %u, %u): "
                                             "each grid dimension must be a multiple of the "
                                             "cluster's",
                                             cluster, cfg->grid[0], cfg->grid[1], cfg->grid[2]);
        cfg->ex = 1;
    }
    if (coop && coop != Py_None) {
        if (!PyBool_Check(coop))
            return bt_cudapy_value_error(kname, 1, "cooperative must be True or False, not %.100s",
                                         Py_TYPE(coop)->tp_name);
        a->cooperative = coop == Py_True;
        cfg->ex |= a->cooperative;
    }
    if (prio && prio != Py_None) {
        if (PyBool_Check(prio) || !PyLong_Check(prio))
            return bt_cudapy_value_error(kname, 1, "priority must be an int, not %.100s",
                                         Py_TYPE(prio)->tp_name);
        v = PyLong_AsLongAndOverflow(prio, &overflow);
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (overflow || v < INT_MIN || v > INT_MAX)
            return bt_cudapy_value_error(kname, 1, "priority=%R is out of range", prio);
        a->has_priority = 1;
        a->priority = (int)v;
        cfg->ex = 1;
    }
    return 0;
}

/* grid, block required; shared, stream optional (NULL). */
int bt_cudapy_config_parse(PyObject *grid, PyObject *block, PyObject *shared, PyObject *stream,
                           const char *kname, BtLaunchConfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    if (bt_cudapy_config_dims(grid, "grid", kname, cfg->grid) < 0 ||
        bt_cudapy_config_dims(block, "block", kname, cfg->block) < 0)
        return -1;
    if (shared && bt_cudapy_config_shared(shared, kname, &cfg->shared) < 0)
        return -1;
    if (stream && bt_cudapy_stream_arg(stream, kname, 1, &cfg->stream) < 0)
        return -1;
    cfg->stream_obj = stream;
    return 0;
}
