/* ckernels.h - fixture: plain C kernels, compiled by gcc. */
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Dot product.
double c_dot(const double x[], const int x_size, const double y[], const int y_size);

// Sum of two ints.
int c_add(const int a, const int b);

// Fills x with v.
void c_fill(float *x, const int x_size, const float v);

// True when x is odd.
bool c_odd(const long x);

// Busy-waits for about ms milliseconds, touching x; writes the
// CLOCK_MONOTONIC start and end (seconds) into t[0] and t[1].
void c_spin(double x[], const int x_size, double t[], const int t_size, const int ms);

// Declared here but not defined in ckernels.c: left unexported.
int c_missing(const int x);

#ifdef __cplusplus
}
#endif
