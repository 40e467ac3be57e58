/* bt_cudapy_graph.c - bindthem.cuda.Graph: a stream's capture (`with stream.capture() as g`),
 * instantiated, replayed in order with the arrays it uses, freed once. */

#include "bt_cudapy_graph.h"

#include "bt_cudapy_array.h"

static const char *const mode_names[] = {"global", "thread_local", "relaxed"};

PyObject *bt_cudapy_capture(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", "mode", NULL};
    BtState *st = bt_state(module);
    PyObject *streamo;
    const char *mode = "thread_local";
    BtCudaGraph *g;
    uint64_t s = 0;
    int m;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s:capture", kwlist, &streamo, &mode) ||
        bt_cudapy_stream_arg(streamo, "capture", 0, &s) < 0)
        return NULL;
    for (m = 0; m < 3 && strcmp(mode, mode_names[m]) != 0; m++)
        ;
    if (m == 3) {
        PyErr_Format(PyExc_ValueError,
                     "capture(): mode='%s' is not a capture mode: 'thread_local' (the "
                     "default), 'global' or 'relaxed' (CUstreamCaptureMode)",
                     mode);
        return NULL;
    }
    if (s == 0 || s == BT_CUDA_STREAM_LEGACY) {
        PyErr_SetString(PyExc_ValueError,
                        "capture(): the legacy default stream cannot be captured (the driver "
                        "refuses it); capture a stream of your own (cuda.Stream.create()) or "
                        "the thread's cuda.PER_THREAD stream");
        return NULL;
    }
    g = PyObject_GC_New(BtCudaGraph, st->CudaGraphType);
    if (!g)
        return NULL;
    g->ctx = g->graph = g->exec = NULL;
    g->stream = s;
    g->stream_obj = Py_NewRef(streamo);
    g->mode = m;
    g->state = BT_GRAPH_NEW;
    g->id = 0;
    g->writes = PyList_New(0);
    g->reads = PyList_New(0);
    g->keep = PyList_New(0);
    PyObject_GC_Track(g);
    if (!g->writes || !g->reads || !g->keep)
        Py_CLEAR(g);
    return (PyObject *)g;
}

/* The graph's driver objects freed, its arrays and host memory let go: once. */
static void graph_free(BtCudaGraph *g)
{
    void *graph = g->graph, *exec = g->exec;

    g->graph = g->exec = NULL;
    g->state = BT_GRAPH_CLOSED;
    if (graph || exec) {
        Py_BEGIN_ALLOW_THREADS
        bt_cuda_graph_destroy(graph, exec);
        Py_END_ALLOW_THREADS
    }
    Py_CLEAR(g->writes);
    Py_CLEAR(g->reads);
    Py_CLEAR(g->keep);
}

static PyObject *capture_key(const BtCudaGraph *g) { return PyLong_FromUnsignedLongLong(g->id); }

static PyObject *graph_enter(BtCudaGraph *g, PyObject *unused)
{
    BtState *st = bt_state_from_type(Py_TYPE(g));
    PyObject *key = NULL;
    void *prev;
    int status = 0, rc;
    BtDiag e;

    bt_diag_init(&e);
    if (g->state != BT_GRAPH_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "Graph: a capture's `with` block runs once; call "
                                            "stream.capture() again for another graph");
        return NULL;
    }
    if (bt_cuda_stream_ctx(g->stream, &g->ctx, &e) < 0 || bt_cuda_enter(g->ctx, &prev, &e) < 0)
        return bt_raise_diag(st, &e);
    bt_cuda_capture_status(g->stream, &status, &g->id);
    rc = status != BT_CUDA_CAPTURE_NONE ? 1 : bt_cuda_capture_begin(g->ctx, g->stream, g->mode, &e);
    if (rc == 0)
        bt_cuda_capture_status(g->stream, &status, &g->id);
    bt_cuda_leave(g->ctx, prev);
    if (rc == 1) {
        PyErr_Format(PyExc_RuntimeError,
                     "capture(): stream %R is already capturing (a capture of bindthem's or of "
                     "another library's, not ended yet); end that capture first: captures do "
                     "not nest",
                     g->stream_obj);
        return NULL;
    }
    if (rc < 0)
        return bt_raise_diag(st, &e);
    /* launches and copies find this Graph by the capture's id */
    key = capture_key(g);
    if (!key || PyDict_SetItem(st->captures, key, (PyObject *)g) < 0) {
        Py_XDECREF(key);
        bt_cuda_capture_end(g->ctx, g->stream, &g->graph, &e); /* (what it made is freed) */
        graph_free(g);
        return NULL;
    }
    Py_DECREF(key);
    g->state = BT_GRAPH_CAPTURING;
    return Py_NewRef(g);
}

