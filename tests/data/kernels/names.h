// names.h - fixture: namespaces and extern "C".
#include <complex>

namespace outer {
namespace inner {

// Twice x, in a nested namespace.
template <class T>
T twice(const T x)
{
    return x + x;
}

// Untemplated, nested.
int nested_plain(int x) { return x + 100; }

} // namespace inner

// One level deep.
double outer_half(double x) { return x / 2; }

} // namespace outer

namespace a::b::c {
// C++17 nested namespace definition.
template <class T>
void deep_fill(T x[], const int x_size, const T v)
{
    for (int i = 0; i < x_size; i++)
        x[i] = v;
}
} // namespace a::b::c

extern "C" {
// C linkage, in a block.
int c_block(const int x) { return x * 3; }

// Another one in the block, with an array.
double c_block_sum(const double x[], const int x_size)
{
    double s = 0;
    for (int i = 0; i < x_size; i++)
        s += x[i];
    return s;
}
}

// C linkage, by prefix.
extern "C" int c_prefix(const int x) { return x * 5; }

namespace wrapped {
// extern "C" inside a namespace: the symbol is the plain name.
extern "C" int c_in_ns(const int x) { return x * 7; }
}
