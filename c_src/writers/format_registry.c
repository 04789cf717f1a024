/* format_registry.c — the rows of the format table (format_registry.h) and
 * the lookups, lists and help lines that read them. */
#include "format_registry.h"

#include <string.h>

static const bs_format_desc FORMATS[] = {
    {BS_FORMAT_FOLDED, "folded", {".folded"}, NULL, 0, 0, 1,
     "folded stacks: flamegraph.pl, inferno", bs_write_folded_opts},
    {BS_FORMAT_SVG, "svg", {".svg"}, NULL, 0, 0, 0,
     "flame graph picture", bs_write_svg},
    {BS_FORMAT_HTML, "html", {".html"}, NULL, 0, 0, 0,
     "interactive flame graph page", bs_write_html},
    {BS_FORMAT_SPEEDSCOPE, "speedscope", {".speedscope.json"}, NULL, 1, BS_TIMELINE_CAP_SPEEDSCOPE, 1,
     "speedscope, with the time order", bs_write_speedscope},
    {BS_FORMAT_CHROME, "chrome", {".trace.json"}, NULL, 1, BS_TIMELINE_CAP_CHROME, 1,
     "Chrome trace: Perfetto, chrome://tracing", bs_write_chrome},
    {BS_FORMAT_PERF, "perf", {".perf.txt"}, NULL, 0, 0, 1,
     "perf script text: Firefox Profiler, hotspot", bs_write_perf},
    {BS_FORMAT_BSPY, "bspy", {".bspy"}, NULL, 1, 0, 0,
     "beamspy's profile file, to render or diff", bs_write_bspy},
    {BS_FORMAT_CALLGRIND, "callgrind", {".callgrind"}, "callgrind.out.", 0, 0, 1,
     "KCachegrind, qcachegrind", bs_write_callgrind},
    {BS_FORMAT_PPROF, "pprof", {".pb.gz", ".pprof"}, NULL, 0, 0, 0,
     "go tool pprof, Pyroscope, Grafana", bs_write_pprof},
};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

static const bs_seq_format_desc SEQ_FORMATS[] = {
    {BS_SEQ_FORMAT_MERMAID, "mermaid", {".mmd"}, "Mermaid diagram", bs_write_seq_mermaid},
    {BS_SEQ_FORMAT_SVG, "svg", {".seq.svg", ".svg"}, "SVG, the full message on hover", bs_write_seq_svg},
    {BS_SEQ_FORMAT_CHROME, "chrome", {".trace.json"}, "Chrome trace with flow arrows: Perfetto",
     bs_write_seq_chrome},
    {BS_SEQ_FORMAT_JSON, "json", {".seq.json", ".json"}, "JSON, for scripts", bs_write_seq_json},
};
#define N_SEQ_FORMATS (sizeof SEQ_FORMATS / sizeof SEQ_FORMATS[0])

const bs_format_desc *bs_format_table(size_t *n)
{
    *n = N_FORMATS;
    return FORMATS;
}

const bs_seq_format_desc *bs_seq_format_table(size_t *n)
{
    *n = N_SEQ_FORMATS;
    return SEQ_FORMATS;
}

const bs_format_desc *bs_format_desc_of(bs_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].format == f)
            return &FORMATS[i];
    return NULL;
}

const bs_seq_format_desc *bs_seq_format_desc_of(bs_seq_format f)
{
    for (size_t i = 0; i < N_SEQ_FORMATS; i++)
        if (SEQ_FORMATS[i].format == f)
            return &SEQ_FORMATS[i];
    return NULL;
}

bs_format bs_format_from_name(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (strcmp(FORMATS[i].name, name) == 0)
            return FORMATS[i].format;
    return BS_FORMAT_UNKNOWN;
}

bs_seq_format bs_seq_format_from_name(const char *name)
{
    for (size_t i = 0; i < N_SEQ_FORMATS; i++)
        if (strcmp(SEQ_FORMATS[i].name, name) == 0)
            return SEQ_FORMATS[i].format;
    return BS_SEQ_FORMAT_UNKNOWN;
}

