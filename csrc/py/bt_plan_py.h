/* bt_plan_py.h - bindthem._core.Plan: one parse of a header and its
 * instantiate.yml, with the exact bytes parsed. */
#ifndef BT_PLAN_PY_H
#define BT_PLAN_PY_H

#include "bt_meta.h"
#include "bt_state.h"

BT_HIDDEN extern PyType_Spec bt_plan_spec;

/* parse(header, instantiate=None, *, strict=False, header_text=None,
 * yaml_text=None): a new Plan. */
BT_HIDDEN extern const char bt_plan_parse_doc[];
BT_HIDDEN PyObject *bt_plan_parse(PyObject *module, PyObject *args, PyObject *kwargs);

/* What bind() and cuda_bind() (`who`) bind: header is a Plan (instantiate
 * must then be None, strict the plan's) or the header's path (read here
 * with instantiate and strict, once, into a new Plan). New reference to
 * the Plan with *m borrowed from it, or NULL with an exception. */
/* The metadata of plan, a Plan the caller holds (borrowed: alive as long
 * as plan), or NULL with TypeError naming `who` for anything else. */
BT_HIDDEN const BtMeta *bt_plan_meta(BtState *st, const char *who, PyObject *plan);

BT_HIDDEN PyObject *bt_plan_for_bind(BtState *st, const char *who, PyObject *header,
                                     PyObject *instantiate, int strict, const BtMeta **m);

#endif
