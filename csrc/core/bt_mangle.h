/* bt_mangle.h - Itanium C++ ABI names for planned overloads.
 *
 * Pure C. Covers what the dialect can declare: nested names (namespaces),
 * function templates with their template arguments and encoded return type,
 * template parameter references (T_, T0_, ...), substitutions (S_, S0_, ...,
 * base 36), std:: abbreviation (St), std::complex<T>, pointers, and dropped
 * top-level const on by-value parameters, C strings (`const char *`: PKc),
 * enums by their name (an enum in a namespace is not known as one: its name
 * is mangled unqualified). extern "C" functions get their
 * plain name. A non-type template argument is a literal, L<type><value>E
 * (`Li4E`, `Lin1E` for -1, `Lb1E`, `Lc97E`). */
#ifndef BT_MANGLE_H
#define BT_MANGLE_H

#include "bt_arena.h"
#include "bt_parse.h"

/* The symbol name of decl instantiated with targs (NULL/ignored when the
 * function is not a template). Returns an arena string, or NULL on OOM. */
BT_HIDDEN const char *bt_mangle(const BtDecl *decl, const BtTArg *targs, BtArena *arena);

/* bt_mangle, an enum type by its name (enums: the header's, which a type's
 * enum_ref indexes; NULL: every enum as its integer type). */
BT_HIDDEN const char *bt_mangle_enums(const BtDecl *decl, const BtTArg *targs, const BtEnum *enums,
                                      BtArena *arena);

#endif
