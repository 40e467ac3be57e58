/* bt_note_frame.h - one call of an annotated function (bt_note_call.h)
 * on the general path: its frame, the expression environment its hidden
 * values and checks are evaluated in (bt_note_frame.c), and the taking of
 * its arguments into it (bt_note_take.c); bt_note_call.c makes the frame,
 * calls and builds the result. Internal to those three files. */
#ifndef BT_NOTE_FRAME_H
#define BT_NOTE_FRAME_H

#include "bt_note_call.h"
#include "bt_numpy.h"

typedef struct BtNoteFrame {
    const BtCall *call;
    const BtNoteCall *nc;
    const char *fname;
    PyObject *const *args;
    BtValue vals[BT_MAX_PARAMS]; /* what each C parameter gets */
    BtValue refs[BT_MAX_PARAMS]; /* a scalar by pointer's storage */
    void *avalues[BT_MAX_PARAMS];
    PyObject *hin[BT_MAX_PARAMS];       /* a pointer to a handle: the caller's Handle or None */
    char held[BT_MAX_PARAMS];           /* hin's Handle held (bt_handle_hold) through the call */
    PyArrayObject *arr[BT_MAX_PARAMS];  /* the array passed (a copy or an allocation: owned) */
    PyArrayObject *orig[BT_MAX_PARAMS]; /* the caller's, where arr is a copy to write back */
    char owned[BT_MAX_PARAMS];
    long long ival[BT_MAX_PARAMS]; /* a hidden parameter's value */
    Py_ssize_t stride[BT_MAX_PARAMS], ld[BT_MAX_PARAMS];
    int layout; /* the function's: -1 none yet, 0 rows (C order), 1 columns */
    int err;    /* errno as the call left it (a returned handle's NULL says it) */
    char buf[256];
} BtNoteFrame;

/* C parameter i's role in the call (BT_ROLE_*). */
static inline int bt_note_role(const BtNoteFrame *f, int i) { return f->nc->plan->params[i].role; }

/* bt_note_frame.c: the integer value of type t in v (its low bytes), 0 or
 * -1 (not an integer type); expression e's value in f's environment, 0 or
 * -1 with the ValueError; the ValueError of a failed check e (-1). */
BT_HIDDEN int bt_note_int_value(BtTypeId t, const BtValue *v, long long *out);
BT_HIDDEN int bt_note_eval(BtNoteFrame *f, const BtExpr *e, long long *v);
BT_HIDDEN int bt_note_check_failed(BtNoteFrame *f, const BtExpr *e);

/* bt_note_take.c: the Python arguments (f->args, their names) into f, in
 * the plan's order (scalars, then arrays, then the arrays that follow the
 * layout those decide), the hidden values computed, the shapes and checks
 * checked. 0, or -1 with the exception (f holds what it took: the caller
 * releases f's owned arrays and held handles either way). */
BT_HIDDEN int bt_note_take(BtNoteFrame *f, PyObject *names);

#endif
