/* bt_cudapy_capture.c - what bindthem's launches and copies do on a stream that captures:
 * bindthem's own capture (a Graph, bt_cudapy_graph.c) or another library's. */

#include "bt_cudapy_array.h"
#include "bt_cudapy_graph.h"

/* The capture status and sequence id of stream (0, 1, 2: of the current
 * context). A thread with no current context has no legacy or per-thread
 * stream that captures: NONE, with no context made current (this runs on
 * every launch and copy: one driver query). */
static void status_of(uint64_t stream, int *status, uint64_t *id)
{
    bt_cuda_capture_status(stream, status, id);
}

BtCudaGraph *bt_cudapy_capture_graph(BtState *st, uint64_t id)
{
    PyObject *key = id ? PyLong_FromUnsignedLongLong(id) : NULL, *g = NULL;

    if (key) {
        g = PyDict_GetItemWithError(st->captures, key); /* borrowed; the dict holds it */
        Py_DECREF(key);
    }
    PyErr_Clear();
    return (BtCudaGraph *)g;
}

/* Whether list holds o (by identity). */
static int holds(PyObject *list, PyObject *o)
{
    Py_ssize_t i;

    for (i = 0; i < PyList_GET_SIZE(list); i++)
        if (PyList_GET_ITEM(list, i) == o)
            return 1;
    return 0;
}

/* (here, not in bt_cudapy_graph.c: what a capture records; the Graph's
 * replays call the array files, which call this file) */
int bt_cudapy_graph_add(BtCudaGraph *g, PyObject *o, int write)
{
    int rc = 0;

    BT_FT_BEGIN(g);
    if (write && !holds(g->writes, o)) {
        rc = PyList_Append(g->writes, o);
        if (rc == 0 && holds(g->reads, o)) { /* the write's wait covers the read's */
            Py_ssize_t i;
            for (i = 0; i < PyList_GET_SIZE(g->reads); i++)
                if (PyList_GET_ITEM(g->reads, i) == o)
                    rc = PySequence_DelItem(g->reads, i);
        }
    } else if (!write && !holds(g->writes, o) && !holds(g->reads, o)) {
        rc = PyList_Append(g->reads, o);
    }
    BT_FT_END();
    return rc;
}

/* Whether stream (0: legacy) captures: 0 when not, else 1 with *g the
 * Graph of bindthem's capturing it (NULL: another library's capture), read
 * from DeviceArray o's module state. */
static int capturing(PyObject *o, uint64_t stream, BtCudaGraph **g)
{
    uint64_t id;
    int status;

    *g = NULL;
    status_of(stream ? stream : BT_CUDA_STREAM_LEGACY, &status, &id);
    if (status == BT_CUDA_CAPTURE_NONE)
        return 0;
    *g = bt_cudapy_capture_graph(bt_state_from_type(Py_TYPE(o)), id);
    return 1;
}

int bt_cudapy_capture_use(PyObject *o, uint64_t stream, int write)
{
    BtCudaGraph *g;

    if (!capturing(o, stream, &g))
        return 0;
    /* captured work has not run, nor is it queued: o's ordering state stays
     * what it was; bindthem's Graph remembers the use for its replays */
    return g && bt_cudapy_graph_add(g, o, write) < 0 ? -1 : 1;
}

int bt_cudapy_capture_keep(PyObject *o, uint64_t stream, PyObject *host)
{
    BtCudaGraph *g;

    return capturing(o, stream, &g) && g ? PyList_Append(g->keep, host) : 0;
}

int bt_cudapy_capture_alloc(int dev, size_t nbytes, uint64_t stream, uint64_t *ptr, int *pooled,
                            BtDiag *e)
{
    uint64_t id;
    int status;

    status_of(stream ? stream : BT_CUDA_STREAM_LEGACY, &status, &id);
    if (status == BT_CUDA_CAPTURE_NONE)
        return bt_cuda_alloc_async(dev, nbytes, stream, ptr, pooled, e);
    /* not a graph's allocation (one that each replay would make again):
     * memory of its own, made outside the capture, freed with the array */
    *pooled = 0;
    return bt_cuda_alloc_uncaptured(dev, nbytes, ptr, e);
}

/* Whether producer stream p is in the capture `id` too (a stream forked into it). */
static int in_capture(uint64_t p, uint64_t id)
{
    uint64_t pid;
    int status;

    if (p == BT_CUDA_STREAM_PER_THREAD) /* marked by an event recorded outside any capture */
        return 0;
    status_of(p, &status, &pid);
    return status != BT_CUDA_CAPTURE_NONE && pid == id;
}

