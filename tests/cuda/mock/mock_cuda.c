/* mock_cuda.c - a fake libcuda.so for testing bindthem.cuda without a GPU.
 *
 * Built by tests/support/cuda_support.py with `gcc -shared -fPIC` and reached through
 * BINDTHEM_LIBCUDA. "Device" memory is host malloc. A module is a real
 * cubin (ELF: kernels and parameter layouts from its .nv.info sections), an
 * uncompressed fatbin (its first cubin), PTX (.entry and .param lines) -
 * such kernels launch and are logged, but don't run - or text:
 *
 *     bindthem-mock-module
 *     kernel <name> <param size>... [run=axpy_f|axpy_d]
 *     jit-error <message>            (the load fails with this JIT log)
 *
 * Parameters are laid out at their natural alignment. cuLaunchKernel
 * records each launch (kernel, grid, block, shared, stream, context, the
 * parameter bytes) and, for kernels with run=, runs them on the host.
 * cuGetProcAddress records every request (symbol, cudaVersion, flags).
 *
 * Streams are queues: work on a stream made with cuStreamCreate (launches,
 * async copies, memsets, event records) is held there and runs only when
 * something waits for it: cuStreamSynchronize / cuEventSynchronize on it,
 * cuCtxSynchronize, a cuStreamWaitEvent on an event recorded there, or, for
 * a blocking stream (flags 0), any work on the legacy stream (0 or 1),
 * which runs at once, as does the per-thread stream (2). So a missing wait
 * shows as stale data. A mock clock advances 1 ms per launch run; an
 * event's time is the clock when it runs (cuEventElapsedTime). Memory
 * remembers its context (CU_POINTER_ATTRIBUTE_CONTEXT); a launch whose
 * pointer parameters belong to another context than the current one fails
 * with CUDA_ERROR_ILLEGAL_ADDRESS, as on a device. cuMemHostAlloc is host
 * memory the device can address.
 *
 * Environment:
 *   MOCK_CUDA_VERSION=12080        what cuDriverGetVersion says
 *   MOCK_CUDA_DEVICES=1            device count (0: cuInit says NO_DEVICE)
 *   MOCK_CUDA_NOT_FOUND=a,b        symbols reported SYMBOL_NOT_FOUND
 *   MOCK_CUDA_TOO_NEW=a,b          symbols reported VERSION_NOT_SUFFICIENT
 *   MOCK_CUDA_SLEEP_MS=0           how long every blocking call (synchronizes of
 *                                  context, stream, event; frees; library loads)
 *                                  sleeps; mock_in_sync() says 1 meanwhile
 *   MOCK_CUDA_SHARED_OPTIN=232448  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
 *   MOCK_CUDA_STATIC_SHARED=0      every kernel's CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
 *   MOCK_CUDA_LAUNCH_ERROR=0       a CUresult every cuLaunchKernel returns
 *   MOCK_CUDA_RETAIN_ERROR=0       a CUresult every cuDevicePrimaryCtxRetain returns
 *   MOCK_CUDA_FAULT_KERNEL=name    a kernel whose name contains this faults when it runs:
 *                                  its context gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS,
 *                                  which every later call in that context returns (the
 *                                  launch itself succeeds: the fault is asynchronous)
 *   CUDA_MODULE_LOADING=LAZY       as the real driver: a module's JIT runs late, at
 *                                  cuLibraryGetKernel, which then fails (INVALID_PTX) and
 *                                  writes the log into the buffer given at load time
 *   MOCK_CUDA_POOLS=1              CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED
 *   MOCK_CUDA_CC=90                compute capability (clusters need 90)
 *   MOCK_CUDA_SMS=132              CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
 *   MOCK_CUDA_NUM_REGS=32          every kernel's CU_FUNC_ATTRIBUTE_NUM_REGS
 *   MOCK_CUDA_MANAGED=1            CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY (0: cuMemAllocManaged
 *                                  fails with CUDA_ERROR_NOT_SUPPORTED)
 *   MOCK_CUDA_CONCURRENT_MANAGED=1 CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
 *   MOCK_CUDA_PEER=1               what cuDeviceCanAccessPeer says for two different devices
 *                                  (0: no; cuCtxEnablePeerAccess then fails with
 *                                  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
 *
 * As a real driver: the per-thread stream (2) is each thread's own queue (in
 * each context), a blocking stream; work a thread leaves there when it
 * exits never runs: whatever waits for it (a synchronize of the context or
 * of an event recorded there, a stream made to wait on such an event, a
 * free, which synchronizes the device) would wait forever, so the mock
 * says so on stderr ("mock_cuda: hang: ...") and ends the process with
 * status 86; events and streams belong to the context
 * current when they were made, and an event recorded on a stream of another
 * context fails with CUDA_ERROR_INVALID_HANDLE (a wait on one works across
 * contexts); after fork() every call in the child fails with
 * CUDA_ERROR_NOT_INITIALIZED and is counted (mock_calls_after_fork).
 * cuKernelGetFunction makes one CUfunction per kernel and context (counted);
 * cuPointerGetAttributes calls are counted too.
 *
 * Module text may also declare variables (cuLibraryGetGlobal /
 * cuModuleGetGlobal; zeroed, allocated per device on first use):
 *
 *     global <name> <bytes>
 *
 * cuLaunchKernelEx checks its attributes as a Hopper does (a cluster needs
 * compute capability 9.0, divides the grid and holds at most 8 blocks; a
 * cooperative grid fits the device at once: SMs x blocks per SM), logs them
 * (mock_ex_log) and launches as cuLaunchKernel. Allocations and frees are
 * logged (mock_mem_log: cuMemAlloc, cuMemFree, cuMemAllocAsync and
 * cuMemFreeAsync with their stream); a cuMemFreeAsync is queued on its
 * stream like other work.
 *
 * As a real driver does, a launch with more than 48 KiB of dynamic shared
 * memory fails unless CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES was
 * raised to it (cuFuncSetAttribute / cuKernelSetAttribute, logged).
 *
 * Blocking calls (synchronizes of context, stream and event; frees; synchronous
 * copies; module loads and unloads) check that the calling thread does not
 * hold the GIL (PyGILState_Check, found in the process): each one made with
 * it held is logged (mock_gil_log), since another Python thread cannot run
 * meanwhile, nor a dying thread's per-thread work finish.
 *
 * Managed memory and peer access: cuMemAllocManaged is host memory any
 * context may launch on (CU_POINTER_ATTRIBUTE_IS_MANAGED, memory type
 * unified); cuMemPrefetchAsync (8.0 and 12.2 ABIs, the latter asked for at
 * 12020 and missing from drivers before 12.2), cuMemAdvise (likewise),
 * cuCtxEnablePeerAccess / cuCtxDisablePeerAccess (per context pair,
 * ALREADY_ENABLED / NOT_ENABLED as a driver says) and cuMemcpyPeerAsync
 * (queued like cuMemcpyAsync) are logged (mock_managed_log; cleared by
 * mock_managed_clear). A launch's pointer into another context's memory
 * works once peer access from the launching context to that one is enabled.
 *
 * Stream capture, as a real driver does (CUDA 10.1+): cuStreamBeginCapture_v2
 * puts a stream made with cuStreamCreate, or a thread's per-thread stream, in
 * capture; work queued there (launches, copies, memsets, event records) is
 * recorded into the capture's graph, not queued, and runs only when an
 * instantiated graph is launched (cuGraphLaunch queues copies of it on the
 * given stream). A stream that waits on an event recorded in a capture joins
 * it. What the driver refuses during capture fails with its error and
 * invalidates the capture (cuStreamEndCapture then says
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901): cuStreamSynchronize of a
 * capturing stream, cuCtxSynchronize of its context, allocations and frees
 * on a capturing stream (900, UNSUPPORTED: the mock has no graph memory
 * nodes); a capturing stream waiting on an event recorded outside the
 * capture (905, ISOLATION); the legacy stream used while a blocking stream
 * of its context captures (906, IMPLICIT); and the "potentially unsafe"
 * calls (cuMemAlloc, cuMemFree, synchronous copies: 900) in a thread that a
 * capture prohibits them in: its own global or thread_local capture, or any
 * thread's global one, unless cuThreadExchangeStreamCaptureMode made the
 * thread relaxed. cuEventSynchronize / cuEventQuery of an event recorded in an
 * open capture: 907. Graphs and executable graphs are counted
 * (mock_graphs_live); destroying one twice is counted as a bad destroy.
 *
 * The log is read back through mock_*() functions, called with ctypes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
#define OK 0
#define E_INVALID_VALUE 1
#define E_NOT_INITIALIZED 3
#define E_NO_DEVICE 100
#define E_INVALID_DEVICE 101
#define E_INVALID_IMAGE 200
#define E_INVALID_CONTEXT 201
#define E_INVALID_PTX 218
#define E_INVALID_HANDLE 400
#define E_NOT_FOUND 500
#define E_NOT_READY 600
#define E_ILLEGAL_ADDRESS 700
#define FUNC_MAGIC 0x46554e43

#define MAXK 32
#define MAXP 32
#define MAXDEV 8

typedef struct Kernel {
    unsigned magic;
    char name[256];
    int nparams;
    size_t size[MAXP], offset[MAXP];
    char run[32];
    struct Module *owner;
    int max_dyn_shared[MAXDEV]; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; 0: 48 KiB */
    struct Func *funcs[MAXDEV * 2]; /* cuKernelGetFunction's, per context */
} Kernel;

typedef struct Module {
    unsigned magic;
    int is_library;
    int nk;
    Kernel k[MAXK];
    void *ctx; /* cuModuleLoadDataEx: the context it was loaded in */
    char jit_error[256]; /* lazy loading: the JIT error cuLibraryGetKernel reports */
    char *log;           /* lazy loading: the log buffer given at load time */
    size_t log_size;
    int ng;    /* "global" lines */
    struct {
        char name[128];
        size_t n;
        void *p[MAXDEV];
    } g[MAXK];
} Module;

typedef struct Ctx {
    int device;
    int sticky; /* a faulted kernel's CUresult: every later call returns it */
} Ctx;

/* cuKernelGetFunction's CUfunction: a kernel in one context. */
typedef struct Func {
    unsigned magic;
    struct Kernel *k;
    Ctx *ctx;
} Func;

static void flush_all(void);
static void sync_sleep(void);
/* stream capture (the capture block below) */
static CUresult capture_unsafe(void);
static CUresult capture_ctx_sync(void);
#define CAPTURE_CHECK(call)                                                                        \
    do {                                                                                           \
        CUresult cr_ = (call);                                                                     \
        if (cr_ != OK)                                                                             \
            return cr_;                                                                            \
    } while (0)
struct Stream;
struct Event;
static unsigned long long capture_id(struct Stream *s);
static int capture_open(unsigned long long id);
static CUresult capture_wait(void *h, struct Event *e);
static CUresult capture_no_memory_node(void *h);

typedef struct Alloc {
    void *p;
    size_t n;
    int device;
    int managed;
    int host; /* cuMemHostAlloc */
    Ctx *ctx;
    struct Alloc *next;
} Alloc;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Ctx primaries[MAXDEV];
static int retained[MAXDEV];
static __thread Ctx *current;
static int initialized;
static long init_pid;
static int calls_after_fork, ptr_queries, get_functions;

/* A child of fork() cannot use the parent's driver state: every call fails. */
#define FORK_GUARD()                                                                               \
    do {                                                                                           \
        if (init_pid && getpid() != init_pid) {                                                    \
            calls_after_fork++;                                                                    \
            return E_NOT_INITIALIZED;                                                              \
        }                                                                                          \
    } while (0)
/* The current context's sticky error, if a kernel of it faulted. */
#define STICKY()                                                                                   \
    do {                                                                                           \
        if (current && current->sticky)                                                            \
            return current->sticky;                                                                \
    } while (0)
/* What every context call checks first: fork, a current context, a fault. */
#define IN_CONTEXT()                                                                               \
    do {                                                                                           \
        FORK_GUARD();                                                                              \
        if (!current)                                                                              \
            return E_INVALID_CONTEXT;                                                              \
        STICKY();                                                                                  \
    } while (0)
static Alloc *allocs;
static int live_allocs;

