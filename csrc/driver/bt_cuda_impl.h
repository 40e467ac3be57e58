/* bt_cuda_impl.h - what the driver's files (bt_cuda*.c) share, and no one else:
 * the driver API's types, the PFN typedefs, the entry-point table `bt_cuda_drv` (one
 * object, defined in bt_cuda.c), its flags and CUresult's translation.
 * Callers include bt_cuda.h.
 *
 * The driver types and PFN typedefs below are declared here, as
 * cudaTypedefs.h spells them: each typedef's _vNNNNN suffix is the CUDA
 * version whose ABI we call, and exactly that number is what we pass to
 * cuGetProcAddress for it (never CUDA_VERSION, never the driver's version:
 * a newer driver could otherwise hand back a _v3 of a function we call with
 * the _v2 signature; cuCtxSynchronize, for one, took a context in 13.0). */
#ifndef BT_CUDA_IMPL_H
#define BT_CUDA_IMPL_H

#include "bt_cuda.h"

#include <pthread.h>

/* ---- driver API types (cuda.h), as of the versions noted ---- */
typedef int BtCUresult;                   /* enum cudaError_enum */
typedef int BtCUdevice;                   /* CUdevice_v1, CUDA 2.0 */
typedef unsigned long long BtCUdeviceptr; /* CUdeviceptr_v2, CUDA 3.2 */
typedef void *BtCUcontext, *BtCUmodule, *BtCUfunction, *BtCUstream, *BtCUlibrary, *BtCUkernel,
    *BtCUevent;
typedef int BtCUjit_option;         /* enum CUjit_option */
typedef int BtCUlibraryOption;      /* enum CUlibraryOption, CUDA 12.0 */
typedef int BtCUpointer_attribute;  /* enum CUpointer_attribute */
typedef int BtCUprocQuery;          /* CUdriverProcAddressQueryResult, CUDA 12.0 */
typedef int BtCUdevice_attribute;   /* enum CUdevice_attribute */
typedef int BtCUfunction_attribute; /* enum CUfunction_attribute */

enum {
    CUDA_SUCCESS_ = 0,
    CUDA_ERROR_INVALID_VALUE_ = 1,
    CUDA_ERROR_STUB_LIBRARY_ = 34,
    CUDA_ERROR_NO_DEVICE_ = 100,
    CUDA_ERROR_INVALID_PTX_ = 218,
    CUDA_ERROR_NOT_FOUND_ = 500,
    CUDA_ERROR_NOT_READY_ = 600,
    CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE_ = 720,
    CU_EVENT_DISABLE_TIMING_ = 2,
    CU_MEMHOSTALLOC_PORTABLE_ = 1,
    CU_POINTER_ATTRIBUTE_CONTEXT_ = 1,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM_ = 1 << 0,
    CU_GET_PROC_ADDRESS_SUCCESS_ = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND_ = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT_ = 2,
    CU_JIT_ERROR_LOG_BUFFER_ = 5,
    CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES_ = 6,
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE_ = 2,
    CU_POINTER_ATTRIBUTE_DEVICE_POINTER_ = 3,
    CU_POINTER_ATTRIBUTE_IS_MANAGED_ = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL_ = 9, /* CUDA 9.2 */
};

/* ---- PFN typedefs, named by the version we request ---- */
typedef BtCUresult (*PFN_cuDriverGetVersion_v2020)(int *);
typedef BtCUresult (*PFN_cuGetProcAddress_v11030)(const char *, void **, int, uint64_t);
typedef BtCUresult (*PFN_cuGetProcAddress_v12000)(const char *, void **, int, uint64_t,
                                                  BtCUprocQuery *);
