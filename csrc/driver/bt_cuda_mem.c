/* bt_cuda_mem.c - device memory: allocations (from the device's pool where
 * it has one) and frees, copies between host and device and device to
 * device, memset, pinned host memory, what the driver says of a pointer. */
#include "bt_cuda_impl.h"

#include <stdlib.h>
#include <string.h>

int bt_cuda_alloc(int dev, size_t nbytes, uint64_t *ptr, BtDiag *e)
{
    BtCUdeviceptr p = 0;
    void *ctx, *prev;
    BtCUresult r;

    *ptr = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = bt_cuda_drv.cuMemAlloc(&p, nbytes ? nbytes : 1);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuMemAlloc(%zu bytes) on device %d", nbytes, dev);
    *ptr = p;
    return 0;
}

/* cuMemFree, or cuMemFreeAsync on the legacy stream, in dev's primary
 * context; nothing in a child of fork(). */
static void free_in(int dev, uint64_t ptr, int async)
{
    void *ctx, *prev;
    BtDiag e;

    bt_diag_init(&e);
    if (!LIVE() || !ptr || dev < 0 || dev >= BT_CUDA_MAX_DEVICES ||
        !(ctx = __atomic_load_n(&bt_cuda_drv.primary[dev], __ATOMIC_ACQUIRE)))
        return;
    if (bt_cuda_enter(ctx, &prev, &e) < 0)
        return;
    if (async)
        bt_cuda_drv.cuMemFreeAsync(ptr, (BtCUstream)(uintptr_t)BT_CUDA_STREAM_LEGACY);
    else
        bt_cuda_drv.cuMemFree(ptr);
    bt_cuda_leave(ctx, prev);
}

void bt_cuda_free(int dev, uint64_t ptr) { free_in(dev, ptr, 0); }

int bt_cuda_copy(int dev, BtCudaCopyDir dir, uint64_t dptr, void *host, size_t n, uint64_t stream,
                 uint64_t after, int sync, BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if (after && bt_cuda_stream_wait(stream, after, e) < 0)
        goto done;
    if (n) {
        if (dir == BT_CUDA_HTOD)
            r = bt_cuda_drv.cuMemcpyHtoDAsync(dptr, host, n, (BtCUstream)(uintptr_t)stream);
        else
            r = bt_cuda_drv.cuMemcpyDtoHAsync(host, dptr, n, (BtCUstream)(uintptr_t)stream);
        if (r != CUDA_SUCCESS_) {
            bt_cuda_fail(e, r, "%s(%zu bytes, stream 0x%llx)",
                         dir == BT_CUDA_HTOD ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync", n,
                         (unsigned long long)stream);
            goto done;
        }
    }
    if (sync && bt_cuda_stream_sync(stream, e) < 0)
        goto done;
    rc = 0;
done:
    bt_cuda_leave(ctx, prev);
    return rc;
}

int bt_cuda_memset(int dev, uint64_t dptr, size_t n, uint64_t stream, BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = n ? bt_cuda_drv.cuMemsetD8Async(dptr, 0, n, (BtCUstream)(uintptr_t)stream) : CUDA_SUCCESS_;
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuMemsetD8Async(%zu bytes)", n);
    return 0;
}

int bt_cuda_pointer_info(uint64_t ptr, BtCudaPtrInfo *out, BtDiag *e)
{
    /* the driver writes 4-byte or pointer-sized values; zeroed 8-byte
     * slots read back right either way on a little-endian host */
    BtCUpointer_attribute attrs[5] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE_, CU_POINTER_ATTRIBUTE_IS_MANAGED_,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL_, CU_POINTER_ATTRIBUTE_DEVICE_POINTER_,
        CU_POINTER_ATTRIBUTE_CONTEXT_};
    uint64_t vals[5] = {0, 0, 0, 0, 0};
    void *data[5] = {&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]};
    BtCUresult r;

    memset(out, 0, sizeof *out);
    out->device = -1;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = bt_cuda_drv.cuPointerGetAttributes(5, attrs, data, ptr);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuPointerGetAttributes(0x%llx)", (unsigned long long)ptr);
    out->memtype = (int)(uint32_t)vals[0];
    out->managed = (vals[1] & 0xff) != 0;
    out->device = out->memtype ? (int)(int32_t)(uint32_t)vals[2] : -1;
    out->devptr = vals[3];
    out->ctx = (void *)(uintptr_t)vals[4];
    return 0;
}

