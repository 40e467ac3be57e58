/* bt_cuda.c - libcuda via dlopen + cuGetProcAddress; CUresult translated.
 *
 * The driver table `bt_cuda_drv` and its loading (the driver's version checked, each
 * entry point asked for at its PFN typedef's version: bt_cuda_impl.h),
 * CUresult into a BtDiag (sticky errors named and remembered, the fork
 * guard), the devices. The rest of the driver, one concern a file:
 * bt_cuda_ctx.c (contexts), bt_cuda_mem.c (memory), bt_cuda_module.c
 * (modules and their kernels), bt_cuda_launch.c (launches, kernel
 * attributes, occupancy), bt_cuda_stream.c (streams and events),
 * bt_cuda_graph.c (stream capture and graphs). */
#define _GNU_SOURCE
#include "bt_cuda_impl.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Driver bt_cuda_drv; /* the one driver table (bt_cuda_impl.h) */

/* The contexts a kernel fault made unusable, each with its sticky error and
 * the call that first reported it: a fault ends one context, not the
 * others (another device's, another library's). An entry is written once,
 * under sticky_lock, before bt_cuda_drv.n_sticky counts it (release); read
 * whole under the lock. A fault past the table's size (a context of none
 * of its entries) is kept with ctx NULL, which stands for every context. */
#define BT_CUDA_MAX_STICKY 32
static struct {
    BtCUcontext ctx;
    BtCUresult code;
    int device;
    char at[256];
} stickies[BT_CUDA_MAX_STICKY];
static pthread_mutex_t sticky_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct EntryPoint {
    const char *name;
    int version;  /* of the PFN typedef: what we ask cuGetProcAddress for */
    int optional; /* 1: asked only when the driver is >= version; may be absent */
    size_t offset;
} EntryPoint;

#define EP(name, ver, opt)                                                                         \
    {                                                                                              \
#name, ver, opt, offsetof(Driver, name)                                                    \
    }
