// floor.cpp - "the floor": the least a binding of gauss_seidel can do.
//
// A hand-written METH_FASTCALL extension (C++, so it can instantiate pyamg's
// template directly) that checks each array the way a safe binding must
// (PyArray_Check, exact dtype, native byte order, C-contiguous, aligned,
// writeable for x), reads the three int scalars and calls
// gauss_seidel<int, T, F> from the sdist's relaxation.h. No dispatch: one
// function per dtype. Like bindthem, it releases the GIL when the arrays hold
// at least 2048 elements in all.
//
// Also: the shapes of benchmarks/shapes/shapes.h (k1, k63, k12, kdef, k2d, kz), checked
// the same way; noop() (a METH_FASTCALL function that does nothing: the cost of the
// Python-side call itself) and the callgrind client requests used by
// bench_callgrind.py (no-ops when not running under valgrind).
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <valgrind/callgrind.h>

#include <cmath>
#include <complex>
#include <iostream>
#include <limits>
#include <vector>

#include "relaxation.h"
#include "shapes.h"

template <int NPY>
static inline bool ok_array(PyObject *o, bool writeable, const char *name)
{
    if (!PyArray_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an ndarray", name);
        return false;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    PyArray_Descr *d = PyArray_DESCR(a);
    if (d->type_num != NPY || !PyArray_ISNBO(d->byteorder)) {
        PyErr_Format(PyExc_TypeError, "%s has the wrong dtype", name);
        return false;
    }
    int need = NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | (writeable ? NPY_ARRAY_WRITEABLE : 0);
    if ((PyArray_FLAGS(a) & need) != need) {
        PyErr_Format(PyExc_ValueError, "%s must be C-contiguous, aligned%s", name,
                     writeable ? " and writeable" : "");
        return false;
    }
    return true;
}

template <class T, class F, int NPY>
static PyObject *gs(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "gauss_seidel takes 8 arguments");
        return NULL;
    }
    if (!ok_array<NPY_INT>(args[0], false, "Ap") || !ok_array<NPY_INT>(args[1], false, "Aj") ||
        !ok_array<NPY>(args[2], false, "Ax") || !ok_array<NPY>(args[3], true, "x") ||
        !ok_array<NPY>(args[4], false, "b"))
        return NULL;
    long s[3];
    for (int i = 0; i < 3; i++) {
        s[i] = PyLong_AsLong(args[5 + i]);
        if (s[i] == -1 && PyErr_Occurred())
            return NULL;
        if (s[i] < INT_MIN || s[i] > INT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "does not fit in int");
            return NULL;
        }
    }
    PyArrayObject *a[5];
    npy_intp total = 0;
    for (int i = 0; i < 5; i++) {
        a[i] = (PyArrayObject *)args[i];
        total += PyArray_SIZE(a[i]);
    }
#define FLOOR_CALL                                                                        \
    gauss_seidel<int, T, F>((const int *)PyArray_DATA(a[0]), (int)PyArray_SIZE(a[0]),      \
                            (const int *)PyArray_DATA(a[1]), (int)PyArray_SIZE(a[1]),      \
                            (const T *)PyArray_DATA(a[2]), (int)PyArray_SIZE(a[2]),        \
                            (T *)PyArray_DATA(a[3]), (int)PyArray_SIZE(a[3]),              \
                            (const T *)PyArray_DATA(a[4]), (int)PyArray_SIZE(a[4]),        \
                            (int)s[0], (int)s[1], (int)s[2])
    if (total >= 2048) {
        Py_BEGIN_ALLOW_THREADS
        FLOOR_CALL;
        Py_END_ALLOW_THREADS
    } else {
        FLOOR_CALL;
    }
    Py_RETURN_NONE;
}

static PyObject *noop(PyObject *, PyObject *const *, Py_ssize_t) { Py_RETURN_NONE; }

// The shapes of shapes.h, checked as gs() checks: float64 arrays, the last one written,
// 1-D (what their one size parameter, shape[0], needs; k2d checks its own 2).
static inline double *f64(PyObject *o, bool writeable, const char *name, int ndim = 1)
{
    if (!ok_array<NPY_DOUBLE>(o, writeable, name))
        return NULL;
    if (PyArray_NDIM((PyArrayObject *)o) < ndim) {
        PyErr_Format(PyExc_ValueError, "%s is a %d-d array: pass an array of at least %d dimension",
                     name, PyArray_NDIM((PyArrayObject *)o), ndim);
        return NULL;
    }
    return (double *)PyArray_DATA((PyArrayObject *)o);
}

static inline int size(PyObject *o) { return (int)PyArray_SIZE((PyArrayObject *)o); }

static inline bool to_int(PyObject *o, int *v)
{
    long l = PyLong_AsLong(o);
    if (l == -1 && PyErr_Occurred())
        return false;
    if (l < INT_MIN || l > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "does not fit in int");
        return false;
    }
    *v = (int)l;
    return true;
}

static inline bool to_double(PyObject *o, double *v)
{
    *v = PyFloat_AsDouble(o);
    return !(*v == -1.0 && PyErr_Occurred());
}

static PyObject *fk1(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "k1 takes 1 argument");
        return NULL;
    }
    double *x = f64(args[0], true, "x");
    if (!x)
        return NULL;
    k1(x, size(args[0]));
    Py_RETURN_NONE;
}

