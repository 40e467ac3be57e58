/* bt_handle_call.h - calls that take or return handles (bt_handle.h).
 *
 * A call whose overload takes a handle or a `void *` (slot kinds 'h' and
 * 'v'), or returns a handle, or is a handle type's destructor
 * (BtCall.handles) goes through bt_handle_invoke around bt_call_invoke;
 * every other call never reads more than that one flag. */
#ifndef BT_HANDLE_CALL_H
#define BT_HANDLE_CALL_H

#include "bt_call.h"

/* bt_call_invoke with its handles:
 *   1. each Handle argument checked (its type's key, for a `void *` any
 *      Handle or None: TypeError naming the parameter) and held, so that
 *      no close frees it while the call runs (a closed one: ValueError);
 *      a destructor's argument is closed instead (bt_handle_close_for:
 *      refused while another call holds it), so that it runs once;
 *   2. the call, with errno set to 0 before it where it returns a handle;
 *   3. the handles let go (a destructor's forgotten: closed for good, even
 *      when the function returned an error code);
 *   4. a returned pointer made a Handle (owned when its type has a
 *      destructor); NULL raises NullHandleError with errno as the call
 *      left it ("gzopen returned NULL: [Errno 2] No such file or
 *      directory"), or gives None (call->ret_none).
 * New reference, or NULL. */
/* Step 4 alone: the pointer a call returned (r: an int, stolen) as a
 * Handle of call->ret_type, errno err as the call left it. New reference,
 * or NULL. */
BT_HIDDEN PyObject *bt_handle_returned(const BtCall *call, PyObject *r, int err, const char *fname);

BT_HIDDEN PyObject *bt_handle_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                                     PyObject *names, const BtCallOpts *opts);

#endif
