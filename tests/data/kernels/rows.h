/* rows.h - fixture: kernels that travel to other processes (test_pickle,
 * test_parallel); the README's Dask example binds the same three. */

// Sum of x.
template <class T>
T total(const T x[], const int x_size)
{
    T s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// x *= a, in place.
template <class T>
void scale(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
}

// out[i] = the sum of row i of the n-by-m matrix x.
template <class T>
void rowsum(const T x[], const int x_size0, const int x_size1, T out[], const int out_size)
{
    for (int i = 0; i < x_size0; i++) {
        T s = 0;
        for (int j = 0; j < x_size1; j++)
            s += x[i * x_size1 + j];
        out[i] = s;
    }
}
