/* bt_meta_py.c - metadata to plain Python objects. The one place where
 * declarations become dicts; the stub emitter and the CLI read only what
 * this file produces. */
#include "bt_meta_py.h"

#include <string.h>

#include "bt_diag_py.h"
#include "bt_fntype.h"
#include "bt_slot.h"
#include "bt_mangle.h"
#include "bt_pyname.h"

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

/* New reference: b's text as a str (MemoryError when b failed); frees b. */
static PyObject *buf_str(BtBuf *b)
{
    PyObject *r = b->failed ? PyErr_NoMemory() : PyUnicode_FromString(bt_buf_str(b));
    bt_buf_free(b);
    return r;
}

/* The name of the enum type ref t is (NULL: none; "" for one without a
 * name), of the header's enums. */
static const char *enum_of(const BtHeader *h, const BtTypeRef *t)
{
    return t->enum_ref > 0 && t->enum_ref <= h->n_enums ? h->enums[t->enum_ref - 1].name : NULL;
}

/* Sets into dict what type ref t of header h is beyond its scalar type:
 * "handle", "callback", "struct" (the name of its handle type, function
 * pointer type or struct, or None) and "voidp" (an opaque `void *`). 0 or
 * -1. */
static int put_refs(PyObject *dict, const BtHeader *h, const BtTypeRef *t)
{
    const char *hn = t->handle_ref > 0 && t->handle_ref <= h->n_handles
                         ? h->handles[t->handle_ref - 1].name
                         : NULL;
    const char *cn = t->callback_ref > 0 && t->callback_ref <= h->n_callbacks
                         ? h->callbacks[t->callback_ref - 1].name
                         : NULL;
    const char *sn = t->struct_ref > 0 && t->struct_ref <= h->n_structs
                         ? h->structs[t->struct_ref - 1].name
                         : NULL;
    PyObject *v = Py_BuildValue("{s:z,s:z,s:z,s:O}", "handle", hn, "callback", cn, "struct", sn,
                                "voidp", t->is_voidp ? Py_True : Py_False);
    int rc = v ? PyDict_Update(dict, v) : -1;

    Py_XDECREF(v);
    return rc;
}

/* Sets dict["shape"]: parameter p's fixed shape as a tuple of ints (a
 * fixed-size array, BtParam.fixed: what an argument must have), or None.
 * 0 or -1. */
static int put_shape(PyObject *dict, const BtParam *p)
{
    PyObject *shape = p->n_fixed ? PyTuple_New(p->n_fixed) : Py_NewRef(Py_None);
    int rc;

    for (int k = 0; shape && k < p->n_fixed; k++) {
        PyObject *v = PyLong_FromLongLong(p->fixed[k]);
        if (!v)
            Py_CLEAR(shape);
        else
            PyTuple_SET_ITEM(shape, k, v);
    }
    rc = shape ? PyDict_SetItemString(dict, "shape", shape) : -1;
    Py_XDECREF(shape);
    return rc;
}

/* New reference: {"name", "type", "const", "array", "string", "enum" (its
 * name, or None), "size_of", "default" (as written, or None), "line",
 * "col", "shape"} and put_refs' keys; "nullable": True for a C string that
 * takes None (BtTypeRef.nullable). */
static PyObject *param_dict(const BtHeader *h, const BtDecl *d, const BtParam *p)
{
    PyObject *type = typeref_name(d, &p->t);
    PyObject *r = NULL;

    if (!type)
        return NULL;
    r = Py_BuildValue("{s:s,s:O,s:O,s:O,s:O,s:z,s:z,s:z,s:i,s:i}", "name", p->name, "type", type,
                      "const", p->t.is_const ? Py_True : Py_False, "array",
                      p->t.is_array ? Py_True : Py_False, "string",
                      p->t.is_string ? Py_True : Py_False, "enum", enum_of(h, &p->t), "size_of",
                      p->size_of >= 0 ? d->params[p->size_of].name : NULL, "default", p->defval,
                      "line", p->line, "col", p->col);
    Py_DECREF(type);
    if (r && (put_refs(r, h, &p->t) < 0 || put_shape(r, p) < 0 ||
              (p->t.nullable && PyDict_SetItemString(r, "nullable", Py_True) < 0)))
        Py_CLEAR(r);
    return r;
}

/* New reference: declaration d's return as a dict: {"type", "const",
 * "array", "string", "enum"} and put_refs' keys. */
