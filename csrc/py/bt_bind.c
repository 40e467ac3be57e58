/* bt_bind.c - the binder: mangle, resolve, explain, check, prepare, once for every back end. */
#include "bt_bind.h"

#include <stdio.h>
#include <string.h>

#include "bt_mangle.h"
#include "bt_meta_py.h"
#include "bt_record.h"
#include "bt_sym.h"

/* The near misses of q ("ns::f") among names: those whose function name
 * (template arguments aside) is closest in spelling, within bt_plan_near. Joined by sep into *near; with
 * all (not NULL), every name too, joined by ", ". Returns the distance of
 * the near misses, or -1 when there are none. */
static int near_misses(const char **names, int n, const char *q, const char *sep, BtBuf *near,
                       BtBuf *all, BtArena *a)
{
    const char *plain_q = strrchr(q, ':');
    const char **heads = bt_arena_array(a, (size_t)n + 1, sizeof *heads);
    int *dist = bt_arena_array(a, (size_t)n + 1, sizeof *dist);
    int i, best = -1;

    if (!heads || !dist)
        return -1;
    plain_q = plain_q ? plain_q + 1 : q; /* what an extern "C" symbol spells */
    for (i = 0; i < n; i++) {
        const char *dem = bt_sym_demangle(names[i], a);
        const char *start = names[i];
        char base[256];
        heads[i] = dem ? bt_sym_cut_name(dem, &start, a) : names[i];
        if (all)
            bt_buf_printf(all, "%s%s", i ? ", " : "", start);
        dist[i] = -1;
        if (!heads[i])
            continue;
        snprintf(base, sizeof base, "%.*s", (int)strcspn(heads[i], "<"), heads[i]);
        dist[i] = bt_plan_distance(base, dem ? q : plain_q);
        if (!bt_plan_near(strlen(base), strlen(dem ? q : plain_q), dist[i]))
            dist[i] = -1;
        else if (best < 0 || dist[i] < best)
            best = dist[i];
    }
    for (i = 0; best >= 0 && i < n; i++)
        if (dist[i] == best)
            bt_buf_printf(near, "%s%s", near->len ? sep : "", heads[i]);
    return best;
}

/* SymbolError for a listed overload the binary lacks. Returns NULL. */
static PyObject *missing_symbol(BtState *st, const BtBackend *be, void *ctx, const BtOverload *ov,
                                const char *sym, PyObject *file, const char *header)
{
    const BtDecl *d = ov->decl;
    const char **names = NULL;
    BtBuf inst, q, tail, why, near, all;
    BtArena a;
    int n = 0, best = -1, listed = -1;

    bt_arena_init(&a);
    bt_buf_init(&inst);
    bt_buf_init(&q);
    bt_buf_init(&tail);
    bt_buf_init(&why);
    bt_buf_init(&near);
    bt_buf_init(&all);
    bt_plan_put_name(&inst, d, ov->targs);
    bt_plan_put_name(&q, d, NULL);
    if (be->linkage_hides && (d->is_inline || d->is_static)) {
        const char *how = d->is_inline ? "inline" : "static";
        PyErr_Format(st->SymbolError,
                     "%s: %s is declared %s at %s:%d, so %U does not export it (symbol %s); "
                     "drop `%s` from the declaration, or use bindthem.build(), which compiles "
                     "the header's functions into a library of its own",
                     d->name, bt_buf_str(&inst), how, header, d->line, file, sym, how);
        goto done;
    }
    if (be->names)
        listed = be->names(ctx, &a, &names, &n, &why);
    if (listed == 0)
        best = near_misses(names, n, bt_buf_str(&q), be->lists_all ? " or " : ", ", &near,
                           be->lists_all ? &all : NULL, &a);
    if (be->lists_all) {
        if (listed < 0)
            bt_buf_printf(&tail, " (%s)", bt_buf_str(&why));
        else if (n == 0)
            bt_buf_printf(&tail, "; the %s has no %s", be->container, be->things);
        else
            bt_buf_printf(&tail, "; the %s has %s", be->container, bt_buf_str(&all));
    } else if (best == 0) {
        bt_buf_printf(&tail, "; it has %s only", bt_buf_str(&near));
    } else {
        bt_buf_puts(&tail, "; it has no function of that name");
    }
    if (best > 0 || (best == 0 && be->lists_all))
        bt_buf_printf(&tail, "; did you mean %s? ", bt_buf_str(&near));
    else
        bt_buf_puts(&tail, ". ");
    if (d->n_tparams) {
        bt_buf_puts(&tail, "Compile an explicit instantiation `");
        bt_plan_put_instantiation(&tail, ov);
        bt_buf_putc(&tail, '`');
    } else
        bt_buf_printf(&tail, "Compile %s's definition", bt_buf_str(&inst));
    bt_buf_printf(&tail, " into the %s, or %s", be->container, be->remedy);
    if (inst.failed || q.failed || tail.failed || all.failed || near.failed)
        PyErr_NoMemory();
    else
        PyErr_Format(st->SymbolError, "%s: %s%s (symbol %s) is not in %U%s", d->name, be->noun,
                     bt_buf_str(&inst), sym, file, bt_buf_str(&tail));
done:
    bt_buf_free(&inst);
    bt_buf_free(&q);
    bt_buf_free(&tail);
    bt_buf_free(&why);
    bt_buf_free(&near);
    bt_buf_free(&all);
    bt_arena_free(&a);
    return NULL;
}

