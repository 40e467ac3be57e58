/* overloads.cuh - kernels that one remap merges though their parameters
 * differ, one with a default (bindthem.cuda's dispatch, mock driver). */
#pragma once

/* y *= s */
template <class T>
__global__ void scale_by(T y[], const int y_size, const T s = 2)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y_size)
        y[i] *= s;
}

/* dst = src */
template <class T>
__global__ void copy_from(const T src[], const int src_size, T dst[], const int dst_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < src_size && i < dst_size)
        dst[i] = src[i];
}
