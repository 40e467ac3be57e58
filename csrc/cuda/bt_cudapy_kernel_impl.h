/* bt_cudapy_kernel_impl.h - what a Kernel's files share, and no one else: their structs. */

/* The files: bt_cudapy_kernel.c (the Kernel type), bt_cudapy_launch.c (the
 * Launch type), bt_cudapy_config.c (the configuration), bt_cudapy_launch_args.c
 * (arguments as the dispatcher reads them), bt_cudapy_queue.c (one launch
 * queued), bt_cudapy_query.c (attributes, occupancy). Callers include
 * bt_cudapy.h. */
#ifndef BT_CUDAPY_KERNEL_IMPL_H
#define BT_CUDAPY_KERNEL_IMPL_H

#include "bt_cudapy.h"

#include "bt_callable.h"

typedef struct BtLaunchConfig {
    unsigned grid[3], block[3];
    unsigned shared;
    uint64_t stream;      /* CUstream value; 0 = legacy default stream */
    PyObject *stream_obj; /* borrowed: the stream as given (NULL: none) */
    int ex;               /* cluster=, cooperative= or priority= given: cuLaunchKernelEx */
    BtCudaLaunchAttrs attrs;
} BtLaunchConfig;

typedef struct BtCudaKernel {
    BT_CALLABLE_HEAD     /* calls: argument slots per overload (no ffi call is made) */
        void **kernels;  /* CUkernel / CUfunction per overload */
    unsigned *shared_ok; /* per overload and device: dynamic shared memory opted in to */
    /* free-threaded: one raise of shared_ok at a time; funcs/func_ctx pairs
     * read and written whole */
    BT_FT_FIELD(PyMutex shared_lock)
    int module_device; /* cuModuleLoadDataEx: the device it lives on; else -1 */
    /* per overload and device: the CUfunction launched (cuKernelGetFunction)
     * and the context it belongs to, resolved once per (kernel, context) */
    void **funcs, **func_ctx;
    BtCudaModule *cmod; /* the loaded module (owner keeps it), which resolves them */
} BtCudaKernel;

typedef struct BtCudaLaunch {
    PyObject_HEAD
    BtCudaKernel *kernel;
    PyObject *stream; /* as given, for repr */
    BtLaunchConfig cfg;
    int given; /* bit i: configuration item i was given in the brackets */
} BtCudaLaunch;

/* The configuration items, in bracket order (the first 4), and the launch
 * attributes, keywords only; each is a keyword. */
enum { BT_CUDAPY_N_CFG = 7 };
BT_HIDDEN extern const char *const bt_cudapy_cfg_names[BT_CUDAPY_N_CFG];

/* The arguments of one launch as read; j numbers them as bt_dispatch_pick
 * does. cfg_kw: the configuration keywords (grid=, ...); given: the items
 * a Launch's brackets fixed. */
typedef struct BtLaunchReading {
    BtState *st;
    const BtCudaKernel *k;
    BtLaunchConfig *cfg;
    PyObject **cfg_kw;
    int given;
    BtCudaArg a[BT_MAX_PARAMS];
    uint8_t read[BT_MAX_PARAMS];
    int n_read; /* 1 + the greatest j read: where the release of a[].keep stops */
} BtLaunchReading;

/* What reading a launch's array arguments needs (bt_slot_walk's ctx), and
 * the device and context they are on (check_device). */
typedef struct BtLaunchArrays {
    const BtLaunchReading *r;
    const BtDispatchPick *p;
    int dev;
    void *ctx;
    PyObject *dev_name;
} BtLaunchArrays;

/* ---- bt_cudapy_config.c ---- */

/* grid or block: an int or a tuple/list of 1 to 3 ints, each >= 1. 0 or -1. */
BT_HIDDEN int bt_cudapy_config_dims(PyObject *o, const char *what, const char *kname,
                                    unsigned out[3]);
/* shared_mem: any integer from 0 to UINT_MAX. 0 or -1. */
BT_HIDDEN int bt_cudapy_config_shared(PyObject *o, const char *kname, unsigned *out);
/* cluster=, cooperative=, priority= (each NULL or None: not asked for). 0 or -1. */
BT_HIDDEN int bt_cudapy_config_attrs(PyObject *cluster, PyObject *coop, PyObject *prio,
                                     const char *kname, BtLaunchConfig *cfg);
/* grid, block required; shared, stream optional (NULL). 0 or -1. */
BT_HIDDEN int bt_cudapy_config_parse(PyObject *grid, PyObject *block, PyObject *shared,
                                     PyObject *stream, const char *kname, BtLaunchConfig *cfg);

/* ---- bt_cudapy_launch_args.c: a BtDispatchHow's members (ctx: a BtLaunchReading) ---- */

BT_HIDDEN int bt_cudapy_launch_ready(void *ctx);
BT_HIDDEN int bt_cudapy_launch_code(PyObject *o, int j, PyObject *name, void *ctx);
BT_HIDDEN PyObject *bt_cudapy_launch_given(PyObject *o, int j, void *ctx);
BT_HIDDEN const char *bt_cudapy_launch_wants(const BtArgSlot *s, char *buf, size_t size);
/* bt_slot_walk's reader (ctx: an BtLaunchArrays). 0 or -1. */
BT_HIDDEN int bt_cudapy_launch_device_arg(void *ctx, PyObject *const *args, int i, BtArrayArg *arr);

/* ---- bt_cudapy_queue.c ---- */

/* Binds, checks, marshals and queues a launch of k with cfg; given: the
 * items a Launch's brackets fixed (0 for kernel(..., grid=, block=)).
 * New reference (None), or NULL with an exception. */
BT_HIDDEN PyObject *bt_cudapy_kernel_launch(BtCudaKernel *k, PyObject *const *args,
                                            Py_ssize_t nargs, PyObject *kwnames,
                                            BtLaunchConfig *cfg, int given);

/* ---- bt_cudapy_query.c: Kernel methods ---- */

BT_HIDDEN PyObject *bt_cudapy_kernel_attributes(BtCudaKernel *k, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_kernel_max_active(BtCudaKernel *k, PyObject *args, PyObject *kwargs);
BT_HIDDEN PyObject *bt_cudapy_kernel_max_block(BtCudaKernel *k, PyObject *args, PyObject *kwargs);

#endif
