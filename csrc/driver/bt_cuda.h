/* bt_cuda.h - the CUDA driver, reached through dlopen + cuGetProcAddress.
 *
 * Pure C: no Python.h, no cuda.h, never linked against libcuda. The driver
 * is opened on first use (BINDTHEM_LIBCUDA, else "libcuda.so.1"), its
 * version checked, and every entry point requested with the CUDA version
 * of the PFN typedef this file was written against, legacy-stream variants.
 * bindthem allocates and loads in primary contexts, and launches in the
 * context of the memory it is given; every function that makes a context
 * current gives the thread's own back afterwards (bt_cuda_enter/leave).
 * The driver table is process-wide: the first bt_cuda_init and the first
 * bt_cuda_primary_ctx of a device write it (callers serialize those: the
 * Python layer holds the GIL); after them, every function here may be
 * called without the GIL (the blocking ones are: copies that sync, stream,
 * event and context syncs, frees, module loads). CUresult is translated here
 * and nowhere else: functions return 0/-1 (or a pointer/NULL) and fill a
 * BtDiag (BT_DIAG_CUDA with the CUresult as code, BT_DIAG_NODRIVER,
 * BT_DIAG_UNSUPPORTED, BT_DIAG_NOMEM).
 *
 * In a child of fork() made after bt_cuda_init every call fails with a
 * message saying so (pthread_atfork), and frees make no driver call: the
 * parent's pointers are not the child's to free. */
#ifndef BT_CUDA_H
#define BT_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "bt_diag.h"

/* CUDA 2.0: the stream handles of the two default streams. */
#define BT_CUDA_STREAM_LEGACY 0x1
#define BT_CUDA_STREAM_PER_THREAD 0x2

/* Most devices bindthem tracks primary contexts for. */
#define BT_CUDA_MAX_DEVICES 64

/* What cuPointerGetAttributes says about an address. */
typedef struct BtCudaPtrInfo {
    int memtype; /* CUmemorytype: 0 unknown to CUDA, 1 host, 2 device, 4 unified */
    int managed;
    int device;      /* ordinal, or -1 */
    uint64_t devptr; /* where the device sees it */
    void *ctx;       /* CUcontext the memory belongs to (NULL: unknown) */
} BtCudaPtrInfo;

typedef struct BtCudaModule BtCudaModule;

/* Opens the driver once (a failure is retried on the next call). */
BT_HIDDEN int bt_cuda_init(BtDiag *e);
/* cuDriverGetVersion's value (0 before a successful init), the loaded path. */
BT_HIDDEN int bt_cuda_driver_version(void);
BT_HIDDEN const char *bt_cuda_driver_path(void);
/* Whether the module loader is cuLibraryLoadData (12.0+) or cuModuleLoadDataEx. */
BT_HIDDEN int bt_cuda_uses_library_api(void);

BT_HIDDEN int bt_cuda_device_count(int *n, BtDiag *e);
/* "NVIDIA H100 (device 0)" style text into buf; never fails. */
BT_HIDDEN void bt_cuda_device_label(int dev, char *buf, size_t size);
/* The device of the calling thread's current context, else 0. */
BT_HIDDEN int bt_cuda_current_device(int *dev, BtDiag *e);
/* Makes dev's primary context current on the calling thread when it isn't. */
BT_HIDDEN int bt_cuda_use_device(int dev, BtDiag *e);

/* dev's primary context (retained on first use). */
BT_HIDDEN int bt_cuda_primary_ctx(int dev, void **ctx, BtDiag *e);
/* The calling thread's current context, or NULL. */
BT_HIDDEN int bt_cuda_current_ctx(void **ctx, BtDiag *e);
/* Makes ctx current, *prev the thread's context before; bt_cuda_leave gives
 * prev back (a thread that had none keeps ctx). */
BT_HIDDEN int bt_cuda_enter(void *ctx, void **prev, BtDiag *e);
BT_HIDDEN void bt_cuda_leave(void *ctx, void *prev);

