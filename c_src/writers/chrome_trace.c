/* chrome_trace.c — Chrome Trace Event Format JSON for Perfetto, chrome://tracing
 * and speedscope.
 *
 * The object form: `M` metadata events name the node (pid 1) and each Erlang
 * process (tid = 1, 2, ... in profile order: string tids break speedscope and
 * large ones become 0 in Perfetto), then one `X` event per span, parents
 * before children, properly nested per tid. No per-event args: speedscope
 * would make each (name, args) pair a frame of its own.
 *
 * Times are microseconds from the earliest span, written as multiples of
 * 2^-12 µs (trace_common.h says why: speedscope adds ts + dur in binary
 * floating point and Perfetto rounds each to nanoseconds; these are exact in
 * both). Zero-length spans
 * are left out and counted in otherData: they carry no time, and a
 * zero-length X at the instant another X begins makes speedscope's importer
 * close the wrong frame (at equal times it takes ends before begins of
 * another name, and longer events first).
 *
 * Without a timeline, each process's aggregated call tree is written as a
 * flame chart of totals: children laid end to end from 0 inside their
 * parent, width = total time, the parent's own time after its children.
 * otherData.layout says which of the two a file holds. */
#include "writers.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/json_escape.h"
#include "trace_common.h"

/* One BEAM node is one process of the trace. */
#define PID "1"

/* An X event written and not yet closed. */
typedef struct open_x {
    uint32_t frame;
    uint64_t start, end; /* as written, in 2^-12 µs */
} open_x;

typedef struct ct_writer {
    FILE *out;
    const bs_profile *p;
    int drop_sleep;
    uint32_t tid;
    uint64_t origin;          /* ns written as ts 0 */
    uint64_t scale;           /* ns per unit of the tree's numbers (1000 for counts) */
    uint64_t written, omitted;
    bs_frame_strings names;   /* `"name":"<escaped>","cat":"<category>"` per frame */
    open_x *open;             /* events enclosing the next one, outermost first */
    size_t n_open, cap_open;
    uint64_t *closed_end;     /* per frame: end of its latest event ... */
    uint32_t *closed_tid;     /* ... on this tid (0: none yet) */
} ct_writer;

static void make_name_and_category(FILE *out, const char *name, uint32_t frame, void *ctx)
{
    const bs_profile *p = ctx;
    size_t len = strlen(name);
    const char *cat = bs_profile_is_sched_out(p, frame) ? "sleep" : frame == p->gc_frame ? "gc"
                      : len >= 2 && name[0] == '[' && name[len - 1] == ']' ? "telemetry" : "beam";
    fputs("\"name\":", out);
    bs_json_write_string(out, name);
    fprintf(out, ",\"cat\":\"%s\"", cat);
}

/* The notes of a span (telemetry metadata, exception) as its args. */
static void put_args(FILE *out, const bs_pnote *notes, uint32_t n)
{
    fputs(",\"args\":{", out);
    for (uint32_t i = 0; i < n; i++) {
        fprintf(out, "%s\"telemetry%s\":", i ? "," : "", i == 0 ? "" : i == 1 ? "_2" : "_n");
        bs_json_write_string(out, notes[i].text);
    }
    putc('}', out);
}

static int put_complete(ct_writer *w, uint32_t frame, uint64_t ts, uint64_t dur, const bs_pnote *notes,
                        uint32_t n_notes)
{
    size_t name_len;
    const char *name = bs_frame_string(&w->names, w->p, frame, make_name_and_category, (void *)w->p, &name_len);
    if (!name)
        return -1;
    /* One fwrite per event: stdio locks the stream on every call. */
    char line[512];
    static const char head[] = ",\n{\"ph\":\"X\",\"pid\":" PID ",\"tid\":";
    size_t n = sizeof head - 1;
    memcpy(line, head, n);
    n += bs_fmt_uint(line + n, w->tid);
    memcpy(line + n, ",\"ts\":", 6);
    n += 6;
    n += bs_fmt_binary_us(line + n, ts);
    memcpy(line + n, ",\"dur\":", 7);
    n += 7;
    n += bs_fmt_binary_us(line + n, dur);
    line[n++] = ',';
    if (n_notes) {
        fwrite(line, 1, n, w->out);
        fwrite(name, 1, name_len, w->out);
        put_args(w->out, notes, n_notes);
        putc('}', w->out);
    } else if (n + name_len + 1 <= sizeof line) {
        memcpy(line + n, name, name_len);
        n += name_len;
        line[n++] = '}';
        fwrite(line, 1, n, w->out);
    } else {
        fwrite(line, 1, n, w->out);
        fwrite(name, 1, name_len, w->out);
        putc('}', w->out);
    }
    w->written++;
    return 0;
}

/* Opens an event of frame from start to end (ns since the origin) inside the
 * innermost open one. It starts no earlier than that one, and 2^-12 µs later
 * (Perfetto still rounds it to the same nanosecond) if an event of the same
 * name ended at its start on this tid:
 * speedscope's importer, at equal times, takes a begin before an end of the
 * same name and would nest the new call in the one that just ended (then
 * close the wrong frames). Events left with no length are not written. */
