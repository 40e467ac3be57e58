/* bt_record.h - structs in calls: records of a struct's dtype as arguments
 * and return values.
 *
 * A struct parameter by pointer (`struct point *p`: BtTypeRef.struct_ref
 * with is_array) takes a NumPy array of the struct's dtype (bt_struct_py.h),
 * C-contiguous, aligned, writable unless the parameter is const, of at
 * least one record, or for a const parameter also a numpy.void record: the
 * address of its first record is passed, no copy made. A struct by value
 * takes a numpy.void record or a 0-d or 1-element array of the dtype, whose
 * bytes libffi passes as the struct (bt_struct_ffi.h: unions, which libffi
 * has not, are refused at bind time); a struct returned by value comes back
 * as a new numpy.void record. A dtype is the struct's when it is its
 * object, or has the same fields in the same order at the same offsets,
 * each of an equivalent dtype (PyArray_EquivTypes; nested structs field by
 * field), and the same itemsize; else a TypeError says which field
 * differs. Any other argument is a TypeError naming the parameter, the
 * struct and what was given.
 *
 * In the call path a record is a scalar slot of kind 'r' (by pointer: the
 * pointer is its value) or 'R' (by value: the walk hands libffi its bytes
 * where they lie), which bt_slot_store_fast leaves to bt_slot_store_arg,
 * stored after the other scalars with the arrays (bt_slot_walk: no Python
 * code runs between the check and the call). A function with a struct by
 * value, or returning one, is called through libffi (never the direct
 * call); one with records by pointer only keeps the direct call. */
#ifndef BT_RECORD_H
#define BT_RECORD_H

#include "bt_call.h"

typedef struct BtRecord {
    const char *cname;    /* as C spells it: "struct point", "z_stream" */
    const char *attr;     /* the Library's attribute of its dtype ("point"), "" when it has none */
    int index;            /* in BtHeader.structs: its dtype's entry in the bind's table */
    int by_value;         /* passed or returned by value: its bytes, through libffi */
    int is_const;         /* by pointer to const: a numpy.void record too */
    int writes;           /* by pointer, not const: the function may write it */
    size_t size, align;   /* the struct's */
    ffi_type *ffi;        /* by value: its libffi type (bt_struct_ffi) */
    PyArray_Descr *descr; /* its dtype (borrowed: the LibraryHandle keeps it), set by
                           * bt_record_link */
} BtRecord;

/* Why overload ov cannot be bound for its structs, or NULL: host is the
 * back end's host_strings (0: a kernel, which cannot read a record's host
 * memory, takes none); a struct or union by value that libffi cannot pass
 * (bt_struct_ffi). The text is from scratch, or static. */
BT_HIDDEN const char *bt_record_refused(const BtOverload *ov, int host, BtArena *scratch);

/* Slot s, of parameter type r of ov (a struct_ref), as a record slot:
 * kind 'r' or 'R', its BtRecord from arena (a by-value one's ffi_type
 * too). 0, or -1 with an exception set. */
BT_HIDDEN int bt_record_slot(BtArgSlot *s, const BtOverload *ov, const BtTypeRef *r,
                             BtArena *arena);

/* call->ret_rec for ov (NULL when it returns no struct), from arena. 0, or
 * -1 with an exception set. */
BT_HIDDEN int bt_record_return(BtCall *call, const BtOverload *ov, BtArena *arena);

/* The libffi types of call's structs by value into atypes (by C parameter)
 * and *rtype. Returns 1 when it has one (the call goes through libffi), 0
 * when not. */
BT_HIDDEN int bt_record_ffi_types(const BtCall *call, ffi_type **atypes, ffi_type **rtype);

/* The dtypes of the n calls' records, from table (bt_struct_dtype: made
 * there on first need). 0, or -1 with an exception set. */
BT_HIDDEN int bt_record_link(BtCall *calls, int n, PyObject *table, const BtHeader *h);

/* Whether an argument of dispatch code `code` may be record r's (the
 * store then checks its dtype). */
BT_HIDDEN int bt_record_accepts(const BtRecord *r, uint8_t code);

/* What record slot r takes, for messages. */
BT_HIDDEN const char *bt_record_wants(const BtRecord *r, char *buf, size_t size);

/* Argument o of record slot s into out->p: the address of its first record
 * (by pointer), or of its bytes (by value). 0, or -1 with a TypeError. */
BT_HIDDEN int bt_record_store(BtValue *out, const BtArgSlot *s, PyObject *o, const char *fname,
                              PyObject *name);

/* New reference: the 0-d array a struct returned as r is written into,
 * zeroed, its bytes in *data (aligned by NumPy's allocator); or NULL. */
BT_HIDDEN PyObject *bt_record_result_new(const BtRecord *r, void **data);

/* New reference: the numpy.void record of result (taken over), or NULL. */
BT_HIDDEN PyObject *bt_record_result(PyObject *result);

#endif