static const EntryPoint entry_points[] = {
    EP(cuGetErrorName, 6000, 0),
    EP(cuGetErrorString, 6000, 0),
    EP(cuInit, 2000, 0),
    EP(cuDeviceGetCount, 2000, 0),
    EP(cuDeviceGet, 2000, 0),
    EP(cuDeviceGetName, 2000, 0),
    EP(cuDevicePrimaryCtxRetain, 7000, 0),
    EP(cuCtxGetCurrent, 4000, 0),
    EP(cuCtxSetCurrent, 4000, 0),
    EP(cuCtxGetDevice, 2000, 0),
    EP(cuCtxSynchronize, 2000, 0),
    EP(cuMemAlloc, 3020, 0),
    EP(cuMemFree, 3020, 0),
    EP(cuMemcpyHtoD, 3020, 0),
    EP(cuMemcpyDtoH, 3020, 0),
    EP(cuPointerGetAttributes, 7000, 0),
    EP(cuModuleLoadDataEx, 2010, 0),
    EP(cuModuleGetFunction, 2000, 0),
    EP(cuModuleUnload, 2000, 0),
    EP(cuLaunchKernel, 4000, 0),
    EP(cuStreamSynchronize, 2000, 0),
    EP(cuMemcpyHtoDAsync, 3020, 0),
    EP(cuMemcpyDtoHAsync, 3020, 0),
    EP(cuMemsetD8Async, 3020, 0),
    EP(cuMemHostAlloc, 2020, 0),
    EP(cuMemFreeHost, 2000, 0),
    EP(cuEventCreate, 2000, 0),
    EP(cuEventRecord, 2000, 0),
    EP(cuEventQuery, 2000, 0),
    EP(cuEventSynchronize, 2000, 0),
    EP(cuEventDestroy, 4000, 0),
    EP(cuStreamWaitEvent, 3020, 0),
    EP(cuStreamCreate, 2000, 0),
    EP(cuStreamDestroy, 4000, 0),
    EP(cuEventElapsedTime, 12080, 1),
    EP(cuLibraryLoadData, 12000, 1),
    EP(cuLibraryUnload, 12000, 1),
    EP(cuLibraryGetKernel, 12000, 1),
    EP(cuKernelGetName, 12030, 1),
    EP(cuFuncGetName, 12030, 1),
    EP(cuLibraryGetKernelCount, 12040, 1),
    EP(cuLibraryEnumerateKernels, 12040, 1),
    EP(cuModuleGetFunctionCount, 12040, 1),
    EP(cuModuleEnumerateFunctions, 12040, 1),
    EP(cuKernelGetParamInfo, 12040, 1),
    EP(cuFuncGetParamInfo, 12040, 1),
    EP(cuDeviceGetAttribute, 2000, 0),
    EP(cuFuncGetAttribute, 2020, 0),
    EP(cuFuncSetAttribute, 9000, 0),
    EP(cuKernelGetAttribute, 12000, 1),
    EP(cuKernelSetAttribute, 12000, 1),
    EP(cuKernelGetFunction, 12000, 1),
    EP(cuStreamGetCtx, 9020, 0),
    EP(cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050, 0),
    EP(cuOccupancyMaxPotentialBlockSize, 6050, 0),
    EP(cuModuleGetGlobal, 3020, 0),
    EP(cuMemcpyAsync, 4000, 0),
    EP(cuLaunchKernelEx, 11060, 1),
    EP(cuMemAllocAsync, 11020, 1),
    EP(cuMemFreeAsync, 11020, 1),
    EP(cuDeviceGetDefaultMemPool, 11020, 1),
    EP(cuMemPoolSetAttribute, 11020, 1),
    EP(cuLibraryGetGlobal, 12000, 1),
    /* managed memory and peer access (bt_cuda_managed.c, bt_cuda_peer.c) */
    EP(cuMemAllocManaged, 6000, 1),
    EP(cuMemPrefetchAsync, 12020, 1),
    EP(cuMemAdvise, 12020, 1),
    EP(cuDeviceCanAccessPeer, 4000, 1),
    EP(cuCtxEnablePeerAccess, 4000, 1),
    EP(cuCtxDisablePeerAccess, 4000, 1),
    EP(cuMemcpyPeerAsync, 4000, 1),
    /* graphs and stream capture (bt_cuda_graph.c) */
    EP(cuStreamBeginCapture, 10010, 1),
    EP(cuStreamEndCapture, 10000, 1),
    EP(cuStreamIsCapturing, 10000, 1),
    EP(cuStreamGetCaptureInfo, 11030, 1),
    EP(cuGraphInstantiateWithFlags, 11040, 1),
    EP(cuGraphLaunch, 10000, 1),
    EP(cuGraphExecDestroy, 10000, 1),
    EP(cuGraphDestroy, 10000, 1),
    EP(cuThreadExchangeStreamCaptureMode, 10010, 1),
};
#undef EP

/* Asked for only when the driver lacks the newer ABI (12080 above). */
static const EntryPoint older_abis[] = {
    {"cuEventElapsedTime", 2000, 0, offsetof(Driver, cuEventElapsedTime_v1)},
    /* before 12.2 (CUDA 13 has only the CUmemLocation ABIs, by these names) */
    {"cuMemPrefetchAsync", 8000, 1, offsetof(Driver, cuMemPrefetchAsync_v1)},
    {"cuMemAdvise", 8000, 1, offsetof(Driver, cuMemAdvise_v1)},
};

void bt_cuda_describe(BtCUresult r, char *buf, size_t size)
{
    const char *name = NULL, *text = NULL;

    if (bt_cuda_drv.cuGetErrorName && bt_cuda_drv.cuGetErrorName(r, &name) != CUDA_SUCCESS_)
        name = NULL;
    if (bt_cuda_drv.cuGetErrorString && bt_cuda_drv.cuGetErrorString(r, &text) != CUDA_SUCCESS_)
        text = NULL;
    if (name && text)
        snprintf(buf, size, "%s (%s)", name, text);
    else if (name)
        snprintf(buf, size, "%s", name);
    else
        snprintf(buf, size, "CUresult %d", r);
}

int bt_cuda_is_sticky(int code)
{
    /* ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, ASSERT, HARDWARE_STACK_ERROR,
     * ILLEGAL_INSTRUCTION, MISALIGNED_ADDRESS, INVALID_ADDRESS_SPACE,
     * INVALID_PC, LAUNCH_FAILED: a kernel faulted, and the driver says so to
     * every later call in the context (cuda.h: "the context cannot be used") */
    return code == 700 || code == 702 || code == 710 || (code >= 714 && code <= 719);
}

