/* ckernels.c - definitions for ckernels.h. */
#define _POSIX_C_SOURCE 199309L
#include "ckernels.h"

#include <time.h>

double c_dot(const double x[], const int x_size, const double y[], const int y_size)
{
    double s = 0;
    int n = x_size < y_size ? x_size : y_size;
    for (int i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

int c_add(const int a, const int b) { return a + b; }

void c_fill(float *x, const int x_size, const float v)
{
    for (int i = 0; i < x_size; i++)
        x[i] = v;
}

bool c_odd(const long x) { return x % 2 != 0; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void c_spin(double x[], const int x_size, double t[], const int t_size, const int ms)
{
    double start = now(), end;
    volatile double sink = 0;
    do {
        for (int i = 0; i < x_size; i++)
            sink += x[i];
        end = now();
    } while (end - start < ms * 1e-3);
    x[0] = sink;
    t[0] = start;
    t[1] = end;
}
