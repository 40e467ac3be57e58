/* bt_callback.c - function pointer parameters: closures for Python callables, raw pointers. */
#include "bt_callback.h"

#include "bt_numpy.h"

#include "bt_callable.h"
#include "bt_fntype.h"
#include "bt_from_c.h"
#include "bt_handle_call.h"
#include "bt_note_call.h"

#include <stdatomic.h>
#include <string.h>

/* ================= the plan, at bind time ================= */

/* Parameter j of sig (concrete type t) as the handler passes it; an
 * array's size parameters found after it. atype: its libffi type. */
static int plan_param(BtCbParam *p, const BtDecl *sig, int j, BtTypeId t, ffi_type **atype,
                      BtArena *arena)
{
    const BtTypeRef *r = &sig->params[j].t;
    int k, *sizes;

    p->type = t;
    *atype = &ffi_type_pointer;
    if (sig->params[j].size_of >= 0) {
        p->how = BT_CB_SIZE;
        *atype = bt_type_ffi(t);
    } else if (r->is_string) {
        p->how = BT_CB_STRING;
    } else if (r->is_voidp) {
        p->how = BT_CB_VOIDP;
    } else if (r->handle_ref) {
        p->how = BT_CB_HANDLE;
    } else if (r->is_array) {
        p->how = BT_CB_ARRAY;
        p->is_const = (uint8_t)r->is_const;
        for (k = j + 1; k < sig->n_params && sig->params[k].size_of == j; k++)
            if (sig->params[k].size_axis + 1 > p->ndim)
                p->ndim = sig->params[k].size_axis + 1;
        if (!(sizes = bt_arena_array(arena, (size_t)p->ndim + 1, sizeof *sizes)))
            return -1;
        for (k = j + 1; k < sig->n_params && sig->params[k].size_of == j; k++)
            sizes[sig->params[k].size_axis] = k; /* each axis has one (bt_fntype_refused) */
        p->sizes = sizes;
    } else {
        p->how = BT_CB_SCALAR; /* an enum's t is its integer type */
        *atype = bt_type_ffi(t);
    }
    return 0;
}

/* The return of sig (concrete type t) into cb: how it is stored, its
 * libffi type, and a returned scalar as a slot (bt_slot_accepts). */
static ffi_type *plan_return(BtCallback *cb, const BtDecl *sig, BtTypeId t)
{
    const BtType *ty = bt_type(t);
    BtArgSlot *s = &cb->ret_slot;

    cb->ret.type = t;
    cb->ret.how = sig->ret.is_voidp     ? BT_CB_VOIDP
                  : sig->ret.handle_ref ? BT_CB_HANDLE
                                        : BT_CB_SCALAR;
    if (cb->ret.how != BT_CB_SCALAR) {
        cb->ret_bytes = sizeof(void *);
        return &ffi_type_pointer;
    }
    cb->ret_bytes = t == BT_VOID ? 0 : ty->size > sizeof(ffi_arg) ? ty->size : sizeof(ffi_arg);
    s->type = t;
    s->kind = ty->kind;
    s->size = (uint8_t)ty->size;
    s->min = ty->min;
    s->max = ty->max;
    s->array_code = bt_slot_array_code(t);
    return bt_type_ffi(t);
}

/* Callback parameter type sig of ov into cb: why no Python callable can
 * stand for it, or what a closure needs (its cif, how each parameter is
 * passed). Returns 0, or -1 with an exception set. */
