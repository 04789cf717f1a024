/* read_source.h — the byte stream a reader consumes (readers only).
 *
 * A FILE plus a few bytes already taken from it: bs_read_profile_file reads
 * the first bytes to tell .bspy from folded text, and a pipe cannot be
 * rewound, so those bytes are handed back here before the rest of the FILE.
 * Also the error helper every reader shares. */
#ifndef BS_READ_SOURCE_H
#define BS_READ_SOURCE_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "readers.h"

typedef struct bs_read_source {
    FILE *fp;
    const unsigned char *head; /* bytes read from fp before the reader started */
    size_t head_len, head_pos;
} bs_read_source;

/* Like fread: up to n bytes; fewer only at end of input or on error. */
static inline size_t bs_source_read(bs_read_source *src, void *buf, size_t n)
{
    size_t got = 0;
    if (src->head_pos < src->head_len) {
        got = src->head_len - src->head_pos < n ? src->head_len - src->head_pos : n;
        memcpy(buf, src->head + src->head_pos, got);
        src->head_pos += got;
    }
    if (got < n)
        got += fread((char *)buf + got, 1, n - got, src->fp);
    return got;
}

/* Fills err (which may be NULL): input name, line (0 for binary input),
 * byte offset and a printf-style message. Always returns -1. */
static inline int bs_read_vfail(bs_read_error *err, const char *name, uint64_t line, uint64_t offset,
                                const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    snprintf(err->file, sizeof err->file, "%s", name ? name : "-");
    err->line = line;
    err->offset = offset;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    return -1;
}

static inline int bs_read_fail(bs_read_error *err, const char *name, uint64_t line, uint64_t offset,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bs_read_vfail(err, name, line, offset, fmt, ap);
    va_end(ap);
    return -1;
}

int bs_read_folded_source(bs_read_source *src, const char *name, bs_profile *out, bs_read_error *err);
int bs_read_bspy_source(bs_read_source *src, const char *name, bs_profile *out, bs_read_error *err);

#endif
