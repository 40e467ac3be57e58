// Fixture for tests/data/bad_yaml: templated functions of known arity.

/* Three template parameters. */
template<class I, class T, class F>
void axpy3(const I n, const T x[], const int x_size, F y[], const int y_size)
{
    for (I i = 0; i < n; i++)
        y[i] += x[i];
}

/* Two template parameters. */
template<class I, class T>
void scale_rows(const I n_row, T Ax[], const int Ax_size)
{
    for (I i = 0; i < n_row; i++)
        Ax[i] *= 2;
}

/* std::complex of a template parameter. */
template<class T>
T complex_sum(const std::complex<T> z[], const int z_size)
{
    T s = 0;
    for (int i = 0; i < z_size; i++)
        s += z[i].real();
    return s;
}

/* Not a template. */
int untemplated_count(const int n)
{
    return n;
}

/* Not listed by the shared YAML. */
int helper_function(const int n)
{
    return n + 1;
}