BT_HIDDEN int bt_cuda_alloc(int dev, size_t nbytes, uint64_t *ptr, BtDiag *e);
/* Frees with dev's primary context current, restoring the thread's context. */
BT_HIDDEN void bt_cuda_free(int dev, uint64_t ptr);
typedef enum BtCudaCopyDir { BT_CUDA_HTOD, BT_CUDA_DTOH } BtCudaCopyDir;
/* Copies n bytes between host memory and device pointer dptr on device dev
 * (host -> dptr for BT_CUDA_HTOD, dptr -> host for BT_CUDA_DTOH), queued on
 * `stream` (0: legacy) after the work queued so far on `after` (0: none);
 * sync: returns once the copy is done (else host must stay alive and, for
 * an asynchronous copy, be pinned). */
BT_HIDDEN int bt_cuda_copy(int dev, BtCudaCopyDir dir, uint64_t dptr, void *host, size_t n,
                           uint64_t stream, uint64_t after, int sync, BtDiag *e);
/* Queues zeroing n bytes at dptr on stream. */
BT_HIDDEN int bt_cuda_memset(int dev, uint64_t dptr, size_t n, uint64_t stream, BtDiag *e);
/* Page-locked, portable host memory (cuMemHostAlloc), and its free. */
BT_HIDDEN int bt_cuda_host_alloc(size_t n, void **p, BtDiag *e);
BT_HIDDEN void bt_cuda_host_free(void *p);
BT_HIDDEN int bt_cuda_pointer_info(uint64_t ptr, BtCudaPtrInfo *out, BtDiag *e);

/* Loads a cubin/fatbin/PTX image (len bytes; PTX need not be NUL-terminated)
 * into device dev (context-independent on 12.0+ drivers). PTX JIT errors put
 * the JIT log into e->message. */
BT_HIDDEN BtCudaModule *bt_cuda_module_load(const void *image, size_t len, int dev, BtDiag *e);
BT_HIDDEN void bt_cuda_module_unload(BtCudaModule *m);
/* The device a cuModuleLoadDataEx module lives on, or -1 (cuLibrary: any). */
BT_HIDDEN int bt_cuda_module_device(const BtCudaModule *m);
/* The kernel handle of `name`, or NULL: *missing = 1 when the module has no
 * such kernel (e not set), else an error in e. */
BT_HIDDEN void *bt_cuda_module_kernel(BtCudaModule *m, const char *name, int *missing, BtDiag *e);
/* The kernels' (mangled) names as an arena array; -1 with
 * BT_DIAG_UNSUPPORTED when the driver can't enumerate (before 12.4). */
BT_HIDDEN int bt_cuda_module_names(BtCudaModule *m, BtArena *arena, const char ***names, int *n,
                                   BtDiag *e);
/* Parameter i of a kernel: 0 with offset and size, 1 when the kernel has
 * fewer parameters, -1 on error (BT_DIAG_UNSUPPORTED before 12.4). */
BT_HIDDEN int bt_cuda_param_info(BtCudaModule *m, void *kernel, size_t i, size_t *offset,
                                 size_t *size, BtDiag *e);

/* Queues a launch. kernel from bt_cuda_module_kernel; stream is a CUstream
 * handle value (0: the legacy default stream). */
BT_HIDDEN int bt_cuda_launch(void *kernel, const unsigned grid[3], const unsigned block[3],
                             unsigned shared, uint64_t stream, void **params, BtDiag *e);
/* Lets kernel (on device ordinal dev, its context current) take `bytes` of
 * dynamic shared memory: CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
 * which launches above 48 KiB need. Returns 0 once set, 1 (nothing set)
 * when bytes plus the kernel's static shared memory exceed the device's
 * opt-in maximum, -1 on error; fills *optin and *static_bytes for 1. */
BT_HIDDEN int bt_cuda_kernel_shared(void *kernel, int dev, unsigned bytes, unsigned *optin,
                                    unsigned *static_bytes, BtDiag *e);
BT_HIDDEN int bt_cuda_stream_sync(uint64_t stream, BtDiag *e);
/* Makes `waiter` wait for the work queued so far on `producer` (an event
 * recorded there, cuStreamWaitEvent); nothing when they are one stream
 * (0 and 1 both name the legacy stream). */
BT_HIDDEN int bt_cuda_stream_wait(uint64_t waiter, uint64_t producer, BtDiag *e);

