/* bt_handle.c - Handle and HandleType (bt_handle.h): the objects, their
 * state word, closing, finalizing and the exit hook. */
#include "bt_handle.h"

#include "bt_from_c.h"

#include <string.h>

/* ================= HandleType ================= */

static int htype_traverse(PyObject *self, visitproc visit, void *arg)
{
    BtHandleTypeObject *t = (BtHandleTypeObject *)self;

    Py_VISIT(Py_TYPE(self));
    Py_VISIT(t->destructor);
    return 0;
}

static int htype_clear(PyObject *self)
{
    Py_CLEAR(((BtHandleTypeObject *)self)->destructor);
    return 0;
}

static void htype_dealloc(PyObject *self)
{
    BtHandleTypeObject *t = (BtHandleTypeObject *)self;
    PyTypeObject *tp = Py_TYPE(self);

    PyObject_GC_UnTrack(self);
    htype_clear(self);
    Py_CLEAR(t->name);
    Py_CLEAR(t->key);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *htype_repr(PyObject *self)
{
    BtHandleTypeObject *t = (BtHandleTypeObject *)self;

    return PyUnicode_FromFormat("<bindthem handle type %U (%U)>", t->name, t->key);
}

static PyObject *htype_destructor(PyObject *self, void *unused)
{
    PyObject *d = ((BtHandleTypeObject *)self)->destructor;

    return Py_NewRef(d ? d : Py_None);
}

static PyMemberDef htype_members[] = {
    {"name", T_OBJECT, offsetof(BtHandleTypeObject, name), READONLY,
     "Its Python name (the header's typedef: 'gzFile', 'FILE')."},
    {"key", T_OBJECT, offsetof(BtHandleTypeObject, key), READONLY,
     "The C type pointed to ('struct gzFile_s'): a parameter takes the handles of every "
     "HandleType of this key, whatever Library made them."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef htype_getset[] = {
    {"destructor", htype_destructor, NULL,
     "The Function that frees a handle of this type (load()/build()'s handles=), or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot htype_slots[] = {
    {Py_tp_dealloc, htype_dealloc},
    {Py_tp_traverse, htype_traverse},
    {Py_tp_clear, htype_clear},
    {Py_tp_repr, htype_repr},
    {Py_tp_members, htype_members},
    {Py_tp_getset, htype_getset},
    {Py_tp_doc, (void *)"A handle type of a Library: what its functions return and take."},
    {0, NULL},
};

static PyType_Spec htype_spec = {
    .name = "bindthem._core.HandleType",
    .basicsize = sizeof(BtHandleTypeObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = htype_slots,
};

PyObject *bt_handle_type_new(BtState *st, const char *name, const char *key)
{
    BtHandleTypeObject *t = PyObject_GC_New(BtHandleTypeObject, st->HandleTypeType);

    if (!t)
        return NULL;
    t->destructor = NULL;
    t->name = PyUnicode_FromString(name);
    t->key = PyUnicode_FromString(key);
    t->cname = t->name ? PyUnicode_AsUTF8(t->name) : NULL;
    t->ckey = t->key ? PyUnicode_AsUTF8(t->key) : NULL;
    PyObject_GC_Track(t);
    if (!t->cname || !t->ckey) {
        Py_DECREF(t);
        return NULL;
    }
    return (PyObject *)t;
}

/* ================= the state word ================= */

static BtHandleObject *as_handle(PyObject *o) { return (BtHandleObject *)o; }

static int is_closed(BtHandleObject *h)
{
    return (atomic_load_explicit(&h->state, memory_order_acquire) & BT_HANDLE_CLOSED) != 0;
}

/* Its type's name, for messages ("?" once the collector cleared it). */
static const char *type_name(BtHandleObject *h) { return h->type ? h->type->cname : "?"; }

/* ValueError: argument `name` of fname() is closed. Returns -1. */
static int closed_error(BtHandleObject *h, const char *fname, PyObject *name)
{
    PyErr_Format(PyExc_ValueError, "%s(): argument '%U' is a closed %s handle", fname, name,
                 type_name(h));
    return -1;
}

/* RuntimeError: h cannot be closed while state s says calls hold it: for
 * fname's argument `name`, or (name NULL) for fname. Returns -1. */
static int in_use(BtHandleObject *h, uintptr_t s, const char *fname, PyObject *name)
{
    unsigned long n = (unsigned long)(s / BT_HANDLE_USE);
    const char *calls = n == 1 ? "call" : "calls", *ret = n == 1 ? "call returns" : "calls return";

    if (name)
        PyErr_Format(PyExc_RuntimeError,
                     "%s(): argument '%U': cannot close the %s handle at %p: it is in use by %lu "
                     "%s (in another thread, or one running a callback); close it after the %s",
                     fname, name, type_name(h), h->ptr, n, calls, ret);
    else
        PyErr_Format(PyExc_RuntimeError,
                     "%s: cannot close the %s handle at %p: it is in use by %lu %s (in another "
                     "thread, or one running a callback); close it after the %s",
                     fname, type_name(h), h->ptr, n, calls, ret);
    return -1;
}

int bt_handle_hold(PyObject *o, const char *fname, PyObject *name)
{
    BtHandleObject *h = as_handle(o);
    uintptr_t s = atomic_load_explicit(&h->state, memory_order_relaxed);

    do {
        if (s & BT_HANDLE_CLOSED)
            return closed_error(h, fname, name);
    } while (!atomic_compare_exchange_weak_explicit(&h->state, &s, s + BT_HANDLE_USE,
                                                    memory_order_acquire, memory_order_relaxed));
    return 0;
}

void bt_handle_unhold(PyObject *o)
{
    atomic_fetch_sub_explicit(&as_handle(o)->state, BT_HANDLE_USE, memory_order_release);
}

/* From open and unused to closed, or why not: 0 when this caller closed
 * it, 1 when it was closed already, else -1 (in use; *s the state). */
static int close_once(BtHandleObject *h, uintptr_t *s)
{
    *s = 0;
    if (atomic_compare_exchange_strong_explicit(&h->state, s, BT_HANDLE_CLOSED,
                                                memory_order_acq_rel, memory_order_acquire))
        return 0;
    return *s & BT_HANDLE_CLOSED ? 1 : -1;
}

int bt_handle_close_for(PyObject *o, const char *fname, PyObject *name)
{
    BtHandleObject *h = as_handle(o);
    uintptr_t s;
    int r = close_once(h, &s);

    if (r == 1)
        return closed_error(h, fname, name);
    return r < 0 ? in_use(h, s, fname, name) : 0;
}

/* ================= open_handles: what the exit hook closes ================= */

/* h into its module's open_handles (keyed by its address, which it keeps
 * until it is forgotten, before its memory is freed). 0 or -1. */
static int list_handle(BtState *st, BtHandleObject *h)
{
    PyObject *key = NULL, *ref = NULL;
    int rc = -1;

    if (!st->open_handles) /* the module is being torn down: no exit hook to come */
        return 0;
    key = PyLong_FromVoidPtr(h);
    ref = key ? PyWeakref_NewRef((PyObject *)h, NULL) : NULL;
    if (ref && PyDict_SetItem(st->open_handles, key, ref) == 0) {
        atomic_store(&h->listed, 1);
        rc = 0;
    }
    Py_XDECREF(key);
    Py_XDECREF(ref);
    return rc;
}

void bt_handle_forget(PyObject *o)
{
    BtHandleObject *h = as_handle(o);
    BtState *st;
    PyObject *type, *value, *tb, *key;

    if (!atomic_exchange(&h->listed, 0))
        return;
    st = bt_state_from_type(Py_TYPE(o));
    if (!st || !st->open_handles)
        return;
    PyErr_Fetch(&type, &value, &tb); /* also from dealloc, whatever is being raised */
    key = PyLong_FromVoidPtr(h);
    if (!key || PyDict_DelItem(st->open_handles, key) < 0)
        PyErr_Clear();
    Py_XDECREF(key);
    PyErr_Restore(type, value, tb);
}

void bt_handle_disown(PyObject *o)
{
    atomic_fetch_or_explicit(&as_handle(o)->state, BT_HANDLE_CLOSED, memory_order_acq_rel);
    bt_handle_forget(o);
}

/* ================= Handle ================= */

/* Closes h: its destructor called (the call closes it), or without one
 * only marked closed. 0 (closed, by this call or before), or -1. */
static int close_handle(BtHandleObject *h)
{
    PyObject *d = h->type ? h->type->destructor : NULL, *r;
    uintptr_t s;

    if (is_closed(h))
        return 0;
    if (!d)
        return close_once(h, &s) < 0 ? in_use(h, s, "close()", NULL) : 0;
    r = PyObject_CallOneArg(d, (PyObject *)h);
    if (r) {
        Py_DECREF(r); /* an error code: closed all the same */
        return 0;
    }
    /* another thread closed it between the test and the call: closed once, by it */
    if (is_closed(h) && PyErr_ExceptionMatches(PyExc_ValueError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

static void handle_finalize(PyObject *self)
{
    BtHandleObject *h = as_handle(self);
    PyObject *type, *value, *tb;

    if (!h->type || !h->type->destructor || is_closed(h))
        return;
    PyErr_Fetch(&type, &value, &tb);
    if (close_handle(h) < 0)
        PyErr_WriteUnraisable(self);
    PyErr_Restore(type, value, tb);
}

static int handle_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(as_handle(self)->type);
    Py_VISIT(as_handle(self)->keep);
    return 0;
}

static int handle_clear(PyObject *self)
{
    Py_CLEAR(as_handle(self)->type);
    Py_CLEAR(as_handle(self)->keep);
    return 0;
}

static void handle_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);

    if (PyObject_CallFinalizerFromDealloc(self) < 0)
        return; /* resurrected */
    PyObject_GC_UnTrack(self);
    if (as_handle(self)->weakreflist)
        PyObject_ClearWeakRefs(self);
    bt_handle_forget(self); /* a finalizer that failed leaves it listed */
    handle_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

int bt_handle_check(PyObject *o) { return Py_TYPE(o)->tp_dealloc == handle_dealloc; }

void bt_handle_keep(PyObject *h, PyObject *keep)
{
    Py_XSETREF(as_handle(h)->keep, Py_NewRef(keep));
}

static PyObject *handle_repr(PyObject *self)
{
    BtHandleObject *h = as_handle(self);

    if (is_closed(h))
        return PyUnicode_FromFormat("<%s handle (closed)>", type_name(h));
    return PyUnicode_FromFormat("<%s handle at %p>", type_name(h), h->ptr);
}

static PyObject *handle_close_py(PyObject *self, PyObject *unused)
{
    return close_handle(as_handle(self)) < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *handle_enter(PyObject *self, PyObject *unused)
{
    if (is_closed(as_handle(self))) {
        PyErr_Format(PyExc_ValueError, "a closed %s handle cannot be used in a with statement",
                     type_name(as_handle(self)));
        return NULL;
    }
    return Py_NewRef(self);
}

static PyObject *handle_exit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)args;
    (void)nargs;
    return handle_close_py(self, NULL);
}

static PyObject *handle_address(PyObject *self, void *unused)
{
    return PyLong_FromVoidPtr(as_handle(self)->ptr);
}

static PyObject *handle_closed(PyObject *self, void *unused)
{
    return PyBool_FromLong(is_closed(as_handle(self)));
}

static PyObject *handle_type(PyObject *self, void *unused)
{
    PyObject *t = (PyObject *)as_handle(self)->type;

    return Py_NewRef(t ? t : Py_None);
}

static PyMethodDef handle_methods[] = {
    {"close", handle_close_py, METH_NOARGS,
     "close($self, /)\n--\n\nCloses the handle: its destructor runs (the function "
     "load()/build()'s handles= names), once; without one, it is only marked closed. A handle "
     "a call is using is not closed (RuntimeError). Closing a closed handle does nothing."},
    {"__enter__", handle_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))handle_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"address", handle_address, NULL,
     "The pointer as an int (for ctypes or cffi); no longer valid once closed.", NULL},
    {"closed", handle_closed, NULL, "Whether it was closed (no call takes it then).", NULL},
    {"type", handle_type, NULL, "Its HandleType: name, key, destructor.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef handle_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(BtHandleObject, weakreflist), READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, handle_dealloc},
    {Py_tp_finalize, handle_finalize},
    {Py_tp_traverse, handle_traverse},
    {Py_tp_clear, handle_clear},
    {Py_tp_repr, handle_repr},
    {Py_tp_methods, handle_methods},
    {Py_tp_getset, handle_getset},
    {Py_tp_members, handle_members},
    {Py_tp_doc,
     (void *)"A pointer a C function returned (a gzFile, a FILE pointer, an fftw_plan): passed "
             "back to the functions that take its type; closed by close(), by "
             "its destructor, in a with statement, when it is collected, or at exit."},
    {0, NULL},
};

static PyType_Spec handle_spec = {
    .name = "bindthem._core.Handle",
    .basicsize = sizeof(BtHandleObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION |
             Py_TPFLAGS_IMMUTABLETYPE,
    .slots = handle_slots,
};

PyObject *bt_handle_new(BtState *st, PyObject *type, void *ptr)
{
    BtHandleObject *h = PyObject_GC_New(BtHandleObject, st->HandleType);

    if (!h)
        return NULL;
    h->ptr = ptr;
    h->type = (BtHandleTypeObject *)Py_NewRef(type);
    atomic_init(&h->state, 0);
    atomic_init(&h->listed, 0);
    h->weakreflist = NULL;
    h->keep = NULL;
    PyObject_GC_Track(h);
    if (h->type->destructor && list_handle(st, h) < 0) {
        Py_DECREF(h); /* owned: finalizing it frees the pointer */
        return NULL;
    }
    return (PyObject *)h;
}

int bt_handle_arg(PyObject *o, const char *key, const char *hname, const char *fname,
                  PyObject *name, void **ptr)
{
    BtHandleObject *h = as_handle(o);
    int handle = bt_handle_check(o);

    if (handle && (!key || (h->type && strcmp(h->type->ckey, key) == 0))) {
        *ptr = h->ptr;
        return 0;
    }
    if (!key && o == Py_None) {
        *ptr = NULL;
        return 0;
    }
    if (!key)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' (void *) must be a Handle or None, not %s", fname, name,
                     Py_TYPE(o)->tp_name);
    else if (handle)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' must be a %s handle (%s), not a %s handle (%s)", fname,
                     name, hname, key, type_name(h), h->type ? h->type->ckey : "?");
    else
        PyErr_Format(PyExc_TypeError, "%s(): argument '%U' must be a %s handle (%s), not %s", fname,
                     name, hname, key, Py_TYPE(o)->tp_name);
    return -1;
}

/* ================= the exit hook ================= */

/* New reference: what weak reference r refers to, or NULL (dead). */
static PyObject *referent(PyObject *r)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(r, &o) < 0)
        PyErr_Clear();
    return o;
#else
    PyObject *o = PyWeakref_GetObject(r); /* borrowed; the GIL is held */
    return o && o != Py_None ? Py_NewRef(o) : NULL;
#endif
}

static PyObject *close_open_handles(PyObject *module, PyObject *unused)
{
    BtState *st = bt_state(module);
    PyObject *refs = st->open_handles ? PyDict_Values(st->open_handles) : NULL;
    Py_ssize_t i;

    if (!refs)
        return st->open_handles ? NULL : Py_NewRef(Py_None);
    for (i = PyList_GET_SIZE(refs) - 1; i >= 0; i--) { /* newest first */
        PyObject *h = referent(PyList_GET_ITEM(refs, i));
        if (h && close_handle(as_handle(h)) < 0)
            PyErr_WriteUnraisable(h);
        Py_XDECREF(h);
    }
    Py_DECREF(refs);
    Py_RETURN_NONE;
}

static PyObject *open_handle_count(PyObject *module, PyObject *unused)
{
    BtState *st = bt_state(module);

    return PyLong_FromSsize_t(st->open_handles ? PyDict_Size(st->open_handles) : 0);
}

static PyMethodDef handle_functions[] = {
    {"_close_open_handles", close_open_handles, METH_NOARGS,
     "_close_open_handles()\n--\n\nCloses every open Handle that has a destructor, newest "
     "first (an atexit hook: bindthem._services.binding registers it); a destructor's error "
     "goes to sys.unraisablehook."},
    {"_open_handle_count", open_handle_count, METH_NOARGS,
     "_open_handle_count()\n--\n\nHow many Handles with a destructor are open (tests)."},
    {NULL, NULL, 0, NULL},
};

int bt_handle_add(PyObject *module)
{
    BtState *st = bt_state(module);

    st->HandleType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &handle_spec, NULL);
    if (!st->HandleType || PyModule_AddType(module, st->HandleType) < 0)
        return -1;
    st->HandleTypeType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &htype_spec, NULL);
    if (!st->HandleTypeType || PyModule_AddType(module, st->HandleTypeType) < 0)
        return -1;
    if (!(st->NullHandleError = bt_from_c("NullHandleError")) ||
        PyModule_AddObjectRef(module, "NullHandleError", st->NullHandleError) < 0)
        return -1;
    if (!(st->open_handles = PyDict_New()))
        return -1;
    return PyModule_AddFunctions(module, handle_functions);
}

void bt_handle_clear(BtState *st)
{
    Py_CLEAR(st->HandleType);
    Py_CLEAR(st->HandleTypeType);
    Py_CLEAR(st->NullHandleError);
    Py_CLEAR(st->open_handles);
}
