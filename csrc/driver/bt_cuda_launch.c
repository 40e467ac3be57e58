/* bt_cuda_launch.c - launches (cuLaunchKernel; cuLaunchKernelEx for a
 * cluster, a cooperative grid, a priority), a kernel's dynamic shared
 * memory and attributes, occupancy. */
#include "bt_cuda_impl.h"

#include <string.h>

int bt_cuda_launch(void *kernel, const unsigned grid[3], const unsigned block[3], unsigned shared,
                   uint64_t stream, void **params, BtDiag *e)
{
    /* a CUfunction (bt_cuda_kernel_function); a CUkernel (12.0+) is
     * accepted too, resolved by the driver in the current context */
    BtCUresult r;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    if (STICKY()) /* no kernel is launched into a context a fault broke */
        return bt_cuda_sticky_fail(e, "cuLaunchKernel");
    r = bt_cuda_drv.cuLaunchKernel(kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                   shared, (BtCUstream)(uintptr_t)stream, params, NULL);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r,
                            "cuLaunchKernel(grid=(%u, %u, %u), block=(%u, %u, %u), shared=%u)",
                            grid[0], grid[1], grid[2], block[0], block[1], block[2], shared);
    return 0;
}

int bt_cuda_kernel_shared(void *kernel, int dev, unsigned bytes, unsigned *optin,
                          unsigned *static_bytes, BtDiag *e)
{
    enum { SHARED_SIZE = 1, MAX_DYNAMIC_SHARED = 8, OPTIN = 97 };
    BtCUdevice d;
    int max = 0, stat = 0, lib = bt_cuda_drv.cuLibraryLoadData != NULL;
    BtCUresult r;

    r = bt_cuda_drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = bt_cuda_drv.cuDeviceGetAttribute(&max, OPTIN, d);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    r = lib ? bt_cuda_drv.cuKernelGetAttribute(&stat, SHARED_SIZE, kernel, d)
            : bt_cuda_drv.cuFuncGetAttribute(&stat, SHARED_SIZE, kernel);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(SHARED_SIZE_BYTES)",
                            lib ? "cuKernelGetAttribute" : "cuFuncGetAttribute");
    *optin = (unsigned)max;
    *static_bytes = (unsigned)stat;
    if ((unsigned long long)bytes + (unsigned)stat > (unsigned)max)
        return 1;
    r = lib ? bt_cuda_drv.cuKernelSetAttribute(MAX_DYNAMIC_SHARED, (int)bytes, kernel, d)
            : bt_cuda_drv.cuFuncSetAttribute(kernel, MAX_DYNAMIC_SHARED, (int)bytes);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)",
                            lib ? "cuKernelSetAttribute" : "cuFuncSetAttribute", bytes);
    return 0;
}

int bt_cuda_launch_ex(void *kernel, const unsigned grid[3], const unsigned block[3],
                      unsigned shared, uint64_t stream, void **params, const BtCudaLaunchAttrs *a,
                      BtDiag *e)
{
    enum { COOPERATIVE = 2, CLUSTER_DIMENSION = 4, PRIORITY = 8 };
    BtCUlaunchAttribute attrs[3];
    BtCUlaunchConfig c;
    BtCUresult r;
    unsigned n = 0;

    if (FORKED())
        return bt_cuda_fork_fail(e);
    if (STICKY())
        return bt_cuda_sticky_fail(e, "cuLaunchKernelEx");
    if (!bt_cuda_drv.cuLaunchKernelEx)
        return bt_cuda_unsupported(
            e, "a launch with cluster=, cooperative= or priority= (cuLaunchKernelEx)", "11.6");
    memset(attrs, 0, sizeof attrs);
    if (a->cluster[0]) {
        attrs[n].id = CLUSTER_DIMENSION;
        attrs[n].value.cluster.x = a->cluster[0];
        attrs[n].value.cluster.y = a->cluster[1];
        attrs[n++].value.cluster.z = a->cluster[2];
    }
    if (a->cooperative) {
        attrs[n].id = COOPERATIVE;
        attrs[n++].value.cooperative = 1;
    }
    if (a->has_priority) {
        attrs[n].id = PRIORITY;
        attrs[n++].value.priority = a->priority;
    }
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    c.shared = shared;
    c.stream = (BtCUstream)(uintptr_t)stream;
    c.attrs = attrs;
    c.n_attrs = n;
    /* a CUfunction (bt_cuda_kernel_function), as for bt_cuda_launch */
    r = bt_cuda_drv.cuLaunchKernelEx(&c, kernel, params, NULL);
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE_)
        return bt_cuda_fail(e, r,
                            "cuLaunchKernelEx(cooperative, grid=(%u, %u, %u), block=(%u, %u, %u)) "
                            "(a cooperative grid must fit on the device at once: at most "
                            "max_active_blocks_per_sm(block) x the SM count blocks)",
                            grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r,
                            "cuLaunchKernelEx(grid=(%u, %u, %u), block=(%u, %u, %u), shared=%u, "
                            "cluster=(%u, %u, %u), cooperative=%d)",
                            grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                            a->cluster[0], a->cluster[1], a->cluster[2], a->cooperative);
    return 0;
}

int bt_cuda_kernel_attr(void *kernel, int dev, int attr, int *value, BtDiag *e)
{
    int lib = bt_cuda_drv.cuLibraryLoadData != NULL;
    BtCUdevice d;
    BtCUresult r;

    *value = 0;
    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = lib ? bt_cuda_drv.cuKernelGetAttribute(value, attr, kernel, d)
                : bt_cuda_drv.cuFuncGetAttribute(value, attr, kernel);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(%d, device %d)",
                            lib ? "cuKernelGetAttribute" : "cuFuncGetAttribute", attr, dev);
    return 0;
}

int bt_cuda_occupancy(void *kernel, int block, size_t shared, int *blocks, BtDiag *e)
{
    BtCUresult r = bt_cuda_drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, block,
                                                                           shared);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r,
                            "cuOccupancyMaxActiveBlocksPerMultiprocessor(block=%d, shared=%zu)",
                            block, shared);
    return 0;
}

int bt_cuda_occupancy_block(void *kernel, size_t shared, int limit, int *min_grid, int *block,
                            BtDiag *e)
{
    BtCUresult r = bt_cuda_drv.cuOccupancyMaxPotentialBlockSize(min_grid, block, kernel, NULL,
                                                                shared, limit);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuOccupancyMaxPotentialBlockSize(shared=%zu, limit=%d)", shared,
                            limit);
    return 0;
}