static int x_open(ct_writer *w, uint32_t frame, uint64_t start, uint64_t end, const bs_pnote *notes,
                  uint32_t n_notes)
{
    uint64_t ks = bs_ns_to_binary_us(start), ke = bs_ns_to_binary_us(end);
    if (w->n_open > 0 && ks < w->open[w->n_open - 1].start)
        ks = w->open[w->n_open - 1].start;
    else if (w->closed_tid[frame] == w->tid && w->closed_end[frame] == ks)
        ks++;
    if (w->n_open == w->cap_open) {
        size_t cap = w->cap_open ? w->cap_open * 2 : 64;
        open_x *o = realloc(w->open, cap * sizeof *o);
        if (!o)
            return -1;
        w->open = o;
        w->cap_open = cap;
    }
    w->open[w->n_open++] = (open_x){frame, ks, ke};
    if (ke <= ks) {
        w->omitted++;
        return 0;
    }
    return put_complete(w, frame, ks, ke - ks, notes, n_notes);
}

static void x_close(ct_writer *w)
{
    open_x *o = &w->open[--w->n_open];
    if (o->end > o->start) {
        w->closed_tid[o->frame] = w->tid;
        w->closed_end[o->frame] = o->end;
    }
}

/* ---- timeline --------------------------------------------------------- */

typedef struct span_ctx {
    ct_writer *w;
    const bs_ptree *t;
} span_ctx;

static int on_open(void *ctx, uint32_t node, uint64_t start, uint64_t end)
{
    span_ctx *sc = ctx;
    const bs_pnote *notes = NULL;
    uint32_t n = sc->t->n_notes ? bs_ptree_notes(sc->t, node, start, &notes) : 0;
    return x_open(sc->w, sc->t->nodes[node].frame, start - sc->w->origin, end - sc->w->origin, notes, n);
}

static int on_close(void *ctx, uint32_t node, uint64_t at)
{
    (void)node;
    (void)at;
    x_close(((span_ctx *)ctx)->w);
    return 0;
}

static int write_spans(ct_writer *w, const bs_ptree *t)
{
    uint64_t before = w->written + w->omitted, eligible = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        uint32_t node = t->spans[i].node;
        if (node > 0 && node < t->n_nodes && !(w->drop_sleep && bs_profile_is_sched_out(w->p, t->nodes[node].frame)))
            eligible++;
    }
    span_ctx sc = {w, t};
    bs_span_walk_opts wo = {.skip_sleep = w->drop_sleep, .skip_empty = 1};
    bs_span_visitor v = {on_open, on_close, &sc};
    if (bs_walk_spans(w->p, t, &wo, &v) < 0)
        return -1;
    /* Spans the walk left out had no length. */
    w->omitted += eligible - (w->written + w->omitted - before);
    return 0;
}

/* ---- call tree totals --------------------------------------------------- */

typedef struct layout_frame {
    uint32_t node;
    uint32_t child;   /* next child to lay out */
    uint64_t cursor;  /* where that child starts, ns */
} layout_frame;

static int write_totals(ct_writer *w, const bs_ptree *t)
{
    uint32_t n = t->n_nodes;
    uint32_t *first = malloc((size_t)n * sizeof *first), *next = malloc((size_t)n * sizeof *next);
    uint64_t *drawn = malloc((size_t)n * sizeof *drawn);
    layout_frame *stack = malloc((size_t)n * sizeof *stack);
    int rc = -1;
    if (!first || !next || !drawn || !stack)
        goto out;
    memset(first, 0xff, (size_t)n * sizeof *first);
    for (uint32_t i = n; i-- > 1;) { /* backwards: siblings in creation order */
        next[i] = first[t->nodes[i].parent];
        first[t->nodes[i].parent] = i;
    }
    for (uint32_t i = 0; i < n; i++)
        drawn[i] = w->drop_sleep && i > 0 && bs_profile_is_sched_out(w->p, t->nodes[i].frame) ? 0 : t->nodes[i].self_ns;
    for (uint32_t i = n; i-- > 1;)
        drawn[t->nodes[i].parent] += drawn[i];
    size_t depth = 1;
    stack[0] = (layout_frame){0, first[0], 0};
    while (depth > 0) {
        layout_frame *top = &stack[depth - 1];
        uint32_t c = top->child;
        if (c == UINT32_MAX) {
            if (--depth > 0)
                x_close(w);
            continue;
        }
        top->child = next[c];
        if (drawn[c] == 0)
            continue;
        uint64_t start = top->cursor, width = drawn[c] * w->scale;
        top->cursor += width;
        if (x_open(w, t->nodes[c].frame, start, start + width, NULL, 0) < 0)
            goto out;
        stack[depth++] = (layout_frame){c, first[c], start};
    }
    rc = 0;
out:
    free(first);
    free(next);
    free(drawn);
    free(stack);
    return rc;
}

