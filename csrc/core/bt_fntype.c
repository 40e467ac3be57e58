/* bt_fntype.c - function pointer types: C spelling, what a Python callable can stand for. */
#include "bt_fntype.h"

#include <stdio.h>
#include <string.h>

const BtCallbackType *bt_fntype_of(const BtOverload *ov, const BtTypeRef *r)
{
    const BtHeader *h = ov->header;

    if (!r->callback_ref || !h || r->callback_ref > h->n_callbacks)
        return NULL;
    return &h->callbacks[r->callback_ref - 1];
}

BtTypeId bt_fntype_concrete(const BtOverload *ov, const BtTypeRef *r)
{
    BtTypeId id;

    if (r->tparam < 0)
        return r->type;
    if (!ov->targs || r->tparam >= ov->decl->n_tparams)
        return BT_VOID;
    id = ov->targs[r->tparam].type;
    if (r->is_complex_of_tparam)
        return bt_type_complex_of(id) >= 0 ? (BtTypeId)bt_type_complex_of(id) : BT_VOID;
    return id;
}

/* The enum type ref r names (NULL: none). bt_plan_enum's rule: this file
 * is below bt_plan, whose signatures spell function pointers with it. */
static const BtEnum *enum_of(const BtOverload *ov, const BtTypeRef *r)
{
    return r->enum_ref > 0 && ov->enums ? &ov->enums[r->enum_ref - 1] : NULL;
}

/* The table's spelling of id ("?" outside it, as bt_plan_cname). */
static const char *cname(BtTypeId id)
{
    const BtType *t = bt_type(id);

    return t ? t->cname : "?";
}

/* The scalar's name: an enum's (when it has one), else the table's. */
static const char *scalar_name(const BtOverload *ov, const BtTypeRef *r, BtTypeId id)
{
    const BtEnum *e = enum_of(ov, r);

    return e && e->name[0] ? e->name : cname(id);
}

/* Type ref r (concrete type id) with declarator name into b: "const double *x", "int n". */
static void put_ref(BtBuf *b, const BtOverload *ov, const BtTypeRef *r, BtTypeId id,
                    const char *name)
{
    const BtHeader *h = ov->header;
    const BtCallbackType *cb = bt_fntype_of(ov, r);
    const char *base;
    int ptr = 1, cst = r->is_const;

    if (cb) {
        bt_fntype_put(b, ov, cb->sig, name);
        return;
    }
    if (r->is_string) {
        base = "char";
        cst = 1;
    } else if (r->is_voidp) {
        base = "void";
    } else if (r->handle_ref && h && r->handle_ref <= h->n_handles) {
        base = h->handles[r->handle_ref - 1].key;
    } else if (r->struct_ref && h && r->struct_ref <= h->n_structs) {
        base = h->structs[r->struct_ref - 1].key;
        ptr = r->is_array;
    } else {
        base = scalar_name(ov, r, id);
        ptr = r->is_array;
    }
    bt_buf_puts(b, cst && ptr ? "const " : ""); /* a by-value const is no part of the type */
    bt_buf_puts(b, base);
    bt_buf_puts(b, ptr ? " *" : name[0] ? " " : "");
    bt_buf_puts(b, name);
}

/* "RET (*name)(P, ...)": the return type ret and parameters of d, whose
 * concrete types ids gives (ret: its return's). */
static void put_fn(BtBuf *b, const BtOverload *ov, const BtDecl *d, BtTypeId ret,
                   const BtTypeId *ptypes, const char *name)
{
    size_t at;
    int i;

    put_ref(b, ov, &d->ret, ret, "");
    at = b->len;
    bt_buf_puts(b, at && b->data[at - 1] == '*' ? "(*" : " (*");
    bt_buf_puts(b, name);
    bt_buf_puts(b, ")(");
    for (i = 0; i < d->n_params; i++) {
        const BtTypeRef *r = &d->params[i].t;
        bt_buf_puts(b, i ? ", " : "");
        put_ref(b, ov, r, ptypes ? ptypes[i] : bt_fntype_concrete(ov, r), "");
    }
    bt_buf_puts(b, d->n_params ? ")" : "void)");
}

void bt_fntype_put(BtBuf *b, const BtOverload *ov, const BtDecl *sig, const char *name)
{
    put_fn(b, ov, sig, bt_fntype_concrete(ov, &sig->ret), NULL, name);
}

void bt_fntype_put_overload(BtBuf *b, const BtOverload *ov)
{
    put_fn(b, ov, ov->decl, ov->ret, ov->ptypes, "");
}

/* ================= what a Python callable can stand for ================= */

/* Whether scalar type id is one a Python value converts to and from. */
static int python_scalar(BtTypeId id) { return id != BT_VOID && !bt_type_cuda_only(id); }

/* Why parameter i of sig (an array) is no NumPy view a Python callable
 * can take, into why; 0 when it is. */
