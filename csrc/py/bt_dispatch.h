/* bt_dispatch.h - the dispatcher of CPU functions and CUDA kernels: binding, selection, errors. */

/* A call binds positional and keyword arguments to the Python parameters
 * (the header's, minus `_size`) with CPython's messages, computes one
 * dispatch code per argument, and selects the overload: a small
 * open-addressing cache keyed by those codes makes the cost independent of
 * the number of overloads. A cache miss scans the overloads: exact pass
 * first, then the pass with scalar conversions, as pybind11 does. Only the
 * final call (ffi_call, or a kernel launch) differs between the users.
 *
 * Overloads merged by `remaps` may take different parameter lists: the
 * overloads with one list of names form a signature group. With one group
 * (the common case) a call binds to it and the key is the codes in
 * parameter order. With several, the key is the call's shape (number of
 * positional arguments, the keywords' names) and the given arguments'
 * codes, so one lookup still answers; a miss tries every overload whose
 * group the arguments bind to, in YAML order, exact pass first, as
 * pybind11 tries its m.def overloads. An omitted argument has code
 * BT_K_OMITTED, which only a parameter with a default takes: overloads of
 * one group may differ in their defaults.
 *
 * The names a call binds are the signature's: bt_pyname's Python names
 * (`lambda_` for `lambda`; the C name is no keyword), its positional-only
 * ones refused as keywords, so inspect.signature(f).bind() takes what the
 * call takes. The keyword map is built from them at bind time. */

#ifndef BT_DISPATCH_H
#define BT_DISPATCH_H

#include "bt_call.h"

typedef struct BtDispatchEntry {
    uint64_t hash;
    int32_t ov;   /* overload index; -1 = empty slot */
    int32_t pass; /* pass that matched */
} BtDispatchEntry;

/* The cache's table: cap entries, then cap keys of key_len bytes. A grow
 * replaces it whole (one pointer, so a reader sees one table, never the
 * entries of one and the size of another); the free-threaded build keeps
 * the tables it replaced (retired) until the dispatcher is cleared, as a
 * thread may still be probing one. Their sizes halve, so they add less
 * than the live table's size. */
typedef struct BtDispatchTable {
    struct BtDispatchTable *retired;
    int cap;
    uint8_t *keys;
    BtDispatchEntry e[];
} BtDispatchTable;

/* The overloads that share one list of Python parameter names. */
typedef struct BtDispatchGroup {
    PyObject *names; /* tuple of Python parameter names (bt_pyname_put: "lambda_"; interned) */
    int n_py;
    uint8_t *optional; /* n_py flags: some overload of the group has a default there */
    int *pos;          /* several groups: per name id, the parameter's position or -1 */
} BtDispatchGroup;

