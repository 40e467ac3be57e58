/* bt_cuda.c - libcuda via dlopen + cuGetProcAddress; CUresult translated.
 *
 * The driver types and PFN typedefs below are declared here, as
 * cudaTypedefs.h spells them: each typedef's _vNNNNN suffix is the CUDA
 * version whose ABI we call, and exactly that number is what we pass to
 * cuGetProcAddress for it (never CUDA_VERSION, never the driver's version:
 * a newer driver could otherwise hand back a _v3 of a function we call with
 * the _v2 signature; cuCtxSynchronize, for one, took a context in 13.0). */
#define _GNU_SOURCE
#include "bt_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    int forked;          /* this is a child of fork() after init: no call may be made (FORKED) */
    BtCUresult sticky;   /* the first sticky error seen: the context is unusable (STICKY) */
    char sticky_at[256]; /* the call that first reported it (written once, under sticky_lock) */
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
    /* stream-ordered allocation: 0 not asked, 1 yes, -1 no (asked under `once`, published
     * with release) */
    int pools[BT_CUDA_MAX_DEVICES];
} Driver;

static Driver drv;

/* Threads read the flags with no lock (free-threaded CPython): relaxed
 * atomics, plain loads on x86-64 and aarch64. `forked` is set in the child
 * of fork(), where only the forking thread runs; `sticky` is set once,
 * under sticky_lock with its text, and only ever read after. */
#define FORKED() __atomic_load_n(&drv.forked, __ATOMIC_RELAXED)
#define STICKY() __atomic_load_n(&drv.sticky, __ATOMIC_RELAXED)
static pthread_mutex_t sticky_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether driver calls may be made: initialized, and not in a child of
 * fork() (which must not free what its parent allocated). */
#define LIVE() (__atomic_load_n(&drv.ready, __ATOMIC_ACQUIRE) && !FORKED())

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
};
#undef EP

/* Asked for only when the driver lacks the newer ABI (12080 above). */
static const EntryPoint older_abis[] = {
    {"cuEventElapsedTime", 2000, 0, offsetof(Driver, cuEventElapsedTime_v1)},
};

struct BtCudaModule {
    BtCUlibrary lib; /* cuLibraryLoadData (12.0+) */
    BtCUmodule mod;  /* cuModuleLoadDataEx, in device's primary context */
    int device;
    char *image; /* our NUL-terminated copy, alive as long as the module */
    /* the PTX JIT's log buffer, given at load time and alive as long as the
     * module: with lazy loading (CUDA_MODULE_LOADING=LAZY, the default since
     * 12.2) the JIT may run later, at cuLibraryGetKernel or the first launch */
    char log[4096];
};

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)" */
static void describe(BtCUresult r, char *buf, size_t size)
{
    const char *name = NULL, *text = NULL;

    if (drv.cuGetErrorName && drv.cuGetErrorName(r, &name) != CUDA_SUCCESS_)
        name = NULL;
    if (drv.cuGetErrorString && drv.cuGetErrorString(r, &text) != CUDA_SUCCESS_)
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

/* The remembered sticky error, reported for `what` (the call that met it,
 * not its cause). Always -1. */
static int sticky_fail(BtDiag *e, const char *what)
{
    char why[512], at[sizeof drv.sticky_at];
    BtCUresult code;

    pthread_mutex_lock(&sticky_lock);
    code = drv.sticky;
    memcpy(at, drv.sticky_at, sizeof at);
    pthread_mutex_unlock(&sticky_lock);
    describe(code, why, sizeof why);
    return bt_diag_fail(e, BT_DIAG_CUDA, code,
                        "an earlier kernel faulted: %s (a sticky error, first reported by %s); "
                        "the CUDA context is unusable until the process restarts: %s was "
                        "refused, and every later CUDA call will be (find the faulting kernel "
                        "with compute-sanitizer, or CUDA_LAUNCH_BLOCKING=1)",
                        why, at, what);
}

/* A child of fork() made after bt_cuda_init: it shares no CUDA state with
 * its parent, so nothing may be called (nor freed). Always -1. */
static int fork_fail(BtDiag *e)
{
    return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                        "CUDA was initialized before this process was forked: a child of "
                        "fork() cannot use its parent's CUDA driver state (its memory, "
                        "streams, modules); use CUDA in the child only after a fresh start: "
                        "multiprocessing.get_context('spawn') or 'forkserver', or "
                        "concurrent.futures with mp_context=that context");
}

static void forked_child(void) { __atomic_store_n(&drv.forked, 1, __ATOMIC_RELAXED); }

/* Records a failed driver call: "cuMemAlloc(64 bytes): CUDA_ERROR_..." */
static int cu_fail(BtDiag *e, BtCUresult r, const char *fmt, ...) BT_PRINTF(3, 4);

