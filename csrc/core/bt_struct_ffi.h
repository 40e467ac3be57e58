/* bt_struct_ffi.h - a struct's libffi type: how a struct passed or returned
 * by value is described to libffi.
 *
 * Pure C (libffi's ffi.h, no Python.h). libffi lays the elements of an
 * FFI_TYPE_STRUCT out in order, each at the next multiple of its alignment,
 * and classifies the struct for the call from them (System V x86-64's
 * eightbytes, AAPCS64's homogeneous aggregates); bt_parse_struct.c lays a
 * struct's fields out by the same rule. So a struct is its fields in order:
 * a scalar as its type's ffi_type (an enum as its integer type), a pointer
 * as ffi_type_pointer, a nested struct as a nested ffi_type, an array as
 * its elements repeated. libffi has no unions, and no element list stands
 * for one on both ABIs: a union by value, or a struct holding one, is
 * refused. */
#ifndef BT_STRUCT_FFI_H
#define BT_STRUCT_FFI_H

#include <ffi.h>

#include "bt_parse.h"

/* Most scalars a struct passed by value may hold (its ffi_type lists each). */
#define BT_STRUCT_FFI_MAX_ELEMENTS 65536

/* Why struct s (of the header's structs) cannot be passed by value, or
 * NULL when it can: a union, or a struct that holds one (in a field, an
 * array, a nested struct), a struct with bit-fields or that holds one,
 * a struct of more than BT_STRUCT_FFI_MAX_ELEMENTS scalars, a struct with a
 * reason (bt_parse.h). A static string. */
BT_HIDDEN const char *bt_struct_ffi_refused(const BtStruct *structs, const BtStruct *s);

/* The libffi type of struct s (of the header's structs), allocated from
 * arena, its layout checked with libffi's own (ffi_get_struct_offsets):
 * each field where the header lays it out, the same size and alignment.
 * NULL with *why set when s cannot be passed by value
 * (bt_struct_ffi_refused, or libffi lays it out otherwise); NULL with
 * *why NULL when out of memory. */
BT_HIDDEN ffi_type *bt_struct_ffi(const BtStruct *structs, const BtStruct *s, BtArena *arena,
                                  const char **why);

#endif