/* ---- logs ---- */
static char *proc_log;  /* JSON lines */
static size_t proc_len, proc_cap;
static char *launch_log;
static size_t launch_len, launch_cap;
static int n_launches;
static char *sync_log;
static size_t sync_len, sync_cap;
static char *attr_log;
static size_t attr_len, attr_cap;
static char *mem_log; /* allocations and frees */
static size_t mem_len, mem_cap;
static char *ex_log; /* cuLaunchKernelEx's attributes */
static size_t ex_len, ex_cap;
static void log_mem(const char *op, unsigned long long p, size_t n, void *stream);

static void append(char **buf, size_t *len, size_t *cap, const char *s)
{
    size_t n = strlen(s);
    if (*len + n + 1 > *cap) {
        *cap = (*len + n + 1) * 2;
        *buf = realloc(*buf, *cap);
    }
    memcpy(*buf + *len, s, n + 1);
    *len += n;
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

static int listed(const char *var, const char *sym)
{
    const char *s = getenv(var), *p;
    size_t n = strlen(sym);
    if (!s)
        return 0;
    for (p = s; (p = strstr(p, sym)); p += n)
        if ((p == s || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return 1;
    return 0;
}

/* ---- the entry points ---- */
CUresult cuDriverGetVersion(int *v)
{
    *v = env_int("MOCK_CUDA_VERSION", 12080);
    return OK;
}

CUresult cuInit(unsigned flags)
{
    (void)flags;
    if (env_int("MOCK_CUDA_DEVICES", 1) == 0)
        return E_NO_DEVICE;
    initialized = 1;
    init_pid = getpid();
    return OK;
}

static const char *err_name(CUresult r)
{
    switch (r) {
    case OK: return "CUDA_SUCCESS";
    case E_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case E_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case E_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case E_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case E_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case E_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case E_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case E_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case E_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case E_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case E_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 720: return "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 912: return "CUDA_ERROR_INVALID_CLUSTER_SIZE";
    case 401: return "CUDA_ERROR_ILLEGAL_STATE";
    case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case 903: return "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED";
    case 905: return "CUDA_ERROR_STREAM_CAPTURE_ISOLATION";
    case 906: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    case 907: return "CUDA_ERROR_CAPTURED_EVENT";
    case 908: return "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD";
    default: return NULL;
    }
}

CUresult cuGetErrorName(CUresult r, const char **s)
{
    *s = err_name(r);
    return *s ? OK : E_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult r, const char **s)
{
    *s = err_name(r) ? "mock error text" : NULL;
    return *s ? OK : E_INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *n)
{
    if (!initialized)
        return E_NOT_INITIALIZED;
    *n = env_int("MOCK_CUDA_DEVICES", 1);
    return OK;
}

CUresult cuDeviceGet(int *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= env_int("MOCK_CUDA_DEVICES", 1))
        return E_INVALID_DEVICE;
    *d = ordinal;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, int dev)
{
    snprintf(name, (size_t)len, "Mock GPU %d", dev);
    return OK;
}

CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    if (dev < 0 || dev >= MAXDEV)
        return E_INVALID_DEVICE;
    if (env_int("MOCK_CUDA_RETAIN_ERROR", 0))
        return env_int("MOCK_CUDA_RETAIN_ERROR", 0);
    primaries[dev].device = dev;
    retained[dev]++;
    *ctx = &primaries[dev];
    return OK;
}

CUresult cuCtxGetCurrent(void **ctx)
{
    FORK_GUARD();
    *ctx = current;
    return OK;
}

CUresult cuCtxSetCurrent(void *ctx)
{
    current = ctx;
    return OK;
}

CUresult cuCtxGetDevice(int *dev)
{
    if (!current)
        return E_INVALID_CONTEXT;
    *dev = current->device;
    return OK;
}

static volatile int in_sync, in_jit;

/* ---- blocking calls: made with the GIL released? ---- */
static char *gil_log; /* the blocking calls made with the GIL held, one a line */
static size_t gil_len, gil_cap;

/* Logs `what` when the calling thread holds the GIL (PyGILState_Check of
 * the Python in this process, if any). */
static void gil_check(const char *what)
{
    static int (*held)(void);
    static int looked;
    char line[96];

    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        held = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Check");
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    if (!held || !held())
        return;
    snprintf(line, sizeof line, "%s\n", what);
    pthread_mutex_lock(&lock);
    append(&gil_log, &gil_len, &gil_cap, line);
    pthread_mutex_unlock(&lock);
}

/* A synchronize that takes MOCK_CUDA_SLEEP_MS: long enough for a test to
 * see whether other Python threads run meanwhile (the GIL released). */
static void sync_sleep(void)
{
    int ms = env_int("MOCK_CUDA_SLEEP_MS", 0);
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    if (ms <= 0)
        return;
    in_sync = 1;
    nanosleep(&ts, NULL);
    in_sync = 0;
}

CUresult cuCtxSynchronize(void)
{
    char line[64];
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    STICKY();
    CAPTURE_CHECK(capture_ctx_sync());
    snprintf(line, sizeof line, "ctx %d\n", current->device);
    pthread_mutex_lock(&lock);
    append(&sync_log, &sync_len, &sync_cap, line);
    pthread_mutex_unlock(&lock);
    gil_check("cuCtxSynchronize");
    flush_all();
    sync_sleep();
    return current->sticky; /* a kernel that faulted meanwhile */
}

static CUresult stream_sync(void *s);

CUresult cuStreamSynchronize(void *s)
{
    char line[64];
    FORK_GUARD();
    STICKY();
    snprintf(line, sizeof line, "stream %llu\n", (unsigned long long)(uintptr_t)s);
    pthread_mutex_lock(&lock);
    append(&sync_log, &sync_len, &sync_cap, line);
    pthread_mutex_unlock(&lock);
    CUresult r;
    gil_check("cuStreamSynchronize");
    sync_sleep();
    r = stream_sync(s);
    return r == OK && current ? current->sticky : r; /* a kernel that faulted meanwhile */
}

static void *track(size_t n, int device, int managed)
{
    Alloc *a = calloc(1, sizeof *a);
    a->p = malloc(n ? n : 1);
    memset(a->p, 0xab, n ? n : 1); /* uninitialized, visibly */
    a->n = n;
    a->device = device;
    a->managed = managed;
    a->ctx = current && current->device == device ? current : &primaries[device];
    pthread_mutex_lock(&lock);
    a->next = allocs;
    allocs = a;
    live_allocs++;
    pthread_mutex_unlock(&lock);
    return a->p;
}

static Alloc *find(uintptr_t p)
{
    Alloc *a;
    for (a = allocs; a; a = a->next)
        if (p >= (uintptr_t)a->p && p < (uintptr_t)a->p + (a->n ? a->n : 1))
            return a;
    return NULL;
}

CUresult cuMemAlloc_v2(unsigned long long *p, size_t n)
{
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    STICKY();
    CAPTURE_CHECK(capture_unsafe());
    *p = (uintptr_t)track(n, current->device, 0);
    log_mem("cuMemAlloc", *p, n, NULL);
    return OK;
}

CUresult cuMemFree_v2(unsigned long long p)
{
    Alloc **pp, *a;
    FORK_GUARD();
    CAPTURE_CHECK(capture_unsafe());
    log_mem("cuMemFree", p, 0, NULL);
    gil_check("cuMemFree");
    flush_all(); /* as on a device: a free waits for the work queued before it */
    sync_sleep();
    pthread_mutex_lock(&lock);
    for (pp = &allocs; (a = *pp); pp = &a->next) {
        if ((uintptr_t)a->p == p) {
            *pp = a->next;
            live_allocs--;
            pthread_mutex_unlock(&lock);
            free(a->p);
            free(a);
            return OK;
        }
    }
    pthread_mutex_unlock(&lock);
    return E_INVALID_VALUE;
}

static void flush_blocking(void);

CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n)
{
    gil_check("cuMemcpyHtoD");
    CAPTURE_CHECK(capture_unsafe());
    flush_blocking();
    if (!find(dst))
        return E_INVALID_VALUE;
    memcpy((void *)(uintptr_t)dst, src, n);
    return OK;
}

CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n)
{
    gil_check("cuMemcpyDtoH");
    CAPTURE_CHECK(capture_unsafe());
    flush_blocking();
    if (!find(src))
        return E_INVALID_VALUE;
    memcpy(dst, (void *)(uintptr_t)src, n);
    return OK;
}

CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, unsigned long long ptr)
{
    Alloc *a;
    unsigned i;
    FORK_GUARD();
    pthread_mutex_lock(&lock);
    ptr_queries++;
    a = find(ptr);
    pthread_mutex_unlock(&lock);
    for (i = 0; i < n; i++) {
        switch (attrs[i]) {
        case 2: *(unsigned *)data[i] = a ? (a->host ? 1u : a->managed ? 4u : 2u) : 0u; break;
        case 3: *(unsigned long long *)data[i] = a ? ptr : 0; break;            /* DEVICE_POINTER */
        case 8: *(unsigned *)data[i] = a ? (unsigned)a->managed : 0u; break;    /* IS_MANAGED */
        case 9: *(int *)data[i] = a ? a->device : -2; break;                    /* DEVICE_ORDINAL */
        case 1: *(void **)data[i] = a ? (void *)a->ctx : NULL; break;           /* CONTEXT */
        default: return E_INVALID_VALUE;
        }
    }
    return OK;
}

/* ---- modules ---- */
static Kernel *add_kernel(Module *m, const char *name, size_t len)
{
    Kernel *k;
    if (m->nk == MAXK)
        return NULL;
    k = &m->k[m->nk++];
    k->magic = 0x4b45524e;
    k->owner = m;
    snprintf(k->name, sizeof k->name, "%.*s", (int)len, name);
    return k;
}

/* A cubin (ELF): a kernel per .nv.info.<name> section, its parameters'
 * ordinal, offset and size from the EIATTR_KPARAM_INFO records there. */
static CUresult parse_elf(Module *m, const unsigned char *e)
{
    uint64_t shoff, stroff, off, size;
    uint16_t shentsize, shnum, shstrndx, i;
    uint32_t name;
    memcpy(&shoff, e + 0x28, 8);
    memcpy(&shentsize, e + 0x3a, 2);
    memcpy(&shnum, e + 0x3c, 2);
    memcpy(&shstrndx, e + 0x3e, 2);
    if (e[4] != 2 || shstrndx >= shnum)
        return E_INVALID_IMAGE;
    memcpy(&stroff, e + shoff + (uint64_t)shstrndx * shentsize + 24, 8);
    for (i = 0; i < shnum; i++) {
        const unsigned char *sh = e + shoff + (uint64_t)i * shentsize, *d;
        const char *sname;
        Kernel *k;
        uint64_t j;
        memcpy(&name, sh, 4);
        memcpy(&off, sh + 24, 8);
        memcpy(&size, sh + 32, 8);
        sname = (const char *)e + stroff + name;
        if (strncmp(sname, ".nv.info.", 9) != 0 || !(k = add_kernel(m, sname + 9, strlen(sname + 9))))
            continue;
        for (d = e + off, j = 0; j + 2 <= size;) {
            uint16_t n = 0, ord, poff;
            uint32_t flags;
            if (d[j] == 4) { /* EIFMT_SVAL: u16 size, payload */
                memcpy(&n, d + j + 2, 2);
                if (d[j + 1] == 0x17 && n >= 12) { /* EIATTR_KPARAM_INFO */
                    memcpy(&ord, d + j + 8, 2);
                    memcpy(&poff, d + j + 10, 2);
                    memcpy(&flags, d + j + 12, 4);
                    if (ord < MAXP) {
                        k->offset[ord] = poff;
                        k->size[ord] = (flags >> 18) & 0x3fff;
                        if (ord >= k->nparams)
                            k->nparams = ord + 1;
                    }
                }
                j += 4 + n;
            } else if (d[j] == 3) { /* EIFMT_HVAL */
                j += 4;
            } else if (d[j] == 2) { /* EIFMT_BVAL */
                j += 3;
            } else {
                j += 2;
            }
        }
    }
    return m->nk ? OK : E_INVALID_IMAGE;
}

/* PTX: a kernel per .entry, its parameters from the .param list, laid out
 * at their .align (else their size). */