/* The table's entry of the current context (or of every context), -1. */
static int sticky_entry(void)
{
    BtCUcontext cur = NULL;
    int i, n = __atomic_load_n(&bt_cuda_drv.n_sticky, __ATOMIC_ACQUIRE);

    if (!n || bt_cuda_drv.cuCtxGetCurrent(&cur) != CUDA_SUCCESS_)
        return -1;
    for (i = 0; i < n; i++)
        if (!stickies[i].ctx || stickies[i].ctx == cur)
            return i;
    return -1;
}

BtCUresult bt_cuda_sticky_here(void)
{
    int i = sticky_entry();
    return i < 0 ? 0 : stickies[i].code;
}

/* Remembers the current context as broken by r, first reported by `what`. */
static void sticky_remember(BtCUresult r, const char *what)
{
    BtCUcontext cur = NULL;
    BtCUdevice d = -1;
    int n;

    bt_cuda_drv.cuCtxGetCurrent(&cur);
    if (cur && bt_cuda_drv.cuCtxGetDevice(&d) != CUDA_SUCCESS_)
        d = -1;
    pthread_mutex_lock(&sticky_lock); /* threads that fault at once: the first text stays */
    n = bt_cuda_drv.n_sticky;
    if (sticky_entry() < 0 && n < BT_CUDA_MAX_STICKY) {
        stickies[n].ctx = n + 1 < BT_CUDA_MAX_STICKY ? cur : NULL;
        stickies[n].code = r;
        stickies[n].device = d;
        snprintf(stickies[n].at, sizeof stickies[n].at, "%.255s", what);
        __atomic_store_n(&bt_cuda_drv.n_sticky, n + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&sticky_lock);
}

int bt_cuda_sticky_fail(BtDiag *e, const char *what)
{
    char why[512], at[sizeof stickies[0].at], ctx[64] = "the CUDA context";
    BtCUresult code = 0;
    int i;

    pthread_mutex_lock(&sticky_lock);
    i = sticky_entry();
    if (i >= 0) {
        code = stickies[i].code;
        memcpy(at, stickies[i].at, sizeof at);
        if (stickies[i].ctx && stickies[i].device >= 0)
            snprintf(ctx, sizeof ctx, "this CUDA context (device %d)", stickies[i].device);
    } else {
        snprintf(at, sizeof at, "%s", what);
    }
    pthread_mutex_unlock(&sticky_lock);
    bt_cuda_describe(code, why, sizeof why);
    return bt_diag_fail(e, BT_DIAG_CUDA, code,
                        "an earlier kernel faulted: %s (a sticky error, first reported by %s); "
                        "%s is unusable until the process restarts: %s was refused, and every "
                        "later CUDA call in that context will be; other contexts (other "
                        "devices') still work (find the faulting kernel with compute-sanitizer, "
                        "or CUDA_LAUNCH_BLOCKING=1)",
                        why, at, ctx, what);
}

int bt_cuda_fork_fail(BtDiag *e)
{
    return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                        "CUDA was initialized before this process was forked: a child of "
                        "fork() cannot use its parent's CUDA driver state (its memory, "
                        "streams, modules); use CUDA in the child only after a fresh start: "
                        "multiprocessing.get_context('spawn') or 'forkserver', or "
                        "concurrent.futures with mp_context=that context");
}

static void forked_child(void) { __atomic_store_n(&bt_cuda_drv.forked, 1, __ATOMIC_RELAXED); }