typedef BtCUresult (*PFN_cuInit_v2000)(unsigned);
typedef BtCUresult (*PFN_cuGetErrorName_v6000)(BtCUresult, const char **);
typedef BtCUresult (*PFN_cuGetErrorString_v6000)(BtCUresult, const char **);
typedef BtCUresult (*PFN_cuDeviceGetCount_v2000)(int *);
typedef BtCUresult (*PFN_cuDeviceGet_v2000)(BtCUdevice *, int);
typedef BtCUresult (*PFN_cuDeviceGetName_v2000)(char *, int, BtCUdevice);
typedef BtCUresult (*PFN_cuDevicePrimaryCtxRetain_v7000)(BtCUcontext *, BtCUdevice);
typedef BtCUresult (*PFN_cuCtxGetCurrent_v4000)(BtCUcontext *);
typedef BtCUresult (*PFN_cuCtxSetCurrent_v4000)(BtCUcontext);
typedef BtCUresult (*PFN_cuCtxGetDevice_v2000)(BtCUdevice *);
typedef BtCUresult (*PFN_cuCtxSynchronize_v2000)(void);
typedef BtCUresult (*PFN_cuMemAlloc_v3020)(BtCUdeviceptr *, size_t);
typedef BtCUresult (*PFN_cuMemFree_v3020)(BtCUdeviceptr);
typedef BtCUresult (*PFN_cuMemcpyHtoD_v3020)(BtCUdeviceptr, const void *, size_t);
typedef BtCUresult (*PFN_cuMemcpyDtoH_v3020)(void *, BtCUdeviceptr, size_t);
typedef BtCUresult (*PFN_cuPointerGetAttributes_v7000)(unsigned, BtCUpointer_attribute *, void **,
                                                       BtCUdeviceptr);
typedef BtCUresult (*PFN_cuModuleLoadDataEx_v2010)(BtCUmodule *, const void *, unsigned,
                                                   BtCUjit_option *, void **);
typedef BtCUresult (*PFN_cuModuleGetFunction_v2000)(BtCUfunction *, BtCUmodule, const char *);
typedef BtCUresult (*PFN_cuModuleUnload_v2000)(BtCUmodule);
typedef BtCUresult (*PFN_cuLaunchKernel_v4000)(BtCUfunction, unsigned, unsigned, unsigned, unsigned,
                                               unsigned, unsigned, unsigned, BtCUstream, void **,
                                               void **);
typedef BtCUresult (*PFN_cuStreamSynchronize_v2000)(BtCUstream);
typedef BtCUresult (*PFN_cuLibraryLoadData_v12000)(BtCUlibrary *, const void *, BtCUjit_option *,
                                                   void **, unsigned, BtCUlibraryOption *, void **,
                                                   unsigned);