/* The header's layout of overload ov (parameters at their natural
 * alignment, arrays as pointers) against the binary's. 0 when they agree
 * or the back end can't tell; -1 with BindError. */
static int check_layout(BtState *st, const BtBackend *be, void *ctx, void *addr,
                        const BtOverload *ov, const char *sym, PyObject *file)
{
    const BtDecl *d = ov->decl;
    size_t off = 0, koff, ksize;
    int i, rc;

    for (i = 0; i <= d->n_params; i++) {
        size_t size = 0, align = 1;
        if (i < d->n_params) {
            const BtType *t = bt_type(ov->ptypes[i]);
            int ptr = d->params[i].t.is_array || d->params[i].t.is_string;
            size = ptr ? sizeof(void *) : t->size;
            align = ptr ? sizeof(void *) : t->align;
            off = (off + align - 1) / align * align;
        }
        rc = be->param(ctx, addr, i, &koff, &ksize);
        if (rc < 0)
            return -1;
        if (rc == 2)
            return 0;
        if (i == d->n_params) {
            if (rc == 0) {
                PyErr_Format(st->BindError,
                             "%s: the %s's %s%s (in %U) takes more than the %d "
                             "parameters the header declares for %s",
                             d->name, be->container, be->noun, sym, file, d->n_params,
                             ov->signature);
                return -1;
            }
            return 0;
        }
        if (rc == 1) {
            PyErr_Format(st->BindError,
                         "%s: the %s's %s%s (in %U) takes %d parameter%s, but the "
                         "header declares %d: %s (parameter '%s' has no counterpart)",
                         d->name, be->container, be->noun, sym, file, i, i == 1 ? "" : "s",
                         d->n_params, ov->signature, d->params[i].name);
            return -1;
        }
        if (koff != off || ksize != size) {
            PyErr_Format(st->BindError,
                         "%s: parameter %d '%s' of %s is %zu bytes at offset %zu by the "
                         "header, but %zu bytes at offset %zu in the %s's %s%s (in "
                         "%U); the header does not match the compiled %s",
                         d->name, i + 1, d->params[i].name, ov->signature, size, off, ksize, koff,
                         be->container, be->noun, sym, file, be->noun[0] ? "kernel" : "function");
            return -1;
        }
        off += size;
    }
    return 0;
}

static int append_str(PyObject *list, const char *s)
{
    PyObject *o = PyUnicode_FromString(s);
    int rc = o ? PyList_Append(list, o) : -1;

    Py_XDECREF(o);
    return rc;
}

void bt_bound_clear(BtBound *b)
{
    Py_CLEAR(b->funcs);
    Py_CLEAR(b->unexported);
    Py_CLEAR(b->skipped);
    Py_CLEAR(b->left_out);
}

