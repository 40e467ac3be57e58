/* bt_handle_call.c - calls that take or return handles: held around the call, made from a return. */
#include "bt_handle_call.h"

#include "bt_handle.h"

#include <errno.h>
#include <string.h>

/* NullHandleError (or None, where the Library said so) for fname's NULL
 * return, errno err as the call left it. */
static PyObject *null_returned(const BtCall *call, int err, const char *fname)
{
    BtState *st = bt_state_from_type(Py_TYPE(call->ret_type));
    PyObject *msg, *e;

    if (call->ret_none)
        Py_RETURN_NONE;
    msg = err ? PyUnicode_FromFormat("%s returned NULL: [Errno %d] %s", fname, err, strerror(err))
              : PyUnicode_FromFormat("%s returned NULL", fname);
    e = msg ? PyObject_CallFunction(st->NullHandleError, "Ois", msg, err, fname) : NULL;
    if (e)
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
    Py_XDECREF(msg);
    Py_XDECREF(e);
    return NULL;
}

PyObject *bt_handle_returned(const BtCall *call, PyObject *r, int err, const char *fname)
{
    void *p = PyLong_AsVoidPtr(r);

    Py_DECREF(r);
    if (!p)
        return PyErr_Occurred() ? NULL : null_returned(call, err, fname);
    return bt_handle_new(bt_state_from_type(Py_TYPE(call->ret_type)), call->ret_type, p);
}

PyObject *bt_handle_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                           PyObject *names, const BtCallOpts *opts)
{
    PyObject *held[BT_MAX_PARAMS], *r = NULL;
    void *p;
    int i, n = 0, err = 0;

    for (i = 0; i < call->n_py; i++) {
        const BtArgSlot *s = &call->slots[i];
        const BtSlotHandle *t = s->kind == 'h' ? s->handle : NULL; /* NULL: a void * */
        PyObject *o = args[i], *name = PyTuple_GET_ITEM(names, i);
        if ((s->kind != 'h' && s->kind != 'v') || !o)
            continue;
        if (bt_handle_arg(o, t ? t->key : NULL, t ? t->name : NULL, fname, name, &p) < 0)
            goto done;
        if (o == Py_None)
            continue;
        if ((call->destroys ? bt_handle_close_for(o, fname, name)
                            : bt_handle_hold(o, fname, name)) < 0)
            goto done;
        held[n++] = o;
    }
    if (call->ret_type)
        errno = 0;
    r = bt_call_invoke(call, args, fname, names, opts);
    if (call->ret_type) {
        err = errno;
        if (r)
            r = bt_handle_returned(call, r, err, fname);
    }
done:
    for (i = 0; i < n; i++) {
        if (call->destroys)
            bt_handle_forget(held[i]);
        else
            bt_handle_unhold(held[i]);
    }
    return r;
}
