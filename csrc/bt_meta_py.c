/* bt_meta_py.c - metadata to plain Python objects. The one place where
 * declarations become dicts; the stub emitter and the CLI read only what
 * this file produces. */
#include "bt_meta_py.h"

#include <string.h>

#include "bt_diag_py.h"
#include "bt_slot.h"
#include "bt_mangle.h"

/* New reference: the spelling of a type ref in its declaration ("I",
 * "std::complex<T>", "double"). */
static PyObject *typeref_name(const BtDecl *d, const BtTypeRef *t)
{
    if (t->tparam >= 0 && t->is_complex_of_tparam)
        return PyUnicode_FromFormat("std::complex<%s>", d->tparams[t->tparam]);
    if (t->tparam >= 0)
        return PyUnicode_FromString(d->tparams[t->tparam]);
    return PyUnicode_FromString(bt_type(t->type)->cname);
}

static PyObject *str_tuple(const char *const *items, int n)
{
    PyObject *t = PyTuple_New(n);
    int i;

    if (!t)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject *s = PyUnicode_FromString(items[i]);
        if (!s) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, s);
    }
    return t;
}

/* New reference: {"name", "type", "const", "array", "size_of", "default" (as
 * written, or None), "line", "col"}. */
static PyObject *param_dict(const BtDecl *d, const BtParam *p)
{
    PyObject *type = typeref_name(d, &p->t);
    PyObject *r = NULL;

    if (!type)
        return NULL;
    r = Py_BuildValue("{s:s,s:O,s:O,s:O,s:z,s:z,s:i,s:i}", "name", p->name, "type", type, "const",
                      p->t.is_const ? Py_True : Py_False, "array",
                      p->t.is_array ? Py_True : Py_False, "size_of",
                      p->size_of >= 0 ? d->params[p->size_of].name : NULL, "default", p->defval,
                      "line", p->line, "col", p->col);
    Py_DECREF(type);
    return r;
}

/* New reference: one declaration as a dict. */
static PyObject *decl_dict(const BtDecl *d)
{
    PyObject *params = NULL, *ns = NULL, *tps = NULL, *ret = NULL, *r = NULL;
    int i;

    params = PyList_New(d->n_params);
    if (!params)
        goto error;
    for (i = 0; i < d->n_params; i++) {
        PyObject *p = param_dict(d, &d->params[i]);
        if (!p)
            goto error;
        PyList_SET_ITEM(params, i, p);
    }
    ns = str_tuple(d->ns, d->n_ns);
    tps = str_tuple(d->tparams, d->n_tparams);
    ret = typeref_name(d, &d->ret);
    if (!ns || !tps || !ret)
        goto error;
    r = Py_BuildValue(
        "{s:s,s:O,s:O,s:{s:O,s:O,s:O},s:O,s:s,s:i,s:i,s:i,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:z}", "name",
        d->name, "namespace", ns, "template", tps, "return", "type", ret, "const",
        d->ret.is_const ? Py_True : Py_False, "array", d->ret.is_array ? Py_True : Py_False,
        "params", params, "doc", d->doc ? d->doc : "", "line", d->line, "col", d->col, "first_line",
        d->first_line, "last_line", d->last_line, "extern_c", d->extern_c ? Py_True : Py_False,
        "inline", d->is_inline ? Py_True : Py_False, "static", d->is_static ? Py_True : Py_False,
        "global", d->is_global ? Py_True : Py_False, "device", d->is_device ? Py_True : Py_False,
        "bindable", d->unbindable ? Py_False : Py_True, "reason", d->unbindable);
error:
    Py_XDECREF(params);
    Py_XDECREF(ns);
    Py_XDECREF(tps);
    Py_XDECREF(ret);
    return r;
}

/* New reference: one concrete overload as a dict; a parameter's "default"
 * is the value a call that leaves it out passes (bt_slot_defaults), or None. */
