// decls.h - fixture for bt_mangle: one declaration per mangling case.
//
// Written by tests/core/c/test_mangle.c (run_mangle_test.sh --update); do not edit.
// Bindthem dialect: no preprocessor lines, so an includer brings
// <complex>, <cstddef> and <cstdint> first. Instantiations are in
// instantiate.yml next to this file.

// Gauss-Seidel relaxation (pyamg's signature).
template <class I, class T, class F>
void gauss_seidel(const I Ap[], const int Ap_size, const I Aj[], const int Aj_size, const T Ax[], const int Ax_size, T x[], const int x_size, const T b[], const int b_size, const I row_start, const I row_stop, const I row_step)
{
}

// Weighted Jacobi.
template <class I, class T, class F>
void jacobi(const I *Ap, const int Ap_size, const I *Aj, const int Aj_size, const T *Ax, const int Ax_size, const T *x, const int x_size, const T *b, const int b_size, T *temp, const int temp_size, const I row_start, const I row_stop, const I row_step, const F *omega, const int omega_size)
{
}

// CSR matrix-vector product.
template <class I, class T>
void csr_matvec(const I n_row, const I n_col, const I Ap[], const int Ap_size, const I Aj[], const int Aj_size, const T Ax[], const int Ax_size, const T Xx[], const int Xx_size, T Yx[], const int Yx_size)
{
}

// Returns the second template parameter: T0_.
template <class I, class T>
T zero_value(const I n)
{
    return {};
}

// Returns I.
template <class I, class T>
I count_nonzero(const I Ap[], const int Ap_size, const T Ax[], const int Ax_size)
{
    return {};
}

// Returns bool.
template <class I>
bool is_sorted(const I *Aj, const int Aj_size, const I n)
{
    return {};
}

// Returns int from a template.
template <class I>
int max_nnz(const I Ap[], const int Ap_size)
{
    return {};
}

// Four template parameters: T2_.
template <class I, class J, class T, class F>
F four_params(const I *a, const int a_size, const J *b, const int b_size, T *c, const int c_size, F d, const J e)
{
    return {};
}

// The brief's example, at file scope.
template <class I, class T>
void myfunc_flat(I x[], const int x_size, int n)
{
}

// Complex arrays and a complex scalar.
template <class T>
void scale_complex(const std::complex<T> *x, const int x_size, std::complex<T> *y, const int y_size, std::complex<T> alpha)
{
}

// Complex return.
template <class T>
std::complex<T> complex_dot(const std::complex<T> x[], const int x_size, const std::complex<T> y[], const int y_size)
{
    return {};
}

// std::complex<T> first, then T: St7complexIT_E, then S_ for T_.
template <class T>
void complex_first(std::complex<T> a, const T *b, const int b_size, T c, const std::complex<T> d)
{
}

// Concrete complex next to std::complex<T>.
template <class T>
void mixed_complex(const T x[], const int x_size, const std::complex<double> y[], const int y_size, std::complex<double> z, std::complex<T> w, std::complex<float> v[], const int v_size)
{
}

// Complex template arguments, twice.
template <class T, class U>
void pair_copy(const T *a, const int a_size, U *b, const int b_size)
{
}

// bool result from complex input.
template <class T>
bool has_nan(const std::complex<T> x[], const int x_size)
{
    return {};
}

// Untemplated complex return.
std::complex<double> cdouble_sum(const std::complex<double> *x, const int x_size)
{
    return {};
}

// Untemplated complex float by value and arrays.
void cfloat_axpy(std::complex<float> a, const std::complex<float> x[], const int x_size, std::complex<float> y[], const int y_size, const std::complex<float> b)
{
}

// int64_t is long: l, distinct from T_ even when I is long.
template <class I>
void int64_index(const int64_t *idx, const int idx_size, I *out, const int out_size, const int64_t n)
{
}

// size_t is unsigned long: m.
void size_fill(double x[], const int x_size, size_t n, const size_t stride)
{
}

