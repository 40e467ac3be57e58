/* bt_module.c - module state, exec slot and PyInit__core. */
#include "bt_state.h"

#include "bt_numpy.h"

#include "bt_call.h"
#include "bt_from_c.h"
#include "bt_function.h"
#include "bt_handle.h"
#include "bt_library.h"
#include "bt_meta_py.h"
#include "bt_method.h"
#include "bt_note_call.h"
#include "bt_nvrtc_py.h"
#include "bt_opts.h"
#include "bt_plan_py.h"
#include "bt_pyname.h"
#include "bt_slot.h"
#include "bt_types.h"

PyDoc_STRVAR(parse_header_doc,
             "parse_header(header, instantiate=None, *, strict=False, brief=False)\n--\n\n"
             "Read a kernel header (and an instantiate.yml) into plain Python objects.\n\n"
             "Returns a dict with 'header', 'instantiate', 'declarations' (every function\n"
             "the header declares, bindable or not, with the reason), 'functions' (the\n"
             "Python callables to make: name, doc and concrete overloads with their C\n"
             "signature and symbol), 'skipped' (header functions not bound, and why) and\n"
             "'missing' (instantiate.yml names that this header lacks; with strict=True\n"
             "any such name is an error instead). brief=True: each overload's dict holds\n"
             "only 'instantiation' and 'lines' (what a build's source needs). parse() makes\n"
             "the Plan that bind() and cuda_bind() take.");

static PyObject *parse_header(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"header", "instantiate", "strict", "brief", NULL};
    PyObject *header = NULL, *inst = NULL, *r = NULL;
    int strict = 0, brief = 0;
    BtMeta meta;

    memset(&meta, 0, sizeof meta);
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O&$pp:parse_header", kwlist,
                                     PyUnicode_FSConverter, &header, bt_path_converter, &inst,
                                     &strict, &brief))
        goto error;
    if (!inst)
        inst = Py_NewRef(Py_None);
    if (bt_meta_load_py(bt_state(module), &meta, header, inst, strict) < 0)
        goto error;
    r = bt_meta_to_py(&meta, brief);
error:
    bt_meta_free(&meta);
    Py_XDECREF(header);
    Py_XDECREF(inst);
    return r;
}

static PyObject *parse_count(PyObject *module, PyObject *unused)
{
    return PyLong_FromSsize_t(BT_FT_LOAD_RELAXED(&bt_state(module)->parses));
}

static PyMethodDef core_methods[] = {
    {"parse_header", (PyCFunction)(void (*)(void))parse_header, METH_VARARGS | METH_KEYWORDS,
     parse_header_doc},
    {"bind", (PyCFunction)(void (*)(void))bt_library_bind, METH_VARARGS | METH_KEYWORDS,
     bt_library_bind_doc},
    {"_loaded", (PyCFunction)(void (*)(void))bt_library_loaded, METH_VARARGS | METH_KEYWORDS,
     bt_library_loaded_doc},
    {"parse", (PyCFunction)(void (*)(void))bt_plan_parse, METH_VARARGS | METH_KEYWORDS,
     bt_plan_parse_doc},
    {"header_directives", bt_meta_directives_py, METH_O, bt_meta_directives_doc},
    {"_library_class", bt_library_class, METH_O,
     "_library_class(cls)\n--\n\nA Library's own class made to look names up in its namespace "
     "only (bt_method.h)."},
    {"_parse_count", parse_count, METH_NOARGS,
     "_parse_count()\n--\n\nHow many times this process has parsed a header (tests)."},
    {"nvrtc", (PyCFunction)(void (*)(void))bt_nvrtc_py, METH_VARARGS | METH_KEYWORDS,
     bt_nvrtc_py_doc},
    {NULL, NULL, 0, NULL},
};

/* module.name = the C table names as a tuple. 0 or -1. */
static int add_names(PyObject *module, const char *name, const char *const *names)
{
    PyObject *t = bt_meta_names(names);
    int rc = t ? PyModule_AddObjectRef(module, name, t) : -1;

    Py_XDECREF(t);
    return rc;
}

/* module.DIRECT_ABI: the ABI of the direct call (bt_direct.h), or None
 * where every call goes through libffi. 0 or -1. */
static int add_direct_abi(PyObject *module)
{
    const char *abi = BT_DIRECT_ABI;
    PyObject *o = abi ? PyUnicode_FromString(abi) : Py_NewRef(Py_None);
    int rc = o ? PyModule_AddObjectRef(module, "DIRECT_ABI", o) : -1;

    Py_XDECREF(o);
    return rc;
}

/* module.DOC_ANCHORS: {rule: "docs/page.rst#anchor"}, bt_diag.h's table of
 * the dialect rules messages point at. 0 or -1. */