typedef struct BtDispatch {
    PyObject *name;          /* str, interned */
    PyObject *qualname;      /* str */
    PyObject *names;         /* the first group's names (a new reference) */
    PyObject *overloads;     /* tuple of C signatures (str) */
    PyObject *pysigs;        /* tuple, per overload: its Python signature "f(x, w=1.0)" */
    PyObject *text_sig;      /* the first overload's "(x, w=1.0)" (an open one's: its
                              * declaration's), for __text_signature__ */
    PyObject *ov_list;       /* the errors' list of overloads, one per line (overload_list) */
    PyObject *all_names;     /* several groups: every name once (ids index it), else NULL */
    PyObject *posonly;       /* names of the positional-only parameters (bt_pyname_posonly's,
                              * every overload's): never keywords; or NULL */
    const char *cname;       /* UTF-8 of name, for messages */
    const BtArgSlot **slots; /* per overload: its slots (the calls own them) */
    int *ov_group;           /* per overload: its group */
    BtDispatchGroup *groups;
    int n_groups;
    int n_ovs;
    int n_py;   /* the first group's */
    int fast_n; /* n_py with one group, else -1: a call of exactly fast_n
                 * positional arguments binds to them as they are */
    int min_n;  /* one group: the fewest positional arguments a call may give
                 * (the parameters after them have defaults); else n_py + 1 */
    int max_py; /* the most parameters of a group */
    /* the first group's keyword map, built at init: each name (interned,
     * names holds it) at the slot its pointer hashes to (kw_mask + 1
     * slots, open addressing), with its position; read-only after init */
    struct BtKwSlot {
        PyObject *name; /* NULL: empty */
        int pos;
    } * kw_map;
    size_t kw_mask;
    /* the unknown-keyword TypeError's list of keywords, built at its first
     * raise (NULL until then; free-threaded: set once, by compare-exchange) */
    PyObject *kw_text;
    /* Free-threaded, the cache is read without a lock: an entry is
     * written whole, then published by the release store of its ov (an
     * empty slot's ov is -1), and a table by the store of `cache`; writers
     * (insert, grow) hold `lock`. With the GIL these are plain accesses. */
    BtDispatchTable *cache; /* NULL until the first miss */
    int key_len;
    int cache_used;
    Py_ssize_t scans;   /* cache misses that scanned the overloads (tests read it) */
    Py_ssize_t selects; /* calls the memo (last_*, prev_*) did not answer (tests read it) */
    BT_FT_FIELD(PyMutex lock)
    /* in front of the cache: the overload of the last call that
     * bt_dispatch_remember saw, and its arguments' keys (bt_slot_keys); and
     * the one before it (prev_*), so that calls alternating between two
     * overloads (float64, then float32, then float64 ...) find both.
     * Free-threaded, a sequence lock keeps the four together: last_seq is
     * odd while one writer (never waited for) rewrites them. */
    int last_ov;            /* -1: none */
    const void **last_keys; /* n_py; one allocation with prev_keys */
    int prev_ov;            /* -1: none */
    const void **prev_keys; /* n_py */
    BT_FT_FIELD(uint32_t last_seq)
    /* the last TypeError of bt_dispatch_no_match: its arguments' keys and
     * its message, so that a call that fails the same way again (code
     * that probes with try/except) raises the same text without building
     * it; NULL until then, and again when overloads are added. Free-
     * threaded, read and written under `lock`. */
    PyObject *miss_msg;
    const void **miss_keys; /* n_py, allocated with miss_msg's first */
} BtDispatch;

/* Keywords a caller takes besides the parameters (a launch's grid=, ...):
 * one that names no parameter and equals names[i] goes to out[i]. */
typedef struct BtDispatchExtra {
    const char *const *names;
    int n;
    PyObject **out; /* n borrowed references, NULL when not given */
} BtDispatchExtra;

/* How a caller reads and describes arguments; NULL members (or a NULL
 * BtDispatchHow) mean bt_slot_code / bt_slot_describe / bt_slot_wants.
 * j numbers the given arguments: the positional ones, then the keyword
 * ones that name parameters, in call order. */
typedef struct BtDispatchHow {
    int (*ready)(void *ctx); /* keywords sorted, extra's filled, no code read yet; -1 stops */
    int (*code)(PyObject *o, int j, PyObject *name, void *ctx); /* -1: exception set */
    PyObject *(*given)(PyObject *o, int j, void *ctx);          /* new reference */
    const char *(*wants)(const BtArgSlot *s, char *buf, size_t size);
    void *ctx;
} BtDispatchHow;

/* A call bound to the overload bt_dispatch_pick chose. */
typedef struct BtDispatchPick {
    PyObject *argv[BT_MAX_PARAMS]; /* its group's arguments in order; NULL = omitted */
    uint8_t codes[BT_MAX_PARAMS];
    int src[BT_MAX_PARAMS]; /* the given number j of each, or -1 */
    PyObject *names;        /* borrowed: its group's parameter names */
    int ov, pass;           /* pass 0: the memo answered (bt_dispatch_last), codes unread */
} BtDispatchPick;

/* Sets up d for the n overloads ovs with prepared calls (slots, n_py,
 * defaults and signature are read from them; the calls must outlive d).
 * name is the Python name. Returns 0, or -1 with an exception set
 * (BindError for overloads it cannot dispatch between); d can be cleared
 * either way. */
BT_HIDDEN int bt_dispatch_init(BtState *st, BtDispatch *d, const char *name, const BtOverload *ovs,
                               const BtCall *calls, int n);

/* Releases what d holds; d is left zeroed (clearing twice is fine). */
BT_HIDDEN void bt_dispatch_clear(BtDispatch *d);

/* New reference: the docstring. doc (the header comment) when all
 * overloads have one Python signature; else each signature with its
 * overload's header comment, numbered, as pybind11 writes overloads. */
BT_HIDDEN PyObject *bt_dispatch_doc(const BtDispatch *d, const BtOverload *ovs);

/* One group only: the overload for dispatch codes codes[n_py], with the
 * pass that matched it in *pass; -1 (no exception) when none accepts them. */
BT_HIDDEN int bt_dispatch_select(BtDispatch *d, const uint8_t *codes, int *pass);

