// bindthem's std::complex for nvcc's device pass (bindthem/cuda/_nvcc.py).
// libstdc++'s std::complex<float> and <double> do their arithmetic on GCC's
// __complex__ types, which nvcc's device code drops without a word: a kernel's
// y[i] = a * x[i] compiles to y[i] = a. This one has libstdc++'s layout (two
// T, aligned as T) and name (St7complex), and computes with libcu++'s
// cuda::std::complex. The host pass keeps libstdc++'s; <complex> is then an
// empty include in the device pass (its guard is defined here).
#if defined(__CUDA_ARCH__) && !defined(_GLIBCXX_COMPLEX) && !defined(_LIBCPP_COMPLEX)
#define _GLIBCXX_COMPLEX 1
#define _LIBCPP_COMPLEX
#include <cmath>

namespace std {
template <class T>
class complex;
// a * b and a / b by libcu++ (defined below, once <cuda/std/complex> is in:
// it converts from and to this complex, so it must be complete first)
template <class T>
__host__ __device__ complex<T> __bt_cx_mul(const complex<T> &a, const complex<T> &b);
template <class T>
__host__ __device__ complex<T> __bt_cx_div(const complex<T> &a, const complex<T> &b);

template <class T>
class complex {
    T re_, im_;

public:
    typedef T value_type;
    __host__ __device__ constexpr complex(const T &re = T(), const T &im = T()) : re_(re), im_(im) {}
    template <class U>
    __host__ __device__ constexpr complex(const complex<U> &z) : re_(T(z.real())), im_(T(z.imag()))
    {
    }
    __host__ __device__ constexpr T real() const { return re_; }
    __host__ __device__ constexpr T imag() const { return im_; }
    __host__ __device__ constexpr void real(T v) { re_ = v; }
    __host__ __device__ constexpr void imag(T v) { im_ = v; }
    __host__ __device__ constexpr complex &operator=(const T &v)
    {
        re_ = v;
        im_ = T();
        return *this;
    }
    __host__ __device__ constexpr complex &operator+=(const T &v)
    {
        re_ += v;
        return *this;
    }
    __host__ __device__ constexpr complex &operator-=(const T &v)
    {
        re_ -= v;
        return *this;
    }
    __host__ __device__ constexpr complex &operator*=(const T &v)
    {
        re_ *= v;
        im_ *= v;
        return *this;
    }
    __host__ __device__ constexpr complex &operator/=(const T &v)
    {
        re_ /= v;
        im_ /= v;
        return *this;
    }
    template <class U>
    __host__ __device__ constexpr complex &operator=(const complex<U> &z)
    {
        re_ = T(z.real());
        im_ = T(z.imag());
        return *this;
    }
    template <class U>
    __host__ __device__ constexpr complex &operator+=(const complex<U> &z)
    {
        re_ += T(z.real());
        im_ += T(z.imag());
        return *this;
    }
    template <class U>
    __host__ __device__ constexpr complex &operator-=(const complex<U> &z)
    {
        re_ -= T(z.real());
        im_ -= T(z.imag());
        return *this;
    }
    template <class U>
    __host__ __device__ complex &operator*=(const complex<U> &z)
    {
        return *this = __bt_cx_mul(*this, complex(z));
    }
    template <class U>
    __host__ __device__ complex &operator/=(const complex<U> &z)
    {
        return *this = __bt_cx_div(*this, complex(z));
    }
};
} // namespace std

#include <cuda/std/complex>

