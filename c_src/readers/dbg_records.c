/* dbg_records.c — the record framing of dbg trace-port files (see
 * dbg_trace.h): tag byte, 32-bit big-endian size, body. Knows nothing of
 * terms. A body larger than the cap is skipped, not read, so memory stays
 * at the cap whatever the file says; a record cut by the end of the file is
 * an error at the record's own offset. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "read_source.h"
#include "dbg_trace.h"

void bs_dbg_records_init(bs_dbg_records *r, FILE *fp, const char *name, uint64_t max_term)
{
    memset(r, 0, sizeof *r);
    r->fp = fp;
    r->name = name;
    r->max_term = max_term ? max_term : BS_DBG_DEFAULT_MAX_TERM;
}

void bs_dbg_records_free(bs_dbg_records *r)
{
    free(r->buf);
    r->buf = NULL;
    r->cap = 0;
}

static int read_error(bs_dbg_records *r, uint64_t at, bs_read_error *err)
{
    return bs_read_fail(err, r->name, 0, at, "cannot read: %s", strerror(errno ? errno : EIO));
}

/* Skips n bytes: seeks when the input allows it, else reads them. Returns
 * the bytes skipped (fewer at end of input). */
static uint64_t skip_bytes(FILE *fp, uint64_t n)
{
    long here = ftell(fp);
    if (here >= 0 && fseek(fp, 0, SEEK_END) == 0) {
        long end = ftell(fp);
        uint64_t left = end > here ? (uint64_t)(end - here) : 0;
        uint64_t k = n < left ? n : left;
        if (fseek(fp, here + (long)k, SEEK_SET) == 0)
            return k;
    }
    unsigned char scratch[4096];
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof scratch ? (size_t)(n - done) : sizeof scratch;
        size_t got = fread(scratch, 1, want, fp);
        done += got;
        if (got < want)
            break;
    }
    return done;
}

int bs_dbg_next_record(bs_dbg_records *r, bs_dbg_record *out, bs_read_error *err)
{
    unsigned char h[BS_DBG_RECORD_HEADER];
    memset(out, 0, sizeof *out);
    out->offset = r->offset;
    errno = 0;
    size_t got = fread(h, 1, sizeof h, r->fp);
    if (got == 0 && !ferror(r->fp)) {
        out->kind = BS_DBG_REC_EOF;
        return 0;
    }
    out->number = ++r->count;
    if (ferror(r->fp))
        return read_error(r, r->offset, err);
    if (h[0] > 1)
        return bs_read_fail(err, r->name, 0, r->offset,
                            "bad record tag %u (0: a trace term, 1: dropped messages): not a dbg trace-port file, "
                            "or corrupt here", h[0]);
    if (got < sizeof h)
        return bs_read_fail(err, r->name, 0, r->offset, "truncated: the file ends inside a record header (%zu of 5 bytes)",
                            got);
    uint32_t size = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
    out->size = size;
    if (h[0] == 1) {
        out->kind = BS_DBG_REC_DROP;
        r->offset += sizeof h;
        return 0;
    }
    if (size > r->max_term) {
        uint64_t skipped = skip_bytes(r->fp, size);
        if (skipped < size)
            return bs_read_fail(err, r->name, 0, r->offset,
                                "truncated: the record says %u bytes of term, the file has %llu more", size,
                                (unsigned long long)skipped);
        out->kind = BS_DBG_REC_TOO_BIG;
        r->offset += sizeof h + (uint64_t)size;
        return 0;
    }
    if (size > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < size)
            cap *= 2;
        unsigned char *b = realloc(r->buf, cap);
        if (!b)
            return bs_read_fail(err, r->name, 0, r->offset, "out of memory for a record of %u bytes", size);
        r->buf = b;
        r->cap = cap;
    }
    got = size ? fread(r->buf, 1, size, r->fp) : 0;
    if (got < size) {
        if (ferror(r->fp))
            return read_error(r, r->offset, err);
        return bs_read_fail(err, r->name, 0, r->offset,
                            "truncated: the record says %u bytes of term, the file has %zu more", size, got);
    }
    out->kind = BS_DBG_REC_TERM;
    out->body = r->buf;
    r->offset += sizeof h + (uint64_t)size;
    return 0;
}
