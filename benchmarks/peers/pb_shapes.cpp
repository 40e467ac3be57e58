// pb_shapes.cpp - the kernels of benchmarks/shapes/shapes.h (and pyamg's
// gauss_seidel, its 8 instantiations) bound with pybind11, the way its users
// bind a function that takes NumPy arrays: a py::array_t<T, c_style> per array
// argument, without forcecast and marked .noconvert() so that another dtype or
// a strided array is refused as bindthem refuses it (without .noconvert()
// pybind11 would copy it into a new array on its second pass, for any cast
// NumPy calls safe), the rank checked by hand (array_t takes any rank), the
// written array through mutable_data() (which refuses a read-only array) and
// the sizes read from the array and cast to int. Keyword names and defaults as
// in shapes.h. Compiled by bench_peers.py against pybind11 pip-installed into
// the bench cache.
#include <pybind11/complex.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

// relaxation.h uses these without including them
#include <cmath>
#include <complex>
#include <iostream>
#include <limits>
#include <vector>

#include "instantiations.h"
#include "relaxation.h"
#include "shapes.h"

namespace py = pybind11;
using namespace pybind11::literals;

template <class T> using Arr = py::array_t<T, py::array::c_style>;

// the array's extent along its one axis (a ValueError for another rank)
template <class T> static int size1(const Arr<T> &a)
{
    if (a.ndim() != 1)
        throw py::value_error("expected a 1-D array");
    return (int)a.shape(0);
}

template <class I, class T, class F> struct GaussSeidel {
    static void def(py::module_ &m)
    {
        m.def(
            "gauss_seidel",
            [](const Arr<I> &Ap, const Arr<I> &Aj, const Arr<T> &Ax, Arr<T> &x, const Arr<T> &b,
               I row_start, I row_stop, I row_step) {
                gauss_seidel<I, T, F>(Ap.data(), size1(Ap), Aj.data(), size1(Aj), Ax.data(),
                                      size1(Ax), x.mutable_data(), size1(x), b.data(), size1(b),
                                      row_start, row_stop, row_step);
            },
            py::arg("Ap").noconvert(), py::arg("Aj").noconvert(), py::arg("Ax").noconvert(),
            py::arg("x").noconvert(), py::arg("b").noconvert(), "row_start"_a, "row_stop"_a,
            "row_step"_a);
    }
};

using In = Arr<double>;

PYBIND11_MODULE(pb_shapes, m)
{
    m.def(
        "k1", [](In &x) { k1(x.mutable_data(), size1(x)); }, py::arg("x").noconvert());
    m.def(
        "k63",
        [](const In &a, const In &b, const In &c, const In &d, const In &e, In &out, double w,
           int n, int mm) {
            k63(a.data(), size1(a), b.data(), size1(b), c.data(), size1(c), d.data(), size1(d),
                e.data(), size1(e), out.mutable_data(), size1(out), w, n, mm);
        },
        py::arg("a").noconvert(), py::arg("b").noconvert(), py::arg("c").noconvert(),
        py::arg("d").noconvert(), py::arg("e").noconvert(), py::arg("out").noconvert(), "w"_a,
        "n"_a, "m"_a);
    m.def(
        "k12",
        [](const In &a, const In &b, const In &c, const In &d, const In &e, const In &f,
           const In &g, const In &h, const In &i, const In &j, const In &k, In &out) {
            k12(a.data(), size1(a), b.data(), size1(b), c.data(), size1(c), d.data(), size1(d),
                e.data(), size1(e), f.data(), size1(f), g.data(), size1(g), h.data(), size1(h),
                i.data(), size1(i), j.data(), size1(j), k.data(), size1(k), out.mutable_data(),
                size1(out));
        },
        py::arg("a").noconvert(), py::arg("b").noconvert(), py::arg("c").noconvert(),
        py::arg("d").noconvert(), py::arg("e").noconvert(), py::arg("f").noconvert(),
        py::arg("g").noconvert(), py::arg("h").noconvert(), py::arg("i").noconvert(),
        py::arg("j").noconvert(), py::arg("k").noconvert(), py::arg("out").noconvert());
    m.def(
        "kdef", [](In &x, double w, int n) { kdef(x.mutable_data(), size1(x), w, n); },
        py::arg("x").noconvert(), "w"_a = 0.5, "n"_a = 2);
    m.def(
        "k2d",
        [](In &x) {
            if (x.ndim() != 2)
                throw py::value_error("expected a 2-D array");
            k2d(x.mutable_data(), (int)x.shape(0), (int)x.shape(1));
        },
        py::arg("x").noconvert());
    m.def(
        "kz",
        [](Arr<std::complex<double>> &z, std::complex<double> a) {
            kz(z.mutable_data(), size1(z), a);
        },
        py::arg("z").noconvert(), "a"_a);
    each_overload<GaussSeidel>(m);
}