typedef BtCUresult (*PFN_cuLibraryUnload_v12000)(BtCUlibrary);
typedef BtCUresult (*PFN_cuLibraryGetKernel_v12000)(BtCUkernel *, BtCUlibrary, const char *);
typedef BtCUresult (*PFN_cuKernelGetName_v12030)(const char **, BtCUkernel);
typedef BtCUresult (*PFN_cuFuncGetName_v12030)(const char **, BtCUfunction);
typedef BtCUresult (*PFN_cuLibraryGetKernelCount_v12040)(unsigned *, BtCUlibrary);
typedef BtCUresult (*PFN_cuLibraryEnumerateKernels_v12040)(BtCUkernel *, unsigned, BtCUlibrary);
typedef BtCUresult (*PFN_cuModuleGetFunctionCount_v12040)(unsigned *, BtCUmodule);
typedef BtCUresult (*PFN_cuModuleEnumerateFunctions_v12040)(BtCUfunction *, unsigned, BtCUmodule);
typedef BtCUresult (*PFN_cuKernelGetParamInfo_v12040)(BtCUkernel, size_t, size_t *, size_t *);
typedef BtCUresult (*PFN_cuFuncGetParamInfo_v12040)(BtCUfunction, size_t, size_t *, size_t *);
typedef BtCUresult (*PFN_cuMemcpyHtoDAsync_v3020)(BtCUdeviceptr, const void *, size_t, BtCUstream);
typedef BtCUresult (*PFN_cuMemcpyDtoHAsync_v3020)(void *, BtCUdeviceptr, size_t, BtCUstream);
typedef BtCUresult (*PFN_cuMemsetD8Async_v3020)(BtCUdeviceptr, unsigned char, size_t, BtCUstream);
typedef BtCUresult (*PFN_cuMemHostAlloc_v2020)(void **, size_t, unsigned);
typedef BtCUresult (*PFN_cuMemFreeHost_v2000)(void *);
typedef BtCUresult (*PFN_cuEventCreate_v2000)(BtCUevent *, unsigned);
typedef BtCUresult (*PFN_cuEventRecord_v2000)(BtCUevent, BtCUstream);
typedef BtCUresult (*PFN_cuEventQuery_v2000)(BtCUevent);
typedef BtCUresult (*PFN_cuEventSynchronize_v2000)(BtCUevent);
typedef BtCUresult (*PFN_cuEventDestroy_v4000)(BtCUevent);
typedef BtCUresult (*PFN_cuEventElapsedTime_v2000)(float *, BtCUevent, BtCUevent);
typedef BtCUresult (*PFN_cuEventElapsedTime_v12080)(float *, BtCUevent, BtCUevent);
typedef BtCUresult (*PFN_cuStreamCreate_v2000)(BtCUstream *, unsigned);
typedef BtCUresult (*PFN_cuStreamDestroy_v4000)(BtCUstream);
typedef BtCUresult (*PFN_cuStreamWaitEvent_v3020)(BtCUstream, BtCUevent, unsigned);
typedef BtCUresult (*PFN_cuDeviceGetAttribute_v2000)(int *, BtCUdevice_attribute, BtCUdevice);
typedef BtCUresult (*PFN_cuFuncGetAttribute_v2020)(int *, BtCUfunction_attribute, BtCUfunction);
typedef BtCUresult (*PFN_cuFuncSetAttribute_v9000)(BtCUfunction, BtCUfunction_attribute, int);
typedef BtCUresult (*PFN_cuKernelGetAttribute_v12000)(int *, BtCUfunction_attribute, BtCUkernel,
                                                      BtCUdevice);
typedef BtCUresult (*PFN_cuKernelSetAttribute_v12000)(BtCUfunction_attribute, int, BtCUkernel,
                                                      BtCUdevice);
typedef BtCUresult (*PFN_cuKernelGetFunction_v12000)(BtCUfunction *, BtCUkernel);
typedef BtCUresult (*PFN_cuStreamGetCtx_v9020)(BtCUstream, BtCUcontext *);
/* CUlaunchAttribute (11.6): an id, padding to 8 bytes, a 64-byte value union */
typedef struct BtCUlaunchAttribute {
    int id;
    char pad[4];
    union {
        char pad[64];
        int cooperative, priority;
        struct {
            unsigned x, y, z;
        } cluster;
    } value;
} BtCUlaunchAttribute;
typedef struct BtCUlaunchConfig { /* CUlaunchConfig, CUDA 11.6 */
    unsigned grid[3], block[3], shared;
    BtCUstream stream;
    BtCUlaunchAttribute *attrs;
    unsigned n_attrs;
} BtCUlaunchConfig;
typedef void *BtCUmemoryPool;
typedef int BtCUmemPool_attribute;           /* enum CUmemPool_attribute, CUDA 11.2 */
typedef size_t (*BtCUoccupancyB2DSize)(int); /* CUDA 6.5 */
typedef BtCUresult (*PFN_cuLaunchKernelEx_v11060)(const BtCUlaunchConfig *, BtCUfunction, void **,
                                                  void **);
typedef BtCUresult (*PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050)(int *, BtCUfunction,
                                                                            int, size_t);
typedef BtCUresult (*PFN_cuOccupancyMaxPotentialBlockSize_v6050)(int *, int *, BtCUfunction,
                                                                 BtCUoccupancyB2DSize, size_t, int);
