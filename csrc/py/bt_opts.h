/* bt_opts.h - call options of bound kernels beyond their arguments: the GIL
 * policy and the opt-in copy of const arrays that are not C-contiguous. A Function has its own (BtCallOpts, from its Library's build or
 * load arguments); `with bindthem.options(...)` overrides them for the calls
 * made inside it, through a context variable that is read only while some
 * such block is active anywhere in the process. */
#ifndef BT_OPTS_H
#define BT_OPTS_H

#include "bt_call.h"

/* bt_opts_current's override, when some bindthem.options() block is
 * active. Returns 0, or -1 with an exception set. */
BT_HIDDEN int bt_opts_override(BtState *st, BtCallOpts *opts);

/* opts with the current bindthem.options() override applied. Returns 0, or
 * -1 with an exception set. Inline: a call outside every options() block
 * reads two fields. */
static inline int bt_opts_current(BtState *st, BtCallOpts *opts)
{
    opts->ffi = (uint8_t)BT_FT_LOAD_RELAXED(&st->force_ffi);
    return BT_FT_LOAD_RELAXED(&st->opts_active) ? bt_opts_override(st, opts) : 0;
}

/* The GIL policies' names, indexed by BT_GIL_* (bt_call.h), NULL-terminated:
 * _core.GIL_POLICIES, the one list Python reads. */
BT_HIDDEN extern const char *const bt_opts_gil_names[];

/* The policies with what each means, for messages and docstrings (and
 * _core.GIL_POLICY_TEXT, which Python's messages read): beside the names
 * above, so the two are written in one place. */
#define BT_GIL_STR_(x) #x
#define BT_GIL_STR(x) BT_GIL_STR_(x)
#define BT_GIL_POLICY_TEXT                                                                         \
    "'auto' (release the GIL when the arrays hold " BT_GIL_STR(                                    \
        BT_GIL_RELEASE_MIN) " elements or more), 'release' (always) or 'keep' (never)"

/* "auto", "release" or "keep". */
BT_HIDDEN const char *bt_opts_gil_name(int gil);

/* _core._options_push / _options_pop / _options_get, and set-up of the
 * context variable in module state. */
BT_HIDDEN extern PyMethodDef bt_opts_methods[];
BT_HIDDEN int bt_opts_init(BtState *st);

#endif
