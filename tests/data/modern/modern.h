// modern.h - C++ declarations as people write them (tests/core/test_modern_cxx.py)
#pragma once
#include <cstddef>
#ifndef _WIN32
#define __declspec(x)
#endif

struct alignas(16) Padded { double v[2]; };

// Sum of x, pyamg 5.3 style: the size is [[maybe_unused]].
template <class I, class T>
[[nodiscard]] T vsum(const I Ap[], [[maybe_unused]] const int Ap_size, const T x[],
                     const int x_size [[maybe_unused]])
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i] * (T)Ap[0];
    return s;
}

// Doubles x in place; attributes after the name and after ')'.
template <class T>
__attribute__((noinline)) void twice(T x [[maybe_unused]][], const int x_size) noexcept
    __attribute__((hot));
template <class T>
void twice(T x[], const int x_size) noexcept
{
    for (int i = 0; i < x_size; i++)
        x[i] *= 2;
}

// Largest element, trailing return type.
template <typename T>
auto vmax(const T *x, const int x_size) -> T
{
    T m = x[0];
    for (int i = 1; i < x_size; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

// b, after an unnamed parameter.
__declspec(dllexport) double second(int, [[maybe_unused]] double b) { return b; }

// Dot product through restrict pointers.
double dot(const double *__restrict__ x, const int x_size, const double *__restrict y,
           const int y_size)
{
    double s = 0;
    for (int i = 0; i < x_size && i < y_size; i++)
        s += x[i] * y[i];
    return s;
}

// No parameters.
int answer(void) { return 42; }

// A declaration bindthem cannot read (bindthem reads what the preprocessor
// would drop): the rest of the header still binds.
#if 0
int broken(const double x[], const int x_size;
#endif

// Sum of x plus B.
template <class T, int B>
T add_b(const T x[], const int x_size)
{
    T s = B;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// a, negated when NEG.
template <class T, bool NEG>
T maybe_neg(T a) { return NEG ? -a : a; }

// How many elements of x equal C.
template <class T, char C>
int count_c(const T x[], const int x_size)
{
    int n = 0;
    for (int i = 0; i < x_size; i++)
        n += x[i] == C;
    return n;
}

// N + U, unsigned and size_t parameters.
template <class T, unsigned U, std::size_t N>
T plus_un(T a) { return a + (T)U + (T)N; }

// a * K, K defaulted.
template <class T, int K = 3>
T times_k(T a) { return a * K; }

// Number of positive elements, index type defaulted.
template <class T, class I = long>
I count_pos(const T x[], const I x_size)
{
    I n = 0;
    for (I i = 0; i < x_size; i++)
        n += x[i] > 0;
    return n;
}
