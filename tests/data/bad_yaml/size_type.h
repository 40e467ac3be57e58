// Fixture for tests/data/bad_yaml: a size parameter typed by a template parameter.

/* Element count in an S. */
template<class S>
long count_in(const double x[], const S x_size)
{
    return (long)x_size;
}
