/* bt_bind.h - the binder: one walk of a BtPlan for every back end.
 *
 * bt_bind_plan takes each planned overload in YAML order and
 *   1. asks the back end whether it binds the overload (refuse: the
 *      declaration's kind, a type it cannot call; a C string, handle,
 *      `void *` or function pointer parameter, or a C string or handle
 *      return, where it has no host_strings): one
 *      instantiate.yml lists is then a BindError, an unlisted one is
 *      reported in `skipped`;
 *   2. mangles it (bt_mangle_enums: enums by their names; the plain name
 *      for extern "C");
 *   3. resolves the name through the back end (resolve; for a C library,
 *      the plain C name when the C++ one is missing). A listed overload
 *      that is missing raises SymbolError naming the near misses among the
 *      back end's names; an unlisted one (planned as untemplated, or
 *      without an instantiate.yml) is reported in `unexported`;
 *   4. checks the parameter layout against the binary's, where the back end
 *      can tell (param);
 *   5. prepares the argument slots (bt_call_prepare), and what the back end
 *      calls through (prepare);
 * then hands each Python name's resolved overloads to the back end (make),
 * which wraps them into one Python object.
 *
 * A back end is a BtBackend: the words its messages use and a few
 * functions, each given the back end's ctx (its open library or module).
 * The CPU's (bt_library.c) resolves with dlsym; CUDA's (bt_cudapy_bind.c)
 * with cuLibraryGetKernel / cuModuleGetFunction (NVRTC's output is such a
 * module image). The walk names no back end: what differs is in these
 * members.
 *
 * Lifetimes: everything a made object keeps (its calls, their slots and
 * strings, the resolved addresses) is in the arena `make` takes over. The
 * BtFunc that `make` gets, and the overload copies in it, live in this
 * walk's scratch arena and point into the metadata: read them in `make`,
 * never keep them. */
#ifndef BT_BIND_H
#define BT_BIND_H

#include "bt_call.h"
#include "bt_meta.h"

typedef struct BtBackend {
    /* The words of its messages. */
    const char *noun;      /* before a name: "kernel " or "" */
    const char *container; /* what resolve searches: "library", "module" */
    const char *things;    /* what it holds: "kernels" ("the module has no kernels") */
    const char *remedy;    /* the other way out, after "or ": "let bindthem.build(...) ..." */
    /* A missing name's message lists every name `names` gives (a module has
     * a few kernels; a library may export thousands: then only the near
     * misses). */
    int lists_all;
    /* inline and static declarations are not exported (a compiled C/C++
     * library): a listed one that is missing gets that explanation. */
    int linkage_hides;
    /* It calls in this process, so a C string (`const char *`: a str's or
     * bytes' host memory), a handle and a `void *` (host pointers) can be
     * passed and returned; 0: an overload with one is refused (a kernel on
     * a device cannot read host memory). */
    int host_strings;

    /* Why this back end does not bind declaration d, or overload ov of it
     * (ov NULL: a declaration the plan skipped, not instantiated), or NULL
     * to bind it. *deliberate is set to 1 when d is not of its kind at all ("not
     * a __global__ kernel; ...": the header meant it for another back end,
     * deliberately), 0 when this overload is what it cannot call (a
     * CUDA-only type on the CPU). NULL member: it binds everything. */
    const char *(*refuse)(const BtDecl *d, const BtOverload *ov, int *deliberate);
    /* The address / handle of `symbol`; NULL with *missing = 1 when the
     * binary lacks it, NULL with *missing = 0 and an exception set on error. */
    void *(*resolve)(void *ctx, const char *symbol, int *missing);
    /* A plain C library's: the address of C name `name` when the binary
     * itself defines it (not a library it links), as resolve. Used for an
     * untemplated, un-namespaced declaration without extern "C" whose C++
     * symbol is missing (and whose Python name has that one overload).
     * NULL member: C++ names only. */
    void *(*resolve_c)(void *ctx, const char *name, int *missing);
    /* The binary's (mangled) names as an arena array, for near misses: 0,
     * or -1 with why the list is unavailable in *why (no exception). NULL
     * member: no near misses. */
    int (*names)(void *ctx, BtArena *arena, const char ***names, int *n, BtBuf *why);
    /* Parameter i of the resolved `addr`: 0 with its offset and size in the
     * parameter buffer, 1 when it has fewer parameters, 2 when the back end
     * can't tell (no check), -1 with an exception set. NULL member: no
     * layout check. */
    int (*param)(void *ctx, void *addr, int i, size_t *offset, size_t *size);
    /* What calling the resolved addr needs beyond the slots bt_call_prepare
     * made (the CPU's libffi frame and direct call: bt_call_prepare_frame):
     * 0, or -1 with an exception set. NULL member: the slots are all (a
     * kernel, launched by its handle). */
    int (*prepare)(BtState *st, BtCall *call, const BtOverload *ov, void *addr, BtArena *arena);
    /* New reference: the Python object for f's f->n_ovs resolved overloads,
     * with calls[k] prepared for f->ovs[k] and addrs[k] its address. Takes
     * over `arena` (which holds calls and addrs), also on failure. */
    PyObject *(*make)(void *ctx, const BtFunc *f, BtCall *calls, void **addrs, BtArena *arena);
} BtBackend;

/* What a walk made. */
typedef struct BtBound {
    PyObject *funcs;      /* {Python name: object} */
    PyObject *unexported; /* [C signature]: planned, unlisted, not in the binary */
    PyObject *skipped;    /* [C signature]: unlisted declarations the back end refuses */
    /* [bt_meta_left_out dict]: every declaration or overload not bound, with
     * why: the plan's skipped, then the unexported and the refused. */
    PyObject *left_out;
} BtBound;

/* Walks meta's plan with back end be (ctx is passed to its functions);
 * `file` (str) names the binary in messages. Returns 0 with new references
 * in *out, or -1 with an exception set and *out cleared. */
BT_HIDDEN int bt_bind_plan(BtState *st, const BtMeta *meta, const BtBackend *be, void *ctx,
                           PyObject *file, BtBound *out);
BT_HIDDEN void bt_bound_clear(BtBound *b);

#endif
