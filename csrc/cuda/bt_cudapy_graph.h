/* bt_cudapy_graph.h - bindthem.cuda.Graph (bt_cudapy_graph.c) and what launches and copies do
 * during a capture (bt_cudapy_capture.c): what those two files and the callers of the hooks
 * share. */
#ifndef BT_CUDAPY_GRAPH_H
#define BT_CUDAPY_GRAPH_H

#include "bt_cudapy.h"

/* A capture of one stream (Stream.capture()), then its executable graph. */
typedef struct BtCudaGraph {
    PyObject_HEAD
    void *ctx;            /* the captured stream's context: where the graph is made and launched */
    void *graph, *exec;   /* CUgraph, CUgraphExec: NULL until made, and once freed */
    uint64_t stream;      /* the captured stream */
    PyObject *stream_obj; /* the stream as given (it keeps the CUstream alive) */
    int mode;             /* BT_CUDA_CAPTURE_* */
    int state;            /* BT_GRAPH_* */
    uint64_t id;          /* the capture sequence's id, while capturing */
    /* the DeviceArrays the captured work writes and reads (each once; an array
     * written is not in reads), and host memory its copies read or write */
    PyObject *writes, *reads, *keep;
} BtCudaGraph;

enum { BT_GRAPH_NEW, BT_GRAPH_CAPTURING, BT_GRAPH_READY, BT_GRAPH_CLOSED };

BT_HIDDEN extern PyType_Spec bt_cudapy_graph_spec;

/* _core.cuda_capture(stream, mode): a Graph whose `with` captures stream. New reference. */
BT_HIDDEN PyObject *bt_cudapy_capture(PyObject *module, PyObject *args, PyObject *kwargs);
/* Remembers that g's captured work writes (write set) or reads DeviceArray o. 0 or -1. */
BT_HIDDEN int bt_cudapy_graph_add(BtCudaGraph *g, PyObject *o, int write);
/* bindthem's Graph capturing as capture sequence `id`, borrowed, or NULL (another library's
 * capture, or none). */
BT_HIDDEN BtCudaGraph *bt_cudapy_capture_graph(BtState *st, uint64_t id);

/* ---- the hooks (bt_cudapy_capture.c): each asks the driver whether the stream captures ---- */

/* A use of DeviceArray o queued on `stream` (a write, else a read), before its
 * ordering state records it: 1 when the stream captures (the state is left as
 * it is; bindthem's Graph remembers the use), 0 when it does not (record it),
 * -1 with an exception set. */
BT_HIDDEN int bt_cudapy_capture_use(PyObject *o, uint64_t stream, int write);
/* Host memory `host` that a copy of DeviceArray o queued on `stream` reads or
 * writes: kept alive by bindthem's Graph when the stream captures into one
 * (its replays copy it again). 0 or -1. */
BT_HIDDEN int bt_cudapy_capture_keep(PyObject *o, uint64_t stream, PyObject *host);
/* The memory of a new array used on `stream`: bt_cuda_alloc_async, or, when the
 * stream captures, bt_cuda_alloc_uncaptured (*pooled 0). */
BT_HIDDEN int bt_cudapy_capture_alloc(int dev, size_t nbytes, uint64_t stream, uint64_t *ptr,
                                      int *pooled, BtDiag *e);
/* Before `waiter` waits for a's pending work (a's section held): 0 to wait as
 * usual (not capturing, nothing to wait for, or every producer in the same
 * capture), 1 to skip the waits (bindthem's own capture: its Graph waits when
 * launched), -1 with e set (another library's capture, and work outside it:
 * CUDA_ERROR_STREAM_CAPTURE_ISOLATION explained; nothing was called). */
struct BtDeviceArray;
BT_HIDDEN int bt_cudapy_capture_wait(struct BtDeviceArray *a, uint64_t waiter, int write,
                                     BtDiag *e);
/* bt_cuda_stream_wait(waiter, producer), refused (e set, nothing called) when
 * waiter captures and producer is outside its capture. */
BT_HIDDEN int bt_cudapy_capture_stream_wait(uint64_t waiter, uint64_t producer, BtDiag *e);

#endif
