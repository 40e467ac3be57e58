/* bt_plan_py.c - bindthem._core.Plan: one parse of a header and its
 * instantiate.yml, with the exact bytes parsed.
 *
 * What crosses the C/Python seam between parsing and binding: a build
 * parses once into a Plan, keys its cache on the Plan's bytes, has the
 * compiler read a snapshot of those bytes, and binds the Plan; no file is
 * read twice. Immutable once made (its metadata dicts are made anew on
 * each request, the hashes computed on each request). */
#include "bt_plan_py.h"

#include "bt_diag_py.h"
#include "bt_meta_py.h"

typedef struct BtPlanObject {
    PyObject_HEAD
    BtMeta meta;
    PyObject *header;      /* str: the header's path as given */
    PyObject *instantiate; /* str or None */
    PyObject *header_text; /* bytes: what was parsed */
    PyObject *yaml_text;   /* bytes or None */
    int strict;
} BtPlanObject;

static void plan_dealloc(BtPlanObject *p)
{
    PyTypeObject *tp = Py_TYPE(p);
    bt_meta_free(&p->meta);
    Py_CLEAR(p->header);
    Py_CLEAR(p->instantiate);
    Py_CLEAR(p->header_text);
    Py_CLEAR(p->yaml_text);
    tp->tp_free(p);
    Py_DECREF(tp);
}

static PyObject *plan_repr(BtPlanObject *p)
{
    return PyUnicode_FromFormat("<bindthem plan of %R with %R (%zd bytes)>", p->header,
                                p->instantiate, PyBytes_GET_SIZE(p->header_text));
}

/* New reference: SHA-256 of bytes (hex), or None for None. */
static PyObject *sha256_hex(PyObject *bytes)
{
    PyObject *hashlib, *h, *r;

    if (bytes == Py_None)
        return Py_NewRef(Py_None);
    hashlib = PyImport_ImportModule("hashlib");
    if (!hashlib)
        return NULL;
    h = PyObject_CallMethod(hashlib, "sha256", "O", bytes);
    Py_DECREF(hashlib);
    if (!h)
        return NULL;
    r = PyObject_CallMethod(h, "hexdigest", NULL);
    Py_DECREF(h);
    return r;
}

static PyObject *plan_header_sha(BtPlanObject *p, void *unused)
{
    return sha256_hex(p->header_text);
}

static PyObject *plan_yaml_sha(BtPlanObject *p, void *unused) { return sha256_hex(p->yaml_text); }

static PyObject *plan_metadata(BtPlanObject *p, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"brief", NULL};
    int brief = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:metadata", kwlist, &brief))
        return NULL;
    return bt_meta_to_py(&p->meta, brief);
}