/* Waits, in this thread, for its per-thread stream (2) in every context it
 * may have queued work on: each device's retained primary context and the
 * current context; the current context is restored. What a thread does
 * before it exits (bt_cudapy_ptds.c): work left on a dead thread's
 * per-thread stream never runs, and whatever waits for it (a free, a
 * device synchronize, an event recorded there) never returns. Blocks: call
 * it without the GIL. Errors are ignored (a faulted context has nothing
 * left to run). */
BT_HIDDEN void bt_cuda_ptds_drain(void);

/* A stream of dev's primary context (CU_STREAM_NON_BLOCKING when asked),
 * and its destruction (its queued work still runs). */
BT_HIDDEN int bt_cuda_stream_create(int dev, int non_blocking, uint64_t *stream, BtDiag *e);
BT_HIDDEN void bt_cuda_stream_destroy(uint64_t stream);

/* Events, in the current context (dev 0's primary one made current if
 * none is); timing 0 creates them with CU_EVENT_DISABLE_TIMING. */
BT_HIDDEN int bt_cuda_event_create(int timing, void **ev, BtDiag *e);
BT_HIDDEN void bt_cuda_event_destroy(void *ev);
BT_HIDDEN int bt_cuda_event_record(void *ev, uint64_t stream, BtDiag *e);
BT_HIDDEN int bt_cuda_event_sync(void *ev, BtDiag *e);
/* *done: 1 when the work before the record is complete (or never recorded). */
BT_HIDDEN int bt_cuda_event_query(void *ev, int *done, BtDiag *e);
BT_HIDDEN int bt_cuda_event_elapsed(void *start, void *end, float *ms, BtDiag *e);
BT_HIDDEN int bt_cuda_stream_wait_event(uint64_t stream, void *ev, BtDiag *e);

/* Events of context ctx (made current meanwhile). */
BT_HIDDEN int bt_cuda_event_create_in(void *ctx, int timing, void **ev, BtDiag *e);
/* The context a stream belongs to (cuStreamGetCtx; 0, 1 and 2 name the
 * current context's, dev 0's primary one made current if none is). */
BT_HIDDEN int bt_cuda_stream_ctx(uint64_t stream, void **ctx, BtDiag *e);
/* In dev's primary context: records *ev (made there, without timing, when
 * NULL) on stream: how a write on the per-thread stream (2) is marked, a
 * handle that means another stream in every other thread. */
BT_HIDDEN int bt_cuda_record_in(int dev, void **ev, uint64_t stream, BtDiag *e);
/* In dev's primary context: `waiter` waits for event ev, or (ev NULL) for
 * the work queued so far on `producer` (bt_cuda_stream_wait). */
BT_HIDDEN int bt_cuda_wait_in(int dev, uint64_t waiter, uint64_t producer, void *ev, BtDiag *e);

/* The CUfunction to launch CUkernel `kernel` (of m; name for messages) with
 * in the current context: cuKernelGetFunction, which loads the kernel there
 * and may run a JIT deferred by lazy loading (call it without the GIL, and
 * cache the result per context); a cuModuleLoadDataEx kernel is its own. */
BT_HIDDEN int bt_cuda_kernel_function(BtCudaModule *m, void *kernel, const char *name, void **func,
                                      BtDiag *e);

/* Whether a CUresult is sticky: a kernel faulted and the context can make no
 * more calls. The first one is remembered: every later launch is refused
 * with it (never blamed on the launch), and every message says so. */
BT_HIDDEN int bt_cuda_is_sticky(int code);
/* What a launch asks of cuLaunchKernelEx (11.6+): a thread-block cluster
 * shape (cluster[0] == 0: none), a cooperative launch, a priority. */
typedef struct BtCudaLaunchAttrs {
    unsigned cluster[3];
    int cooperative;
    int has_priority, priority;
} BtCudaLaunchAttrs;
/* bt_cuda_launch with attributes; BT_DIAG_UNSUPPORTED on drivers before 11.6. */
BT_HIDDEN int bt_cuda_launch_ex(void *kernel, const unsigned grid[3], const unsigned block[3],
                                unsigned shared, uint64_t stream, void **params,
                                const BtCudaLaunchAttrs *a, BtDiag *e);
/* CU_DEVICE_ATTRIBUTE_* of device dev. */
BT_HIDDEN int bt_cuda_device_attr(int dev, int attr, int *value, BtDiag *e);
/* CU_FUNC_ATTRIBUTE_* of kernel on device dev (a cuModuleLoadDataEx
 * function: its context current). */