static int cu_fail(BtDiag *e, BtCUresult r, const char *fmt, ...)
{
    char what[1024], why[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    describe(r, why, sizeof why);
    if (bt_cuda_is_sticky(r)) {
        pthread_mutex_lock(&sticky_lock); /* threads that fault at once: the first text stays */
        if (!drv.sticky) {
            snprintf(drv.sticky_at, sizeof drv.sticky_at, "%.255s", what);
            __atomic_store_n(&drv.sticky, r, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&sticky_lock);
        return sticky_fail(e, what);
    }
    if (r == CUDA_ERROR_STUB_LIBRARY_)
        return bt_diag_fail(
            e, BT_DIAG_NODRIVER, r,
            "no CUDA driver: %s is the CUDA toolkit's stub library "
            "(CUDA_ERROR_STUB_LIBRARY from %s); install the NVIDIA driver, or point "
            "BINDTHEM_LIBCUDA at the real libcuda.so.1",
            drv.path, what);
    return bt_diag_fail(e, BT_DIAG_CUDA, r, "%s failed: %s", what, why);
}

static void version_text(int v, char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* One entry point at exactly ep->version. 0, or -1 with why in e. */
static int resolve(const EntryPoint *ep, BtDiag *e)
{
    void *fn = NULL;
    BtCUprocQuery q = CU_GET_PROC_ADDRESS_SUCCESS_;
    BtCUresult r;
    char want[32], have[32];

    if (drv.getproc2)
        r = drv.getproc2(ep->name, &fn, ep->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM_, &q);
    else
        r = drv.getproc1(ep->name, &fn, ep->version, CU_GET_PROC_ADDRESS_LEGACY_STREAM_);
    if (r == CUDA_SUCCESS_ && q == CU_GET_PROC_ADDRESS_SUCCESS_ && fn) {
        *(void **)((char *)&drv + ep->offset) = fn;
        return 0;
    }
    if (ep->optional)
        return 0;
    version_text(ep->version, want, sizeof want);
    version_text(drv.version, have, sizeof have);
    if (r == CUDA_ERROR_STUB_LIBRARY_)
        return cu_fail(e, r, "cuGetProcAddress(\"%s\")", ep->name);
    if (q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT_)
        return bt_diag_fail(
            e, BT_DIAG_CUDA, r,
            "cuGetProcAddress(\"%s\", cudaVersion=%d): "
            "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: the CUDA %s driver (%s) has "
            "%s, but no version of it as old as the CUDA %s ABI bindthem calls",
            ep->name, ep->version, have, drv.path, ep->name, want);
    if (q == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND_)
        return bt_diag_fail(e, BT_DIAG_CUDA, r,
                            "cuGetProcAddress(\"%s\", cudaVersion=%d): "
                            "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: the CUDA %s driver (%s) has no "
                            "entry point %s (the driver is older than CUDA %s, or the name is "
                            "misspelled)",
                            ep->name, ep->version, have, drv.path, ep->name, want);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r,
                       "cuGetProcAddress(\"%s\", cudaVersion=%d) (a CUDA %s driver's "
                       "cuGetProcAddress does not say why)",
                       ep->name, ep->version, have);
    return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                        "cuGetProcAddress(\"%s\", cudaVersion=%d) returned no "
                        "function (driver %s, %s)",
                        ep->name, ep->version, have, drv.path);
}

/* Threads may ask at once (free-threaded CPython): one loads the driver
 * or retains a primary context, under `once`; drv.ready and drv.primary[]
 * are published last (release) and read with acquire, so a thread that
 * sees them sees what they stand for. */
static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;

static int ready(void) { return __atomic_load_n(&drv.ready, __ATOMIC_ACQUIRE); }

static int load_driver(BtDiag *e);

int bt_cuda_init(BtDiag *e)
{
    int rc;

    if (ready()) /* a forked child never takes `once`: another thread may have held it */
        return FORKED() ? fork_fail(e) : 0;
    pthread_mutex_lock(&once);
    rc = drv.ready ? (FORKED() ? fork_fail(e) : 0) : load_driver(e);
    pthread_mutex_unlock(&once);
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
    if (!drv.dl) {
        drv.dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!drv.dl) {
            const char *why = dlerror();
            return bt_diag_fail(
                e, BT_DIAG_NODRIVER, 0,
                "no CUDA driver: cannot load %s (%s); install the NVIDIA driver, or "
                "set BINDTHEM_LIBCUDA to the path of libcuda.so.1",
                path, why ? why : "dlopen failed");
        }
        snprintf(drv.path, sizeof drv.path, "%s", path);
    }
    getversion = (PFN_cuDriverGetVersion_v2020)dlsym(drv.dl, "cuDriverGetVersion");
    if (!getversion)
        return bt_diag_fail(e, BT_DIAG_NODRIVER, 0, "no CUDA driver: %s has no cuDriverGetVersion",
                            drv.path);
    r = getversion(&drv.version);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDriverGetVersion");
    version_text(drv.version, have, sizeof have);
    if (drv.version < 11030)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                            "the CUDA driver (%s) is version %s; bindthem needs 11.3 or newer "
                            "(cuGetProcAddress)",
                            drv.path, have);
    /* in 12.x headers cuGetProcAddress is #defined to cuGetProcAddress_v2 */
    drv.getproc2 = (PFN_cuGetProcAddress_v12000)dlsym(drv.dl, "cuGetProcAddress_v2");
    drv.getproc1 = (PFN_cuGetProcAddress_v11030)dlsym(drv.dl, "cuGetProcAddress");
    if (!drv.getproc2 && !drv.getproc1)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0,
                            "the CUDA %s driver (%s) exports no cuGetProcAddress", have, drv.path);
    for (i = 0; i < sizeof entry_points / sizeof entry_points[0]; i++) {
        const EntryPoint *ep = &entry_points[i];
        if (ep->optional && drv.version < ep->version)
            continue;
        if (resolve(ep, e) < 0)
            return -1;
    }
    if (!drv.cuEventElapsedTime && resolve(&older_abis[0], e) < 0)
        return -1;
    r = drv.cuInit(0);
    if (r == CUDA_ERROR_NO_DEVICE_)
        return bt_diag_fail(e, BT_DIAG_NODRIVER, r,
                            "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE "
                            "(driver %s, %s)",
                            have, drv.path);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuInit");
    /* the library API comes as a set; without one of them, use modules */
    if (!drv.cuLibraryLoadData || !drv.cuLibraryGetKernel || !drv.cuLibraryUnload)
        drv.cuLibraryLoadData = NULL;
    if (pthread_atfork(NULL, NULL, forked_child) != 0)
        return bt_diag_fail(e, BT_DIAG_NOMEM, 0, "pthread_atfork: out of memory");
    __atomic_store_n(&drv.ready, 1, __ATOMIC_RELEASE);
    return 0;
}