static int plan(BtCallback *cb, const BtOverload *ov, const BtDecl *sig, BtArena *arena)
{
    ffi_type **atypes, *rtype;
    BtBuf why;
    int j, refused;

    bt_buf_init(&why);
    refused = bt_fntype_refused(ov, sig, &why);
    cb->refused = refused ? bt_arena_strdup(arena, bt_buf_str(&why)) : NULL;
    bt_buf_free(&why);
    if (refused && !cb->refused) {
        PyErr_NoMemory();
        return -1;
    }
    if (refused) /* a raw pointer only */
        return 0;
    cb->n_c = sig->n_params;
    cb->params = bt_arena_array(arena, (size_t)sig->n_params + 1, sizeof *cb->params);
    atypes = bt_arena_array(arena, (size_t)sig->n_params + 1, sizeof *atypes);
    if (!cb->params || !atypes) {
        PyErr_NoMemory();
        return -1;
    }
    for (j = 0; j < sig->n_params; j++) {
        BtTypeId t = bt_fntype_concrete(ov, &sig->params[j].t);
        if (plan_param(&cb->params[j], sig, j, t, &atypes[j], arena) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        cb->n_py += cb->params[j].how != BT_CB_SIZE;
    }
    rtype = plan_return(cb, sig, bt_fntype_concrete(ov, &sig->ret));
    if (ffi_prep_cif(&cb->cif, FFI_DEFAULT_ABI, (unsigned)sig->n_params, rtype, atypes) != FFI_OK)
        cb->refused = "libffi cannot prepare a closure of this type";
    return 0;
}

int bt_callback_prepare(BtState *st, BtCall *call, const BtOverload *ov, BtArena *arena)
{
    BtCallbacks *cbs;
    BtBuf b;
    int i, k = 0, n = 0;

    bt_buf_init(&b);
    bt_fntype_put_overload(&b, ov);
    call->fntype = b.failed ? NULL : bt_arena_strdup(arena, bt_buf_str(&b));
    bt_buf_free(&b);
    if (!call->fntype) {
        PyErr_NoMemory();
        return -1;
    }
    for (i = 0; i < call->n_py; i++)
        n += call->slots[i].kind == 'k';
    if (n == 0)
        return 0;
    cbs = bt_arena_alloc(arena, sizeof *cbs);
    if (!cbs || !(cbs->at = bt_arena_array(arena, (size_t)n, sizeof *cbs->at))) {
        PyErr_NoMemory();
        return -1;
    }
    cbs->st = st;
    cbs->n = n;
    for (i = 0; i < call->n_py; i++) {
        const BtArgSlot *s = &call->slots[i];
        BtCallback *cb = &cbs->at[k];
        if (s->kind != 'k')
            continue;
        memset(cb, 0, sizeof *cb);
        cb->slot = i;
        cb->fntype = s->fntype;
        if (plan(cb, ov, bt_fntype_of(ov, &ov->decl->params[s->cidx].t)->sig, arena) < 0)
            return -1;
        k++;
    }
    call->callbacks = cbs;
    return 0;
}

/* ================= a call's closures ================= */

typedef struct Frame Frame;

/* One callback argument made a closure. */
typedef struct Closure {
    const BtCallback *cb;
    PyObject *fn;      /* the callable (borrowed: the call's arguments hold it) */
    PyObject *name;    /* the parameter's name (borrowed) */
    const char *fname; /* the C function's, for messages */
    Frame *frame;
    ffi_closure *closure;
} Closure;

/* A call's closures and the first exception one of its callables raised. */
struct Frame {
    atomic_int failed; /* set once: later invocations return zero, calling nothing */
    PyObject *type, *value, *tb;
    int n;
    Closure c[BT_MAX_PARAMS];
};

/* The exception set, kept in fr when it is the call's first (else dropped). */
static void keep(Frame *fr)
{
    PyObject *type, *value, *tb;

    PyErr_Fetch(&type, &value, &tb);
    if (atomic_exchange_explicit(&fr->failed, 1, memory_order_acq_rel)) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value)
        PyException_SetTraceback(value, tb);
    fr->type = type;
    fr->value = value;
    fr->tb = tb;
}

/* A size parameter's value at p, of integer type t. */
static long long size_at(BtTypeId t, const void *p)
{
    const BtType *ty = bt_type(t);
    int shift = 64 - 8 * (int)ty->size;
    uint64_t u = 0;

    memcpy(&u, p, ty->size);
    return ty->kind == 'i' ? (int64_t)(u << shift) >> shift : (long long)u;
}

/* New reference: array parameter j of closure c (its pointer at
 * cargs[j]) as a NumPy view of that memory, shaped by its size
 * parameters; None for NULL. */