static PyObject *return_dict(const BtHeader *h, const BtDecl *d)
{
    PyObject *type = typeref_name(d, &d->ret), *r;

    if (!type)
        return NULL;
    r = Py_BuildValue("{s:N,s:O,s:O,s:O,s:z}", "type", type, "const",
                      d->ret.is_const ? Py_True : Py_False, "array",
                      d->ret.is_array ? Py_True : Py_False, "string",
                      d->ret.is_string ? Py_True : Py_False, "enum", enum_of(h, &d->ret));
    if (r && put_refs(r, h, &d->ret) < 0)
        Py_CLEAR(r);
    return r;
}

/* New reference: one declaration of header h as a dict. */
static PyObject *decl_dict(const BtHeader *h, const BtDecl *d)
{
    PyObject *params = NULL, *ns = NULL, *tps = NULL, *ret = NULL, *r = NULL;
    int i;

    params = PyList_New(d->n_params);
    if (!params)
        goto error;
    for (i = 0; i < d->n_params; i++) {
        PyObject *p = param_dict(h, d, &d->params[i]);
        if (!p)
            goto error;
        PyList_SET_ITEM(params, i, p);
    }
    ns = str_tuple(d->ns, d->n_ns);
    tps = str_tuple(d->tparams, d->n_tparams);
    ret = return_dict(h, d);
    if (!ns || !tps || !ret)
        goto error;
    r = Py_BuildValue(
        "{s:s,s:O,s:O,s:O,s:O,s:s,s:i,s:i,s:i,s:i,s:O,s:O,s:O,s:O,s:O,s:O,s:z}", "name", d->name,
        "namespace", ns, "template", tps, "return", ret, "params", params, "doc",
        d->doc ? d->doc : "", "line", d->line, "col", d->col, "first_line", d->first_line,
        "last_line", d->last_line, "extern_c", d->extern_c ? Py_True : Py_False, "inline",
        d->is_inline ? Py_True : Py_False, "static", d->is_static ? Py_True : Py_False, "global",
        d->is_global ? Py_True : Py_False, "device", d->is_device ? Py_True : Py_False, "bindable",
        d->unbindable ? Py_False : Py_True, "reason", d->unbindable);
error:
    Py_XDECREF(params);
    Py_XDECREF(ns);
    Py_XDECREF(tps);
    Py_XDECREF(ret);
    return r;
}

/* New reference: a param's Python name (bt_pyname), or None for a size
 * parameter. */
static PyObject *python_name(const BtDecl *d, int i)
{
    BtBuf b;

    if (!bt_pyname_takes(d, i))
        return Py_NewRef(Py_None);
    bt_buf_init(&b);
    bt_pyname_put(&b, d, i);
    return buf_str(&b);
}

/* New reference: the Python signature "(a, b, /, c=1.0)" with the defaults
 * pydefs (per C parameter, NULL for none) spelled by repr(), as
 * __text_signature__ has them (bt_dispatch). */
static PyObject *python_signature(const BtDecl *d, PyObject *const *pydefs)
{
    const char *defaults[BT_MAX_PARAMS] = {NULL};
    PyObject *reprs[BT_MAX_PARAMS] = {NULL}, *r = NULL;
    BtBuf b;
    int i, n = d->n_params < BT_MAX_PARAMS ? d->n_params : BT_MAX_PARAMS;

    for (i = 0; i < n; i++)
        if (pydefs[i] &&
            (!(reprs[i] = PyObject_Repr(pydefs[i])) || !(defaults[i] = PyUnicode_AsUTF8(reprs[i]))))
            goto done;
    bt_buf_init(&b);
    bt_pyname_signature(&b, d, defaults);
    r = buf_str(&b);
done:
    for (i = 0; i < n; i++)
        Py_XDECREF(reprs[i]);
    return r;
}

/* New reference: text that bt_plan writes about ov (put), or None when
 * ov is untemplated and `templated` asks for a template's. */
static PyObject *plan_text(const BtOverload *ov, void (*put)(BtBuf *, const BtOverload *),
                           int templated)
{
    BtBuf b;

    if (templated && !ov->decl->n_tparams)
        return Py_NewRef(Py_None);
    bt_buf_init(&b);
    put(&b, ov);
    return buf_str(&b);
}

/* The Python type of type ref t (a parameter's, or with ret its
 * return), where a handle or a `void *` makes it other than its scalar's
 * (py, the table's), for messages and stubs. */
