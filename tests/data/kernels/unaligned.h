// unaligned.h - fixture for tests/core/test_unaligned.py: kernels that check the
// alignment of the pointers they receive, read a const array and write one.
#include <complex>
#include <cstdint>
#include <stdexcept>

template <class T>
static bool misaligned(const T *p)
{
    return reinterpret_cast<std::uintptr_t>(p) % alignof(T) != 0;
}

template <class T>
static T step(T y, T a)
{
    return static_cast<T>(y * static_cast<T>(3) + a);
}

static bool step(bool y, bool a) { return y != a; }

// y[i] = 3 y[i] + a[i] (for bool: y[i] != a[i]); returns a_size. Throws
// std::invalid_argument when a pointer is not aligned for T, and, when fail
// is not 0, std::runtime_error after writing y.
template <class T>
int axpy3(const T a[], const int a_size, T y[], const int y_size, const int fail)
{
    if (misaligned(a) || misaligned(y))
        throw std::invalid_argument("a misaligned pointer");
    for (int i = 0; i < y_size && i < a_size; i++)
        y[i] = step(y[i], a[i]);
    if (fail)
        throw std::runtime_error("failed after writing y");
    return a_size;
}

// The dot product of two const arrays (throws when one is misaligned).
double dot2(const double a[], const int a_size, const double b[], const int b_size)
{
    double s = 0;
    if (misaligned(a) || misaligned(b))
        throw std::invalid_argument("a misaligned pointer");
    for (int i = 0; i < a_size && i < b_size; i++)
        s += a[i] * b[i];
    return s;
}

// x[i] = i + 1 into a writable array alone; returns x_size.
int iota1(double x[], const int x_size)
{
    if (misaligned(x))
        throw std::invalid_argument("a misaligned pointer");
    for (int i = 0; i < x_size; i++)
        x[i] = i + 1;
    return x_size;
}

// Swaps x and y element by element (both written); returns x_size.
int swap2(double x[], const int x_size, double y[], const int y_size)
{
    if (misaligned(x) || misaligned(y))
        throw std::invalid_argument("a misaligned pointer");
    for (int i = 0; i < x_size && i < y_size; i++) {
        double t = x[i];
        x[i] = y[i];
        y[i] = t;
    }
    return x_size;
}
