/* bt_nvrtc.c - libnvrtc via dlopen: compile, lowered names, logs. */
#include "bt_nvrtc.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nvrtc.h's types, as of CUDA 11.2 (the ABI is stable across 11-13). */
typedef int BtNvrtcResult;
typedef void *BtNvrtcProgram;

typedef struct Api {
    const char *(*GetErrorString)(BtNvrtcResult);
    BtNvrtcResult (*Version)(int *, int *);
    BtNvrtcResult (*GetNumSupportedArchs)(int *);
    BtNvrtcResult (*GetSupportedArchs)(int *);
    BtNvrtcResult (*CreateProgram)(BtNvrtcProgram *, const char *, const char *, int,
                                   const char *const *, const char *const *);
    BtNvrtcResult (*DestroyProgram)(BtNvrtcProgram *);
    BtNvrtcResult (*CompileProgram)(BtNvrtcProgram, int, const char *const *);
    BtNvrtcResult (*GetPTXSize)(BtNvrtcProgram, size_t *);
    BtNvrtcResult (*GetPTX)(BtNvrtcProgram, char *);
    BtNvrtcResult (*GetCUBINSize)(BtNvrtcProgram, size_t *);
    BtNvrtcResult (*GetCUBIN)(BtNvrtcProgram, char *);
    BtNvrtcResult (*GetProgramLogSize)(BtNvrtcProgram, size_t *);
    BtNvrtcResult (*GetProgramLog)(BtNvrtcProgram, char *);
    BtNvrtcResult (*AddNameExpression)(BtNvrtcProgram, const char *);
    BtNvrtcResult (*GetLoweredName)(BtNvrtcProgram, const char *, const char **);
} Api;

static const struct {
    const char *name;
    size_t offset;
} symbols[] = {
#define SYM(n)                                                                                     \
    {                                                                                              \
        "nvrtc" #n, offsetof(Api, n)                                                               \
    }
    SYM(GetErrorString),    SYM(Version),           SYM(GetNumSupportedArchs),
    SYM(GetSupportedArchs), SYM(CreateProgram),     SYM(DestroyProgram),
    SYM(CompileProgram),    SYM(GetPTXSize),        SYM(GetPTX),
    SYM(GetCUBINSize),      SYM(GetCUBIN),          SYM(GetProgramLogSize),
    SYM(GetProgramLog),     SYM(AddNameExpression), SYM(GetLoweredName),
#undef SYM
};

void bt_nvrtc_output_free(BtNvrtcOutput *out)
{
    int i;
    for (i = 0; i < out->nlowered; i++)
        free(out->lowered[i]);
    free(out->lowered);
    free(out->image);
    free(out->log);
    memset(out, 0, sizeof *out);
}

/* The one kind of error besides memory: NVRTC missing or failing. */
#define fail(e, code, ...) bt_diag_fail(e, BT_DIAG_BUILD, code, __VA_ARGS__)

static int open_api(const char *lib, Api *api, BtDiag *e)
{
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    size_t i;
    if (!dl) {
        const char *why = dlerror();
        return fail(e, 0, "cannot load %s: %s", lib, why ? why : "dlopen failed");
    }
    for (i = 0; i < sizeof symbols / sizeof *symbols; i++) {
        void *p = dlsym(dl, symbols[i].name);
        if (!p)
            return fail(e, 0, "%s has no %s (NVRTC 11.2 or newer is needed)", lib, symbols[i].name);
        memcpy((char *)api + symbols[i].offset, &p, sizeof p);
    }
    return 0;
}

static int call_failed(const Api *api, BtDiag *e, BtNvrtcResult r, const char *what)
{
    const char *s = api->GetErrorString(r);
    return fail(e, r, "%s: %s", what, s ? s : "unknown nvrtcResult");
}

int bt_nvrtc_info(const char *lib, int *major, int *minor, int **archs, int *narchs, BtArena *arena,
                  BtDiag *e)
{
    Api api;
    BtNvrtcResult r;
    int n = 0;

    if (open_api(lib, &api, e) < 0)
        return -1;
    if ((r = api.Version(major, minor)) != 0)
        return call_failed(&api, e, r, "nvrtcVersion");
    if ((r = api.GetNumSupportedArchs(&n)) != 0)
        return call_failed(&api, e, r, "nvrtcGetNumSupportedArchs");
    *archs = n > 0 ? bt_arena_alloc(arena, (size_t)n * sizeof **archs) : NULL;
    if (n > 0 && !*archs)
        return bt_diag_nomem(e);
    if (n > 0 && (r = api.GetSupportedArchs(*archs)) != 0)
        return call_failed(&api, e, r, "nvrtcGetSupportedArchs");
    *narchs = n;
    return 0;
}