static const char *python_type(const BtHeader *h, const BtTypeRef *t, const char *py, int ret)
{
    if (t->handle_ref && ret && t->handle_ref <= h->n_handles &&
        bt_handle_key_untyped(h->handles[t->handle_ref - 1].key))
        return "bindthem.Handle | None"; /* a `void *`'s NULL: None by default (bt_handle_bind.c) */
    if (t->handle_ref)
        return "bindthem.Handle";
    if (t->callback_ref && ret)
        return "bindthem.FunctionPointer | None"; /* NULL: None (bt_call.c) */
    return t->is_voidp && !ret ? "bindthem.Handle | None" : py;
}

/* A function pointer parameter's "python" in its dict pd: what stands for
 * it, "Callable[[float, int | None], float]" (bt_fntype_put_python). 0 or
 * -1; nothing for another type ref t. */
static int callback_python(PyObject *pd, const BtOverload *ov, const BtTypeRef *t)
{
    const BtCallbackType *cb = bt_fntype_of(ov, t);
    PyObject *text;
    BtBuf b;
    int rc;

    if (!cb)
        return 0;
    bt_buf_init(&b);
    bt_fntype_put_python(&b, ov, cb->sig);
    text = buf_str(&b);
    rc = text ? PyDict_SetItemString(pd, "python", text) : -1;
    Py_XDECREF(text);
    return rc;
}

/* New reference: overload ov's return as a dict: {"type", "dtype",
 * "python", "string", "enum"} and put_refs' keys. */
static PyObject *overload_return(const BtHeader *h, const BtOverload *ov)
{
    const BtTypeRef *t = &ov->decl->ret;
    const BtEnum *e = bt_plan_enum(ov, t);
    PyObject *r = Py_BuildValue(
        "{s:s,s:s,s:s,s:O,s:z}", "type", bt_type(ov->ret)->cname, "dtype", bt_type(ov->ret)->npname,
        "python", t->is_string ? "str | None" : python_type(h, t, bt_type_pyret(ov->ret), 1),
        "string", t->is_string ? Py_True : Py_False, "enum", e ? e->name : NULL);

    if (r && put_refs(r, h, t) < 0)
        Py_CLEAR(r);
    return r;
}

/* An annotated overload's "results" in its dict od: what a call returns,
 * in order, as [{"name": the parameter (None: the C return), "array",
 * "dtype", "python"}] (bt_note_returned's rule); nothing for another. 0 or
 * -1. */
static int note_results(PyObject *od, const BtOverload *ov)
{
    const BtNotePlan *pl = ov->notes;
    PyObject *list, *x = NULL;
    int i, rc = -1;

    if (!pl)
        return 0;
    if (!(list = PyList_New(0)))
        return -1;
    if (ov->ret != BT_VOID && !pl->n_ok) {
        x = Py_BuildValue("{s:O,s:O,s:s,s:s}", "name", Py_None, "array", Py_False, "dtype",
                          bt_type(ov->ret)->npname, "python",
                          ov->decl->ret.is_string
                              ? "str | None"
                              : python_type(ov->header, &ov->decl->ret, bt_type_pyret(ov->ret), 1));
        if (!x || PyList_Append(list, x) < 0)
            goto done;
        Py_CLEAR(x);
    }
    for (i = 0; i < pl->n_params; i++) {
        const BtType *t = bt_type(ov->ptypes[i]);
        int arr = pl->params[i].role == BT_ROLE_OUT || pl->params[i].role == BT_ROLE_ARRAY;
        if (!bt_note_returned(pl, i))
            continue;
        x = Py_BuildValue("{s:s,s:O,s:s,s:s}", "name", ov->decl->params[i].name, "array",
                          arr ? Py_True : Py_False, "dtype", t->npname, "python",
                          ov->decl->params[i].handle_ptr     ? "bindthem.Handle | None"
                          : ov->decl->params[i].string_ptr   ? "str | None"
                          : !arr && ov->ptypes[i] == BT_CHAR ? "str"
                                                             : bt_type_pyret(ov->ptypes[i]));
        if (!x || PyList_Append(list, x) < 0)
            goto done;
        Py_CLEAR(x);
    }
    rc = PyDict_SetItemString(od, "results", list);
done:
    Py_XDECREF(x);
    Py_DECREF(list);
    return rc;
}

/* New reference: parameter i of overload ov as a dict (overload_dict's
 * "params"); pydef: the value a call that leaves it out passes, or NULL. */