static CUresult parse_ptx(Module *m, const char *text)
{
    const char *p = text;
    while ((p = strstr(p, ".entry "))) {
        const char *name = p + 7, *end;
        Kernel *k;
        size_t off = 0;
        end = name + strcspn(name, "( \t\n");
        if (!(k = add_kernel(m, name, (size_t)(end - name))))
            break;
        p = end;
        end = strchr(p, ')');
        while ((p = strstr(p, ".param ")) && end && p < end && k->nparams < MAXP) {
            /* .param [.align N] .TYPE [.ptr ...] name[count] */
            size_t al = 0, sz = 0, count = 1, n;
            const char *t = p + 7, *eol = p + strcspn(p, ",)");
            while (t < eol) {
                t += strspn(t, " \t\n");
                n = strcspn(t, " \t\n,)");
                if (n == 6 && strncmp(t, ".align", 6) == 0) {
                    t += n;
                    al = (size_t)strtoul(t, (char **)&t, 10);
                    continue;
                }
                if (!sz && n >= 3 && t[0] == '.' && strchr("busf", t[1]) && t[2] >= '0' && t[2] <= '9')
                    sz = (size_t)atoi(t + 2) / 8;
                else if (t[0] != '.' && memchr(t, '[', n))
                    count = (size_t)atoi((const char *)memchr(t, '[', n) + 1);
                t += n;
            }
            sz = (sz ? sz : 1) * count;
            if (!al)
                al = sz >= 8 ? 8 : sz;
            off = (off + al - 1) / al * al;
            k->size[k->nparams] = sz;
            k->offset[k->nparams++] = off;
            off += sz;
            p = eol;
        }
        p = end ? end : name;
        if (!end)
            break;
    }
    return m->nk ? OK : E_INVALID_IMAGE;
}

static CUresult parse_module(Module *m, const char *text, void **jit_vals, int is_library)
{
    const char *p = text, *eol;
    char line[1024];

    memset(m, 0, sizeof *m);
    m->magic = 0x4d4f44;
    m->is_library = is_library;
    if (memcmp(text, "\x7f" "ELF", 4) == 0)
        return parse_elf(m, (const unsigned char *)text);
    if (memcmp(text, "\x50\xed\x55\xba", 4) == 0) { /* a fatbin: its first cubin */
        uint64_t size, i;
        uint16_t hsize;
        memcpy(&hsize, text + 6, 2);
        memcpy(&size, text + 8, 8);
        for (i = hsize; i + 4 <= hsize + size; i += 8)
            if (memcmp(text + i, "\x7f" "ELF", 4) == 0)
                return parse_elf(m, (const unsigned char *)text + i);
        return E_INVALID_IMAGE; /* compressed, or PTX only */
    }
    if (strncmp(text, "bindthem-mock-module", 20) != 0)
        return strstr(text, ".entry ") ? parse_ptx(m, text) : E_INVALID_IMAGE;
    for (; *p; p = *eol ? eol + 1 : eol) {
        size_t len;
        char *tok, *save = NULL;
        eol = strchr(p, '\n');
        if (!eol)
            eol = p + strlen(p);
        len = (size_t)(eol - p) < sizeof line - 1 ? (size_t)(eol - p) : sizeof line - 1;
        memcpy(line, p, len);
        line[len] = '\0';
        if (strncmp(line, "jit-error ", 10) == 0) {
            const char *mode = getenv("CUDA_MODULE_LOADING");
            if (is_library && mode && strcmp(mode, "LAZY") == 0) {
                /* deferred: cuLibraryGetKernel runs the JIT */
                snprintf(m->jit_error, sizeof m->jit_error, "%s", line + 10);
                if (jit_vals) {
                    m->log = jit_vals[0];
                    m->log_size = (size_t)(uintptr_t)jit_vals[1];
                }
                continue;
            }
            if (jit_vals && jit_vals[0])
                snprintf(jit_vals[0], (size_t)(uintptr_t)jit_vals[1], "ptxas fatal   : %s",
                         line + 10);
            return E_INVALID_PTX;
        }
        tok = strtok_r(line, " ", &save);
        if (tok && strcmp(tok, "global") == 0 && m->ng < MAXK) {
            char *n = strtok_r(NULL, " ", &save), *size = strtok_r(NULL, " ", &save);
            snprintf(m->g[m->ng].name, sizeof m->g[m->ng].name, "%s", n ? n : "?");
            m->g[m->ng++].n = size ? (size_t)atoi(size) : 4;
            continue;
        }
        if (!tok || strcmp(tok, "kernel") != 0 || m->nk == MAXK)
            continue;
        {
            Kernel *k = &m->k[m->nk++];
            size_t off = 0;
            k->magic = 0x4b45524e;
            k->owner = m;
            tok = strtok_r(NULL, " ", &save);
            snprintf(k->name, sizeof k->name, "%s", tok ? tok : "?");
            while ((tok = strtok_r(NULL, " ", &save))) {
                size_t sz, al;
                if (strncmp(tok, "run=", 4) == 0) {
                    snprintf(k->run, sizeof k->run, "%s", tok + 4);
                    continue;
                }
                sz = (size_t)atoi(tok);
                al = sz >= 8 ? 8 : sz;
                off = (off + al - 1) / al * al;
                k->size[k->nparams] = sz;
                k->offset[k->nparams++] = off;
                off += sz;
            }
        }
    }
    return OK;
}

CUresult cuLibraryLoadData(void **lib, const void *code, int *jopts, void **jvals, unsigned nj,
                           int *lopts, void **lvals, unsigned nl)
{
    Module *m = calloc(1, sizeof *m);
    CUresult r;
    (void)jopts; (void)nj; (void)lopts; (void)lvals; (void)nl;
    gil_check("cuLibraryLoadData");
    sync_sleep(); /* a JIT takes time */
    r = parse_module(m, code, nj >= 2 ? jvals : NULL, 1);
    if (r != OK) {
        free(m);
        return r;
    }
    *lib = m;
    return OK;
}

CUresult cuModuleLoadDataEx(void **mod, const void *image, unsigned n, int *opts, void **vals)
{
    Module *m;
    CUresult r;
    (void)opts;
    if (!current)
        return E_INVALID_CONTEXT;
    gil_check("cuModuleLoadDataEx");
    m = calloc(1, sizeof *m);
    r = parse_module(m, image, n >= 2 ? vals : NULL, 0);
    if (r != OK) {
        free(m);
        return r;
    }
    m->ctx = current;
    *mod = m;
    return OK;
}

CUresult cuLibraryUnload(void *lib)
{
    gil_check("cuLibraryUnload");
    free(lib);
    return OK;
}

CUresult cuModuleUnload(void *mod)
{
    gil_check("cuModuleUnload");
    free(mod);
    return OK;
}

static CUresult get_kernel(void **k, Module *m, const char *name)
{
    int i;
    FORK_GUARD();
    if (m->jit_error[0]) { /* lazy loading: the JIT runs now, and fails */
        in_jit = 1;
        sync_sleep();
        in_jit = 0;
        if (m->log)
            snprintf(m->log, m->log_size, "ptxas fatal   : %s", m->jit_error);
        return E_INVALID_PTX;
    }
    for (i = 0; i < m->nk; i++) {
        if (strcmp(m->k[i].name, name) == 0) {
            *k = &m->k[i];
            return OK;
        }
    }
    return E_NOT_FOUND;
}

CUresult cuLibraryGetKernel(void **k, void *lib, const char *name) { return get_kernel(k, lib, name); }
CUresult cuModuleGetFunction(void **f, void *mod, const char *name) { return get_kernel(f, mod, name); }

static CUresult count(unsigned *n, Module *m)
{
    *n = (unsigned)m->nk;
    return OK;
}

static CUresult enumerate(void **ks, unsigned n, Module *m)
{
    unsigned i;
    if (n != (unsigned)m->nk)
        return E_INVALID_VALUE;
    for (i = 0; i < n; i++)
        ks[i] = &m->k[i];
    return OK;
}

static CUresult get_name(const char **name, Kernel *k)
{
    *name = k->name;
    return OK;
}

/* As the 580 driver (CUDA 13.0) does: only with a context current, even for a
 * context-independent CUkernel. */
static CUresult param_info(Kernel *k, size_t i, size_t *off, size_t *size)
{
    if (!current)
        return E_INVALID_CONTEXT;
    if (i >= (size_t)k->nparams)
        return E_INVALID_VALUE;
    *off = k->offset[i];
    *size = k->size[i];
    return OK;
}

CUresult cuLibraryGetKernelCount(unsigned *n, void *lib) { return count(n, lib); }
CUresult cuModuleGetFunctionCount(unsigned *n, void *mod) { return count(n, mod); }
CUresult cuLibraryEnumerateKernels(void **ks, unsigned n, void *lib) { return enumerate(ks, n, lib); }
CUresult cuModuleEnumerateFunctions(void **fs, unsigned n, void *mod) { return enumerate(fs, n, mod); }
CUresult cuKernelGetName(const char **name, void *k) { return get_name(name, k); }
CUresult cuFuncGetName(const char **name, void *f) { return get_name(name, f); }
CUresult cuKernelGetParamInfo(void *k, size_t i, size_t *off, size_t *size) { return param_info(k, i, off, size); }
CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) { return param_info(f, i, off, size); }


/* ---- streams, events ---- */
enum { OP_LAUNCH, OP_COPY, OP_MEMSET, OP_EVENT, OP_FREE };

typedef struct Event {
    unsigned magic;
    Ctx *ctx; /* the context current at cuEventCreate */
    unsigned flags; /* 2: CU_EVENT_DISABLE_TIMING */
    int recorded, pending, destroyed;
    struct Stream *stream; /* where a pending record waits */
    void *handle;          /* the stream it was recorded on */
    double time;
    unsigned long long cap_id; /* the capture its last record was recorded into (0: none) */
} Event;

typedef struct Op {
    int kind;
    Ctx *ctx; /* launch: the context it was queued in */
    const Kernel *k;
    unsigned long long threads;
    unsigned char *blob; /* launch: parameter bytes; copy: staged source */
    void *dst;
    const void *src;
    size_t n;
    size_t blob_n; /* bytes of blob (a graph launch copies it) */
    Event *ev;
    struct Op *next;
} Op;

typedef struct Stream {
    unsigned magic;
    unsigned flags; /* 1: CU_STREAM_NON_BLOCKING */
    Ctx *ctx;       /* the context current at cuStreamCreate (per-thread: its context) */
    Op *head, *tail;
    int dead; /* a per-thread stream whose thread exited: its work never runs */
    struct Stream *next;
    struct Capture *cap; /* the capture this stream records into, or NULL */
} Stream;

#define STREAM_MAGIC 0x5354524d
#define EVENT_MAGIC 0x45564e54
static pthread_mutex_t qlock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static Stream *streams;
static double clock_ms;
static int n_pending;

static void run(const Kernel *k, void **params, unsigned long long threads);
static void mock_release(void *p);

static void run_op(Op *op)
{
    void *ptrs[MAXP];
    size_t off = 0;
    int i;

    switch (op->kind) {
    case OP_LAUNCH:
        for (i = 0; i < op->k->nparams; i++) {
            ptrs[i] = op->blob + off;
            off += (op->k->size[i] + 7) / 8 * 8;
        }
        run(op->k, ptrs, op->threads);
        clock_ms += 1.0;
        {
            const char *fault = getenv("MOCK_CUDA_FAULT_KERNEL");
            if (fault && *fault && strstr(op->k->name, fault) && op->ctx)
                op->ctx->sticky = E_ILLEGAL_ADDRESS;
        }
        break;
    case OP_COPY: memcpy(op->dst, op->blob ? op->blob : op->src, op->n); break;
    case OP_MEMSET: memset(op->dst, 0, op->n); break;
    case OP_FREE: mock_release(op->dst); break;
    case OP_EVENT:
        op->ev->pending = 0;
        op->ev->time = clock_ms;
        if (op->ev->destroyed)
            free(op->ev);
        break;
    }
}

/* A wait for work that never runs (a dead thread's per-thread stream):
 * a device would block forever; the mock says so and ends the process. */
