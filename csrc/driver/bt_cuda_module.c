/* bt_cuda_module.c - modules: an image loaded (a cuLibrary on 12.0+
 * drivers, else a module in a primary context) and unloaded; its kernels by
 * name, their names and parameter layout, a CUkernel's CUfunction, its
 * globals; a JIT that lazy loading deferred, reported with its log. */
#include "bt_cuda_impl.h"

#include <stdlib.h>
#include <string.h>

struct BtCudaModule {
    BtCUlibrary lib; /* cuLibraryLoadData (12.0+) */
    BtCUmodule mod;  /* cuModuleLoadDataEx, in device's primary context */
    int device;      /* the device it was loaded for (a cuLibrary: its queries' context) */
    char *image;     /* our NUL-terminated copy, alive as long as the module */
    /* the PTX JIT's log buffer, given at load time and alive as long as the
     * module: with lazy loading (CUDA_MODULE_LOADING=LAZY, the default since
     * 12.2) the JIT may run later, at cuLibraryGetKernel or the first launch */
    char log[4096];
};

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
    m->device = dev;
    if (bt_cuda_drv.cuLibraryLoadData) {
        r = bt_cuda_drv.cuLibraryLoadData(&m->lib, m->image, opts, vals, 2, NULL, NULL, 0);
    } else {
        void *ctx, *prev;
        if (bt_cuda_primary_ctx(dev, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
            goto error;
        r = bt_cuda_drv.cuModuleLoadDataEx(&m->mod, m->image, 2, opts, vals);
        bt_cuda_leave(ctx, prev);
    }
    if (r != CUDA_SUCCESS_) {
        m->log[sizeof m->log - 1] = '\0';
        if (m->log[0])
            bt_diag_fail(e, BT_DIAG_CUDA, r, "%s failed (PTX JIT log follows):\n%s",
                         bt_cuda_drv.cuLibraryLoadData ? "cuLibraryLoadData" : "cuModuleLoadDataEx",
                         m->log);
        else
            bt_cuda_fail(e, r, "%s",
                         bt_cuda_drv.cuLibraryLoadData ? "cuLibraryLoadData"
                                                       : "cuModuleLoadDataEx");
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
        bt_cuda_drv.cuLibraryUnload(m->lib);
    if (LIVE() && m->mod)
        bt_cuda_drv.cuModuleUnload(m->mod);
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
    bt_cuda_describe(r, why, sizeof why);
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
        bt_cuda_fork_fail(e);
        return NULL;
    }
    if (m->lib)
        r = bt_cuda_drv.cuLibraryGetKernel(&k, m->lib, name);
    else
        r = bt_cuda_drv.cuModuleGetFunction(&k, m->mod, name);
    if (r != CUDA_SUCCESS_ &&
        deferred_jit(m, r, m->lib ? "cuLibraryGetKernel" : "cuModuleGetFunction", name, e))
        return NULL;
    if (r == CUDA_ERROR_NOT_FOUND_) {
        *missing = 1;
        return NULL;
    }
    if (r != CUDA_SUCCESS_) {
        bt_cuda_fail(e, r, "%s(\"%s\")", m->lib ? "cuLibraryGetKernel" : "cuModuleGetFunction",
                     name);
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
    bt_cuda_version_text(bt_cuda_drv.version, have, sizeof have);
    if (m->lib ? !(bt_cuda_drv.cuLibraryGetKernelCount && bt_cuda_drv.cuLibraryEnumerateKernels &&
                   bt_cuda_drv.cuKernelGetName)
               : !(bt_cuda_drv.cuModuleGetFunctionCount && bt_cuda_drv.cuModuleEnumerateFunctions &&
                   bt_cuda_drv.cuFuncGetName))
        return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                            "the CUDA %s driver cannot list a module's kernels (12.4+ can)", have);
    r = m->lib ? bt_cuda_drv.cuLibraryGetKernelCount(&count, m->lib)
               : bt_cuda_drv.cuModuleGetFunctionCount(&count, m->mod);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s",
                            m->lib ? "cuLibraryGetKernelCount" : "cuModuleGetFunctionCount");
    ks = bt_arena_alloc(arena, sizeof(void *) * (count + 1));
    out = bt_arena_alloc(arena, sizeof(char *) * (count + 1));
    if (!ks || !out)
        return bt_diag_fail(e, BT_DIAG_NOMEM, 0, "out of memory");
    r = m->lib ? bt_cuda_drv.cuLibraryEnumerateKernels(ks, count, m->lib)
               : bt_cuda_drv.cuModuleEnumerateFunctions(ks, count, m->mod);
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s",
                            m->lib ? "cuLibraryEnumerateKernels" : "cuModuleEnumerateFunctions");
    for (i = 0; i < count; i++) {
        const char *s = NULL;
        r = m->lib ? bt_cuda_drv.cuKernelGetName(&s, ks[i]) : bt_cuda_drv.cuFuncGetName(&s, ks[i]);
        if (r != CUDA_SUCCESS_)
            return bt_cuda_fail(e, r, "%s", m->lib ? "cuKernelGetName" : "cuFuncGetName");
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
    void *ctx, *prev;

    if (m->lib ? !bt_cuda_drv.cuKernelGetParamInfo : !bt_cuda_drv.cuFuncGetParamInfo) {
        bt_cuda_version_text(bt_cuda_drv.version, have, sizeof have);
        return bt_diag_fail(e, BT_DIAG_UNSUPPORTED, 0,
                            "the CUDA %s driver cannot report kernel parameters (12.4+ can)", have);
    }
    /* a real driver (580, CUDA 13.0) answers CUDA_ERROR_INVALID_CONTEXT on a
     * thread with no current context, even for a context-independent
     * CUkernel: asked in the primary context of the device it was loaded for */
    if (bt_cuda_primary_ctx(m->device, &ctx, e) < 0 || bt_cuda_enter(ctx, &prev, e) < 0)
        return -1;
    r = m->lib ? bt_cuda_drv.cuKernelGetParamInfo(kernel, i, offset, size)
               : bt_cuda_drv.cuFuncGetParamInfo(kernel, i, offset, size);
    bt_cuda_leave(ctx, prev);
    if (r == CUDA_ERROR_INVALID_VALUE_)
        return 1;
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(parameter %zu)",
                            m->lib ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo", i);
    return 0;
}