// long long is x, not l.
long long llong_sum(const long long *x, const int x_size, const long *y, const int y_size, long long n)
{
    return {};
}

// Templated on long and size types.
template <class I, class T>
I long_kernel(const I Ap[], const int Ap_size, const size_t n, T x[], const int x_size, const int64_t m)
{
    return {};
}

namespace ns {
// The brief's example: _ZN2ns6myfuncIidEEvPT_i.
template <class I, class T>
void myfunc(I *x, const int x_size, int n)
{
}
}

namespace amg { namespace relax {
// Successive over-relaxation in two namespaces.
template <class I, class T, class F>
void sor(const I Ap[], const int Ap_size, const I Aj[], const int Aj_size, const T Ax[], const int Ax_size, T x[], const int x_size, const T b[], const int b_size, const F omega)
{
}
} }

namespace a { namespace b { namespace c {
// Three namespaces deep.
template <class T>
void deep_apply(T *x, const int x_size, const T *y, const int y_size)
{
}
} } }

namespace amg {
// One namespace, returning T.
template <class I, class T>
T prolong(const I Ap[], const int Ap_size, T x[], const int x_size)
{
    return {};
}
}

namespace amg { namespace util {
// Untemplated, in namespaces.
void axpy(const double *x, const int x_size, double *y, const int y_size, double a)
{
}
} }

namespace amg {
// Untemplated, one namespace, no parameters.
int amg_version()
{
    return {};
}
}

namespace amg { namespace krylov {
// Namespaced template, complex of T.
template <class T>
std::complex<T> cg_step(const std::complex<T> *r, const int r_size, std::complex<T> *p, const int p_size, const T tol)
{
    return {};
}
} }

namespace amg { namespace util {
// Namespaced, same parameter types as axpy.
void axpy2(const double x[], const int x_size, double y[], const int y_size, double a, const double z[], const int z_size)
{
}
} }

// Repeated const double*: PKd, then S0_.
double dot_d(const double *x, const int x_size, const double *y, const int y_size)
{
    return {};
}

// PKd, S0_, then Pd.
void add_d(const double x[], const int x_size, const double y[], const int y_size, double z[], const int z_size)
{
}

// Interleaved pointer types.
void mixed_ptrs(const int *a, const int a_size, const double *b, const int b_size, const int *c, const int c_size, double *d, const int d_size, const double *e, const int e_size, int *f, const int f_size, double *g, const int g_size)
{
}

extern "C" {
// extern "C": the plain name.
void c_axpy(const double x[], const int x_size, double y[], const int y_size, double a)
{
}
}

extern "C" {
// extern "C", no parameters.
void c_noargs()
{
}
}

extern "C" {
// extern "C", returns int.
int c_count(const int x[], const int x_size, long n)
{
    return {};
}
}

// Every scalar type by value.
void scalars_all(bool a, char b, signed char c, unsigned char d, short e, unsigned short f, int g, unsigned int h, long i, unsigned long j, long long k, unsigned long long l, float m, double n, std::complex<float> o, std::complex<double> p)
{
}

// Every scalar type as const by value (const dropped).
unsigned char scalars_const(const bool a, const char b, const signed char c, const unsigned char d, const short e, const unsigned short f, const int g, const unsigned int h, const long i, const unsigned long j, const long long k, const unsigned long long l, const float m, const double n)
{
    return {};
}

// Pointers to several scalars.
bool scalar_ptrs(const bool *a, const int a_size, char *b, const int b_size, const unsigned char *c, const int c_size, const long long *d, const int d_size, unsigned long long *e, const int e_size, const short *f, const int f_size, unsigned short *g, const int g_size, const unsigned int *h, const int h_size, float *i, const int i_size, const signed char *j, const int j_size)
{
    return {};
}

// Identity on every scalar type.
template <class T>
T identity(T x)
{
    return {};
}