int bt_cuda_driver_version(void) { return ready() ? drv.version : 0; }
const char *bt_cuda_driver_path(void) { return drv.path; }
int bt_cuda_uses_library_api(void) { return drv.cuLibraryLoadData != NULL; }

int bt_cuda_device_count(int *n, BtDiag *e)
{
    BtCUresult r;

    *n = 0;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = drv.cuDeviceGetCount(n);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDeviceGetCount");
    return 0;
}

void bt_cuda_device_label(int dev, char *buf, size_t size)
{
    char name[256];
    BtCUdevice d;

    if (ready() && drv.cuDeviceGet(&d, dev) == CUDA_SUCCESS_ &&
        drv.cuDeviceGetName(name, (int)sizeof name, d) == CUDA_SUCCESS_)
        snprintf(buf, size, "device %d (%s)", dev, name);
    else
        snprintf(buf, size, "device %d", dev);
}

/* Retains device dev's primary context into drv.primary[dev] (`once` held). */
static int retain_primary(int dev, BtDiag *e)
{
    BtCUcontext c = NULL;
    BtCUdevice d;
    BtCUresult r;
    int n;

    if (drv.primary[dev])
        return 0;
    if (bt_cuda_device_count(&n, e) < 0)
        return -1;
    if (dev >= n)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "there is no CUDA device %d (%d device%s)", dev, n,
                            n == 1 ? "" : "s");
    r = drv.cuDeviceGet(&d, dev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDeviceGet(%d)", dev);
    r = drv.cuDevicePrimaryCtxRetain(&c, d);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDevicePrimaryCtxRetain(device %d)", dev);
    __atomic_store_n(&drv.primary[dev], c, __ATOMIC_RELEASE);
    return 0;
}

static int primary(int dev, BtCUcontext *ctx, BtDiag *e)
{
    int rc = 0;

    if (bt_cuda_init(e) < 0)
        return -1;
    if (dev < 0 || dev >= BT_CUDA_MAX_DEVICES)
        return bt_diag_fail(e, BT_DIAG_CUDA, 0, "device %d is out of range", dev);
    if (!__atomic_load_n(&drv.primary[dev], __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&once);
        rc = retain_primary(dev, e);
        pthread_mutex_unlock(&once);
    }
    *ctx = drv.primary[dev];
    return rc;
}

int bt_cuda_use_device(int dev, BtDiag *e)
{
    BtCUcontext want = NULL;
    void *prev;

    if (primary(dev, &want, e) < 0)
        return -1;
    return bt_cuda_enter(want, &prev, e); /* left current: no leave */
}

int bt_cuda_primary_ctx(int dev, void **ctx, BtDiag *e)
{
    BtCUcontext c = NULL;

    *ctx = NULL;
    if (primary(dev, &c, e) < 0)
        return -1;
    *ctx = c;
    return 0;
}

int bt_cuda_enter(void *ctx, void **prev, BtDiag *e)
{
    BtCUcontext cur = NULL;
    BtCUresult r;

    *prev = NULL;
    if (FORKED())
        return fork_fail(e);
    r = drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuCtxGetCurrent");
    *prev = cur;
    if (cur == ctx)
        return 0;
    r = drv.cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuCtxSetCurrent");
    return 0;
}

void bt_cuda_leave(void *ctx, void *prev)
{
    /* a thread that had no context keeps the one it was given (as CuPy and
     * numba leave it); one that had its own gets it back */
    if (prev && prev != ctx)
        drv.cuCtxSetCurrent(prev);
}

int bt_cuda_current_ctx(void **ctx, BtDiag *e)
{
    BtCUcontext cur = NULL;
    BtCUresult r;

    *ctx = NULL;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuCtxGetCurrent");
    *ctx = cur;
    return 0;
}

/* Makes dev 0's primary context current when the thread has none. */
static int some_ctx(BtDiag *e)
{
    void *cur;

    if (bt_cuda_current_ctx(&cur, e) < 0)
        return -1;
    return cur ? 0 : bt_cuda_use_device(0, e);
}

int bt_cuda_current_device(int *dev, BtDiag *e)
{
    void *cur;
    BtCUdevice d = 0;
    BtCUresult r;

    *dev = 0;
    if (bt_cuda_current_ctx(&cur, e) < 0)
        return -1;
    if (!cur)
        return 0;
    r = drv.cuCtxGetDevice(&d);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuCtxGetDevice");
    *dev = d;
    return 0;
}

int bt_cuda_alloc(int dev, size_t nbytes, uint64_t *ptr, BtDiag *e)
{
    BtCUdeviceptr p = 0;
    void *ctx, *prev;
    BtCUresult r;

    *ptr = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = drv.cuMemAlloc(&p, nbytes ? nbytes : 1);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuMemAlloc(%zu bytes) on device %d", nbytes, dev);
    *ptr = p;
    return 0;
}

/* cuMemFree, or cuMemFreeAsync on the legacy stream, in dev's primary
 * context; nothing in a child of fork(). */
static void free_in(int dev, uint64_t ptr, int async)
{
    void *ctx, *prev;
    BtDiag e;

    bt_diag_init(&e);
    if (!LIVE() || !ptr || dev < 0 || dev >= BT_CUDA_MAX_DEVICES ||
        !(ctx = __atomic_load_n(&drv.primary[dev], __ATOMIC_ACQUIRE)))
        return;
    if (bt_cuda_enter(ctx, &prev, &e) < 0)
        return;
    if (async)
        drv.cuMemFreeAsync(ptr, (BtCUstream)(uintptr_t)BT_CUDA_STREAM_LEGACY);
    else
        drv.cuMemFree(ptr);
    bt_cuda_leave(ctx, prev);
}