static PyObject *overload_param(const BtHeader *h, const BtOverload *ov, int i, PyObject *pydef)
{
    const BtDecl *d = ov->decl;
    const BtParam *p = &d->params[i];
    const BtType *t = bt_type(ov->ptypes[i]);
    const BtEnum *e = bt_plan_enum(ov, &p->t);
    PyObject *pyname = python_name(d, i), *pd;

    if (!pyname)
        return NULL;
    pd = Py_BuildValue("{s:s,s:N,s:s,s:s,s:s,s:O,s:O,s:O,s:z,s:z,s:O,s:O}", "name", p->name,
                       "python_name", pyname, "type", t->cname, "dtype", t->npname, "python",
                       p->t.is_string  ? (p->t.nullable ? "str | bytes | None" : "str | bytes")
                       : p->handle_ptr ? "bindthem.Handle | None"
                                       : python_type(h, &p->t, t->pyname, 0),
                       "const", p->t.is_const ? Py_True : Py_False, "array",
                       p->t.is_array ? Py_True : Py_False, "string",
                       p->t.is_string ? Py_True : Py_False, "enum", e ? e->name : NULL, "size_of",
                       p->size_of >= 0 ? d->params[p->size_of].name : NULL, "default",
                       pydef ? pydef : Py_None, "positional_only", p->unnamed ? Py_True : Py_False);
    if (pd &&
        (put_refs(pd, h, &p->t) < 0 || callback_python(pd, ov, &p->t) < 0 || put_shape(pd, p) < 0 ||
         (p->t.nullable && PyDict_SetItemString(pd, "nullable", Py_True) < 0)))
        Py_CLEAR(pd);
    return pd;
}

/* New reference: one concrete overload of header h as a dict (decl its
 * declaration's index); a parameter's "default" is the value a call that
 * leaves it out passes (bt_slot_defaults), or None. */
static PyObject *overload_dict(const BtHeader *h, const BtOverload *ov, int decl, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    PyObject *targs = NULL, *params = NULL, *pysig = NULL, *inst = NULL, *addr = NULL, *r = NULL;
    PyObject *ret = NULL;
    PyObject *pydefs[BT_MAX_PARAMS];
    const char *symbol;
    int i;

    symbol = bt_mangle_enums(d, ov->targs, ov->enums, arena);
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
        s = buf_str(&b);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(targs, i, s);
    }
    for (i = 0; i < d->n_params; i++) {
        PyObject *pd = overload_param(h, ov, i, i < BT_MAX_PARAMS ? pydefs[i] : NULL);
        if (!pd)
            goto error;
        PyList_SET_ITEM(params, i, pd);
    }
    pysig = d->n_params > BT_MAX_PARAMS ? Py_NewRef(Py_None) : python_signature(d, pydefs);
    inst = plan_text(ov, bt_plan_put_instantiation, 1);
    addr = plan_text(ov, bt_plan_put_address, 0);
    ret = overload_return(h, ov);
    if (!pysig || !inst || !addr || !ret)
        goto error;
    r = Py_BuildValue("{s:s,s:i,s:O,s:O,s:O,s:O,s:i,s:s,s:O,s:O,s:s,s:i,s:i}", "function", d->name,
                      "declaration", decl, "template_args", targs, "return", ret, "params", params,
                      "python_signature", pysig, "positional_only", bt_pyname_posonly(d),
                      "signature", ov->signature, "instantiation", inst, "name_expression", addr,
                      "symbol", symbol, "line", d->line, "yaml_line",
                      ov->inst ? ov->inst->line : 0);
    if (r && note_results(r, ov) < 0)
        Py_CLEAR(r);
error:
    Py_XDECREF(ret);
    Py_XDECREF(pysig);
    Py_XDECREF(inst);
    Py_XDECREF(addr);
    for (i = 0; i < d->n_params && i < BT_MAX_PARAMS; i++)
        Py_XDECREF(pydefs[i]);
    Py_XDECREF(targs);
    Py_XDECREF(params);
    return r;
}

PyObject *bt_meta_left_out(const BtDecl *d, const char *reason, int deliberate)
{
    return Py_BuildValue("{s:s,s:i,s:s,s:O,s:O}", "name", d->name, "line", d->line, "reason",
                         reason, "deliberate", deliberate ? Py_True : Py_False, "unreadable",
                         d->unreadable ? Py_True : Py_False);
}

