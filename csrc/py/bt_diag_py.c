/* bt_diag_py.c - diagnostics to Python exceptions, once for every layer. */
#include "bt_diag_py.h"

#include <string.h>

/* CudaError / NoDriverError(message) with `code` (None for 0). */
static PyObject *raise_cuda(PyObject *type, PyObject *text, int code)
{
    PyObject *exc, *pycode;

    exc = PyObject_CallOneArg(type, text);
    if (!exc)
        return NULL;
    pycode = code ? PyLong_FromLong(code) : Py_NewRef(Py_None);
    if (pycode && PyObject_SetAttrString(exc, "code", pycode) == 0)
        PyErr_SetObject(type, exc);
    Py_XDECREF(pycode);
    Py_DECREF(exc);
    return NULL;
}

PyObject *bt_raise_diag(BtState *st, const BtDiag *d) { return bt_raise_diag_output(st, d, NULL); }

/* BuildError(text, output), undecodable bytes of output replaced. */
static PyObject *raise_build(PyObject *type, PyObject *text, const char *output)
{
    PyObject *exc, *out;

    if (!output)
        output = "";
    out = PyUnicode_DecodeUTF8(output, (Py_ssize_t)strlen(output), "replace");
    if (!out)
        return NULL;
    exc = PyObject_CallFunctionObjArgs(type, text, out, NULL);
    if (exc)
        PyErr_SetObject(type, exc);
    Py_XDECREF(exc);
    Py_DECREF(out);
    return NULL;
}

PyObject *bt_raise_diag_output(BtState *st, const BtDiag *d, const char *output)
{
    char msg[sizeof d->file + sizeof d->message + 32];
    PyObject *exc_type, *exc = NULL, *text = NULL;

    bt_diag_format(d, msg, sizeof msg);
    switch (d->kind) {
    case BT_DIAG_NOMEM: PyErr_SetString(PyExc_MemoryError, msg); return NULL;
    case BT_DIAG_OS:
        if (d->code && d->file[0]) {
            /* OSError(errno, text, filename) picks the subclass
             * (FileNotFoundError, IsADirectoryError, ...); the text is ours
             * ("cannot open: No such file or directory") */
            exc = Py_BuildValue("(isN)", d->code, d->message, PyUnicode_DecodeFSDefault(d->file));
            if (exc)
                PyErr_SetObject(PyExc_OSError, exc);
            goto done;
        }
        PyErr_Format(PyExc_OSError, "%s", msg);
        return NULL;
    case BT_DIAG_INSTANTIATE: exc_type = st->InstantiateError; break;
    case BT_DIAG_CUDA:
    case BT_DIAG_UNSUPPORTED:
    case BT_DIAG_NODRIVER:
    case BT_DIAG_BUILD: exc_type = NULL; break;
    default: exc_type = st->HeaderError; break;
    }
    /* the message may quote a string literal of a header in another encoding */
    text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "backslashreplace");
    if (!text)
        return NULL;
    if (d->kind == BT_DIAG_BUILD) {
        raise_build(st->BuildError, text, output);
        goto done;
    }
    if (!exc_type) {
        raise_cuda(d->kind == BT_DIAG_NODRIVER ? st->NoDriverError : st->CudaError, text, d->code);
        goto done;
    }
    exc = PyObject_CallFunction(exc_type, "Osii", text, d->file, d->line, d->col);
    if (exc) {
        if (d->line <= 0 || d->col <= 0) {
            /* unknown position: None, not 0 */
            if (d->col <= 0 && PyObject_SetAttrString(exc, "colno", Py_None) < 0)
                goto done;
            if (d->line <= 0 && PyObject_SetAttrString(exc, "lineno", Py_None) < 0)
                goto done;
        }
        PyErr_SetObject(exc_type, exc);
    }
done:
    Py_XDECREF(text);
    Py_XDECREF(exc);
    return NULL;
}
