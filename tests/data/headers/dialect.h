#ifndef DIALECT_H
#define DIALECT_H

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#define SQUARE(x) \
    ((x) * (x))   /* a multi-line macro, { unbalanced ( on purpose */

// A banner comment that is separated from the next function by a blank line.

int no_doc(const int n) { return n; }

//
// Slash docstring
//
template <class I, class T, class F>
int slash_doc(const I J[], const int J_size,
                    T x[], const int x_size,
                    F y[], const int y_size,
              double a)
{
    // Bodies hold anything: "strings with \"escaped\" quotes and { braces",
    const char *s = "}}}";
    char open = '{', quote = '"', close = '}', esc = '\'';
    /* a comment with } in it */
    auto raw = R"xx(raw } string " with ) junk)xx";
    if (a > 0) { x[0] = (T) a; } else { y[0] = F(); }
    return J[0] + s[0] + open + quote + close + esc + (int)sizeof(raw);
}

/*
 * Star docstring.
 *
 * Parameters
 * ----------
 * Ap : array
 *     CSR row pointer.
 */
template<class I>
void star_doc(const I Ap[], const int Ap_size);

/* One-line block docstring */
template <typename I, typename T>
void typename_params(I const n, T *x, const std::size_t x_size, const T* y, int64_t y_size);

/*
   Block without stars,
     indented content kept relative.
*/
void no_stars(unsigned n, unsigned long m, long int k, long long q, unsigned char c,
              signed char sc, short h, unsigned short uh, bool b, float f, std::uint8_t u8,
              ptrdiff_t d, std::complex<float> cf, std::complex<double> cd);

struct Skipped {
    int a;
    void method(int x) { a = x; }
};

template <class T>
struct SkippedTemplate {
    T value;
    T get() const { return value; }
};

typedef int myint;
using myfloat = float;
static const int global_table[] = {1, 2, 3};
int global_var = 3;
enum class Color { Red, Green };

namespace outer {
// In a namespace
template <class I, class T>
inline void in_ns(const I n, std::complex<T> z[], const int z_size) {}

namespace inner {
static double nested(double x) { return x; }
}  // namespace inner
}  // namespace outer

namespace a::b {
void cxx17_ns(int v);
}

extern "C" {
// C linkage in a block
void c_block(const float *x, const int x_size);
int c_block2(void);
}

extern "C" double c_prefix(double a, double b);

__global__ void cuda_kernel(float *out, const int out_size, const float scale) {}
__device__ float cuda_device_helper(float v) { return v; }
__host__ __device__ __forceinline__ float cuda_both(float v) { return v; }

// ---- unbindable ones, recorded with a reason ----

void by_reference(const std::string &errormsg);
void no_size(double *x, int n);
std::vector<double> returns_vector(int n);
void unknown_param(IndexTypeX n);
void pointer_to_pointer(double **x, int x_size);
void defaults_on_array(double x[] = nullptr, int x_size = 0);
int defaults_on_scalar(int a = 3, double b = 1.5);
void variadic(int n, ...);
void callback(void (*cb)(int), int n);
void struct_param(struct Point p);
void unnamed(int, double);
template <class T, int N>
void non_type(T x[], int x_size);
template <>
void star_doc<int>(const int Ap[], const int Ap_size);
void overloaded(int x);
void overloaded(double x);
float *returns_pointer(int n);
void wrong_size_type(double x[], double x_size);

// ---- every <cstdint> spelling, and const in each place ----

void fixed_width(int8_t a, uint8_t b, int16_t c, uint16_t d, int32_t e, uint32_t f,
                 int64_t g, uint64_t h, size_t i, std::ptrdiff_t j, char k, double l,
                 unsigned long long m, signed n, std::int32_t o);
template <class T>
void const_placements(T const *a, const int a_size, const T *const b, const int b_size,
                      const T c[], int c_size, T const d, T *const e, int e_size);

#endif
