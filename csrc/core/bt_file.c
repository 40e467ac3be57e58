/* bt_file.c - reading a whole file into an arena, with OSError-ready diagnostics. */
#define _POSIX_C_SOURCE 200809L
#include "bt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int os_error(BtDiag *diag, const char *path, const char *what, int err)
{
    bt_diag_set(diag, BT_DIAG_OS, path, 0, 0, "%s: %s", what, strerror(err));
    if (diag->kind == BT_DIAG_OS)
        diag->code = err;
    return -1;
}

static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

int bt_file_read(const char *path, BtArena *arena, char **text, size_t *len, BtDiag *diag)
{
    char *buf = NULL;
    struct stat st;
    size_t size, got = 0;
    int fd, rc = -1;

    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below, as anything but a regular file is (a FIFO or a device would
     * hang or read as empty) */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return os_error(diag, path, "cannot open", errno);
    if (fstat(fd, &st) != 0) {
        os_error(diag, path, "cannot read", errno);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        os_error(diag, path, "cannot read", EISDIR);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        bt_diag_set(diag, BT_DIAG_OS, path, 0, 0,
                    "cannot read: the file is %s; bindthem "
                    "reads headers and instantiate.yml from regular files",
                    file_kind(st.st_mode));
        if (diag->kind == BT_DIAG_OS)
            diag->code = EINVAL;
        goto done;
    }
    size = (size_t)st.st_size;
    buf = bt_arena_alloc(arena, size + 1);
    if (!buf) {
        bt_diag_nomem(diag);
        goto done;
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            os_error(diag, path, "cannot read", errno);
            goto done;
        }
        if (n == 0)
            break; /* shrank while we read: take what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    rc = 0;
done:
    close(fd);
    return rc;
}