void bt_cuda_free(int dev, uint64_t ptr) { free_in(dev, ptr, 0); }

int bt_cuda_copy(int dev, BtCudaCopyDir dir, uint64_t dptr, void *host, size_t n, uint64_t stream,
                 uint64_t after, int sync, BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if (after && bt_cuda_stream_wait(stream, after, e) < 0)
        goto done;
    if (n) {
        if (dir == BT_CUDA_HTOD)
            r = drv.cuMemcpyHtoDAsync(dptr, host, n, (BtCUstream)(uintptr_t)stream);
        else
            r = drv.cuMemcpyDtoHAsync(host, dptr, n, (BtCUstream)(uintptr_t)stream);
        if (r != CUDA_SUCCESS_) {
            cu_fail(e, r, "%s(%zu bytes, stream 0x%llx)",
                    dir == BT_CUDA_HTOD ? "cuMemcpyHtoDAsync" : "cuMemcpyDtoHAsync", n,
                    (unsigned long long)stream);
            goto done;
        }
    }
    if (sync && bt_cuda_stream_sync(stream, e) < 0)
        goto done;
    rc = 0;
done:
    bt_cuda_leave(ctx, prev);
    return rc;
}

int bt_cuda_memset(int dev, uint64_t dptr, size_t n, uint64_t stream, BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = n ? drv.cuMemsetD8Async(dptr, 0, n, (BtCUstream)(uintptr_t)stream) : CUDA_SUCCESS_;
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuMemsetD8Async(%zu bytes)", n);
    return 0;
}

int bt_cuda_pointer_info(uint64_t ptr, BtCudaPtrInfo *out, BtDiag *e)
{
    /* the driver writes 4-byte or pointer-sized values; zeroed 8-byte
     * slots read back right either way on a little-endian host */
    BtCUpointer_attribute attrs[5] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE_, CU_POINTER_ATTRIBUTE_IS_MANAGED_,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL_, CU_POINTER_ATTRIBUTE_DEVICE_POINTER_,
        CU_POINTER_ATTRIBUTE_CONTEXT_};
    uint64_t vals[5] = {0, 0, 0, 0, 0};
    void *data[5] = {&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]};
    BtCUresult r;

    memset(out, 0, sizeof *out);
    out->device = -1;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = drv.cuPointerGetAttributes(5, attrs, data, ptr);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuPointerGetAttributes(0x%llx)", (unsigned long long)ptr);
    out->memtype = (int)(uint32_t)vals[0];
    out->managed = (vals[1] & 0xff) != 0;
    out->device = out->memtype ? (int)(int32_t)(uint32_t)vals[2] : -1;
    out->devptr = vals[3];
    out->ctx = (void *)(uintptr_t)vals[4];
    return 0;
}

BtCudaModule *bt_cuda_module_load(const void *image, size_t len, int dev, BtDiag *e)
{
    BtCudaModule *m = NULL;
    BtCUjit_option opts[2] = {CU_JIT_ERROR_LOG_BUFFER_, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES_};
    void *vals[2];
    BtCUresult r;

    if (bt_cuda_init(e) < 0)
        return NULL;
    m = calloc(1, sizeof *m);
    if (m)
        m->image = malloc(len + 1);
    if (!m || !m->image) {
        free(m);
        bt_diag_fail(e, BT_DIAG_NOMEM, 0, "out of memory");
        return NULL;
    }
    memcpy(m->image, image, len);
    m->image[len] = '\0'; /* PTX is text the driver reads up to a NUL */
    vals[0] = m->log;
    vals[1] = (void *)(uintptr_t)sizeof m->log;
    if (drv.cuLibraryLoadData) {
        m->device = -1;
        r = drv.cuLibraryLoadData(&m->lib, m->image, opts, vals, 2, NULL, NULL, 0);
    } else {
        void *ctx, *prev;
        m->device = dev;
        if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
            goto error;
        r = drv.cuModuleLoadDataEx(&m->mod, m->image, 2, opts, vals);
        bt_cuda_leave(ctx, prev);
    }
    if (r != CUDA_SUCCESS_) {
        m->log[sizeof m->log - 1] = '\0';
        if (m->log[0])
            bt_diag_fail(e, BT_DIAG_CUDA, r, "%s failed (PTX JIT log follows):\n%s",
                         drv.cuLibraryLoadData ? "cuLibraryLoadData" : "cuModuleLoadDataEx",
                         m->log);
        else
            cu_fail(e, r, "%s", drv.cuLibraryLoadData ? "cuLibraryLoadData" : "cuModuleLoadDataEx");
        goto error;
    }
    return m;
error:
    free(m->image);
    free(m);
    return NULL;
}

void bt_cuda_module_unload(BtCudaModule *m)
{
    if (!m)
        return;
    if (LIVE() && m->lib)
        drv.cuLibraryUnload(m->lib);
    if (LIVE() && m->mod)
        drv.cuModuleUnload(m->mod);
    free(m->image);
    free(m);
}

int bt_cuda_module_device(const BtCudaModule *m) { return m->lib ? -1 : m->device; }

/* A call that met a JIT deferred by lazy loading: its log, written into the
 * module's buffer since the load, said with the error (a "not found"
 * included). 1 when it was (e set), else 0. */