static int array_refused(const BtOverload *ov, const BtDecl *sig, int i, BtBuf *why)
{
    const BtParam *p = &sig->params[i];
    BtTypeId id = bt_fntype_concrete(ov, &p->t);
    unsigned axes = 0;
    int j;

    if (!python_scalar(id) || bt_type(id)->npy_type < 0) {
        bt_buf_printf(why, "parameter '%s' is an array of %s, which has no NumPy dtype", p->name,
                      cname(id));
        return 1;
    }
    for (j = i + 1; j < sig->n_params && sig->params[j].size_of == i; j++)
        if (sig->params[j].size_axis < 32)
            axes |= 1u << sig->params[j].size_axis;
    if (axes == 0 || (axes & (axes + 1)) != 0) { /* axes 0..K, each with its size */
        bt_buf_printf(why, "parameter '%s' is a pointer without a size for each axis ('%s_size')",
                      p->name, p->name);
        return 1;
    }
    return 0;
}

/* Why type ref r (named `what`: "parameter 'x'", "the return value") is
 * none a Python callable takes (a parameter) or gives (ret), into why; 0
 * when it is. */
static int ref_refused(const BtOverload *ov, const BtTypeRef *r, const char *what, int ret,
                       BtBuf *why)
{
    const char *no = NULL;

    if (r->callback_ref)
        no = "a function pointer";
    else if (r->struct_ref)
        no = "a struct";
    else if (ret && r->is_string)
        no = "a C string, which a Python callable cannot keep alive for its caller";
    else if (ret && r->is_array)
        no = "a pointer";
    else if (!r->is_string && !r->is_voidp && !r->handle_ref && !r->is_array &&
             (!python_scalar(bt_fntype_concrete(ov, r)) ||
              bt_type_no_scalar(bt_fntype_concrete(ov, r))) &&
             !(ret && r->type == BT_VOID && r->tparam < 0))
        no = "of a type bindthem cannot convert";
    if (!no)
        return 0;
    bt_buf_printf(why, "%s is %s", what, no);
    return 1;
}

int bt_fntype_refused(const BtOverload *ov, const BtDecl *sig, BtBuf *why)
{
    int i;

    if (sig->unbindable) {
        bt_buf_puts(why, sig->unbindable);
        return 1;
    }
    if (ref_refused(ov, &sig->ret, "the return value", 1, why))
        return 1;
    for (i = 0; i < sig->n_params; i++) {
        const BtParam *p = &sig->params[i];
        char what[96];
        if (p->size_of >= 0)
            continue;
        if (p->t.is_array && !p->t.struct_ref) {
            if (array_refused(ov, sig, i, why))
                return 1;
            continue;
        }
        snprintf(what, sizeof what, "parameter '%.64s'", p->name);
        if (ref_refused(ov, &p->t, what, 0, why))
            return 1;
    }
    return 0;
}

/* The Python type of a value of type ref r, as a callable gets it (a
 * parameter) or gives it (a return). */
static void put_python(BtBuf *b, const BtOverload *ov, const BtTypeRef *r, int ret)
{
    BtTypeId id = bt_fntype_concrete(ov, r);

    if (r->is_string)
        bt_buf_puts(b, "str | None");
    else if (r->is_voidp)
        bt_buf_puts(b, "int | None");
    else if (r->handle_ref || enum_of(ov, r))
        bt_buf_puts(b, "int");
    else if (r->is_array)
        bt_buf_printf(b, "numpy.typing.NDArray[numpy.%s]", bt_type(id)->npname);
    else if (ret && id == BT_VOID)
        bt_buf_puts(b, "object"); /* the result of a void callback is ignored */
    else /* a parameter comes as a returned value does: a long double as a numpy.longdouble */
        bt_buf_puts(b, ret ? bt_type(id)->pyname : bt_type_pyret(id));
}

void bt_fntype_put_python(BtBuf *b, const BtOverload *ov, const BtDecl *sig)
{
    BtBuf why;
    int i, n = 0, refused;

    bt_buf_init(&why);
    refused = bt_fntype_refused(ov, sig, &why);
    bt_buf_free(&why);
    bt_buf_puts(b, "Callable[");
    if (refused) {
        bt_buf_puts(b, "..., ");
        if (sig->ret.is_string || sig->ret.is_array || sig->ret.struct_ref || sig->ret.callback_ref)
            bt_buf_puts(b, "object");
        else
            put_python(b, ov, &sig->ret, 1);
        bt_buf_putc(b, ']');
        return;
    }
    bt_buf_putc(b, '[');
    for (i = 0; i < sig->n_params; i++) {
        if (sig->params[i].size_of >= 0)
            continue;
        bt_buf_puts(b, n++ ? ", " : "");
        put_python(b, ov, &sig->params[i].t, 0);
    }
    bt_buf_puts(b, "], ");
    put_python(b, ov, &sig->ret, 1);
    bt_buf_putc(b, ']');
}
