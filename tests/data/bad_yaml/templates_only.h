// Fixture for tests/data/bad_yaml: only templated functions, so a YAML that
// lists none of them binds nothing.

/* Doubles every entry. */
template<class T>
void twice(T x[], const int x_size)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= 2;
}