static int isolation(BtDiag *e, const BtDeviceArray *a, uint64_t p, uint64_t waiter)
{
    return bt_diag_fail(
        e, BT_DIAG_CUDA, 905,
        "a device array (%zu bytes at 0x%llx) has work pending on stream 0x%llx, outside the "
        "capture that stream 0x%llx is in (another library's): waiting for it from the "
        "capture would cross the capture's boundary, which the driver refuses "
        "(CUDA_ERROR_STREAM_CAPTURE_ISOLATION) and which would invalidate the capture; "
        "finish that work before the capture begins (synchronize it, or write the array on "
        "the capturing stream), or capture with bindthem's Stream.capture(), whose replays "
        "wait for it",
        a->nbytes, (unsigned long long)a->ptr, (unsigned long long)p, (unsigned long long)waiter);
}

/* The stream of a's last write and pending reads (for a write) that a wait
 * from `waiter` would wait for: into out, their count returned. */
static int producers(const BtDeviceArray *a, uint64_t waiter, int write, uint64_t *out)
{
    int i, n = 0;

    if (a->stream && (a->stream != waiter || a->has_event))
        out[n++] = a->has_event ? BT_CUDA_STREAM_PER_THREAD : a->stream;
    for (i = 0; write && i < a->n_readers; i++)
        if (a->readers[i].stream != waiter || a->readers[i].stream == BT_CUDA_STREAM_PER_THREAD)
            out[n++] = a->readers[i].stream;
    return n;
}

/* A waiter outside any capture, producers p: refused when one of them captures now (an
 * event recorded there would be the capture's, and the waiter would join the capture). */
static int outside_waits(BtDiag *e, const BtDeviceArray *a, uint64_t waiter, const uint64_t *p,
                         int n)
{
    uint64_t id;
    int i, status;

    for (i = 0; i < n; i++) {
        if (p[i] == BT_CUDA_STREAM_PER_THREAD) /* an event recorded before: waitable */
            continue;
        status_of(p[i], &status, &id);
        if (status != BT_CUDA_CAPTURE_NONE)
            return bt_diag_fail(
                e, BT_DIAG_CUDA, 905,
                "a device array (%zu bytes at 0x%llx) has work pending on stream 0x%llx, "
                "which is capturing now: stream 0x%llx cannot wait for it (the wait would "
                "make that stream join the capture: CUDA_ERROR_STREAM_CAPTURE_ISOLATION or "
                "an unjoined capture); use the array on the capturing stream, or after the "
                "capture ends",
                a->nbytes, (unsigned long long)a->ptr, (unsigned long long)p[i],
                (unsigned long long)waiter);
    }
    return 0;
}

int bt_cudapy_capture_wait(BtDeviceArray *a, uint64_t waiter, int write, BtDiag *e)
{
    uint64_t p[BT_CUDA_MAX_READERS + 1], id;
    int i, n, status;

    waiter = waiter ? waiter : BT_CUDA_STREAM_LEGACY;
    n = producers(a, waiter, write, p);
    if (!n) /* nothing to wait for: no driver call, captured or not */
        return 0;
    status_of(waiter, &status, &id);
    if (status == BT_CUDA_CAPTURE_NONE)
        return outside_waits(e, a, waiter, p, n);
    /* nothing runs during a capture: bindthem's Graph waits for the
     * arrays' pending work when it is launched, each time */
    if (bt_cudapy_capture_graph(bt_state_from_type(Py_TYPE(a)), id))
        return 1;
    for (i = 0; i < n; i++)
        if (!in_capture(p[i], id))
            return isolation(e, a, p[i], waiter);
    return 0; /* every producer is in this capture: the waits join it, as the driver allows */
}

int bt_cudapy_capture_stream_wait(uint64_t waiter, uint64_t producer, BtDiag *e)
{
    uint64_t id;
    int status;

    waiter = waiter ? waiter : BT_CUDA_STREAM_LEGACY;
    producer = producer ? producer : BT_CUDA_STREAM_LEGACY;
    if (waiter != producer) {
        status_of(waiter, &status, &id);
        if (status != BT_CUDA_CAPTURE_NONE && !in_capture(producer, id))
            return bt_diag_fail(
                e, BT_DIAG_CUDA, 905,
                "an array's __cuda_array_interface__ names stream 0x%llx, outside the capture "
                "that the launch's stream 0x%llx is in: waiting for it from the capture would "
                "cross the capture's boundary (CUDA_ERROR_STREAM_CAPTURE_ISOLATION); make the "
                "producer's stream the capturing one (CuPy: use the capturing stream as the "
                "current stream), or finish its work before the capture begins",
                (unsigned long long)producer, (unsigned long long)waiter);
    }
    return bt_cuda_stream_wait(waiter, producer, e);
}