static PyObject *overload_dict(const BtOverload *ov, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    PyObject *targs = NULL, *params = NULL, *r = NULL;
    PyObject *pydefs[BT_MAX_PARAMS];
    const char *symbol;
    int i;

    symbol = bt_mangle(d, ov->targs, arena);
    if (!symbol)
        return PyErr_Format(PyExc_MemoryError, "out of memory mangling %s", ov->signature);
    if (d->n_params > BT_MAX_PARAMS) /* bind() refuses it; no defaults to show */
        memset(pydefs, 0, sizeof pydefs);
    else if (bt_slot_defaults(ov, pydefs, NULL) < 0)
        return NULL;
    targs = PyTuple_New(d->n_tparams);
    params = PyList_New(d->n_params);
    if (!targs || !params)
        goto error;
    for (i = 0; i < d->n_tparams; i++) {
        PyObject *s;
        BtBuf b;
        bt_buf_init(&b);
        bt_plan_put_targ(&b, &ov->targs[i]);
        s = b.failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(&b));
        bt_buf_free(&b);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(targs, i, s);
    }
    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        const BtType *t = bt_type(ov->ptypes[i]);
        PyObject *pd = Py_BuildValue("{s:s,s:s,s:s,s:s,s:O,s:O,s:z,s:O,s:O}", "name", p->name,
                                     "type", t->cname, "dtype", t->npname, "python", t->pyname,
                                     "const", p->t.is_const ? Py_True : Py_False, "array",
                                     p->t.is_array ? Py_True : Py_False, "size_of",
                                     p->size_of >= 0 ? d->params[p->size_of].name : NULL, "default",
                                     i < BT_MAX_PARAMS && pydefs[i] ? pydefs[i] : Py_None,
                                     "positional_only", p->unnamed ? Py_True : Py_False);
        if (!pd)
            goto error;
        PyList_SET_ITEM(params, i, pd);
    }
    r = Py_BuildValue("{s:s,s:O,s:{s:s,s:s,s:s},s:O,s:s,s:s,s:i,s:i}", "function", d->name,
                      "template_args", targs, "return", "type", bt_type(ov->ret)->cname, "dtype",
                      bt_type(ov->ret)->npname, "python", bt_type(ov->ret)->pyname, "params",
                      params, "signature", ov->signature, "symbol", symbol, "line", d->line,
                      "yaml_line", ov->inst ? ov->inst->line : 0);
error:
    for (i = 0; i < d->n_params && i < BT_MAX_PARAMS; i++)
        Py_XDECREF(pydefs[i]);
    Py_XDECREF(targs);
    Py_XDECREF(params);
    return r;
}

PyObject *bt_meta_left_out(const BtDecl *d, const char *reason, int deliberate)
{
    return Py_BuildValue("{s:s,s:i,s:s,s:O}", "name", d->name, "line", d->line, "reason", reason,
                         "deliberate", deliberate ? Py_True : Py_False);
}

PyObject *bt_meta_to_py(const BtMeta *m)
{
    BtArena scratch;
    PyObject *decls = NULL, *funcs = NULL, *skipped = NULL, *missing = NULL, *r = NULL;
    int i, j;

    bt_arena_init(&scratch);
    decls = PyList_New(m->header.n_decls);
    funcs = PyList_New(m->plan.n_funcs);
    skipped = PyList_New(m->plan.n_skipped);
    missing = PyList_New(m->plan.n_missing);
    if (!decls || !funcs || !skipped || !missing)
        goto error;
    for (i = 0; i < m->header.n_decls; i++) {
        PyObject *d = decl_dict(&m->header.decls[i]);
        if (!d)
            goto error;
        PyList_SET_ITEM(decls, i, d);
    }
    for (i = 0; i < m->plan.n_funcs; i++) {
        const BtFunc *f = &m->plan.funcs[i];
        PyObject *ovs = PyList_New(f->n_ovs), *fd;
        if (!ovs)
            goto error;
        for (j = 0; j < f->n_ovs; j++) {
            PyObject *o = overload_dict(&f->ovs[j], &scratch);
            if (!o) {
                Py_DECREF(ovs);
                goto error;
            }
            PyList_SET_ITEM(ovs, j, o);
        }
        fd = Py_BuildValue("{s:s,s:s,s:N}", "name", f->name, "doc", f->doc ? f->doc : "",
                           "overloads", ovs);
        if (!fd)
            goto error;
        PyList_SET_ITEM(funcs, i, fd);
    }
    for (i = 0; i < m->plan.n_skipped; i++) {
        const BtSkipped *s = &m->plan.skipped[i];
        PyObject *sd = bt_meta_left_out(s->decl, s->reason, s->deliberate);
        if (!sd)
            goto error;
        PyList_SET_ITEM(skipped, i, sd);
    }
    for (i = 0; i < m->plan.n_missing; i++) {
        PyObject *s = PyUnicode_FromString(m->plan.missing[i]);
        if (!s)
            goto error;
        PyList_SET_ITEM(missing, i, s);
    }
    r = Py_BuildValue("{s:s,s:z,s:O,s:O,s:O,s:O}", "header", m->header.file, "instantiate",
                      m->has_table ? m->table.file : NULL, "declarations", decls, "functions",
                      funcs, "skipped", skipped, "missing", missing);
error:
    Py_XDECREF(decls);
    Py_XDECREF(funcs);
    Py_XDECREF(skipped);
    Py_XDECREF(missing);
    bt_arena_free(&scratch);
    return r;
}

#define META_CAPSULE "bindthem._core.meta"

static void meta_capsule_free(PyObject *capsule)
{
    BtMeta *m = PyCapsule_GetPointer(capsule, META_CAPSULE);

    if (m) {
        bt_meta_free(m);
        PyMem_Free(m);
    }
}

