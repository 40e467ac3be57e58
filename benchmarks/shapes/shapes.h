// shapes.h - small kernels of the call shapes bench_callgrind.py measures
// (bindthem builds them; the floor extension compiles the same code).
#pragma once

#include <complex>

/// One array.
void k1(double x[], int x_size) { x[0] += 1.0; }

/// Six arrays and three scalars (nine Python arguments; 15 C ones, some on the stack).
void k63(const double a[], int a_size, const double b[], int b_size, const double c[], int c_size, const double d[], int d_size,
                const double e[], int e_size, double out[], int out_size, double w, int n, int m)
{
    out[0] = a[0] + b[0] + c[0] + d[0] + e[0] + w * n + m;
}

/// Twelve arrays (24 C arguments: most on the stack).
void k12(const double a[], int a_size, const double b[], int b_size, const double c[], int c_size, const double d[], int d_size,
                const double e[], int e_size, const double f[], int f_size, const double g[], int g_size, const double h[], int h_size,
                const double i[], int i_size, const double j[], int j_size, const double k[], int k_size, double out[], int out_size)
{
    out[0] = a[0] + b[0] + c[0] + d[0] + e[0] + f[0] + g[0] + h[0] + i[0] + j[0] + k[0];
}

/// One array and two scalars with defaults.
void kdef(double x[], int x_size, double w = 0.5, int n = 2) { x[0] = w * n; }

/// One 2-D array: its rows and columns.
void k2d(double x[], int x_size0, int x_size1) { x[0] += x_size0 * x_size1; }

/// One complex array and a complex scalar.
void kz(std::complex<double> z[], int z_size, std::complex<double> a) { z[0] += a; }
