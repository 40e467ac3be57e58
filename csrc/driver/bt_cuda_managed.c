/* bt_cuda_managed.c - managed (unified) memory: allocated, prefetched, advised. */
#include "bt_cuda_impl.h"

enum {
    MANAGED_MEMORY = 83,            /* CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY */
    CONCURRENT_MANAGED_ACCESS = 89, /* CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS */
    ATTACH_GLOBAL = 1,              /* CU_MEM_ATTACH_GLOBAL */
    ATTACH_HOST = 2,                /* CU_MEM_ATTACH_HOST */
    LOCATION_DEVICE = 1,            /* CU_MEM_LOCATION_TYPE_DEVICE */
    LOCATION_HOST = 2,              /* CU_MEM_LOCATION_TYPE_HOST */
    DEVICE_CPU = -1,                /* CU_DEVICE_CPU, the 8.0 ABIs' host */
};

int bt_cuda_alloc_managed(int dev, size_t nbytes, int attach_host, uint64_t *ptr, BtDiag *e)
{
    BtCUdeviceptr p = 0;
    void *ctx, *prev;
    char label[300];
    BtCUresult r;
    int yes = 0;

    *ptr = 0;
    if (bt_cuda_device_attr(dev, MANAGED_MEMORY, &yes, e) < 0)
        return -1;
    bt_cuda_device_label(dev, label, sizeof label);
    if (!yes)
        return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                            "%s has no managed memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY is 0): "
                            "use bindthem.cuda.empty() and copy with to_device()/copy_to_host()",
                            label);
    if (!bt_cuda_drv.cuMemAllocManaged)
        return bt_cuda_unsupported(e, "managed memory (cuMemAllocManaged)", "6.0");
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuMemAllocManaged(&p, nbytes ? nbytes : 1,
                                      attach_host ? ATTACH_HOST : ATTACH_GLOBAL);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuMemAllocManaged(%zu bytes, %s) on %s", nbytes,
                            attach_host ? "CU_MEM_ATTACH_HOST" : "CU_MEM_ATTACH_GLOBAL", label);
    *ptr = p;
    return 0;
}

int bt_cuda_concurrent_managed(int dev, BtDiag *e)
{
    int yes = 0;

    if (bt_cuda_device_attr(dev, CONCURRENT_MANAGED_ACCESS, &yes, e) < 0)
        return -1;
    return yes != 0;
}

static BtCUmemLocation location_of(int location)
{
    BtCUmemLocation loc;

    loc.type = location == BT_CUDA_HOST_LOCATION ? LOCATION_HOST : LOCATION_DEVICE;
    loc.id = location == BT_CUDA_HOST_LOCATION ? 0 : location;
    return loc;
}

int bt_cuda_prefetch(int dev, uint64_t ptr, size_t n, int location, uint64_t stream, BtDiag *e)
{
    BtCUstream s = (BtCUstream)(uintptr_t)stream;
    void *ctx, *prev;
    BtCUresult r;

    if (!bt_cuda_drv.cuMemPrefetchAsync && !bt_cuda_drv.cuMemPrefetchAsync_v1)
        return bt_cuda_unsupported(e, "prefetching managed memory (cuMemPrefetchAsync)", "8.0");
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if (bt_cuda_drv.cuMemPrefetchAsync)
        r = bt_cuda_drv.cuMemPrefetchAsync(ptr, n, location_of(location), 0, s);
    else
        r = bt_cuda_drv.cuMemPrefetchAsync_v1(
            ptr, n, location == BT_CUDA_HOST_LOCATION ? DEVICE_CPU : location, s);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(
            e, r, "cuMemPrefetchAsync(0x%llx, %zu bytes, to %s %d, stream 0x%llx)",
            (unsigned long long)ptr, n, location == BT_CUDA_HOST_LOCATION ? "the host" : "device",
            location == BT_CUDA_HOST_LOCATION ? 0 : location, (unsigned long long)stream);
    return 0;
}

int bt_cuda_advise(int dev, uint64_t ptr, size_t n, int advice, int location, BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;

    if (!bt_cuda_drv.cuMemAdvise && !bt_cuda_drv.cuMemAdvise_v1)
        return bt_cuda_unsupported(e, "advice on managed memory (cuMemAdvise)", "8.0");
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if (bt_cuda_drv.cuMemAdvise)
        r = bt_cuda_drv.cuMemAdvise(ptr, n, advice, location_of(location));
    else
        r = bt_cuda_drv.cuMemAdvise_v1(ptr, n, advice,
                                       location == BT_CUDA_HOST_LOCATION ? DEVICE_CPU : location);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuMemAdvise(0x%llx, %zu bytes, advice %d, %s %d)",
                            (unsigned long long)ptr, n, advice,
                            location == BT_CUDA_HOST_LOCATION ? "the host" : "device",
                            location == BT_CUDA_HOST_LOCATION ? 0 : location);
    return 0;
}

int bt_cuda_managed_settle(int dev, BtDiag *e)
{
    void *ctx, *prev;
    int rc;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    rc = bt_cuda_stream_sync(BT_CUDA_STREAM_LEGACY, e);
    bt_cuda_leave(ctx, prev);
    return rc;
}
