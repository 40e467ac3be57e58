/* bt_cuda_ctx.c - contexts: each device's primary context, retained once;
 * a context entered and the thread's own given back; the current context
 * and device; cuCtxSynchronize. */
#include "bt_cuda_impl.h"

/* Retains device dev's primary context into bt_cuda_drv.primary[dev] (`once` held). */
static int retain_primary(int dev, BtDiag *e)
{
    BtCUcontext c = NULL;
    BtCUdevice d;
    BtCUresult r;
    int n;

    if (bt_cuda_drv.primary[dev])
        return 0;
    if (bt_cuda_device_count(&n, e) < 0)
        return -1;
    if (dev >= n)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "there is no CUDA device %d (%d device%s)", dev, n,
                            n == 1 ? "" : "s");
    r = bt_cuda_drv.cuDeviceGet(&d, dev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDeviceGet(%d)", dev);
    r = bt_cuda_drv.cuDevicePrimaryCtxRetain(&c, d);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDevicePrimaryCtxRetain(device %d)", dev);
    __atomic_store_n(&bt_cuda_drv.primary[dev], c, __ATOMIC_RELEASE);
    return 0;
}

static int primary(int dev, BtCUcontext *ctx, BtDiag *e)
{
    int rc = 0;

    if (bt_cuda_init(e) < 0)
        return -1;
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "device %d is out of range", dev);
    if (!__atomic_load_n(&bt_cuda_drv.primary[dev], __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&bt_cuda_once);
        rc = retain_primary(dev, e);
        pthread_mutex_unlock(&bt_cuda_once);
    }
    *ctx = bt_cuda_drv.primary[dev];
    return rc;
}

int bt_cuda_use_device(int dev, BtDiag *e)
{
    BtCUcontext want = NULL;
    void *prev;

    if (primary(dev, &want, e) < 0)
        return -1;
    return bt_cuda_enter(want, &prev, e); /* left current: no leave */
}

int bt_cuda_primary_ctx(int dev, void **ctx, BtDiag *e)
{
    BtCUcontext c = NULL;

    *ctx = NULL;
    if (primary(dev, &c, e) < 0)
        return -1;
    *ctx = c;
    return 0;
}

int bt_cuda_enter(void *ctx, void **prev, BtDiag *e)
{
    BtCUcontext cur = NULL;
    BtCUresult r;

    *prev = NULL;
    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuCtxGetCurrent");
    *prev = cur;
    if (cur == ctx)
        return 0;
    r = bt_cuda_drv.cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuCtxSetCurrent");
    return 0;
}

void bt_cuda_leave(void *ctx, void *prev)
{
    /* a thread that had no context keeps the one it was given (as CuPy and
     * numba leave it); one that had its own gets it back */
    if (prev && prev != ctx)
        bt_cuda_drv.cuCtxSetCurrent(prev);
}

int bt_cuda_current_ctx(void **ctx, BtDiag *e)
{
    BtCUcontext cur = NULL;
    BtCUresult r;

    *ctx = NULL;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = bt_cuda_drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuCtxGetCurrent");
    *ctx = cur;
    return 0;
}

int bt_cuda_some_ctx(BtDiag *e)
{
    void *cur;

    if (bt_cuda_current_ctx(&cur, e) < 0)
        return -1;
    return cur ? 0 : bt_cuda_use_device(0, e);
}

int bt_cuda_current_device(int *dev, BtDiag *e)
{
    void *cur;
    BtCUdevice d = 0;
    BtCUresult r;

    *dev = 0;
    if (bt_cuda_current_ctx(&cur, e) < 0)
        return -1;
    if (!cur)
        return 0;
    r = bt_cuda_drv.cuCtxGetDevice(&d);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuCtxGetDevice");
    *dev = d;
    return 0;
}

int bt_cuda_sync(BtDiag *e)
{
    BtCUresult r;

    if (bt_cuda_some_ctx(e) < 0)
        return -1;
    r = bt_cuda_drv.cuCtxSynchronize();
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuCtxSynchronize");
    return 0;
}
