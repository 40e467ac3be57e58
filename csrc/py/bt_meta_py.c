/* bt_meta_py.c - metadata to plain Python objects. The one place where
 * declarations become dicts; the stub emitter and the CLI read only what
 * this file produces. */
#include "bt_meta_py.h"

#include <string.h>

#include "bt_diag_py.h"
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

/* New reference: one concrete overload as a dict (decl its declaration's
 * index); a parameter's "default" is the value a call that leaves it out
 * passes (bt_slot_defaults), or None. */
static PyObject *overload_dict(const BtOverload *ov, int decl, BtArena *arena)
{
    const BtDecl *d = ov->decl;
    PyObject *targs = NULL, *params = NULL, *pysig = NULL, *inst = NULL, *addr = NULL, *r = NULL;
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
        s = buf_str(&b);
        if (!s)
            goto error;
        PyTuple_SET_ITEM(targs, i, s);
    }
    for (i = 0; i < d->n_params; i++) {
        const BtParam *p = &d->params[i];
        const BtType *t = bt_type(ov->ptypes[i]);
        PyObject *pyname = python_name(d, i), *pd;
        if (!pyname)
            goto error;
        pd = Py_BuildValue("{s:s,s:N,s:s,s:s,s:s,s:O,s:O,s:z,s:O,s:O}", "name", p->name,
                           "python_name", pyname, "type", t->cname, "dtype", t->npname, "python",
                           t->pyname, "const", p->t.is_const ? Py_True : Py_False, "array",
                           p->t.is_array ? Py_True : Py_False, "size_of",
                           p->size_of >= 0 ? d->params[p->size_of].name : NULL, "default",
                           i < BT_MAX_PARAMS && pydefs[i] ? pydefs[i] : Py_None, "positional_only",
                           p->unnamed ? Py_True : Py_False);
        if (!pd)
            goto error;
        PyList_SET_ITEM(params, i, pd);
    }
    pysig = d->n_params > BT_MAX_PARAMS ? Py_NewRef(Py_None) : python_signature(d, pydefs);
    inst = plan_text(ov, bt_plan_put_instantiation, 1);
    addr = plan_text(ov, bt_plan_put_address, 0);
    if (!pysig || !inst || !addr)
        goto error;
    r = Py_BuildValue("{s:s,s:i,s:O,s:{s:s,s:s,s:s},s:O,s:O,s:i,s:s,s:O,s:O,s:s,s:i,s:i}",
                      "function", d->name, "declaration", decl, "template_args", targs, "return",
                      "type", bt_type(ov->ret)->cname, "dtype", bt_type(ov->ret)->npname, "python",
                      bt_type(ov->ret)->pyname, "params", params, "python_signature", pysig,
                      "positional_only", bt_pyname_posonly(d), "signature", ov->signature,
                      "instantiation", inst, "name_expression", addr, "symbol", symbol, "line",
                      d->line, "yaml_line", ov->inst ? ov->inst->line : 0);
error:
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
    return Py_BuildValue("{s:s,s:i,s:s,s:O}", "name", d->name, "line", d->line, "reason", reason,
                         "deliberate", deliberate ? Py_True : Py_False);
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
        PyObject *text = PyUnicode_DecodeUTF8(x->text, (Py_ssize_t)strlen(x->text), "replace");
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
            int decl = (int)(f->ovs[j].decl - m->header.decls);
            PyObject *o = brief ? overload_brief(&f->ovs[j])
                                : overload_dict(&f->ovs[j], decl, &scratch);
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
    if (r && put_directives(r, m->header.dirs, m->header.n_dirs) < 0)
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