static void hang(void)
{
    fprintf(stderr, "mock_cuda: hang: a wait (a synchronize, a free, an event) waits for work "
                    "left on the per-thread stream of a thread that exited; a device never runs "
                    "it, and the wait never returns\n");
    fflush(stderr);
    _exit(86);
}

static void flush(Stream *s)
{
    Op *op;
    pthread_mutex_lock(&qlock);
    if (s->dead && s->head)
        hang();
    while ((op = s->head)) {
        s->head = op->next;
        run_op(op);
        free(op->blob);
        free(op);
        n_pending--;
    }
    s->tail = NULL;
    pthread_mutex_unlock(&qlock);
}

static void flush_blocking(void)
{
    Stream *s;
    pthread_mutex_lock(&qlock);
    for (s = streams; s; s = s->next)
        if (!(s->flags & 1))
            flush(s);
    pthread_mutex_unlock(&qlock);
}

static void flush_all(void)
{
    Stream *s;
    pthread_mutex_lock(&qlock);
    for (s = streams; s; s = s->next)
        flush(s);
    pthread_mutex_unlock(&qlock);
}

/* The calling thread's per-thread stream in the current context (made on
 * first use, a blocking stream); NULL without a current context. */
static __thread struct {
    Ctx *ctx;
    Stream *s;
} ptds[MAXDEV * 2];

/* At a thread's exit (a pthread key's destructor) its per-thread streams
 * die: what is queued there stays queued. */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int threads_exited; /* threads with per-thread streams that exited (mock_threads_exited) */

static void thread_exit(void *unused)
{
    int i;
    (void)unused;
    pthread_mutex_lock(&qlock);
    for (i = 0; i < MAXDEV * 2 && ptds[i].ctx; i++)
        ptds[i].s->dead = 1;
    __atomic_add_fetch(&threads_exited, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&qlock);
}

/* How many threads that used a per-thread stream have exited: Python's
 * join() returns before the thread's pthread is gone (and its streams dead),
 * so a test waits for this count before it shows what a dead stream does. */
int mock_threads_exited(void) { return __atomic_load_n(&threads_exited, __ATOMIC_ACQUIRE); }

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exit); }

static Stream *per_thread(void)
{
    int i;
    if (!current)
        return NULL;
    for (i = 0; i < MAXDEV * 2 && ptds[i].ctx; i++)
        if (ptds[i].ctx == current)
            return ptds[i].s;
    if (i == MAXDEV * 2)
        return NULL;
    pthread_once(&exit_once, make_exit_key);
    pthread_setspecific(exit_key, &exit_key);
    ptds[i].ctx = current;
    ptds[i].s = calloc(1, sizeof *ptds[i].s);
    ptds[i].s->magic = STREAM_MAGIC;
    ptds[i].s->ctx = current;
    pthread_mutex_lock(&qlock);
    ptds[i].s->next = streams;
    streams = ptds[i].s;
    pthread_mutex_unlock(&qlock);
    return ptds[i].s;
}

/* Handles the tests make up (mock_stream_adopt): work on them runs at once. */
static uintptr_t adopted[32];
static int n_adopted;

/* The queue of a stream: a cuStreamCreate stream, or the calling thread's
 * per-thread stream (2); NULL for the legacy stream (0, 1) and for adopted
 * handles, which run work at once. Any other handle (never made, or
 * destroyed) is invalid (*ok = 0), as a real driver says or crashes. */
static Stream *stream_of(void *h, int *ok)
{
    uintptr_t v = (uintptr_t)h;
    Stream *s;
    int i;
    *ok = 1;
    if (v == 2) {
        s = per_thread();
        *ok = s != NULL;
        return s;
    }
    if (v <= 2)
        return NULL;
    pthread_mutex_lock(&qlock);
    for (s = streams; s && s != h; s = s->next)
        ;
    pthread_mutex_unlock(&qlock);
    for (i = 0; !s && i < n_adopted && adopted[i] != v; i++)
        ;
    *ok = s || i < n_adopted;
    return s;
}

void mock_stream_adopt(unsigned long long h)
{
    if (n_adopted < 32)
        adopted[n_adopted++] = (uintptr_t)h;
}

static CUresult capture_record(Stream *s, Op *op);
static CUresult capture_legacy(void *h);

/* Queues op on stream h, or runs it now (legacy: after the blocking streams);
 * on a capturing stream, records it into the capture. */
static CUresult submit(void *h, Op *op)
{
    int ok;
    CUresult r;
    Stream *s = stream_of(h, &ok);
    if (ok && !s && (r = capture_legacy(h)) != OK)
        ok = 0;
    else
        r = E_INVALID_HANDLE;
    if (!ok) {
        free(op->blob);
        free(op);
        return r;
    }
    if (s && s->cap)
        return capture_record(s, op);
    if (!s) {
        if ((uintptr_t)h <= 1)
            flush_blocking();
        pthread_mutex_lock(&qlock);
        run_op(op);
        pthread_mutex_unlock(&qlock);
        free(op->blob);
        free(op);
        return OK;
    }
    pthread_mutex_lock(&qlock);
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    n_pending++;
    pthread_mutex_unlock(&qlock);
    return OK;
}

static CUresult capture_sync(Stream *s);

static CUresult stream_sync(void *h)
{
    int ok;
    Stream *s = stream_of(h, &ok);
    if (!ok)
        return E_INVALID_HANDLE;
    CAPTURE_CHECK(s ? capture_sync(s) : capture_legacy(h));
    if (s)
        flush(s);
    else if ((uintptr_t)h <= 1)
        flush_blocking();
    return OK;
}

CUresult cuStreamCreate(void **h, unsigned flags)
{
    Stream *s = calloc(1, sizeof *s);
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    s->magic = STREAM_MAGIC;
    s->flags = flags;
    s->ctx = current;
    pthread_mutex_lock(&qlock);
    s->next = streams;
    streams = s;
    pthread_mutex_unlock(&qlock);
    *h = s;
    return OK;
}

CUresult cuStreamDestroy_v2(void *h)
{
    Stream **pp;
    int ok;
    Stream *s;
    FORK_GUARD();
    if ((uintptr_t)h <= 2 || !(s = stream_of(h, &ok)))
        return E_INVALID_HANDLE;
    (void)ok;
    flush(s);
    pthread_mutex_lock(&qlock);
    for (pp = &streams; *pp != s; pp = &(*pp)->next)
        ;
    *pp = s->next;
    pthread_mutex_unlock(&qlock);
    free(s);
    return OK;
}

/* The context of a stream (0, 1, 2: the current one). */
CUresult cuStreamGetCtx(void *h, void **ctx)
{
    int ok;
    Stream *s;
    FORK_GUARD();
    s = stream_of(h, &ok);
    if (!ok)
        return E_INVALID_HANDLE;
    if (!s && !current)
        return E_INVALID_CONTEXT;
    *ctx = s ? s->ctx : current;
    return OK;
}

static Op *new_op(int kind)
{
    Op *op = calloc(1, sizeof *op);
    op->kind = kind;
    return op;
}

CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *h)
{
    Op *op;
    FORK_GUARD();
    STICKY();
    if (!find(dst))
        return E_INVALID_VALUE;
    op = new_op(OP_COPY);
    op->dst = (void *)(uintptr_t)dst;
    op->n = n;
    {
        int ok;
        Stream *s = stream_of(h, &ok);
        if (s && s->cap) { /* a graph's copy node reads the host memory when it runs */
            op->src = src;
            return submit(h, op);
        }
    }
    op->blob = malloc(n ? n : 1); /* staged now, as from pageable memory */
    op->blob_n = n;
    memcpy(op->blob, src, n);
    return submit(h, op);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *h)
{
    Op *op;
    FORK_GUARD();
    STICKY();
    if (!find(src))
        return E_INVALID_VALUE;
    op = new_op(OP_COPY);
    op->dst = dst;
    op->src = (const void *)(uintptr_t)src;
    op->n = n;
    return submit(h, op);
}

CUresult cuMemsetD8Async_v2(unsigned long long dst, unsigned char c, size_t n, void *h)
{
    Op *op;
    if (!find(dst) || c != 0)
        return E_INVALID_VALUE; /* the mock zeroes only */
    op = new_op(OP_MEMSET);
    op->dst = (void *)(uintptr_t)dst;
    op->n = n;
    return submit(h, op);
}

CUresult cuEventCreate(void **ev, unsigned flags)
{
    Event *e;
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    STICKY();
    e = calloc(1, sizeof *e);
    e->magic = EVENT_MAGIC;
    e->ctx = current;
    e->flags = flags;
    *ev = e;
    return OK;
}

CUresult cuEventRecord(void *ev, void *h)
{
    Event *e = ev;
    Op *op;
    int ok;
    Stream *s;
    FORK_GUARD();
    if (!e || e->magic != EVENT_MAGIC)
        return E_INVALID_HANDLE;
    STICKY();
    /* the stream must be of the event's context (0, 1, 2: the current one's) */
    s = stream_of(h, &ok);
    if (!ok || (s ? s->ctx : current) != e->ctx)
        return E_INVALID_HANDLE;
    op = new_op(OP_EVENT);
    op->ev = e;
    pthread_mutex_lock(&qlock);
    e->recorded = 1;
    e->pending = !(s && s->cap); /* recorded into a capture: no work of its own to wait for */
    e->stream = s;
    e->handle = h;
    e->cap_id = s && s->cap ? capture_id(s) : 0;
    pthread_mutex_unlock(&qlock);
    return submit(h, op);
}

CUresult cuEventSynchronize(void *ev)
{
    Event *e = ev;
    FORK_GUARD();
    if (!e || e->magic != EVENT_MAGIC)
        return E_INVALID_HANDLE;
    if (e->ctx->sticky)
        return e->ctx->sticky;
    gil_check("cuEventSynchronize");
    if (capture_open(e->cap_id))
        return 907; /* CUDA_ERROR_CAPTURED_EVENT */
    sync_sleep();
    if (e->pending && e->stream)
        flush(e->stream);
    return e->ctx->sticky;
}

CUresult cuEventQuery(void *ev)
{
    Event *e = ev;
    if (!e || e->magic != EVENT_MAGIC)
        return E_INVALID_HANDLE;
    if (capture_open(e->cap_id))
        return 907; /* CUDA_ERROR_CAPTURED_EVENT */
    return e->pending ? E_NOT_READY : OK;
}

CUresult cuEventElapsedTime(float *ms, void *a, void *b)
{
    Event *s = a, *e = b;
    if (!s || !e || s->magic != EVENT_MAGIC || e->magic != EVENT_MAGIC || (s->flags & 2) ||
        (e->flags & 2) || !s->recorded || !e->recorded)
        return E_INVALID_HANDLE;
    if (s->pending || e->pending)
        return E_NOT_READY;
    *ms = (float)(e->time - s->time);
    return OK;
}

CUresult cuEventDestroy_v2(void *ev)
{
    Event *e = ev;
    FORK_GUARD();
    if (!e || e->magic != EVENT_MAGIC)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&qlock);
    if (e->pending) /* freed when its record runs */
        e->destroyed = 1;
    else
        free(e);
    pthread_mutex_unlock(&qlock);
    return OK;
}

/* Work queued on h after this waits for ev's work: the mock runs that now. */
CUresult cuStreamWaitEvent(void *h, void *ev, unsigned flags)
{
    Event *e = ev;
    char line[96];
    int ok;
    (void)flags;
    FORK_GUARD();
    STICKY();
    /* the event may be of another context than the stream */
    if (!e || e->magic != EVENT_MAGIC || (stream_of(h, &ok), !ok))
        return E_INVALID_HANDLE;
    {
        CUresult r = capture_wait(h, e);
        if (r != 1)
            return r; /* refused, or recorded into the capture (a dependency, nothing run) */
    }
    snprintf(line, sizeof line, "wait %llu %llu\n", (unsigned long long)(uintptr_t)h,
             (unsigned long long)(uintptr_t)e->handle);
    pthread_mutex_lock(&lock);
    append(&sync_log, &sync_len, &sync_cap, line);
    pthread_mutex_unlock(&lock);
    if (e->pending && e->stream)
        flush(e->stream);
    return OK;
}

CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    Alloc *a;
    (void)flags;
    if (!current)
        return E_INVALID_CONTEXT;
    *p = track(n, current->device, 0);
    pthread_mutex_lock(&lock);
    a = find((uintptr_t)*p);
    a->host = 1;
    pthread_mutex_unlock(&lock);
    return OK;
}

