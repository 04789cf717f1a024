/* read_profile.c — bs_read_profile_file: opens a profile file and picks its
 * reader by content, not by name: a .bspy file starts with its magic bytes
 * (never the start of a folded line: 0x89 is not valid UTF-8), anything
 * else is read as folded stacks. */
#include <errno.h>
#include <string.h>

#include "../common/bspy.h"
#include "read_source.h"

int bs_read_profile_file(const char *path, bs_profile *out, bs_read_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        memset(out, 0, sizeof *out);
        return bs_read_fail(err, path, 0, 0, "cannot open: %s", strerror(errno));
    }
    unsigned char head[BS_BSPY_MAGIC_LEN];
    size_t n = fread(head, 1, sizeof head, fp);
    int rc;
    if (ferror(fp)) {
        memset(out, 0, sizeof *out);
        rc = bs_read_fail(err, path, 0, 0, "cannot read: %s", strerror(errno));
    } else {
        /* A pipe cannot be rewound: the bytes read are handed back. */
        bs_read_source src = {.fp = fp, .head = head, .head_len = n};
        if (fseek(fp, 0, SEEK_SET) == 0)
            src.head_len = 0;
        if (n == BS_BSPY_MAGIC_LEN && memcmp(head, BS_BSPY_MAGIC, BS_BSPY_MAGIC_LEN) == 0)
            rc = bs_read_bspy_source(&src, path, out, err);
        else
            rc = bs_read_folded_source(&src, path, out, err);
    }
    fclose(fp);
    return rc;
}