BT_HIDDEN int bt_cuda_kernel_attr(void *kernel, int dev, int attr, int *value, BtDiag *e);
/* cuOccupancyMaxActiveBlocksPerMultiprocessor and
 * cuOccupancyMaxPotentialBlockSize (limit 0: none), in the current context. */
BT_HIDDEN int bt_cuda_occupancy(void *kernel, int block, size_t shared, int *blocks, BtDiag *e);
BT_HIDDEN int bt_cuda_occupancy_block(void *kernel, size_t shared, int limit, int *min_grid,
                                      int *block, BtDiag *e);
/* A __device__ / __constant__ variable of module m: its address and size,
 * in the current context (cuLibraryGetGlobal, cuModuleGetGlobal); *missing
 * = 1 (0 returned, e not set) when the module has no such variable. */
BT_HIDDEN int bt_cuda_module_global(BtCudaModule *m, const char *name, uint64_t *ptr, size_t *size,
                                    int *missing, BtDiag *e);
/* Stream-ordered allocation on dev, queued on `stream`, from dev's default
 * memory pool (cuMemAllocAsync; the pool keeps freed memory) where the
 * device and driver have pools (11.2+, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_
 * SUPPORTED; BINDTHEM_CUDA_NO_POOL set: never), else cuMemAlloc.
 * *pooled says which; a pooled pointer goes back with bt_cuda_free_async,
 * queued on the legacy stream, which the caller made wait for the work on
 * the memory (the legacy stream waits for blocking streams only; no call
 * in a child of fork()). */
BT_HIDDEN int bt_cuda_alloc_async(int dev, size_t nbytes, uint64_t stream, uint64_t *ptr,
                                  int *pooled, BtDiag *e);
BT_HIDDEN void bt_cuda_free_async(int dev, uint64_t ptr);
/* Queues a copy of n bytes from device address src to dst on stream
 * (cuMemcpyAsync: either may be on another device), dev's primary context
 * current; with `sync`, waits for the stream after. */
BT_HIDDEN int bt_cuda_copy_d2d(int dev, uint64_t dst, uint64_t src, size_t n, uint64_t stream,
                               int sync, BtDiag *e);

/* cuCtxSynchronize on the current context (dev's primary one made current
 * if none is). */
BT_HIDDEN int bt_cuda_sync(BtDiag *e);

/* ---- managed memory (bt_cuda_managed.c) ---- */
/* Where managed memory goes: a device ordinal, or the host. */
#define BT_CUDA_HOST_LOCATION (-1)
/* cuMemAllocManaged in dev's primary context; attach_host: CU_MEM_ATTACH_HOST
 * (else CU_MEM_ATTACH_GLOBAL). BT_DIAG_UNSUPPORTED when dev has no managed
 * memory (CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY) or the driver no entry point.
 * Freed with bt_cuda_free. */
BT_HIDDEN int bt_cuda_alloc_managed(int dev, size_t nbytes, int attach_host, uint64_t *ptr,
                                    BtDiag *e);
/* Whether dev may use managed memory while others do
 * (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS): 1, 0, or -1 on error. */
BT_HIDDEN int bt_cuda_concurrent_managed(int dev, BtDiag *e);
/* Queues migrating n bytes at ptr to `location` (a device, or
 * BT_CUDA_HOST_LOCATION) on stream (of dev, whose primary context is made
 * current): cuMemPrefetchAsync, the 12.2 CUmemLocation ABI where the driver
 * has it. */
BT_HIDDEN int bt_cuda_prefetch(int dev, uint64_t ptr, size_t n, int location, uint64_t stream,
                               BtDiag *e);
/* cuMemAdvise(ptr, n, advice (a CUmem_advise value), location). */
BT_HIDDEN int bt_cuda_advise(int dev, uint64_t ptr, size_t n, int advice, int location, BtDiag *e);
/* Waits for dev's legacy stream (its primary context made current), which
 * the caller made wait for the work on managed memory before the host uses it. */
BT_HIDDEN int bt_cuda_managed_settle(int dev, BtDiag *e);

