/* bt_sym.c - dlopen/dlsym, ELF .dynsym listing, demangling. */
#define _GNU_SOURCE
#include "bt_sym.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bt_file.h"

void *bt_sym_open(const char *path, BtDiag *diag)
{
    /* RTLD_NODELETE: a kernel library may leave threads running in it or in
     * what it pulled in (libgomp's pool outlives the call), so it must never
     * be unmapped; dlclose then only drops the reference count */
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();
        bt_diag_set(diag, BT_DIAG_OS, NULL, 0, 0, "cannot load library: %s", e ? e : path);
    }
    return h;
}

void bt_sym_close(void *handle)
{
    if (handle)
        dlclose(handle);
}

void *bt_sym_find(void *handle, const char *name)
{
    dlerror();
    return dlsym(handle, name);
}

void *bt_sym_find_own(void *handle, const char *name)
{
    struct link_map *own = NULL, *def = NULL;
    Dl_info info;
    void *addr = bt_sym_find(handle, name);

    if (!addr || dlinfo(handle, RTLD_DI_LINKMAP, &own) != 0 || !own)
        return NULL;
    if (!dladdr1(addr, &info, (void **)&def, RTLD_DL_LINKMAP) || def != own)
        return NULL; /* libc's stat, libm's exp: not the library's */
    return addr;
}

const char *bt_sym_path(void *handle, BtArena *arena)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name)
        return NULL;
    return bt_arena_strdup(arena, lm->l_name);
}

void *bt_sym_loaded(const char *path)
{
    /* no RTLD_NODELETE here: it would pin an object someone else loaded */
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
        dlerror(); /* none loaded is no error for the next caller to find */
    return h;
}

uintptr_t bt_sym_object(void *handle)
{
    struct link_map *lm = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0)
        return 0;
    return (uintptr_t)lm;
}

typedef struct Segments {
    const struct link_map *lm;
    const ElfW(Phdr) * phdr;
    size_t n;
} Segments;

/* dl_iterate_phdr's callback: the program headers of s->lm's object, known
 * by its load address and the address of its dynamic section. */
static int find_segments(struct dl_phdr_info *info, size_t size, void *data)
{
    Segments *s = data;
    size_t i;

    (void)size;
    if (info->dlpi_addr != s->lm->l_addr)
        return 0;
    for (i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC &&
            info->dlpi_addr + info->dlpi_phdr[i].p_vaddr == (ElfW(Addr))s->lm->l_ld) {
            s->phdr = info->dlpi_phdr;
            s->n = info->dlpi_phnum;
            return 1;
        }
    return 0;
}

/* 1 when the size bytes at mem are the file's at off, 0 when not, -1 (diag). */
static int same_bytes(const char *mem, size_t size, int fd, off_t off, BtDiag *diag)
{
    char buf[16384];
    size_t done = 0;

    while (done < size) {
        size_t want = size - done < sizeof buf ? size - done : sizeof buf;
        ssize_t got = pread(fd, buf, want, off + (off_t)done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            bt_diag_set(diag, BT_DIAG_OS, NULL, 0, 0, "cannot read the library: %s",
                        strerror(errno));
            diag->code = errno;
            return -1;
        }
        if (got == 0 || memcmp(buf, mem + done, (size_t)got) != 0)
            return 0;
        done += (size_t)got;
    }
    return 1;
}

int bt_sym_same_code(void *handle, int fd, BtDiag *diag)
{
    Segments s = {NULL, NULL, 0};
    struct link_map *lm = NULL;
    size_t i;
    int compared = 0;

    if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
        return 0;
    s.lm = lm;
    if (!dl_iterate_phdr(find_segments, &s))
        return 0; /* its segments cannot be found: not shown to be the file's */
    for (i = 0; i < s.n; i++) {
        const ElfW(Phdr) *p = &s.phdr[i];
        int rc;
        /* writable segments are relocated (GOT, .data) and never equal the file */
        if (p->p_type != PT_LOAD || (p->p_flags & PF_W))
            continue;
        rc = same_bytes((const char *)(lm->l_addr + p->p_vaddr), p->p_filesz, fd,
                        (off_t)p->p_offset, diag);
        if (rc <= 0)
            return rc;
        compared += (p->p_flags & PF_X) != 0;
    }
    return compared > 0; /* no code compared: not shown */
}