typedef BtCUresult (*PFN_cuModuleGetGlobal_v3020)(BtCUdeviceptr *, size_t *, BtCUmodule,
                                                  const char *);
typedef BtCUresult (*PFN_cuLibraryGetGlobal_v12000)(BtCUdeviceptr *, size_t *, BtCUlibrary,
                                                    const char *);
typedef BtCUresult (*PFN_cuMemAllocAsync_v11020)(BtCUdeviceptr *, size_t, BtCUstream);
typedef BtCUresult (*PFN_cuMemFreeAsync_v11020)(BtCUdeviceptr, BtCUstream);
typedef BtCUresult (*PFN_cuDeviceGetDefaultMemPool_v11020)(BtCUmemoryPool *, BtCUdevice);
typedef BtCUresult (*PFN_cuMemPoolSetAttribute_v11020)(BtCUmemoryPool, BtCUmemPool_attribute,
                                                       void *);
typedef BtCUresult (*PFN_cuMemcpyAsync_v4000)(BtCUdeviceptr, BtCUdeviceptr, size_t, BtCUstream);
/* ---- graphs and stream capture (bt_cuda_graph.c) ---- */
typedef void *BtCUgraph, *BtCUgraphExec, *BtCUgraphNode;
typedef int BtCUstreamCaptureMode;   /* enum CUstreamCaptureMode, CUDA 10.1 */
typedef int BtCUstreamCaptureStatus; /* enum CUstreamCaptureStatus, CUDA 10.0 */
typedef BtCUresult (*PFN_cuStreamBeginCapture_v10010)(BtCUstream, BtCUstreamCaptureMode);
typedef BtCUresult (*PFN_cuStreamEndCapture_v10000)(BtCUstream, BtCUgraph *);
typedef BtCUresult (*PFN_cuStreamIsCapturing_v10000)(BtCUstream, BtCUstreamCaptureStatus *);
typedef BtCUresult (*PFN_cuStreamGetCaptureInfo_v11030)(BtCUstream, BtCUstreamCaptureStatus *,
                                                        uint64_t *, BtCUgraph *,
                                                        const BtCUgraphNode **, size_t *);
typedef BtCUresult (*PFN_cuGraphInstantiateWithFlags_v11040)(BtCUgraphExec *, BtCUgraph,
                                                             unsigned long long);
typedef BtCUresult (*PFN_cuGraphLaunch_v10000)(BtCUgraphExec, BtCUstream);
typedef BtCUresult (*PFN_cuGraphExecDestroy_v10000)(BtCUgraphExec);
typedef BtCUresult (*PFN_cuGraphDestroy_v10000)(BtCUgraph);
typedef BtCUresult (*PFN_cuThreadExchangeStreamCaptureMode_v10010)(BtCUstreamCaptureMode *);

/* ---- managed memory and peer access (bt_cuda_managed.c, bt_cuda_peer.c) ---- */
typedef struct BtCUmemLocation { /* CUmemLocation, CUDA 11.2 */
    int type;                    /* CUmemLocationType: 1 device, 2 host */
    int id;
} BtCUmemLocation;
typedef BtCUresult (*PFN_cuMemAllocManaged_v6000)(BtCUdeviceptr *, size_t, unsigned);
/* 12.2 added the CUmemLocation ABIs (cuMemPrefetchAsync_v2, cuMemAdvise_v2);
 * CUDA 13 gave them the plain names and dropped the device-ordinal ones: the
 * 12020 ABI is asked for by its plain name, the 8000 one where it is missing */
typedef BtCUresult (*PFN_cuMemPrefetchAsync_v12020)(BtCUdeviceptr, size_t, BtCUmemLocation,
                                                    unsigned, BtCUstream);