/* Appends declaration d to out->left_out, for `reason`. */
static int left_out(BtBound *out, const BtDecl *d, const char *reason, int deliberate)
{
    PyObject *o = bt_meta_left_out(d, reason, deliberate);
    int rc = o ? PyList_Append(out->left_out, o) : -1;

    Py_XDECREF(o);
    return rc;
}

/* The address of overload ov of f, by its symbol *sym or, for a C library
 * (be->resolve_c), by its plain C name, then in *sym (from keep). NULL with
 * *missing = 1 when the binary has neither (why in *why, from scratch),
 * NULL with *missing = 0 and an exception set on error. */
static void *resolve(const BtBackend *be, void *ctx, const BtFunc *f, const BtOverload *ov,
                     const char **sym, int *missing, const char **why, PyObject *file,
                     BtArena *keep, BtArena *scratch)
{
    const BtDecl *d = ov->decl;
    void *addr = be->resolve(ctx, *sym, missing);
    int c_name = be->resolve_c && !d->extern_c && !d->n_tparams && !d->n_ns && f->n_ovs == 1;
    const char *fname;

    if (addr || !*missing)
        return addr;
    if (c_name) {
        addr = be->resolve_c(ctx, d->name, missing);
        if (addr) {
            *sym = bt_arena_strdup(keep, d->name);
            if (!*sym) {
                *missing = 0;
                PyErr_NoMemory();
                return NULL;
            }
            return addr;
        }
        if (!*missing)
            return NULL;
    }
    fname = PyUnicode_AsUTF8(file);
    if (!fname) {
        PyErr_Clear();
        fname = "the library";
    }
    *why = c_name ? bt_arena_printf(scratch,
                                    "not in %s: it exports neither the C++ symbol %s nor "
                                    "the C name %s",
                                    fname, *sym, d->name)
                  : bt_arena_printf(scratch, "not in %s (symbol %s)", fname, *sym);
    if (!*why) {
        *missing = 0;
        PyErr_NoMemory();
    }
    return NULL;
}

/* One walk (bt_bind_plan): what it reads, what it makes, its arenas. */
typedef struct Binder {
    BtState *st;
    const BtMeta *meta;
    const BtBackend *be;
    void *ctx;
    PyObject *file;
    BtBound *out;
    BtArena arena;   /* the next object's: its calls and addresses */
    BtArena scratch; /* this walk's: the overload copies handed to make */
} Binder;

/* The plan's skipped declarations into out->left_out, with the back end's
 * reason where it refuses one too. */
static int left_out_skipped(Binder *b)
{
    int i;

    for (i = 0; i < b->meta->plan.n_skipped; i++) {
        const BtSkipped *s = &b->meta->plan.skipped[i];
        int deliberate = 0;
        const char *refused = b->be->refuse ? b->be->refuse(s->decl, NULL, &deliberate) : NULL;
        if (left_out(b->out, s->decl, refused ? refused : s->reason, deliberate || s->deliberate) <
            0)
            return -1;
    }
    return 0;
}

/* Overload ov, which the back end refuses for `refused`: a BindError when
 * instantiate.yml lists it, else recorded in skipped and left_out (0). */
static int refused_overload(Binder *b, const BtOverload *ov, const char *refused, int deliberate)
{
    if (ov->inst) {
        PyErr_Format(b->st->BindError, "instantiate.yml lists '%s' (%s:%d), which is %s",
                     ov->decl->name, b->meta->header.file, ov->decl->line, refused);
        return -1;
    }
    if (append_str(b->out->skipped, ov->signature) < 0 ||
        left_out(b->out, ov->decl, refused, deliberate) < 0)
        return -1;
    return 0;
}

/* Overload ov, whose symbol sym the binary lacks (why: the reason):
 * SymbolError when instantiate.yml lists it, else recorded in unexported
 * and left_out (0). */
static int missing_overload(Binder *b, const BtOverload *ov, const char *sym, const char *why)
{
    if (ov->inst) {
        missing_symbol(b->st, b->be, b->ctx, ov, sym, b->file, b->meta->header.file);
        return -1;
    }
    if (append_str(b->out->unexported, ov->signature) < 0 || left_out(b->out, ov->decl, why, 0) < 0)
        return -1;
    return 0;
}