static int deferred_jit(BtCudaModule *m, BtCUresult r, const char *call, const char *name,
                        BtDiag *e)
{
    char why[512];

    m->log[sizeof m->log - 1] = '\0';
    if (!m->log[0])
        return 0;
    describe(r, why, sizeof why);
    bt_diag_fail(e, BT_DIAG_CUDA, r,
                 "%s(\"%s\") failed: %s; the PTX JIT ran late (lazy loading: "
                 "CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) and failed; its log "
                 "follows:\n%s",
                 call, name, why, m->log);
    return 1;
}

void *bt_cuda_module_kernel(BtCudaModule *m, const char *name, int *missing, BtDiag *e)
{
    void *k = NULL;
    BtCUresult r;

    *missing = 0;
    if (FORKED()) {
        fork_fail(e);
        return NULL;
    }
    if (m->lib)
        r = drv.cuLibraryGetKernel(&k, m->lib, name);
    else
        r = drv.cuModuleGetFunction(&k, m->mod, name);
    if (r != CUDA_SUCCESS_ &&
        deferred_jit(m, r, m->lib ? "cuLibraryGetKernel" : "cuModuleGetFunction", name, e))
        return NULL;
    if (r == CUDA_ERROR_NOT_FOUND_) {
        *missing = 1;
        return NULL;
    }
    if (r != CUDA_SUCCESS_) {
        cu_fail(e, r, "%s(\"%s\")", m->lib ? "cuLibraryGetKernel" : "cuModuleGetFunction", name);
        return NULL;
    }
    return k;
}

int bt_cuda_module_names(BtCudaModule *m, BtArena *arena, const char ***names, int *n, BtDiag *e)
{
    unsigned count = 0, i;
    void **ks;
    const char **out;
    BtCUresult r;
    char have[32];

    *names = NULL;
    *n = 0;
    version_text(drv.version, have, sizeof have);
    if (m->lib
            ? !(drv.cuLibraryGetKernelCount && drv.cuLibraryEnumerateKernels && drv.cuKernelGetName)
            : !(drv.cuModuleGetFunctionCount && drv.cuModuleEnumerateFunctions &&
                drv.cuFuncGetName))
        return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                            "the CUDA %s driver cannot list a module's kernels (12.4+ can)", have);
    r = m->lib ? drv.cuLibraryGetKernelCount(&count, m->lib)
               : drv.cuModuleGetFunctionCount(&count, m->mod);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s", m->lib ? "cuLibraryGetKernelCount" : "cuModuleGetFunctionCount");
    ks = bt_arena_alloc(arena, sizeof(void *) * (count + 1));
    out = bt_arena_alloc(arena, sizeof(char *) * (count + 1));
    if (!ks || !out)
        return bt_diag_fail(e, BT_DIAG_NOMEM, 0, "out of memory");
    r = m->lib ? drv.cuLibraryEnumerateKernels(ks, count, m->lib)
               : drv.cuModuleEnumerateFunctions(ks, count, m->mod);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s",
                       m->lib ? "cuLibraryEnumerateKernels" : "cuModuleEnumerateFunctions");
    for (i = 0; i < count; i++) {
        const char *s = NULL;
        r = m->lib ? drv.cuKernelGetName(&s, ks[i]) : drv.cuFuncGetName(&s, ks[i]);
        if (r != CUDA_SUCCESS_)
            return cu_fail(e, r, "%s", m->lib ? "cuKernelGetName" : "cuFuncGetName");
        if (!(out[i] = bt_arena_strdup(arena, s ? s : "?")))
            return bt_diag_fail(e, BT_DIAG_NOMEM, 0, "out of memory");
    }
    *names = out;
    *n = (int)count;
    return 0;
}

int bt_cuda_param_info(BtCudaModule *m, void *kernel, size_t i, size_t *offset, size_t *size,
                       BtDiag *e)
{
    BtCUresult r;
    char have[32];

    if (m->lib ? !drv.cuKernelGetParamInfo : !drv.cuFuncGetParamInfo) {
        version_text(drv.version, have, sizeof have);
        return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                            "the CUDA %s driver cannot report kernel parameters (12.4+ can)", have);
    }
    r = m->lib ? drv.cuKernelGetParamInfo(kernel, i, offset, size)
               : drv.cuFuncGetParamInfo(kernel, i, offset, size);
    if (r == CUDA_ERROR_INVALID_VALUE_)
        return 1;
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(parameter %zu)",
                       m->lib ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo", i);
    return 0;
}

int bt_cuda_launch(void *kernel, const unsigned grid[3], const unsigned block[3], unsigned shared,
                   uint64_t stream, void **params, BtDiag *e)
{
    /* a CUfunction (bt_cuda_kernel_function); a CUkernel (12.0+) is
     * accepted too, resolved by the driver in the current context */
    BtCUresult r;

    if (FORKED())
        return fork_fail(e);
    if (STICKY()) /* no kernel is launched into a context a fault broke */
        return sticky_fail(e, "cuLaunchKernel");
    r = drv.cuLaunchKernel(kernel, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                           (BtCUstream)(uintptr_t)stream, params, NULL);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuLaunchKernel(grid=(%u, %u, %u), block=(%u, %u, %u), shared=%u)",
                       grid[0], grid[1], grid[2], block[0], block[1], block[2], shared);
    return 0;
}