int bt_cuda_host_alloc(size_t n, void **p, BtDiag *e)
{
    BtCUresult r;

    *p = NULL;
    if (bt_cuda_some_ctx(e) < 0)
        return -1;
    /* portable: pinned for every context, as an async copy from any needs */
    r = bt_cuda_drv.cuMemHostAlloc(p, n ? n : 1, CU_MEMHOSTALLOC_PORTABLE_);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuMemHostAlloc(%zu bytes)", n);
    return 0;
}

void bt_cuda_host_free(void *p)
{
    BtDiag e;

    bt_diag_init(&e);
    if (LIVE() && p && bt_cuda_some_ctx(&e) == 0)
        bt_cuda_drv.cuMemFreeHost(p);
}

/* ---- stream-ordered allocation, device-to-device copies ---- */

/* Whether dev allocates from a pool (asked once, its primary context
 * current): the default pool, made to keep what is freed (release
 * threshold: all) as CuPy's and PyTorch's allocators do. */
static int ask_pooled(int dev)
{
    enum { MEMORY_POOLS_SUPPORTED = 115, RELEASE_THRESHOLD = 4 };
    BtCUmemoryPool pool = NULL;
    uint64_t all = UINT64_MAX;
    BtCUdevice d;
    int yes = 0;

    if (getenv("BINDTHEM_CUDA_NO_POOL") || !bt_cuda_drv.cuMemAllocAsync ||
        !bt_cuda_drv.cuMemFreeAsync || bt_cuda_drv.cuDeviceGet(&d, dev) != CUDA_SUCCESS_ ||
        bt_cuda_drv.cuDeviceGetAttribute(&yes, MEMORY_POOLS_SUPPORTED, d) != CUDA_SUCCESS_ || !yes)
        return -1;
    if (bt_cuda_drv.cuDeviceGetDefaultMemPool && bt_cuda_drv.cuMemPoolSetAttribute &&
        bt_cuda_drv.cuDeviceGetDefaultMemPool(&pool, d) == CUDA_SUCCESS_)
        bt_cuda_drv.cuMemPoolSetAttribute(pool, RELEASE_THRESHOLD, &all);
    return 1;
}

/* Threads that ask at once: one asks (under `once`), all see its answer. */
static int pooled(int dev)
{
    int v = __atomic_load_n(&bt_cuda_drv.pools[dev], __ATOMIC_ACQUIRE);

    if (!v) {
        pthread_mutex_lock(&bt_cuda_once);
        if (!(v = bt_cuda_drv.pools[dev]))
            __atomic_store_n(&bt_cuda_drv.pools[dev], v = ask_pooled(dev), __ATOMIC_RELEASE);
        pthread_mutex_unlock(&bt_cuda_once);
    }
    return v > 0;
}

int bt_cuda_alloc_async(int dev, size_t nbytes, uint64_t stream, uint64_t *ptr, int *is_pooled,
                        BtDiag *e)
{
    BtCUdeviceptr p = 0;
    void *ctx, *prev;
    BtCUresult r;
    int pool;

    *ptr = 0;
    *is_pooled = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if ((pool = pooled(dev))) {
        r = bt_cuda_drv.cuMemAllocAsync(&p, nbytes ? nbytes : 1, (BtCUstream)(uintptr_t)stream);
        *is_pooled = r == CUDA_SUCCESS_;
    } else {
        r = bt_cuda_drv.cuMemAlloc(&p, nbytes ? nbytes : 1);
    }
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(%zu bytes) on device %d",
                            pool ? "cuMemAllocAsync" : "cuMemAlloc", nbytes, dev);
    *ptr = p;
    return 0;
}

void bt_cuda_free_async(int dev, uint64_t ptr) { free_in(dev, ptr, 1); }

int bt_cuda_copy_d2d(int dev, uint64_t dst, uint64_t src, size_t n, uint64_t stream, int sync,
                     BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    /* unified addressing: the driver tells the devices apart (peer copies too) */
    r = n ? bt_cuda_drv.cuMemcpyAsync(dst, src, n, (BtCUstream)(uintptr_t)stream) : CUDA_SUCCESS_;
    if (r != CUDA_SUCCESS_)
        bt_cuda_fail(e, r, "cuMemcpyAsync(0x%llx <- 0x%llx, %zu bytes, stream 0x%llx)",
                     (unsigned long long)dst, (unsigned long long)src, n,
                     (unsigned long long)stream);
    else if (!sync || bt_cuda_stream_sync(stream, e) == 0)
        rc = 0;
    bt_cuda_leave(ctx, prev);
    return rc;
}
