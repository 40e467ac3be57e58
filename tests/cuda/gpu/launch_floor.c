/* launch_floor.c - the floor of a kernel launch's host cost: cuLaunchKernel
 * called directly, for the device check to hold bindthem against. Built as
 * a shared library (build_kernels.py) that test_gpu.py loads with ctypes,
 * so that its bursts interleave with bindthem's and CuPy's in one process
 * and one context (device 0's primary one, which bindthem uses too):
 *
 *   int floor_open(const char *module, const char *kernel)
 *       loads MODULE (cubin/fatbin/PTX) and finds KERNEL(float *y, int n);
 *       0, or non-zero with the reason in floor_error()
 *   int floor_burst(int len, double *host_us, double *event_us)
 *       len launches of KERNEL with grid 1, block 32 on the legacy stream,
 *       timed on the host (CLOCK_MONOTONIC) and by two CUDA events around
 *       them, each as microseconds per launch; then cuCtxSynchronize
 *       (untimed). 0, or non-zero with floor_error() set.
 *
 * libcuda is opened with dlopen (never linked), by the exported names of
 * the ABIs bindthem asks cuGetProcAddress for. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;

static struct {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuEventCreate)(CUevent *, unsigned);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUcontext ctx;
    CUfunction fn;
    CUdeviceptr y;
    CUevent start, end;
    int n;
    void *params[2];
} f;

static char error[512];

const char *floor_error(void) { return error; }

static int fail(const char *what, CUresult r)
{
    snprintf(error, sizeof error, "launch_floor: %s failed: CUresult %d", what, r);
    return r ? r : -1;
}

#define CALL(what, call)                                                                           \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != 0)                                                                               \
            return fail(what, r_);                                                                 \
    } while (0)

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static char *read_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    long n;
    char *buf = NULL;
    if (fp && fseek(fp, 0, SEEK_END) == 0 && (n = ftell(fp)) >= 0 && fseek(fp, 0, SEEK_SET) == 0 &&
        (buf = calloc((size_t)n + 1, 1)) && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (fp)
        fclose(fp);
    return buf;
}

int floor_open(const char *module, const char *kernel)
{
    const char *path = getenv("BINDTHEM_LIBCUDA") ? getenv("BINDTHEM_LIBCUDA") : "libcuda.so.1";
    void *dl = dlopen(path, RTLD_NOW);
    CUmodule mod;
    CUresult r;
    char *image;
    static const char *names[] = {"cuInit",
                                  "cuDevicePrimaryCtxRetain",
                                  "cuCtxSetCurrent",
                                  "cuModuleLoadDataEx",
                                  "cuModuleGetFunction",
                                  "cuMemAlloc_v2",
                                  "cuCtxSynchronize",
                                  "cuEventCreate",
                                  "cuEventRecord",
                                  "cuEventSynchronize",
                                  "cuEventElapsedTime",
                                  "cuLaunchKernel"};
    void **slots[] = {(void **)&f.cuInit,
                      (void **)&f.cuDevicePrimaryCtxRetain,
                      (void **)&f.cuCtxSetCurrent,
                      (void **)&f.cuModuleLoadDataEx,
                      (void **)&f.cuModuleGetFunction,
                      (void **)&f.cuMemAlloc,
                      (void **)&f.cuCtxSynchronize,
                      (void **)&f.cuEventCreate,
                      (void **)&f.cuEventRecord,
                      (void **)&f.cuEventSynchronize,
                      (void **)&f.cuEventElapsedTime,
                      (void **)&f.cuLaunchKernel};
    size_t i;

    if (!dl) {
        snprintf(error, sizeof error, "launch_floor: %s", dlerror());
        return -1;
    }
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*slots[i] = dlsym(dl, names[i]))) {
            snprintf(error, sizeof error, "launch_floor: libcuda has no %s", names[i]);
            return -1;
        }
    if (!(image = read_file(module))) {
        snprintf(error, sizeof error, "launch_floor: cannot read %s", module);
        return -1;
    }
    CALL("cuInit", f.cuInit(0));
    CALL("cuDevicePrimaryCtxRetain", f.cuDevicePrimaryCtxRetain(&f.ctx, 0));
    CALL("cuCtxSetCurrent", f.cuCtxSetCurrent(f.ctx));
    r = f.cuModuleLoadDataEx(&mod, image, 0, NULL, NULL);
    free(image);
    if (r != 0)
        return fail("cuModuleLoadDataEx", r);
    CALL("cuModuleGetFunction", f.cuModuleGetFunction(&f.fn, mod, kernel));
    f.n = 32;
    CALL("cuMemAlloc", f.cuMemAlloc(&f.y, f.n * sizeof(float)));
    CALL("cuEventCreate", f.cuEventCreate(&f.start, 0));
    CALL("cuEventCreate", f.cuEventCreate(&f.end, 0));
    f.params[0] = &f.y;
    f.params[1] = &f.n;
    return 0;
}

int floor_burst(int len, double *host_us, double *event_us)
{
    double t0;
    float ms = 0;
    int i;

    CALL("cuCtxSetCurrent", f.cuCtxSetCurrent(f.ctx));
    CALL("cuEventRecord", f.cuEventRecord(f.start, NULL));
    t0 = now_us();
    for (i = 0; i < len; i++)
        CALL("cuLaunchKernel", f.cuLaunchKernel(f.fn, 1, 1, 1, 32, 1, 1, 0, NULL, f.params, NULL));
    *host_us = (now_us() - t0) / len;
    CALL("cuEventRecord", f.cuEventRecord(f.end, NULL));
    CALL("cuEventSynchronize", f.cuEventSynchronize(f.end));
    CALL("cuEventElapsedTime", f.cuEventElapsedTime(&ms, f.start, f.end));
    *event_us = ms * 1e3 / len;
    CALL("cuCtxSynchronize", f.cuCtxSynchronize());
    return 0;
}