// const T return: g++ keeps KT_.
template <class T>
const T first_of(const T *x, const int x_size)
{
    return {};
}

// const int return of a template: Ki.
template <class T>
const int const_int_ret(const T x[], const int x_size)
{
    return {};
}

// Twenty-four parameters: substitutions past S9_ into SA_.
void big_mix(const double *a, const int a_size, const int *b, const int b_size, double *c, const int c_size, int *d, const int d_size, const float *e, const int e_size, float *f, const int f_size, const long *g, const int g_size, long *h, const int h_size, const double *i, const int i_size, const int *j, const int j_size, double *k, const int k_size, int *l, const int l_size, double m, int n, const std::complex<double> *o, const int o_size, std::complex<double> *p, const int p_size, const std::complex<float> *q, const int q_size, std::complex<float> *r, const int r_size, const unsigned long *s, const int s_size, unsigned long *t, const int t_size, const double *u, const int u_size, std::complex<double> *v, const int v_size, const unsigned long *w, const int w_size, float x)
{
}

// Every scalar as const T[] and T[]: substitutions past SZ_ into S10_.
void every_pointer(const bool a[], const int a_size, bool b[], const int b_size, const char c[], const int c_size, char d[], const int d_size, const signed char e[], const int e_size, signed char f[], const int f_size, const unsigned char g[], const int g_size, unsigned char h[], const int h_size, const short i[], const int i_size, short j[], const int j_size, const unsigned short k[], const int k_size, unsigned short l[], const int l_size, const int m[], const int m_size, int n[], const int n_size, const unsigned int o[], const int o_size, unsigned int p[], const int p_size, const long q[], const int q_size, long r[], const int r_size, const unsigned long s[], const int s_size, unsigned long t[], const int t_size, const long long u[], const int u_size, long long v[], const int v_size, const unsigned long long w[], const int w_size, unsigned long long x[], const int x_size, const float y[], const int y_size, float z[], const int z_size, const double p26[], const int p26_size, double p27[], const int p27_size, const std::complex<float> p28[], const int p28_size, std::complex<float> p29[], const int p29_size, const std::complex<double> p30[], const int p30_size, std::complex<double> p31[], const int p31_size, const double p32[], const int p32_size, std::complex<float> p33[], const int p33_size, const bool p34[], const int p34_size, unsigned long long p35[], const int p35_size)
{
}

// Template with many repeats.
template <class I, class T, class F>
F big_template(const I *a, const int a_size, I *b, const int b_size, const T *c, const int c_size, T *d, const int d_size, const F *e, const int e_size, F *f, const int f_size, const std::complex<F> *g, const int g_size, std::complex<F> *h, const int h_size, const I i, T j, std::complex<F> k, const double *l, const int l_size, double *m, const int m_size, const I *n, const int n_size, const T *o, const int o_size, const std::complex<F> *p, const int p_size, int q, const F r, const int *s, const int s_size, int *t, const int t_size, const std::complex<double> *u, const int u_size)
{
    return {};
}

namespace amg { namespace big {
// Namespaced template with many repeats.
template <class I, class T>
void ns_big(const I a[], const int a_size, const I b[], const int b_size, const T c[], const int c_size, T d[], const int d_size, const T e[], const int e_size, I f[], const int f_size, const I g, const I h, const double i[], const int i_size, double j[], const int j_size, const double k[], const int k_size, const std::complex<T> l[], const int l_size, std::complex<T> m[], const int m_size, const T n[], const int n_size)
{
}
} }

// No parameters: v.
void nothing()
{
}

// Template, no parameters: return T then v.
template <class T>
T make_zero()
{
    return {};
}

// Template, void, no parameters.
template <class I>
void tick()
{
}

namespace amg { namespace util {
// Namespaced template, no parameters.
template <class I, class T>
T ns_zero()
{
    return {};
}
} }

// const T and T by value mix.
template <class T>
void axpby(const T a, T *x, const int x_size, T b, T *y, const int y_size)
{
}

