/* bt_opts.h - call options of bound kernels beyond their arguments: the GIL
 * policy and the opt-in copy of const arrays that are not C-contiguous. A Function has its own (BtCallOpts, from its Library's build or
 * load arguments); `with bindthem.options(...)` overrides them for the calls
 * made inside it, through a context variable that is read only while some
 * such block is active anywhere in the process. */
#ifndef BT_OPTS_H
#define BT_OPTS_H

#include "bt_call.h"

/* opts with the current bindthem.options() override applied. Returns 0, or
 * -1 with an exception set. */
BT_HIDDEN int bt_opts_current(BtState *st, BtCallOpts *opts);

/* For each const array argument of call that is not C-contiguous, a
 * C-contiguous, aligned copy: out[i] is args[i] or its copy, and the copies
 * (new references) are in held, counted in call->stats. Writable arrays are
 * never copied here, nor arrays that lack only alignment (the call passes
 * those as aligned temporaries, bt_call_invoke). Returns the number of
 * copies held, or -1 with an exception set. */
BT_HIDDEN int bt_opts_copy_const(const BtCall *call, PyObject *const *args, PyObject **out,
                                 PyObject **held);

/* The GIL policies' names, indexed by BT_GIL_* (bt_call.h), NULL-terminated:
 * _core.GIL_POLICIES, the one list Python reads. */
BT_HIDDEN extern const char *const bt_opts_gil_names[];

/* "auto", "release" or "keep". */
BT_HIDDEN const char *bt_opts_gil_name(int gil);

/* _core._options_push / _options_pop / _options_get, and set-up of the
 * context variable in module state. */
BT_HIDDEN extern PyMethodDef bt_opts_methods[];
BT_HIDDEN int bt_opts_init(BtState *st);

#endif
