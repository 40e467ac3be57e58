/* half.cuh - __half and __nv_bfloat16 kernels and a static kernel, for
 * bindthem.cuda's tests. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* y = a * x + y in half precision. */
template <class T>
__global__ void haxpy(const T a, const T x[], const int x_size, T y[], const int y_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + y[i];
}

/* y = y * s + t; half is cuda_fp16.h's other name for __half. */
__global__ void hscale(const __half s, __half y[], const int y_size, const half t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y_size)
        y[i] = y[i] * s + t;
}

/* The same in bfloat16; nv_bfloat16 is cuda_bf16.h's other name. */
__global__ void bscale(const __nv_bfloat16 s, __nv_bfloat16 y[], const int y_size,
                       const nv_bfloat16 t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y_size)
        y[i] = y[i] * s + t;
}

namespace ns {
/* out = a + b, converted to T: two template arguments, one of them a class. */
template <class T, class U>
__global__ void mix(const T a, const U b, T out[], const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size)
        out[i] = T(float(a) + float(b));
}
}

/* out[i] = v, with internal linkage. */
static __global__ void sfill(const int v, int out[], const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size)
        out[i] = v;
}
