/* speedscope.c — speedscope's own JSON format.
 *
 * One profile per process, named with the process label. With a timeline the
 * profile is "evented": an O event when a frame is entered and a C event when
 * it is left, `at` in microseconds since the earliest span of the whole
 * profile (so one instant has one number in every process, as in the Chrome
 * trace), never decreasing, every O closed innermost first — speedscope's
 * importer throws on anything else, and bs_walk_spans guarantees it. Without
 * one it is "sampled": one sample per stack with self time, weighted by it
 * (microseconds, or "none" for counts read from folded files); stacks deeper
 * than folded_max_depth frames (1024 by default) end in one "[deeper]" frame
 * that carries the rest of their time, as in the folded writer.
 *
 * The process is the profile, so stacks start below the process frame; the
 * time a process spent in no traced function (the process frame's own time)
 * is the gap between stacks in an evented profile and is left out of a
 * sampled one, so both kinds show the same numbers. Frames are indexed by
 * array position (two entries with one name would be two frames), so
 * shared.frames holds each name once, in frame-table order. */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_escape.h"
#include "trace_common.h"

#define SCHEMA_URL "https://www.speedscope.app/file-format-schema.json"

typedef struct ss_writer {
    FILE *out;
    const bs_profile *p;
    int drop_sleep;
    uint32_t *index;  /* frame id -> position in shared.frames, UINT32_MAX if unused */
    uint32_t *path;   /* stack being written, leaf first */
    size_t path_cap;
    uint64_t origin;  /* ns written as at = 0 */
    unsigned max_depth;
    uint32_t deeper;  /* index of "[deeper]" in shared.frames, UINT32_MAX if absent */
    uint64_t total;   /* sampled: sum of the weights written */
    int first;        /* no element written yet in the current JSON array */
    char num[BS_NUMBER_MAX];
} ss_writer;

static int skipped(const ss_writer *w, const bs_pnode *n)
{
    return w->drop_sleep && bs_profile_is_sched_out(w->p, n->frame);
}

static void put_sep(ss_writer *w)
{
    if (!w->first)
        putc(',', w->out);
    w->first = 0;
}

/* shared.frames: every frame that appears below a process frame. */
static int write_frames(ss_writer *w)
{
    const bs_profile *p = w->p;
    w->index = malloc((size_t)(p->frames.n ? p->frames.n : 1) * sizeof *w->index);
    if (!w->index)
        return -1;
    memset(w->index, 0xff, (size_t)p->frames.n * sizeof *w->index);
    for (uint32_t ti = 0; ti < p->n_trees; ti++)
        for (uint32_t i = 1; i < p->trees[ti].n_nodes; i++)
            if (!skipped(w, &p->trees[ti].nodes[i]))
                w->index[p->trees[ti].nodes[i].frame] = 0;
    fputs("\"shared\":{\"frames\":[", w->out);
    uint32_t next = 0;
    for (uint32_t f = 0; f < p->frames.n; f++) {
        if (w->index[f] == UINT32_MAX)
            continue;
        w->index[f] = next;
        fputs(next++ ? ",\n{\"name\":" : "\n{\"name\":", w->out);
        bs_json_write_string(w->out, bs_frame_name(&p->frames, f));
        putc('}', w->out);
    }
    int deeper = bs_profile_deeper_than(p, w->max_depth);
    if (deeper < 0)
        return -1;
    w->deeper = UINT32_MAX;
    for (uint32_t f = 0; deeper && f < p->frames.n; f++)
        if (w->index[f] != UINT32_MAX && strcmp(bs_frame_name(&p->frames, f), BS_DEEPER_FRAME) == 0)
            w->deeper = w->index[f]; /* already listed (input that was cut before): one frame */
    if (deeper && w->deeper == UINT32_MAX) {
        w->deeper = next;
        fputs(next++ ? ",\n{\"name\":\"" BS_DEEPER_FRAME "\"}" : "\n{\"name\":\"" BS_DEEPER_FRAME "\"}", w->out);
    }
    fputs("]},\n", w->out);
    return 0;
}

