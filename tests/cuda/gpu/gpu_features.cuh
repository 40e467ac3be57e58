/* gpu_features.cuh - kernels for the device tests of launch attributes and module globals. */
#pragma once
#include <cooperative_groups.h>

__constant__ float coef[4];
__device__ int counter;

/* out[i] = coef[i % 4] */
extern "C" __global__ void use_coef(float out[], const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size)
        out[i] = coef[i % 4];
}

/* out[block] = the block's rank in its cluster (0xffffffff before sm_90) */
extern "C" __global__ void cluster_rank(unsigned out[], const int out_size)
{
    unsigned r = 0xffffffffu;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
#endif
    if (threadIdx.x == 0 && (int)blockIdx.x < out_size)
        out[blockIdx.x] = r;
}

/* every block adds 1 to counter, the grid syncs, then out[block] = counter */
extern "C" __global__ void grid_count(int out[], const int out_size)
{
    if (threadIdx.x == 0)
        atomicAdd(&counter, 1);
    cooperative_groups::this_grid().sync();
    if (threadIdx.x == 0 && (int)blockIdx.x < out_size)
        out[blockIdx.x] = atomicAdd(&counter, 0);
}