int bt_cuda_fail(BtDiag *e, BtCUresult r, const char *fmt, ...)
{
    char what[1024], why[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    bt_cuda_describe(r, why, sizeof why);
    if (bt_cuda_is_sticky(r)) {
        sticky_remember(r, what);
        return bt_cuda_sticky_fail(e, what);
    }
    if (r == CUDA_ERROR_STUB_LIBRARY_)
        return bt_diag_fail(
            e, BT_DIAG_NODRIVER, r,
            "no CUDA driver: %s is the CUDA toolkit's stub library "
            "(CUDA_ERROR_STUB_LIBRARY from %s); install the NVIDIA driver, or point "
            "BINDTHEM_LIBCUDA at the real libcuda.so.1",
            bt_cuda_drv.path, what);
    return bt_diag_fail(e, BT_DIAG_CUDA, r, "%s failed: %s", what, why);
}

void bt_cuda_version_text(int v, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

int bt_cuda_unsupported(BtDiag *e, const char *what, const char *since)
{
    char have[32];

    bt_cuda_version_text(bt_cuda_drv.version, have, sizeof have);
    return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                        "%s needs a CUDA %s or newer driver (this one is %s)", what, since, have);
}

/* One entry point at exactly ep->version. 0, or -1 with why in e. */
static int resolve(const EntryPoint *ep, BtDiag *e)
{
    void *fn = NULL;
    BtCUprocQuery q = CU_GET_PROC_ADDRESS_SUCCESS_;
    BtCUresult r;
    char want[32], have[32];

    if (bt_cuda_drv.getproc2)
        r = bt_cuda_drv.getproc2(ep->name, &fn, ep->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM_,
                                 &q);
    else
        r = bt_cuda_drv.getproc1(ep->name, &fn, ep->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM_);
    if (r == CUDA_SUCCESS_ && q == CU_GET_PROC_ADDRESS_SUCCESS_ && fn) {
        *(void **)((char *)&bt_cuda_drv + ep->offset) = fn;
        return 0;
    }
    if (ep->optional)
        return 0;
    bt_cuda_version_text(ep->version, want, sizeof want);
    bt_cuda_version_text(bt_cuda_drv.version, have, sizeof have);
    if (r == CUDA_ERROR_STUB_LIBRARY_)
        return bt_cuda_fail(e, r, "cuGetProcAddress(\"%s\")", ep->name);
    if (q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT_)
        return bt_diag_fail(
            e, BT_DIAG_CUDA, r,
            "cuGetProcAddress(\"%s\", cudaVersion=%d): "
            "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: the CUDA %s driver (%s) has "
            "%s, but no version of it as old as the CUDA %s ABI bindthem calls",
            ep->name, ep->version, have, bt_cuda_drv.path, ep->name, want);
    if (q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND_)
        return bt_diag_fail(e, BT_DIAG_CUDA, r,
                            "cuGetProcAddress(\"%s\", cudaVersion=%d): "
                            "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: the CUDA %s driver (%s) has no "
                            "entry point %s (the driver is older than CUDA %s, or the name is "
                            "misspelled)",
                            ep->name, ep->version, have, bt_cuda_drv.path, ep->name, want);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r,
                            "cuGetProcAddress(\"%s\", cudaVersion=%d) (a CUDA %s driver's "
                            "cuGetProcAddress does not say why)",
                            ep->name, ep->version, have);
    return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                        "cuGetProcAddress(\"%s\", cudaVersion=%d) returned no "
                        "function (driver %s, %s)",
                        ep->name, ep->version, have, bt_cuda_drv.path);
}

pthread_mutex_t bt_cuda_once = PTHREAD_MUTEX_INITIALIZER; /* what it guards: bt_cuda_impl.h */

static int ready(void) { return __atomic_load_n(&bt_cuda_drv.ready, __ATOMIC_ACQUIRE); }

static int load_driver(BtDiag *e);

int bt_cuda_init(BtDiag *e)
{
    int rc;

    if (ready()) /* a forked child never takes `once`: another thread may have held it */
        return FORKED() ? bt_cuda_fork_fail(e) : 0;
    pthread_mutex_lock(&bt_cuda_once);
    rc = bt_cuda_drv.ready ? (FORKED() ? bt_cuda_fork_fail(e) : 0) : load_driver(e);
    pthread_mutex_unlock(&bt_cuda_once);
    return rc;
}

