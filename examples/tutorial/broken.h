// A kernel header with a mistake bindthem explains (docs/tutorial.rst).

// Fills x with v: no x_size after x, so bindthem cannot pass its length.
void fill(double *x, const double v) { *x = v; }

// Sums x.
double total(const double x[], const int x_size)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}

// 2 a (built without instantiate.yml: instantiated on demand).
template <class T>
T twice(const T a) { return a + a; }