namespace std {
#define BT_CX template <class T> __host__ __device__ inline
// libcu++'s value as ours
BT_CX complex<T> __bt_cx(const ::cuda::std::complex<T> &c) { return complex<T>(c.real(), c.imag()); }
BT_CX ::cuda::std::complex<T> __bt_cu(const complex<T> &z)
{
    return ::cuda::std::complex<T>(z.real(), z.imag());
}
BT_CX complex<T> __bt_cx_mul(const complex<T> &a, const complex<T> &b)
{
    return __bt_cx(__bt_cu(a) * __bt_cu(b));
}
BT_CX complex<T> __bt_cx_div(const complex<T> &a, const complex<T> &b)
{
    return __bt_cx(__bt_cu(a) / __bt_cu(b));
}
BT_CX complex<T> operator+(const complex<T> &z) { return z; }
BT_CX complex<T> operator-(const complex<T> &z) { return complex<T>(-z.real(), -z.imag()); }
BT_CX complex<T> operator+(const complex<T> &a, const complex<T> &b) { return complex<T>(a) += b; }
BT_CX complex<T> operator+(const complex<T> &a, const T &b) { return complex<T>(a) += b; }
BT_CX complex<T> operator+(const T &a, const complex<T> &b) { return complex<T>(b) += a; }
BT_CX complex<T> operator-(const complex<T> &a, const complex<T> &b) { return complex<T>(a) -= b; }
BT_CX complex<T> operator-(const complex<T> &a, const T &b) { return complex<T>(a) -= b; }
BT_CX complex<T> operator-(const T &a, const complex<T> &b)
{
    return complex<T>(a - b.real(), -b.imag());
}
BT_CX complex<T> operator*(const complex<T> &a, const complex<T> &b) { return complex<T>(a) *= b; }
BT_CX complex<T> operator*(const complex<T> &a, const T &b) { return complex<T>(a) *= b; }
BT_CX complex<T> operator*(const T &a, const complex<T> &b) { return complex<T>(b) *= a; }
BT_CX complex<T> operator/(const complex<T> &a, const complex<T> &b) { return complex<T>(a) /= b; }
BT_CX complex<T> operator/(const complex<T> &a, const T &b) { return complex<T>(a) /= b; }
BT_CX complex<T> operator/(const T &a, const complex<T> &b) { return complex<T>(a) /= b; }
BT_CX bool operator==(const complex<T> &a, const complex<T> &b)
{
    return a.real() == b.real() && a.imag() == b.imag();
}
BT_CX bool operator==(const complex<T> &a, const T &b) { return a.real() == b && a.imag() == T(); }
BT_CX bool operator==(const T &a, const complex<T> &b) { return b == a; }
BT_CX bool operator!=(const complex<T> &a, const complex<T> &b) { return !(a == b); }
BT_CX bool operator!=(const complex<T> &a, const T &b) { return !(a == b); }
BT_CX bool operator!=(const T &a, const complex<T> &b) { return !(b == a); }
BT_CX T real(const complex<T> &z) { return z.real(); }
BT_CX T imag(const complex<T> &z) { return z.imag(); }
BT_CX complex<T> conj(const complex<T> &z) { return complex<T>(z.real(), -z.imag()); }
BT_CX T norm(const complex<T> &z) { return z.real() * z.real() + z.imag() * z.imag(); }
BT_CX T abs(const complex<T> &z) { return ::cuda::std::abs(__bt_cu(z)); }
BT_CX T arg(const complex<T> &z) { return ::cuda::std::arg(__bt_cu(z)); }
BT_CX complex<T> polar(const T &r, const T &theta = T()) { return __bt_cx(::cuda::std::polar(r, theta)); }
#define BT_CX_FN(f)                                                                                \
    BT_CX complex<T> f(const complex<T> &z) { return __bt_cx(::cuda::std::f(__bt_cu(z))); }
BT_CX_FN(proj)
BT_CX_FN(exp)
BT_CX_FN(log)
BT_CX_FN(log10)
BT_CX_FN(sqrt)
BT_CX_FN(sin)
BT_CX_FN(cos)
BT_CX_FN(tan)
BT_CX_FN(asin)
BT_CX_FN(acos)
BT_CX_FN(atan)
BT_CX_FN(sinh)
BT_CX_FN(cosh)
BT_CX_FN(tanh)
BT_CX_FN(asinh)
BT_CX_FN(acosh)
BT_CX_FN(atanh)
#undef BT_CX_FN
BT_CX complex<T> pow(const complex<T> &a, const complex<T> &b)
{
    return __bt_cx(::cuda::std::pow(__bt_cu(a), __bt_cu(b)));
}
BT_CX complex<T> pow(const complex<T> &a, const T &b) { return __bt_cx(::cuda::std::pow(__bt_cu(a), b)); }
BT_CX complex<T> pow(const T &a, const complex<T> &b) { return __bt_cx(::cuda::std::pow(a, __bt_cu(b))); }
#undef BT_CX
} // namespace std
#endif