/* Why a back end without host_strings refuses declaration d: its C string
 * parameter or return (a noun phrase, as a refuse gives), or NULL when it
 * has none. */
static const char *string_refused(Binder *b, const BtDecl *d)
{
    const char *r;
    int i;

    if (d->ret.is_string)
        return "a function that returns a C string (const char *), which a kernel cannot return";
    for (i = 0; i < d->n_params && !d->params[i].t.is_string; i++)
        ;
    if (i == d->n_params)
        return NULL;
    r = bt_arena_printf(&b->scratch,
                        "a function whose parameter '%s' is a C string (const char *): a kernel "
                        "cannot read a str's or bytes' host memory; pass the characters as an "
                        "array (a '%s_size' parameter after it)",
                        d->params[i].name, d->params[i].name);
    return r ? r : "a function with a C string (const char *) parameter";
}

/* Why a back end without host_strings refuses declaration d: a handle or
 * `void *` parameter, or a handle returned (a host pointer, which a kernel
 * cannot use), or NULL when it has none. */
static const char *handle_refused(Binder *b, const BtDecl *d)
{
    const char *r;
    int i;

    if (d->ret.handle_ref)
        return "a function that returns a handle (a host pointer), which a kernel cannot return";
    for (i = 0; i < d->n_params && !d->params[i].t.handle_ref && !d->params[i].t.is_voidp; i++)
        ;
    if (i == d->n_params)
        return NULL;
    r = bt_arena_printf(&b->scratch,
                        "a function whose parameter '%s' is %s: a kernel cannot use a host "
                        "pointer",
                        d->params[i].name, d->params[i].t.is_voidp ? "a void *" : "a handle");
    return r ? r : "a function with a handle or void * parameter";
}

/* Why a back end without host_strings refuses declaration d: a function
 * pointer parameter (a callback, which bt_callback.h calls on the host),
 * or NULL when it has none. */
static const char *callback_refused(Binder *b, const BtDecl *d)
{
    const char *r;
    int i;

    for (i = 0; i < d->n_params && !d->params[i].t.callback_ref; i++)
        ;
    if (i == d->n_params)
        return NULL;
    r = bt_arena_printf(&b->scratch,
                        "a function whose parameter '%s' is a function pointer: a kernel cannot "
                        "call back into the host",
                        d->params[i].name);
    return r ? r : "a function with a function pointer parameter";
}

/* Why no back end binds overload ov: a parameter or return passed by
 * value that a call's 16-byte value cannot hold (bt_type_no_scalar), or
 * NULL. */
static const char *scalar_refused(Binder *b, const BtOverload *ov)
{
    const BtDecl *d = ov->decl;
    const char *why = NULL, *r;
    int i;

    if (!d->ret.is_string && !d->ret.handle_ref && (why = bt_type_no_scalar(ov->ret)))
        return bt_arena_printf(&b->scratch, "a function that returns %s", why);
    for (i = 0; i < d->n_params; i++) {
        const BtTypeRef *t = &d->params[i].t;
        if (!t->is_array && !t->is_string && !t->handle_ref && !t->struct_ref &&
            !d->params[i].is_ref && !t->callback_ref && (why = bt_type_no_scalar(ov->ptypes[i])))
            break;
    }
    if (!why)
        return NULL;
    r = bt_arena_printf(&b->scratch, "a function whose parameter '%s' is %s", d->params[i].name,
                        why);
    return r ? r : why;
}

/* Overload ov of f through steps 1-5 (bt_bind.h): 1 with *call prepared
 * and *addr its address; 0 when it is left out (recorded); -1 with an
 * exception set. A listed overload must bind; an unlisted one (planned as
 * untemplated, or no instantiate.yml) binds if it can. */