static int load_driver(BtDiag *e)
{
    const char *path = getenv("BINDTHEM_LIBCUDA");
    PFN_cuDriverGetVersion_v2020 getversion;
    BtCUresult r;
    size_t i;
    char have[32];

    if (!path || !*path)
        path = "libcuda.so.1";
    if (!bt_cuda_drv.dl) {
        bt_cuda_drv.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!bt_cuda_drv.dl) {
            const char *why = dlerror();
            return bt_diag_fail(
                e, BT_DIAG_NODRIVER, 0,
                "no CUDA driver: cannot load %s (%s); install the NVIDIA driver, or "
                "set BINDTHEM_LIBCUDA to the path of libcuda.so.1",
                path, why ? why : "dlopen failed");
        }
        snprintf(bt_cuda_drv.path, sizeof bt_cuda_drv.path, "%s", path);
    }
    getversion = (PFN_cuDriverGetVersion_v2020)dlsym(bt_cuda_drv.dl, "cuDriverGetVersion");
    if (!getversion)
        return bt_diag_fail(e, BT_DIAG_NODRIVER, 0, "no CUDA driver: %s has no cuDriverGetVersion",
                            bt_cuda_drv.path);
    r = getversion(&bt_cuda_drv.version);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDriverGetVersion");
    bt_cuda_version_text(bt_cuda_drv.version, have, sizeof have);
    if (bt_cuda_drv.version < 11030)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                            "the CUDA driver (%s) is version %s; bindthem needs 11.3 or newer "
                            "(cuGetProcAddress)",
                            bt_cuda_drv.path, have);
    /* in 12.x headers cuGetProcAddress is #defined to cuGetProcAddress_v2 */
    bt_cuda_drv.getproc2 = (PFN_cuGetProcAddress_v12000)dlsym(bt_cuda_drv.dl,
                                                              "cuGetProcAddress_v2");
    bt_cuda_drv.getproc1 = (PFN_cuGetProcAddress_v11030)dlsym(bt_cuda_drv.dl, "cuGetProcAddress");
    if (!bt_cuda_drv.getproc2 && !bt_cuda_drv.getproc1)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                            "the CUDA %s driver (%s) exports no cuGetProcAddress", have,
                            bt_cuda_drv.path);
    for (i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++) {
        const EntryPoint *ep = &entry_points[i];
        if (ep->optional && bt_cuda_drv.version < ep->version)
            continue;
        if (resolve(ep, e) < 0)
            return -1;
    }
    if (!bt_cuda_drv.cuEventElapsedTime && resolve(&older_abis[0], e) < 0)
        return -1;
    if ((!bt_cuda_drv.cuMemPrefetchAsync && resolve(&older_abis[1], e) < 0) ||
        (!bt_cuda_drv.cuMemAdvise && resolve(&older_abis[2], e) < 0))
        return -1;
    r = bt_cuda_drv.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE_)
        return bt_diag_fail(e, BT_DIAG_NODRIVER, r,
                            "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE "
                            "(driver %s, %s)",
                            have, bt_cuda_drv.path);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuInit");
    /* the library API comes as a set; without one of them, use modules */
    if (!bt_cuda_drv.cuLibraryLoadData || !bt_cuda_drv.cuLibraryGetKernel ||
        !bt_cuda_drv.cuLibraryUnload)
        bt_cuda_drv.cuLibraryLoadData = NULL;
    if (pthread_atfork(NULL, NULL, forked_child) != 0)
        return bt_diag_fail(e, BT_DIAG_NOMEM, 0, "pthread_atfork: out of memory");
    __atomic_store_n(&bt_cuda_drv.ready, 1, __ATOMIC_RELEASE);
    return 0;
}

int bt_cuda_driver_version(void) { return ready() ? bt_cuda_drv.version : 0; }
const char *bt_cuda_driver_path(void) { return bt_cuda_drv.path; }
int bt_cuda_uses_library_api(void) { return bt_cuda_drv.cuLibraryLoadData != NULL; }

int bt_cuda_device_count(int *n, BtDiag *e)
{
    BtCUresult r;

    *n = 0;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = bt_cuda_drv.cuDeviceGetCount(n);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDeviceGetCount");
    return 0;
}

void bt_cuda_device_label(int dev, char *buf, size_t size)
{
    char name[256];
    BtCUdevice d;

    if (ready() && bt_cuda_drv.cuDeviceGet(&d, dev) == CUDA_SUCCESS_ &&
        bt_cuda_drv.cuDeviceGetName(name, (int)sizeof name, d) == CUDA_SUCCESS_)
        snprintf(buf, size, "device %d (%s)", dev, name);
    else
        snprintf(buf, size, "device %d", dev);
}

int bt_cuda_device_attr(int dev, int attr, int *value, BtDiag *e)
{
    BtCUdevice d;
    BtCUresult r;

    *value = 0;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = bt_cuda_drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = bt_cuda_drv.cuDeviceGetAttribute(value, attr, d);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "cuDeviceGetAttribute(%d, device %d)", attr, dev);
    return 0;
}