/* Ends the capture (a failure discards it, with e set), and instantiates. 0 or -1. */
static int end_capture(BtCudaGraph *g, int discard, BtDiag *e)
{
    BtState *st = bt_state_from_type(Py_TYPE(g));
    PyObject *key = capture_key(g);
    int rc;

    if (!key || PyDict_DelItem(st->captures, key) < 0)
        PyErr_Clear(); /* (its id came from the driver: it is there) */
    Py_XDECREF(key);
    rc = bt_cuda_capture_end(g->ctx, g->stream, &g->graph, e);
    if (rc == 0 && !discard)
        rc = bt_cuda_graph_instantiate(g->ctx, g->graph, &g->exec, e);
    if (rc < 0 || discard)
        graph_free(g);
    else
        g->state = BT_GRAPH_READY;
    return rc;
}

static PyObject *graph_exit(BtCudaGraph *g, PyObject *args)
{
    PyObject *type, *value, *tb;
    BtDiag e;

    if (!PyArg_UnpackTuple(args, "__exit__", 3, 3, &type, &value, &tb))
        return NULL;
    if (g->state != BT_GRAPH_CAPTURING)
        Py_RETURN_FALSE;
    bt_diag_init(&e);
    /* a block that raised: its capture is ended and dropped, its exception
     * goes on (the driver's capture error, if that is what it was) */
    if (end_capture(g, type != Py_None, &e) < 0 && type == Py_None)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(g)), &e);
    Py_RETURN_FALSE;
}

/* The replay stream waits for each array's pending work (a write also for
 * its pending reads), as a launch does. 0 or -1. */
static int wait_arrays(BtCudaGraph *g, uint64_t s)
{
    PyObject *lists[2] = {g->writes, g->reads};
    Py_ssize_t i;
    BtDiag e;
    int l;

    bt_diag_init(&e);
    for (l = 0; l < 2; l++)
        for (i = 0; i < PyList_GET_SIZE(lists[l]); i++)
            if (bt_cudapy_wait_for(PyList_GET_ITEM(lists[l], i), s, l == 0, &e) < 0) {
                bt_raise_diag(bt_state_from_type(Py_TYPE(g)), &e);
                return -1;
            }
    return 0;
}

static PyObject *graph_launch(BtCudaGraph *g, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *streamo = Py_None;
    uint64_t s = 0;
    Py_ssize_t i;
    BtDiag e;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:launch", kwlist, &streamo) ||
        bt_cudapy_stream_arg(streamo, "launch", 0, &s) < 0)
        return NULL;
    if (g->state != BT_GRAPH_READY) {
        PyErr_SetString(PyExc_RuntimeError,
                        g->state == BT_GRAPH_CLOSED
                            ? "Graph.launch(): the graph is closed (or its capture failed)"
                            : "Graph.launch(): the capture has not ended yet (launch after "
                              "the `with` block)");
        return NULL;
    }
    if (wait_arrays(g, s) < 0)
        return NULL;
    bt_diag_init(&e);
    if (bt_cuda_graph_launch(g->ctx, g->exec, s, &e) < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(g)), &e);
    /* the replay's writes and reads, recorded on its stream as a launch's are */
    for (i = 0; i < PyList_GET_SIZE(g->writes); i++)
        if (bt_cudapy_devarray_wrote(PyList_GET_ITEM(g->writes, i), s, streamo) < 0)
            return NULL;
    for (i = 0; i < PyList_GET_SIZE(g->reads); i++)
        if (bt_cudapy_devarray_read(PyList_GET_ITEM(g->reads, i), s, streamo) < 0)
            return NULL;
    Py_RETURN_NONE;
}

