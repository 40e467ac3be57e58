/* bt_callable.h - the head every bound callable shares (bindthem.Function,
 * bindthem.cuda.Kernel): its dispatcher, names, doc, owner, LibraryInfo,
 * weak references, arena and calls, with the attributes, methods and
 * garbage-collection slots that read only the head. A type extends it with
 * its call and the fields that call needs. */
#ifndef BT_CALLABLE_H
#define BT_CALLABLE_H

#include "bt_call.h"
#include "bt_dispatch.h"

/* The head's fields, first in each callable's struct (as PyObject_HEAD is
 * first in every object), so that a pointer to either type is a
 * BtCallable pointer. */
#define BT_CALLABLE_HEAD                                                                           \
    PyObject_HEAD                                                                                  \
    vectorcallfunc vectorcall;                                                                     \
    BtDispatch d;       /* name, qualname, parameter names, signatures, cache */                   \
    PyObject *module;   /* str: __module__ */                                                      \
    PyObject *doc;      /* str */                                                                  \
    PyObject *text_sig; /* str: __text_signature__, as the type's call takes arguments */          \
    PyObject *owner;    /* keeps the library or module loaded */                                   \
    PyObject *info;     /* its Library's LibraryInfo (pickling, .library), or NULL */              \
    PyObject *weakreflist;                                                                         \
    BtArena arena; /* calls, their slots, and what the type keeps beside them */                   \
    BtCall *calls; /* per overload */

typedef struct BtCallable {
    BT_CALLABLE_HEAD
} BtCallable;

/* New reference: an object of heap type tp (whose struct starts with
 * BT_CALLABLE_HEAD and has size tp->tp_basicsize) for plan entry f, of
 * which the n overloads ovs are bound, with calls[i] prepared for ovs[i].
 * It takes over `arena` (which holds the calls) even on failure; owner
 * keeps the binary loaded; module is the __module__ name; info the
 * LibraryInfo or NULL. The fields after the head are zeroed; the type
 * fills them. */
BT_HIDDEN BtCallable *bt_callable_new(BtState *st, PyTypeObject *tp, vectorcallfunc call,
                                      const BtFunc *f, const BtOverload *ovs, BtCall *calls, int n,
                                      BtArena *arena, PyObject *owner, PyObject *module,
                                      PyObject *info);

/* The slots of a callable type: tp_descr_get (no binding, as a builtin
 * function: inspect.signature then reads __text_signature__), traverse,
 * clear and dealloc of the head. */
BT_HIDDEN PyObject *bt_callable_descr_get(PyObject *self, PyObject *obj, PyObject *type);
BT_HIDDEN int bt_callable_traverse(PyObject *self, visitproc visit, void *arg);
BT_HIDDEN int bt_callable_clear(PyObject *self);
BT_HIDDEN void bt_callable_dealloc(PyObject *self);

/* New reference: "<what module.qualname with n overloads>". */
BT_HIDDEN PyObject *bt_callable_repr(PyObject *self, const char *what);

/* The head's methods (pickling by value through the LibraryInfo, dask
 * tokens, copies, notebook display) and attributes (__name__, __doc__,
 * signatures, symbols, library, ...), and the members that place the
 * vectorcall and weakref fields: each type's tables start with them. */
