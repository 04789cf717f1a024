/* seq_write.c — the atomic file writer of sequence diagrams (seq_writers.h):
 * the writer comes from the format's row in format_registry.c. */
#include "seq_writers.h"

#include <errno.h>
#include <string.h>

#include "../common/atomic_file.h"

static int write_format(FILE *out, bs_seq_format f, const bs_seq_diagram *d, const bs_seq_opts *o,
                        bs_seq_write_info *info)
{
    const bs_seq_format_desc *desc = bs_seq_format_desc_of(f);
    if (!desc) {
        errno = EINVAL;
        return -1;
    }
    return desc->write(out, d, o, info);
}

int bs_seq_write_file(const char *path, bs_seq_format f, const bs_seq_diagram *d, const bs_seq_opts *o,
                      bs_seq_write_info *info)
{
    static const bs_seq_opts defaults = {0};
    bs_seq_write_info ignored;
    if (!info)
        info = &ignored;
    memset(info, 0, sizeof *info);
    if (f == BS_SEQ_FORMAT_UNKNOWN)
        f = bs_seq_format_from_path(path);
    if (f == BS_SEQ_FORMAT_UNKNOWN) {
        errno = EINVAL;
        return -1;
    }
    bs_atomic_file af;
    if (bs_atomic_open(&af, path) < 0)
        return -1;
    errno = 0;
    if (write_format(af.fp, f, d, o ? o : &defaults, info) < 0 || ferror(af.fp)) {
        int e = errno ? errno : EIO;
        bs_atomic_abort(&af);
        errno = e;
        return -1;
    }
    return bs_atomic_commit(&af);
}