int bt_cuda_kernel_function(BtCudaModule *m, void *kernel, const char *name, void **func, BtDiag *e)
{
    BtCUresult r;

    *func = kernel;
    if (!m->lib || !bt_cuda_drv.cuKernelGetFunction) /* a module's kernel is a CUfunction */
        return 0;
    if (FORKED())
        return bt_cuda_fork_fail(e);
    r = bt_cuda_drv.cuKernelGetFunction(func, kernel);
    if (r != CUDA_SUCCESS_) {
        *func = NULL;
        if (!deferred_jit(m, r, "cuKernelGetFunction", name, e))
            bt_cuda_fail(e, r, "cuKernelGetFunction(\"%s\")", name);
        return -1;
    }
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
        return bt_cuda_fork_fail(e);
    if (m->lib && !bt_cuda_drv.cuLibraryGetGlobal)
        return bt_cuda_unsupported(e, "cuLibraryGetGlobal", "12.0");
    r = m->lib ? bt_cuda_drv.cuLibraryGetGlobal(&p, &n, m->lib, name)
               : bt_cuda_drv.cuModuleGetGlobal(&p, &n, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND_) {
        *missing = 1;
        return 0;
    }
    if (r != CUDA_SUCCESS_)
        return bt_cuda_fail(e, r, "%s(\"%s\")", m->lib ? "cuLibraryGetGlobal" : "cuModuleGetGlobal",
                            name);
    *ptr = p;
    *size = n;
    return 0;
}