BT_HIDDEN PyObject *bt_callable_reduce(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_callable_dask_tokenize(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_callable_copy(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_callable_repr_html(PyObject *self, PyObject *unused);
BT_HIDDEN PyObject *bt_callable_repr_pretty(PyObject *self, PyObject *const *args,
                                            Py_ssize_t nargs);

#define BT_CALLABLE_METHODS                                                                        \
    {"__reduce__", bt_callable_reduce, METH_NOARGS, NULL},                                         \
        {"__copy__", bt_callable_copy, METH_NOARGS, NULL},                                         \
        {"__deepcopy__", bt_callable_copy, METH_O, NULL},                                          \
        {"__dask_tokenize__", bt_callable_dask_tokenize, METH_NOARGS, NULL},                       \
        {"_repr_html_", bt_callable_repr_html, METH_NOARGS, NULL},                                 \
    {                                                                                              \
        "_repr_pretty_", (PyCFunction)(void (*)(void))bt_callable_repr_pretty, METH_FASTCALL, NULL \
    }

BT_HIDDEN PyObject *bt_callable_get(PyObject *self, void *which);

/* One getset entry per head attribute, all read by bt_callable_get. */
enum {
    BT_CALLABLE_NAME,
    BT_CALLABLE_QUALNAME,
    BT_CALLABLE_MODULE,
    BT_CALLABLE_DOC,
    BT_CALLABLE_TEXT_SIG,
    BT_CALLABLE_OVERLOADS,
    BT_CALLABLE_SYMBOLS,
    BT_CALLABLE_PARAMETERS,
    BT_CALLABLE_SIGNATURES,
    BT_CALLABLE_LIBRARY,
    BT_CALLABLE_DISPATCH_INFO,
};

#define BT_CALLABLE_ATTR(name, which, doc)                                                         \
    {                                                                                              \
        name, bt_callable_get, NULL, doc, (void *)(intptr_t)(which)                                \
    }

#define BT_CALLABLE_GETSET                                                                         \
    BT_CALLABLE_ATTR("__name__", BT_CALLABLE_NAME, NULL),                                          \
        BT_CALLABLE_ATTR("__qualname__", BT_CALLABLE_QUALNAME, NULL),                              \
        BT_CALLABLE_ATTR("__module__", BT_CALLABLE_MODULE, NULL),                                  \
        BT_CALLABLE_ATTR("__doc__", BT_CALLABLE_DOC, NULL),                                        \
        BT_CALLABLE_ATTR("__text_signature__", BT_CALLABLE_TEXT_SIG, NULL),                        \
        BT_CALLABLE_ATTR("overloads", BT_CALLABLE_OVERLOADS,                                       \
                         "C signatures of the overloads, in YAML order."),                         \
        BT_CALLABLE_ATTR("symbols", BT_CALLABLE_SYMBOLS,                                           \
                         "Symbol names of the overloads, in YAML order."),                         \
        BT_CALLABLE_ATTR("parameters", BT_CALLABLE_PARAMETERS,                                     \
                         "Python parameter names (the first overload's)."),                        \
        BT_CALLABLE_ATTR("signatures", BT_CALLABLE_SIGNATURES,                                     \
                         "Python signatures of the overloads, in YAML order, e.g. "                \
                         "'f(x, omega=1.0)'."),                                                    \
        BT_CALLABLE_ATTR("library", BT_CALLABLE_LIBRARY,                                           \
                         "The Library it belongs to (None once that is gone)."),                   \
        BT_CALLABLE_ATTR("_dispatch_info", BT_CALLABLE_DISPATCH_INFO,                              \
                         "The dispatch cache: keys cached, and calls that scanned the overloads.")

#define BT_CALLABLE_MEMBERS(type)                                                                  \
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(type, vectorcall), READONLY, NULL},              \
    {                                                                                              \
        "__weaklistoffset__", T_PYSSIZET, offsetof(type, weakreflist), READONLY, NULL              \
    }

/* The slots every callable type has (the call through vectorcall, the
 * head's descr_get, traverse, clear and dealloc) and its type flags: each
 * type's slot table starts with the one, its PyType_Spec takes the other. */
#define BT_CALLABLE_SLOTS                                                                          \
    {Py_tp_call, PyVectorcall_Call}, {Py_tp_descr_get, bt_callable_descr_get},                     \
        {Py_tp_traverse, bt_callable_traverse}, {Py_tp_clear, bt_callable_clear},                  \
    {                                                                                              \
        Py_tp_dealloc, bt_callable_dealloc                                                         \
    }

#define BT_CALLABLE_FLAGS                                                                          \
    (Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |                        \
     Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE)

#endif