/* One group: the overload of the last remembered call, or of the one
 * before it, when args[n_py] have its keys (the same dtypes and types: the
 * same codes, so the same overload), else -1. Every argument given (no NULL
 * in args) unless `omitting` (NULL: left out, its default used), a constant
 * at each caller. */
static inline int bt_dispatch_last_as(const BtDispatch *d, PyObject *const *args, int omitting)
{
    int (*same)(PyObject *const *, const void *const *, int) = omitting ? bt_slot_same_keys_omitting
                                                                        : bt_slot_same_keys;
    unsigned seq = BT_FT_SEQ_BEGIN(&d->last_seq);
    int ov = BT_FT_LOAD(&d->last_ov);

    if (ov < 0 || !same(args, d->last_keys, d->n_py)) {
        ov = BT_FT_LOAD(&d->prev_ov);
        if (ov >= 0 && !same(args, d->prev_keys, d->n_py))
            ov = -1;
    }
    return ov >= 0 && BT_FT_SEQ_SAME(&d->last_seq, seq) ? ov : -1;
}

/* bt_dispatch_last_as for every argument given. */
static inline int bt_dispatch_last(const BtDispatch *d, PyObject *const *args)
{
    return bt_dispatch_last_as(d, args, 0);
}

/* Remembers that args[n_py] (NULL: omitted) selected overload ov; the call
 * remembered before becomes the one before it. */
BT_HIDDEN void bt_dispatch_remember(BtDispatch *d, PyObject *const *args, int ov);

/* One group only: TypeError naming the argument where the best overload
 * stops matching, with what the overloads expect there and their
 * signatures (args[n_py], NULL: left out). The message is a function of
 * the arguments' keys: the last one is kept with them (miss_msg). Always
 * NULL. */
BT_HIDDEN PyObject *bt_dispatch_no_match(BtDispatch *d, PyObject *const *args,
                                         const uint8_t *codes);

/* Any call, any number of groups (bt_function.c handles a call of
 * exactly fast_n positional arguments itself, with bt_dispatch_select):
 * binds args[nargs] and kwnames (extra may be NULL), reads the codes
 * through how (may be NULL) and selects, into *p. Returns 0, or -1 with
 * TypeError (no overload binds, or none takes the arguments: every
 * overload's Python signature listed) or how's exception set. */
BT_HIDDEN int bt_dispatch_pick(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames, const BtDispatchExtra *extra,
                               const BtDispatchHow *how, BtDispatchPick *p);

/* bt_dispatch_pick of one group in two steps: bt_dispatch_bind binds
 * args[nargs] and kwnames into p (argv, src, names), returning how many
 * were given, or -1 with the TypeError bt_dispatch_pick raises; then
 * bt_dispatch_pick_bound selects for them (the memo first) into p, as
 * bt_dispatch_pick returns. Between the two a caller may try the fused
 * entry on p->argv. bt_dispatch_bind leaves p->src unset (only a `how`
 * reads it): bt_dispatch_pick_bound takes how NULL after it. */
BT_HIDDEN int bt_dispatch_bind(BtDispatch *d, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames, const BtDispatchExtra *extra, BtDispatchPick *p);
BT_HIDDEN int bt_dispatch_pick_bound(BtDispatch *d, int given, const BtDispatchHow *how,
                                     BtDispatchPick *p);

/* Instantiation on demand: sets up d as an open dispatcher for the
 * templated declaration decl (of a header whose enums are `enums`), with
 * no overload yet and room for cap. Its one group, its positional-only
 * names and its text signature are decl's by bt_pyname, as an
 * instantiation's are; a parameter has a default when it and every later
 * one default to a literal (whatever the types; an enum member by name).
 * Returns 0, or -1 with an exception set; d can be cleared either way. */
BT_HIDDEN int bt_dispatch_open(BtDispatch *d, const BtDecl *decl, const BtEnum *enums, int cap);

/* Appends the overloads of from (one group, the same names and defaults
 * as d's; its slots must outlive d) to the open dispatcher d (room for
 * cap). Calls in other threads keep running: the slots go in first, the
 * tuples it replaces go to the list keep, and the grown count is
 * published last. The cache and the memo stay valid (indices never
 * change). 0, or -1 with an exception set (d unchanged). */
BT_HIDDEN int bt_dispatch_add(BtDispatch *d, const BtDispatch *from, int cap, PyObject *keep);

#endif