CUresult cuMemFreeHost(void *p) { return cuMemFree_v2((uintptr_t)p); }

static int peer_enabled(Ctx *from, Ctx *to); /* managed memory and peer access, below */

/* ---- launches ---- */
/* run=axpy_f / axpy_d: axpy(a, x, x_size, y, y_size) of tests/data/cuda/kernels.cuh */
static void run(const Kernel *k, void **params, unsigned long long threads)
{
    unsigned long long i, n;
    if (strcmp(k->run, "axpy_f") == 0) {
        float a = *(float *)params[0];
        const float *x = *(float **)params[1];
        float *y = *(float **)params[3];
        n = (unsigned long long)*(int *)params[2];
        for (i = 0; i < n && i < threads; i++)
            y[i] = a * x[i] + y[i];
    } else if (strcmp(k->run, "axpy_d") == 0) {
        double a = *(double *)params[0];
        const double *x = *(double **)params[1];
        double *y = *(double **)params[3];
        n = (unsigned long long)*(int *)params[2];
        for (i = 0; i < n && i < threads; i++)
            y[i] = a * x[i] + y[i];
    }
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    Kernel *k = f;
    Func *fn = f;
    char buf[4096];
    size_t len;
    int i, j;
    Op *op;

    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    STICKY();
    if (fn && fn->magic == FUNC_MAGIC) { /* cuKernelGetFunction's: of one context */
        if (fn->ctx != current)
            return E_INVALID_HANDLE;
        k = fn->k;
    }
    if (!k || k->magic != 0x4b45524e)
        return E_INVALID_HANDLE;
    if (!k->owner->is_library && k->owner->ctx != current)
        return E_INVALID_CONTEXT;
    if (extra || (k->nparams && !params))
        return E_INVALID_VALUE;
    if (env_int("MOCK_CUDA_LAUNCH_ERROR", 0))
        return env_int("MOCK_CUDA_LAUNCH_ERROR", 0);
    if (shared > 48 * 1024 &&
        (int)shared > k->max_dyn_shared[current->device])
        return E_INVALID_VALUE;
    len = (size_t)snprintf(buf, sizeof buf,
                           "{\"kernel\": \"%s\", \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
                           "\"shared\": %u, \"stream\": %llu, \"device\": %d, \"function\": %d, "
                           "\"params\": [",
                           k->name, gx, gy, gz, bx, by, bz, shared,
                           (unsigned long long)(uintptr_t)stream, current->device,
                           fn->magic == FUNC_MAGIC);
    for (i = 0; i < k->nparams; i++) {
        const unsigned char *b = params[i];
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s\"", i ? ", " : "");
        for (j = 0; j < (int)k->size[i] && len + 4 < sizeof buf; j++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%02x", b[j]);
        len += (size_t)snprintf(buf + len, sizeof buf - len, "\"");
    }
    snprintf(buf + len, sizeof buf - len, "]}\n");
    /* a pointer into another context's memory faults */
    for (i = 0; i < k->nparams; i++) {
        Alloc *a;
        uint64_t v;
        if (k->size[i] != 8)
            continue;
        memcpy(&v, params[i], 8);
        pthread_mutex_lock(&lock);
        a = v ? find((uintptr_t)v) : NULL;
        j = a && !a->managed && !a->host && a->ctx != current && !peer_enabled(current, a->ctx);
        pthread_mutex_unlock(&lock);
        if (j)
            return E_ILLEGAL_ADDRESS;
    }
    pthread_mutex_lock(&lock);
    append(&launch_log, &launch_len, &launch_cap, buf);
    n_launches++;
    pthread_mutex_unlock(&lock);
    op = new_op(OP_LAUNCH);
    op->k = k;
    op->ctx = current;
    op->threads = (unsigned long long)gx * gy * gz * bx * by * bz;
    for (i = 0, len = 0; i < k->nparams; i++)
        len += (k->size[i] + 7) / 8 * 8;
    op->blob = calloc(1, len ? len : 1);
    op->blob_n = len;
    for (i = 0, len = 0; i < k->nparams; i++) {
        memcpy(op->blob + len, params[i], k->size[i]);
        len += (k->size[i] + 7) / 8 * 8;
    }
    return submit(stream, op);
}

/* A CUkernel's CUfunction in the current context: one per context. */
CUresult cuKernelGetFunction(void **f, void *kernel)
{
    Kernel *k = kernel;
    int i;
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    STICKY();
    if (!k || k->magic != 0x4b45524e || !k->owner->is_library)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    get_functions++;
    for (i = 0; i < MAXDEV * 2 && k->funcs[i] && k->funcs[i]->ctx != current; i++)
        ;
    if (i < MAXDEV * 2 && !k->funcs[i]) {
        k->funcs[i] = calloc(1, sizeof *k->funcs[i]);
        k->funcs[i]->magic = FUNC_MAGIC;
        k->funcs[i]->k = k;
        k->funcs[i]->ctx = current;
    }
    pthread_mutex_unlock(&lock);
    if (i == MAXDEV * 2)
        return E_INVALID_VALUE;
    *f = k->funcs[i];
    return OK;
}

/* ---- attributes ---- */
CUresult cuDeviceGetAttribute(int *v, int attr, int dev)
{
    if (dev < 0 || dev >= env_int("MOCK_CUDA_DEVICES", 1))
        return E_INVALID_DEVICE;
    switch (attr) {
    case 97: *v = env_int("MOCK_CUDA_SHARED_OPTIN", 232448); return OK; /* SHARED_..._OPTIN */
    case 16: *v = env_int("MOCK_CUDA_SMS", 132); return OK;   /* MULTIPROCESSOR_COUNT */
    case 75: *v = env_int("MOCK_CUDA_CC", 90) / 10; return OK; /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *v = env_int("MOCK_CUDA_CC", 90) % 10; return OK; /* ..._MINOR */
    case 95: *v = 1; return OK;                                 /* COOPERATIVE_LAUNCH */
    case 115: *v = env_int("MOCK_CUDA_POOLS", 1); return OK;    /* MEMORY_POOLS_SUPPORTED */
    case 120: *v = env_int("MOCK_CUDA_CC", 90) >= 90; return OK; /* CLUSTER_LAUNCH */
    case 83: *v = env_int("MOCK_CUDA_MANAGED", 1); return OK;   /* MANAGED_MEMORY */
    case 89: *v = env_int("MOCK_CUDA_CONCURRENT_MANAGED", 1); return OK; /* CONCURRENT_MANAGED_ACCESS */
    default: return E_INVALID_VALUE;
    }
}

static CUresult get_attr(int *v, int attr, Kernel *k, int dev)
{
    if (!k || k->magic != 0x4b45524e || dev < 0 || dev >= MAXDEV)
        return E_INVALID_HANDLE;
    if (attr == 1) /* SHARED_SIZE_BYTES */
        *v = env_int("MOCK_CUDA_STATIC_SHARED", 0);
    else if (attr == 8) /* MAX_DYNAMIC_SHARED_SIZE_BYTES */
        *v = k->max_dyn_shared[dev] ? k->max_dyn_shared[dev] : 48 * 1024;
    else if (attr == 0) /* MAX_THREADS_PER_BLOCK */
        *v = 1024;
    else if (attr == 4) /* NUM_REGS */
        *v = env_int("MOCK_CUDA_NUM_REGS", 32);
    else if (attr == 2 || attr == 3) /* CONST_SIZE_BYTES, LOCAL_SIZE_BYTES */
        *v = 0;
    else if (attr == 5 || attr == 6) /* PTX_VERSION, BINARY_VERSION */
        *v = env_int("MOCK_CUDA_CC", 90);
    else
        return E_INVALID_VALUE;
    return OK;
}

static CUresult set_attr(int attr, int v, Kernel *k, int dev)
{
    char line[512];
    if (!k || k->magic != 0x4b45524e || dev < 0 || dev >= MAXDEV)
        return E_INVALID_HANDLE;
    if (attr != 8 ||
        v + env_int("MOCK_CUDA_STATIC_SHARED", 0) > env_int("MOCK_CUDA_SHARED_OPTIN", 232448))
        return E_INVALID_VALUE;
    k->max_dyn_shared[dev] = v;
    snprintf(line, sizeof line, "{\"kernel\": \"%s\", \"attr\": %d, \"value\": %d, \"device\": %d}\n",
             k->name, attr, v, dev);
    pthread_mutex_lock(&lock);
    append(&attr_log, &attr_len, &attr_cap, line);
    pthread_mutex_unlock(&lock);
    return OK;
}

CUresult cuFuncGetAttribute(int *v, int attr, void *f)
{
    return current ? get_attr(v, attr, f, current->device) : E_INVALID_CONTEXT;
}
CUresult cuFuncSetAttribute(void *f, int attr, int v)
{
    Kernel *k = f;
    if (!current)
        return E_INVALID_CONTEXT;
    if (k && k->magic == 0x4b45524e && k->owner->is_library)
        return E_INVALID_HANDLE; /* a CUkernel needs cuKernelSetAttribute here */
    return set_attr(attr, v, f, current->device);
}
CUresult cuKernelGetAttribute(int *v, int attr, void *k, int dev) { return get_attr(v, attr, k, dev); }
CUresult cuKernelSetAttribute(int attr, int v, void *k, int dev) { return set_attr(attr, v, k, dev); }
const char *mock_attr_log(void) { return attr_log ? attr_log : ""; }

/* ---- launch attributes, occupancy, globals, pools, device-to-device ---- */
typedef struct LaunchAttr { /* CUlaunchAttribute */
    int id;
    char pad[4];
    union {
        char pad[64];
        int i;
        unsigned dim[3];
    } v;
} LaunchAttr;
typedef struct LaunchConfig { /* CUlaunchConfig */
    unsigned g[3], b[3], shared;
    void *stream;
    LaunchAttr *attrs;
    unsigned n;
} LaunchConfig;

/* The kernel a CUkernel, CUfunction or cuKernelGetFunction's CUfunction
 * (of the current context) names; NULL for anything else. */
static Kernel *kernel_of(void *f)
{
    Func *fn = f;
    if (fn && fn->magic == FUNC_MAGIC)
        return fn->ctx == current ? fn->k : NULL;
    return f && ((Kernel *)f)->magic == 0x4b45524e ? f : NULL;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *f, int block, size_t shared)
{
    int n;
    IN_CONTEXT();
    if (!kernel_of(f))
        return E_INVALID_HANDLE;
    if (block < 1 || block > 1024)
        return E_INVALID_VALUE;
    n = 2048 / block < 32 ? 2048 / block : 32; /* 2048 threads, 32 blocks per SM */
    if (shared && (int)(233472 / shared) < n)
        n = (int)(233472 / shared);
    *blocks = n;
    return OK;
}

CUresult cuOccupancyMaxPotentialBlockSize(int *min_grid, int *block, void *f, void *fn,
                                          size_t shared, int limit)
{
    int b = limit > 0 && limit < 1024 ? limit / 32 * 32 : 1024, per;
    if (fn)
        return E_INVALID_VALUE; /* the mock takes a fixed size only */
    if (b < 32)
        b = limit;
    if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, f, b, shared) != OK)
        return cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, f, b, shared);
    *block = b;
    *min_grid = per * env_int("MOCK_CUDA_SMS", 132);
    return OK;
}