static PyMemberDef plan_members[] = {
    {"header", T_OBJECT, offsetof(BtPlanObject, header), READONLY, "The header's path."},
    {"instantiate", T_OBJECT, offsetof(BtPlanObject, instantiate), READONLY,
     "instantiate.yml's path, or None."},
    {"header_text", T_OBJECT, offsetof(BtPlanObject, header_text), READONLY,
     "The header's bytes, exactly as parsed."},
    {"yaml_text", T_OBJECT, offsetof(BtPlanObject, yaml_text), READONLY,
     "instantiate.yml's bytes as parsed, or None."},
    {"strict", T_BOOL, offsetof(BtPlanObject, strict), READONLY, "strict as given."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef plan_getset[] = {
    {"header_sha256", (getter)plan_header_sha, NULL, "SHA-256 (hex) of header_text.", NULL},
    {"yaml_sha256", (getter)plan_yaml_sha, NULL, "SHA-256 (hex) of yaml_text, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef plan_methods[] = {
    {"metadata", (PyCFunction)(void (*)(void))plan_metadata, METH_VARARGS | METH_KEYWORDS,
     "metadata($self, /, *, brief=False)\n--\n\n"
     "What parse_header() returns for this plan, as a new dict (brief: each\n"
     "overload's dict holds only what a build's source needs)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot plan_slots[] = {
    {Py_tp_dealloc, plan_dealloc},
    {Py_tp_repr, plan_repr},
    {Py_tp_members, plan_members},
    {Py_tp_getset, plan_getset},
    {Py_tp_methods, plan_methods},
    {Py_tp_doc, "A header and its instantiate.yml parsed once (_core.parse): the bytes parsed, "
                "their hashes and the metadata; what bind() and cuda_bind() take."},
    {0, NULL},
};

PyType_Spec bt_plan_spec = {
    .name = "bindthem._core.Plan",
    .basicsize = sizeof(BtPlanObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = plan_slots,
};

/* *out: the given text's bytes, borrowed (NULL for None); 0, or -1 with
 * TypeError. */
static int given_text(PyObject *obj, const char *what, BtMetaText *out)
{
    out->text = NULL;
    out->len = 0;
    if (!obj || obj == Py_None)
        return 0;
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "parse(): %s must be bytes or None, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    out->text = PyBytes_AS_STRING(obj);
    out->len = (size_t)PyBytes_GET_SIZE(obj);
    return 0;
}

/* New reference: the Plan of header (bytes path) and inst (bytes or None),
 * texts from htext/ytext where given, else read once. */
static PyObject *plan_new(BtState *st, PyObject *header, PyObject *inst, PyObject *htext,
                          PyObject *ytext, int strict)
{
    BtMetaText ht, yt;
    BtPlanObject *p;
    BtDiag diag;
    int has_yaml = inst != Py_None;

    if (given_text(htext, "header_text", &ht) < 0 || given_text(ytext, "yaml_text", &yt) < 0)
        return NULL;
    if (!has_yaml && yt.text) {
        PyErr_SetString(PyExc_TypeError, "parse(): yaml_text without instantiate (its path)");
        return NULL;
    }
    p = PyObject_New(BtPlanObject, st->PlanType);
    if (!p)
        return NULL;
    memset(&p->meta, 0, sizeof p->meta);
    p->header = p->instantiate = p->header_text = p->yaml_text = NULL;
    p->strict = strict;
    BT_FT_ADD(&st->parses, 1);
    bt_diag_init(&diag);
    if (bt_meta_parse(&p->meta, PyBytes_AS_STRING(header), &ht,
                      has_yaml ? PyBytes_AS_STRING(inst) : NULL, &yt, strict, &diag) < 0) {
        Py_DECREF(p);
        return bt_raise_diag(st, &diag);
    }
    p->header = PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(header));
    p->instantiate = has_yaml ? PyUnicode_DecodeFSDefault(PyBytes_AS_STRING(inst))
                              : Py_NewRef(Py_None);
    p->header_text = PyBytes_FromStringAndSize(p->meta.header_text, (Py_ssize_t)p->meta.header_len);
    p->yaml_text = has_yaml
                       ? PyBytes_FromStringAndSize(p->meta.yaml_text, (Py_ssize_t)p->meta.yaml_len)
                       : Py_NewRef(Py_None);
    if (!p->header || !p->instantiate || !p->header_text || !p->yaml_text) {
        Py_DECREF(p);
        return NULL;
    }
    return (PyObject *)p;
}

const char bt_plan_parse_doc[] =
    "parse(header, instantiate=None, *, strict=False, header_text=None, yaml_text=None)\n--\n\n"
    "Parse a kernel header (and an instantiate.yml) into a Plan, reading each file\n"
    "once; header_text / yaml_text (bytes): parse these instead of reading the\n"
    "file (the paths still name them). The Plan keeps the bytes parsed, their\n"
    "SHA-256 and the metadata; bind() and cuda_bind() take it.";

PyObject *bt_plan_parse(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"header", "instantiate", "strict", "header_text", "yaml_text", NULL};
    PyObject *header = NULL, *inst = NULL, *htext = Py_None, *ytext = Py_None, *r = NULL;
    int strict = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&|O&$pOO:parse", kwlist, PyUnicode_FSConverter,
                                     &header, bt_path_converter, &inst, &strict, &htext, &ytext))
        goto done;
    r = plan_new(bt_state(module), header, inst ? inst : Py_None, htext, ytext, strict);
done:
    Py_XDECREF(header);
    Py_XDECREF(inst);
    return r;
}

const BtMeta *bt_plan_meta(BtState *st, const char *who, PyObject *plan)
{
    if (!Py_IS_TYPE(plan, st->PlanType)) {
        PyErr_Format(PyExc_TypeError, "%s(): expected a Plan, not %.100s", who,
                     Py_TYPE(plan)->tp_name);
        return NULL;
    }
    return &((BtPlanObject *)plan)->meta;
}

PyObject *bt_plan_for_bind(BtState *st, const char *who, PyObject *header, PyObject *instantiate,
                           int strict, const BtMeta **m)
{
    PyObject *path = NULL, *inst = NULL, *plan = NULL;

    if (Py_IS_TYPE(header, st->PlanType)) {
        if (instantiate != Py_None) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): instantiate= with a Plan: the plan has its instantiate.yml "
                         "already; pass instantiate=None",
                         who);
            return NULL;
        }
        if (((BtPlanObject *)header)->strict != strict) {
            PyErr_Format(PyExc_ValueError,
                         "%s(): strict=%s, but the Plan was parsed with strict=%s: parse again "
                         "or pass the plan's",
                         who, strict ? "True" : "False", strict ? "False" : "True");
            return NULL;
        }
        *m = &((BtPlanObject *)header)->meta;
        return Py_NewRef(header);
    }
    if (PyUnicode_FSConverter(header, &path) && bt_path_converter(instantiate, &inst)) {
        plan = plan_new(st, path, inst, NULL, NULL, strict);
        if (plan)
            *m = &((BtPlanObject *)plan)->meta;
    }
    Py_XDECREF(path);
    Py_XDECREF(inst);
    return plan;
}
