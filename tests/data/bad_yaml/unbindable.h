// Fixture for tests/data/bad_yaml: a function the dialect cannot bind.

/* Takes a pointer to a pointer, which has no NumPy equivalent. */
template<class T>
void by_ref(T **x)
{
    *x = 0;
}
