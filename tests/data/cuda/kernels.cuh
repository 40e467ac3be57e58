/* kernels.cuh - CUDA kernels for bindthem.cuda's tests (mock and GPU). */
#pragma once

/* y = a * x + y, elementwise. */
template <class T>
__global__ void axpy(const T a, const T x[], const int x_size, T y[], const int y_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + y[i];
}

/* y *= s */
template <class T>
__global__ void scale(const T s, T y[], const long y_size)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y_size)
        y[i] *= s;
}

namespace ops {
/* x = -x */
template <class T>
__global__ void negate(T x[], const unsigned int x_size)
{
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size)
        x[i] = -x[i];
}
}

/* out[i] = v */
extern "C" __global__ void fill_i(const int v, int out[], const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < out_size)
        out[i] = v;
}

/* A device helper: not a kernel. */
__device__ float twice(float v) { return 2 * v; }

/* A host function: bindthem.load binds these, bindthem.cuda does not. */
inline int host_helper(int a) { return a + 1; }

/* A host declaration: bound by bindthem.load, listed in not_kernels here. */
int host_count(const int x[], const int x_size);
