/* bt_cudapy_launch.c - bindthem.cuda.Launch: kernel[grid, block], a kernel and its config. */

#include "bt_cudapy_kernel_impl.h"

static PyObject *launch_call(PyObject *self, PyObject *args, PyObject *kwargs)
{
    BtCudaLaunch *l = (BtCudaLaunch *)self;
    PyObject *kwnames = NULL, *stack[BT_MAX_PARAMS * 2], *r;
    BtLaunchConfig cfg = l->cfg;
    Py_ssize_t nargs = PyTuple_GET_SIZE(args), nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0, i;
    Py_ssize_t pos = 0;
    PyObject *key, *value;

    if (nargs + nkw > BT_MAX_PARAMS * 2) {
        PyErr_SetString(PyExc_TypeError, "too many arguments");
        return NULL;
    }
    for (i = 0; i < nargs; i++)
        stack[i] = PyTuple_GET_ITEM(args, i);
    if (nkw) {
        kwnames = PyTuple_New(nkw);
        if (!kwnames)
            return NULL;
        for (i = 0; PyDict_Next(kwargs, &pos, &key, &value); i++) {
            PyTuple_SET_ITEM(kwnames, i, Py_NewRef(key));
            stack[nargs + i] = value;
        }
    }
    r = bt_cudapy_kernel_launch(l->kernel, stack, nargs, kwnames, &cfg, l->given);
    Py_XDECREF(kwnames);
    return r;
}

static PyObject *launch_repr(BtCudaLaunch *l)
{
    const BtLaunchConfig *c = &l->cfg;
    return PyUnicode_FromFormat("<bindthem.cuda launch %U[(%u, %u, %u), (%u, %u, %u), %u, %R]>",
                                l->kernel->d.name, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                                c->block[1], c->block[2], c->shared, l->stream);
}

static PyObject *dims_tuple(const unsigned d[3])
{
    return Py_BuildValue("(III)", d[0], d[1], d[2]);
}
static PyObject *launch_get_grid(BtCudaLaunch *l, void *c) { return dims_tuple(l->cfg.grid); }
static PyObject *launch_get_block(BtCudaLaunch *l, void *c) { return dims_tuple(l->cfg.block); }
static PyObject *launch_get_shared_mem(BtCudaLaunch *l, void *c)
{
    return PyLong_FromUnsignedLong(l->cfg.shared);
}
static PyObject *launch_get_stream(BtCudaLaunch *l, void *c) { return Py_NewRef(l->stream); }
static PyObject *launch_get_kernel(BtCudaLaunch *l, void *c) { return Py_NewRef(l->kernel); }

static PyGetSetDef launch_getset[] = {
    {"grid", (getter)launch_get_grid, NULL, NULL, NULL},
    {"block", (getter)launch_get_block, NULL, NULL, NULL},
    {"shared_mem", (getter)launch_get_shared_mem, NULL, "Bytes of dynamic shared memory.", NULL},
    {"stream", (getter)launch_get_stream, NULL, NULL, NULL},
    {"kernel", (getter)launch_get_kernel, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static int launch_traverse(BtCudaLaunch *l, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(l));
    Py_VISIT(l->kernel);
    Py_VISIT(l->stream);
    return 0;
}

static int launch_clear(BtCudaLaunch *l)
{
    Py_CLEAR(l->kernel);
    Py_CLEAR(l->stream);
    return 0;
}

static void launch_dealloc(BtCudaLaunch *l)
{
    PyTypeObject *tp = Py_TYPE(l);
    PyObject_GC_UnTrack(l);
    launch_clear(l);
    tp->tp_free(l);
    Py_DECREF(tp);
}

static PyType_Slot launch_slots[] = {
    {Py_tp_call, launch_call},
    {Py_tp_repr, launch_repr},
    {Py_tp_getset, launch_getset},
    {Py_tp_traverse, launch_traverse},
    {Py_tp_clear, launch_clear},
    {Py_tp_dealloc, launch_dealloc},
    {0, NULL},
};

PyType_Spec bt_cudapy_launch_spec = {
    .name = "bindthem.cuda.Launch",
    .basicsize = sizeof(BtCudaLaunch),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = launch_slots,
};
