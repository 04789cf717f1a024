/* seq_write.c — sequence-diagram format names and extensions, and the atomic
 * file writer (seq_writers.h). Adding a format: one row in the table and one
 * case in write_format(). */
#include "seq_writers.h"

#include <errno.h>
#include <string.h>

#include "../common/atomic_file.h"

typedef struct seq_format_info {
    bs_seq_format format;
    const char *name;
    const char *extension;
} seq_format_info;

/* Longer extensions first: ".trace.json" must win over ".json". The first
 * row of a format gives its extension. */
static const seq_format_info FORMATS[] = {
    {BS_SEQ_FORMAT_CHROME, "chrome", ".trace.json"},
    {BS_SEQ_FORMAT_JSON, "json", ".seq.json"},
    {BS_SEQ_FORMAT_SVG, "svg", ".seq.svg"},
    {BS_SEQ_FORMAT_MERMAID, "mermaid", ".mmd"},
    {BS_SEQ_FORMAT_JSON, "json", ".json"},
    {BS_SEQ_FORMAT_SVG, "svg", ".svg"},
};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

bs_seq_format bs_seq_format_from_name(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (!strcmp(FORMATS[i].name, name))
            return FORMATS[i].format;
    return BS_SEQ_FORMAT_UNKNOWN;
}

static int ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (m > n)
        return 0;
    for (size_t i = 0; i < m; i++) {
        char a = s[n - m + i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != suffix[i])
            return 0;
    }
    return 1;
}

bs_seq_format bs_seq_format_from_path(const char *path)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (ends_with_nocase(path, FORMATS[i].extension))
            return FORMATS[i].format;
    return BS_SEQ_FORMAT_UNKNOWN;
}

const char *bs_seq_format_name(bs_seq_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].format == f)
            return FORMATS[i].name;
    return "unknown";
}

const char *bs_seq_format_extension(bs_seq_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].format == f)
            return FORMATS[i].extension;
    return "";
}

static int write_format(FILE *out, bs_seq_format f, const bs_seq_diagram *d, const bs_seq_opts *o,
                        bs_seq_write_info *info)
{
    switch (f) {
    case BS_SEQ_FORMAT_MERMAID: return bs_write_seq_mermaid(out, d, o, info);
    case BS_SEQ_FORMAT_JSON: return bs_write_seq_json(out, d, o, info);
    case BS_SEQ_FORMAT_SVG: return bs_write_seq_svg(out, d, o, info);
    case BS_SEQ_FORMAT_CHROME: return bs_write_seq_chrome(out, d, o, info);
    default: errno = EINVAL; return -1;
    }
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
