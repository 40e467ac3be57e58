/* gpu_kernels.cuh - the kernels of the device check (tests/cuda/gpu/run_gpu_check.sh). */
#pragma once

/* y = a * x, elementwise, for every dtype bindthem binds. */
template <class T>
__global__ void scale_copy(const T a, const T x[], const long x_size, T y[], const long y_size)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i];
}

/* y = a * x + y: the bandwidth kernel. */
template <class T>
__global__ void axpy(const T a, const T x[], const long x_size, T y[], const long y_size)
{
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + y[i];
}

/* The launch-overhead kernel: next to no work. */
__global__ void tiny(float y[], const int y_size)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && y_size > 0)
        y[0] += 1.0f;
}

/* The bytes of v into out[at...]. */
template <class V>
__device__ void put_bytes(unsigned char out[], int at, const V &v)
{
    const unsigned char *p = (const unsigned char *)&v;
    for (unsigned k = 0; k < sizeof(V); k++)
        out[at + k] = p[k];
}

/* Writes every parameter's bytes into out (72 bytes), to check packing. The
 * complex parameters sit at 16-byte offsets, where nvcc's and NVRTC's
 * layouts agree. */
__global__ void pack_probe(const bool b, const signed char i8, const unsigned char u8,
                           const short i16, const unsigned short u16, const int i32,
                           const unsigned int u32, const long long i64,
                           const unsigned long long u64, const float f32, const double f64,
                           const std::complex<double> c128, const std::complex<float> c64,
                           unsigned char out[], const int out_size)
{
    if (blockIdx.x != 0 || threadIdx.x != 0 || out_size < 72)
        return;
    put_bytes(out, 0, b);
    put_bytes(out, 1, i8);
    put_bytes(out, 2, u8);
    put_bytes(out, 4, i16);
    put_bytes(out, 6, u16);
    put_bytes(out, 8, i32);
    put_bytes(out, 12, u32);
    put_bytes(out, 16, i64);
    put_bytes(out, 24, u64);
    put_bytes(out, 32, f32);
    put_bytes(out, 40, f64);
    put_bytes(out, 48, c128);
    put_bytes(out, 64, c64);
}

/* Busy-waits about `cycles` clocks in one thread, then sets y to value:
 * work that is still running when the next launch is queued. */
__global__ void spin_then_set(int y[], const int y_size, const int value, const long long cycles)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (int i = 0; i < y_size; i++)
        y[i] = value;
}

/* y += v */
__global__ void add_value(int y[], const int y_size, const int v)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < y_size)
        y[i] += v;
}

/* counter[0] += 1, once per launch (atomic: launches from many threads). */
__global__ void count_launch(unsigned long long counter[], const int counter_size)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && counter_size > 0)
        atomicAdd(&counter[0], 1ULL);
}

/* out[i] = the sum of row i of the x_size0-by-x_size1 array x. */
template <class T>
__global__ void row_sums(const T x[], const int x_size0, const long x_size1, T out[],
                         const int out_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= x_size0 || i >= out_size)
        return;
    T s = 0;
    for (long j = 0; j < x_size1; j++)
        s += x[i * x_size1 + j];
    out[i] = s;
}

/* Busy-waits about `cycles` clocks in one thread, then copies x into out: a
 * read of x still running when a write of x is queued on another stream. */
__global__ void spin_then_copy(const int x[], const int x_size, int out[], const int out_size,
                               const long long cycles)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    long long start = clock64();
    while (clock64() - start < cycles) {
    }
    for (int i = 0; i < x_size && i < out_size; i++)
        out[i] = x[i];
}
