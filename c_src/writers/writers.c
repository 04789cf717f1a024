/* writers.c — bs_write_stream (filters, then the writer of the format's row
 * in format_registry.c, into any FILE) and bs_write_file (the same into a
 * file that appears atomically; memory_output.c does it into memory).
 *
 * Each writer lives in its own file (folded.c, svg.c, ...). */
#include "writers.h"

#include <errno.h>
#include <string.h>

#include "../engine/filter.h"
#include "../engine/span_cap.h"
#include "../common/atomic_file.h"
#include "output_size.h"
#include "size_limit.h"

static int write_format(FILE *out, bs_format f, const bs_profile *p, const bs_render_opts *o)
{
    const bs_format_desc *d = bs_format_desc_of(f);
    if (!d) {
        errno = EINVAL;
        return -1;
    }
    return d->write(out, p, o);
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