int bt_cuda_kernel_shared(void *kernel, int dev, unsigned bytes, unsigned *optin,
                          unsigned *static_bytes, BtDiag *e)
{
    enum { SHARED_SIZE = 1, MAX_DYNAMIC_SHARED = 8, OPTIN = 97 };
    BtCUdevice d;
    int max = 0, stat = 0, lib = drv.cuLibraryLoadData != NULL;
    BtCUresult r;

    r = drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = drv.cuDeviceGetAttribute(&max, OPTIN, d);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)");
    r = lib ? drv.cuKernelGetAttribute(&stat, SHARED_SIZE, kernel, d)
            : drv.cuFuncGetAttribute(&stat, SHARED_SIZE, kernel);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(SHARED_SIZE_BYTES)",
                       lib ? "cuKernelGetAttribute" : "cuFuncGetAttribute");
    *optin = (unsigned)max;
    *static_bytes = (unsigned)stat;
    if ((unsigned long long)bytes + (unsigned)stat > (unsigned)max)
        return 1;
    r = lib ? drv.cuKernelSetAttribute(MAX_DYNAMIC_SHARED, (int)bytes, kernel, d)
            : drv.cuFuncSetAttribute(kernel, MAX_DYNAMIC_SHARED, (int)bytes);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)",
                       lib ? "cuKernelSetAttribute" : "cuFuncSetAttribute", bytes);
    return 0;
}

int bt_cuda_stream_sync(uint64_t stream, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return fork_fail(e);
    r = drv.cuStreamSynchronize((BtCUstream)(uintptr_t)stream);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuStreamSynchronize(0x%llx)", (unsigned long long)stream);
    return 0;
}

int bt_cuda_sync(BtDiag *e)
{
    BtCUresult r;

    if (some_ctx(e) < 0)
        return -1;
    r = drv.cuCtxSynchronize();
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuCtxSynchronize");
    return 0;
}

/* ---- streams and events ---- */

int bt_cuda_event_create(int timing, void **ev, BtDiag *e)
{
    BtCUresult r;

    *ev = NULL;
    if (some_ctx(e) < 0)
        return -1;
    r = drv.cuEventCreate((BtCUevent *)ev, timing ? 0 : CU_EVENT_DISABLE_TIMING_);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuEventCreate");
    return 0;
}

void bt_cuda_event_destroy(void *ev)
{
    if (LIVE() && ev)
        drv.cuEventDestroy(ev);
}

int bt_cuda_event_record(void *ev, uint64_t stream, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return fork_fail(e);
    r = drv.cuEventRecord(ev, (BtCUstream)(uintptr_t)stream);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuEventRecord(stream 0x%llx)", (unsigned long long)stream);
    return 0;
}

