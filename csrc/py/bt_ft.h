/* bt_ft.h - free-threaded CPython (3.13t, Py_GIL_DISABLED): the atomics and
 * the lock that shared mutable state needs when no GIL serialises calls.
 *
 * With the GIL every macro vanishes: a plain load or store, no lock, no
 * field. csrc/README.md ("Free-threading") lists each piece of shared
 * state and why it is safe. */
#ifndef BT_FT_H
#define BT_FT_H

#include <Python.h>

#ifdef Py_GIL_DISABLED
/* a field only the free-threaded build has */
#define BT_FT_FIELD(decl) decl;
/* publish / read what was published (release / acquire) */
#define BT_FT_LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define BT_FT_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* counters and flags that order nothing else */
#define BT_FT_LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define BT_FT_STORE_RELAXED(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define BT_FT_ADD(p, v) ((void)__atomic_fetch_add((p), (v), __ATOMIC_RELAXED))
/* writers of one object's state, one at a time (a PyMutex: one byte, no allocation) */
#define BT_FT_LOCK(m) PyMutex_Lock(m)
#define BT_FT_UNLOCK(m) PyMutex_Unlock(m)
/* a sequence lock's reader: the count before reading (odd: a writer is
 * in), and whether it is unchanged after (reads between are acquire loads) */
#define BT_FT_SEQ_BEGIN(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define BT_FT_SEQ_SAME(p, s) (((s)&1) == 0 && __atomic_load_n((p), __ATOMIC_RELAXED) == (s))
/* one object's state read-modify-written whole (CPython's per-object
 * critical section, 3.13+; two objects at once without deadlock: _2).
 * Suspended if the thread blocks inside (a PyMutex, releasing the thread
 * state): keep the section to plain C and driver calls, no decref. */
#define BT_FT_BEGIN(o) Py_BEGIN_CRITICAL_SECTION(o)
#define BT_FT_END() Py_END_CRITICAL_SECTION()
#define BT_FT_BEGIN2(a, b) Py_BEGIN_CRITICAL_SECTION2((a), (b))
#define BT_FT_END2() Py_END_CRITICAL_SECTION2()
#else
#define BT_FT_FIELD(decl)
#define BT_FT_LOAD(p) (*(p))
#define BT_FT_STORE(p, v) ((void)(*(p) = (v)))
#define BT_FT_LOAD_RELAXED(p) (*(p))
#define BT_FT_STORE_RELAXED(p, v) ((void)(*(p) = (v)))
#define BT_FT_ADD(p, v) ((void)(*(p) += (v)))
#define BT_FT_LOCK(m) ((void)0)
#define BT_FT_UNLOCK(m) ((void)0)
#define BT_FT_SEQ_BEGIN(p) 0u
#define BT_FT_SEQ_SAME(p, s) ((void)(s), 1)
/* a block, so that a section's locals and its end match on every build */
#define BT_FT_BEGIN(o) {
#define BT_FT_END() }
#define BT_FT_BEGIN2(a, b) {
#define BT_FT_END2() }
#endif

/* A kernel (Function, CUDA kernel) made: on free-threaded CPython 3.14+,
 * with deferred reference counting, so that threads calling one kernel
 * take no references to it (each an atomic add on the object's shared
 * count from every thread but its owner: bench_freethreaded.py's "shared"
 * column); it is then freed by the collector, not at its last reference.
 * Nothing on a GIL build or before 3.14 (3.13t has no API for it). */
static inline void bt_ft_deferred(PyObject *o)
{
#if PY_VERSION_HEX >= 0x030E0000
    (void)PyUnstable_Object_EnableDeferredRefcount(o);
#else
    (void)o;
#endif
}

#endif
