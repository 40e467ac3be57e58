/* bt_function.h - the Python type of a bound kernel: one callable per
 * Python name, its overloads in YAML order, a dispatch cache keyed by the
 * arguments' dispatch codes. */
#ifndef BT_FUNCTION_H
#define BT_FUNCTION_H

#include "bt_call.h"

/* New reference: a Function for plan entry f, with calls[i] prepared for
 * f->ovs[i] (the function takes over `arena`, which holds the calls).
 * owner keeps the shared library loaded; module is the __module__ name. */
BT_HIDDEN PyObject *bt_function_new(BtState *st, const BtFunc *f, BtCall *calls, BtArena *arena,
                                    PyObject *owner, PyObject *module);

/* What a CUDA kernel shares with a Function (bt_cudapy_kernel.c uses them):
 * tp_descr_get (no binding; inspect.signature then reads
 * __text_signature__), __copy__/__deepcopy__ (the object itself),
 * _repr_html_ and _repr_pretty_ (bindthem._display's function_html and
 * function_pretty). */
BT_HIDDEN PyObject *bt_function_descr_get(PyObject *self, PyObject *obj, PyObject *type);
BT_HIDDEN PyObject *bt_function_copy(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_function_repr_html(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_function_repr_pretty(PyObject *self, PyObject *const *args,
                                            Py_ssize_t nargs);
/* New reference: info.<method>(name) (a LibraryInfo's _reduce_function or
 * _token); TypeError when info is NULL (no Library). */
/* New reference: bindthem._from_c.<name>, and a call of it (see there). */
BT_HIDDEN PyObject *bt_from_c(const char *name);
BT_HIDDEN PyObject *bt_from_c_call(const char *name, PyObject *const *argv, Py_ssize_t n);
BT_HIDDEN PyObject *bt_function_ask_info(PyObject *info, PyObject *name, const char *method);

#endif