static int bind_overload(Binder *b, const BtFunc *f, const BtOverload *ov, BtCall *call,
                         void **addr)
{
    const BtBackend *be = b->be;
    int missing = 0, deliberate = 0;
    const char *refused = be->refuse ? be->refuse(ov->decl, ov, &deliberate) : NULL;
    const char *sym, *why = NULL;

    if (!refused && !be->host_strings && (refused = string_refused(b, ov->decl)))
        deliberate = 0; /* a shortfall, as the CPU's CUDA-only types are */
    if (!refused && !be->host_strings && (refused = handle_refused(b, ov->decl)))
        deliberate = 0; /* as a C string */
    if (!refused && (refused = bt_record_refused(ov, be->host_strings, &b->scratch)))
        deliberate = 0; /* a struct libffi cannot pass, or a kernel's */
    if (!refused && !be->host_strings && (refused = callback_refused(b, ov->decl)))
        deliberate = 0; /* as a C string */
    if (!refused && (refused = scalar_refused(b, ov)))
        deliberate = 0;
    if (refused)
        return refused_overload(b, ov, refused, deliberate);
    sym = bt_mangle_enums(ov->decl, ov->targs, ov->enums, &b->arena);
    if (!sym) {
        PyErr_Format(PyExc_MemoryError, "out of memory mangling %s", ov->signature);
        return -1;
    }
    *addr = resolve(be, b->ctx, f, ov, &sym, &missing, &why, b->file, &b->arena, &b->scratch);
    if (!*addr)
        return missing ? missing_overload(b, ov, sym, why) : -1;
    if (be->param && check_layout(b->st, be, b->ctx, *addr, ov, sym, b->file) < 0)
        return -1;
    if (bt_call_prepare(b->st, call, ov, sym, &b->arena) < 0 ||
        (be->prepare && be->prepare(b->st, call, ov, *addr, &b->arena) < 0))
        return -1;
    return 1;
}

/* Python name f: its overloads bound, then the back end's one object for
 * those that bound into out->funcs (none bound: no entry). The object
 * takes b->arena over; the next one starts a fresh arena. */
static int bind_func(Binder *b, const BtFunc *f)
{
    BtFunc kept = *f;
    BtCall *calls = bt_arena_array(&b->arena, (size_t)f->n_ovs, sizeof(BtCall));
    void **addrs = bt_arena_array(&b->arena, (size_t)f->n_ovs, sizeof(void *));
    BtOverload *ovs = bt_arena_array(&b->scratch, (size_t)f->n_ovs, sizeof(BtOverload));
    PyObject *obj;
    int j, r, n = 0;

    if (!calls || !addrs || !ovs) {
        PyErr_NoMemory();
        return -1;
    }
    for (j = 0; j < f->n_ovs; j++) {
        r = bind_overload(b, f, &f->ovs[j], &calls[n], &addrs[n]);
        if (r < 0)
            return -1;
        if (r > 0)
            ovs[n++] = f->ovs[j];
    }
    if (n == 0)
        return 0;
    kept.ovs = ovs;
    kept.n_ovs = n;
    obj = b->be->make(b->ctx, &kept, calls, addrs, &b->arena);
    bt_arena_init(&b->arena); /* make took it over */
    if (!obj)
        return -1;
    r = PyDict_SetItemString(b->out->funcs, f->name, obj);
    Py_DECREF(obj);
    return r;
}

int bt_bind_plan(BtState *st, const BtMeta *meta, const BtBackend *be, void *ctx, PyObject *file,
                 BtBound *out)
{
    Binder b = {st, meta, be, ctx, file, out};
    int i, rc = -1;

    bt_arena_init(&b.arena);
    bt_arena_init(&b.scratch);
    out->funcs = PyDict_New();
    out->unexported = PyList_New(0);
    out->skipped = PyList_New(0);
    out->left_out = PyList_New(0);
    if (!out->funcs || !out->unexported || !out->skipped || !out->left_out ||
        left_out_skipped(&b) < 0)
        goto done;
    for (i = 0; i < meta->plan.n_funcs; i++)
        if (bind_func(&b, &meta->plan.funcs[i]) < 0)
            goto done;
    rc = 0;
done:
    bt_arena_free(&b.arena);
    bt_arena_free(&b.scratch);
    if (rc < 0)
        bt_bound_clear(out);
    return rc;
}
