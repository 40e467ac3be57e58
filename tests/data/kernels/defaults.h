// defaults.h - fixture: scalar default arguments become Python defaults.

#include <complex>

#define STRIDE 3
const int COUNT = 4;

// Writes every scalar it receives into out, as doubles, in order.
void report(double out[], const int out_size, const double w = 1e-3, const float f = 1.5f,
            const long n = -7, const unsigned int u = 0x10u, const bool on = true,
            const char c = 'T', const char nl = '\n', const signed char s = -0x3,
            const int oct = 017, const double neg = -.25, const bool off = false)
{
    const double v[] = {w, f, (double)n, (double)u, (double)on, (double)c, (double)nl,
                        (double)s, (double)oct, neg, (double)off};
    for (int i = 0; i < out_size && i < 11; i++)
        out[i] = v[i];
}

// y = omega * x + shift; the default omega converts per instantiation.
template <class T>
T relax(T y[], const int y_size, const T x[], const int x_size, const T omega = 0.5,
        const int shift = 0)
{
    for (int i = 0; i < y_size && i < x_size; i++)
        y[i] = omega * x[i] + (T)shift;
    return omega;
}

// The default is a complex parameter's real part.
std::complex<double> rotate(const std::complex<double> z, const std::complex<double> by = 2)
{
    return z * by;
}

// Defaults bindthem cannot evaluate (a macro, a constant, an expression,
// sizeof) leave their parameters required; so does a literal the parameter
// refuses as an argument (-1 for an unsigned, 1.5 for an int), and so does
// every parameter before a required one.
int opaque(const int a = STRIDE, const int b = COUNT + 1, const long c = sizeof(double),
           const double d = 1.0 / 3)
{
    return a * 1000 + b * 100 + (int)c * 10 + (int)(3 * d);
}

int refused(const unsigned int u = -1, const int k = 1.5)
{
    return (int)(u % 7) + k;
}

int before_required(const double w = 0.25, const int n = STRIDE)
{
    return (int)(w * 4) + n;
}

// Each default is used only when every later one is.
int tail(const int a, const int b = 2, const int c = 3)
{
    return 100 * a + 10 * b + c;
}