int bt_cuda_event_sync(void *ev, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return fork_fail(e);
    r = drv.cuEventSynchronize(ev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuEventSynchronize");
    return 0;
}

int bt_cuda_event_query(void *ev, int *done, BtDiag *e)
{
    BtCUresult r;

    *done = 0;
    if (FORKED())
        return fork_fail(e);
    r = drv.cuEventQuery(ev);
    *done = r == CUDA_SUCCESS_;
    if (r != CUDA_SUCCESS_ && r != CUDA_ERROR_NOT_READY_)
        return cu_fail(e, r, "cuEventQuery");
    return 0;
}

int bt_cuda_event_elapsed(void *start, void *end, float *ms, BtDiag *e)
{
    BtCUresult r = drv.cuEventElapsedTime ? drv.cuEventElapsedTime(ms, start, end)
                                          : drv.cuEventElapsedTime_v1(ms, start, end);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuEventElapsedTime");
    return 0;
}

int bt_cuda_stream_wait_event(uint64_t stream, void *ev, BtDiag *e)
{
    BtCUresult r;

    if (FORKED())
        return fork_fail(e);
    r = drv.cuStreamWaitEvent((BtCUstream)(uintptr_t)stream, ev, 0);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuStreamWaitEvent(stream 0x%llx)", (unsigned long long)stream);
    return 0;
}

int bt_cuda_stream_wait(uint64_t waiter, uint64_t producer, BtDiag *e)
{
    void *ev = NULL;
    int rc;

    if ((waiter ? waiter : BT_CUDA_STREAM_LEGACY) == (producer ? producer : BT_CUDA_STREAM_LEGACY))
        return 0;
    if (bt_cuda_event_create(0, &ev, e) < 0)
        return -1;
    /* destroying an event a wait is queued on is allowed: the driver frees
     * it once the wait is done */
    rc = bt_cuda_event_record(ev, producer, e) < 0 || bt_cuda_stream_wait_event(waiter, ev, e) < 0
             ? -1
             : 0;
    drv.cuEventDestroy(ev);
    return rc;
}

int bt_cuda_stream_create(int dev, int non_blocking, uint64_t *stream, BtDiag *e)
{
    BtCUstream s = NULL;
    void *ctx, *prev;
    BtCUresult r;

    *stream = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = drv.cuStreamCreate(&s, non_blocking ? 1u : 0u); /* CU_STREAM_NON_BLOCKING */
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuStreamCreate");
    *stream = (uint64_t)(uintptr_t)s;
    return 0;
}

void bt_cuda_stream_destroy(uint64_t stream)
{
    if (LIVE() && stream > BT_CUDA_STREAM_PER_THREAD)
        drv.cuStreamDestroy((BtCUstream)(uintptr_t)stream);
}

int bt_cuda_host_alloc(size_t n, void **p, BtDiag *e)
{
    BtCUresult r;

    *p = NULL;
    if (some_ctx(e) < 0)
        return -1;
    /* portable: pinned for every context, as an async copy from any needs */
    r = drv.cuMemHostAlloc(p, n ? n : 1, CU_MEMHOSTALLOC_PORTABLE_);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuMemHostAlloc(%zu bytes)", n);
    return 0;
}

void bt_cuda_host_free(void *p)
{
    BtDiag e;

    bt_diag_init(&e);
    if (LIVE() && p && some_ctx(&e) == 0)
        drv.cuMemFreeHost(p);
}

int bt_cuda_kernel_function(BtCudaModule *m, void *kernel, const char *name, void **func, BtDiag *e)
{
    BtCUresult r;

    *func = kernel;
    if (!m->lib || !drv.cuKernelGetFunction) /* a module's kernel is a CUfunction */
        return 0;
    if (FORKED())
        return fork_fail(e);
    r = drv.cuKernelGetFunction(func, kernel);
    if (r != CUDA_SUCCESS_) {
        *func = NULL;
        if (!deferred_jit(m, r, "cuKernelGetFunction", name, e))
            cu_fail(e, r, "cuKernelGetFunction(\"%s\")", name);
        return -1;
    }
    return 0;
}

int bt_cuda_stream_ctx(uint64_t stream, void **ctx, BtDiag *e)
{
    BtCUcontext c = NULL;
    BtCUresult r;

    *ctx = NULL;
    if (stream <= BT_CUDA_STREAM_PER_THREAD && some_ctx(e) < 0)
        return -1;
    if (FORKED())
        return fork_fail(e);
    r = drv.cuStreamGetCtx((BtCUstream)(uintptr_t)stream, &c);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuStreamGetCtx(0x%llx)", (unsigned long long)stream);
    *ctx = c;
    return 0;
}

int bt_cuda_event_create_in(void *ctx, int timing, void **ev, BtDiag *e)
{
    void *prev;
    BtCUresult r;

    *ev = NULL;
    if (bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = drv.cuEventCreate((BtCUevent *)ev, timing ? 0 : CU_EVENT_DISABLE_TIMING_);
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuEventCreate");
    return 0;
}

int bt_cuda_record_in(int dev, void **ev, uint64_t stream, BtDiag *e)
{
    void *ctx, *prev;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0)
        return -1;
    if (!*ev && bt_cuda_event_create_in(ctx, 0, ev, e) < 0)
        return -1;
    if (bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    rc = bt_cuda_event_record(*ev, stream, e);
    bt_cuda_leave(ctx, prev);
    return rc;
}

int bt_cuda_wait_in(int dev, uint64_t waiter, uint64_t producer, void *ev, BtDiag *e)
{
    void *ctx, *prev;
    int rc;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    rc = ev ? bt_cuda_stream_wait_event(waiter, ev, e) : bt_cuda_stream_wait(waiter, producer, e);
    bt_cuda_leave(ctx, prev);
    return rc;
}

/* ---- launch attributes, kernel attributes, occupancy ---- */

static int unsupported(BtDiag *e, const char *what, const char *since)
{
    char have[32];

    version_text(drv.version, have, sizeof have);
    return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                        "%s needs a CUDA %s or newer driver (this one is %s)", what, since, have);
}

int bt_cuda_launch_ex(void *kernel, const unsigned grid[3], const unsigned block[3],
                      unsigned shared, uint64_t stream, void **params, const BtCudaLaunchAttrs *a,
                      BtDiag *e)
{
    enum { COOPERATIVE = 2, CLUSTER_DIMENSION = 4, PRIORITY = 8 };
    BtCUlaunchAttribute attrs[3];
    BtCUlaunchConfig c;
    BtCUresult r;
    unsigned n = 0;

    if (FORKED())
        return fork_fail(e);
    if (STICKY())
        return sticky_fail(e, "cuLaunchKernelEx");
    if (!drv.cuLaunchKernelEx)
        return unsupported(
            e, "a launch with cluster=, cooperative= or priority= (cuLaunchKernelEx)", "11.6");
    memset(attrs, 0, sizeof attrs);
    if (a->cluster[0]) {
        attrs[n].id = CLUSTER_DIMENSION;
        attrs[n].value.cluster.x = a->cluster[0];
        attrs[n].value.cluster.y = a->cluster[1];
        attrs[n++].value.cluster.z = a->cluster[2];
    }
    if (a->cooperative) {
        attrs[n].id = COOPERATIVE;
        attrs[n++].value.cooperative = 1;
    }
    if (a->has_priority) {
        attrs[n].id = PRIORITY;
        attrs[n++].value.priority = a->priority;
    }
    memcpy(c.grid, grid, sizeof c.grid);
    memcpy(c.block, block, sizeof c.block);
    c.shared = shared;
    c.stream = (BtCUstream)(uintptr_t)stream;
    c.attrs = attrs;
    c.n_attrs = n;
    /* a CUfunction (bt_cuda_kernel_function), as for bt_cuda_launch */
    r = drv.cuLaunchKernelEx(&c, kernel, params, NULL);
    if (r == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE_)
        return cu_fail(e, r,
                       "cuLaunchKernelEx(cooperative, grid=(%u, %u, %u), block=(%u, %u, %u)) "
                       "(a cooperative grid must fit on the device at once: at most "
                       "max_active_blocks_per_sm(block) x the SM count blocks)",
                       grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r,
                       "cuLaunchKernelEx(grid=(%u, %u, %u), block=(%u, %u, %u), shared=%u, "
                       "cluster=(%u, %u, %u), cooperative=%d)",
                       grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                       a->cluster[0], a->cluster[1], a->cluster[2], a->cooperative);
    return 0;
}

int bt_cuda_device_attr(int dev, int attr, int *value, BtDiag *e)
{
    BtCUdevice d;
    BtCUresult r;

    *value = 0;
    if (bt_cuda_init(e) < 0)
        return -1;
    r = drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = drv.cuDeviceGetAttribute(value, attr, d);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuDeviceGetAttribute(%d, device %d)", attr, dev);
    return 0;
}

int bt_cuda_kernel_attr(void *kernel, int dev, int attr, int *value, BtDiag *e)
{
    int lib = drv.cuLibraryLoadData != NULL;
    BtCUdevice d;
    BtCUresult r;

    *value = 0;
    if (FORKED())
        return fork_fail(e);
    r = drv.cuDeviceGet(&d, dev);
    if (r == CUDA_SUCCESS_)
        r = lib ? drv.cuKernelGetAttribute(value, attr, kernel, d)
                : drv.cuFuncGetAttribute(value, attr, kernel);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(%d, device %d)",
                       lib ? "cuKernelGetAttribute" : "cuFuncGetAttribute", attr, dev);
    return 0;
}

