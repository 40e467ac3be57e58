/* bt_handle.h - bindthem._core.Handle and HandleType: opaque pointers a C
 * library hands out (gzFile, FILE *, fftw_plan), held by Python objects.
 *
 * A HandleType is one handle type of one Library (name "gzFile", key
 * "struct gzFile_s", and the Function that frees one, if the Library was
 * told: its destructor). A Handle is one pointer of a HandleType and one
 * atomic word of state: bit 0 closed, the rest twice the number of calls
 * using it. A call holds a Handle (bt_handle_hold) from before its
 * arguments are stored until the kernel returns, so that a close from
 * another thread is refused ("in use") instead of freeing the pointer
 * under the call. A close is one compare-exchange from 0 (open, unused) to
 * closed, so exactly one closer wins: the destructor runs once.
 *
 * Handles of a type with a destructor are owned: their destructor runs
 * when the user calls it (the call closes them), on close(), when the
 * Handle is finalized, or at interpreter exit (_close_open_handles, from an
 * atexit hook, newest first). Open owned Handles are kept, by weak
 * reference, in a dict of the module state (open_handles). */
#ifndef BT_HANDLE_H
#define BT_HANDLE_H

#include "bt_state.h"

#include <stdatomic.h>
#include <stdint.h>

typedef struct BtHandleTypeObject {
    PyObject_HEAD
    PyObject *name;           /* str: its Python name, "gzFile" */
    PyObject *key;            /* str: the type pointed to, "struct gzFile_s": handles of equal
                           * keys go to each other's parameters, whatever the Library */
    PyObject *destructor;     /* the Function that frees one (load/build's handles=), or NULL */
    const char *cname, *ckey; /* name's and key's UTF-8 (kept by them) */
} BtHandleTypeObject;

enum { BT_HANDLE_CLOSED = 1, BT_HANDLE_USE = 2 };

typedef struct BtHandleObject {
    PyObject_HEAD
    void *ptr;                /* never changes */
    BtHandleTypeObject *type; /* strong */
    _Atomic uintptr_t state;  /* BT_HANDLE_CLOSED | BT_HANDLE_USE * calls holding it */
    _Atomic int listed;       /* in the module's open_handles (owned and not yet closed) */
    PyObject *weakreflist;
    PyObject *keep; /* what the pointed-to object uses, alive as long as the Handle (an
                     * FFTW plan's arrays: bt_handle_keep), or NULL */
} BtHandleObject;

/* Registers Handle, HandleType, NullHandleError and _close_open_handles on
 * the module (the exec slot), into its state (bt_module.c traverses the
 * fields; bt_handle_clear clears them). 0 or -1. */
BT_HIDDEN int bt_handle_add(PyObject *module);
BT_HIDDEN void bt_handle_clear(BtState *st);

/* New reference: a HandleType of that name and key (a Library's, at bind
 * time; no destructor yet), or NULL. */
BT_HIDDEN PyObject *bt_handle_type_new(BtState *st, const char *name, const char *key);

/* New reference: a Handle of HandleType type for ptr (not NULL), owned
 * (listed for the exit hook) when its type has a destructor; or NULL. */
BT_HIDDEN PyObject *bt_handle_new(BtState *st, PyObject *type, void *ptr);

/* Whether o is a Handle (of any module instance's type). */
BT_HIDDEN int bt_handle_check(PyObject *o);

/* Keeps keep (a new reference is taken) alive as long as Handle h: what the
 * object it points to uses (an FFTW plan keeps pointers to its arrays). */
BT_HIDDEN void bt_handle_keep(PyObject *h, PyObject *keep);

/* Argument o of parameter `name` of fname(), which takes a handle of key
 * `key` (named hname), or with key NULL a `void *` (None or any Handle):
 * its pointer into *ptr (NULL for None). A TypeError naming the parameter,
 * what it takes and what was given, else 0. Reads no state: a caller that
 * passes the pointer on holds the Handle first (bt_handle_hold). */
BT_HIDDEN int bt_handle_arg(PyObject *o, const char *key, const char *hname, const char *fname,
                            PyObject *name, void **ptr);

/* A call holds Handle h for as long as it uses its pointer: 0, or -1 with
 * a ValueError when it is closed. bt_handle_unhold lets go. */
BT_HIDDEN int bt_handle_hold(PyObject *h, const char *fname, PyObject *name);
BT_HIDDEN void bt_handle_unhold(PyObject *h);

/* Closes h for its destructor's call: 0 when this caller closed it (the
 * destructor then runs, once); -1 with a ValueError when it is closed
 * already, a RuntimeError when a call holds it. */
BT_HIDDEN int bt_handle_close_for(PyObject *h, const char *fname, PyObject *name);

/* h was closed (bt_handle_close_for): out of open_handles. */
BT_HIDDEN void bt_handle_forget(PyObject *h);

/* h's pointer was freed or replaced by a call it was passed to by address
 * (`T **`): closed without its destructor, out of open_handles. */
BT_HIDDEN void bt_handle_disown(PyObject *h);

#endif
