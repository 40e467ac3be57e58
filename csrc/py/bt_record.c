/* bt_record.c - structs in calls: record arguments by pointer and by value, returned records. */
#include "bt_record.h"

#include "bt_numpy.h"

#include <stdio.h>
#include <string.h>

#include "bt_struct_ffi.h"
#include "bt_struct_py.h"

/* ================= binding ================= */

const char *bt_record_refused(const BtOverload *ov, int host, BtArena *scratch)
{
    const BtDecl *d = ov->decl;
    int i;

    for (i = -1; i < d->n_params; i++) {
        const BtTypeRef *t = i < 0 ? &d->ret : &d->params[i].t;
        const BtStruct *s = bt_plan_struct(ov, t);
        const char *why = NULL, *name, *r;
        if (!s)
            continue;
        if (!host)
            why = "bindthem passes structs to C functions on the CPU only (a kernel cannot read "
                  "a record's host memory)";
        else if (!t->is_array && !bt_struct_ffi(ov->header->structs, s, scratch, &why) && !why)
            return "a function that passes a struct by value (out of memory)";
        if (!why)
            continue;
        name = bt_plan_type_name(ov, t, BT_VOID);
        r = i < 0
                ? bt_arena_printf(scratch, "a function that returns %s by value: %s", name, why)
                : bt_arena_printf(scratch, "a function whose parameter '%s' is %s%s: %s",
                                  d->params[i].name, name, t->is_array ? " *" : " (by value)", why);
        return r ? r : why;
    }
    return NULL;
}

/* The record of type ref r of ov (a struct_ref), from arena; NULL with an
 * exception set. */
static BtRecord *record_new(const BtOverload *ov, const BtTypeRef *r, BtArena *arena)
{
    const BtStruct *s = bt_plan_struct(ov, r);
    BtRecord *rec = bt_arena_alloc(arena, sizeof *rec);
    const char *why = NULL;

    if (!rec || !(rec->cname = bt_arena_strdup(arena, bt_plan_type_name(ov, r, BT_VOID))) ||
        !(rec->attr = bt_arena_strdup(arena, s->name)))
        return (BtRecord *)PyErr_NoMemory();
    rec->index = r->struct_ref - 1;
    rec->by_value = !r->is_array;
    rec->is_const = r->is_const;
    rec->writes = r->is_array && !r->is_const;
    rec->size = s->size;
    rec->align = s->align ? s->align : 1;
    if (rec->by_value && !(rec->ffi = bt_struct_ffi(ov->header->structs, s, arena, &why))) {
        /* bt_record_refused refused what libffi cannot pass */
        if (why)
            PyErr_Format(PyExc_SystemError, "bindthem: %s by value: %s", rec->cname, why);
        else
            PyErr_NoMemory();
        return NULL;
    }
    return rec;
}

int bt_record_slot(BtArgSlot *s, const BtOverload *ov, const BtTypeRef *r, BtArena *arena)
{
    BtRecord *rec = record_new(ov, r, arena);

    if (!rec)
        return -1;
    s->rec = rec;
    s->is_array = 0; /* a scalar slot, the full way (bt_slot_store_arg) */
    s->kind = rec->by_value ? 'R' : 'r';
    s->size = sizeof(void *); /* its word: the address of the record */
    s->need = BT_ARR_C_CONTIGUOUS | BT_ARR_ALIGNED | (rec->writes ? BT_ARR_WRITEABLE : 0);
    return 0;
}

int bt_record_return(BtCall *call, const BtOverload *ov, BtArena *arena)
{
    call->ret_rec = NULL;
    if (!ov->decl->ret.struct_ref)
        return 0;
    call->ret_rec = record_new(ov, &ov->decl->ret, arena);
    return call->ret_rec ? 0 : -1;
}

int bt_record_ffi_types(const BtCall *call, ffi_type **atypes, ffi_type **rtype)
{
    int i, any = 0;

    for (i = 0; i < call->n_py; i++) {
        const BtArgSlot *s = &call->slots[i];
        if (bt_slot_is_record(s) && s->rec->by_value) {
            atypes[s->cidx] = s->rec->ffi;
            any = 1;
        }
    }
    if (call->ret_rec) {
        *rtype = call->ret_rec->ffi;
        any = 1;
    }
    return any;
}

/* r's dtype from table (r NULL: nothing). 0 or -1. */
static int link_one(BtRecord *r, PyObject *table, const BtHeader *h)
{
    if (!r)
        return 0;
    r->descr = bt_struct_dtype(table, h, r->index);
    return r->descr ? 0 : -1;
}

int bt_record_link(BtCall *calls, int n, PyObject *table, const BtHeader *h)
{
    int k, i;

    for (k = 0; k < n; k++) {
        for (i = 0; i < calls[k].n_py; i++)
            if (bt_slot_is_record(&calls[k].slots[i]) &&
                link_one(calls[k].slots[i].rec, table, h) < 0)
                return -1;
        if (link_one(calls[k].ret_rec, table, h) < 0)
            return -1;
    }
    return 0;
}

/* ================= dispatch ================= */