int bt_cuda_occupancy(void *kernel, int block, size_t shared, int *blocks, BtDiag *e)
{
    BtCUresult r = drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, kernel, block, shared);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor(block=%d, shared=%zu)",
                       block, shared);
    return 0;
}

int bt_cuda_occupancy_block(void *kernel, size_t shared, int limit, int *min_grid, int *block,
                            BtDiag *e)
{
    BtCUresult r = drv.cuOccupancyMaxPotentialBlockSize(min_grid, block, kernel, NULL, shared,
                                                        limit);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "cuOccupancyMaxPotentialBlockSize(shared=%zu, limit=%d)", shared,
                       limit);
    return 0;
}

/* ---- module globals ---- */

int bt_cuda_module_global(BtCudaModule *m, const char *name, uint64_t *ptr, size_t *size,
                          int *missing, BtDiag *e)
{
    BtCUdeviceptr p = 0;
    size_t n = 0;
    BtCUresult r;

    *ptr = 0;
    *size = 0;
    *missing = 0;
    if (FORKED())
        return fork_fail(e);
    if (m->lib && !drv.cuLibraryGetGlobal)
        return unsupported(e, "cuLibraryGetGlobal", "12.0");
    r = m->lib ? drv.cuLibraryGetGlobal(&p, &n, m->lib, name)
               : drv.cuModuleGetGlobal(&p, &n, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND_) {
        *missing = 1;
        return 0;
    }
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(\"%s\")", m->lib ? "cuLibraryGetGlobal" : "cuModuleGetGlobal",
                       name);
    *ptr = p;
    *size = n;
    return 0;
}

/* ---- stream-ordered allocation, device-to-device copies ---- */

/* Whether dev allocates from a pool (asked once, its primary context
 * current): the default pool, made to keep what is freed (release
 * threshold: all) as CuPy's and PyTorch's allocators do. */
static int ask_pooled(int dev)
{
    enum { MEMORY_POOLS_SUPPORTED = 115, RELEASE_THRESHOLD = 4 };
    BtCUmemoryPool pool = NULL;
    uint64_t all = UINT64_MAX;
    BtCUdevice d;
    int yes = 0;

    if (getenv("BINDTHEM_CUDA_NO_POOL") || !drv.cuMemAllocAsync || !drv.cuMemFreeAsync ||
        drv.cuDeviceGet(&d, dev) != CUDA_SUCCESS_ ||
        drv.cuDeviceGetAttribute(&yes, MEMORY_POOLS_SUPPORTED, d) != CUDA_SUCCESS_ || !yes)
        return -1;
    if (drv.cuDeviceGetDefaultMemPool && drv.cuMemPoolSetAttribute &&
        drv.cuDeviceGetDefaultMemPool(&pool, d) == CUDA_SUCCESS_)
        drv.cuMemPoolSetAttribute(pool, RELEASE_THRESHOLD, &all);
    return 1;
}

/* Threads that ask at once: one asks (under `once`), all see its answer. */
static int pooled(int dev)
{
    int v = __atomic_load_n(&drv.pools[dev], __ATOMIC_ACQUIRE);

    if (!v) {
        pthread_mutex_lock(&once);
        if (!(v = drv.pools[dev]))
            __atomic_store_n(&drv.pools[dev], v = ask_pooled(dev), __ATOMIC_RELEASE);
        pthread_mutex_unlock(&once);
    }
    return v > 0;
}

int bt_cuda_alloc_async(int dev, size_t nbytes, uint64_t stream, uint64_t *ptr, int *is_pooled,
                        BtDiag *e)
{
    BtCUdeviceptr p = 0;
    void *ctx, *prev;
    BtCUresult r;
    int pool;

    *ptr = 0;
    *is_pooled = 0;
    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    if ((pool = pooled(dev))) {
        r = drv.cuMemAllocAsync(&p, nbytes ? nbytes : 1, (BtCUstream)(uintptr_t)stream);
        *is_pooled = r == CUDA_SUCCESS_;
    } else {
        r = drv.cuMemAlloc(&p, nbytes ? nbytes : 1);
    }
    bt_cuda_leave(ctx, prev);
    if (r != CUDA_SUCCESS_)
        return cu_fail(e, r, "%s(%zu bytes) on device %d", pool ? "cuMemAllocAsync" : "cuMemAlloc",
                       nbytes, dev);
    *ptr = p;
    return 0;
}

void bt_cuda_free_async(int dev, uint64_t ptr) { free_in(dev, ptr, 1); }

int bt_cuda_copy_d2d(int dev, uint64_t dst, uint64_t src, size_t n, uint64_t stream, int sync,
                     BtDiag *e)
{
    void *ctx, *prev;
    BtCUresult r;
    int rc = -1;

    if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    /* unified addressing: the driver tells the devices apart (peer copies too) */
    r = n ? drv.cuMemcpyAsync(dst, src, n, (BtCUstream)(uintptr_t)stream) : CUDA_SUCCESS_;
    if (r != CUDA_SUCCESS_)
        cu_fail(e, r, "cuMemcpyAsync(0x%llx <- 0x%llx, %zu bytes, stream 0x%llx)",
                (unsigned long long)dst, (unsigned long long)src, n, (unsigned long long)stream);
    else if (!sync || bt_cuda_stream_sync(stream, e) == 0)
        rc = 0;
    bt_cuda_leave(ctx, prev);
    return rc;
}
