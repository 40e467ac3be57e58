/* bt_handle_bind.h - a Library's handle types at bind time (the CPU back
 * end's): one HandleType per handle type of its header, what its calls
 * need of them, and load()/build()'s handles= and null_handles=. */
#ifndef BT_HANDLE_BIND_H
#define BT_HANDLE_BIND_H

#include "bt_call.h"
#include "bt_meta.h"

/* New reference: a tuple of one new HandleType per handle type of header
 * h, in BtHeader.handles' order (a type ref's handle_ref - 1 indexes it),
 * or NULL. */
BT_HIDDEN PyObject *bt_handle_types(BtState *st, const BtHeader *h);

/* Fills what f's calls (calls[k] prepared for f->ovs[k]) need of the
 * handle types `types`: each handle slot's key and name (copied into
 * arena), a returned handle's HandleType (borrowed: the caller keeps
 * types as long as the calls) and whether a NULL return gives None
 * (options' "null_handles": "none" for every function, or {name: "none"};
 * "raise", the default, raises NullHandleError). 0, or -1 with an
 * exception set. */
BT_HIDDEN int bt_handle_calls(PyObject *types, const BtFunc *f, BtCall *calls, BtArena *arena,
                              PyObject *options);

/* After the walk (funcs: the bound {name: Function}; left_out: its list of
 * what was not bound, with why): options' "handles" ({type name: function
 * name}) gives each named HandleType its destructor, a bound Function of
 * one overload whose one parameter is a handle of that type, and marks its
 * call (BtCall.destroys); "null_handles" may name only bound functions
 * that return a handle. options None: nothing. 0, or -1 with
 * BindValueError saying what is wrong. */
BT_HIDDEN int bt_handle_options(PyObject *types, PyObject *funcs, PyObject *left_out,
                                const BtHeader *h, PyObject *options);

#endif
