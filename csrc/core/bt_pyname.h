/* bt_pyname.h - the Python face of a declaration: parameter names and the
 * signature text.
 *
 * Pure C. The one place of the rule every reader of a signature follows
 * (dispatch's __text_signature__, the metadata, hence stubs and the CLI)
 * and the call obeys (the dispatcher binds by these names, open Functions'
 * too, and refuses the positional-only ones as keywords):
 * size parameters (`x_size`, `x_sizeK`) are not Python parameters; a C name
 * that is a Python keyword (Python's keyword.kwlist; soft keywords are
 * names) is written with a trailing underscore; the parameters up to the
 * last such one or the last unnamed one (`argN`) are positional-only. */
#ifndef BT_PYNAME_H
#define BT_PYNAME_H

#include "bt_parse.h"

/* Python's keywords (keyword.kwlist, sorted), NULL-terminated. */
BT_HIDDEN extern const char *const bt_pyname_keywords[];

/* Whether s is a Python keyword. */
BT_HIDDEN int bt_pyname_is_keyword(const char *s);

/* Whether parameter i of d is a Python parameter (not a size parameter). */
BT_HIDDEN int bt_pyname_takes(const BtDecl *d, int i);

/* Parameter i's Python name into b ("in_" for `in`). */
BT_HIDDEN void bt_pyname_put(BtBuf *b, const BtDecl *d, int i);

/* How many of d's Python parameters, from the first, are positional-only. */
BT_HIDDEN int bt_pyname_posonly(const BtDecl *d);

/* "(a, in_, /, c=1.0)" into b: d's Python parameters with, for C parameter
 * i, "=" defaults[i] where defaults (indexed by C parameter; NULL for none)
 * gives one: the value's Python spelling, which only the caller knows. */
BT_HIDDEN void bt_pyname_signature(BtBuf *b, const BtDecl *d, const char *const *defaults);

#endif
