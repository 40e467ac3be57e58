#ifndef BINDTHEM_TEST_FEATURES_H
#define BINDTHEM_TEST_FEATURES_H

// Stub-generator features in one header: merged overloads, a plain def,
// bool / complex / void returns, keyword-named parameters, no docstring,
// and a docstring that needs escaping.

#include <complex>

// Sum of x, in the precision of T.
//
// A backslash \ and a triple quote """ must survive the stub.
template <class I, class T>
T total(const I n, const T x[], const int x_size)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s + (T)(n * 0);
}

// True when any element of x is nonzero.
bool any_nonzero(const int x[], const int x_size)
{
    for (int i = 0; i < x_size; i++)
        if (x[i])
            return true;
    return false;
}

// The first element of z, or 0.
std::complex<double> first(const std::complex<double> z[], const int z_size)
{
    return z_size > 0 ? z[0] : std::complex<double>(0, 0);
}

// Fill y with value (twice the value if twice).
void fill(double y[], const int y_size, const double value, const bool twice)
{
    for (int i = 0; i < y_size; i++)
        y[i] = twice ? 2 * value : value;
}

int shift(const int in, const int from, const char c)
{
    return in - from + c * 0;
}

#endif