static PyObject *array_view(const Closure *c, int j, void **cargs)
{
    static long long empty; /* the data of an array with no elements and a NULL pointer */
    const BtCbParam *p = &c->cb->params[j];
    npy_intp dims[NPY_MAXDIMS], n = 1;
    void *data = *(void **)cargs[j];
    int k;

    if (p->ndim > NPY_MAXDIMS)
        return PyErr_Format(PyExc_ValueError, "%s(): the callback's array has %d axes", c->fname,
                            p->ndim);
    for (k = 0; k < p->ndim; k++) {
        int z = p->sizes[k];
        long long e = size_at(c->cb->params[z].type, cargs[z]);
        if (e < 0)
            return PyErr_Format(PyExc_ValueError,
                                "%s(): the C function passed the callback given for argument "
                                "'%U' an array with a negative size (%lld)",
                                c->fname, c->name, e);
        dims[k] = (npy_intp)e;
        n *= dims[k];
    }
    if (!data && n)
        Py_RETURN_NONE;
    return PyArray_New(&PyArray_Type, p->ndim, dims, bt_type(p->type)->npy_type, NULL,
                       data ? data : &empty, 0,
                       p->is_const ? NPY_ARRAY_CARRAY_RO : NPY_ARRAY_CARRAY, NULL);
}

/* New reference: C parameter j (its value at cargs[j]) as the callable is passed it. */
static PyObject *arg_value(const Closure *c, int j, void **cargs)
{
    const BtCbParam *p = &c->cb->params[j];
    void *ptr = p->how == BT_CB_SCALAR ? NULL : *(void **)cargs[j];
    BtValue v;

    switch (p->how) {
    case BT_CB_STRING: v.u64 = (uint64_t)(uintptr_t)ptr; return bt_call_value(BT_CHAR, 1, &v);
    case BT_CB_VOIDP:
        if (!ptr)
            Py_RETURN_NONE;
        return PyLong_FromVoidPtr(ptr);
    case BT_CB_HANDLE: return PyLong_FromVoidPtr(ptr);
    case BT_CB_ARRAY: return array_view(c, j, cargs);
    default: /* BT_CB_SCALAR */
        memset(&v, 0, sizeof v);
        memcpy(v.bytes, cargs[j], bt_type(p->type)->size);
        return bt_call_value(p->type, 0, &v);
    }
}

/* A pointer result r (None: NULL, or an int address) into *ret. 0 or -1. */
static int store_pointer(const Closure *c, PyObject *r, void *ret)
{
    void *p = NULL;

    if (r != Py_None) {
        if (!PyLong_Check(r)) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): the callback given for argument '%U' (%s) must return an int "
                         "address or None, not %.100s",
                         c->fname, c->name, c->cb->fntype, Py_TYPE(r)->tp_name);
            return -1;
        }
        if (!(p = PyLong_AsVoidPtr(r)) && PyErr_Occurred())
            return -1;
    }
    memcpy(ret, &p, sizeof p);
    return 0;
}

/* The callable's result r into *ret, as the C return type takes it: a
 * scalar as an argument is converted (an integer widened to an ffi_arg,
 * as libffi's closures return it), a pointer; a void callback's result is
 * ignored. 0, or -1 with an exception set (*ret left zero). */
static int store_result(const Closure *c, PyObject *r, void *ret)
{
    const BtCallback *cb = c->cb;
    const BtArgSlot *s = &cb->ret_slot;
    PyObject *what;
    BtValue v;
    char want[96];

    if (cb->ret.how != BT_CB_SCALAR)
        return store_pointer(c, r, ret);
    if (cb->ret.type == BT_VOID)
        return 0;
    if (!bt_slot_accepts(s, bt_slot_code(r), 2)) {
        if ((what = bt_slot_describe(r))) {
            PyErr_Format(PyExc_TypeError,
                         "%s(): the callback given for argument '%U' (%s) must return %s, not %U",
                         c->fname, c->name, cb->fntype, bt_slot_wants(s, want, sizeof want), what);
            Py_DECREF(what);
        }
        return -1;
    }
    memset(&v, 0, sizeof v);
    if (bt_slot_store_scalar(&v, s->type, r, c->fname, c->name) < 0) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_OverflowError,
                         "%s(): the callback given for argument '%U' (%s) returned %R, which "
                         "does not fit in %s",
                         c->fname, c->name, cb->fntype, r, bt_type(s->type)->cname);
        }
        return -1;
    }
    if (s->kind == 'f' || s->kind == 'c')
        memcpy(ret, v.bytes, s->size);
    else /* 'b', 'i', 'u': 64 bits, a signed value sign-extended (store_int) */
        memcpy(ret, &v.u64, sizeof(ffi_arg));
    return 0;
}