typedef BtCUresult (*PFN_cuMemPrefetchAsync_v8000)(BtCUdeviceptr, size_t, BtCUdevice, BtCUstream);
typedef BtCUresult (*PFN_cuMemAdvise_v12020)(BtCUdeviceptr, size_t, int, BtCUmemLocation);
typedef BtCUresult (*PFN_cuMemAdvise_v8000)(BtCUdeviceptr, size_t, int, BtCUdevice);
typedef BtCUresult (*PFN_cuDeviceCanAccessPeer_v4000)(int *, BtCUdevice, BtCUdevice);
typedef BtCUresult (*PFN_cuCtxEnablePeerAccess_v4000)(BtCUcontext, unsigned);
typedef BtCUresult (*PFN_cuCtxDisablePeerAccess_v4000)(BtCUcontext);
typedef BtCUresult (*PFN_cuMemcpyPeerAsync_v4000)(BtCUdeviceptr, BtCUcontext, BtCUdeviceptr,
                                                  BtCUcontext, size_t, BtCUstream);

typedef struct Driver {
    void *dl;
    int ready;
    int version;
    char path[1024];
    PFN_cuGetProcAddress_v12000 getproc2; /* 12.0+: says why a symbol is missing */
    PFN_cuGetProcAddress_v11030 getproc1;
    PFN_cuInit_v2000 cuInit;
    PFN_cuGetErrorName_v6000 cuGetErrorName;
    PFN_cuGetErrorString_v6000 cuGetErrorString;
    PFN_cuDeviceGetCount_v2000 cuDeviceGetCount;
    PFN_cuDeviceGet_v2000 cuDeviceGet;
    PFN_cuDeviceGetName_v2000 cuDeviceGetName;
    PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
    PFN_cuCtxGetCurrent_v4000 cuCtxGetCurrent;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxGetDevice_v2000 cuCtxGetDevice;
    PFN_cuCtxSynchronize_v2000 cuCtxSynchronize;
    PFN_cuMemAlloc_v3020 cuMemAlloc;
    PFN_cuMemFree_v3020 cuMemFree;
    PFN_cuMemcpyHtoD_v3020 cuMemcpyHtoD;
    PFN_cuMemcpyDtoH_v3020 cuMemcpyDtoH;
    PFN_cuPointerGetAttributes_v7000 cuPointerGetAttributes;
    PFN_cuModuleLoadDataEx_v2010 cuModuleLoadDataEx;
    PFN_cuModuleGetFunction_v2000 cuModuleGetFunction;
    PFN_cuModuleUnload_v2000 cuModuleUnload;
    PFN_cuLaunchKernel_v4000 cuLaunchKernel;
    PFN_cuStreamSynchronize_v2000 cuStreamSynchronize;
    PFN_cuMemcpyHtoDAsync_v3020 cuMemcpyHtoDAsync;
    PFN_cuMemcpyDtoHAsync_v3020 cuMemcpyDtoHAsync;
    PFN_cuMemsetD8Async_v3020 cuMemsetD8Async;
    PFN_cuMemHostAlloc_v2020 cuMemHostAlloc;
    PFN_cuMemFreeHost_v2000 cuMemFreeHost;
    PFN_cuEventCreate_v2000 cuEventCreate;
    PFN_cuEventRecord_v2000 cuEventRecord;
    PFN_cuEventQuery_v2000 cuEventQuery;
    PFN_cuEventSynchronize_v2000 cuEventSynchronize;
    PFN_cuEventDestroy_v4000 cuEventDestroy;
    PFN_cuStreamWaitEvent_v3020 cuStreamWaitEvent;
    PFN_cuStreamCreate_v2000 cuStreamCreate;
    PFN_cuStreamDestroy_v4000 cuStreamDestroy;
    /* 12.8 renamed the ABI (same parameters; the 2.0 one is deprecated in
     * 13.0): the newer where the driver has it, else the older */
    PFN_cuEventElapsedTime_v12080 cuEventElapsedTime;
    PFN_cuEventElapsedTime_v2000 cuEventElapsedTime_v1;
    /* optional: requested only from drivers at least as new */
    PFN_cuLibraryLoadData_v12000 cuLibraryLoadData;
    PFN_cuLibraryUnload_v12000 cuLibraryUnload;
    PFN_cuLibraryGetKernel_v12000 cuLibraryGetKernel;
    PFN_cuKernelGetName_v12030 cuKernelGetName;
    PFN_cuFuncGetName_v12030 cuFuncGetName;
    PFN_cuLibraryGetKernelCount_v12040 cuLibraryGetKernelCount;
    PFN_cuLibraryEnumerateKernels_v12040 cuLibraryEnumerateKernels;
    PFN_cuModuleGetFunctionCount_v12040 cuModuleGetFunctionCount;
    PFN_cuModuleEnumerateFunctions_v12040 cuModuleEnumerateFunctions;
    PFN_cuKernelGetParamInfo_v12040 cuKernelGetParamInfo;
    PFN_cuFuncGetParamInfo_v12040 cuFuncGetParamInfo;
    PFN_cuDeviceGetAttribute_v2000 cuDeviceGetAttribute;
    PFN_cuFuncGetAttribute_v2020 cuFuncGetAttribute;
    PFN_cuFuncSetAttribute_v9000 cuFuncSetAttribute;
    PFN_cuKernelGetAttribute_v12000 cuKernelGetAttribute;
    PFN_cuKernelSetAttribute_v12000 cuKernelSetAttribute;
    PFN_cuKernelGetFunction_v12000 cuKernelGetFunction;
    PFN_cuStreamGetCtx_v9020 cuStreamGetCtx;
    BtCUcontext primary[BT_CUDA_MAX_DEVICES];
    int forked;   /* this is a child of fork() after init: no call may be made (FORKED) */
    int n_sticky; /* contexts a sticky error made unusable (bt_cuda.c's table; STICKY) */
    PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050
        cuOccupancyMaxActiveBlocksPerMultiprocessor;
    PFN_cuOccupancyMaxPotentialBlockSize_v6050 cuOccupancyMaxPotentialBlockSize;
    PFN_cuModuleGetGlobal_v3020 cuModuleGetGlobal;
    PFN_cuMemcpyAsync_v4000 cuMemcpyAsync;
    PFN_cuLaunchKernelEx_v11060 cuLaunchKernelEx;
    PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
    PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
    PFN_cuDeviceGetDefaultMemPool_v11020 cuDeviceGetDefaultMemPool;
    PFN_cuMemPoolSetAttribute_v11020 cuMemPoolSetAttribute;
    PFN_cuLibraryGetGlobal_v12000 cuLibraryGetGlobal;
    /* graphs and stream capture (bt_cuda_graph.c), all optional: a driver without
     * one of them has no graphs (BT_DIAG_UNSUPPORTED), and no capture is ever seen */
    PFN_cuStreamBeginCapture_v10010 cuStreamBeginCapture;
    PFN_cuStreamEndCapture_v10000 cuStreamEndCapture;
    PFN_cuStreamIsCapturing_v10000 cuStreamIsCapturing;
    PFN_cuStreamGetCaptureInfo_v11030 cuStreamGetCaptureInfo;
    PFN_cuGraphInstantiateWithFlags_v11040 cuGraphInstantiateWithFlags;
    PFN_cuGraphLaunch_v10000 cuGraphLaunch;
    PFN_cuGraphExecDestroy_v10000 cuGraphExecDestroy;
    PFN_cuGraphDestroy_v10000 cuGraphDestroy;
    PFN_cuThreadExchangeStreamCaptureMode_v10010 cuThreadExchangeStreamCaptureMode;
    /* stream-ordered allocation: 0 not asked, 1 yes, -1 no (asked under `once`, published
     * with release) */
    int pools[BT_CUDA_MAX_DEVICES];
    /* managed memory and peer access (bt_cuda_managed.c, bt_cuda_peer.c): optional; the
     * 12.2 CUmemLocation ABIs, else (older drivers) the 8.0 ones */
    PFN_cuMemAllocManaged_v6000 cuMemAllocManaged;
    PFN_cuMemPrefetchAsync_v12020 cuMemPrefetchAsync;
    PFN_cuMemPrefetchAsync_v8000 cuMemPrefetchAsync_v1;
    PFN_cuMemAdvise_v12020 cuMemAdvise;
    PFN_cuMemAdvise_v8000 cuMemAdvise_v1;
    PFN_cuDeviceCanAccessPeer_v4000 cuDeviceCanAccessPeer;
    PFN_cuCtxEnablePeerAccess_v4000 cuCtxEnablePeerAccess;
    PFN_cuCtxDisablePeerAccess_v4000 cuCtxDisablePeerAccess;
    PFN_cuMemcpyPeerAsync_v4000 cuMemcpyPeerAsync;
} Driver;

