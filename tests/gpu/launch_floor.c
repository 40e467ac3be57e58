/* launch_floor.c - the floor of a kernel launch's host cost: cuLaunchKernel
 * called directly, for the device check to hold bindthem against.
 *
 *   launch_floor MODULE KERNEL BURSTS BURST_LEN
 *
 * Loads MODULE (cubin/fatbin/PTX) into device 0's primary context, then
 * BURSTS times: BURST_LEN launches of KERNEL(float *y, int n) with grid 1,
 * block 32 on the legacy stream, timed on the host (CLOCK_MONOTONIC), then
 * cuCtxSynchronize (untimed). Prints JSON: the median and minimum host time
 * per launch in microseconds. libcuda is opened with dlopen (never linked);
 * entry points are those of the CUDA versions named. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;

static void *dl;

static void *sym(const char *name)
{
    void *p = dlsym(dl, name);
    if (!p) {
        fprintf(stderr, "launch_floor: libcuda has no %s\n", name);
        exit(2);
    }
    return p;
}

static void check(CUresult r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "launch_floor: %s failed: CUresult %d\n", what, r);
        exit(1);
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    long n;
    char *buf;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "launch_floor: cannot read %s\n", path);
        exit(2);
    }
    buf = calloc((size_t)n + 1, 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "launch_floor: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
    CUresult (*cuCtxSynchronize)(void);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                               unsigned, unsigned, CUstream, void **, void **);
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr y;
    int n = 32, bursts, len, b, i;
    void *params[2];
    double *per;
    char *image;

    if (argc != 5 || (bursts = atoi(argv[3])) < 1 || (len = atoi(argv[4])) < 1) {
        fprintf(stderr, "usage: launch_floor MODULE KERNEL BURSTS BURST_LEN\n");
        return 2;
    }
    dl = dlopen(getenv("BINDTHEM_LIBCUDA") ? getenv("BINDTHEM_LIBCUDA") : "libcuda.so.1",
                RTLD_NOW);
    if (!dl) {
        fprintf(stderr, "launch_floor: %s\n", dlerror());
        return 2;
    }
    /* the exported names of the ABIs bindthem asks cuGetProcAddress for */
    *(void **)&cuInit = sym("cuInit");
    *(void **)&cuDevicePrimaryCtxRetain = sym("cuDevicePrimaryCtxRetain");
    *(void **)&cuCtxSetCurrent = sym("cuCtxSetCurrent");
    *(void **)&cuModuleLoadDataEx = sym("cuModuleLoadDataEx");
    *(void **)&cuModuleGetFunction = sym("cuModuleGetFunction");
    *(void **)&cuMemAlloc = sym("cuMemAlloc_v2");
    *(void **)&cuCtxSynchronize = sym("cuCtxSynchronize");
    *(void **)&cuLaunchKernel = sym("cuLaunchKernel");
    image = read_file(argv[1]);
    check(cuInit(0), "cuInit");
    check(cuDevicePrimaryCtxRetain(&ctx, 0), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    check(cuModuleLoadDataEx(&mod, image, 0, NULL, NULL), "cuModuleLoadDataEx");
    check(cuModuleGetFunction(&fn, mod, argv[2]), "cuModuleGetFunction");
    check(cuMemAlloc(&y, n * sizeof(float)), "cuMemAlloc");
    params[0] = &y;
    params[1] = &n;
    per = calloc((size_t)bursts, sizeof *per);
    for (i = 0; i < len; i++) /* warm-up */
        check(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    for (b = 0; b < bursts; b++) {
        double t0 = now_us();
        for (i = 0; i < len; i++)
            check(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
        per[b] = (now_us() - t0) / len;
        check(cuCtxSynchronize(), "cuCtxSynchronize");
    }
    qsort(per, (size_t)bursts, sizeof *per, cmp);
    printf("{\"median_us\": %.4f, \"min_us\": %.4f, \"bursts\": %d, \"burst_len\": %d}\n",
           per[bursts / 2], per[0], bursts, len);
    free(per);
    free(image);
    return 0;
}