static int ends_with_nocase(const char *s, size_t n, const char *suffix, size_t m)
{
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

/* The length of the longest extension of exts that path ends with; 0: none. */
static size_t longest_match(const char *path, size_t n, const char *const exts[BS_FORMAT_MAX_EXTENSIONS])
{
    size_t best = 0;
    for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && exts[k]; k++) {
        size_t m = strlen(exts[k]);
        if (m > best && ends_with_nocase(path, n, exts[k], m))
            best = m;
    }
    return best;
}

bs_format bs_format_from_path(const char *path)
{
    size_t n = strlen(path), best = 0;
    bs_format found = BS_FORMAT_UNKNOWN;
    for (size_t i = 0; i < N_FORMATS; i++) {
        size_t m = longest_match(path, n, FORMATS[i].extensions);
        if (m > best) {
            best = m;
            found = FORMATS[i].format;
        }
    }
    if (found != BS_FORMAT_UNKNOWN)
        return found;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (size_t i = 0; i < N_FORMATS; i++) {
        const char *prefix = FORMATS[i].file_prefix;
        if (prefix && strncmp(base, prefix, strlen(prefix)) == 0 && base[strlen(prefix)])
            return FORMATS[i].format;
    }
    return BS_FORMAT_UNKNOWN;
}

bs_seq_format bs_seq_format_from_path(const char *path)
{
    size_t n = strlen(path), best = 0;
    bs_seq_format found = BS_SEQ_FORMAT_UNKNOWN;
    for (size_t i = 0; i < N_SEQ_FORMATS; i++) {
        size_t m = longest_match(path, n, SEQ_FORMATS[i].extensions);
        if (m > best) {
            best = m;
            found = SEQ_FORMATS[i].format;
        }
    }
    return found;
}

const char *bs_format_name(bs_format f)
{
    const bs_format_desc *d = bs_format_desc_of(f);
    return d ? d->name : "unknown";
}

const char *bs_format_extension(bs_format f)
{
    const bs_format_desc *d = bs_format_desc_of(f);
    return d ? d->extensions[0] : "";
}

/* Appends s to buf (cut to cap, kept NUL-terminated) at *len, which counts
 * every byte asked for. */
static void append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t m = strlen(s);
    if (*len + 1 < cap) {
        size_t room = cap - 1 - *len;
        size_t k = m < room ? m : room;
        memcpy(buf + *len, s, k);
        buf[*len + k] = '\0';
    }
    *len += m;
}

size_t bs_format_names(char *buf, size_t cap, const char *sep)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (i)
            append(buf, cap, &len, sep);
        append(buf, cap, &len, FORMATS[i].name);
    }
    return len;
}

size_t bs_seq_format_extension_list(char *buf, size_t cap, const char *sep)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < N_SEQ_FORMATS; i++)
        for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && SEQ_FORMATS[i].extensions[k]; k++) {
            if (len)
                append(buf, cap, &len, sep);
            append(buf, cap, &len, SEQ_FORMATS[i].extensions[k]);
        }
    return len;
}

/* One help line: indent, the name, the extensions (and a file prefix) and
 * the help, in columns. */
static void usage_line(FILE *out, const char *indent, const char *name,
                       const char *const exts[BS_FORMAT_MAX_EXTENSIONS], const char *prefix, const char *help)
{
    char ext_text[64];
    size_t len = 0;
    ext_text[0] = '\0';
    for (size_t k = 0; k < BS_FORMAT_MAX_EXTENSIONS && exts[k]; k++) {
        if (k)
            append(ext_text, sizeof ext_text, &len, " ");
        append(ext_text, sizeof ext_text, &len, exts[k]);
    }
    fprintf(out, "%s%-11s %-17s %s", indent, name, ext_text, help);
    if (prefix)
        fprintf(out, " (also %s*)", prefix);
    fputc('\n', out);
}

void bs_format_list_usage(FILE *out, const char *indent)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        usage_line(out, indent, FORMATS[i].name, FORMATS[i].extensions, FORMATS[i].file_prefix, FORMATS[i].help);
}

void bs_seq_format_list_usage(FILE *out, const char *indent)
{
    for (size_t i = 0; i < N_SEQ_FORMATS; i++)
        usage_line(out, indent, SEQ_FORMATS[i].name, SEQ_FORMATS[i].extensions, NULL, SEQ_FORMATS[i].help);
}