CUresult cuLaunchKernelEx(const LaunchConfig *c, void *f, void **params, void **extra)
{
    char line[512];
    unsigned i, cl[3] = {1, 1, 1};
    int coop = 0, prio = 0, has_cluster = 0, per;
    unsigned long long blocks = (unsigned long long)c->g[0] * c->g[1] * c->g[2];
    const Kernel *k = kernel_of(f);

    IN_CONTEXT();
    if (c->n && !c->attrs)
        return E_INVALID_VALUE;
    for (i = 0; i < c->n; i++) {
        const LaunchAttr *a = &c->attrs[i];
        if (a->id == 4) { /* CLUSTER_DIMENSION */
            has_cluster = 1;
            memcpy(cl, a->v.dim, sizeof cl);
        } else if (a->id == 2) { /* COOPERATIVE */
            coop = a->v.i;
        } else if (a->id == 8) { /* PRIORITY */
            prio = a->v.i;
        } else {
            return E_INVALID_VALUE;
        }
    }
    if (has_cluster) {
        if (env_int("MOCK_CUDA_CC", 90) < 90)
            return 801; /* CUDA_ERROR_NOT_SUPPORTED */
        if (!cl[0] || !cl[1] || !cl[2] || c->g[0] % cl[0] || c->g[1] % cl[1] ||
            c->g[2] % cl[2] || cl[0] * cl[1] * cl[2] > 8)
            return 912; /* CUDA_ERROR_INVALID_CLUSTER_SIZE */
    }
    if (coop) {
        if (cuOccupancyMaxActiveBlocksPerMultiprocessor(&per, f, (int)(c->b[0] * c->b[1] * c->b[2]),
                                                        c->shared) != OK)
            return E_INVALID_VALUE;
        if (blocks > (unsigned long long)per * (unsigned)env_int("MOCK_CUDA_SMS", 132))
            return 720; /* CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE */
    }
    snprintf(line, sizeof line,
             "{\"kernel\": \"%s\", \"has_cluster\": %d, \"cluster\": [%u, %u, %u], "
             "\"cooperative\": %d, \"priority\": %d, \"n_attrs\": %u}\n",
             k ? k->name : "?", has_cluster,
             cl[0], cl[1], cl[2], coop, prio, c->n);
    pthread_mutex_lock(&lock);
    append(&ex_log, &ex_len, &ex_cap, line);
    pthread_mutex_unlock(&lock);
    return cuLaunchKernel(f, c->g[0], c->g[1], c->g[2], c->b[0], c->b[1], c->b[2], c->shared,
                          c->stream, params, extra);
}

static CUresult get_global(unsigned long long *p, size_t *n, Module *m, const char *name)
{
    int i;
    IN_CONTEXT();
    if (!m || m->magic != 0x4d4f44)
        return E_INVALID_HANDLE;
    for (i = 0; i < m->ng; i++) {
        if (strcmp(m->g[i].name, name) != 0)
            continue;
        if (!m->g[i].p[current->device]) {
            m->g[i].p[current->device] = track(m->g[i].n, current->device, 0);
            memset(m->g[i].p[current->device], 0, m->g[i].n ? m->g[i].n : 1);
        }
        if (p)
            *p = (uintptr_t)m->g[i].p[current->device];
        if (n)
            *n = m->g[i].n;
        return OK;
    }
    return E_NOT_FOUND;
}
CUresult cuLibraryGetGlobal(unsigned long long *p, size_t *n, void *lib, const char *name)
{
    return get_global(p, n, lib, name);
}
CUresult cuModuleGetGlobal_v2(unsigned long long *p, size_t *n, void *mod, const char *name)
{
    return get_global(p, n, mod, name);
}

static void log_mem(const char *op, unsigned long long p, size_t n, void *stream)
{
    char line[256];
    snprintf(line, sizeof line, "{\"op\": \"%s\", \"ptr\": %llu, \"bytes\": %zu, \"stream\": %llu}\n",
             op, p, n, (unsigned long long)(uintptr_t)stream);
    pthread_mutex_lock(&lock);
    append(&mem_log, &mem_len, &mem_cap, line);
    pthread_mutex_unlock(&lock);
}

/* cuMemFree without its wait (a queued cuMemFreeAsync, when it runs) */
static void mock_release(void *p)
{
    Alloc **pp, *a;
    pthread_mutex_lock(&lock);
    for (pp = &allocs; (a = *pp); pp = &a->next) {
        if (a->p == p) {
            *pp = a->next;
            live_allocs--;
            free(a->p);
            free(a);
            break;
        }
    }
    pthread_mutex_unlock(&lock);
}

CUresult cuMemAllocAsync(unsigned long long *p, size_t n, void *h)
{
    int ok;
    IN_CONTEXT();
    if (!env_int("MOCK_CUDA_POOLS", 1))
        return 801; /* CUDA_ERROR_NOT_SUPPORTED */
    if (!stream_of(h, &ok) && ok)
        CAPTURE_CHECK(capture_legacy(h));
    if (!ok)
        return E_INVALID_HANDLE;
    CAPTURE_CHECK(capture_no_memory_node(h));
    *p = (uintptr_t)track(n, current->device, 0);
    log_mem("cuMemAllocAsync", *p, n, h);
    return OK;
}

CUresult cuMemFreeAsync(unsigned long long p, void *h)
{
    Op *op;
    IN_CONTEXT();
    if (!find(p))
        return E_INVALID_VALUE;
    CAPTURE_CHECK(capture_no_memory_node(h));
    log_mem("cuMemFreeAsync", p, 0, h);
    op = new_op(OP_FREE);
    op->dst = (void *)(uintptr_t)p;
    return submit(h, op);
}

static int default_pool;
CUresult cuDeviceGetDefaultMemPool(void **pool, int dev)
{
    if (dev < 0 || dev >= env_int("MOCK_CUDA_DEVICES", 1))
        return E_INVALID_DEVICE;
    *pool = &default_pool;
    return OK;
}
CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value)
{
    char line[128];
    if (pool != &default_pool)
        return E_INVALID_HANDLE;
    snprintf(line, sizeof line, "{\"op\": \"cuMemPoolSetAttribute\", \"attr\": %d, \"value\": %llu}\n",
             attr, attr == 4 ? *(unsigned long long *)value : 0ULL);
    pthread_mutex_lock(&lock);
    append(&mem_log, &mem_len, &mem_cap, line);
    pthread_mutex_unlock(&lock);
    return OK;
}

CUresult cuMemcpyAsync(unsigned long long dst, unsigned long long src, size_t n, void *h)
{
    Op *op;
    IN_CONTEXT();
    if (!find(dst) || !find(src) || !find(dst + (n ? n - 1 : 0)) || !find(src + (n ? n - 1 : 0)))
        return E_INVALID_VALUE;
    op = new_op(OP_COPY);
    op->dst = (void *)(uintptr_t)dst;
    op->src = (const void *)(uintptr_t)src; /* read when it runs */
    op->n = n;
    return submit(h, op);
}
const char *mock_mem_log(void) { return mem_log ? mem_log : ""; }
const char *mock_ex_log(void) { return ex_log ? ex_log : ""; }

/* ---- managed memory and peer access ---- */
static char *um_log; /* JSON lines */
static size_t um_len, um_cap;
static struct {
    Ctx *from, *to;
} peers[64];
static int n_peers;
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER; /* peers (a launch holds `lock`) */

static void log_um(const char *line)
{
    pthread_mutex_lock(&lock);
    append(&um_log, &um_len, &um_cap, line);
    pthread_mutex_unlock(&lock);
}

CUresult cuMemAllocManaged(unsigned long long *p, size_t n, unsigned flags)
{
    char line[160];
    IN_CONTEXT();
    if (flags != 1 && flags != 2)
        return E_INVALID_VALUE; /* CU_MEM_ATTACH_GLOBAL or _HOST */
    if (!env_int("MOCK_CUDA_MANAGED", 1))
        return 801; /* CUDA_ERROR_NOT_SUPPORTED */
    *p = (uintptr_t)track(n, current->device, 1);
    snprintf(line, sizeof line, "{\"op\": \"cuMemAllocManaged\", \"ptr\": %llu, \"bytes\": %zu, "
             "\"flags\": %u, \"device\": %d}\n", *p, n, flags, current->device);
    log_um(line);
    return OK;
}

/* A managed range of n bytes at p. */
static int managed_range(unsigned long long p, size_t n)
{
    Alloc *a;
    pthread_mutex_lock(&lock);
    a = find((uintptr_t)p);
    pthread_mutex_unlock(&lock);
    return a && a->managed && n && find((uintptr_t)(p + n - 1)) == a;
}

/* What prefetch and advise log: the ABI, the range, the location. */
static CUresult log_range(const char *op, int abi, unsigned long long p, size_t n, int what,
                          int type, int id, void *h)
{
    char line[256];
    int ok;
    IN_CONTEXT();
    if (!managed_range(p, n) || (type == 1 && (id < 0 || id >= env_int("MOCK_CUDA_DEVICES", 1))))
        return E_INVALID_VALUE;
    if (strcmp(op, "cuMemPrefetchAsync") == 0 && (stream_of(h, &ok), !ok))
        return E_INVALID_HANDLE;
    snprintf(line, sizeof line,
             "{\"op\": \"%s\", \"abi\": %d, \"ptr\": %llu, \"bytes\": %zu, \"advice\": %d, "
             "\"location\": [%d, %d], \"stream\": %llu}\n",
             op, abi, p, n, what, type, id, (unsigned long long)(uintptr_t)h);
    log_um(line);
    return OK;
}

typedef struct MemLocation {
    int type, id; /* 1 device, 2 host */
} MemLocation;

CUresult cuMemPrefetchAsync_v2(unsigned long long p, size_t n, MemLocation loc, unsigned flags,
                               void *h)
{
    return flags ? E_INVALID_VALUE : log_range("cuMemPrefetchAsync", 12020, p, n, 0, loc.type, loc.id, h);
}
CUresult cuMemPrefetchAsync(unsigned long long p, size_t n, int dev, void *h)
{
    return log_range("cuMemPrefetchAsync", 8000, p, n, 0, dev < 0 ? 2 : 1, dev < 0 ? 0 : dev, h);
}
CUresult cuMemAdvise_v2(unsigned long long p, size_t n, int advice, MemLocation loc)
{
    if (advice < 1 || advice > 6)
        return E_INVALID_VALUE;
    return log_range("cuMemAdvise", 12020, p, n, advice, loc.type, loc.id, NULL);
}
CUresult cuMemAdvise(unsigned long long p, size_t n, int advice, int dev)
{
    if (advice < 1 || advice > 6)
        return E_INVALID_VALUE;
    return log_range("cuMemAdvise", 8000, p, n, advice, dev < 0 ? 2 : 1, dev < 0 ? 0 : dev, NULL);
}

CUresult cuDeviceCanAccessPeer(int *yes, int dev, int peer)
{
    int n = env_int("MOCK_CUDA_DEVICES", 1);
    FORK_GUARD();
    if (dev < 0 || dev >= n || peer < 0 || peer >= n)
        return E_INVALID_DEVICE;
    *yes = dev != peer && env_int("MOCK_CUDA_PEER", 1);
    return OK;
}

static int peer_enabled(Ctx *from, Ctx *to)
{
    int i, yes = 0;
    pthread_mutex_lock(&peer_lock);
    for (i = 0; i < n_peers && !yes; i++)
        yes = peers[i].from == from && peers[i].to == to;
    pthread_mutex_unlock(&peer_lock);
    return yes;
}

static CUresult set_peer(Ctx *to, int on)
{
    char line[128];
    int i, can = 0;
    IN_CONTEXT();
    if (!to || to == current)
        return E_INVALID_VALUE;
    cuDeviceCanAccessPeer(&can, current->device, to->device);
    if (on && !can)
        return 217; /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED */
    snprintf(line, sizeof line, "{\"op\": \"%s\", \"from\": %d, \"to\": %d}\n",
             on ? "cuCtxEnablePeerAccess" : "cuCtxDisablePeerAccess", current->device, to->device);
    log_um(line);
    pthread_mutex_lock(&peer_lock);
    for (i = 0; i < n_peers && !(peers[i].from == current && peers[i].to == to); i++)
        ;
    if (on && i < n_peers) {
        pthread_mutex_unlock(&peer_lock);
        return 704; /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED */
    }
    if (!on && i == n_peers) {
        pthread_mutex_unlock(&peer_lock);
        return 705; /* CUDA_ERROR_PEER_ACCESS_NOT_ENABLED */
    }
    if (on && n_peers < 64) {
        peers[n_peers].from = current;
        peers[n_peers++].to = to;
    } else if (!on) {
        peers[i] = peers[--n_peers];
    }
    pthread_mutex_unlock(&peer_lock);
    return OK;
}

CUresult cuCtxEnablePeerAccess(void *peer, unsigned flags)
{
    return flags ? E_INVALID_VALUE : set_peer(peer, 1);
}
CUresult cuCtxDisablePeerAccess(void *peer) { return set_peer(peer, 0); }

