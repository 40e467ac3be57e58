/* vec.c - vec.h's functions, compiled as C (cc -std=c11). */
#include "vec.h"

double dot(const double x[], const int x_size, const double y[], const int y_size)
{
    double s = 0;
    for (int i = 0; i < x_size && i < y_size; i++)
        s += x[i] * y[i];
    return s;
}

void scale(double x[], const int x_size, const double a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}

int64_t count_pos(const int64_t v[], const size_t v_size)
{
    int64_t n = 0;
    for (size_t i = 0; i < v_size; i++)
        n += v[i] > 0;
    return n;
}

_Bool all_pos(const double v[], const ptrdiff_t v_size)
{
    for (ptrdiff_t i = 0; i < v_size; i++)
        if (!(v[i] > 0))
            return 0;
    return 1;
}

bool any_neg(const double v[], const int64_t v_size)
{
    for (int64_t i = 0; i < v_size; i++)
        if (v[i] < 0)
            return true;
    return false;
}

uint8_t byte_sum(const uint8_t b[], const uint32_t b_size)
{
    uint8_t s = 0;
    for (uint32_t i = 0; i < b_size; i++)
        s = (uint8_t)(s + b[i]);
    return s;
}

void negate16(int16_t b[], const ssize_t b_size)
{
    for (ssize_t i = 0; i < b_size; i++)
        b[i] = (int16_t)-b[i];
}