static int write_profile_head(ss_writer *w, const bs_ptree *t, const char *type, const char *unit,
                              const char *suffix)
{
    const char *label = bs_frame_name(&w->p->frames, t->nodes[0].frame);
    size_t n = strlen(label) + strlen(suffix) + 1;
    char *name = malloc(n);
    if (!name)
        return -1;
    snprintf(name, n, "%s%s", label, suffix);
    fprintf(w->out, "{\"type\":\"%s\",\"name\":", type);
    bs_json_write_string(w->out, name);
    fprintf(w->out, ",\"unit\":\"%s\",", unit);
    free(name);
    return 0;
}

/* ---- evented ---------------------------------------------------------- */

typedef struct evented_state {
    ss_writer *w;
    const bs_ptree *t;
    uint64_t first_at, last_at;
    int any;
} evented_state;

static int put_event(evented_state *es, char type, uint32_t node, uint64_t at_ns)
{
    ss_writer *w = es->w;
    char line[2 * BS_NUMBER_MAX + 40];
    size_t n = 0;
    if (es->any)
        line[n++] = ',';
    else
        es->first_at = at_ns;
    es->any = 1;
    es->last_at = at_ns;
    memcpy(line + n, "\n{\"type\":\"O\",\"frame\":", 21);
    line[n + 10] = type; /* the O above */
    n += 21;
    n += bs_fmt_uint(line + n, w->index[es->t->nodes[node].frame]);
    memcpy(line + n, ",\"at\":", 6);
    n += 6;
    n += bs_fmt_us(line + n, at_ns - w->origin);
    line[n++] = '}';
    fwrite(line, 1, n, w->out);
    return 0;
}

static int on_open(void *ctx, uint32_t node, uint64_t start, uint64_t end)
{
    (void)end;
    return put_event(ctx, 'O', node, start);
}

static int on_close(void *ctx, uint32_t node, uint64_t at)
{
    return put_event(ctx, 'C', node, at);
}

static int write_evented(ss_writer *w, const bs_ptree *t)
{
    evented_state es = {w, t, 0, 0, 0};
    char suffix[200] = "";
    if (w->p->spans_capped)
        snprintf(suffix, sizeof suffix,
                 " (timeline capped at %llu calls in this file: %llu of the deepest left out, their time"
                 " shown as their callers'; timeline_cap => infinity keeps them)",
                 (unsigned long long)w->p->timeline_cap, (unsigned long long)w->p->spans_capped);
    else if (w->p->timeline_truncated)
        snprintf(suffix, sizeof suffix, " (timeline truncated)");
    if (write_profile_head(w, t, "evented", "microseconds", suffix) < 0)
        return -1;
    fputs("\"events\":[", w->out);
    bs_span_walk_opts wo = {.skip_sleep = w->drop_sleep};
    bs_span_visitor v = {on_open, on_close, &es};
    if (bs_walk_spans(w->p, t, &wo, &v) < 0)
        return -1;
    /* startValue/endValue after the events: they are only known once written. */
    uint64_t first = es.any ? es.first_at - w->origin : 0, last = es.any ? es.last_at - w->origin : 0;
    fputs("],\"startValue\":", w->out);
    fwrite(w->num, 1, bs_fmt_us(w->num, first), w->out);
    fputs(",\"endValue\":", w->out);
    fwrite(w->num, 1, bs_fmt_us(w->num, last), w->out);
    putc('}', w->out);
    return 0;
}

/* ---- sampled ---------------------------------------------------------- */

/* Weight of node i as written: 0 for skipped nodes and the process frame. */
static uint64_t weight_of(void *ctx, const bs_ptree *t, uint32_t i)
{
    const ss_writer *w = ctx;
    return i == 0 || skipped(w, &t->nodes[i]) ? 0 : t->nodes[i].self_ns;
}

static void put_weight(ss_writer *w, uint64_t v)
{
    size_t n = w->p->unit == BS_UNIT_NS ? bs_fmt_us(w->num, v) : bs_fmt_uint(w->num, v);
    fwrite(w->num, 1, n, w->out);
}

static int add_to_total(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    (void)t, (void)node, (void)deeper;
    ((ss_writer *)ctx)->total += weight;
    return 0;
}

