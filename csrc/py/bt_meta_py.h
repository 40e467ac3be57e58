/* bt_meta_py.h - metadata to plain Python objects. */
#ifndef BT_META_PY_H
#define BT_META_PY_H

#include "bt_meta.h"
#include "bt_state.h"

/* New reference: {"header", "instantiate", "preprocessed", "declarations",
 * "functions", "skipped", "missing", "openmp", "includes", "enums",
 * "constants", "handles", "callbacks", "structs"} built from a loaded
 * BtMeta; a parameter's and a return's dict say which handle type,
 * callback type or struct it is ("handle", "callback", "struct": names or
 * None) and whether it is an opaque `void *` ("voidp").
 * brief: each overload's dict holds only "instantiation" and "lines" (its
 * template's length: what a build's translation units need), and
 * "declarations", "enums" and "constants" are empty (the full dicts cost
 * most of a warm build), as are "handles", "callbacks" and "structs". */
BT_HIDDEN PyObject *bt_meta_to_py(const BtMeta *m, int brief);

/* New reference: {"name", "line", "reason", "deliberate"}: declaration d,
 * left out for `reason`; deliberate when that is the header's or the YAML's
 * choice (an inline/static helper, a template the YAML does not name, a
 * host function in a CUDA module) rather than a shortfall. The one shape of
 * metadata's "skipped" and of what a binding left out. */
BT_HIDDEN PyObject *bt_meta_left_out(const BtDecl *d, const char *reason, int deliberate);

/* header_directives(text): a header text's `#pragma omp` and local
 * `#include` lines, as the metadata has them (new reference). */
BT_HIDDEN PyObject *bt_meta_directives_py(PyObject *module, PyObject *text);
BT_HIDDEN extern const char bt_meta_directives_doc[];

/* New reference: a tuple of the NULL-terminated C table names. */
BT_HIDDEN PyObject *bt_meta_names(const char *const *names);

/* O& converter: str/bytes/PathLike -> bytes (new ref), None -> None. */
BT_HIDDEN int bt_path_converter(PyObject *obj, PyObject **out);

/* bt_meta_load with paths given as bytes (or None); -1 with an exception. */
BT_HIDDEN int bt_meta_load_py(BtState *st, BtMeta *m, PyObject *header, PyObject *instantiate,
                              int strict);

#endif