int bt_record_accepts(const BtRecord *r, uint8_t code)
{
    if (code == BT_K_RECORDS)
        return 1;
    return code == BT_K_RECORD && (r->by_value || r->is_const);
}

const char *bt_record_wants(const BtRecord *r, char *buf, size_t size)
{
    const char *what = r->by_value   ? "a numpy.void record"
                       : r->is_const ? "an array or numpy.void record"
                                     : "an array";

    if (r->attr[0])
        snprintf(buf, size, "%s of %s (the Library's dtype '%s')", what, r->cname, r->attr);
    else
        snprintf(buf, size, "%s of %s", what, r->cname);
    return buf;
}

/* ================= the store ================= */

/* New reference: `path.name` (path NULL: name). */
static PyObject *field_path(PyObject *path, PyObject *name)
{
    return path ? PyUnicode_FromFormat("%U.%U", path, name) : Py_NewRef(name);
}

/* Field name of structured d: its dtype and offset into *fd, *off (1), or
 * 0 when d has none; -1 with an exception set. */
static int field_of(PyArray_Descr *d, PyObject *name, PyArray_Descr **fd, Py_ssize_t *off)
{
    PyObject *t = PyDict_GetItemWithError(PyDataType_FIELDS(d), name);

    if (!t)
        return PyErr_Occurred() ? -1 : 0;
    *fd = (PyArray_Descr *)PyTuple_GET_ITEM(t, 0);
    *off = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 1));
    return *off == -1 && PyErr_Occurred() ? -1 : 1;
}

static PyObject *differs(PyArray_Descr *want, PyArray_Descr *got, PyObject *path);

/* differs() for field i of structured want and got (path: theirs). */
static PyObject *field_differs(PyArray_Descr *want, PyArray_Descr *got, Py_ssize_t i,
                               PyObject *path)
{
    PyObject *wn = PyTuple_GET_ITEM(PyDataType_NAMES(want), i);
    PyObject *gn = PyTuple_GET_ITEM(PyDataType_NAMES(got), i), *sub, *r = NULL;
    PyArray_Descr *wd, *gd;
    Py_ssize_t wo, go;
    int has;

    if (!(sub = field_path(path, wn)))
        return NULL;
    if (field_of(want, wn, &wd, &wo) < 0 || (has = field_of(got, wn, &gd, &go)) < 0)
        goto done;
    if (PyUnicode_Compare(wn, gn) != 0) {
        r = has ? PyUnicode_FromFormat("its field %zd is '%U', where the struct has '%U' (its "
                                       "fields are in another order)",
                                       i, gn, sub)
                : PyUnicode_FromFormat("it has no field '%U'", sub);
    } else if (wo != go) {
        r = PyUnicode_FromFormat("its field '%U' is at offset %zd, the struct's at %zd", sub, go,
                                 wo);
    } else {
        r = differs(wd, gd, sub);
    }
done:
    Py_DECREF(sub);
    return r;
}

/* New reference: the first difference of got from want (the struct's dtype,
 * or its field at `path`; NULL: the struct itself), as text; None when
 * there is none. */
static PyObject *differs(PyArray_Descr *want, PyArray_Descr *got, PyObject *path)
{
    Py_ssize_t i, n, m, wsize = PyDataType_ELSIZE(want), gsize = PyDataType_ELSIZE(got);
    PyObject *r, *extra;

    if (want == got)
        Py_RETURN_NONE;
    if (!PyDataType_HASFIELDS(want) || !PyDataType_HASFIELDS(got)) {
        if (!PyDataType_HASFIELDS(want) && !PyDataType_HASFIELDS(got) && wsize == gsize &&
            PyArray_EquivTypes(want, got))
            Py_RETURN_NONE;
        if (!path)
            return PyUnicode_FromString("it has no fields");
        return PyUnicode_FromFormat("its field '%U' is %S, the struct's is %S", path, got, want);
    }
    n = PyTuple_GET_SIZE(PyDataType_NAMES(want));
    m = PyTuple_GET_SIZE(PyDataType_NAMES(got));
    for (i = 0; i < n && i < m; i++)
        if ((r = field_differs(want, got, i, path)) != Py_None)
            return r;
        else
            Py_DECREF(r);
    if (n == m && wsize != gsize) /* the same fields, padded otherwise */
        return path ? PyUnicode_FromFormat("its field '%U' is %zd bytes, the struct's %zd", path,
                                           gsize, wsize)
                    : PyUnicode_FromFormat("its records are %zd bytes, the struct's %zd", gsize,
                                           wsize);
    if (n == m)
        Py_RETURN_NONE;
    if (!(extra = field_path(
              path, PyTuple_GET_ITEM(PyDataType_NAMES(n > m ? want : got), n > m ? m : n))))
        return NULL;
    r = n > m ? PyUnicode_FromFormat("it has no field '%U'", extra)
              : PyUnicode_FromFormat("it has a field '%U', which the struct has not", extra);
    Py_DECREF(extra);
    return r;
}

