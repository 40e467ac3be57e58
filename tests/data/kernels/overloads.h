// overloads.h - fixture: remaps that merge functions with different
// parameter lists under one Python name, as pybind11's repeated m.def does.
// Each returns a code saying which function (and type) ran.

// Sum of x.
template <class T>
double total(const T x[], const int x_size)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// Sum of x[i] * w[i].
template <class T>
double weighted(const T x[], const int x_size, const T w[], const int w_size)
{
    double s = 0;
    for (int i = 0; i < x_size && i < w_size; i++)
        s += x[i] * w[i];
    return s;
}

// Sum of v, times `by`.
double scaled(const double v[], const int v_size, const double by = 10)
{
    double s = 0;
    for (int i = 0; i < v_size; i++)
        s += v[i];
    return s * by;
}

// Number of nonzero indices, negated (so that a test sees which ran).
double count(const int idx[], const int idx_size)
{
    int n = 0;
    for (int i = 0; i < idx_size; i++)
        n += idx[i] != 0;
    return -n;
}

// Half of v.
double half(const double v)
{
    return v / 2;
}

// n // 2, and 1000 more: another function under the same name.
long half_int(const long n)
{
    return n / 2 + 1000;
}
