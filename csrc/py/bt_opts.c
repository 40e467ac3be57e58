/* bt_opts.c - bindthem.options(): per-call overrides of a Function's GIL
 * policy and const-array copying, and the copying itself (of const arrays
 * that are not C-contiguous; unaligned ones are every call's, bt_call.c).
 *
 * The override lives in a context variable (so threads and asyncio tasks
 * each see their own) holding one int: bits 0-1 the GIL policy + 1, bits 2-3
 * copy_const + 1, 0 meaning "not overridden". Reading a context variable on
 * every call would cost ~15 ns; st->opts_active counts the blocks open in
 * the process, so calls outside any block pay one load. */
#include "bt_opts.h"

#include "bt_numpy.h"

#include <stdlib.h>
#include <string.h>

const char *const bt_opts_gil_names[] = {"auto", "release", "keep", NULL};

const char *bt_opts_gil_name(int gil)
{
    return gil >= 0 && gil <= BT_GIL_KEEP ? bt_opts_gil_names[gil] : "?";
}

/* The override's code in this context (0: none). Returns 0 or -1. */
static int current_code(BtState *st, long *code)
{
    PyObject *v = NULL;

    *code = 0;
    if (PyContextVar_Get(st->opts_var, NULL, &v) < 0)
        return -1;
    if (!v)
        return 0;
    *code = PyLong_AsLong(v);
    Py_DECREF(v);
    return *code == -1 && PyErr_Occurred() ? -1 : 0;
}

int bt_opts_override(BtState *st, BtCallOpts *opts)
{
    long code;

    if (current_code(st, &code) < 0)
        return -1;
    if (code & 3)
        opts->gil = (uint8_t)((code & 3) - 1);
    if ((code >> 2) & 3)
        opts->copy_const = (uint8_t)(((code >> 2) & 3) - 1);
    return 0;
}

/* _options_push(gil, copy_const): each -1 (keep the enclosing value) or the
 * new value; returns the context variable's token for _options_pop. */
static PyObject *options_push(PyObject *module, PyObject *args)
{
    BtState *st = bt_state(module);
    PyObject *code = NULL, *token = NULL;
    int gil, copy;
    long old;

    if (!PyArg_ParseTuple(args, "ii:_options_push", &gil, &copy))
        return NULL;
    if (gil < -1 || gil > BT_GIL_KEEP || copy < -1 || copy > 1) {
        PyErr_SetString(PyExc_ValueError, "_options_push: value out of range");
        return NULL;
    }
    if (current_code(st, &old) < 0)
        return NULL;
    if (gil >= 0)
        old = (old & ~3L) | (gil + 1);
    if (copy >= 0)
        old = (old & ~12L) | ((long)(copy + 1) << 2);
    code = PyLong_FromLong(old);
    if (!code)
        return NULL;
    token = PyContextVar_Set(st->opts_var, code);
    Py_DECREF(code);
    if (token)
        BT_FT_ADD(&st->opts_active, 1);
    return token;
}

static PyObject *options_pop(PyObject *module, PyObject *token)
{
    BtState *st = bt_state(module);

    if (PyContextVar_Reset(st->opts_var, token) < 0)
        return NULL;
    BT_FT_ADD(&st->opts_active, -1);
    Py_RETURN_NONE;
}

/* _options_get() -> (gil or None, copy_const or None): the override in force. */
static PyObject *options_get(PyObject *module, PyObject *unused)
{
    BtState *st = bt_state(module);
    PyObject *gil, *copy, *r;
    long code;

    if (current_code(st, &code) < 0)
        return NULL;
    gil = code & 3 ? PyUnicode_FromString(bt_opts_gil_names[(code & 3) - 1]) : Py_NewRef(Py_None);
    copy = (code >> 2) & 3 ? PyBool_FromLong(((code >> 2) & 3) - 1) : Py_NewRef(Py_None);
    r = gil && copy ? PyTuple_Pack(2, gil, copy) : NULL;
    Py_XDECREF(gil);
    Py_XDECREF(copy);
    return r;
}

/* force_ffi(flag=None) -> bool: the libffi switch before the call; a flag
 * sets it. */
static PyObject *force_ffi(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    BtState *st = bt_state(module);
    int old = BT_FT_LOAD_RELAXED(&st->force_ffi), flag;

    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "force_ffi() takes at most 1 argument");
        return NULL;
    }
    if (nargs == 1 && args[0] != Py_None) {
        if ((flag = PyObject_IsTrue(args[0])) < 0)
            return NULL;
        BT_FT_STORE_RELAXED(&st->force_ffi, flag);
    }
    return PyBool_FromLong(old);
}

PyMethodDef bt_opts_methods[] = {
    {"_options_push", options_push, METH_VARARGS, NULL},
    {"_options_pop", options_pop, METH_O, NULL},
    {"_options_get", options_get, METH_NOARGS, NULL},
    {"force_ffi", (PyCFunction)(void (*)(void))force_ffi, METH_FASTCALL,
     "force_ffi(flag=None) -> bool\n\nWith True, every call goes through libffi, also where "
     "bindthem calls the kernel directly (the ABI DIRECT_ABI names); False restores the direct "
     "calls. "
     "Returns the setting before the call. BINDTHEM_FFI=1 in the environment at import sets "
     "it. For tests and debugging: both paths give the same results."},
    {NULL, NULL, 0, NULL},
};

int bt_opts_init(BtState *st)
{
    const char *ffi = getenv("BINDTHEM_FFI");

    st->force_ffi = ffi && *ffi && strcmp(ffi, "0") != 0;
    st->opts_active = 0;
    st->opts_var = PyContextVar_New("bindthem.options", NULL);
    return st->opts_var ? 0 : -1;
}
