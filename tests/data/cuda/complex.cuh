/* complex.cuh - std::complex kernels for bindthem.cuda's build tests
 * (nvcc and NVRTC). Uses std:: names of the standard prelude unqualified
 * by any #include, as headers written for the CPU build do. */
#pragma once

/* y = a * x + y over complex arrays. */
template <class T>
__global__ void zaxpy(const T a, const T x[], const int x_size, T y[], const int y_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + y[i];
}

/* out = |x|^2 written as x * conj(x), real part, plus n as R. */
template <class T, class R>
__global__ void sqnorm(const T x[], const int x_size, R out[], const int out_size, const R n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < out_size)
        out[i] = (x[i] * std::conj(x[i])).real() + n;
}