/* The driver table: one object, defined in bt_cuda.c; every driver file
 * reads it. */
BT_HIDDEN extern Driver bt_cuda_drv;

/* Threads read the flags with no lock (free-threaded CPython): relaxed
 * atomics, plain loads on x86-64 and aarch64. `forked` is set in the child
 * of fork(), where only the forking thread runs; `n_sticky` grows under
 * bt_cuda.c's lock, once an entry is written. STICKY(): whether the current
 * context is one a fault broke (a load while no context faulted). */
#define FORKED() __atomic_load_n(&bt_cuda_drv.forked, __ATOMIC_RELAXED)
#define STICKY() (__atomic_load_n(&bt_cuda_drv.n_sticky, __ATOMIC_ACQUIRE) && bt_cuda_sticky_here())

/* Whether driver calls may be made: initialized, and not in a child of
 * fork() (which must not free what its parent allocated). */
#define LIVE() (__atomic_load_n(&bt_cuda_drv.ready, __ATOMIC_ACQUIRE) && !FORKED())

/* Threads may ask at once (free-threaded CPython): one loads the driver
 * or retains a primary context, under `once`; bt_cuda_drv.ready and bt_cuda_drv.primary[]
 * are published last (release) and read with acquire, so a thread that
 * sees them sees what they stand for. */