CUresult cuMemcpyPeerAsync(unsigned long long dst, void *dctx, unsigned long long src, void *sctx,
                           size_t n, void *h)
{
    char line[256];
    Alloc *d, *s;
    Op *op;
    IN_CONTEXT();
    pthread_mutex_lock(&lock);
    d = find((uintptr_t)dst);
    s = find((uintptr_t)src);
    pthread_mutex_unlock(&lock);
    if (!d || !s || d->ctx != dctx || s->ctx != sctx || !find(dst + (n ? n - 1 : 0)) ||
        !find(src + (n ? n - 1 : 0)))
        return E_INVALID_VALUE;
    snprintf(line, sizeof line,
             "{\"op\": \"cuMemcpyPeerAsync\", \"dst\": %llu, \"dst_device\": %d, \"src\": %llu, "
             "\"src_device\": %d, \"bytes\": %zu, \"stream\": %llu}\n",
             dst, d->device, src, s->device, n, (unsigned long long)(uintptr_t)h);
    log_um(line);
    op = new_op(OP_COPY);
    op->dst = (void *)(uintptr_t)dst;
    op->src = (const void *)(uintptr_t)src; /* read when it runs */
    op->n = n;
    return submit(h, op);
}

/* The entry points above whose ABI depends on the version asked for: the
 * newest one not newer than both the request and the driver. 1 when symbol
 * is one of these (*st as cuGetProcAddress_v2's status), else 0. */
static int um_proc(const char *symbol, int version, int driver, void **pfn, int *st)
{
    static const struct {
        const char *name;
        int since;
        void *fn;
    } t[] = {
        {"cuMemPrefetchAsync", 12020, (void *)cuMemPrefetchAsync_v2},
        {"cuMemPrefetchAsync", 8000, (void *)cuMemPrefetchAsync},
        {"cuMemAdvise", 12020, (void *)cuMemAdvise_v2},
        {"cuMemAdvise", 8000, (void *)cuMemAdvise},
        {"cuMemAllocManaged", 6000, (void *)cuMemAllocManaged},
        {"cuDeviceCanAccessPeer", 4000, (void *)cuDeviceCanAccessPeer},
        {"cuCtxEnablePeerAccess", 4000, (void *)cuCtxEnablePeerAccess},
        {"cuCtxDisablePeerAccess", 4000, (void *)cuCtxDisablePeerAccess},
        {"cuMemcpyPeerAsync", 4000, (void *)cuMemcpyPeerAsync},
    };
    size_t i;
    int mine = 0;
    *st = 1;
    for (i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (strcmp(t[i].name, symbol) != 0)
            continue;
        mine = 1;
        if (listed("MOCK_CUDA_NOT_FOUND", symbol) || t[i].since > driver)
            continue;
        if (listed("MOCK_CUDA_TOO_NEW", symbol) || version < t[i].since) {
            *st = 2;
            continue;
        }
        *st = 0;
        *pfn = t[i].fn;
        break;
    }
    return mine;
}

const char *mock_managed_log(void) { return um_log ? um_log : ""; }
void mock_managed_clear(void)
{
    pthread_mutex_lock(&lock);
    um_len = 0;
    if (um_log)
        um_log[0] = '\0';
    pthread_mutex_unlock(&lock);
}

/* ---- stream capture and graphs ---- */
#define GRAPH_MAGIC 0x47524150
#define EXEC_MAGIC 0x45584543
#define DEAD_MAGIC 0x44454144

typedef struct Capture {
    unsigned long long id;
    int mode; /* CUstreamCaptureMode: 0 global, 1 thread_local, 2 relaxed */
    pthread_t thread;
    Ctx *ctx;
    Stream *origin;
    CUresult invalidated; /* the error that invalidated it, 0: valid */
    Op *head, *tail;
    struct Capture *next;
} Capture;

typedef struct Graph { /* a CUgraph or a CUgraphExec: the ops, in order */
    unsigned magic;
    Op *head;
} Graph;

static Capture *captures; /* open captures, under qlock */
static unsigned long long capture_ids;
static int live_graphs, live_execs, graph_destroys, bad_destroys, graph_launches, captured_ops;
static __thread int thread_mode; /* cuThreadExchangeStreamCaptureMode's: 0 global */

static unsigned long long capture_id(Stream *s) { return s && s->cap ? s->cap->id : 0; }

static int capture_open(unsigned long long id)
{
    Capture *c;
    int open = 0;
    pthread_mutex_lock(&qlock);
    for (c = captures; c && id; c = c->next)
        open |= c->id == id;
    pthread_mutex_unlock(&qlock);
    return open;
}

static CUresult invalidate(Capture *c, CUresult why)
{
    if (!c->invalidated)
        c->invalidated = why;
    return why;
}

static CUresult capture_record(Stream *s, Op *op)
{
    Capture *c = s->cap;
    CUresult r = c->invalidated ? 901 : OK; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
    if (r != OK || op->kind == OP_EVENT) { /* a record in a capture is an edge, no node */
        free(op->blob);
        free(op);
        return r;
    }
    pthread_mutex_lock(&qlock);
    if (c->tail)
        c->tail->next = op;
    else
        c->head = op;
    c->tail = op;
    captured_ops++;
    pthread_mutex_unlock(&qlock);
    return OK;
}

/* The legacy stream (0, 1) used while a blocking stream of the current
 * context captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, the capture invalidated. */
static CUresult capture_legacy(void *h)
{
    Capture *c;
    CUresult r = OK;
    if ((uintptr_t)h > 1)
        return OK;
    pthread_mutex_lock(&qlock);
    for (c = captures; c; c = c->next)
        if (c->ctx == current && !(c->origin->flags & 1))
            r = invalidate(c, 906);
    pthread_mutex_unlock(&qlock);
    return r;
}

/* cuStreamSynchronize of a capturing stream. */
static CUresult capture_sync(Stream *s)
{
    return s->cap ? invalidate(s->cap, 900) : OK;
}

static CUresult capture_ctx_sync(void)
{
    Capture *c;
    CUresult r = OK;
    pthread_mutex_lock(&qlock);
    for (c = captures; c; c = c->next)
        if (c->ctx == current)
            r = invalidate(c, 900);
    pthread_mutex_unlock(&qlock);
    return r;
}

/* A "potentially unsafe" call (cuMemAlloc, cuMemFree, a synchronous copy) in a
 * thread a capture prohibits it in. */
static CUresult capture_unsafe(void)
{
    Capture *c;
    CUresult r = OK;
    if (thread_mode == 2)
        return OK;
    pthread_mutex_lock(&qlock);
    for (c = captures; c; c = c->next)
        if (c->mode != 2 && (pthread_equal(c->thread, pthread_self()) ||
                             (thread_mode == 0 && c->mode == 0)))
            r = invalidate(c, 900);
    pthread_mutex_unlock(&qlock);
    return r;
}

static CUresult capture_no_memory_node(void *h)
{
    int ok;
    Stream *s = stream_of(h, &ok);
    return s && s->cap ? invalidate(s->cap, 900) : OK;
}

/* cuStreamWaitEvent's part: 1 when the wait is an ordinary one, else what it
 * returns (a capturing stream waiting on an event recorded outside its
 * capture: ISOLATION; a stream waiting on an event of an open capture joins it). */
static CUresult capture_wait(void *h, Event *e)
{
    int ok;
    Capture *c;
    Stream *s = stream_of(h, &ok);
    CUresult r = 1;
    pthread_mutex_lock(&qlock);
    if (s && s->cap) {
        if (s->cap->invalidated)
            r = 901;
        else if (e->recorded && e->cap_id != s->cap->id)
            r = invalidate(s->cap, 905); /* CUDA_ERROR_STREAM_CAPTURE_ISOLATION */
        else
            r = OK;
    } else if (e->cap_id) {
        for (c = captures; c && c->id != e->cap_id; c = c->next)
            ;
        if (c && s)
            s->cap = c; /* forked into the capture */
        r = c && !s ? invalidate(c, 906) : c ? OK : 1;
    }
    pthread_mutex_unlock(&qlock);
    return r;
}

CUresult cuStreamBeginCapture_v2(void *h, int mode)
{
    int ok;
    Stream *s;
    Capture *c;
    FORK_GUARD();
    if (!current)
        return E_INVALID_CONTEXT;
    if ((uintptr_t)h <= 1)
        return 900; /* the legacy stream cannot be captured */
    if (mode < 0 || mode > 2)
        return E_INVALID_VALUE;
    s = stream_of(h, &ok);
    if (!ok || !s)
        return E_INVALID_HANDLE; /* (adopted handles have no queue to capture) */
    pthread_mutex_lock(&qlock);
    if (s->cap) {
        pthread_mutex_unlock(&qlock);
        return 401; /* CUDA_ERROR_ILLEGAL_STATE */
    }
    c = calloc(1, sizeof *c);
    c->id = ++capture_ids;
    c->mode = mode;
    c->thread = pthread_self();
    c->ctx = s->ctx;
    c->origin = s;
    c->next = captures;
    captures = c;
    s->cap = c;
    pthread_mutex_unlock(&qlock);
    return OK;
}

static void free_ops(Op *op)
{
    Op *next;
    for (; op; op = next) {
        next = op->next;
        free(op->blob);
        free(op);
    }
}

CUresult cuStreamEndCapture(void *h, void **graph)
{
    int ok;
    Stream *s, *t;
    Capture *c, **pp;
    Graph *g;
    CUresult r;
    FORK_GUARD();
    *graph = NULL;
    s = stream_of(h, &ok);
    if (!ok || !s)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&qlock);
    c = s->cap;
    r = !c ? 401 : c->origin != s ? 903 /* UNMATCHED */
        : c->mode != 2 && !pthread_equal(c->thread, pthread_self()) ? 908 /* WRONG_THREAD */
        : OK;
    if (r != OK) {
        if (r == 908)
            invalidate(c, 908);
        pthread_mutex_unlock(&qlock);
        return r;
    }
    for (pp = &captures; *pp != c; pp = &(*pp)->next)
        ;
    *pp = c->next;
    for (t = streams; t; t = t->next)
        if (t->cap == c)
            t->cap = NULL;
    pthread_mutex_unlock(&qlock);
    if (c->invalidated) {
        free_ops(c->head);
        free(c);
        return 901;
    }
    g = calloc(1, sizeof *g);
    g->magic = GRAPH_MAGIC;
    g->head = c->head;
    free(c);
    pthread_mutex_lock(&lock);
    live_graphs++;
    pthread_mutex_unlock(&lock);
    *graph = g;
    return OK;
}

static CUresult capture_status(void *h, int *status, unsigned long long *id)
{
    int ok;
    Stream *s;
    Capture *c;
    FORK_GUARD();
    s = stream_of(h, &ok);
    if (!ok)
        return E_INVALID_HANDLE;
    if (!s && (uintptr_t)h <= 1) { /* IMPLICIT, the capture left as it is */
        for (c = captures; c; c = c->next)
            if (c->ctx == current && !(c->origin->flags & 1))
                return 906;
    }
    pthread_mutex_lock(&qlock);
    *status = s && s->cap ? (s->cap->invalidated ? 2 : 1) : 0;
    if (id)
        *id = s && s->cap ? s->cap->id : 0;
    pthread_mutex_unlock(&qlock);
    return OK;
}

CUresult cuStreamIsCapturing(void *h, int *status) { return capture_status(h, status, NULL); }

CUresult cuStreamGetCaptureInfo_v2(void *h, int *status, unsigned long long *id, void **graph,
                                   const void ***deps, size_t *ndeps)
{
    if (graph)
        *graph = NULL;
    if (deps)
        *deps = NULL;
    if (ndeps)
        *ndeps = 0;
    return capture_status(h, status, id);
}

static Op *copy_ops(const Op *op)
{
    Op *head = NULL, **tail = &head;
    for (; op; op = op->next) {
        Op *o = malloc(sizeof *o);
        *o = *op;
        o->next = NULL;
        if (op->blob) {
            o->blob = malloc(op->blob_n ? op->blob_n : 1);
            memcpy(o->blob, op->blob, op->blob_n);
        }
        *tail = o;
        tail = &o->next;
    }
    return head;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags)
{
    Graph *g = graph, *x;
    FORK_GUARD();
    if (!g || g->magic != GRAPH_MAGIC || flags)
        return E_INVALID_VALUE;
    x = calloc(1, sizeof *x);
    x->magic = EXEC_MAGIC;
    x->head = copy_ops(g->head);
    pthread_mutex_lock(&lock);
    live_execs++;
    pthread_mutex_unlock(&lock);
    *exec = x;
    return OK;
}

