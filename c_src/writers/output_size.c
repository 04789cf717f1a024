/* output_size.c — projected output sizes, default timeline caps and the
 * warnings about them (see output_size.h).
 *
 * The per-item constants are the bytes each writer puts around a name or a
 * number (JSON keys, tabs, addresses), checked against real files of the
 * compiler's profile by bench/sizes/run.sh. */
#include "output_size.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_common.h"

uint64_t bs_timeline_cap_for(bs_format f, const bs_render_opts *o)
{
    uint64_t asked = o ? o->timeline_cap : 0;
    if (asked == UINT64_MAX)
        return 0;
    const bs_format_desc *d = bs_format_desc_of(f);
    if (!d || !d->timeline_cap)
        return 0;
    return asked ? asked : d->timeline_cap;
}

uint64_t bs_size_warn_bytes(void)
{
    const char *s = getenv("BEAMSPY_SIZE_WARN_BYTES");
    if (s && *s) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (!errno && !*end && v > 0 && s[0] != '-')
            return v;
    }
    return BS_SIZE_WARN_BYTES;
}

static uint64_t digits(uint64_t v)
{
    uint64_t n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

/* Per-node sums of one tree that the sampled formats need. */
typedef struct tree_sizes {
    uint64_t folded, perf, sampled, nodes_bytes;
} tree_sizes;

/* One stack line as folded.c, perf_script.c and speedscope.c's sampled
 * profiles write it: path bytes (names and ';'), frames, and time. */
static void size_line(tree_sizes *out, uint64_t path, uint64_t frames, uint64_t ns, uint64_t ns_per_unit,
                      uint64_t index_bytes)
{
    /* Rounded to the nearest unit, as folded.c writes them. */
    uint64_t count = (ns + ns_per_unit / 2) / ns_per_unit;
    if (count > 0) {
        out->folded += path + 2 + digits(count);
        out->sampled += frames * index_bytes + digits(count) + 4;
    }
    /* perf_script.c: two samples per stack of 3 ns or more (or any count):
     * a header line, one line per frame ("\t<id> name (beam)"), a blank
     * line. */
    if (ns >= (ns_per_unit == 1 ? 1 : 3))
        out->perf += 2 * (47 + path + frames * 11);
}

/* Walks t as the stack writers do: a node more than max_depth frames below
 * the process frame is not written, its time goes to one "[deeper]" line
 * under its ancestor max_depth deep (folded.c, bs_walk_samples); under
 * drop_sleep, SLEEP/WAIT/RUNNABLE frames and what is below them are left
 * out. Without the depth rule a 3,000-deep recursion was projected 6-9
 * times the size written (every deeper node counted with its whole path). */
static int size_tree(const bs_profile *p, const bs_ptree *t, const uint32_t *name_len, uint64_t ns_per_unit,
                     unsigned max_depth, int drop_sleep, tree_sizes *out)
{
    uint32_t n = t->n_nodes;
    uint64_t *path = malloc((size_t)n * sizeof *path);
    uint64_t *subtree = malloc((size_t)n * sizeof *subtree);
    uint32_t *depth = malloc((size_t)n * sizeof *depth); /* below the root; UINT32_MAX: left out */
    if (!path || !depth || !subtree) {
        free(path);
        free(depth);
        free(subtree);
        return -1;
    }
    uint32_t root_frames = t->synthetic_root ? 0 : 1;
    /* speedscope's samples list frame indices and a comma each. */
    uint64_t index_bytes = digits(p->frames.n) + 1;
    for (uint32_t i = 0; i < n; i++) {
        const bs_pnode *nd = &t->nodes[i];
        uint32_t len = nd->frame < p->frames.n ? name_len[nd->frame] : 0;
        out->nodes_bytes += len + 40;
        if (i == 0) {
            path[0] = t->synthetic_root ? 0 : len;
            depth[0] = 0;
        } else if (depth[nd->parent] == UINT32_MAX || (drop_sleep && bs_profile_is_sched_out(p, nd->frame))) {
            depth[i] = UINT32_MAX;
        } else {
            path[i] = path[nd->parent] + (path[nd->parent] ? 1 : 0) + len;
            depth[i] = depth[nd->parent] + 1;
        }
        subtree[i] = depth[i] == UINT32_MAX ? 0 : nd->self_ns;
    }
    for (uint32_t i = n; i-- > 1;)
        subtree[t->nodes[i].parent] += subtree[i];
    for (uint32_t i = 0; i < n; i++) {
        if (depth[i] > max_depth)
            continue;
        if (i > 0 || !t->synthetic_root)
            size_line(out, path[i], depth[i] + root_frames, t->nodes[i].self_ns, ns_per_unit, index_bytes);
        if (depth[i] == max_depth && subtree[i] > t->nodes[i].self_ns)
            size_line(out, path[i] + 1 + strlen(BS_DEEPER_FRAME), depth[i] + root_frames + 1,
                      subtree[i] - t->nodes[i].self_ns, ns_per_unit, index_bytes);
    }
    free(path);
    free(depth);
    free(subtree);
    return 0;
}

uint64_t bs_projected_bytes(bs_format f, const bs_profile *p, const bs_render_opts *o)
{
    uint32_t nf = p->frames.n;
    uint32_t *name_len = malloc((size_t)(nf ? nf : 1) * sizeof *name_len);
    if (!name_len)
        return 0;
    uint64_t frames_bytes = 0;
    for (uint32_t i = 0; i < nf; i++) {
        const char *name = bs_frame_name(&p->frames, i);
        name_len[i] = name ? (uint32_t)strlen(name) : 0;
        frames_bytes += name_len[i] + 16;
    }
    tree_sizes s = {0};
    /* The writers' depth limit (writers.c, trace_common.h): 1024 frames. */
    unsigned max_depth = o && o->folded_max_depth ? o->folded_max_depth : BS_DEFAULT_SAMPLE_DEPTH;
    int drop_sleep = o && o->drop_sleep;
    uint64_t spans = 0, span_names = 0, nodes = 0;
    uint64_t ns_per_unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    for (uint32_t i = 0; i < p->n_trees; i++) {
        const bs_ptree *t = &p->trees[i];
        if (size_tree(p, t, name_len, ns_per_unit, max_depth, drop_sleep, &s) < 0) {
            free(name_len);
            return 0;
        }
        nodes += t->n_nodes;
        spans += t->n_spans;
        for (uint32_t k = 0; k < t->n_spans; k++)
            if (t->spans[k].node < t->n_nodes && t->nodes[t->spans[k].node].frame < nf)
                span_names += name_len[t->nodes[t->spans[k].node].frame];
    }
    free(name_len);
    int timeline = p->has_timeline && spans > 0;
    switch (f) {
    case BS_FORMAT_FOLDED: return s.folded;
    case BS_FORMAT_PERF: return s.perf;
    case BS_FORMAT_SPEEDSCOPE:
        /* {"type":"O","frame":F,"at":T}, opened and closed */
        return frames_bytes + (timeline ? spans * 2 * 44 : s.sampled);
    case BS_FORMAT_CHROME:
        /* {"ph":"X","pid":1,"tid":N,"ts":...,"dur":...,"name":"...","cat":"beam"} */
        return 4096 + (timeline ? spans * 105 + span_names : nodes * 105 + s.nodes_bytes);
    case BS_FORMAT_BSPY: return frames_bytes + nodes * 32 + spans * 20;
    case BS_FORMAT_CALLGRIND: return nodes * 60 + s.nodes_bytes;
    /* Names once, a few bytes per frame of each stack, then gzip: about a
     * third (the recorded profiles of test/cli: 23 KB raw, 9 KB written). */
    case BS_FORMAT_PPROF: return (frames_bytes + s.sampled + nodes * 8) / 3;
    /* HTML and SVG prune what is too narrow to see: upper bounds (the
     * compiler's 773,000 nodes: 12 MB of HTML, 4.3 MB of SVG). */
    case BS_FORMAT_HTML: return 200000 + nodes * 16 + frames_bytes;
    case BS_FORMAT_SVG: {
        uint64_t drawn = nodes < 60000 ? nodes : 60000;
        return 30000 + drawn * 75;
    }
    default: return 0;
    }
}

void bs_folded_rounding(const bs_profile *p, bs_write_report *r)
{
    uint64_t unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    r->stacks_rounded_out = r->rounded_out_ns = r->total_ns = 0;
    for (uint32_t i = 0; i < p->n_trees; i++) {
        const bs_ptree *t = &p->trees[i];
        for (uint32_t k = 0; k < t->n_nodes; k++) {
            uint64_t ns = t->nodes[k].self_ns;
            r->total_ns += ns;
            if (ns > 0 && (ns + unit / 2) / unit == 0) {
                r->stacks_rounded_out++;
                r->rounded_out_ns += ns;
            }
        }
    }
}

/* "1.5 GB", "97.8 MB", "812 kB": decimal units, as ls -h --si. */
static void human_bytes(uint64_t b, char *buf, size_t cap)
{
    if (b >= 1000000000ull)
        snprintf(buf, cap, "%.1f GB", (double)b / 1e9);
    else if (b >= 1000000ull)
        snprintf(buf, cap, "%.1f MB", (double)b / 1e6);
    else
        snprintf(buf, cap, "%llu kB", (unsigned long long)((b + 999) / 1000));
}

/* Appends to buf (vsnprintf: a cut message is still NUL-terminated). */
static void append(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    if (*n + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    if (k > 0)
        *n += (size_t)k < cap - *n ? (size_t)k : cap - *n - 1;
}

size_t bs_write_warning_text(const bs_write_report *r, char *buf, size_t cap)
{
    size_t n = 0;
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    const char *name = bs_format_name((bs_format)r->format);
    if (r->spans_capped > 0)
        append(buf, cap, &n,
               "%s: timeline capped at %llu calls so that the viewer can load it: %llu of %llu "
               "(the deepest) left out of the time order, totals unchanged; to keep them give "
               "timeline_cap => infinity (--timeline-cap none) or a larger number",
               name, (unsigned long long)r->timeline_cap, (unsigned long long)r->spans_capped,
               (unsigned long long)(r->spans + r->spans_capped));
    uint64_t warn = r->warn_bytes ? r->warn_bytes : bs_size_warn_bytes();
    if (r->auto_collapse) {
        char full[32], limit[32], size[32];
        human_bytes(r->full_bytes, full, sizeof full);
        human_bytes(r->openable_bytes, limit, sizeof limit);
        human_bytes(r->projected_bytes, size, sizeof size);
        const char *mode = r->auto_collapse == 2 ? "all" : "direct";
        append(buf, cap, &n,
               "%s%s: every stack whole would be about %s, more than viewers open (above %s): recursion "
               "folded into one frame as with collapse_recursion => %s (--collapse-recursion=%s), about %s "
               "written%s; full => true (--full) writes every stack",
               n ? "; " : "", name, full, limit, mode, mode, size,
               r->projected_bytes > r->openable_bytes ? ", still above: include/exclude or drop_sleep make it smaller"
                                                      : "");
    } else if (r->projected_bytes > warn) {
        char size[32], limit[32];
        human_bytes(r->projected_bytes, size, sizeof size);
        human_bytes(warn, limit, sizeof limit);
        append(buf, cap, &n,
               "%s%s: about %s to write (above %s); smaller with collapse_recursion => all "
               "(--collapse-recursion=all), drop_sleep, include/exclude, a smaller timeline_cap for time-ordered "
               "formats, or the svg/html formats",
               n ? "; " : "", name, size, limit);
    }
    if (r->stacks_rounded_out && r->rounded_out_ns * 100 >= r->total_ns)
        append(buf, cap, &n,
               "%s%s: %llu %s shorter than half a microsecond %s no line (%.1f microseconds, %.0f%% of the time "
               "in the file): folded counts whole microseconds; the other formats keep them",
               n ? "; " : "", name, (unsigned long long)r->stacks_rounded_out,
               r->stacks_rounded_out == 1 ? "stack" : "stacks", r->stacks_rounded_out == 1 ? "has" : "have",
               (double)r->rounded_out_ns / 1e3,
               r->total_ns ? 100.0 * (double)r->rounded_out_ns / (double)r->total_ns : 100.0);
    return n;
}