/* Sets d["openmp"] ([{"line", "text"}] of the `#pragma omp` lines) and
 * d["includes"] ([{"name", "line"}] of the `#include "name"` lines) from
 * the lexer's directives. 0 or -1. */
static int put_directives(PyObject *d, const BtDirective *dirs, int n)
{
    PyObject *omp = PyList_New(0), *inc = PyList_New(0), *e = NULL;
    int i, rc = -1;

    if (!omp || !inc)
        goto done;
    for (i = 0; i < n; i++) {
        const BtDirective *x = &dirs[i];
        PyObject *text;
        if (x->kind == BT_DIR_DEFINE || x->kind == BT_DIR_PACK) /* constants, structs */
            continue;
        text = PyUnicode_DecodeUTF8(x->text, (Py_ssize_t)strlen(x->text), "replace");
        if (!text)
            goto done;
        if (x->kind == BT_DIR_OMP)
            e = Py_BuildValue("{s:i,s:N}", "line", x->line, "text", text);
        else
            e = Py_BuildValue("{s:N,s:i}", "name", text, "line", x->line);
        if (!e || PyList_Append(x->kind == BT_DIR_OMP ? omp : inc, e) < 0)
            goto done;
        Py_CLEAR(e);
    }
    rc = PyDict_SetItemString(d, "openmp", omp) < 0 || PyDict_SetItemString(d, "includes", inc) < 0
             ? -1
             : 0;
done:
    Py_XDECREF(e);
    Py_XDECREF(omp);
    Py_XDECREF(inc);
    return rc;
}

/* New reference: {"name", "type", "flags", "members": [[name, value]],
 * "line", "in_header"}. */
static PyObject *enum_dict(const BtEnum *e)
{
    PyObject *members = PyList_New(e->n_members), *r = NULL;
    int i;

    for (i = 0; members && i < e->n_members; i++) {
        PyObject *m = Py_BuildValue("[sL]", e->members[i].name, e->members[i].value);
        if (!m)
            Py_CLEAR(members);
        else
            PyList_SET_ITEM(members, i, m);
    }
    if (members)
        r = Py_BuildValue("{s:s,s:s,s:O,s:O,s:i,s:O}", "name", e->name, "type",
                          bt_type(e->type)->cname, "flags", e->is_flags ? Py_True : Py_False,
                          "members", members, "line", e->line, "in_header",
                          e->in_header ? Py_True : Py_False);
    Py_XDECREF(members);
    return r;
}

/* New reference: {"name", "value" (an int, or a str: the literal's bytes,
 * undecodable ones replaced), "line"}. */
static PyObject *const_dict(const BtConst *c)
{
    PyObject *v = c->is_string
                      ? PyUnicode_DecodeUTF8(c->text, (Py_ssize_t)strlen(c->text), "replace")
                      : PyLong_FromLongLong(c->value);

    return v ? Py_BuildValue("{s:s,s:N,s:i}", "name", c->name, "value", v, "line", c->line) : NULL;
}

/* Sets d["enums"] and d["constants"] from header h (empty when brief: a
 * build needs neither). 0 or -1. */
static int put_names(PyObject *d, const BtHeader *h, int brief)
{
    PyObject *enums = PyList_New(brief ? 0 : h->n_enums);
    PyObject *consts = PyList_New(brief ? 0 : h->n_consts), *x;
    int i, rc = -1;

    if (!enums || !consts)
        goto done;
    for (i = 0; i < PyList_GET_SIZE(enums); i++) {
        if (!(x = enum_dict(&h->enums[i])))
            goto done;
        PyList_SET_ITEM(enums, i, x);
    }
    for (i = 0; i < PyList_GET_SIZE(consts); i++) {
        if (!(x = const_dict(&h->consts[i])))
            goto done;
        PyList_SET_ITEM(consts, i, x);
    }
    rc = PyDict_SetItemString(d, "enums", enums) < 0 ||
                 PyDict_SetItemString(d, "constants", consts) < 0
             ? -1
             : 0;
done:
    Py_XDECREF(enums);
    Py_XDECREF(consts);
    return rc;
}

/* The name of struct ref (1 + index) of header h, or NULL. */
static const char *struct_name(const BtHeader *h, int ref)
{
    return ref > 0 && ref <= h->n_structs ? h->structs[ref - 1].name : NULL;
}