BT_HIDDEN extern pthread_mutex_t bt_cuda_once;

/* CUresult into a BtDiag, and the texts that say it (bt_cuda.c). */
/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
BT_HIDDEN void bt_cuda_describe(BtCUresult r, char *buf, size_t size);
/* The current context's remembered sticky error, reported for `what` (the
 * call that met it, not its cause). Always -1. */
BT_HIDDEN int bt_cuda_sticky_fail(BtDiag *e, const char *what);
/* The current context's sticky error (bt_cuda.c's table), else 0. */
BT_HIDDEN BtCUresult bt_cuda_sticky_here(void);
/* A child of fork() made after bt_cuda_init: it shares no CUDA state with
 * its parent, so nothing may be called (nor freed). Always -1. */
BT_HIDDEN int bt_cuda_fork_fail(BtDiag *e);
/* Records a failed driver call: "cuMemAlloc(64 bytes): CUDA_ERROR_..." */
BT_HIDDEN int bt_cuda_fail(BtDiag *e, BtCUresult r, const char *fmt, ...) BT_PRINTF(3, 4);
/* "12.4" for a driver version of 12040. */
BT_HIDDEN void bt_cuda_version_text(int v, char *buf, size_t size);
/* BT_DIAG_UNSUPPORTED: `what` needs a CUDA `since` or newer driver. */
BT_HIDDEN int bt_cuda_unsupported(BtDiag *e, const char *what, const char *since);

/* Makes dev 0's primary context current when the thread has none
 * (bt_cuda_ctx.c). */
BT_HIDDEN int bt_cuda_some_ctx(BtDiag *e);

#endif