/* ---- peer access (bt_cuda_peer.c) ---- */
/* cuDeviceCanAccessPeer: *yes = 1 when dev can map peer's memory. */
BT_HIDDEN int bt_cuda_can_access_peer(int dev, int peer, int *yes, BtDiag *e);
/* cuCtxEnablePeerAccess / cuCtxDisablePeerAccess from dev's primary context
 * to peer's: idempotent (ALREADY_ENABLED, NOT_ENABLED are not errors). */
BT_HIDDEN int bt_cuda_enable_peer(int dev, int peer, BtDiag *e);
BT_HIDDEN int bt_cuda_disable_peer(int dev, int peer, BtDiag *e);
/* Whether bindthem enabled access from dev's primary context to peer's. */
BT_HIDDEN int bt_cuda_peer_enabled(int dev, int peer);
/* Queues copying n bytes from src (peer memory of src_dev) to dst (of
 * dst_dev) on stream, a stream of dst_dev (cuMemcpyPeerAsync; no peer
 * access needed); with `sync`, waits for the stream after. */
BT_HIDDEN int bt_cuda_copy_peer(int dst_dev, uint64_t dst, int src_dev, uint64_t src, size_t n,
                                uint64_t stream, int sync, BtDiag *e);
/* Makes `waiter`, a stream of waiter_dev, wait for the work queued so far on
 * `producer`, a stream of producer_dev (each read in its device's primary
 * context: 0, 1 and 2 name that device's own): an event made and recorded
 * there, waited for here. */
BT_HIDDEN int bt_cuda_wait_across(int waiter_dev, uint64_t waiter, int producer_dev,
                                  uint64_t producer, BtDiag *e);
/* ---- graphs and stream capture (bt_cuda_graph.c) ---- */

/* CUstreamCaptureMode and CUstreamCaptureStatus. */
enum { BT_CUDA_CAPTURE_GLOBAL = 0, BT_CUDA_CAPTURE_THREAD_LOCAL = 1, BT_CUDA_CAPTURE_RELAXED = 2 };
enum { BT_CUDA_CAPTURE_NONE = 0, BT_CUDA_CAPTURE_ACTIVE = 1, BT_CUDA_CAPTURE_INVALIDATED = 2 };
/* Whether the driver has graphs and stream capture (every entry point below). */
BT_HIDDEN int bt_cuda_has_graphs(void);
/* The capture status of `stream` (BT_CUDA_CAPTURE_*) and its capture sequence's
 * id (0: none, or a driver that cannot say), in the current context (0, 1 and 2
 * name its streams). Never fails: a driver without capture, or a query the
 * driver refuses (the legacy stream while a blocking stream captures: its
 * own use is refused then anyway), says NONE. No lock, no wait: cheap enough
 * for every launch. */
BT_HIDDEN void bt_cuda_capture_status(uint64_t stream, int *status, uint64_t *id);
/* cuStreamBeginCapture_v2 / cuStreamEndCapture in context ctx (made current
 * meanwhile). End gives the graph (NULL when the capture was invalidated:
 * then -1 with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, the capture ended). */
BT_HIDDEN int bt_cuda_capture_begin(void *ctx, uint64_t stream, int mode, BtDiag *e);
BT_HIDDEN int bt_cuda_capture_end(void *ctx, uint64_t stream, void **graph, BtDiag *e);
/* cuGraphInstantiateWithFlags(flags 0) and cuGraphLaunch, in context ctx. */
BT_HIDDEN int bt_cuda_graph_instantiate(void *ctx, void *graph, void **exec, BtDiag *e);
BT_HIDDEN int bt_cuda_graph_launch(void *ctx, void *exec, uint64_t stream, BtDiag *e);
/* cuGraphExecDestroy and cuGraphDestroy (either may be NULL; none in a child
 * of fork()). */
BT_HIDDEN void bt_cuda_graph_destroy(void *graph, void *exec);
/* Device memory on dev that no capture takes in: cuMemAlloc, the calling
 * thread's capture mode made relaxed around it (cuThreadExchangeStreamCaptureMode,
 * as the allocators of CuPy and PyTorch do), so that an allocation made while
 * a stream captures is neither refused nor a graph's. Freed with bt_cuda_free. */
BT_HIDDEN int bt_cuda_alloc_uncaptured(int dev, size_t nbytes, uint64_t *ptr, BtDiag *e);

#endif
