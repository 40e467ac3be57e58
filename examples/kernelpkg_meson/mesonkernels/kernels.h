#ifndef MESONKERNELS_KERNELS_H
#define MESONKERNELS_KERNELS_H

// x *= a, element by element.
template <class T>
void scale(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}

// The dot product of x and y (over the shorter), on every OpenMP thread.
template <class T>
T dot(const T x[], const int x_size, const T y[], const int y_size)
{
    const int n = x_size < y_size ? x_size : y_size;
    T s = 0;
#pragma omp parallel for reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

// The index of the largest entry of x (the first one), or -1 when x is empty.
int argmax(const double x[], const int x_size)
{
    int best = -1;
    for (int i = 0; i < x_size; i++)
        if (best < 0 || x[i] > x[best])
            best = i;
    return best;
}

#endif
