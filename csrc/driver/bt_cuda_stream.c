/* bt_cuda_stream.c - ordering work: streams (made, destroyed, waited for,
 * their context), events (made, recorded, queried, waited for, timed),
 * one stream waiting for another, in a given device's context, and a
 * thread's per-thread streams drained before it exits. */
#include "bt_cuda_impl.h"

int bt_cuda_stream_sync(uint64_t stream, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuStreamSynchronize((BtCUstream)(uintptr_t)stream);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuStreamSynchronize(0x%llx)", (unsigned long long)stream);
    return 0;
}

void bt_cuda_ptds_drain(void)
{
    BtCUcontext cur = NULL, c;
    int dev, on_primary = 0;

    if (!LIVE() || bt_cuda_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS_)
        return;
    for (dev = 0; dev < BT_CUDA_MAX_DEVICES; dev++) {
        c = __atomic_load_n(&bt_cuda_drv.primary[dev], __ATOMIC_ACQUIRE);
        if (!c || bt_cuda_drv.cuCtxSetCurrent(c) != CUDA_SUCCESS_)
            continue;
        on_primary |= c == cur;
        bt_cuda_drv.cuStreamSynchronize((BtCUstream)(uintptr_t)BT_CUDA_STREAM_PER_THREAD);
    }
    if (cur && bt_cuda_drv.cuCtxSetCurrent(cur) == CUDA_SUCCESS_ && !on_primary)
        bt_cuda_drv.cuStreamSynchronize((BtCUstream)(uintptr_t)BT_CUDA_STREAM_PER_THREAD);
}

int bt_cuda_event_create(int timing, void **ev, BtDiag *e)
{
    BtCUresult r;

    *ev = NULL;
    if (bt_cuda_some_ctx(e) < 0)
        return -1;
    r = bt_cuda_drv.cuEventCreate((BtCUevent *)ev, timing ? 0 : CU_EVENT_DISABLE_TIMING_);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuEventCreate");
    return 0;
}

void bt_cuda_event_destroy(void *ev)
{
    if (LIVE() && ev)
        bt_cuda_drv.cuEventDestroy(ev);
}

int bt_cuda_event_record(void *ev, uint64_t stream, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuEventRecord(ev, (BtCUstream)(uintptr_t)stream);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuEventRecord(stream 0x%llx)", (unsigned long long)stream);
    return 0;
}

int bt_cuda_event_sync(void *ev, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuEventSynchronize(ev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuEventSynchronize");
    return 0;
}

int bt_cuda_event_query(void *ev, int *done, BtDiag *e)
{
    BtCUresult r;

    *done = 0;
    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuEventQuery(ev);
    *done = r == CUDA_SUCCESS_;
    if (r != CUDA_SUCCESS_ && r != CUDA_ERROR_NOT_READY_)
        return bt_cuda_fail(e, r, "cuEventQuery");
    return 0;
}

int bt_cuda_event_elapsed(void *start, void *end, float *ms, BtDiag *e)
{
    BtCUresult r = bt_cuda_drv.cuEventElapsedTime
                       ? bt_cuda_drv.cuEventElapsedTime(ms, start, end)
                       : bt_cuda_drv.cuEventElapsedTime_v1(ms, start, end);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuEventElapsedTime");
    return 0;
}

int bt_cuda_stream_wait_event(uint64_t stream, void *ev, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuStreamWaitEvent((BtCUstream)(uintptr_t)stream, ev, 0);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuStreamWaitEvent(stream 0x%llx)", (unsigned long long)stream);
    return 0;
}

int bt_cuda_stream_wait(uint64_t waiter, uint64_t producer, BtDiag *e)
{
    void *ev = NULL;
    int rc;

    if ((waiter ? waiter : BT_CUDA_STREAM_LEGACY) == (producer ? producer : BT_CUDA_STREAM_LEGACY))
        return 0;
    if (bt_cuda_event_create(0, &ev, e) < 0)
        return -1;
    /* destroying an event a wait is queued on is allowed: the driver frees
     * it once the wait is done */
    rc = bt_cuda_event_record(ev, producer, e) < 0 || bt_cuda_stream_wait_event(waiter, ev, e) < 0
             ? -1
             : 0;
    bt_cuda_drv.cuEventDestroy(ev);
    return rc;
}

int bt_cuda_stream_create(int dev, int non_blocking, uint64_t *stream, BtDiag *e)
{
    BtCUstream s = NULL;
    void *ctx, *prev;
    BtCUresult r;

    *stream = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuStreamCreate(&s, non_blocking ? 1u : 0u); /* CU_STREAM_NON_BLOCKING */
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuStreamCreate");
    *stream = (uint64_t)(uintptr_t)s;
    return 0;
}

void bt_cuda_stream_destroy(uint64_t stream)
{
    if (LIVE() && stream > BT_CUDA_STREAM_PER_THREAD)
        bt_cuda_drv.cuStreamDestroy((BtCUstream)(uintptr_t)stream);
}

int bt_cuda_stream_ctx(uint64_t stream, void **ctx, BtDiag *e)
{
    BtCUcontext c = NULL;
    BtCUresult r;

    *ctx = NULL;
    if (stream <= BT_CUDA_STREAM_PER_THREAD && bt_cuda_some_ctx(e) < 0)
        return -1;
    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuStreamGetCtx((BtCUstream)(uintptr_t)stream, &c);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuStreamGetCtx(0x%llx)", (unsigned long long)stream);
    *ctx = c;
    return 0;
}

int bt_cuda_event_create_in(void *ctx, int timing, void **ev, BtDiag *e)
{
    void *prev;
    BtCUresult r;

    *ev = NULL;
    if (bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuEventCreate((BtCUevent *)ev, timing ? 0 : CU_EVENT_DISABLE_TIMING_);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuEventCreate");
    return 0;
}

int bt_cuda_record_in(int dev, void **ev, uint64_t stream, BtDiag *e)
{
    void *ctx, *prev;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0)
        return -1;
    if (!*ev && bt_cuda_event_create_in(ctx, 0, ev, e) < 0)
        return -1;
    if (bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    rc = bt_cuda_event_record(*ev, stream, e);
    bt_cuda_leave(ctx, prev);
    return rc;
}

int bt_cuda_wait_in(int dev, uint64_t waiter, uint64_t producer, void *ev, BtDiag *e)
{
    void *ctx, *prev;
    int rc;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    rc = ev ? bt_cuda_stream_wait_event(waiter, ev, e) : bt_cuda_stream_wait(waiter, producer, e);
    bt_cuda_leave(ctx, prev);
    return rc;
}
