/* bt_nvrtc_py.c - _core.nvrtc(lib, source=None, ...): NVRTC from Python.
 *
 * Converts arguments, releases the GIL around the compile (seconds), and
 * raises a failure through bt_raise_diag_output: BuildError(message,
 * output=NVRTC's log) or MemoryError. */
#include "bt_nvrtc_py.h"

#include <limits.h>
#include <string.h>

#include "bt_diag_py.h"
#include "bt_nvrtc.h"

const char bt_nvrtc_py_doc[] =
    "nvrtc(lib, source=None, name='', options=(), expressions=(), cubin=False)\n--\n\n"
    "Without source: {'version': (major, minor), 'archs': (75, ...)} of the libnvrtc at lib.\n"
    "With source: {'image': bytes, 'lowered': [mangled name of each expression], 'log': str}.\n"
    "Raises BuildError (output: NVRTC's log) when it cannot load lib or compile.";

/* New reference: s as str, undecodable bytes replaced. */
static PyObject *text(const char *s)
{
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* A NULL-terminated array of the UTF-8 of seq's str items, from arena;
 * *held (a new tuple) keeps them alive. Returns the count, or -1. */
static Py_ssize_t utf8_array(PyObject *seq, const char *what, PyObject **held, BtArena *arena,
                             const char ***out)
{
    Py_ssize_t i, n;
    if (!(*held = PySequence_Tuple(seq)))
        return -1;
    n = PyTuple_GET_SIZE(*held);
    if (n > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "nvrtc(): too many %s", what);
        return -1;
    }
    if (!(*out = bt_arena_alloc(arena, (size_t)(n + 1) * sizeof **out))) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(*held, i);
        if (!PyUnicode_Check(s)) {
            PyErr_Format(PyExc_TypeError, "nvrtc(): %s must be str, not %.100s", what,
                         Py_TYPE(s)->tp_name);
            return -1;
        }
        if (!((*out)[i] = PyUnicode_AsUTF8(s)))
            return -1;
    }
    (*out)[n] = NULL;
    return n;
}

static PyObject *info(BtState *st, const char *lib)
{
    BtArena arena;
    BtDiag e;
    PyObject *archs = NULL, *r = NULL;
    int major = 0, minor = 0, n = 0, i, *list = NULL;

    bt_arena_init(&arena);
    bt_diag_init(&e);
    if (bt_nvrtc_info(lib, &major, &minor, &list, &n, &arena, &e) < 0) {
        bt_raise_diag(st, &e);
        goto error;
    }
    if (!(archs = PyTuple_New(n)))
        goto error;
    for (i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLong(list[i]);
        if (!v)
            goto error;
        PyTuple_SET_ITEM(archs, i, v);
    }
    r = Py_BuildValue("{s(ii)sO}", "version", major, minor, "archs", archs);
error:
    Py_XDECREF(archs);
    bt_arena_free(&arena);
    return r;
}

PyObject *bt_nvrtc_py(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"lib", "source", "name", "options", "expressions", "cubin", NULL};
    BtState *st = bt_state(module);
    const char *lib, *source = NULL, *name = "bindthem.cu";
    PyObject *options = NULL, *exprs = NULL, *held_opts = NULL, *held_exprs = NULL;
    PyObject *empty = NULL, *lowered = NULL, *log = NULL, *r = NULL;
    const char **opt_list = NULL, **expr_list = NULL;
    Py_ssize_t nopts, nexprs;
    int cubin = 0, rc, i;
    BtArena arena;
    BtNvrtcOutput out;
    BtDiag e;

    memset(&out, 0, sizeof out);
    bt_arena_init(&arena);
    bt_diag_init(&e);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|zsOOp:nvrtc", kwlist, &lib, &source, &name,
                                     &options, &exprs, &cubin))
        goto error;
    if (!source) {
        r = info(st, lib);
        goto error;
    }
    if (!(empty = PyTuple_New(0)))
        goto error;
    if ((nopts = utf8_array(options ? options : empty, "options", &held_opts, &arena, &opt_list)) <
        0)
        goto error;
    if ((nexprs = utf8_array(exprs ? exprs : empty, "expressions", &held_exprs, &arena,
                             &expr_list)) < 0)
        goto error;
    Py_BEGIN_ALLOW_THREADS
    rc = bt_nvrtc_compile(lib, source, name, opt_list, (int)nopts, expr_list, (int)nexprs, cubin,
                          &out, &e);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        bt_raise_diag_output(st, &e, out.log);
        goto error;
    }
    if (!(lowered = PyList_New(out.nlowered)))
        goto error;
    for (i = 0; i < out.nlowered; i++) {
        PyObject *s = text(out.lowered[i]);
        if (!s)
            goto error;
        PyList_SET_ITEM(lowered, i, s);
    }
    if (!(log = text(out.log)))
        goto error;
    r = Py_BuildValue("{sy#sOsO}", "image", out.image, (Py_ssize_t)out.size, "lowered", lowered,
                      "log", log);
error:
    Py_XDECREF(empty);
    Py_XDECREF(lowered);
    Py_XDECREF(log);
    Py_XDECREF(held_opts);
    Py_XDECREF(held_exprs);
    bt_nvrtc_output_free(&out);
    bt_arena_free(&arena);
    return r;
}