/* Queues copies of the graph's work on h, in order. */
CUresult cuGraphLaunch(void *exec, void *h)
{
    Graph *x = exec;
    Op *op, *next;
    CUresult r = OK;
    int ok;
    FORK_GUARD();
    STICKY();
    if (!x || x->magic != EXEC_MAGIC)
        return E_INVALID_VALUE;
    if (!stream_of(h, &ok) && !ok)
        return E_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    graph_launches++;
    pthread_mutex_unlock(&lock);
    for (op = copy_ops(x->head); op; op = next) {
        next = op->next;
        op->next = NULL;
        if (op->kind == OP_EVENT) {
            op->ev->recorded = 1;
            op->ev->pending = 1;
            op->ev->cap_id = 0;
            op->ev->handle = h;
            op->ev->stream = stream_of(h, &ok);
        }
        if (r == OK)
            r = submit(h, op);
        else
            free_ops(op);
    }
    return r;
}

static CUresult destroy_graph(Graph *g, unsigned magic, int *live)
{
    pthread_mutex_lock(&lock);
    graph_destroys++;
    if (!g || g->magic != magic) {
        bad_destroys++;
        pthread_mutex_unlock(&lock);
        return E_INVALID_VALUE;
    }
    (*live)--;
    pthread_mutex_unlock(&lock);
    free_ops(g->head);
    g->head = NULL;
    g->magic = DEAD_MAGIC; /* kept, so that a second destroy is seen */
    return OK;
}
CUresult cuGraphExecDestroy(void *exec) { return destroy_graph(exec, EXEC_MAGIC, &live_execs); }
CUresult cuGraphDestroy(void *graph) { return destroy_graph(graph, GRAPH_MAGIC, &live_graphs); }

CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
    int old = thread_mode;
    if (*mode < 0 || *mode > 2)
        return E_INVALID_VALUE;
    thread_mode = *mode;
    *mode = old;
    return OK;
}

/* For the tests: a capture begun and ended as another library would (raw
 * driver calls on a stream handle, in the current context): the end gives
 * an instantiated graph (its graph destroyed), launched and destroyed here. */
int mock_capture_begin(unsigned long long h, int mode)
{
    return cuStreamBeginCapture_v2((void *)(uintptr_t)h, mode);
}
int mock_capture_end(unsigned long long h, void **exec)
{
    void *g = NULL;
    CUresult r = cuStreamEndCapture((void *)(uintptr_t)h, &g);
    *exec = NULL;
    if (r != OK)
        return r;
    r = cuGraphInstantiateWithFlags(exec, g, 0);
    cuGraphDestroy(g);
    return r;
}
int mock_graph_launch(void *exec, unsigned long long h) { return cuGraphLaunch(exec, (void *)(uintptr_t)h); }
int mock_graph_exec_destroy(void *exec) { return cuGraphExecDestroy(exec); }
/* The capture status of h in the current context: 0 none, 1 active, 2 invalidated. */
int mock_capture_status(unsigned long long h)
{
    int st = -1;
    return capture_status((void *)(uintptr_t)h, &st, NULL) == OK ? st : -1;
}
int mock_open_captures(void)
{
    Capture *c;
    int n = 0;
    pthread_mutex_lock(&qlock);
    for (c = captures; c; c = c->next)
        n++;
    pthread_mutex_unlock(&qlock);
    return n;
}
/* Live CUgraphs and CUgraphExecs, destroy calls, destroys of a handle not live, graph launches,
 * operations recorded into captures. */
int mock_graphs_live(void) { return live_graphs + live_execs; }
int mock_graph_destroys(void) { return graph_destroys; }
int mock_bad_destroys(void) { return bad_destroys; }
int mock_graph_launches(void) { return graph_launches; }
int mock_captured_ops(void) { return captured_ops; }

/* ---- cuGetProcAddress ---- */
typedef struct Sym {
    const char *name;
    int since;   /* the CUDA version this ABI of the symbol appeared in */
    void *fn;
} Sym;

#define S(name, since, fn) {name, since, (void *)fn}
static const Sym syms[] = {
    S("cuInit", 2000, cuInit),
    S("cuDriverGetVersion", 2020, cuDriverGetVersion),
    S("cuGetErrorName", 6000, cuGetErrorName),
    S("cuGetErrorString", 6000, cuGetErrorString),
    S("cuDeviceGetCount", 2000, cuDeviceGetCount),
    S("cuDeviceGet", 2000, cuDeviceGet),
    S("cuDeviceGetName", 2000, cuDeviceGetName),
    S("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    S("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    S("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
    S("cuCtxGetDevice", 2000, cuCtxGetDevice),
    S("cuCtxSynchronize", 2000, cuCtxSynchronize),
    S("cuMemAlloc", 3020, cuMemAlloc_v2),
    S("cuMemFree", 3020, cuMemFree_v2),
    S("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
    S("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
    S("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    S("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
    S("cuModuleGetFunction", 2000, cuModuleGetFunction),
    S("cuModuleUnload", 2000, cuModuleUnload),
    S("cuLaunchKernel", 4000, cuLaunchKernel),
    S("cuStreamSynchronize", 2000, cuStreamSynchronize),
    S("cuLibraryLoadData", 12000, cuLibraryLoadData),
    S("cuLibraryUnload", 12000, cuLibraryUnload),
    S("cuLibraryGetKernel", 12000, cuLibraryGetKernel),
    S("cuKernelGetName", 12030, cuKernelGetName),
    S("cuFuncGetName", 12030, cuFuncGetName),
    S("cuLibraryGetKernelCount", 12040, cuLibraryGetKernelCount),
    S("cuLibraryEnumerateKernels", 12040, cuLibraryEnumerateKernels),
    S("cuModuleGetFunctionCount", 12040, cuModuleGetFunctionCount),
    S("cuModuleEnumerateFunctions", 12040, cuModuleEnumerateFunctions),
    S("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo),
    S("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    S("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
    S("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
    S("cuMemsetD8Async", 3020, cuMemsetD8Async_v2),
    S("cuMemHostAlloc", 2020, cuMemHostAlloc),
    S("cuMemFreeHost", 2000, cuMemFreeHost),
    S("cuEventCreate", 2000, cuEventCreate),
    S("cuEventRecord", 2000, cuEventRecord),
    S("cuEventQuery", 2000, cuEventQuery),
    S("cuEventSynchronize", 2000, cuEventSynchronize),
    S("cuEventDestroy", 4000, cuEventDestroy_v2),
    S("cuEventElapsedTime", 2000, cuEventElapsedTime),
    S("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
    S("cuStreamCreate", 2000, cuStreamCreate),
    S("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    S("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    S("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
    S("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
    S("cuKernelGetAttribute", 12000, cuKernelGetAttribute),
    S("cuKernelSetAttribute", 12000, cuKernelSetAttribute),
    S("cuKernelGetFunction", 12000, cuKernelGetFunction),
    S("cuStreamGetCtx", 9020, cuStreamGetCtx),
    S("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    S("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
      cuOccupancyMaxActiveBlocksPerMultiprocessor),
    S("cuOccupancyMaxPotentialBlockSize", 6050, cuOccupancyMaxPotentialBlockSize),
    S("cuLibraryGetGlobal", 12000, cuLibraryGetGlobal),
    S("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
    S("cuMemAllocAsync", 11020, cuMemAllocAsync),
    S("cuMemFreeAsync", 11020, cuMemFreeAsync),
    S("cuDeviceGetDefaultMemPool", 11020, cuDeviceGetDefaultMemPool),
    S("cuMemPoolSetAttribute", 11020, cuMemPoolSetAttribute),
    S("cuMemcpyAsync", 4000, cuMemcpyAsync),
    S("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2),
    S("cuStreamEndCapture", 10000, cuStreamEndCapture),
    S("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
    S("cuStreamGetCaptureInfo", 11030, cuStreamGetCaptureInfo_v2),
    S("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    S("cuGraphLaunch", 10000, cuGraphLaunch),
    S("cuGraphExecDestroy", 10000, cuGraphExecDestroy),
    S("cuGraphDestroy", 10000, cuGraphDestroy),
    S("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode),
};
#undef S

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, unsigned long long flags,
                             int *status)
{
    char line[512];
    int driver = env_int("MOCK_CUDA_VERSION", 12080), st = 1;
    size_t i;

    snprintf(line, sizeof line, "{\"symbol\": \"%s\", \"version\": %d, \"flags\": %llu}\n",
             symbol, version, flags);
    pthread_mutex_lock(&lock);
    append(&proc_log, &proc_len, &proc_cap, line);
    pthread_mutex_unlock(&lock);
    *pfn = NULL;
    if (um_proc(symbol, version, driver, pfn, &st)) { /* managed memory, peer access */
        if (status)
            *status = st;
        return st ? E_NOT_FOUND : OK;
    }
    for (i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        if (strcmp(syms[i].name, symbol) != 0)
            continue;
        if (listed("MOCK_CUDA_NOT_FOUND", symbol) || syms[i].since > driver)
            st = 1;
        else if (listed("MOCK_CUDA_TOO_NEW", symbol) || version < syms[i].since)
            st = 2;
        else
            st = 0;
        break;
    }
    if (status)
        *status = st;
    if (st != 0)
        return E_NOT_FOUND;
    *pfn = syms[i].fn;
    return OK;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, unsigned long long flags)
{
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}

/* ---- for the tests (ctypes) ---- */
const char *mock_proc_log(void) { return proc_log ? proc_log : ""; }
const char *mock_launch_log(void) { return launch_log ? launch_log : ""; }
const char *mock_sync_log(void) { return sync_log ? sync_log : ""; }
const char *mock_gil_log(void) { return gil_log ? gil_log : ""; }
int mock_launch_count(void) { return n_launches; }
int mock_live_allocs(void) { return live_allocs; }
void mock_clear_logs(void)
{
    pthread_mutex_lock(&lock);
    launch_len = sync_len = 0;
    if (launch_log)
        launch_log[0] = '\0';
    if (sync_log)
        sync_log[0] = '\0';
    attr_len = 0;
    if (attr_log)
        attr_log[0] = '\0';
    mem_len = ex_len = 0;
    if (mem_log)
        mem_log[0] = '\0';
    if (ex_log)
        ex_log[0] = '\0';
    gil_len = 0;
    if (gil_log)
        gil_log[0] = '\0';
    n_launches = 0;
    pthread_mutex_unlock(&lock);
}
/* Device (or managed) memory for fake __cuda_array_interface__/DLPack objects. */
unsigned long long mock_malloc(size_t n, int device, int managed)
{
    return (uintptr_t)track(n, device, managed);
}
void mock_free(unsigned long long p) { cuMemFree_v2(p); }
int mock_in_sync(void) { return in_sync; }
/* 1 while a JIT deferred by lazy loading runs (MOCK_CUDA_SLEEP_MS long). */
int mock_in_jit(void) { return in_jit; }
/* Calls made in a child of fork() (all refused), cuPointerGetAttributes
 * calls, cuKernelGetFunction calls. */
int mock_calls_after_fork(void) { return calls_after_fork; }
int mock_ptr_queries(void) { return ptr_queries; }
int mock_get_functions(void) { return get_functions; }
/* The sticky error of the current context (0: none). */
int mock_sticky(void) { return current ? current->sticky : 0; }
/* Work held on streams, not yet run. */
int mock_pending(void) { return n_pending; }
/* A context that is not a device's primary one (as cuCtxCreate makes), and
 * the calling thread's current context (NULL: none), for ctypes. */
void *mock_ctx_create(int device)
{
    Ctx *c = calloc(1, sizeof *c);
    c->device = device;
    return c;
}
void *mock_ctx_current(void) { return current; }
void mock_ctx_set(void *ctx) { current = ctx; }
/* The thread's current context's device, or -1. */
int mock_current_device(void) { return current ? current->device : -1; }