/* New reference: {"name", "type" (its C spelling; "void *" for a pointer,
 * the struct's name for a struct), "pointer", "struct", "enum" (names, or
 * None), "dims", "offset", "size"}. */
static PyObject *field_dict(const BtHeader *h, const BtField *f)
{
    PyObject *dims = PyList_New(f->n_dims);
    const char *sn = struct_name(h, f->struct_ref);
    int i;

    for (i = 0; dims && i < f->n_dims; i++) {
        PyObject *n = PyLong_FromLongLong(f->dims[i]);
        if (!n)
            Py_CLEAR(dims);
        else
            PyList_SET_ITEM(dims, i, n);
    }
    if (!dims)
        return NULL;
    return Py_BuildValue(
        "{s:s,s:s,s:O,s:z,s:z,s:N,s:n,s:n,s:O}", "name", f->name, "type",
        f->is_pointer ? "void *"
        : sn          ? sn
                      : bt_type(f->type)->cname,
        "pointer", f->is_pointer ? Py_True : Py_False, "struct", f->is_pointer ? NULL : sn, "enum",
        f->enum_ref > 0 && f->enum_ref <= h->n_enums ? h->enums[f->enum_ref - 1].name : NULL,
        "dims", dims, "offset", (Py_ssize_t)f->offset, "size", (Py_ssize_t)f->size, "bits",
        f->bits ? Py_True : Py_False);
}

/* New reference: {"name", "key", "union", "size", "align", "reason",
 * "line", "in_header", "fields", "bitfields"} ("bitfields": it holds some;
 * a field's "bits": the bytes of a run of them, named after them). */
static PyObject *struct_dict(const BtHeader *h, const BtStruct *st)
{
    PyObject *fields = PyList_New(st->n_fields);
    int i;

    for (i = 0; fields && i < st->n_fields; i++) {
        PyObject *f = field_dict(h, &st->fields[i]);
        if (!f)
            Py_CLEAR(fields);
        else
            PyList_SET_ITEM(fields, i, f);
    }
    if (!fields)
        return NULL;
    return Py_BuildValue("{s:s,s:s,s:O,s:n,s:n,s:z,s:i,s:O,s:N,s:O}", "name", st->name, "key",
                         st->key, "union", st->is_union ? Py_True : Py_False, "size",
                         (Py_ssize_t)st->size, "align", (Py_ssize_t)st->align, "reason", st->reason,
                         "line", st->line, "in_header", st->in_header ? Py_True : Py_False,
                         "fields", fields, "bitfields", st->bitfields ? Py_True : Py_False);
}

/* New reference: {"name", "return" (as a declaration's), "params" (as a
 * declaration's), "bindable", "reason"}: what a callback is called with. */
static PyObject *callback_dict(const BtHeader *h, const BtCallbackType *c)
{
    const BtDecl *sig = c->sig;
    PyObject *params = PyList_New(sig->n_params), *ret;
    int i;

    for (i = 0; params && i < sig->n_params; i++) {
        PyObject *p = param_dict(h, sig, &sig->params[i]);
        if (!p)
            Py_CLEAR(params);
        else
            PyList_SET_ITEM(params, i, p);
    }
    ret = params ? return_dict(h, sig) : NULL;
    if (!ret) {
        Py_XDECREF(params);
        return NULL;
    }
    return Py_BuildValue("{s:s,s:N,s:N,s:O,s:z}", "name", c->name, "return", ret, "params", params,
                         "bindable", sig->unbindable ? Py_False : Py_True, "reason",
                         sig->unbindable);
}

/* Sets d["handles"] ([{"name", "key", "line"}]), d["callbacks"] and
 * d["structs"] from header h (empty when brief). 0 or -1. */
static int put_types(PyObject *d, const BtHeader *h, int brief)
{
    PyObject *lists[3] = {NULL, NULL, NULL}, *x;
    static const char *const keys[3] = {"handles", "callbacks", "structs"};
    int n[3] = {h->n_handles, h->n_callbacks, h->n_structs}, i, k, rc = -1;

    for (k = 0; k < 3; k++) {
        if (!(lists[k] = PyList_New(brief ? 0 : n[k])))
            goto done;
        for (i = 0; i < PyList_GET_SIZE(lists[k]); i++) {
            if (k == 0)
                x = Py_BuildValue("{s:s,s:s,s:i}", "name", h->handles[i].name, "key",
                                  h->handles[i].key, "line", h->handles[i].line);
            else
                x = k == 1 ? callback_dict(h, &h->callbacks[i]) : struct_dict(h, &h->structs[i]);
            if (!x)
                goto done;
            PyList_SET_ITEM(lists[k], i, x);
        }
        if (PyDict_SetItemString(d, keys[k], lists[k]) < 0)
            goto done;
    }
    rc = 0;
done:
    for (k = 0; k < 3; k++)
        Py_XDECREF(lists[k]);
    return rc;
}

