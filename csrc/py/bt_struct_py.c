/* bt_struct_py.c - structs and unions as NumPy structured dtypes. */
#include "bt_struct_py.h"

#include "bt_types.h"

PyObject *bt_struct_table(const BtHeader *h)
{
    PyObject *t = PyList_New(h->n_structs);
    int i;

    for (i = 0; t && i < h->n_structs; i++)
        PyList_SET_ITEM(t, i, Py_NewRef(Py_None));
    return t;
}

/* New reference: the NumPy descriptor of scalar type t. */
static PyObject *scalar(BtTypeId t)
{
    const BtType *ty = bt_type(t);

    if (t == BT_VOID || ty->npy_type < 0) {
        PyErr_Format(PyExc_ValueError, "bindthem: a struct field of type %s has no NumPy dtype",
                     ty->cname);
        return NULL;
    }
    return (PyObject *)PyArray_DescrFromType(ty->npy_type);
}

/* New reference: field f's format: a descriptor, or (descriptor, dims)
 * for an array. */
static PyObject *field_format(PyObject *table, const BtHeader *h, const BtField *f)
{
    PyObject *base, *dims, *r;
    int k;

    if (f->is_pointer) /* an address (uintptr_t), whatever it points to */
        base = (PyObject *)PyArray_DescrFromType(NPY_UINTP);
    else if (f->struct_ref)
        base = Py_XNewRef((PyObject *)bt_struct_dtype(table, h, f->struct_ref - 1));
    else /* an enum's: its integer type (the parser's) */
        base = scalar(f->type);
    if (!base || f->n_dims == 0)
        return base;
    if (!(dims = PyTuple_New(f->n_dims))) {
        Py_DECREF(base);
        return NULL;
    }
    for (k = 0; k < f->n_dims; k++) {
        PyObject *n = PyLong_FromLongLong(f->dims[k]);
        if (!n) {
            Py_DECREF(base);
            Py_DECREF(dims);
            return NULL;
        }
        PyTuple_SET_ITEM(dims, k, n);
    }
    r = PyTuple_Pack(2, base, dims);
    Py_DECREF(base);
    Py_DECREF(dims);
    return r;
}

/* New reference: the dtype of struct s, made from its fields. */
static PyArray_Descr *make(PyObject *table, const BtHeader *h, const BtStruct *s)
{
    PyObject *names = PyList_New(s->n_fields), *formats = PyList_New(s->n_fields);
    PyObject *offsets = PyList_New(s->n_fields), *spec = NULL;
    PyArray_Descr *d = NULL;
    int k;

    if (!names || !formats || !offsets)
        goto done;
    for (k = 0; k < s->n_fields; k++) {
        const BtField *f = &s->fields[k];
        PyObject *name = PyUnicode_FromString(f->name), *format = field_format(table, h, f);
        PyObject *offset = PyLong_FromSize_t(f->offset);
        /* the lists own them, also when one is NULL (a later failure frees them with it) */
        PyList_SET_ITEM(names, k, name);
        PyList_SET_ITEM(formats, k, format);
        PyList_SET_ITEM(offsets, k, offset);
        if (!name || !format || !offset)
            goto done;
    }
    spec = Py_BuildValue("{s:O,s:O,s:O,s:n,s:O}", "names", names, "formats", formats, "offsets",
                         offsets, "itemsize", (Py_ssize_t)s->size, "aligned", Py_True);
    if (spec && PyArray_DescrConverter(spec, &d) != NPY_SUCCEED)
        d = NULL;
done:
    Py_XDECREF(names);
    Py_XDECREF(formats);
    Py_XDECREF(offsets);
    Py_XDECREF(spec);
    return d;
}

PyArray_Descr *bt_struct_dtype(PyObject *table, const BtHeader *h, int i)
{
    const BtStruct *s = &h->structs[i];
    PyObject *have = PyList_GET_ITEM(table, i);
    PyArray_Descr *d;

    if (have != Py_None)
        return (PyArray_Descr *)have;
    if (s->reason) {
        PyErr_Format(PyExc_ValueError, "bindthem: %s has no dtype: %s", s->key, s->reason);
        return NULL;
    }
    if (!(d = make(table, h, s)) || PyList_SetItem(table, i, (PyObject *)d) < 0)
        return NULL;
    return d;
}

PyObject *bt_struct_named(PyObject *table, const BtHeader *h)
{
    PyObject *named = PyDict_New(), *key = NULL;
    int i, r;

    if (!named)
        return NULL;
    /* the header's own first: making one may make structs declared before it */
    for (i = 0; i < h->n_structs; i++) {
        const BtStruct *s = &h->structs[i];
        if (s->in_header && s->name[0] && !s->reason && !bt_struct_dtype(table, h, i))
            goto error;
    }
    for (i = 0; i < h->n_structs; i++) {
        const BtStruct *s = &h->structs[i];
        if (PyList_GET_ITEM(table, i) == Py_None)
            continue;
        /* its name; its key (unique) when it has none or an earlier one has it */
        if (!(key = PyUnicode_FromString(s->name[0] ? s->name : s->key)) ||
            (r = PyDict_Contains(named, key)) < 0)
            goto error;
        if (r)
            Py_SETREF(key, PyUnicode_FromString(s->key));
        r = key ? PyDict_SetItem(named, key, PyList_GET_ITEM(table, i)) : -1;
        Py_CLEAR(key);
        if (r < 0)
            goto error;
    }
    return named;
error:
    Py_XDECREF(key);
    Py_DECREF(named);
    return NULL;
}
