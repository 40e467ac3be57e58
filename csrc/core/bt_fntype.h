/* bt_fntype.h - function pointer types: how C spells one, whether a Python
 * callable can stand for it, and the Python type that stands for it.
 *
 * Pure C. A callback parameter (BtTypeRef.callback_ref) names a
 * BtCallbackType of its overload's header, whose signature is a BtDecl.
 * Its C spelling ("double (*)(double, void *)") is what messages show and
 * what a bound function passed as a raw pointer must match (a Function's
 * own type is spelled by the same rule: bt_fntype_put_overload); whether a
 * Python callable can stand for it, and with which Python types, is one
 * rule here that the call path (bt_callback.c), the metadata and the
 * stubs read. Below bt_plan, whose signatures spell a callback parameter
 * with it ("int apply_n(int (*f)(int), int n)"). */
#ifndef BT_FNTYPE_H
#define BT_FNTYPE_H

#include "bt_plan.h" /* BtOverload: its types only */

/* The function pointer type of type ref r of ov (NULL: r is none). */
BT_HIDDEN const BtCallbackType *bt_fntype_of(const BtOverload *ov, const BtTypeRef *r);

/* The concrete type of type ref r of signature sig of one of ov's callback
 * types: its own, or ov's template argument (BT_VOID where it has none). */
BT_HIDDEN BtTypeId bt_fntype_concrete(const BtOverload *ov, const BtTypeRef *r);

/* "double (*name)(double, void *)" into b: signature sig (a callback type
 * of ov's header) as a pointer declarator, name "" for the abstract
 * "double (*)(double, void *)". Types as C spells them: scalars by the
 * type table (an enum by its name), `const char *`, `void *`, a handle's or
 * a struct's key with its `*`, a nested function pointer; a by-value const
 * is left out (it is no part of the type). */
BT_HIDDEN void bt_fntype_put(BtBuf *b, const BtOverload *ov, const BtDecl *sig, const char *name);

/* The same for overload ov itself, with its concrete types: the type of a
 * pointer to it ("void (*)(const double *, int)"). */
BT_HIDDEN void bt_fntype_put_overload(BtBuf *b, const BtOverload *ov);

/* Whether a Python callable can stand for sig: 0, or 1 with why not into
 * why ("parameter 'p' is a struct (struct point)"). What it can take:
 * scalars, enums (as int), `const char *` (str or None), `void *` (int or
 * None), handles (an int address) and arrays with their size parameters
 * (a NumPy view) as parameters; a scalar, an enum, `void *` or a handle
 * returned. */
BT_HIDDEN int bt_fntype_refused(const BtOverload *ov, const BtDecl *sig, BtBuf *why);

/* The Python type that stands for sig, as a stub writes it:
 * "Callable[[float, int | None], float]" ("object" for a void return,
 * whose result is ignored); "Callable[..., float]" where only a raw C
 * function pointer can (bt_fntype_refused). */
BT_HIDDEN void bt_fntype_put_python(BtBuf *b, const BtOverload *ov, const BtDecl *sig);

#endif
