// Fixture for tests/core/test_sizes.py: the size parameters after an array get
// its extents, `p_size` its shape[0] and `p_sizeK` its shape[K].

/* One damped Jacobi sweep over rows row_start, row_start + row_step, ...
 * (up to, not including, row_stop) of the CSR system A x = b. temp is
 * scratch space as long as x. */
template <class I, class T>
void jacobi(const I Ap[], const int Ap_size, const I Aj[], const int Aj_size,
            const T Ax[], const int Ax_size, T x[], const int x_size,
            const T b[], const int b_size, T temp[], const int temp_size,
            const I row_start, const I row_stop, const I row_step, const T omega)
{
    for (I i = row_start; i != row_stop; i += row_step)
        temp[i] = x[i];
    for (I i = row_start; i != row_stop; i += row_step) {
        T diag = 0, off = 0;
        for (I k = Ap[i]; k < Ap[i + 1]; k++) {
            if (Aj[k] == i)
                diag = Ax[k];
            else
                off += Ax[k] * temp[Aj[k]];
        }
        if (diag != T(0))
            x[i] = (T(1) - omega) * temp[i] + omega * (b[i] - off) / diag;
    }
}

/* The same sweep for several systems at once: x, b and temp are n-by-m
 * row-major arrays holding one system per column; m is x's second extent. */
template <class I, class T>
void jacobi_m(const I Ap[], const int Ap_size, const I Aj[], const int Aj_size,
              const T Ax[], const int Ax_size, T x[], const int x_size0, const int x_size1,
              const T b[], const int b_size0, const int b_size1,
              T temp[], const int temp_size0, const int temp_size1,
              const I row_start, const I row_stop, const I row_step, const T omega)
{
    const int m = x_size1;
    for (I i = row_start; i != row_stop; i += row_step)
        for (int c = 0; c < m; c++)
            temp[i * m + c] = x[i * m + c];
    for (I i = row_start; i != row_stop; i += row_step) {
        T diag = 0;
        for (I k = Ap[i]; k < Ap[i + 1]; k++)
            if (Aj[k] == i)
                diag = Ax[k];
        if (diag == T(0))
            continue;
        for (int c = 0; c < m; c++) {
            T off = 0;
            for (I k = Ap[i]; k < Ap[i + 1]; k++)
                if (Aj[k] != i)
                    off += Ax[k] * temp[Aj[k] * m + c];
            x[i * m + c] = (T(1) - omega) * temp[i * m + c] + omega * (b[i * m + c] - off) / diag;
        }
    }
}

/* Reads x as a column-major matrix with x_size rows and ncols columns and
 * writes it, row-major, into out. */
void columns_to_rows(const int x[], const int x_size, const int ncols, int out[],
                     const int out_size)
{
    for (int i = 0; i < x_size; i++)
        for (int j = 0; j < ncols; j++)
            out[i * ncols + j] = x[i + j * x_size];
}

/* Writes what x's size parameters and out_size received into out. */
template <class T>
void extents3(const T x[], const long x_size0, const int x_size1, const unsigned short x_size2,
              long out[], const int out_size)
{
    out[0] = x_size0;
    out[1] = x_size1;
    out[2] = x_size2;
    out[3] = out_size;
}

/* Only the third extent of x. */
long third_extent(const double x[], const int x_size2) { return x_size2; }

/* `x_size` and `x_size1` together: 1000 * shape[0] + shape[1]. */
long first_and_second(const float x[], const int x_size, const int x_size1)
{
    return 1000L * x_size + x_size1;
}

/* Narrow size types, one per axis: 1000 * shape[0] + shape[1]. */
long narrow(const signed char x[], const short x_size0, const unsigned char x_size1)
{
    return 1000L * x_size0 + x_size1;
}

/* A size type given by a template parameter: 1000 * shape[0] + shape[1]. */
template <class S>
long sized_by(const double x[], const S x_size0, const S x_size1)
{
    return 1000L * (long)x_size0 + (long)x_size1;
}
