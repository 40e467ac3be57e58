// instantiations.h - the 8 instantiations of pyamg's gauss_seidel that its
// instantiate.yml lists, in its order, for the peers' modules: each_overload<Def>(m)
// calls Def<I, T, F>::def(m) for each.
#pragma once

#include <complex>
#include <cstdint>

template <template <class, class, class> class Def, class M> void each_overload(M &m)
{
    Def<int, float, float>::def(m);
    Def<int, double, double>::def(m);
    Def<int, std::complex<float>, float>::def(m);
    Def<int, std::complex<double>, double>::def(m);
    Def<int64_t, float, float>::def(m);
    Def<int64_t, double, double>::def(m);
    Def<int64_t, std::complex<float>, float>::def(m);
    Def<int64_t, std::complex<double>, double>::def(m);
}
