/* bt_cudapy_event.c - bindthem.cuda.Event: cuEvent record, wait, query, synchronize, timing. */
#include "bt_cudapy.h"

typedef struct CudaEvent {
    PyObject_HEAD
    void *ev;     /* CUevent */
    void *ctx;    /* the context ev was made in */
    int timing;   /* created without CU_EVENT_DISABLE_TIMING */
    int recorded; /* record() was called */
} CudaEvent;

static PyObject *event_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"timing", NULL};
    BtState *st = bt_state_from_type(tp);
    CudaEvent *self;
    int timing = 1;
    BtDiag e;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:Event", kwlist, &timing))
        return NULL;
    self = (CudaEvent *)tp->tp_alloc(tp, 0);
    if (!self)
        return NULL;
    self->timing = timing;
    bt_diag_init(&e);
    if (bt_cuda_event_create(timing, &self->ev, &e) < 0 ||
        bt_cuda_current_ctx(&self->ctx, &e) < 0) {
        Py_DECREF(self);
        return bt_raise_diag(st, &e);
    }
    return (PyObject *)self;
}

static void event_dealloc(CudaEvent *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    bt_cuda_event_destroy(self->ev);
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* record(stream=None) and wait(stream=None): the stream argument. */
static int stream_param(PyObject *args, PyObject *kwargs, const char *fmt, const char *who,
                        uint64_t *stream)
{
    static char *kwlist[] = {"stream", NULL};
    PyObject *so = Py_None;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, fmt, kwlist, &so))
        return -1;
    return bt_cudapy_stream_arg(so, who, 0, stream);
}

static PyObject *event_record(CudaEvent *self, PyObject *args, PyObject *kwargs)
{
    uint64_t stream;
    BtDiag e;

    void *ctx, *ev;

    if (stream_param(args, kwargs, "|O:record", "Event.record", &stream) < 0)
        return NULL;
    bt_diag_init(&e);
    /* an event is recorded only on a stream of its own context: one on
     * another device's stream is made anew there (a record replaces the
     * previous one; waits already queued on the old event stay valid) */
    if (bt_cuda_stream_ctx(stream, &ctx, &e) < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
    if (ctx != self->ctx) {
        if (bt_cuda_event_create_in(ctx, self->timing, &ev, &e) < 0)
            return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
        bt_cuda_event_destroy(self->ev);
        self->ev = ev;
        self->ctx = ctx;
    }
    if (bt_cuda_event_record(self->ev, stream, &e) < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
    self->recorded = 1;
    return Py_NewRef(self);
}

static PyObject *event_wait(CudaEvent *self, PyObject *args, PyObject *kwargs)
{
    uint64_t stream;
    BtDiag e;

    if (stream_param(args, kwargs, "|O:wait", "Event.wait", &stream) < 0)
        return NULL;
    bt_diag_init(&e);
    if (bt_cuda_stream_wait_event(stream, self->ev, &e) < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
    Py_RETURN_NONE;
}

static PyObject *event_synchronize(CudaEvent *self, PyObject *unused)
{
    BtDiag e;
    int rc;

    bt_diag_init(&e);
    Py_BEGIN_ALLOW_THREADS
    rc = bt_cuda_event_sync(self->ev, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
    Py_RETURN_NONE;
}

static PyObject *event_query(CudaEvent *self, PyObject *unused)
{
    BtDiag e;
    int done;

    bt_diag_init(&e);
    if (bt_cuda_event_query(self->ev, &done, &e) < 0)
        return bt_raise_diag(bt_state_from_type(Py_TYPE(self)), &e);
    return PyBool_FromLong(done);
}

static PyObject *event_elapsed_time(CudaEvent *self, PyObject *end)
{
    BtState *st = bt_state_from_type(Py_TYPE(self));
    CudaEvent *other = (CudaEvent *)end;
    float ms = 0;
    BtDiag e;

    if (!PyObject_TypeCheck(end, Py_TYPE(self))) {
        PyErr_Format(PyExc_TypeError, "Event.elapsed_time(end): end must be an Event, not %.100s",
                     Py_TYPE(end)->tp_name);
        return NULL;
    }
    if (!self->timing || !other->timing) {
        PyErr_SetString(PyExc_ValueError, "Event.elapsed_time(): both events need timing "
                                          "(Event(timing=True), the default)");
        return NULL;
    }
    if (!self->recorded || !other->recorded) {
        PyErr_SetString(PyExc_ValueError, "Event.elapsed_time(): record both events first "
                                          "(start.record(stream), end.record(stream))");
        return NULL;
    }
    bt_diag_init(&e);
    if (bt_cuda_event_elapsed(self->ev, other->ev, &ms, &e) < 0)
        return bt_raise_diag(st, &e);
    return PyFloat_FromDouble(ms);
}

static PyObject *event_get_handle(CudaEvent *self, void *c) { return PyLong_FromVoidPtr(self->ev); }

static PyMethodDef event_methods[] = {
    {"record", (PyCFunction)(void (*)(void))event_record, METH_VARARGS | METH_KEYWORDS,
     "record($self, /, stream=None)\n--\n\nRecord the event on `stream` (None: the legacy "
     "stream); returns the event."},
    {"wait", (PyCFunction)(void (*)(void))event_wait, METH_VARARGS | METH_KEYWORDS,
     "wait($self, /, stream=None)\n--\n\nMake work queued on `stream` after this wait for the "
     "event (cuStreamWaitEvent); returns at once."},
    {"synchronize", (PyCFunction)event_synchronize, METH_NOARGS,
     "synchronize($self, /)\n--\n\nBlock (GIL released) until the work before the record is "
     "done."},
    {"query", (PyCFunction)event_query, METH_NOARGS,
     "query($self, /)\n--\n\nWhether the work before the record is done (True when never "
     "recorded)."},
    {"elapsed_time", (PyCFunction)event_elapsed_time, METH_O,
     "elapsed_time($self, end, /)\n--\n\nMilliseconds from this event to `end`, both recorded "
     "and complete."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef event_getset[] = {
    {"handle", (getter)event_get_handle, NULL, "The CUevent value.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot event_slots[] = {
    {Py_tp_new, event_new},
    {Py_tp_dealloc, event_dealloc},
    {Py_tp_methods, event_methods},
    {Py_tp_getset, event_getset},
    {Py_tp_doc, "Event(*, timing=True)\n--\n\nA CUDA event, in the current context (device 0's "
                "primary one when none is current), moved to a stream's context when recorded "
                "on a stream of another one: record it on a stream, wait for it, time "
                "the work between two of them."},
    {0, NULL},
};

PyType_Spec bt_cudapy_event_spec = {
    .name = "bindthem.cuda.Event",
    .basicsize = sizeof(CudaEvent),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = event_slots,
};