/* One stack: frame indices root first, "[deeper]" last if deeper. */
static int put_stack(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    ss_writer *w = ctx;
    (void)weight;
    size_t depth = 0;
    for (uint32_t at = node; at != 0; at = t->nodes[at].parent) {
        if (depth == w->path_cap) {
            size_t cap = w->path_cap ? w->path_cap * 2 : 256;
            uint32_t *path = realloc(w->path, cap * sizeof *path);
            if (!path) {
                errno = ENOMEM;
                return -1;
            }
            w->path = path;
            w->path_cap = cap;
        }
        w->path[depth++] = w->index[t->nodes[at].frame];
    }
    put_sep(w);
    putc('[', w->out);
    for (size_t k = depth; k-- > 0;) {
        size_t n = bs_fmt_uint(w->num, w->path[k]);
        if (k + 1 < depth)
            putc(',', w->out);
        fwrite(w->num, 1, n, w->out);
    }
    if (deeper) {
        size_t n = bs_fmt_uint(w->num, w->deeper);
        if (depth > 0)
            putc(',', w->out);
        fwrite(w->num, 1, n, w->out);
    }
    putc(']', w->out);
    return 0;
}

static int put_sample_weight(void *ctx, const bs_ptree *t, uint32_t node, int deeper, uint64_t weight)
{
    (void)t, (void)node, (void)deeper;
    put_sep(ctx);
    put_weight(ctx, weight);
    return 0;
}

static int write_sampled(ss_writer *w, const bs_ptree *t)
{
    bs_sample_visitor sum = {weight_of, add_to_total, w}, stacks = {weight_of, put_stack, w},
                      weights = {weight_of, put_sample_weight, w};
    w->total = 0;
    if (bs_walk_samples(t, w->max_depth, &sum) < 0)
        return -1;
    if (write_profile_head(w, t, "sampled", w->p->unit == BS_UNIT_NS ? "microseconds" : "none", "") < 0)
        return -1;
    fputs("\"startValue\":0,\"endValue\":", w->out);
    put_weight(w, w->total);
    fputs(",\"samples\":[", w->out);
    w->first = 1;
    if (bs_walk_samples(t, w->max_depth, &stacks) < 0)
        return -1;
    fputs("],\"weights\":[", w->out);
    w->first = 1;
    if (bs_walk_samples(t, w->max_depth, &weights) < 0)
        return -1;
    fputs("]}", w->out);
    return 0;
}

/* ---- file ------------------------------------------------------------- */

int bs_write_speedscope(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    ss_writer w = {.out = out, .p = p, .drop_sleep = o && o->drop_sleep, .origin = bs_spans_origin(p),
                   .max_depth = o ? o->folded_max_depth : 0};
    int rc = -1;
    fputs("{\"$schema\":\"" SCHEMA_URL "\",\n\"exporter\":\"" BS_EXPORTER "\",\"name\":", out);
    /* speedscope shows the name as the page title: the one place every
     * view keeps on screen says what the times are. */
    char times[BS_COMPENSATION_TEXT_CAP], name[sizeof p->meta.source + sizeof times + 4];
    const char *source = p->meta.source[0] ? p->meta.source : "beamspy";
    if (bs_compensation_text(&p->compensation, times, sizeof times))
        snprintf(name, sizeof name, "%s (%s)", source, times);
    else
        snprintf(name, sizeof name, "%s", source);
    bs_json_write_string(out, name);
    if (p->notes[0]) { /* what WAIT/RUNNABLE mean, idle time left out, ... (viewers ignore it) */
        fputs(",\"notes\":", out);
        bs_json_write_string(out, p->notes);
    }
    fputs(",\"activeProfileIndex\":0,\n", out);
    if (write_frames(&w) < 0)
        goto out;
    fputs("\"profiles\":[", out);
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        fputs(ti ? ",\n" : "\n", out);
        if ((p->has_timeline && t->n_spans > 0 ? write_evented(&w, t) : write_sampled(&w, t)) < 0)
            goto out;
    }
    fputs("]}\n", out);
    rc = ferror(out) ? -1 : 0;
out:
    if (rc < 0 && !ferror(out))
        errno = ENOMEM;
    free(w.index);
    free(w.path);
    return rc;
}
