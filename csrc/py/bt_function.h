/* bt_function.h - the Python type of a bound kernel: one callable per
 * Python name, its overloads in YAML order, a dispatch cache keyed by the
 * arguments' dispatch codes. */
#ifndef BT_FUNCTION_H
#define BT_FUNCTION_H

#include "bt_callable.h"

/* New reference: a Function for plan entry f, with calls[i] prepared for
 * f->ovs[i] (the function takes over `arena`, which holds the calls).
 * owner keeps the shared library loaded; module is the __module__ name;
 * info its Library's LibraryInfo (or NULL); options build()/load()'s
 * {"gil", "copy_const"} (or None: the defaults). */
BT_HIDDEN PyObject *bt_function_new(BtState *st, const BtFunc *f, BtCall *calls, BtArena *arena,
                                    PyObject *owner, PyObject *module, PyObject *info,
                                    PyObject *options);

/* _core.open_function: an open Function (instantiation on demand). */
BT_HIDDEN extern PyMethodDef bt_function_methods[];

#endif
