/* gpu_launch.cuh - kernels for the device check's launch tests: __half
 * and __nv_bfloat16 arithmetic, a static kernel, dynamic shared memory. Built at test time. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* y = a * x + y, in the precision of T. */
template <class T>
__global__ void haxpy(const T a, const T x[], const long x_size, T y[], const long y_size)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + y[i];
}

/* out[i] = v, with internal linkage. */
static __global__ void sfill(const int v, int out[], const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size)
        out[i] = v;
}

/* One block: every dynamic shared word gets its index plus `seed` from
 * one thread and is summed by another, so all n_words must exist. */
__global__ void shared_sum(const int seed, const int n_words, long long out[], const int out_size)
{
    extern __shared__ int words[];
    long long s = 0;
    for (int i = threadIdx.x; i < n_words; i += blockDim.x)
        words[i] = i + seed;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int i = 0; i < n_words; i++)
            s += words[n_words - 1 - i];
        out[0] = s;
    }
}