static PyObject *graph_close(BtCudaGraph *g, PyObject *unused)
{
    if (g->state == BT_GRAPH_CAPTURING) {
        PyErr_SetString(PyExc_RuntimeError,
                        "Graph.close(): the capture is still open (close after the `with` "
                        "block)");
        return NULL;
    }
    graph_free(g);
    Py_RETURN_NONE;
}

static PyObject *graph_repr(BtCudaGraph *g)
{
    static const char *const states[] = {"not begun", "capturing", "ready", "closed"};
    return PyUnicode_FromFormat("<bindthem.cuda.Graph of %R (%s), %s>", g->stream_obj,
                                mode_names[g->mode], states[g->state]);
}

static PyObject *graph_get_stream(BtCudaGraph *g, void *c)
{
    return Py_NewRef(g->stream_obj ? g->stream_obj : Py_None); /* (None after tp_clear) */
}
static PyObject *graph_get_mode(BtCudaGraph *g, void *c)
{
    return PyUnicode_FromString(mode_names[g->mode]);
}
static PyObject *graph_get_ready(BtCudaGraph *g, void *c)
{
    return PyBool_FromLong(g->state == BT_GRAPH_READY);
}

static PyObject *graph_get_arrays(BtCudaGraph *g, void *c)
{
    if (!g->writes)
        return Py_BuildValue("(()())");
    return Py_BuildValue("(NN)", PyList_AsTuple(g->writes), PyList_AsTuple(g->reads));
}

static PyGetSetDef graph_getset[] = {
    {"stream", (getter)graph_get_stream, NULL, "The captured stream.", NULL},
    {"mode", (getter)graph_get_mode, NULL, "The capture mode.", NULL},
    {"ready", (getter)graph_get_ready, NULL, "Captured and instantiated, not closed.", NULL},
    {"arrays", (getter)graph_get_arrays, NULL,
     "(written, read): the DeviceArrays the captured work writes and reads.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef graph_methods[] = {
    {"__enter__", (PyCFunction)graph_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)graph_exit, METH_VARARGS, NULL},
    {"launch", (PyCFunction)(void (*)(void))graph_launch, METH_VARARGS | METH_KEYWORDS,
     "launch($self, /, stream=None)\n--\n\nReplay the captured work on stream "
     "(cuGraphLaunch), after "
     "the pending work on the arrays it uses."},
    {"close", (PyCFunction)graph_close, METH_NOARGS,
     "close($self, /)\n--\n\nFree the graph now (cuGraphExecDestroy, cuGraphDestroy); "
     "again: nothing."},
    {NULL, NULL, 0, NULL},
};

static int graph_traverse(BtCudaGraph *g, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(g));
    Py_VISIT(g->stream_obj);
    Py_VISIT(g->writes);
    Py_VISIT(g->reads);
    Py_VISIT(g->keep);
    return 0;
}

/* A Graph in a reference cycle: closed (graph_free's lists cleared, the
 * state CLOSED, so that launch() and the getters still find it whole), its
 * stream let go. (A capturing one is held by the capture table: never here.) */
static int graph_clear(BtCudaGraph *g)
{
    graph_free(g);
    Py_CLEAR(g->stream_obj);
    return 0;
}

static void graph_dealloc(BtCudaGraph *g)
{
    PyTypeObject *tp = Py_TYPE(g);

    PyObject_GC_UnTrack(g);
    graph_free(g); /* (a capturing Graph is held by the capture table: never here) */
    Py_CLEAR(g->stream_obj);
    tp->tp_free(g);
    Py_DECREF(tp);
}

static PyType_Slot graph_slots[] = {
    {Py_tp_repr, graph_repr},
    {Py_tp_getset, graph_getset},
    {Py_tp_methods, graph_methods},
    {Py_tp_traverse, graph_traverse},
    {Py_tp_clear, graph_clear},
    {Py_tp_dealloc, graph_dealloc},
    {Py_tp_doc, "A stream's captured work as a CUDA graph: `with stream.capture() as g:` "
                "captures, g.launch(stream) replays, g.close() frees."},
    {0, NULL},
};

PyType_Spec bt_cudapy_graph_spec = {
    .name = "bindthem.cuda.Graph",
    .basicsize = sizeof(BtCudaGraph),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = graph_slots,
};
