/* bt_from_c.c - the one way C reaches bindthem's Python code: bindthem._from_c. */
#include "bt_from_c.h"

PyObject *bt_from_c(const char *name)
{
    PyObject *mod = PyImport_ImportModule("bindthem._from_c"), *r;

    if (!mod)
        return NULL;
    r = PyObject_GetAttrString(mod, name);
    Py_DECREF(mod);
    return r;
}

PyObject *bt_from_c_call(const char *name, PyObject *const *argv, Py_ssize_t n)
{
    PyObject *fn = bt_from_c(name), *r;

    if (!fn)
        return NULL;
    r = PyObject_Vectorcall(fn, argv, (size_t)n, NULL);
    Py_DECREF(fn);
    return r;
}