/* Closure c's callable called with the C arguments cargs, its result into
 * ret. 0, or -1 with an exception set. */
static int run(const Closure *c, void **cargs, void *ret)
{
    const BtCallback *cb = c->cb;
    PyObject *argv[BT_MAX_PARAMS], *r = NULL;
    int j, k = 0, rc = -1;

    argv[0] = NULL; /* a callable of no arguments is passed none */
    for (j = 0; j < cb->n_c; j++) {
        if (cb->params[j].how == BT_CB_SIZE)
            continue;
        if (!(argv[k] = arg_value(c, j, cargs)))
            goto done;
        k++;
    }
    r = PyObject_Vectorcall(c->fn, argv, (size_t)k, NULL);
    if (r)
        rc = store_result(c, r, ret);
done:
    Py_XDECREF(r);
    while (k > 0)
        Py_DECREF(argv[--k]);
    return rc;
}

/* libffi's handler of every closure: the GIL taken (the C function may
 * call from any thread, the call having released it), the callable run,
 * an exception kept. Once one is kept, the call's closures return zero
 * without taking the GIL. */
static void handler(ffi_cif *cif, void *ret, void **cargs, void *data)
{
    Closure *c = data;
    Frame *fr = c->frame;
    PyGILState_STATE g;

    (void)cif;
    memset(ret, 0, c->cb->ret_bytes);
    if (atomic_load_explicit(&fr->failed, memory_order_acquire))
        return;
    g = PyGILState_Ensure();
    if (!atomic_load_explicit(&fr->failed, memory_order_acquire) && run(c, cargs, ret) < 0)
        keep(fr);
    PyGILState_Release(g);
}

/* ================= a callback argument into an address ================= */

/* TypeError: argument o of callback cb is no callable (None included). -1. */
static int not_callable(const BtCallback *cb, PyObject *o, const char *fname, PyObject *name)
{
    if (o == Py_None)
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' needs a callable (%s), not None: the C function "
                     "calls it",
                     fname, name, cb->fntype);
    else
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' must be a callable or a C function pointer (%s), not "
                     "%.100s",
                     fname, name, cb->fntype, Py_TYPE(o)->tp_name);
    return -1;
}

/* A bindthem Function f as a raw pointer: its one overload's symbol, when
 * its C type is the parameter's. 0, or -1 with TypeError. */
static int function_pointer(const BtCallback *cb, PyObject *o, const char *fname, PyObject *name,
                            void **fn)
{
    const BtCallable *f = (const BtCallable *)o;
    int n = BT_FT_LOAD(&f->d.n_ovs);

    if (n != 1) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is the bindthem Function %s, which has %d overloads: "
                     "pass one with exactly one, of the parameter's type %s",
                     fname, name, f->d.cname, n, cb->fntype);
        return -1;
    }
    if (!f->calls[0].fntype || strcmp(f->calls[0].fntype, cb->fntype) != 0) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is the bindthem Function %s, of C type %s, but the "
                     "parameter's type is %s",
                     fname, name, f->d.cname, f->calls[0].fntype ? f->calls[0].fntype : "?",
                     cb->fntype);
        return -1;
    }
    *fn = (void *)f->calls[0].fn;
    return 0;
}

/* A closure for callable o (callback cb) in fr: its code's address into
 * *fn. 0, or -1 with an exception set. */
static int closure_for(Frame *fr, const BtCallback *cb, PyObject *o, const char *fname,
                       PyObject *name, void **fn)
{
    Closure *c = &fr->c[fr->n];

    if (cb->refused) {
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U': a Python callable cannot stand for %s (%s); pass a C "
                     "function pointer of that type (a ctypes CFUNCTYPE or cffi function "
                     "pointer, a numba.cfunc, a bindthem Function)",
                     fname, name, cb->fntype, cb->refused);
        return -1;
    }
    c->closure = ffi_closure_alloc(sizeof(ffi_closure), fn);
    if (!c->closure) {
        PyErr_NoMemory();
        return -1;
    }
    c->cb = cb;
    c->fn = o;
    c->name = name;
    c->fname = fname;
    c->frame = fr;
    fr->n++; /* freed after the call, whatever happens next */
    if (ffi_prep_closure_loc(c->closure, (ffi_cif *)&cb->cif, handler, c, *fn) != FFI_OK) {
        PyErr_Format(PyExc_SystemError, "%s(): libffi cannot make a closure of type %s", fname,
                     cb->fntype);
        return -1;
    }
    return 0;
}