static int add_doc_anchors(PyObject *module)
{
    PyObject *d = PyDict_New();
    int i, rc = -1;

    if (!d)
        return -1;
    for (i = 0; i < BT_RULE_COUNT; i++) {
        PyObject *page = PyUnicode_FromString(bt_rule_docs[i].page);
        int bad = !page || PyDict_SetItemString(d, bt_rule_docs[i].name, page) < 0;
        Py_XDECREF(page);
        if (bad)
            goto done;
    }
    rc = PyModule_AddObjectRef(module, "DOC_ANCHORS", d);
done:
    Py_DECREF(d);
    return rc;
}

static int core_exec(PyObject *module)
{
    BtState *st = bt_state(module);
    int rc = -1;

    if (bt_numpy_import() < 0 || bt_slot_init() < 0)
        goto done;
#define GET(name)                                                                                  \
    if (!(st->name = bt_from_c(#name)))                                                            \
        goto done;                                                                                 \
    if (PyModule_AddObjectRef(module, #name, st->name) < 0)                                        \
        goto done;
    GET(BindError)
    GET(HeaderError)
    GET(InstantiateError)
    GET(SymbolError)
    GET(BuildError)
#undef GET
    st->FunctionType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &bt_function_spec, NULL);
    if (!st->FunctionType || PyModule_AddType(module, st->FunctionType) < 0)
        goto done;
    st->LibraryHandleType = (PyTypeObject *)PyType_FromModuleAndSpec(module,
                                                                     &bt_library_handle_spec, NULL);
    if (!st->LibraryHandleType || PyModule_AddType(module, st->LibraryHandleType) < 0)
        goto done;
    if (bt_note_add(module) < 0)
        return -1;
    if (bt_handle_add(module) < 0)
        goto done;
    st->PlanType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &bt_plan_spec, NULL);
    if (!st->PlanType || PyModule_AddType(module, st->PlanType) < 0)
        goto done;
    st->LibraryMethodType = (PyTypeObject *)PyType_FromModuleAndSpec(module, &bt_method_spec, NULL);
    if (!st->LibraryMethodType || PyModule_AddType(module, st->LibraryMethodType) < 0)
        goto done;
    if (PyModule_AddIntConstant(module, "GIL_RELEASE_MIN_ELEMENTS", BT_GIL_RELEASE_MIN) < 0 ||
        add_names(module, "GIL_POLICIES", bt_opts_gil_names) < 0 || add_doc_anchors(module) < 0 ||
        PyModule_AddStringConstant(module, "GIL_POLICY_TEXT", BT_GIL_POLICY_TEXT) < 0 ||
        add_names(module, "PYTHON_KEYWORDS", bt_pyname_keywords) < 0 || add_direct_abi(module) < 0)
        goto done;
    if (bt_cudapy_add(module) < 0)
        goto done;
    if (bt_opts_init(st) < 0 || PyModule_AddFunctions(module, bt_opts_methods) < 0)
        goto done;
    if (PyModule_AddFunctions(module, bt_slot_methods) < 0 ||
        PyModule_AddFunctions(module, bt_function_methods) < 0)
        goto done;
    rc = 0;
done:
    return rc;
}

static int core_traverse(PyObject *module, visitproc visit, void *arg)
{
    BtState *st = bt_state(module);
    Py_VISIT(st->BindError);
    Py_VISIT(st->HeaderError);
    Py_VISIT(st->InstantiateError);
    Py_VISIT(st->SymbolError);
    Py_VISIT(st->BuildError);
    Py_VISIT(st->FunctionType);
    Py_VISIT(st->LibraryHandleType);
    Py_VISIT(st->PlanType);
    Py_VISIT(st->LibraryMethodType);
    Py_VISIT(st->opts_var);
    Py_VISIT(st->HandleType);
    Py_VISIT(st->HandleTypeType);
    Py_VISIT(st->NullHandleError);
    Py_VISIT(st->StatusError);
    Py_VISIT(st->open_handles);
    return bt_cudapy_traverse(st, visit, arg);
}

static int core_clear(PyObject *module)
{
    BtState *st = bt_state(module);
    Py_CLEAR(st->BindError);
    Py_CLEAR(st->HeaderError);
    Py_CLEAR(st->InstantiateError);
    Py_CLEAR(st->SymbolError);
    Py_CLEAR(st->BuildError);
    Py_CLEAR(st->FunctionType);
    Py_CLEAR(st->LibraryHandleType);
    Py_CLEAR(st->PlanType);
    Py_CLEAR(st->LibraryMethodType);
    Py_CLEAR(st->opts_var);
    bt_handle_clear(st);
    bt_note_clear(st);
    bt_cudapy_clear(st);
    return 0;
}

static void core_free(void *module) { core_clear((PyObject *)module); }

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
#ifdef Py_GIL_DISABLED
    /* free-threaded CPython keeps the GIL off on import: every piece of
     * shared mutable state is safe without it (bt_ft.h; csrc/README.md,
     * "Free-threading") */
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef core_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "bindthem._core",
    .m_doc = "bindthem's C core: header/YAML metadata, symbols, libffi call frames.",
    .m_size = sizeof(BtState),
    .m_methods = core_methods,
    .m_slots = core_slots,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModuleDef_Init(&core_def); }
