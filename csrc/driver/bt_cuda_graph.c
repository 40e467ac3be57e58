/* bt_cuda_graph.c - stream capture and CUDA graphs: a capture begun and
 * ended in a context, a stream's capture status, a graph instantiated,
 * launched and destroyed; memory allocated outside any capture. */
#include "bt_cuda_impl.h"

enum {
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED_ = 901,
};

int bt_cuda_has_graphs(void)
{
    return bt_cuda_drv.cuStreamBeginCapture && bt_cuda_drv.cuStreamEndCapture &&
           bt_cuda_drv.cuGraphInstantiateWithFlags && bt_cuda_drv.cuGraphLaunch &&
           bt_cuda_drv.cuGraphExecDestroy && bt_cuda_drv.cuGraphDestroy &&
           bt_cuda_drv.cuThreadExchangeStreamCaptureMode;
}

/* BT_DIAG_UNSUPPORTED unless the driver has every graph entry point. */
static int need_graphs(BtDiag *e)
{
    if (FORKED())
        return bt_cuda_fork_fail(e);
    if (!bt_cuda_has_graphs())
        return bt_cuda_unsupported(e, "stream capture and CUDA graphs", "11.4");
    return 0;
}

void bt_cuda_capture_status(uint64_t stream, int *status, uint64_t *id)
{
    BtCUstreamCaptureStatus s = 0;
    uint64_t i = 0;
    BtCUresult r = CUDA_ERROR_NOT_FOUND_;
    BtCUstream h = (BtCUstream)(uintptr_t)stream;

    *status = BT_CUDA_CAPTURE_NONE;
    *id = 0;
    if (!LIVE())
        return;
    if (bt_cuda_drv.cuStreamGetCaptureInfo)
        r = bt_cuda_drv.cuStreamGetCaptureInfo(h, &s, &i, NULL, NULL, NULL);
    else if (bt_cuda_drv.cuStreamIsCapturing)
        r = bt_cuda_drv.cuStreamIsCapturing(h, &s);
    if (r != CUDA_SUCCESS_)
        return;
    *status = s;
    *id = s == BT_CUDA_CAPTURE_NONE ? 0 : i;
}

int bt_cuda_capture_begin(void *ctx, uint64_t stream, int mode, BtDiag *e)
{
    static const char *const modes[] = {"global", "thread_local", "relaxed"};
    void *prev;
    BtCUresult r;

    if (need_graphs(e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuStreamBeginCapture((BtCUstream)(uintptr_t)stream, mode);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuStreamBeginCapture_v2(stream 0x%llx, mode=%s)",
                            (unsigned long long)stream, mode >= 0 && mode <= 2 ? modes[mode] : "?");
    return 0;
}

int bt_cuda_capture_end(void *ctx, uint64_t stream, void **graph, BtDiag *e)
{
    BtCUgraph g = NULL;
    void *prev;
    BtCUresult r;

    *graph = NULL;
    if (need_graphs(e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuStreamEndCapture((BtCUstream)(uintptr_t)stream, &g);
    bt_cuda_leave(ctx, prev);
    if (r == CUDA_SUCCESS_ && !g) /* (no driver does this, but nothing is left to free) */
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED_;
    if (r != CUDA_SUCCESS_) {
        if (g && bt_cuda_drv.cuGraphDestroy)
            bt_cuda_drv.cuGraphDestroy(g);
        return bt_cuda_fail(e, r,
                            "cuStreamEndCapture(stream 0x%llx) (an operation the capture "
                            "refused invalidated it; the capture is ended, nothing was "
                            "recorded)",
                            (unsigned long long)stream);
    }
    *graph = g;
    return 0;
}

int bt_cuda_graph_instantiate(void *ctx, void *graph, void **exec, BtDiag *e)
{
    BtCUgraphExec x = NULL;
    void *prev;
    BtCUresult r;

    *exec = NULL;
    if (need_graphs(e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuGraphInstantiateWithFlags(&x, graph, 0);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuGraphInstantiateWithFlags");
    *exec = x;
    return 0;
}

int bt_cuda_graph_launch(void *ctx, void *exec, uint64_t stream, BtDiag *e)
{
    void *prev;
    BtCUresult r;

    if (need_graphs(e) < 0)
        return -1;
    if (STICKY())
        return bt_cuda_sticky_fail(e, "cuGraphLaunch");
    if (bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuGraphLaunch(exec, (BtCUstream)(uintptr_t)stream);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuGraphLaunch(stream 0x%llx)", (unsigned long long)stream);
    return 0;
}

void bt_cuda_graph_destroy(void *graph, void *exec)
{
    /* neither waits: a graph launch still running completes first */
    if (!LIVE() || !bt_cuda_has_graphs())
        return;
    if (exec)
        bt_cuda_drv.cuGraphExecDestroy(exec);
    if (graph)
        bt_cuda_drv.cuGraphDestroy(graph);
}

int bt_cuda_alloc_uncaptured(int dev, size_t nbytes, uint64_t *ptr, BtDiag *e)
{
    BtCUstreamCaptureMode mode = BT_CUDA_CAPTURE_RELAXED;
    BtCUresult r;
    int rc;

    *ptr = 0;
    if (need_graphs(e) < 0)
        return -1;
    r = bt_cuda_drv.cuThreadExchangeStreamCaptureMode(&mode);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuThreadExchangeStreamCaptureMode(relaxed)");
    rc = bt_cuda_alloc(dev, nbytes, ptr, e);
    bt_cuda_drv.cuThreadExchangeStreamCaptureMode(&mode); /* the thread's own mode back */
    return rc;
}
