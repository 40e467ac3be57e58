/* complex_ops.cuh - every std::complex operation a kernel may use, for the
 * nvcc build test of bindthem's device std::complex (bindthem/cuda/nvcc_complex.cuh),
 * and a kernel whose complex parameters sit where only alignment to their
 * component puts them (after an int and a float), as the header says. */
#pragma once

/* Each operator and function once, results summed into y[0]. */
template <class T>
__global__ void every_op(const T a, T y[], const int y_size)
{
    typedef typename T::value_type R;
    T z = y[0], w(R(1), R(-2));
    z += a; z -= w; z *= a; z /= w; z += R(2); z -= R(1); z *= R(3); z /= R(4);
    z = z + w - a * w / (a - R(1)) + R(2) * z - z / R(3) + R(1) - -z + +w;
    T fs = std::exp(z) + std::log(w) + std::log10(w) + std::sqrt(z) + std::sin(z) + std::cos(z)
        + std::tan(w) + std::asin(w) + std::acos(w) + std::atan(w) + std::sinh(w) + std::cosh(w)
        + std::tanh(w) + std::asinh(w) + std::acosh(w) + std::atanh(w) + std::conj(z)
        + std::proj(z) + std::pow(z, a) + std::pow(z, R(2)) + std::pow(R(2), z)
        + std::polar(std::abs(z), std::arg(z)) + std::polar(std::norm(w));
    z = fs;
    z.real(z.real() + std::real(w));
    z.imag(z.imag() + std::imag(w));
    if (z == a || z != w || z == R(1) || R(1) != z)
        y[0] = z;
}

/* y = a * x + b * (n + f): complex<double> a after an int, complex<float> b
 * after a float. */
__global__ void mixed(const int n, const std::complex<double> a, const float f,
                      const std::complex<float> b, const std::complex<double> x[], const int x_size,
                      std::complex<double> y[], const int y_size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < x_size && i < y_size)
        y[i] = a * x[i] + std::complex<double>(b) * double(n + f);
}