static PyObject *fk63(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "k63 takes 9 arguments");
        return NULL;
    }
    double *p[6];
    static const char *names[6] = {"a", "b", "c", "d", "e", "out"};
    for (int i = 0; i < 6; i++)
        if (!(p[i] = f64(args[i], i == 5, names[i])))
            return NULL;
    double w;
    int n, m;
    if (!to_double(args[6], &w) || !to_int(args[7], &n) || !to_int(args[8], &m))
        return NULL;
    k63(p[0], size(args[0]), p[1], size(args[1]), p[2], size(args[2]), p[3], size(args[3]), p[4],
        size(args[4]), p[5], size(args[5]), w, n, m);
    Py_RETURN_NONE;
}

static PyObject *fk12(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "k12 takes 12 arguments");
        return NULL;
    }
    double *p[12];
    for (int i = 0; i < 12; i++)
        if (!(p[i] = f64(args[i], i == 11, "array")))
            return NULL;
#define FLOOR_S(i) p[i], size(args[i])
    k12(FLOOR_S(0), FLOOR_S(1), FLOOR_S(2), FLOOR_S(3), FLOOR_S(4), FLOOR_S(5), FLOOR_S(6),
        FLOOR_S(7), FLOOR_S(8), FLOOR_S(9), FLOOR_S(10), FLOOR_S(11));
    Py_RETURN_NONE;
}

// kdef(x, w=0.5, n=2), by position only
static PyObject *fkdef(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "kdef takes 1 to 3 arguments");
        return NULL;
    }
    double *x = f64(args[0], true, "x"), w = 0.5;
    int n = 2;
    if (!x || (nargs > 1 && !to_double(args[1], &w)) || (nargs > 2 && !to_int(args[2], &n)))
        return NULL;
    kdef(x, size(args[0]), w, n);
    Py_RETURN_NONE;
}

// k2d(x): a 2-D float64 array, its two extents (each fits an int, as bindthem checks)
static PyObject *fk2d(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "k2d takes 1 argument");
        return NULL;
    }
    double *x = f64(args[0], true, "x", 2);
    if (!x)
        return NULL;
    npy_intp *d = PyArray_DIMS((PyArrayObject *)args[0]);
    if (d[0] > INT_MAX || d[1] > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "x's extents do not fit in int");
        return NULL;
    }
    k2d(x, (int)d[0], (int)d[1]);
    Py_RETURN_NONE;
}

// kz(z, a): a complex128 array and a complex scalar (any number Python converts)
static PyObject *fkz(PyObject *, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "kz takes 2 arguments");
        return NULL;
    }
    if (!ok_array<NPY_CDOUBLE>(args[0], true, "z"))
        return NULL;
    if (PyArray_NDIM((PyArrayObject *)args[0]) < 1) {
        PyErr_SetString(PyExc_ValueError, "z is a 0-d array: pass an array of at least 1 dimension");
        return NULL;
    }
    Py_complex c = PyComplex_AsCComplex(args[1]);
    if (c.real == -1.0 && PyErr_Occurred())
        return NULL;
    kz((std::complex<double> *)PyArray_DATA((PyArrayObject *)args[0]), size(args[0]),
       std::complex<double>(c.real, c.imag));
    Py_RETURN_NONE;
}

static PyObject *cg_zero(PyObject *, PyObject *)
{
    CALLGRIND_ZERO_STATS;
    Py_RETURN_NONE;
}

static PyObject *cg_dump(PyObject *, PyObject *arg)
{
    const char *s = PyUnicode_AsUTF8(arg);
    if (!s)
        return NULL;
    CALLGRIND_DUMP_STATS_AT(s);
    Py_RETURN_NONE;
}

static PyObject *on_valgrind(PyObject *, PyObject *)
{
    return PyBool_FromLong(RUNNING_ON_VALGRIND);
}

static PyMethodDef methods[] = {
    {"gauss_seidel_f32", (PyCFunction)(void (*)(void))gs<float, float, NPY_FLOAT>, METH_FASTCALL,
     "gauss_seidel<int, float, float>"},
    {"gauss_seidel_f64", (PyCFunction)(void (*)(void))gs<double, double, NPY_DOUBLE>, METH_FASTCALL,
     "gauss_seidel<int, double, double>"},
    {"gauss_seidel_c128", (PyCFunction)(void (*)(void))gs<std::complex<double>, double, NPY_CDOUBLE>,
     METH_FASTCALL, "gauss_seidel<int, std::complex<double>, double>"},
    {"k1", (PyCFunction)(void (*)(void))fk1, METH_FASTCALL, "shapes.h k1"},
    {"k63", (PyCFunction)(void (*)(void))fk63, METH_FASTCALL, "shapes.h k63"},
    {"k12", (PyCFunction)(void (*)(void))fk12, METH_FASTCALL, "shapes.h k12"},
    {"kdef", (PyCFunction)(void (*)(void))fkdef, METH_FASTCALL, "shapes.h kdef"},
    {"k2d", (PyCFunction)(void (*)(void))fk2d, METH_FASTCALL, "shapes.h k2d"},
    {"kz", (PyCFunction)(void (*)(void))fkz, METH_FASTCALL, "shapes.h kz"},
    {"noop", (PyCFunction)(void (*)(void))noop, METH_FASTCALL, "does nothing"},
    {"cg_zero", cg_zero, METH_NOARGS, "CALLGRIND_ZERO_STATS"},
    {"cg_dump", cg_dump, METH_O, "CALLGRIND_DUMP_STATS_AT(name)"},
    {"on_valgrind", on_valgrind, METH_NOARGS, "RUNNING_ON_VALGRIND"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_floor", NULL, -1, methods};

PyMODINIT_FUNC PyInit__floor(void)
{
    import_array();
    return PyModule_Create(&moddef);
}