/* New reference: "numpy.ndarray of dtype ...", "list": argument o, for messages. */
static PyObject *given(PyObject *o)
{
    if (PyArray_Check(o))
        return PyUnicode_FromFormat("a numpy.ndarray of dtype %S",
                                    PyArray_DESCR((PyArrayObject *)o));
    if (PyArray_IsScalar(o, Void))
        return PyUnicode_FromFormat("a numpy.void of dtype %S", ((PyVoidScalarObject *)o)->descr);
    return PyUnicode_FromString(Py_TYPE(o)->tp_name);
}

/* TypeError: o is no record of r. Returns -1. */
static int not_a_record(const BtRecord *r, PyObject *o, const char *fname, PyObject *name)
{
    char buf[256];
    PyObject *g = given(o);

    if (g)
        PyErr_Format(PyExc_TypeError, "%s(): argument '%U' must be %s, not %U", fname, name,
                     bt_record_wants(r, buf, sizeof buf), g);
    Py_XDECREF(g);
    return -1;
}

/* o, whose dtype d is not r's object: 0 when it is equivalent, else -1
 * with a TypeError saying which field differs. */
static int check_dtype(const BtRecord *r, PyArray_Descr *d, PyObject *o, const char *fname,
                       PyObject *name)
{
    PyObject *why, *g;

    if (!r->descr) {
        PyErr_Format(PyExc_SystemError, "bindthem: %s has no dtype", r->cname);
        return -1;
    }
    if (!(why = differs(r->descr, d, NULL)))
        return -1;
    if (why == Py_None) {
        Py_DECREF(why);
        return 0;
    }
    if ((g = given(o)))
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is %U, which is not the dtype of %s%s%s%s: %U", fname,
                     name, g, r->cname, r->attr[0] ? " (the Library's '" : "", r->attr,
                     r->attr[0] ? "')" : "", why);
    Py_XDECREF(g);
    Py_DECREF(why);
    return -1;
}

/* A record argument of the struct's dtype that slot s does not take:
 * records (n) of another count, or an array without s->need's flags. -1
 * with a TypeError. */
static int refused(const BtArgSlot *s, npy_intp n, int flags, const char *fname, PyObject *name)
{
    const BtRecord *r = s->rec;
    int missing = s->need & ~flags;

    if (r->by_value)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' holds %zd records of %s, but the function takes one, "
                     "by value: pass a numpy.void record or a 1-element array",
                     fname, name, (Py_ssize_t)n, r->cname);
    else if (n < 1)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is an empty array, but the function takes a pointer to "
                     "at least one %s",
                     fname, name, r->cname);
    else if (missing & BT_ARR_WRITEABLE)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is a read-only array of %s, but the function may write "
                     "to it (the parameter is not const): pass a writable array",
                     fname, name, r->cname);
    else if (missing & BT_ARR_C_CONTIGUOUS)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is an array of %s that is not C-contiguous, but the "
                     "function reads its records one after another: pass "
                     "numpy.ascontiguousarray(%U)",
                     fname, name, r->cname, name);
    else
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' holds %s records at an address that is not a multiple "
                     "of their alignment (%zu bytes): pass an aligned copy, "
                     "numpy.require(%U, requirements='A')",
                     fname, name, r->cname, r->align, name);
    return -1;
}

int bt_record_store(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                    PyObject *name)
{
    const BtRecord *r = s->rec;
    PyArray_Descr *d;
    char *data;
    npy_intp n = 1;
    int flags;

    if (PyArray_Check(o)) {
        PyArrayObject *a = (PyArrayObject *)o;
        d = PyArray_DESCR(a);
        data = PyArray_DATA(a);
        /* the C struct's alignment: a bit-field's type may raise it past its dtype's */
        flags = PyArray_FLAGS(a) & ((uintptr_t)data % r->align ? ~BT_ARR_ALIGNED : ~0);
        n = PyArray_SIZE(a);
    } else if (PyArray_IsScalar(o, Void) && (r->by_value || r->is_const)) {
        PyVoidScalarObject *v = (PyVoidScalarObject *)o;
        d = v->descr;
        data = v->obval;
        flags = BT_ARR_C_CONTIGUOUS | ((uintptr_t)data % r->align ? 0 : BT_ARR_ALIGNED);
    } else {
        return not_a_record(r, o, fname, name);
    }
    if (d != r->descr && check_dtype(r, d, o, fname, name) < 0)
        return -1;
    if (r->by_value ? n != 1 : n < 1 || (flags & s->need) != s->need)
        return refused(s, n, flags, fname, name);
    out->p = data;
    return 0;
}

/* ================= returned records ================= */

PyObject *bt_record_result_new(const BtRecord *r, void **data)
{
    PyObject *a;

    Py_INCREF(r->descr); /* PyArray_NewFromDescr takes it */
    a = PyArray_NewFromDescr(&PyArray_Type, r->descr, 0, NULL, NULL, NULL, 0, NULL);
    if (!a)
        return NULL;
    *data = PyArray_DATA((PyArrayObject *)a);
    memset(*data, 0, r->size);
    return a;
}

PyObject *bt_record_result(PyObject *result) { return PyArray_Return((PyArrayObject *)result); }
