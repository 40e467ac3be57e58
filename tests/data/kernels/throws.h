#ifndef THROWS_H
#define THROWS_H
#include <new>
#include <stdexcept>

// Throws what `kind` asks for, after writing x[0] = 1.
template <class T>
int thrower(T x[], const int x_size, const int kind)
{
    x[0] = 1;
    switch (kind) {
    case 1: throw std::runtime_error("boom");
    case 2: throw std::out_of_range("index 9 out of range");
    case 3: throw std::invalid_argument("bad argument");
    case 4: throw std::overflow_error("too big");
    case 5: throw std::bad_alloc();
    case 6: throw 42;
    }
    return 7;
}
#endif