/* Is [off, off + size) inside a buffer of len bytes? (No overflow.) */
static int inside(uint64_t off, uint64_t size, size_t len)
{
    return off <= len && size <= len - off;
}

int bt_sym_list_data(const char *data, size_t len, const char *what, BtArena *arena,
                     const char ***names, int *n, BtDiag *diag)
{
    Elf64_Ehdr eh;
    size_t i;
    int count = 0;
    const char **out;

    *names = NULL;
    *n = 0;
    /* headers are copied out: a file's offsets need not be aligned */
    if (len < sizeof eh)
        goto error;
    memcpy(&eh, data, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shoff == 0 ||
        eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !inside(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len))
        goto error;
    for (i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr s, strs;
        Elf64_Sym y;
        size_t k, nsyms;

        memcpy(&s, data + eh.e_shoff + i * sizeof s, sizeof s);
        if (s.sh_type != SHT_DYNSYM || s.sh_link >= eh.e_shnum)
            continue;
        memcpy(&strs, data + eh.e_shoff + (size_t)s.sh_link * sizeof strs, sizeof strs);
        if (!inside(s.sh_offset, s.sh_size, len) || !inside(strs.sh_offset, strs.sh_size, len) ||
            s.sh_entsize != sizeof(Elf64_Sym))
            continue;
        nsyms = s.sh_size / sizeof y;
        out = bt_arena_array(arena, nsyms + 1, sizeof *out);
        if (!out)
            return bt_diag_nomem(diag);
        for (k = 0; k < nsyms; k++) {
            const char *name;
            memcpy(&y, data + s.sh_offset + k * sizeof y, sizeof y);
            if (y.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(y.st_info) != STT_FUNC ||
                y.st_name >= strs.sh_size)
                continue;
            /* the name must end inside the string table */
            name = data + strs.sh_offset + y.st_name;
            if (!memchr(name, '\0', strs.sh_size - y.st_name))
                continue;
            out[count++] = name;
        }
        *names = out;
        *n = count;
        return 0;
    }
    return 0;
error:
    return bt_diag_set(diag, BT_DIAG_OS, what, 0, 0, "not a 64-bit ELF shared object");
}

int bt_sym_list(const char *path, BtArena *arena, const char ***names, int *n, BtDiag *diag)
{
    char *data;
    size_t len;

    *names = NULL;
    *n = 0;
    if (bt_file_read(path, arena, &data, &len, diag) < 0)
        return -1;
    return bt_sym_list_data(data, len, path, arena, names, n, diag);
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

const char *bt_sym_demangle(const char *symbol, BtArena *arena)
{
    demangle_fn dm;
    void *cxx = NULL;
    char *s;
    const char *r;
    int status = 0;

    if (strncmp(symbol, "_Z", 2) != 0)
        return NULL;
    /* libstdc++ is in the global scope only if something loaded it there;
     * a C++ kernel library opened RTLD_LOCAL keeps its copy to itself */
    dm = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (!dm && (cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL)))
        dm = (demangle_fn)dlsym(cxx, "__cxa_demangle");
    s = dm ? dm(symbol, NULL, NULL, &status) : NULL;
    if (cxx)
        dlclose(cxx);
    if (!s || status != 0) {
        free(s);
        return NULL;
    }
    r = bt_arena_strdup(arena, s);
    free(s);
    return r;
}

const char *bt_sym_cut_name(const char *dem, const char **start, BtArena *arena)
{
    const char *p, *from = dem;
    int depth = 0;

    for (p = dem; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (*p == '(' && depth == 0)
            break;
        else if (*p == ' ' && depth == 0)
            from = p + 1; /* what came before was the return type */
    }
    if (start)
        *start = from;
    return bt_arena_strndup(arena, from, (size_t)(p - from));
}
