/* bt_method.c - a Library's own class (bt_method.h): LibraryMethod, its
 * call and __get__; _library_class, the class's plain lookups. */
#include "bt_method.h"

typedef struct BtMethod {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *kernel;    /* the Function (or CUDA kernel) */
    vectorcallfunc call; /* its vectorcall (fixed when a kernel is made), or NULL */
    PyTypeObject *owner; /* the Library's own class: a call with one of its
                            instances first drops it */
} BtMethod;

static PyObject *method_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames)
{
    BtMethod *m = (BtMethod *)self;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);

    /* lib.f(x): args[0] is lib, and the slot before args[1] may be written
     * (it holds lib), which PY_VECTORCALL_ARGUMENTS_OFFSET tells the kernel */
    if (n > 0 && Py_TYPE(args[0]) == m->owner) {
        args++;
        nargsf = (size_t)(n - 1) | PY_VECTORCALL_ARGUMENTS_OFFSET;
    }
    /* the kernel's own entry, as CPython's call would reach it, less the
     * lookup (a Function or CUDA kernel: it returns NULL exactly when it
     * raised, which CPython's call would check) */
    if (m->call)
        return m->call(m->kernel, args, nargsf, kwnames);
    return PyObject_Vectorcall(m->kernel, args, nargsf, kwnames);
}

static PyObject *method_new(PyTypeObject *tp, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"kernel", "owner", NULL};
    PyObject *kernel, *owner;
    BtState *st;
    BtMethod *m;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!:LibraryMethod", kwlist, &kernel,
                                     &PyType_Type, &owner))
        return NULL;
    st = bt_state_from_type(tp);
    if (!st || (!PyObject_TypeCheck(kernel, st->FunctionType) &&
                !(st->CudaKernelType && PyObject_TypeCheck(kernel, st->CudaKernelType)))) {
        if (st)
            PyErr_Format(PyExc_TypeError,
                         "LibraryMethod() takes a bindthem Function or CUDA kernel, not %R",
                         kernel);
        return NULL;
    }
    m = (BtMethod *)tp->tp_alloc(tp, 0);
    if (!m)
        return NULL;
    m->vectorcall = method_vectorcall;
    m->kernel = Py_NewRef(kernel);
    m->call = PyVectorcall_Function(kernel);
    m->owner = (PyTypeObject *)Py_NewRef(owner);
    bt_ft_deferred((PyObject *)m); /* lib.f(x) from threads: as a kernel (bt_ft.h) */
    return (PyObject *)m;
}

static PyObject *method_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)obj;
    (void)type;
    return Py_NewRef(((BtMethod *)self)->kernel);
}

static int method_traverse(PyObject *self, visitproc visit, void *arg)
{
    BtMethod *m = (BtMethod *)self;

    Py_VISIT(Py_TYPE(self));
    Py_VISIT(m->kernel);
    Py_VISIT(m->owner);
    return 0;
}

static int method_clear(PyObject *self)
{
    BtMethod *m = (BtMethod *)self;

    Py_CLEAR(m->kernel);
    Py_CLEAR(m->owner);
    return 0;
}

static void method_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);

    PyObject_GC_UnTrack(self);
    method_clear(self);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyObject *method_repr(PyObject *self)
{
    BtMethod *m = (BtMethod *)self;

    if (!m->kernel)
        return PyUnicode_FromString("<bindthem LibraryMethod (cleared)>");
    return PyUnicode_FromFormat("<bindthem LibraryMethod of %R>", m->kernel);
}

static PyMemberDef method_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BtMethod, vectorcall), READONLY, NULL},
    {"kernel", T_OBJECT, offsetof(BtMethod, kernel), READONLY,
     "The kernel it holds, which lib.<name> gives."},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot method_slots[] = {
    {Py_tp_new, method_new},
    {Py_tp_dealloc, method_dealloc},
    {Py_tp_traverse, method_traverse},
    {Py_tp_clear, method_clear},
    {Py_tp_repr, method_repr},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_descr_get, method_get},
    {Py_tp_members, method_members},
    {Py_tp_doc,
     (void *)"LibraryMethod(kernel, owner)\n--\n\n"
             "A kernel in the namespace of its Library's own class (owner): lib.<name> gives\n"
             "the kernel; a call with an instance of owner first calls the kernel without\n"
             "it, as CPython's specialized lib.f(x) passes it."},
    {0, NULL},
};

PyType_Spec bt_method_spec = {
    .name = "bindthem._core.LibraryMethod",
    .basicsize = sizeof(BtMethod),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = method_slots,
};

/* _core._library_class(cls): cls (Library, LazyLibrary or a class derived
 * from them: subclasses of types.ModuleType whose lookup is not a module's;
 * CPython gives each derived class ModuleType's dict offset again) looks
 * names up in its own namespace only: no instance dict (tp_dictoffset 0;
 * the module's dict stays, read by its own members and cleared with it), so
 * that CPython's method-load specializations, which refuse an object with a
 * dict, apply. The classes keep one layout, so a LazyLibrary can become a
 * Library. */
PyObject *bt_library_class(PyObject *module, PyObject *arg)
{
    PyTypeObject *tp = (PyTypeObject *)arg;

    (void)module;
    if (!PyType_Check(arg) || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        !PyType_IsSubtype(tp, &PyModule_Type) || tp->tp_getattro == PyModule_Type.tp_getattro ||
        (tp->tp_dictoffset != PyModule_Type.tp_dictoffset && tp->tp_dictoffset != 0) ||
        tp->tp_weaklistoffset != PyModule_Type.tp_weaklistoffset) {
        PyErr_Format(PyExc_TypeError,
                     "_library_class() takes bindthem's Library class (a types.ModuleType "
                     "subclass with object's __getattribute__), not %R",
                     arg);
        return NULL;
    }
    tp->tp_dictoffset = 0;
    PyType_Modified(tp);
    Py_RETURN_NONE;
}