const char bt_meta_directives_doc[] =
    "header_directives(text, /)\n--\n\n"
    "The preprocessor facts of a header's text (bytes) as parse_header gives them\n"
    "for the header it reads: {'openmp': [{'line', 'text'}] (its `#pragma omp`\n"
    "lines), 'includes': [{'name', 'line'}] (its `#include \"name\"` lines)}. The\n"
    "lexer finds them, so a directive inside a comment or a string is none.";

PyObject *bt_meta_directives_py(PyObject *module, PyObject *text)
{
    BtArena arena;
    BtTokens toks;
    BtDiag diag;
    PyObject *r = NULL;
    char *buf;
    Py_ssize_t len;

    if (PyBytes_AsStringAndSize(text, &buf, &len) < 0)
        return NULL;
    bt_arena_init(&arena);
    bt_diag_init(&diag);
    if (bt_lex_all("<text>", buf, (size_t)len, &arena, &toks, &diag) < 0)
        bt_raise_diag(bt_state(module), &diag);
    else if ((r = PyDict_New()) && put_directives(r, toks.dirs, toks.n_dirs) < 0)
        Py_CLEAR(r);
    bt_arena_free(&arena);
    return r;
}

PyObject *bt_meta_names(const char *const *names)
{
    int n = 0;

    while (names[n])
        n++;
    return str_tuple(names, n);
}

/* New reference: a brief overload dict, what a build's units need: its
 * instantiation line and its template's length in lines (the work). */
static PyObject *overload_brief(const BtOverload *ov)
{
    PyObject *inst = plan_text(ov, bt_plan_put_instantiation, 1);

    return inst ? Py_BuildValue("{s:N,s:i}", "instantiation", inst, "lines",
                                ov->decl->last_line - ov->decl->first_line + 1)
                : NULL;
}

PyObject *bt_meta_to_py(const BtMeta *m, int brief)
{
    BtArena scratch;
    PyObject *decls = NULL, *funcs = NULL, *skipped = NULL, *missing = NULL, *r = NULL;
    int i, j;

    bt_arena_init(&scratch);
    decls = PyList_New(brief ? 0 : m->header.n_decls);
    funcs = PyList_New(m->plan.n_funcs);
    skipped = PyList_New(m->plan.n_skipped);
    missing = PyList_New(m->plan.n_missing);
    if (!decls || !funcs || !skipped || !missing)
        goto error;
    for (i = 0; i < (brief ? 0 : m->header.n_decls); i++) {
        PyObject *d = decl_dict(&m->header, &m->header.decls[i]);
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
            int decl = (int)(f->ovs[j].decl - m->header.decls);
            PyObject *o = brief ? overload_brief(&f->ovs[j])
                                : overload_dict(&m->header, &f->ovs[j], decl, &scratch);
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
    r = Py_BuildValue("{s:s,s:z,s:O,s:O,s:O,s:O,s:O}", "header", m->header.file, "instantiate",
                      m->has_table ? m->table.file : NULL, "preprocessed",
                      m->header.preprocessed ? Py_True : Py_False, "declarations", decls,
                      "functions", funcs, "skipped", skipped, "missing", missing);
    if (r && (put_directives(r, m->header.dirs, m->header.n_dirs) < 0 ||
              put_names(r, &m->header, brief) < 0 || put_types(r, &m->header, brief) < 0))
        Py_CLEAR(r);
error:
    Py_XDECREF(decls);
    Py_XDECREF(funcs);
    Py_XDECREF(skipped);
    Py_XDECREF(missing);
    bt_arena_free(&scratch);
    return r;
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

    BT_FT_ADD(&st->parses, 1);
    bt_diag_init(&diag);
    rc = bt_meta_load(m, PyBytes_AS_STRING(header),
                      instantiate == Py_None ? NULL : PyBytes_AS_STRING(instantiate), strict,
                      &diag);
    if (rc < 0)
        bt_raise_diag(st, &diag);
    return rc;
}
