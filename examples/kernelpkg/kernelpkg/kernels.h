#ifndef KERNELPKG_KERNELS_H
#define KERNELPKG_KERNELS_H

// y += a * x, element by element.
template <class T>
void axpy(const T x[], const int x_size,
                T y[], const int y_size,
          const T a)
{
    for (int i = 0; i < x_size && i < y_size; i++)
        y[i] += a * x[i];
}

// The sum of the entries of x.
template <class T>
T total(const T x[], const int x_size)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// The number of entries of x above a threshold.
int count_above(const double x[], const int x_size, const double threshold)
{
    int n = 0;
    for (int i = 0; i < x_size; i++)
        n += x[i] > threshold;
    return n;
}

#endif
