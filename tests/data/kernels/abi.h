// abi.h - fixture: one kernel per ABI shape (scalars in and out, stack-passed
// arguments, arrays of every dtype, size parameters of every width).
#include <complex>
#include <cstddef>
#include <cstdint>

// Negates a bool.
bool not_bool(bool x) { return !x; }

// char plus one.
char next_char(char x) { return (char)(x + 1); }

// signed char minus one.
signed char prev_schar(signed char x) { return (signed char)(x - 1); }

// unsigned char plus one (wraps at 256).
unsigned char next_uchar(unsigned char x) { return (unsigned char)(x + 1); }

// Negates a short.
short neg_short(short x) { return (short)-x; }

// unsigned short plus one (wraps).
unsigned short next_ushort(unsigned short x) { return (unsigned short)(x + 1); }

// Negates an int.
int neg_int(int x) { return -x; }

// unsigned plus one (wraps).
unsigned next_uint(unsigned x) { return x + 1u; }

// Negates a long.
long neg_long(long x) { return -x; }

// unsigned long plus one.
unsigned long next_ulong(unsigned long x) { return x + 1ul; }

// Negates a long long.
long long neg_llong(long long x) { return -x; }

// unsigned long long plus one.
unsigned long long next_ullong(unsigned long long x) { return x + 1ull; }

// size_t plus one.
size_t next_size(size_t x) { return x + 1; }

// Negates an int64_t.
int64_t neg_int64(int64_t x) { return -x; }

// Halves a float.
float half_float(float x) { return x / 2.0f; }

// Halves a double.
double half_double(double x) { return x / 2.0; }

// Twice the conjugate.
std::complex<float> conj2_cfloat(std::complex<float> x) { return std::conj(x) * 2.0f; }

// Twice the conjugate.
std::complex<double> conj2_cdouble(std::complex<double> x) { return std::conj(x) * 2.0; }

// A short -1, to check sign extension of narrow returns.
short minus_one_short(void) { return -1; }

// 200 as unsigned char, to check zero extension of narrow returns.
unsigned char big_uchar() { return 200; }

// Kind of a bool argument: 1 when true.
int bool_to_int(const bool b) { return b ? 1 : 0; }

// Writes v into out[0]; returns nothing.
void store(int out[], const int out_size, const int v) { out[0] = v; }

// Eight integer arguments: two go on the stack.
long weigh8(int a, int b, int c, int d, int e, int f, int g, long h)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
}

// Ten doubles: two go on the stack.
double weigh10(double a, double b, double c, double d, double e, double f, double g,
               double h, double i, double j)
{
    return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i + 10 * j;
}

// Interleaved ints and floats, more than the registers of each.
double interleave(int a, float b, int c, double d, int e, float f, int g, double h, int i,
                  float j, int k, double l, int m, float n, int o, double p, int q, float r)
{
    return a + 2.0 * b + 3 * c + 4 * d + 5 * e + 6.0 * f + 7 * g + 8 * h + 9 * i + 10.0 * j +
           11 * k + 12 * l + 13 * m + 14.0 * n + 15 * o + 16 * p + 17 * q + 18.0 * r;
}

// Many parameters, arrays and scalars mixed; writes into out.
double many(const double a[], const int a_size, int i1, float f1, const int b[], const int b_size,
            long l1, double d1, float c[], const int c_size, short s1, unsigned u1,
            std::complex<double> z1, const std::complex<float> w[], const int w_size,
            char ch, bool flag, double d2, int out[], const int out_size, long long q,
            unsigned char uc, float f2)
{
    out[0] = a_size;
    out[1] = b_size;
    out[2] = c_size;
    out[3] = w_size;
    out[4] = out_size;
    c[0] = (float)(a[0] + b[0]);
    return a[a_size - 1] + i1 + 2.0 * f1 + 3.0 * (double)l1 + 4 * d1 + 5 * s1 + 6.0 * u1 +
           7 * z1.real() + 8 * z1.imag() + 9 * w[0].real() + 10 * w[0].imag() + 11 * ch +
           12 * (flag ? 1 : 0) + 13 * d2 + 14.0 * (double)q + 15 * uc + 16 * f2;
}

// Fills x with 1, 2, 3, ... (bool: alternating).
template <class T>
void fill_seq(T x[], const int x_size)
{
    for (int i = 0; i < x_size; i++)
        x[i] = (T)(i + 1);
}

// Returns x_size and does not touch x.
template <class T>
int count(const T *x, const int x_size)
{
    return x_size;
}

// Sum of a long array.
long sum_long(const long x[], const int x_size)
{
    long s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// Sum of an int64_t array.
int64_t sum_int64(const int64_t *x, const int x_size)
{
    int64_t s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// Sum of a long long array.
long long sum_llong(const long long x[], const int x_size)
{
    long long s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// Size held in a short.
int short_sized(const char x[], const short x_size) { return x_size; }

// Size held in an unsigned char.
int uchar_sized(const char x[], const unsigned char x_size) { return x_size; }

// Size held in a size_t.
long sizet_sized(const double x[], const size_t x_size) { return (long)x_size; }

// Sum of a const double array.
double sum_const(const double x[], const int x_size)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// Scales x in place.
void scale(double x[], const int x_size, const double a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}

// A function with the README's parameter names, for error messages.
template <class I, class T>
int errfunc(const I J[], const int J_size, T x[], const int x_size, T y[], const int y_size,
            double a)
{
    x[0] = (T)a;
    return J_size;
}
