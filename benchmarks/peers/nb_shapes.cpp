// nb_shapes.cpp - the kernels of benchmarks/shapes/shapes.h (and pyamg's
// gauss_seidel, its 8 instantiations) bound with nanobind, the way its users
// bind a function that takes NumPy arrays: an nb::ndarray per array argument
// (float64, its rank, C-contiguous, CPU; `const double` for an input, which
// also takes a read-only array), marked .noconvert() so that another dtype or
// a strided array is refused as bindthem refuses it (without it nanobind would
// copy it into a new array and call); the sizes are read from the array and
// cast to int. Keyword names and defaults as in shapes.h. Compiled by
// bench_peers.py against nanobind pip-installed into the bench cache.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>

// relaxation.h uses these without including them
#include <cmath>
#include <complex>
#include <iostream>
#include <limits>
#include <vector>

#include "instantiations.h"
#include "relaxation.h"
#include "shapes.h"

namespace nb = nanobind;
using namespace nb::literals;

template <class T> using Vec = nb::ndarray<T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using In = Vec<const double>;
using Out = Vec<double>;
using Mat = nb::ndarray<double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

template <class I, class T, class F> struct GaussSeidel {
    static void def(nb::module_ &m)
    {
        m.def(
            "gauss_seidel",
            [](Vec<const I> Ap, Vec<const I> Aj, Vec<const T> Ax, Vec<T> x, Vec<const T> b,
               I row_start, I row_stop, I row_step) {
                gauss_seidel<I, T, F>(Ap.data(), (int)Ap.shape(0), Aj.data(), (int)Aj.shape(0),
                                      Ax.data(), (int)Ax.shape(0), x.data(), (int)x.shape(0),
                                      b.data(), (int)b.shape(0), row_start, row_stop, row_step);
            },
            "Ap"_a.noconvert(), "Aj"_a.noconvert(), "Ax"_a.noconvert(), "x"_a.noconvert(),
            "b"_a.noconvert(), "row_start"_a, "row_stop"_a, "row_step"_a);
    }
};

NB_MODULE(nb_shapes, m)
{
    m.def(
        "k1", [](Out x) { k1(x.data(), (int)x.shape(0)); }, "x"_a.noconvert());
    m.def(
        "k63",
        [](In a, In b, In c, In d, In e, Out out, double w, int n, int mm) {
            k63(a.data(), (int)a.shape(0), b.data(), (int)b.shape(0), c.data(), (int)c.shape(0),
                d.data(), (int)d.shape(0), e.data(), (int)e.shape(0), out.data(), (int)out.shape(0),
                w, n, mm);
        },
        "a"_a.noconvert(), "b"_a.noconvert(), "c"_a.noconvert(), "d"_a.noconvert(),
        "e"_a.noconvert(), "out"_a.noconvert(), "w"_a, "n"_a, "m"_a);
    m.def(
        "k12",
        [](In a, In b, In c, In d, In e, In f, In g, In h, In i, In j, In k, Out out) {
            k12(a.data(), (int)a.shape(0), b.data(), (int)b.shape(0), c.data(), (int)c.shape(0),
                d.data(), (int)d.shape(0), e.data(), (int)e.shape(0), f.data(), (int)f.shape(0),
                g.data(), (int)g.shape(0), h.data(), (int)h.shape(0), i.data(), (int)i.shape(0),
                j.data(), (int)j.shape(0), k.data(), (int)k.shape(0), out.data(),
                (int)out.shape(0));
        },
        "a"_a.noconvert(), "b"_a.noconvert(), "c"_a.noconvert(), "d"_a.noconvert(),
        "e"_a.noconvert(), "f"_a.noconvert(), "g"_a.noconvert(), "h"_a.noconvert(),
        "i"_a.noconvert(), "j"_a.noconvert(), "k"_a.noconvert(), "out"_a.noconvert());
    m.def(
        "kdef", [](Out x, double w, int n) { kdef(x.data(), (int)x.shape(0), w, n); },
        "x"_a.noconvert(), "w"_a = 0.5, "n"_a = 2);
    m.def(
        "k2d", [](Mat x) { k2d(x.data(), (int)x.shape(0), (int)x.shape(1)); }, "x"_a.noconvert());
    m.def(
        "kz",
        [](Vec<std::complex<double>> z, std::complex<double> a) {
            kz(z.data(), (int)z.shape(0), a);
        },
        "z"_a.noconvert(), "a"_a);
    each_overload<GaussSeidel>(m);
}
