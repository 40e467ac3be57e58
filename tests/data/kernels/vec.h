/* vec.h - a plain C library's header: C prototypes, no extern "C". */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

/* The dot product of x and y (their common length). */
double dot(const double x[], const int x_size, const double y[], const int y_size);

/* x *= a, in place. */
void scale(double x[], const int x_size, const double a);

/* How many of v are positive. */
int64_t count_pos(const int64_t v[], const size_t v_size);

/* Whether every v is positive. */
_Bool all_pos(const double v[], const ptrdiff_t v_size);

/* Whether some v is negative. */
bool any_neg(const double v[], const int64_t v_size);

/* The sum of b, wrapping at 256. */
uint8_t byte_sum(const uint8_t b[], const uint32_t b_size);

/* b[i] = -b[i]. */
void negate16(int16_t b[], const ssize_t b_size);