/* The program's log, malloc'd ("" when it has none), or NULL without memory. */
static char *program_log(const Api *api, BtNvrtcProgram prog)
{
    size_t n = 0;
    char *log;
    if (api->GetProgramLogSize(prog, &n) != 0 || n == 0)
        n = 1;
    log = calloc(n + 1, 1);
    if (log && n > 1 && api->GetProgramLog(prog, log) != 0)
        log[0] = '\0';
    return log;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* The lowered name of each of exprs[nexprs] (added before the compile)
 * into out->lowered, malloc'd, counted in out->nlowered. 0 or -1. */
static int lowered_names(const Api *api, BtNvrtcProgram prog, const char *const *exprs, int nexprs,
                         BtNvrtcOutput *out, BtDiag *e)
{
    BtNvrtcResult r;
    int i;

    out->lowered = nexprs > 0 ? calloc((size_t)nexprs, sizeof *out->lowered) : NULL;
    if (nexprs > 0 && !out->lowered)
        return bt_diag_nomem(e);
    for (i = 0; i < nexprs; i++) {
        const char *low = NULL;
        if ((r = api->GetLoweredName(prog, exprs[i], &low)) != 0 || !low) {
            call_failed(api, e, r, "nvrtcGetLoweredName");
            snprintf(e->message + strlen(e->message), sizeof e->message - strlen(e->message),
                     " (for %s)", exprs[i]);
            return -1;
        }
        if (!(out->lowered[i] = dup_string(low)))
            return bt_diag_nomem(e);
        out->nlowered = i + 1;
    }
    return 0;
}

/* The compiled program's image (CUBIN, or PTX's text) into out->image and
 * out->size, malloc'd. 0 or -1. */
static int program_image(const Api *api, BtNvrtcProgram prog, int cubin, BtNvrtcOutput *out,
                         BtDiag *e)
{
    size_t size = 0;
    BtNvrtcResult r = cubin ? api->GetCUBINSize(prog, &size) : api->GetPTXSize(prog, &size);

    if (r != 0)
        return call_failed(api, e, r, cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize");
    if (cubin && size == 0)
        return fail(e, 0,
                    "nvrtcGetCUBIN: no CUBIN (compile with -arch=sm_XX, not "
                    "compute_XX, for one)");
    if (!(out->image = calloc(size + 1, 1)))
        return bt_diag_nomem(e);
    r = cubin ? api->GetCUBIN(prog, out->image) : api->GetPTX(prog, out->image);
    if (r != 0)
        return call_failed(api, e, r, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
    /* PTX's size counts its NUL; the image is the text */
    out->size = cubin ? size : strlen(out->image);
    return 0;
}

/* Compiles prog with options[noptions]; the log into out->log whatever the
 * outcome (malloc'd). 0 or -1. */
static int compile_program(const Api *api, BtNvrtcProgram prog, const char *const *options,
                           int noptions, BtNvrtcOutput *out, BtDiag *e)
{
    BtNvrtcResult r = api->CompileProgram(prog, noptions, options);
    const char *s;

    out->log = program_log(api, prog);
    if (!out->log)
        return bt_diag_nomem(e);
    if (r == 0)
        return 0;
    s = api->GetErrorString(r);
    return fail(e, r, "nvrtcCompileProgram: %s", s ? s : "failed");
}

int bt_nvrtc_compile(const char *lib, const char *source, const char *name,
                     const char *const *options, int noptions, const char *const *exprs, int nexprs,
                     int cubin, BtNvrtcOutput *out, BtDiag *e)
{
    Api api;
    BtNvrtcProgram prog = NULL;
    BtNvrtcResult r;
    int i, rc = -1;

    memset(out, 0, sizeof *out);
    if (open_api(lib, &api, e) < 0)
        return -1;
    if ((r = api.CreateProgram(&prog, source, name, 0, NULL, NULL)) != 0)
        return call_failed(&api, e, r, "nvrtcCreateProgram");
    for (i = 0; i < nexprs; i++) {
        if ((r = api.AddNameExpression(prog, exprs[i])) != 0) {
            call_failed(&api, e, r, "nvrtcAddNameExpression");
            goto done;
        }
    }
    if (compile_program(&api, prog, options, noptions, out, e) < 0 || /* out keeps the log */
        lowered_names(&api, prog, exprs, nexprs, out, e) < 0 ||
        program_image(&api, prog, cubin, out, e) < 0)
        goto done;
    rc = 0;
done:
    if (prog)
        api.DestroyProgram(&prog);
    if (rc < 0) {
        char *log = out->log;
        out->log = NULL;
        bt_nvrtc_output_free(out);
        out->log = log;
    }
    return rc;
}
