/* bt_cuda_peer.c - peer access between devices' primary contexts; copies and waits across devices. */
#include "bt_cuda_impl.h"

enum {
    PEER_ACCESS_UNSUPPORTED = 217,     /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED */
    PEER_ACCESS_ALREADY_ENABLED = 704, /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */
    PEER_ACCESS_NOT_ENABLED = 705,     /* CUDA_ERROR_PEER_ACCESS_NOT_ENABLED */
};

/* enabled[dev][peer]: bindthem enabled access from dev's primary context to
 * peer's (read with no lock: relaxed atomics). */
static unsigned char enabled[BT_CUDA_MAX_DEVICES][BT_CUDA_MAX_DEVICES];

static int in_range(int dev, int peer, BtDiag *e)
{
    if (bt_cuda_init(e) < 0)
        return -1;
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES || peer < 0 || peer >= BT_CUDA_MAX_DEVICES)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "device %d or %d is out of range", dev, peer);
    if (!bt_cuda_drv.cuDeviceCanAccessPeer || !bt_cuda_drv.cuCtxEnablePeerAccess ||
        !bt_cuda_drv.cuCtxDisablePeerAccess)
        return bt_cuda_unsupported(e, "peer access (cuCtxEnablePeerAccess)", "4.0");
    return 0;
}

int bt_cuda_can_access_peer(int dev, int peer, int *yes, BtDiag *e)
{
    BtCUdevice d, p;
    BtCUresult r;
    int n;

    *yes = 0;
    if (bt_cuda_device_count(&n, e) < 0 || in_range(dev, peer, e) < 0)
        return -1;
    if (dev >= n || peer >= n)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "there is no CUDA device %d (%d device%s)",
                            dev >= n ? dev : peer, n, n == 1 ? "" : "s");
    if (dev == peer)
        return 0; /* as the driver says: a device is not its own peer */
    r = bt_cuda_drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = bt_cuda_drv.cuDeviceGet(&p, peer);
    if (r == CUDA_SUCCESS_)
        r = bt_cuda_drv.cuDeviceCanAccessPeer(yes, d, p);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDeviceCanAccessPeer(device %d, peer %d)", dev, peer);
    return 0;
}

/* Enables (on) or disables peer access from dev's primary context to peer's. */
static int set_peer(int dev, int peer, int on, BtDiag *e)
{
    void *ctx, *peer_ctx, *prev;
    char a[300], b[300];
    BtCUresult r;

    if (in_range(dev, peer, e) < 0 || bt_cuda_primary_ctx(peer, &peer_ctx, e) < 0 ||
        bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = on ? bt_cuda_drv.cuCtxEnablePeerAccess(peer_ctx, 0)
           : bt_cuda_drv.cuCtxDisablePeerAccess(peer_ctx);
    bt_cuda_leave(ctx, prev);
    if (r == (on ? PEER_ACCESS_ALREADY_ENABLED : PEER_ACCESS_NOT_ENABLED))
        r = CUDA_SUCCESS_;
    if (r == CUDA_SUCCESS_) {
        __atomic_store_n(&enabled[dev][peer], (unsigned char)on, __ATOMIC_RELAXED);
        return 0;
    }
    bt_cuda_device_label(dev, a, sizeof a);
    bt_cuda_device_label(peer, b, sizeof b);
    if (r == PEER_ACCESS_UNSUPPORTED)
        return bt_diag_fail(
            e, BT_DIAG_CUDA, r,
            "%s cannot access the memory of %s (CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: "
            "bindthem.cuda.can_access_peer(%d, %d) is False); copy between them "
            "with copy_from() instead",
            a, b, dev, peer);
    return bt_cuda_fail(e, r, "%s(from %s to %s)",
                        on ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess", a, b);
}

int bt_cuda_enable_peer(int dev, int peer, BtDiag *e) { return set_peer(dev, peer, 1, e); }
int bt_cuda_disable_peer(int dev, int peer, BtDiag *e) { return set_peer(dev, peer, 0, e); }

int bt_cuda_peer_enabled(int dev, int peer)
{
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES || peer < 0 || peer >= BT_CUDA_MAX_DEVICES)
        return 0;
    return __atomic_load_n(&enabled[dev][peer], __ATOMIC_RELAXED);
}

int bt_cuda_copy_peer(int dst_dev, uint64_t dst, int src_dev, uint64_t src, size_t n,
                      uint64_t stream, int sync, BtDiag *e)
{
    void *dctx, *sctx, *prev;
    BtCUresult r;
    int rc = -1;

    if (!bt_cuda_drv.cuMemcpyPeerAsync)
        return bt_cuda_unsupported(e, "copies between devices (cuMemcpyPeerAsync)", "4.0");
    if (bt_cuda_primary_ctx(src_dev, &sctx, e) < 0 || bt_cuda_primary_ctx(dst_dev, &dctx, e) < 0 ||
        bt_cuda_enter(dctx, &prev, e) < 0)
        return -1;
    r = n ? bt_cuda_drv.cuMemcpyPeerAsync(dst, dctx, src, sctx, n, (BtCUstream)(uintptr_t)stream)
          : CUDA_SUCCESS_;
    if (r != CUDA_SUCCESS_)
        bt_cuda_fail(e, r,
                     "cuMemcpyPeerAsync(0x%llx on device %d <- 0x%llx on device %d, %zu bytes, "
                     "stream 0x%llx)",
                     (unsigned long long)dst, dst_dev, (unsigned long long)src, src_dev, n,
                     (unsigned long long)stream);
    else if (!sync || bt_cuda_stream_sync(stream, e) == 0)
        rc = 0;
    bt_cuda_leave(dctx, prev);
    return rc;
}

int bt_cuda_wait_across(int waiter_dev, uint64_t waiter, int producer_dev, uint64_t producer,
                        BtDiag *e)
{
    void *ev = NULL, *wctx, *prev;
    int rc;

    if (waiter_dev == producer_dev)
        return bt_cuda_wait_in(waiter_dev, waiter, producer, NULL, e);
    if (bt_cuda_primary_ctx(waiter_dev, &wctx, e) < 0 ||
        bt_cuda_record_in(producer_dev, &ev, producer, e) < 0) {
        bt_cuda_event_destroy(ev);
        return -1;
    }
    if (bt_cuda_enter(wctx, &prev, e) < 0) {
        bt_cuda_event_destroy(ev);
        return -1;
    }
    /* a wait may cross contexts; the event goes once the wait is queued */
    rc = bt_cuda_stream_wait_event(waiter, ev, e);
    bt_cuda_leave(wctx, prev);
    bt_cuda_event_destroy(ev);
    return rc;
}
