/* atomic_file.c — temporary file + rename for regular files, written
 * through for devices and FIFOs (see atomic_file.h). */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Device, FIFO or socket: opened for writing as it is (see the header). */
static int open_direct(bs_atomic_file *af, const char *path)
{
    af->direct = 1;
    af->fp = fopen(path, "w");
    return af->fp ? 0 : -1;
}

int bs_atomic_open(bs_atomic_file *af, const char *path)
{
    memset(af, 0, sizeof *af);
    size_t len = strlen(path);
    if (len == 0 || len + 16 >= sizeof af->tmp_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct stat st, link;
    if (lstat(path, &link) == 0) {
        if (stat(path, &st) < 0)
            return -1; /* a dangling symbolic link */
        if (S_ISDIR(st.st_mode)) {
            errno = EISDIR;
            return -1;
        }
        if (!S_ISREG(st.st_mode))
            return open_direct(af, path);
        if (S_ISLNK(link.st_mode)) {
            /* Replace the file the link points to, not the link. */
            char *target = realpath(path, NULL);
            if (!target)
                return -1;
            len = strlen(target);
            if (len + 16 >= sizeof af->tmp_path) {
                free(target);
                errno = ENAMETOOLONG;
                return -1;
            }
            memcpy(af->final_path, target, len + 1);
            free(target);
            path = af->final_path;
        }
    }
    if (path != af->final_path)
        memcpy(af->final_path, path, len + 1);
    memcpy(af->tmp_path, af->final_path, len);
    memcpy(af->tmp_path + len, ".tmpXXXXXX", sizeof ".tmpXXXXXX");
    int fd = mkstemp(af->tmp_path);
    if (fd < 0)
        return -1;
    /* mkstemp makes the file 0600; an output is an ordinary file that a web
     * server or a colleague may read. (umask cannot be read without
     * changing it, which would race with other threads of the VM.) */
    (void)fchmod(fd, 0644);
    af->fp = fdopen(fd, "w");
    if (!af->fp) {
        int e = errno;
        close(fd);
        unlink(af->tmp_path);
        errno = e;
        return -1;
    }
    setvbuf(af->fp, NULL, _IOFBF, 1 << 16);
    return 0;
}

int bs_atomic_commit(bs_atomic_file *af)
{
    if (af->direct) {
        int failed = ferror(af->fp) != 0;
        failed |= fflush(af->fp) != 0;
        int e = errno;
        failed |= fclose(af->fp) != 0;
        af->fp = NULL;
        if (failed)
            errno = e ? e : EIO;
        return failed ? -1 : 0;
    }
    int failed = ferror(af->fp) != 0;
    failed |= fflush(af->fp) != 0;
    failed |= fsync(fileno(af->fp)) != 0;
    int e = errno;
    failed |= fclose(af->fp) != 0;
    af->fp = NULL;
    if (!failed && rename(af->tmp_path, af->final_path) == 0)
        return 0;
    if (!failed)
        e = errno;
    unlink(af->tmp_path);
    errno = e ? e : EIO;
    return -1;
}

void bs_atomic_abort(bs_atomic_file *af)
{
    if (af->fp)
        fclose(af->fp);
    af->fp = NULL;
    if (!af->direct)
        unlink(af->tmp_path);
}
