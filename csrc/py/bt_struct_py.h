/* bt_struct_py.h - structs and unions as NumPy structured dtypes.
 *
 * A struct or union the header declares (BtHeader.structs, bt_parse.h) and
 * bindthem can lay out (no reason) is a structured dtype: its fields' names
 * in order; their formats (a scalar's NumPy type from the type table, an
 * enum's integer type, a pointer of any kind as uintp, a nested struct's
 * dtype, an array a subarray of one of these); their offsets; the struct's
 * size as the itemsize; aligned (dtype.isalignedstruct), as the C ABI lays
 * it out. A union's fields all lie at offset 0.
 *
 * A bind makes each dtype once, when first needed, into a table (a list,
 * one entry per struct of the header, None until made): its Functions'
 * record slots borrow them (bt_record_link), and the LibraryHandle keeps
 * them, as the Library's attributes (bt_struct_named). */
#ifndef BT_STRUCT_PY_H
#define BT_STRUCT_PY_H

#include "bt_numpy.h"
#include "bt_parse.h"

/* NumPy 1.x headers (building against numpy<2): the 2.x accessors. */
#if NPY_ABI_VERSION < 0x02000000 && !defined(PyDataType_NAMES)
#define PyDataType_NAMES(d) ((d)->names)
#define PyDataType_FIELDS(d) ((d)->fields)
#endif

/* New reference: the table of header h's struct dtypes, none made yet. */
BT_HIDDEN PyObject *bt_struct_table(const BtHeader *h);

/* Borrowed (the table holds it): the dtype of h->structs[i], made into
 * table on first need (with the nested structs' it holds); NULL with an
 * exception set (ValueError for a struct with a reason). */
BT_HIDDEN PyArray_Descr *bt_struct_dtype(PyObject *table, const BtHeader *h, int i);

/* New reference: {name: dtype} of every dtype the table holds, and of each
 * struct the header itself declares that has a name and a layout (made
 * now), under its name (a typedef of it, else its tag), or its key
 * ("struct <anonymous 3>": no identifier) when it has none or an earlier
 * struct has it: the dict holds every dtype made. NULL with an exception
 * set. */
BT_HIDDEN PyObject *bt_struct_named(PyObject *table, const BtHeader *h);

#endif
