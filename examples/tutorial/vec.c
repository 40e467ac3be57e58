/* vec.c - the C library of docs/tutorial.rst: cc -shared -fPIC vec.c -o libvec.so */
#include "vec.h"

double dot(const double x[], const size_t x_size, const double y[], const size_t y_size)
{
    double s = 0;
    for (size_t i = 0; i < x_size && i < y_size; i++)
        s += x[i] * y[i];
    return s;
}

void scale(double x[], const size_t x_size, const double a)
{
    for (size_t i = 0; i < x_size; i++)
        x[i] *= a;
}
