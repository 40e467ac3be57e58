/* vec.h - a C library's header, as bindthem reads it (docs/tutorial.rst). */
#include <stddef.h>

// The dot product of x and y.
double dot(const double x[], const size_t x_size, const double y[], const size_t y_size);

// x *= a, in place.
void scale(double x[], const size_t x_size, const double a);
