/* writers.c — format names and extensions, bs_write_stream (filters, then
 * the writer of the format, into any FILE) and bs_write_file (the same into
 * a file that appears atomically; memory_output.c does it into memory).
 *
 * Each writer lives in its own file (folded.c, svg.c, ...); adding a format
 * means one line in the table below and one case in write_format(). */
#include "writers.h"

#include <errno.h>
#include <string.h>

#include "../engine/filter.h"
#include "../engine/span_cap.h"
#include "../common/atomic_file.h"
#include "folded.h"
#include "output_size.h"
#include "size_limit.h"

typedef struct format_info {
    bs_format format;
    const char *name;
    const char *extension;
} format_info;

/* Longer extensions first: ".speedscope.json" must win over ".json". */
static const format_info FORMATS[] = {
    {BS_FORMAT_SPEEDSCOPE, "speedscope", ".speedscope.json"},
    {BS_FORMAT_CHROME, "chrome", ".trace.json"},
    {BS_FORMAT_PERF, "perf", ".perf.txt"},
    {BS_FORMAT_FOLDED, "folded", ".folded"},
    {BS_FORMAT_SVG, "svg", ".svg"},
    {BS_FORMAT_HTML, "html", ".html"},
    {BS_FORMAT_BSPY, "bspy", ".bspy"},
    {BS_FORMAT_CALLGRIND, "callgrind", ".callgrind"},
};
#define N_FORMATS (sizeof FORMATS / sizeof FORMATS[0])

bs_format bs_format_from_name(const char *name)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (strcmp(FORMATS[i].name, name) == 0)
            return FORMATS[i].format;
    return BS_FORMAT_UNKNOWN;
}

static int ends_with_nocase(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (m > n)
        return 0;
    for (size_t i = 0; i < m; i++) {
        char a = s[n - m + i], b = suffix[i];
        if (a >= 'A' && a <= 'Z')
            a = (char)(a - 'A' + 'a');
        if (a != b)
            return 0;
    }
    return 1;
}

bs_format bs_format_from_path(const char *path)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (ends_with_nocase(path, FORMATS[i].extension))
            return FORMATS[i].format;
    /* valgrind's own names: callgrind.out.<pid>, which KCachegrind lists. */
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, "callgrind.out.", strlen("callgrind.out.")) == 0 && base[strlen("callgrind.out.")])
        return BS_FORMAT_CALLGRIND;
    return BS_FORMAT_UNKNOWN;
}

const char *bs_format_name(bs_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].format == f)
            return FORMATS[i].name;
    return "unknown";
}

const char *bs_format_extension(bs_format f)
{
    for (size_t i = 0; i < N_FORMATS; i++)
        if (FORMATS[i].format == f)
            return FORMATS[i].extension;
    return "";
}

int bs_write_folded_opts(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    bs_folded_opts fo = {0};
    fo.drop_sleep = o->drop_sleep;
    /* Folded output grows with depth times paths: a 200,000-deep recursion
     * would write gigabytes for a picture no viewer can draw. Below 1024
     * frames the subtree is summed into one "[deeper]" leaf (no time lost). */
    fo.max_depth = o->folded_max_depth ? o->folded_max_depth : 1024;
    fo.ns_per_unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    return bs_write_folded(out, p, &fo);
}

static int write_format(FILE *out, bs_format f, const bs_profile *p, const bs_render_opts *o)
{
    switch (f) {
    case BS_FORMAT_FOLDED: return bs_write_folded_opts(out, p, o);
    case BS_FORMAT_SVG: return bs_write_svg(out, p, o);
    case BS_FORMAT_HTML: return bs_write_html(out, p, o);
    case BS_FORMAT_SPEEDSCOPE: return bs_write_speedscope(out, p, o);
    case BS_FORMAT_CHROME: return bs_write_chrome(out, p, o);
    case BS_FORMAT_PERF: return bs_write_perf(out, p, o);
    case BS_FORMAT_BSPY: return bs_write_bspy(out, p, o);
    case BS_FORMAT_CALLGRIND: return bs_write_callgrind(out, p, o);
    default: errno = EINVAL; return -1;
    }
}

int bs_write_stream(FILE *out, bs_format f, const bs_profile *p, const bs_render_opts *opts)
{
    bs_render_opts o = opts ? *opts : (bs_render_opts){0};
    if (f == BS_FORMAT_UNKNOWN) {
        errno = EINVAL;
        return -1;
    }
    /* Filters work on a copy: the caller's profile may be written again
     * in another format with other options. */
    bs_profile filtered;
    if (bs_profile_clone(p, &filtered) < 0) {
        errno = ENOMEM;
        return -1;
    }
    int rc = bs_profile_filter(&filtered, &(bs_filter){.drop_sleep = o.drop_sleep,
                                                        .drop_wait = o.drop_wait,
                                                        .order_by_cpu = o.order_by_cpu,
                                                        .merge_processes = o.merge_processes,
                                                        .collapse_recursion = o.collapse_recursion,
                                                        .include_re = o.include_re,
                                                        .exclude_re = o.exclude_re});
    if (rc < 0) {
        bs_profile_free(&filtered);
        errno = EINVAL;
        return -1;
    }
    /* Time-ordered formats keep at most their cap of spans (span_cap.h);
     * the copy says so, and the report tells the front end before writing. */
    uint64_t cap = filtered.has_timeline ? bs_timeline_cap_for(f, &o) : 0;
    bs_write_report report = {.format = f};
    if (cap && bs_profile_cap_spans(&filtered, cap, &report.spans_capped) < 0) {
        bs_profile_free(&filtered);
        errno = ENOMEM;
        return -1;
    }
    /* A file too big for any viewer gets its recursion collapsed, where the
     * report says so (size_limit.h); the cap then applies again, as
     * collapsing can split spans. */
    if (o.on_report) {
        uint64_t more = 0;
        if (bs_fit_openable(&filtered, f, &o, &report) < 0 ||
            (report.auto_collapse && cap && bs_profile_cap_spans(&filtered, cap, &more) < 0)) {
            bs_profile_free(&filtered);
            errno = ENOMEM;
            return -1;
        }
        report.spans_capped += more;
    }
    if (report.spans_capped) {
        filtered.timeline_cap = report.timeline_cap = cap;
        filtered.spans_capped = report.spans_capped;
    }
    if (o.on_report) {
        report.spans = bs_profile_span_count(&filtered);
        report.projected_bytes = bs_projected_bytes(f, &filtered, &o);
        report.warn_bytes = o.size_warn_bytes;
        if (f == BS_FORMAT_FOLDED)
            bs_folded_rounding(&filtered, &report);
        o.on_report(o.report_ctx, &report);
    }
    errno = 0;
    rc = write_format(out, f, &filtered, &o);
    int e = errno ? errno : EIO;
    bs_profile_free(&filtered);
    if (rc < 0) {
        errno = e;
        return -1;
    }
    return 0;
}

int bs_write_file(const char *path, bs_format f, const bs_profile *p, const bs_render_opts *opts)
{
    if (f == BS_FORMAT_UNKNOWN)
        f = bs_format_from_path(path);
    if (f == BS_FORMAT_UNKNOWN) {
        errno = EINVAL;
        return -1;
    }
    bs_atomic_file af;
    if (bs_atomic_open(&af, path) < 0)
        return -1;
    if (bs_write_stream(af.fp, f, p, opts) < 0) {
        int e = errno ? errno : EIO;
        bs_atomic_abort(&af);
        errno = e;
        return -1;
    }
    return bs_atomic_commit(&af);
}