PyObject *bt_meta_capsule(BtMeta *m)
{
    BtMeta *kept = PyMem_Malloc(sizeof *kept);
    PyObject *capsule;

    if (!kept)
        return PyErr_NoMemory();
    *kept = *m; /* the plan points into the arena's blocks, never into *m */
    memset(m, 0, sizeof *m);
    capsule = PyCapsule_New(kept, META_CAPSULE, meta_capsule_free);
    if (!capsule) {
        bt_meta_free(kept);
        PyMem_Free(kept);
    }
    return capsule;
}

const char bt_meta_capsule_doc[] =
    "metadata(capsule, /)\n--\n\n"
    "The metadata dict of a capsule that bind() returned (see parse_header).";

PyObject *bt_meta_capsule_to_py(PyObject *module, PyObject *capsule)
{
    BtMeta *m = PyCapsule_GetPointer(capsule, META_CAPSULE);

    return m ? bt_meta_to_py(m) : NULL;
}

/* fsencoded path from str/bytes/PathLike into *out (new reference), or None. */
int bt_path_converter(PyObject *obj, PyObject **out)
{
    if (obj == Py_None) {
        *out = Py_NewRef(Py_None);
        return 1;
    }
    return PyUnicode_FSConverter(obj, out);
}

int bt_meta_load_py(BtState *st, BtMeta *m, PyObject *header, PyObject *instantiate, int strict)
{
    BtDiag diag;
    int rc;

    st->parses++;
    bt_diag_init(&diag);
    rc = bt_meta_load(m, PyBytes_AS_STRING(header),
                      instantiate == Py_None ? NULL : PyBytes_AS_STRING(instantiate), strict,
                      &diag);
    if (rc < 0)
        bt_raise_diag(st, &diag);
    return rc;
}

/* 0 when dict[key] is the str of path (None for NULL), else -1 with ValueError. */
static int same_path(const char *who, PyObject *dict, const char *key, const char *path)
{
    PyObject *given = PyDict_GetItemString(dict, key), *real; /* borrowed */
    int same;

    real = path ? PyUnicode_DecodeFSDefault(path) : Py_NewRef(Py_None);
    if (!real)
        return -1;
    same = given && (given == real || (PyUnicode_Check(given) && PyUnicode_Check(real) &&
                                       PyUnicode_Compare(given, real) == 0));
    if (!same)
        PyErr_Format(PyExc_ValueError,
                     "%s(): the metadata dict says %s=%R, but its plan was parsed from %R: pass "
                     "the dict parse_header(..., plan=True) returned, unchanged",
                     who, key, given ? given : Py_None, real);
    Py_DECREF(real);
    return same ? 0 : -1;
}

/* The capsule a metadata dict carries as "plan", checked against the
 * dict's header and instantiate (new reference), or NULL with an exception. */
static PyObject *plan_of(const char *who, PyObject *dict, const BtMeta **m)
{
    PyObject *cap = PyDict_GetItemString(dict, "plan"); /* borrowed */

    if (!cap) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): the metadata dict has no 'plan': pass the header's path, or the "
                     "dict parse_header(..., plan=True) returns",
                     who);
        return NULL;
    }
    if (!PyCapsule_IsValid(cap, META_CAPSULE)) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): the metadata dict's 'plan' is %.100s, not the plan capsule "
                     "parse_header(..., plan=True) makes",
                     who, PyCapsule_CheckExact(cap) ? "another capsule" : Py_TYPE(cap)->tp_name);
        return NULL;
    }
    *m = PyCapsule_GetPointer(cap, META_CAPSULE);
    if (same_path(who, dict, "header", (*m)->header.file) < 0 ||
        same_path(who, dict, "instantiate", (*m)->has_table ? (*m)->table.file : NULL) < 0)
        return NULL;
    return Py_NewRef(cap);
}

PyObject *bt_meta_for_bind(BtState *st, const char *who, PyObject *header, PyObject *instantiate,
                           int strict, const BtMeta **m)
{
    PyObject *path = NULL, *inst = NULL, *cap = NULL;
    BtMeta meta;

    if (PyDict_Check(header)) {
        if (instantiate != Py_None) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): instantiate= with a metadata dict: the dict's plan has its "
                         "instantiate.yml already; pass instantiate=None",
                         who);
            return NULL;
        }
        return plan_of(who, header, m);
    }
    memset(&meta, 0, sizeof meta);
    if (!PyUnicode_FSConverter(header, &path) || !bt_path_converter(instantiate, &inst))
        goto error;
    if (bt_meta_load_py(st, &meta, path, inst, strict) < 0)
        goto error;
    cap = bt_meta_capsule(&meta);
    if (cap)
        *m = PyCapsule_GetPointer(cap, META_CAPSULE);
error:
    bt_meta_free(&meta);
    Py_XDECREF(path);
    Py_XDECREF(inst);
    return cap;
}