/* ---- file --------------------------------------------------------------- */

static void put_metadata(ct_writer *w, const char *what, uint32_t tid, const char *name)
{
    fprintf(w->out, ",\n{\"ph\":\"M\",\"pid\":" PID ",\"tid\":%u,\"name\":\"%s\",\"args\":{\"name\":", tid, what);
    bs_json_write_string(w->out, name);
    fputs("}}", w->out);
}

static void put_other_data(ct_writer *w, int timeline)
{
    const bs_profile *p = w->p;
    FILE *out = w->out;
    fputs("\"otherData\":{\"exporter\":\"" BS_EXPORTER "\",\"source\":", out);
    bs_json_write_string(out, p->meta.source);
    fputs(",\"node\":", out);
    bs_json_write_string(out, p->meta.node);
    fputs(",\"otp_release\":", out);
    bs_json_write_string(out, p->meta.otp_release);
    fputs(",\"options\":", out);
    bs_json_write_string(out, p->meta.options);
    fprintf(out, ",\"start_unix_us\":%lld", (long long)p->meta.start_unix_us);
    fputs(",\n\"layout\":", out);
    bs_json_write_string(out, timeline ? "timeline: one X event per call, in time order"
                                       : "call tree totals: no timeline was recorded, so each process's calls "
                                         "are laid end to end from 0 with width = total time; x is not time");
    fputs(",\"time_unit\":\"microseconds, in multiples of 2^-12 (exact in binary floating point)\"", out);
    if (p->unit == BS_UNIT_COUNT)
        fputs(",\"weights\":\"samples, drawn as 1 microsecond each\"", out);
    fprintf(out, ",\"x_events\":%llu,\"zero_length_spans_omitted\":%llu", (unsigned long long)w->written,
            (unsigned long long)w->omitted);
    fprintf(out, ",\"timeline_truncated\":%s,\"truncated\":", p->timeline_truncated ? "true" : "false");
    bs_json_write_string(out, p->truncated);
    if (p->spans_capped)
        fprintf(out, ",\"timeline_cap\":%llu,\"calls_left_out_by_cap\":%llu,\"timeline_cap_note\":"
                     "\"the deepest calls are left out of the time order (their time shows as their "
                     "callers' own); record or render with timeline_cap => infinity (--timeline-cap none) "
                     "to keep them\"",
                (unsigned long long)p->timeline_cap, (unsigned long long)p->spans_capped);
    if (p->notes[0]) {
        fputs(",\"notes\":", out);
        bs_json_write_string(out, p->notes);
    }
    char times[BS_COMPENSATION_TEXT_CAP];
    if (bs_compensation_text(&p->compensation, times, sizeof times)) {
        fputs(",\"times\":", out);
        bs_json_write_string(out, times);
        fprintf(out, ",\"tracer_overhead_subtracted_ns\":%llu",
                (unsigned long long)p->compensation.subtracted_ns);
    }
    fputs("}}\n", out);
}

int bs_write_chrome(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    int timeline = p->has_timeline && bs_profile_has_spans(p);
    ct_writer w = {.out = out, .p = p, .drop_sleep = o && o->drop_sleep};
    w.origin = timeline ? bs_spans_origin(p) : 0;
    w.scale = p->unit == BS_UNIT_COUNT ? 1000 : 1;
    int rc = -1;
    w.closed_end = calloc(p->frames.n ? p->frames.n : 1, sizeof *w.closed_end);
    w.closed_tid = calloc(p->frames.n ? p->frames.n : 1, sizeof *w.closed_tid);
    if (!w.closed_end || !w.closed_tid || bs_frame_strings_init(&w.names, p->frames.n) < 0) {
        errno = ENOMEM;
        goto out;
    }
    char process_name[300];
    snprintf(process_name, sizeof process_name, "%s%s", p->meta.node[0] ? "beam.smp " : "beamspy", p->meta.node);
    fputs("{\"traceEvents\":[\n{\"ph\":\"M\",\"pid\":" PID ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":", out);
    bs_json_write_string(out, process_name);
    fputs("}}", out);
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        w.tid = ti + 1;
        put_metadata(&w, "thread_name", w.tid, bs_frame_name(&p->frames, t->nodes[0].frame));
        fprintf(out, ",\n{\"ph\":\"M\",\"pid\":" PID ",\"tid\":%u,\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":%u}}",
                w.tid, w.tid);
        if ((timeline ? write_spans(&w, t) : write_totals(&w, t)) < 0)
            goto out;
    }
    fputs("\n],\n\"displayTimeUnit\":\"ms\",\n", out);
    put_other_data(&w, timeline);
    rc = ferror(out) ? -1 : 0;
out:
    if (rc < 0 && !ferror(out))
        errno = ENOMEM;
    bs_frame_strings_free(&w.names);
    free(w.closed_end);
    free(w.closed_tid);
    free(w.open);
    return rc;
}