/* Argument o of callback cb as the address the C function is passed: a
 * raw pointer, or a closure made in fr. 0, or -1 with an exception set. */
static int address_of(const BtCallbacks *cbs, const BtCallback *cb, PyObject *o, Frame *fr,
                      const char *fname, PyObject *name, void **fn)
{
    PyObject *addr;

    if (Py_IS_TYPE(o, cbs->st->FunctionType))
        return function_pointer(cb, o, fname, name, fn);
    if (PyFunction_Check(o) || PyMethod_Check(o) || PyCFunction_Check(o))
        return closure_for(fr, cb, o, fname, name, fn); /* the common ones, without a look-up */
    if (o == Py_None)
        return not_callable(cb, o, fname, name);
    {
        PyObject *argv[2] = {o, PyUnicode_FromString(cb->fntype)};
        if (!argv[1])
            return -1;
        addr = bt_from_c_call("callback_address", argv, 2);
        Py_DECREF(argv[1]);
        if (!addr)
            return -1;
    }
    if (PyUnicode_Check(addr)) { /* a bindthem.FunctionPointer of another type */
        PyErr_Format(PyExc_TypeError,
                     "%s(): argument '%U' is a function pointer of type %U, not the parameter's "
                     "%s",
                     fname, name, addr, cb->fntype);
        Py_DECREF(addr);
        return -1;
    }
    if (addr == Py_None || addr == Py_False) { /* False: a C pointer, but no function's */
        int callable = addr == Py_None && PyCallable_Check(o);
        Py_DECREF(addr);
        return callable ? closure_for(fr, cb, o, fname, name, fn)
                        : not_callable(cb, o, fname, name);
    }
    *fn = PyLong_Check(addr) ? PyLong_AsVoidPtr(addr) : NULL;
    Py_DECREF(addr);
    if (*fn)
        return 0;
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "%s(): argument '%U' is a null function pointer (%s)", fname,
                     name, cb->fntype);
    return -1;
}

/* After the call (r its result, or NULL): the closures freed, the held
 * addresses let go, and the exception a callable raised, if any, raised
 * instead of r. */
static PyObject *finish(Frame *fr, PyObject *r, PyObject **held, int n_held)
{
    int k;

    for (k = 0; k < fr->n; k++)
        ffi_closure_free(fr->c[k].closure);
    while (n_held > 0)
        Py_DECREF(held[--n_held]);
    if (!fr->value)
        return r;
    Py_XDECREF(r);
    PyErr_Restore(fr->type, fr->value, fr->tb);
    return NULL;
}

PyObject *bt_callback_invoke(const BtCall *call, PyObject *const *args, const char *fname,
                             PyObject *names, const BtCallOpts *opts)
{
    const BtCallbacks *cbs = call->callbacks;
    PyObject *argv[BT_MAX_PARAMS], *held[BT_MAX_PARAMS], *r = NULL;
    BtCallOpts o = *opts;
    Frame fr;
    int k, n_held = 0;

    atomic_init(&fr.failed, 0);
    fr.type = fr.value = fr.tb = NULL;
    fr.n = 0;
    memcpy(argv, args, sizeof *argv * (size_t)call->n_py);
    for (k = 0; k < cbs->n; k++) {
        const BtCallback *cb = &cbs->at[k];
        void *fn;
        if (address_of(cbs, cb, args[cb->slot], &fr, fname, PyTuple_GET_ITEM(names, cb->slot),
                       &fn) < 0 ||
            !(held[n_held] = PyLong_FromVoidPtr(fn)))
            return finish(&fr, NULL, held, n_held);
        argv[cb->slot] = held[n_held++];
    }
    if (fr.n && o.gil == BT_GIL_AUTO)
        o.gil = BT_GIL_RELEASE; /* the C function may call from threads of its own */
    r = call->notes     ? bt_note_invoke(call, argv, fname, names, &o)
        : call->handles ? bt_handle_invoke(call, argv, fname, names, &o)
                        : bt_call_invoke(call, argv, fname, names, &o);
    return finish(&fr, r, held, n_held);
}
