/* memory_output.c — a profile written in any format into memory instead of
 * a file: the NIF hands the bytes back as a binary (a job on a production
 * node sends its profile over distribution and writes nothing there).
 *
 * One writer path for files and buffers (as redis's rio serves both): the
 * bytes come from bs_write_stream, as bs_write_file's do, into an
 * open_memstream buffer, so memory output is byte for byte the file output.
 * The buffer grows with the output: the writers' own caps bound it, and
 * BS_MEMORY_OUTPUT_MAX (or the caller's max_bytes) refuses an output larger
 * than that once written. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "writers.h"

#include <errno.h>
#include <stdlib.h>

int bs_write_memory(bs_format f, const bs_profile *p, const bs_render_opts *o, size_t max_bytes,
                    char **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    if (f == BS_FORMAT_UNKNOWN) {
        errno = EINVAL;
        return -1;
    }
    if (max_bytes == 0 || max_bytes > BS_MEMORY_OUTPUT_MAX)
        max_bytes = BS_MEMORY_OUTPUT_MAX;
    char *buf = NULL;
    size_t len = 0;
    errno = 0;
    FILE *out = open_memstream(&buf, &len);
    if (!out) {
        errno = errno ? errno : ENOMEM;
        return -1;
    }
    int rc = bs_write_stream(out, f, p, o);
    int e = errno ? errno : EIO;
    /* A failed grow of the buffer shows as a write error, here at the
     * latest: the bytes are complete only if the stream closes cleanly. */
    int err = ferror(out);
    if (fclose(out) != 0 && rc == 0) {
        rc = -1;
        e = errno ? errno : ENOMEM;
    }
    if (rc == 0 && err) {
        rc = -1;
        e = ENOMEM;
    }
    if (rc == 0 && len > max_bytes) {
        rc = -1;
        e = EFBIG;
    }
    if (rc < 0) {
        free(buf);
        errno = e == EIO ? ENOMEM : e;
        return -1;
    }
    *data = buf;
    *size = len;
    return 0;
}
