/* standalone.c - a main() that runs a libFuzzer harness over files and
 * folders of files, for builds without libFuzzer (gcc with ASan/UBSan):
 * tests/core/test_fuzz.py replays the seed corpora and the regression files. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The file in a buffer of exactly its size, so ASan sees a read past it. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    long n = -1;
    int rc = -1;

    if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc(n ? (size_t)n : 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        rc = 0;
    } else {
        fprintf(stderr, "cannot read %s\n", path);
    }
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

int main(int argc, char **argv)
{
    int i, runs = 0, bad = 0;

    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (i = 1; i < argc; i++) {
        struct stat st;
        DIR *dir;
        struct dirent *e;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "cannot read %s\n", argv[i]);
            bad = 1;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            bad |= run_file(argv[i]) < 0;
            runs++;
            continue;
        }
        if (!(dir = opendir(argv[i])))
            continue;
        while ((e = readdir(dir))) {
            char path[4096];
            struct stat fs;
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (stat(path, &fs) != 0 || !S_ISREG(fs.st_mode))
                continue;
            bad |= run_file(path) < 0;
            runs++;
        }
        closedir(dir);
    }
    printf("ran %d inputs\n", runs);
    return bad;
}
