/* test_trace_formats.c — the speedscope JSON, Chrome trace and perf script
 * writers (speedscope.c, chrome_trace.c, perf_script.c, trace_common.c).
 *
 * Golden files (test/c/golden/trace_*; BS_UPDATE_GOLDEN=1 rewrites them) for
 * a fixed two-process profile with a timeline and without one. Every output
 * of every case also goes through checkers that encode what the real readers
 * do: a strict JSON parser (json_check.h); for
 * speedscope, the importer's rules (exact $schema, frames unique, evented
 * `at` non-decreasing and O/C balanced, samples and weights of equal length);
 * for Chrome traces, Perfetto's (integer pid/tid, no negative ts, X events
 * nested per tid after its sort, with ts rounded to ns as it does) and a
 * re-run of speedscope 1.25.0's trace-event import in C (it computes
 * ts + dur in binary floating point and warns when an end does not match the
 * open frame: there must be no warning); for perf script, the grammar both
 * stackcollapse-perf.pl and speedscope accept, and each reader's weighting
 * (summed periods; time between sample midpoints) recomputed per stack and
 * compared with the profile's self times. Also: number formatting, hostile
 * frame names, determinism, drop_sleep, truncated timelines, count
 * profiles, deep recursion ("[deeper]"), broken spans, write errors, random
 * profiles, empty profiles, and dispatch by file extension. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "writers/trace_common.h"
#include "writers/writers.h"
#include "json_check.h"
#include "test_util.h"

#define OK(x) assert_int_equal((x), 0)
#define SCHEMA "https://www.speedscope.app/file-format-schema.json"

typedef int (*writer_fn)(FILE *, const bs_profile *, const bs_render_opts *);

static char *write_mem(writer_fn writer, const bs_profile *p, const bs_render_opts *o, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n);
    assert_non_null(out);
    OK(writer(out, p, o));
    assert_int_equal(fclose(out), 0);
    if (len)
        *len = n;
    return text;
}

/* ------------------------------------------------------------------------
 * Profiles
 * ------------------------------------------------------------------------ */

static const bs_key TOP = KEY(M_M, F_TOP, 0), A = KEY(M_M, F_A, 0), B = KEY(M_M, F_B, 0),
                    C = KEY(M_M, F_C, 0), F = KEY(M_M, F_F, 0);

/* P1, ns: [0,1000) root; top 1000; a 3000; b [3400,3899); out [4000,9000)
 * (SLEEP); GC [9000,11000); back to top at 12500; c [12500,15100); top
 * until 16000. */
static void feed_p1(bs_proc *p, void *ctx)
{
    (void)ctx;
    OK(bs_proc_call(p, &TOP, BS_CALLER_ROOT, NULL, 1000));
    OK(bs_proc_call(p, &A, BS_CALLER_FRAME, &TOP, 3000));
    OK(bs_proc_call(p, &B, BS_CALLER_FRAME, &A, 3400));
    OK(bs_proc_return_to(p, &A, 3899));
    OK(bs_proc_sched_out(p, 4000));
    OK(bs_proc_sched_in(p, 9000));
    OK(bs_proc_gc_start(p, 9000));
    OK(bs_proc_gc_end(p, 11000));
    OK(bs_proc_return_to(p, &TOP, 12500));
    OK(bs_proc_call(p, &C, BS_CALLER_FRAME, &TOP, 12500));
    OK(bs_proc_return_to(p, &TOP, 15100));
    OK(bs_proc_return_to(p, NULL, 16000));
    bs_proc_flush(p, 16000);
}

/* P2: two calls of f back to back (one ends where the next begins), then
 * top -> c -> f -> b left at once by a tail call to f from b: one instant
 * closes b, f and c and opens f again — the case speedscope's trace
 * importer mis-nests (it takes the new f's begin before the old f's end)
 * unless the new f starts a hair later. */
static void feed_p2(bs_proc *p, void *ctx)
{
    (void)ctx;
    OK(bs_proc_call(p, &TOP, BS_CALLER_ROOT, NULL, 500));
    OK(bs_proc_call(p, &F, BS_CALLER_FRAME, &TOP, 1000));
    OK(bs_proc_return_to(p, &TOP, 2000));
    OK(bs_proc_call(p, &F, BS_CALLER_FRAME, &TOP, 2000));
    OK(bs_proc_return_to(p, &TOP, 2400));
    OK(bs_proc_call(p, &C, BS_CALLER_FRAME, &TOP, 2500));
    OK(bs_proc_call(p, &F, BS_CALLER_FRAME, &C, 2600));
    OK(bs_proc_call(p, &B, BS_CALLER_FRAME, &F, 2700));
    OK(bs_proc_call(p, &F, BS_CALLER_FRAME, &TOP, 3000));
    OK(bs_proc_return_to(p, &TOP, 4000));
    OK(bs_proc_return_to(p, NULL, 4500));
    bs_proc_flush(p, 4500);
}

typedef void (*feeder)(bs_proc *p, void *ctx);

static void add_proc(bs_profile *prof, bs_span_quota *quota, feeder feed, void *feed_ctx, const char *label,
                     bs_key_namer namer, void *ctx)
{
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    if (quota)
        bs_proc_enable_timeline(&p, quota);
    feed(&p, feed_ctx);
    OK(bs_profile_add_proc(prof, &p, label, namer, ctx));
    bs_proc_free(&p);
}

static void set_meta(bs_profile *prof)
{
    snprintf(prof->meta.node, sizeof prof->meta.node, "demo@host");
    snprintf(prof->meta.otp_release, sizeof prof->meta.otp_release, "25");
    snprintf(prof->meta.source, sizeof prof->meta.source, "beamspy:apply(demo:run/0)");
    snprintf(prof->meta.options, sizeof prof->meta.options, "#{timeline => true}");
    prof->meta.start_unix_us = 1763770000123456;
}

/* The fixed profile of the golden files: P1 and P2, with or without spans. */
static void make_fixture(bs_profile *prof, int timeline)
{
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000);
    OK(bs_profile_init(prof));
    add_proc(prof, timeline ? &quota : NULL, feed_p1, NULL, "<0.80.0>", tu_namer, NULL);
    add_proc(prof, timeline ? &quota : NULL, feed_p2, NULL, "<0.81.0> my_server", tu_namer, NULL);
    bs_profile_compute_totals(prof);
    set_meta(prof);
}

/* A random process of n events (seed), with a span quota (0: no timeline). */
static void make_random(bs_profile *prof, size_t n, uint64_t seed, uint64_t quota_spans)
{
    bs_span_quota quota;
    bs_span_quota_init(&quota, quota_spans);
    tu_event *ev = calloc(n, sizeof *ev);
    assert_non_null(ev);
    tu_random_events(ev, n, seed, 9);
    bs_proc p;
    OK(bs_proc_init(&p, NULL, 0, 1, 1));
    if (quota_spans)
        bs_proc_enable_timeline(&p, &quota);
    for (size_t i = 0; i < n; i++)
        (void)tu_feed(&p, &ev[i]);
    bs_proc_flush(&p, ev[n - 1].t + 7);
    char label[64];
    snprintf(label, sizeof label, "<0.%u.0> worker", (unsigned)(seed % 1000));
    OK(bs_profile_add_proc(prof, &p, label, tu_namer, NULL));
    bs_proc_free(&p);
    free(ev);
}

/* ------------------------------------------------------------------------
 * speedscope JSON checker
 * ------------------------------------------------------------------------ */

/* At most three decimals, no exponent: how microseconds must be written. */
static int plain_decimal(const jc_val *v, int max_decimals)
{
    const char *dot = memchr(v->num_text, '.', v->num_len);
    for (size_t i = 0; i < v->num_len; i++)
        if (v->num_text[i] == 'e' || v->num_text[i] == 'E' || v->num_text[i] == '-')
            return 0;
    if (!dot)
        return 1;
    size_t decimals = v->num_len - (size_t)(dot - v->num_text) - 1;
    return decimals <= (size_t)max_decimals && v->num_text[v->num_len - 1] != '0';
}

typedef struct ss_stats {
    size_t profiles, evented, sampled, events, samples, frames;
} ss_stats;

static void check_evented(const jc_val *prof, size_t n_frames, size_t pi, ss_stats *st)
{
    const jc_val *events = jc_get(prof, "events"), *sv = jc_get(prof, "startValue"), *ev = jc_get(prof, "endValue");
    if (!events || events->type != JC_ARR || !sv || sv->type != JC_NUM || !ev || ev->type != JC_NUM)
        fail_msg("profile %zu: evented needs events, startValue, endValue", pi);
    if (!plain_decimal(sv, 3) || !plain_decimal(ev, 3) || ev->num < sv->num)
        fail_msg("profile %zu: bad startValue/endValue", pi);
    size_t *stack = malloc((events->n + 1) * sizeof *stack), depth = 0;
    assert_non_null(stack);
    double last = -1;
    for (size_t i = 0; i < events->n; i++) {
        const jc_val *e = &events->items[i], *type = jc_get(e, "type"), *frame = jc_get(e, "frame"),
                     *at = jc_get(e, "at");
        if (!type || type->type != JC_STR || !jc_is_uint(frame) || (size_t)frame->num >= n_frames || !at ||
            at->type != JC_NUM || !plain_decimal(at, 3))
            fail_msg("profile %zu event %zu: malformed", pi, i);
        if (at->num < last)
            fail_msg("profile %zu event %zu: at %.3f < %.3f (speedscope throws)", pi, i, at->num, last);
        if (at->num < sv->num || at->num > ev->num)
            fail_msg("profile %zu event %zu: at outside [startValue, endValue]", pi, i);
        if (i == 0 && at->num != sv->num)
            fail_msg("profile %zu: startValue is not the first at", pi);
        last = at->num;
        if (strcmp(type->str, "O") == 0) {
            stack[depth++] = (size_t)frame->num;
        } else if (strcmp(type->str, "C") == 0) {
            if (depth == 0 || stack[depth - 1] != (size_t)frame->num)
                fail_msg("profile %zu event %zu: C of a frame not on top (speedscope throws)", pi, i);
            depth--;
        } else {
            fail_msg("profile %zu event %zu: type %s", pi, i, type->str);
        }
    }
    if (depth != 0)
        fail_msg("profile %zu: %zu frames never closed", pi, depth);
    if (events->n > 0 && last != ev->num)
        fail_msg("profile %zu: endValue is not the last at", pi);
    free(stack);
    st->evented++;
    st->events += events->n;
}

static void check_sampled(const jc_val *prof, size_t n_frames, size_t pi, ss_stats *st)
{
    const jc_val *samples = jc_get(prof, "samples"), *weights = jc_get(prof, "weights"),
                 *sv = jc_get(prof, "startValue"), *ev = jc_get(prof, "endValue"), *unit = jc_get(prof, "unit");
    if (!samples || samples->type != JC_ARR || !weights || weights->type != JC_ARR || !sv || !ev)
        fail_msg("profile %zu: sampled needs samples, weights, startValue, endValue", pi);
    if (samples->n != weights->n)
        fail_msg("profile %zu: %zu samples, %zu weights (speedscope throws)", pi, samples->n, weights->n);
    int integral = strcmp(unit->str, "none") == 0;
    double sum = 0;
    for (size_t i = 0; i < samples->n; i++) {
        const jc_val *s = &samples->items[i], *w = &weights->items[i];
        if (s->type != JC_ARR || s->n == 0)
            fail_msg("profile %zu sample %zu: not a non-empty array", pi, i);
        for (size_t k = 0; k < s->n; k++)
            if (!jc_is_uint(&s->items[k]) || (size_t)s->items[k].num >= n_frames)
                fail_msg("profile %zu sample %zu: bad frame index", pi, i);
        if (w->type != JC_NUM || !(w->num > 0) || !plain_decimal(w, integral ? 0 : 3))
            fail_msg("profile %zu weight %zu: not a positive number written plainly", pi, i);
        sum += w->num;
    }
    if (sv->num != 0 || sum > ev->num * (1 + 1e-9) + 1e-9 || sum < ev->num * (1 - 1e-9) - 1e-9)
        fail_msg("profile %zu: weights sum to %f, endValue - startValue is %f", pi, sum, ev->num - sv->num);
    st->sampled++;
    st->samples += samples->n;
}

/* Parses and checks a speedscope file; returns its tree (caller frees). */
static jc_val check_speedscope(const char *text, size_t len, ss_stats *st)
{
    jc_val doc;
    char why[200];
    if (jc_parse(text, len, &doc, why, sizeof why) != 0)
        fail_msg("speedscope: invalid JSON: %s", why);
    memset(st, 0, sizeof *st);
    const jc_val *schema = jc_get(&doc, "$schema"), *exporter = jc_get(&doc, "exporter"), *name = jc_get(&doc, "name"),
                 *frames = jc_get(jc_get(&doc, "shared"), "frames"), *profiles = jc_get(&doc, "profiles"),
                 *active = jc_get(&doc, "activeProfileIndex");
    if (doc.type != JC_OBJ || doc.n == 0 || strcmp(doc.keys[0], "$schema") != 0)
        fail_msg("speedscope: $schema must come first (content sniffing reads the start)");
    if (!schema || schema->type != JC_STR || strcmp(schema->str, SCHEMA) != 0)
        fail_msg("speedscope: $schema is not exactly " SCHEMA);
    if (!exporter || strcmp(exporter->str, "beamspy@0.1.0") != 0 || !name || name->type != JC_STR)
        fail_msg("speedscope: exporter/name");
    if (!frames || frames->type != JC_ARR || !profiles || profiles->type != JC_ARR)
        fail_msg("speedscope: shared.frames and profiles must be arrays");
    if (!jc_is_uint(active) || (profiles->n > 0 && active->num >= (double)profiles->n))
        fail_msg("speedscope: activeProfileIndex");
    for (size_t i = 0; i < frames->n; i++) {
        const jc_val *fname = jc_get(&frames->items[i], "name");
        if (!fname || fname->type != JC_STR)
            fail_msg("speedscope: frame %zu has no name", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(jc_get(&frames->items[k], "name")->str, fname->str) == 0)
                fail_msg("speedscope: frame name '%s' twice (they would be two frames)", fname->str);
    }
    for (size_t pi = 0; pi < profiles->n; pi++) {
        const jc_val *prof = &profiles->items[pi], *type = jc_get(prof, "type"), *pname = jc_get(prof, "name"),
                     *unit = jc_get(prof, "unit");
        if (!type || !pname || pname->type != JC_STR || !unit || unit->type != JC_STR)
            fail_msg("profile %zu: type, name and unit are required", pi);
        if (strcmp(unit->str, "microseconds") != 0 && strcmp(unit->str, "none") != 0)
            fail_msg("profile %zu: unit %s", pi, unit->str);
        if (strcmp(type->str, "evented") == 0)
            check_evented(prof, frames->n, pi, st);
        else if (strcmp(type->str, "sampled") == 0)
            check_sampled(prof, frames->n, pi, st);
        else
            fail_msg("profile %zu: type %s", pi, type->str);
    }
    st->profiles = profiles->n;
    st->frames = frames->n;
    return doc;
}

/* ------------------------------------------------------------------------
 * Chrome trace checker, with Perfetto's nesting and speedscope's import
 * ------------------------------------------------------------------------ */

typedef struct xev {
    size_t index;      /* file order */
    double ts, dur;    /* as a JavaScript reader parses them */
    const char *name;
} xev;

static int by_ts_longest_first(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int64_t perfetto_ns(double us)
{
    double v = us * 1000;
    return (int64_t)(v < 0 ? v - 0.5 : v + 0.5); /* llround */
}

/* Perfetto: X events sorted by ts then longest first, slices ending at or
 * before a new one are closed, and one that does not fit inside the open
 * slice is a partial overlap (moved to an overflow track). */
static void perfetto_nesting(xev *xs, size_t n, unsigned tid)
{
    qsort(xs, n, sizeof *xs, by_ts_longest_first);
    int64_t *ends = malloc((n + 1) * sizeof *ends);
    assert_non_null(ends);
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ts = perfetto_ns(xs[i].ts), end = ts + perfetto_ns(xs[i].dur);
        while (depth > 0 && ends[depth - 1] <= ts)
            depth--;
        if (depth > 0 && end > ends[depth - 1])
            fail_msg("tid %u: '%s' at %.4f partially overlaps its parent (Perfetto)", tid, xs[i].name, xs[i].ts);
        ends[depth++] = end;
    }
    free(ends);
}

/* speedscope 1.25.0, src/import/trace-event.ts: X events become B and E
 * (E at ts + dur, in floating point), both queues sorted by ts (X by longer
 * dur first); at equal ts a B goes first if its name equals the next E's,
 * otherwise the E; an E whose name is not on top is swapped with a later E
 * of the same ts that matches, else it is a warning. Returns the number of
 * warnings. */
typedef struct ss_ev {
    double ts;
    const char *name;
    size_t order;
} ss_ev;

static int by_ts_stable(const void *a, const void *b)
{
    const ss_ev *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static size_t speedscope_import(xev *xs, size_t n)
{
    if (n == 0)
        return 0;
    qsort(xs, n, sizeof *xs, by_ts_longest_first);
    double min = xs[0].ts;
    ss_ev *bq = malloc(n * sizeof *bq), *eq = malloc(n * sizeof *eq);
    const char **stack = malloc(n * sizeof *stack);
    assert_true(bq && eq && stack);
    for (size_t i = 0; i < n; i++) {
        double ts = xs[i].ts - min;
        bq[i] = (ss_ev){ts, xs[i].name, i};
        eq[i] = (ss_ev){ts + xs[i].dur, xs[i].name, i};
    }
    /* The B queue is already in order; E is sorted by ts, ties in X order
     * (JavaScript's sort is stable; qsort is not, so the index decides). */
    ss_ev *es = malloc(n * sizeof *es);
    assert_non_null(es);
    for (size_t i = 0; i < n; i++)
        es[i] = (ss_ev){eq[i].ts, eq[i].name, i};
    qsort(es, n, sizeof *es, by_ts_stable);
    size_t bi = 0, ei = 0, depth = 0, warnings = 0;
    while (bi < n || ei < n) {
        int take_b;
        if (ei >= n)
            take_b = 1;
        else if (bi >= n)
            take_b = 0;
        else if (bq[bi].ts != es[ei].ts)
            take_b = bq[bi].ts < es[ei].ts;
        else
            take_b = strcmp(bq[bi].name, es[ei].name) == 0;
        if (take_b) {
            stack[depth++] = bq[bi++].name;
            continue;
        }
        if (depth > 0) {
            for (size_t u = ei + 1; u < n && es[u].ts <= es[ei].ts; u++)
                if (strcmp(es[u].name, stack[depth - 1]) == 0) {
                    ss_ev t = es[ei];
                    es[ei] = es[u];
                    es[u] = t;
                    break;
                }
        }
        const char *end = es[ei++].name;
        if (depth == 0 || strcmp(end, stack[depth - 1]) != 0)
            warnings++;
        else
            depth--;
    }
    warnings += depth; /* frames still open at the end */
    free(bq);
    free(eq);
    free(es);
    free(stack);
    return warnings;
}

typedef struct ct_stats {
    size_t x_events, threads;
    double min_ts, max_end;
} ct_stats;

/* 1 if v * 4096 is a whole number: ts/dur are multiples of 2^-12 µs. */
static int binary_fraction(double v)
{
    double scaled = v * 4096;
    return scaled == (double)(uint64_t)scaled;
}

static jc_val check_chrome(const char *text, size_t len, ct_stats *st)
{
    jc_val doc;
    char why[200];
    if (jc_parse(text, len, &doc, why, sizeof why) != 0)
        fail_msg("chrome: invalid JSON: %s", why);
    memset(st, 0, sizeof *st);
    st->min_ts = 1e300;
    const jc_val *events = jc_get(&doc, "traceEvents"), *unit = jc_get(&doc, "displayTimeUnit"),
                 *other = jc_get(&doc, "otherData");
    if (!events || events->type != JC_ARR || events->n == 0)
        fail_msg("chrome: traceEvents must be a non-empty array");
    if (!unit || strcmp(unit->str, "ms") != 0 || !other || other->type != JC_OBJ ||
        strcmp(jc_get(other, "exporter")->str, "beamspy@0.1.0") != 0)
        fail_msg("chrome: displayTimeUnit / otherData");
    unsigned max_tid = 0;
    for (size_t i = 0; i < events->n; i++) {
        const jc_val *tid = jc_get(&events->items[i], "tid");
        if (jc_is_uint(tid) && tid->num > max_tid)
            max_tid = (unsigned)tid->num;
    }
    xev **per_tid = calloc(max_tid + 1, sizeof *per_tid);
    size_t *count = calloc(max_tid + 1, sizeof *count);
    int *named = calloc(max_tid + 1, sizeof *named);
    assert_true(per_tid && count && named);
    for (unsigned t = 0; t <= max_tid; t++) {
        per_tid[t] = malloc(events->n * sizeof **per_tid);
        assert_non_null(per_tid[t]);
    }
    for (size_t i = 0; i < events->n; i++) {
        const jc_val *e = &events->items[i], *ph = jc_get(e, "ph"), *pid = jc_get(e, "pid"), *tid = jc_get(e, "tid"),
                     *name = jc_get(e, "name");
        if (!ph || ph->type != JC_STR || strlen(ph->str) != 1)
            fail_msg("chrome event %zu: ph", i);
        if (!jc_is_uint(pid) || pid->num != 1 || !jc_is_uint(tid))
            fail_msg("chrome event %zu: pid must be 1 and tid a non-negative integer (strings break speedscope)", i);
        if (!name || name->type != JC_STR || name->len == 0)
            fail_msg("chrome event %zu: name", i);
        unsigned t = (unsigned)tid->num;
        if (ph->str[0] == 'M') {
            const jc_val *args = jc_get(e, "args");
            if (strcmp(name->str, "thread_sort_index") == 0) {
                if (!jc_is_uint(jc_get(args, "sort_index")))
                    fail_msg("chrome event %zu: sort_index", i);
            } else if (strcmp(name->str, "thread_name") == 0 || strcmp(name->str, "process_name") == 0) {
                if (!jc_get(args, "name") || jc_get(args, "name")->type != JC_STR)
                    fail_msg("chrome event %zu: %s needs args.name", i, name->str);
                if (strcmp(name->str, "thread_name") == 0)
                    named[t] = 1;
            } else {
                fail_msg("chrome event %zu: metadata %s", i, name->str);
            }
            continue;
        }
        if (ph->str[0] != 'X')
            fail_msg("chrome event %zu: phase %s (only M and X are written)", i, ph->str);
        const jc_val *ts = jc_get(e, "ts"), *dur = jc_get(e, "dur"), *cat = jc_get(e, "cat");
        if (!ts || ts->type != JC_NUM || !dur || dur->type != JC_NUM)
            fail_msg("chrome event %zu: X needs numeric ts and dur", i);
        if (ts->num < 0 || dur->num <= 0)
            fail_msg("chrome event %zu: ts %f dur %f (negative ts is dropped by Perfetto; zero-length X is not written)",
                     i, ts->num, dur->num);
        if (!binary_fraction(ts->num) || !binary_fraction(dur->num) || !plain_decimal(ts, 12) || !plain_decimal(dur, 12))
            fail_msg("chrome event %zu: ts/dur not exact multiples of 2^-12 written plainly", i);
        if (jc_get(e, "args"))
            fail_msg("chrome event %zu: per-event args split frames in speedscope", i);
        if (!cat || (strcmp(cat->str, "beam") != 0 && strcmp(cat->str, "sleep") != 0 && strcmp(cat->str, "gc") != 0 &&
                     strcmp(cat->str, "telemetry") != 0))
            fail_msg("chrome event %zu: cat", i);
        size_t nl = strlen(name->str);
        if ((strcmp(cat->str, "telemetry") == 0) != (nl >= 2 && name->str[0] == '[' && name->str[nl - 1] == ']'))
            fail_msg("chrome event %zu: telemetry span frames ([name]) and only they are in category telemetry", i);
        if ((strcmp(cat->str, "sleep") == 0) != (strcmp(name->str, "SLEEP") == 0))
            fail_msg("chrome event %zu: SLEEP must be in category sleep", i);
        if (t == 0)
            fail_msg("chrome event %zu: tid 0 is the node itself", i);
        per_tid[t][count[t]++] = (xev){i, ts->num, dur->num, name->str};
        if (ts->num < st->min_ts)
            st->min_ts = ts->num;
        if (ts->num + dur->num > st->max_end)
            st->max_end = ts->num + dur->num;
        st->x_events++;
    }
    for (unsigned t = 1; t <= max_tid; t++) {
        if (!named[t])
            fail_msg("chrome: tid %u has no thread_name", t);
        st->threads++;
        perfetto_nesting(per_tid[t], count[t], t);
        size_t warnings = speedscope_import(per_tid[t], count[t]);
        if (warnings)
            fail_msg("chrome: speedscope's importer would warn %zu times on tid %u", warnings, t);
    }
    for (unsigned t = 0; t <= max_tid; t++)
        free(per_tid[t]);
    free(per_tid);
    free(count);
    free(named);
    return doc;
}

/* ------------------------------------------------------------------------
 * perf script checker and both readers' weights
 * ------------------------------------------------------------------------ */

typedef struct stack_weight {
    char *stack; /* "beam.smp;root;...;leaf" */
    double weight;
} stack_weight;

typedef struct weights {
    stack_weight *items;
    size_t n, cap;
} weights;

static void weights_add(weights *w, const char *stack, double weight)
{
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->items = realloc(w->items, w->cap * sizeof *w->items);
        assert_non_null(w->items);
    }
    w->items[w->n].stack = strdup(stack);
    assert_non_null(w->items[w->n].stack);
    w->items[w->n++].weight = weight;
}

static int by_stack(const void *a, const void *b)
{
    return strcmp(((const stack_weight *)a)->stack, ((const stack_weight *)b)->stack);
}

/* Sorted by stack, equal stacks summed. */
static void weights_merge(weights *w)
{
    if (w->n == 0)
        return;
    qsort(w->items, w->n, sizeof *w->items, by_stack);
    size_t out = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (out > 0 && strcmp(w->items[out - 1].stack, w->items[i].stack) == 0) {
            w->items[out - 1].weight += w->items[i].weight;
            free(w->items[i].stack);
        } else {
            w->items[out++] = w->items[i];
        }
    }
    w->n = out;
}

static void weights_free(weights *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->items[i].stack);
    free(w->items);
    memset(w, 0, sizeof *w);
}

/* Same stacks and, within tolerance (ns), the same weights. */
static void assert_same_weights(const weights *a, const weights *b, double tolerance, const char *what)
{
    if (a->n != b->n)
        fail_msg("%s: %zu stacks vs %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        if (strcmp(a->items[i].stack, b->items[i].stack) != 0)
            fail_msg("%s: stack '%s' vs '%s'", what, a->items[i].stack, b->items[i].stack);
        double d = a->items[i].weight - b->items[i].weight;
        if (d > tolerance || d < -tolerance)
            fail_msg("%s: '%s' weighs %.3f vs %.3f", what, a->items[i].stack, a->items[i].weight, b->items[i].weight);
    }
}

typedef struct perf_sample {
    unsigned tid;
    uint64_t at_ns;
    uint64_t period;
    char *stack;
} perf_sample;

static int digits(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* Parses one header line: beam.smp 1/<tid> <secs>.<9 digits>: <period> cpu-clock: */
static void parse_header(const char *line, size_t len, perf_sample *s)
{
    static const char head[] = "beam.smp 1/", tail[] = " cpu-clock:";
    char buf[200];
    if (len >= sizeof buf || len < sizeof head || memcmp(line, head, sizeof head - 1) != 0 ||
        memcmp(line + len - (sizeof tail - 1), tail, sizeof tail - 1) != 0)
        fail_msg("perf: bad header '%.*s'", (int)len, line);
    memcpy(buf, line, len);
    buf[len] = '\0';
    char *p = buf + sizeof head - 1, *sp = strchr(p, ' ');
    assert_non_null(sp);
    *sp = '\0';
    char *dot = strchr(sp + 1, '.'), *colon = dot ? strchr(dot, ':') : NULL;
    if (!digits(p, strlen(p)) || !dot || !colon || !digits(sp + 1, (size_t)(dot - sp - 1)) ||
        colon - dot - 1 != 9 || !digits(dot + 1, 9) || colon[1] != ' ')
        fail_msg("perf: header time must be <secs>.<9 digits>: in '%s'", line);
    char *period = colon + 2, *pend = strchr(period, ' ');
    if (!pend || !digits(period, (size_t)(pend - period)))
        fail_msg("perf: header period in '%.*s'", (int)len, line);
    s->tid = (unsigned)strtoul(p, NULL, 10);
    s->at_ns = strtoull(sp + 1, NULL, 10) * 1000000000ull + strtoull(dot + 1, NULL, 10);
    s->period = strtoull(period, NULL, 10);
    if (s->tid == 0 || s->period == 0)
        fail_msg("perf: tid and period must be positive");
}

/* A frame line: TAB, hex address, space, symbol, " (", dso without spaces, ")". */
static void parse_frame(const char *line, size_t len, tu_str *stack_rev, size_t *n_frames)
{
    if (len < 8 || line[0] != '\t')
        fail_msg("perf: frame line must start with a TAB: '%.*s'", (int)len, line);
    size_t i = 1;
    while (i < len && ((line[i] >= '0' && line[i] <= '9') || (line[i] >= 'a' && line[i] <= 'f')))
        i++;
    if (i == 1 || i >= len || line[i] != ' ')
        fail_msg("perf: frame address in '%.*s'", (int)len, line);
    const char *sym = line + i + 1;
    const char *open = NULL;
    for (const char *q = line + len - 1; q > sym; q--)
        if (q[0] == '(' && q[-1] == ' ') {
            open = q;
            break;
        }
    if (!open || line[len - 1] != ')')
        fail_msg("perf: frame line must end in ' (dso)': '%.*s'", (int)len, line);
    for (const char *q = open + 1; q < line + len - 1; q++)
        if (*q == ' ' || *q == '(' || *q == ')')
            fail_msg("perf: dso with a space or paren: '%.*s'", (int)len, line);
    size_t sym_len = (size_t)(open - 1 - sym);
    if (sym_len == 0)
        fail_msg("perf: empty symbol");
    for (size_t k = 0; k < sym_len; k++) {
        char c = sym[k];
        if (c == '(' || c == ')' || c == '"' || c == '\'' || c == ';' || (unsigned char)c < 0x20)
            fail_msg("perf: symbol '%.*s' has a character a reader rewrites", (int)sym_len, sym);
        if (c == '-' && k + 1 < sym_len && sym[k + 1] == '>')
            fail_msg("perf: symbol with '->' (split by stackcollapse-perf.pl)");
        if (c == '+' && k + 2 < sym_len && sym[k + 1] == '0' && sym[k + 2] == 'x')
            fail_msg("perf: symbol with '+0x' (stripped as an offset)");
    }
    /* Frames come leaf first: collect them, the caller reverses. */
    tu_put(stack_rev, "%s%.*s", *n_frames ? "\x01" : "", (int)sym_len, sym);
    (*n_frames)++;
}

/* "a\1b\1c" (leaf first) -> "beam.smp;c;b;a". */
static char *root_first(const char *rev)
{
    tu_str out = {0};
    tu_put(&out, "beam.smp");
    const char *end = rev + strlen(rev);
    while (end > rev) {
        const char *start = end;
        while (start > rev && start[-1] != '\x01')
            start--;
        tu_put(&out, ";%.*s", (int)(end - start), start);
        end = start > rev ? start - 1 : rev;
    }
    return out.s;
}

typedef struct perf_stats {
    size_t samples, threads;
} perf_stats;

/* Checks the grammar; fills what stackcollapse-perf.pl sums (periods) and
 * what speedscope weighs (ns between sample midpoints) per stack. */
static void check_perf(const char *text, size_t len, weights *collapse, weights *speedscope, perf_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!tu_utf8_valid(text, len))
        fail_msg("perf: invalid UTF-8");
    if (memchr(text, '\r', len))
        fail_msg("perf: CR in the file (LF only)");
    if (len == 0)
        return;
    if (len < 2 || text[len - 1] != '\n' || text[len - 2] != '\n')
        fail_msg("perf: the last sample needs a blank line after it (stackcollapse-perf.pl drops it otherwise)");
    perf_sample *samples = NULL;
    size_t n = 0, cap = 0, i = 0;
    while (i < len) {
        const char *line = text + i, *lf = memchr(line, '\n', len - i);
        assert_non_null(lf);
        if (lf == line)
            fail_msg("perf: two blank lines in a row at byte %zu", i);
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            samples = realloc(samples, cap * sizeof *samples);
            assert_non_null(samples);
        }
        perf_sample *s = &samples[n++];
        parse_header(line, (size_t)(lf - line), s);
        i += (size_t)(lf - line) + 1;
        tu_str rev = {0};
        tu_put(&rev, "%s", "");
        size_t frames = 0;
        while (i < len && text[i] != '\n') {
            line = text + i;
            lf = memchr(line, '\n', len - i);
            assert_non_null(lf);
            parse_frame(line, (size_t)(lf - line), &rev, &frames);
            i += (size_t)(lf - line) + 1;
        }
        if (frames == 0)
            fail_msg("perf: a sample without frames");
        i++; /* the blank line */
        s->stack = root_first(rev.s);
        free(rev.s);
    }
    /* Per thread, in file order: strictly increasing times, then
     * speedscope's weights (appendSampleWithTimestamp). */
    for (size_t a = 0; a < n; a++)
        weights_add(collapse, samples[a].stack, (double)samples[a].period);
    unsigned max_tid = 0;
    for (size_t a = 0; a < n; a++)
        if (samples[a].tid > max_tid)
            max_tid = samples[a].tid;
    size_t *idx = malloc((n + 1) * sizeof *idx);
    assert_non_null(idx);
    for (unsigned t = 1; t <= max_tid; t++) {
        size_t m = 0;
        for (size_t a = 0; a < n; a++)
            if (samples[a].tid == t)
                idx[m++] = a;
        if (m == 0)
            continue;
        st->threads++;
        for (size_t k = 1; k < m; k++)
            if (samples[idx[k]].at_ns <= samples[idx[k - 1]].at_ns)
                fail_msg("perf: tid %u: timestamps not strictly increasing", t);
        if (m == 1)
            fail_msg("perf: tid %u: a single sample gets weight 1 in speedscope", t);
        for (size_t k = 0; k < m; k++) {
            double c = (double)samples[idx[k]].at_ns;
            double lo = k == 0 ? c : (c + (double)samples[idx[k - 1]].at_ns) / 2;
            double hi = k + 1 == m ? c : (c + (double)samples[idx[k + 1]].at_ns) / 2;
            weights_add(speedscope, samples[idx[k]].stack, hi - lo);
        }
    }
    free(idx);
    for (size_t a = 0; a < n; a++)
        free(samples[a].stack);
    free(samples);
    weights_merge(collapse);
    weights_merge(speedscope);
    st->samples = n;
}

/* The perf symbol of a frame name, the way the writer must spell it. */
static void perf_symbol(const char *name, tu_str *out)
{
    for (const char *s = name; *s; s++) {
        char c = *s;
        if (c == '(') c = '[';
        else if (c == ')') c = ']';
        else if (c == '"' || c == '\'') c = '`';
        else if (c == '-' && s[1] == '>') c = '=';
        else if (c == 'x' && s - name >= 2 && s[-1] == '0' && s[-2] == '+') c = 'X';
        tu_put(out, "%c", c);
    }
}

/* Expected weights: every node's self time (ns) under its stack. */
static void expected_weights(const bs_profile *p, int drop_sleep, weights *w)
{
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        for (uint32_t i = 0; i < t->n_nodes; i++) {
            uint64_t ns = t->nodes[i].self_ns * (p->unit == BS_UNIT_COUNT ? 1000 : 1);
            if (ns < 3 || (drop_sleep && i > 0 && t->nodes[i].frame == p->sleep_frame) || (i == 0 && t->synthetic_root))
                continue;
            uint32_t chain[4096];
            size_t d = 0;
            for (uint32_t at = i; at != UINT32_MAX && !(at == 0 && t->synthetic_root); at = at ? t->nodes[at].parent : UINT32_MAX)
                chain[d++] = at;
            tu_str s = {0};
            tu_put(&s, "beam.smp");
            while (d-- > 0) {
                tu_put(&s, ";");
                perf_symbol(bs_frame_name(&p->frames, t->nodes[chain[d]].frame), &s);
            }
            weights_add(w, s.s, (double)ns);
            free(s.s);
        }
    }
    weights_merge(w);
}

/* Both readers see exactly the profile's self times. */
static void assert_perf_weights(const bs_profile *p, const bs_render_opts *o, perf_stats *st)
{
    size_t len;
    char *text = write_mem(bs_write_perf, p, o, &len);
    weights collapse = {0}, speedscope = {0}, want = {0};
    check_perf(text, len, &collapse, &speedscope, st);
    expected_weights(p, o && o->drop_sleep, &want);
    assert_same_weights(&collapse, &want, 0, "stackcollapse-perf.pl vs self times");
    assert_same_weights(&speedscope, &want, 1e-6, "speedscope vs self times");
    weights_free(&collapse);
    weights_free(&speedscope);
    weights_free(&want);
    free(text);
}

/* All three writers, all checkers. */
static void check_all(const bs_profile *p, const bs_render_opts *o)
{
    size_t len;
    ss_stats ss;
    ct_stats ct;
    perf_stats ps;
    char *text = write_mem(bs_write_speedscope, p, o, &len);
    jc_val doc = check_speedscope(text, len, &ss);
    assert_int_equal(ss.profiles, p->n_trees);
    jc_free(&doc);
    free(text);
    if (p->n_trees > 0) {
        text = write_mem(bs_write_chrome, p, o, &len);
        doc = check_chrome(text, len, &ct);
        if (ct.x_events > 0 && ct.min_ts != 0)
            fail_msg("chrome: the earliest event must be at ts 0, not %f", ct.min_ts);
        jc_free(&doc);
        free(text);
    }
    int max_depth_default = !o || o->folded_max_depth == 0;
    if (max_depth_default && !bs_profile_deeper_than(p, 0))
        assert_perf_weights(p, o, &ps);
}

/* ------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------ */

static void test_number_formats(void **state)
{
    (void)state;
    char buf[BS_NUMBER_MAX];
    static const struct { uint64_t ns; const char *us; } us[] = {
        {0, "0"}, {7, "0.007"}, {10, "0.01"}, {999, "0.999"}, {1000, "1"}, {1500, "1.5"},
        {123456789, "123456.789"}, {UINT64_MAX, "18446744073709551.615"},
    };
    for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
        assert_int_equal(bs_fmt_us(buf, us[i].ns), strlen(us[i].us));
        assert_string_equal(buf, us[i].us);
    }
    assert_int_equal(bs_ns_to_binary_us(1000), 4096);
    assert_int_equal(bs_ns_to_binary_us(1), 4);    /* 4.096 */
    assert_int_equal(bs_ns_to_binary_us(2), 8);    /* 8.192 */
    assert_int_equal(bs_ns_to_binary_us(122), 500); /* 499.712 */
    assert_int_equal(bs_ns_to_binary_us(UINT64_MAX), UINT64_MAX / 125 * 512 + (UINT64_MAX % 125 * 512 + 62) / 125);
    static const struct { uint64_t k; const char *text; } bin[] = {
        {0, "0"}, {1, "0.000244140625"}, {2048, "0.5"}, {4096, "1"}, {4097, "1.000244140625"}, {3 * 4096 + 1024, "3.25"},
    };
    for (size_t i = 0; i < sizeof bin / sizeof bin[0]; i++) {
        bs_fmt_binary_us(buf, bin[i].k);
        assert_string_equal(buf, bin[i].text);
    }
    /* Every nanosecond survives both encodings the way readers parse them. */
    uint64_t seed = 7;
    int rounds = tu_small() ? 4000 : 20000;
    for (int i = 0; i < rounds; i++) {
        uint64_t ns = i < 2000 ? (uint64_t)i : tu_rand(&seed) % 100000000000000ull; /* up to ~28 h */
        bs_fmt_us(buf, ns);
        assert_int_equal(perfetto_ns(strtod(buf, NULL)), ns);
        uint64_t k = bs_ns_to_binary_us(ns);
        bs_fmt_binary_us(buf, k);
        double v = strtod(buf, NULL);
        assert_true(v * 4096 == (double)k); /* parsed exactly */
        assert_int_equal(perfetto_ns(v), ns); /* Perfetto's llround(ts * 1000) */
        /* A duration written as a difference of two such numbers rounds to
         * the exact difference too, even shifted by one unit. */
        uint64_t later = ns + 1 + tu_rand(&seed) % 100000;
        uint64_t dk = bs_ns_to_binary_us(later) - k;
        bs_fmt_binary_us(buf, dk);
        assert_int_equal(perfetto_ns(strtod(buf, NULL)), later - ns);
        bs_fmt_binary_us(buf, dk - 1);
        assert_int_equal(perfetto_ns(strtod(buf, NULL)), later - ns);
        if (ns > 0)
            assert_true(bs_ns_to_binary_us(ns) > bs_ns_to_binary_us(ns - 1)); /* distinct ns stay distinct */
    }
    assert_int_equal(bs_fmt_uint(buf, UINT64_MAX), 20);
    assert_string_equal(buf, "18446744073709551615");
}

/* Compares text with test/c/golden/<name>, or writes it there when
 * BS_UPDATE_GOLDEN=1. */
static void assert_golden(const char *name, const char *text, size_t len)
{
    char path[256];
    snprintf(path, sizeof path, "test/c/golden/%s", name);
    const char *update = getenv("BS_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
        return;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("no golden file %s (run with BS_UPDATE_GOLDEN=1 from the repository root)", path);
    char *want = malloc(len + 2);
    assert_non_null(want);
    size_t got = fread(want, 1, len + 1, f);
    fclose(f);
    if (got != len || memcmp(want, text, len) != 0) {
        size_t at = 0;
        while (at < len && at < got && want[at] == text[at])
            at++;
        fail_msg("%s differs from the golden file at byte %zu (golden %zu bytes, output %zu)", name, at, got, len);
    }
    free(want);
}

static void golden_set(int timeline, const char *prefix)
{
    bs_profile prof;
    make_fixture(&prof, timeline);
    struct { writer_fn w; const char *ext; } fmts[] = {
        {bs_write_speedscope, ".speedscope.json"}, {bs_write_chrome, ".trace.json"}, {bs_write_perf, ".perf.txt"},
    };
    for (size_t i = 0; i < 3; i++) {
        size_t len;
        char *text = write_mem(fmts[i].w, &prof, NULL, &len);
        char name[64];
        snprintf(name, sizeof name, "%s%s", prefix, fmts[i].ext);
        assert_golden(name, text, len);
        free(text);
    }
    check_all(&prof, NULL);
    bs_profile_free(&prof);
}

static void test_golden_timeline(void **state)
{
    (void)state;
    golden_set(1, "trace_timeline");
}

static void test_golden_totals(void **state)
{
    (void)state;
    golden_set(0, "trace_totals");
}

static void test_speedscope_rules(void **state)
{
    (void)state;
    bs_profile prof;
    make_fixture(&prof, 1);
    size_t len;
    ss_stats st;
    char *text = write_mem(bs_write_speedscope, &prof, NULL, &len);
    jc_val doc = check_speedscope(text, len, &st);
    assert_int_equal(st.evented, 2);
    assert_string_equal(jc_get(&doc, "name")->str, "beamspy:apply(demo:run/0)");
    const jc_val *profiles = jc_get(&doc, "profiles"), *frames = jc_get(jc_get(&doc, "shared"), "frames");
    assert_string_equal(jc_get(&profiles->items[0], "name")->str, "<0.80.0>");
    assert_string_equal(jc_get(&profiles->items[1], "name")->str, "<0.81.0> my_server");
    /* Process labels are profile names, not frames. */
    for (size_t i = 0; i < frames->n; i++)
        assert_true(jc_get(&frames->items[i], "name")->str[0] != '<');
    /* `at` counts from the earliest span of the whole profile (P2 enters
     * m:top/0 at 500 ns), so one instant has one number in every process:
     * P1 enters m:top/0 at 1000 ns = 0.5 µs and leaves it at 16000 ns. */
    const jc_val *e1 = jc_get(&profiles->items[0], "events"), *e2 = jc_get(&profiles->items[1], "events");
    assert_int_equal(e1->items[0].type, JC_OBJ);
    assert_true(jc_get(&e1->items[0], "at")->num == 0.5);
    assert_true(jc_get(&e1->items[e1->n - 1], "at")->num == 15.5);
    assert_true(jc_get(&e2->items[0], "at")->num == 0);
    /* m:f/0 is entered four times in P2. */
    size_t f_opens = 0;
    for (size_t i = 0; i < e2->n; i++) {
        const jc_val *fr = jc_get(&e2->items[i], "frame");
        if (strcmp(jc_get(&e2->items[i], "type")->str, "O") == 0 &&
            strcmp(jc_get(&frames->items[(size_t)fr->num], "name")->str, "m:f/0") == 0)
            f_opens++;
    }
    assert_int_equal(f_opens, 4);
    jc_free(&doc);
    free(text);

    /* Without a timeline: sampled, weights = self time in µs, unit microseconds. */
    prof.has_timeline = 0;
    text = write_mem(bs_write_speedscope, &prof, NULL, &len);
    doc = check_speedscope(text, len, &st);
    assert_int_equal(st.sampled, 2);
    const jc_val *p1 = &jc_get(&doc, "profiles")->items[0];
    assert_string_equal(jc_get(p1, "unit")->str, "microseconds");
    assert_true(jc_get(p1, "endValue")->num == 15); /* 16 µs minus the process frame's own 1 µs */
    assert_int_equal(jc_get(p1, "samples")->n, 6);  /* top, a, b, SLEEP, GC, c */
    jc_free(&doc);
    free(text);
    bs_profile_free(&prof);
}

static void test_chrome_rules(void **state)
{
    (void)state;
    bs_profile prof;
    make_fixture(&prof, 1);
    size_t len;
    ct_stats st;
    char *text = write_mem(bs_write_chrome, &prof, NULL, &len);
    jc_val doc = check_chrome(text, len, &st);
    assert_int_equal(st.threads, 2);
    assert_int_equal(st.x_events, 13); /* P1: top a b SLEEP GC c; P2: top f f c f b f */
    assert_true(st.min_ts == 0);
    const jc_val *events = jc_get(&doc, "traceEvents");
    assert_string_equal(jc_get(jc_get(&events->items[0], "args"), "name")->str, "beam.smp demo@host");
    const jc_val *other = jc_get(&doc, "otherData");
    assert_true(strncmp(jc_get(other, "layout")->str, "timeline", 8) == 0);
    assert_string_equal(jc_get(other, "node")->str, "demo@host");
    jc_free(&doc);
    free(text);

    /* Without a timeline: totals laid end to end from 0, said so. */
    prof.has_timeline = 0;
    memset(prof.meta.node, 0, sizeof prof.meta.node);
    text = write_mem(bs_write_chrome, &prof, NULL, &len);
    doc = check_chrome(text, len, &st);
    events = jc_get(&doc, "traceEvents");
    assert_string_equal(jc_get(jc_get(&events->items[0], "args"), "name")->str, "beamspy");
    assert_true(strncmp(jc_get(jc_get(&doc, "otherData"), "layout")->str, "call tree totals", 16) == 0);
    assert_true(st.max_end == 15); /* P1: everything below the process frame */
    jc_free(&doc);
    free(text);
    bs_profile_free(&prof);
}

static void test_perf_rules(void **state)
{
    (void)state;
    bs_profile prof;
    make_fixture(&prof, 1);
    perf_stats st;
    assert_perf_weights(&prof, NULL, &st);
    assert_int_equal(st.threads, 2);
    /* P1: 7 stacks incl. the process frame, P2: top, f, f;a, f;b... */
    size_t len;
    char *text = write_mem(bs_write_perf, &prof, NULL, &len);
    static const char first[] = "beam.smp 1/1 1.000000000: 500 cpu-clock:\n\t";
    assert_int_equal(memcmp(text, first, sizeof first - 1), 0);
    assert_non_null(strstr(text, " <0.81.0> my_server (beam)\n\n"));
    free(text);
    bs_render_opts o = {.drop_sleep = 1};
    assert_perf_weights(&prof, &o, &st);
    bs_profile_free(&prof);
}

/* Frame names no writer may pass through unescaped. */
static const char *const HOSTILE[] = {
    NULL, /* key function ids start at 1 */
    "quote\"d", "[deeper]", "back\\slash", "</script><script>alert(1)</script>", "<!-- c -->", "a&amp;b",
    "paren(s)", "semi;colon", "'Elixir.Foo':bar/1", "a->b", "f+0x1f", "line\xe2\x80\xa8sep",
    "para\xe2\x80\xa9sep", "rtl\xe2\x80\xae" "txet", "\xef\xbb\xbf" "bom", "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
    "[unknown]", "ok:fine/2",
};
#define N_HOSTILE (sizeof HOSTILE / sizeof HOSTILE[0])

static int hostile_namer(void *ctx, const bs_key *k, char *buf, size_t cap)
{
    (void)ctx;
    const char *name = k->function < N_HOSTILE && HOSTILE[k->function] ? HOSTILE[k->function] : "?";
    return snprintf(buf, cap, "%s", name);
}

static void feed_hostile(bs_proc *p, void *ctx)
{
    (void)ctx;
    uint64_t t = 100;
    bs_key prev = KEY(M_M, 1, 0);
    OK(bs_proc_call(p, &prev, BS_CALLER_ROOT, NULL, t));
    for (unsigned f = 2; f < N_HOSTILE; f++) {
        bs_key k = KEY(M_M, f, 0);
        t += 1000 + f;
        OK(bs_proc_call(p, &k, BS_CALLER_FRAME, &prev, t));
        prev = k;
    }
    OK(bs_proc_return_to(p, NULL, t + 5000));
    bs_proc_flush(p, t + 6000);
}

static void test_hostile_names(void **state)
{
    (void)state;
    for (int timeline = 0; timeline <= 1; timeline++) {
        bs_span_quota quota;
        bs_span_quota_init(&quota, 1000);
        bs_profile prof;
        OK(bs_profile_init(&prof));
        add_proc(&prof, timeline ? &quota : NULL, feed_hostile, NULL, "<0.9.0> \"</script>\" (x); y->z", hostile_namer, NULL);
        bs_profile_compute_totals(&prof);
        snprintf(prof.meta.source, sizeof prof.meta.source, "</script>\"\\");
        snprintf(prof.meta.node, sizeof prof.meta.node, "n\"<&>@h");
        check_all(&prof, NULL);
        bs_render_opts cut = {.folded_max_depth = 4}; /* "[deeper]" is also a real frame here */
        check_all(&prof, &cut);
        for (int which = 0; which < 2; which++) {
            size_t len;
            char *text = write_mem(which ? bs_write_chrome : bs_write_speedscope, &prof, NULL, &len);
            /* Nothing that could end a script element or comment, no raw
             * line separators. */
            for (size_t i = 0; i < len; i++)
                assert_true(text[i] != '<' && text[i] != '>' && text[i] != '&');
            assert_null(strstr(text, "\xe2\x80\xa8"));
            assert_null(strstr(text, "\xe2\x80\xa9"));
            /* Every frame name decodes back to exactly the profile's name. */
            jc_val doc;
            char why[200];
            OK(jc_parse(text, len, &doc, why, sizeof why));
            for (uint32_t f = 0; f < prof.frames.n; f++) {
                const char *want = bs_frame_name(&prof.frames, f);
                if (bs_profile_is_sched_out(&prof, f) || f == prof.gc_frame || want[0] == '<')
                    continue;
                int found = 0;
                if (!which) {
                    const jc_val *frames = jc_get(jc_get(&doc, "shared"), "frames");
                    for (size_t i = 0; i < frames->n && !found; i++)
                        found = strcmp(jc_get(&frames->items[i], "name")->str, want) == 0;
                } else {
                    const jc_val *events = jc_get(&doc, "traceEvents");
                    for (size_t i = 0; i < events->n && !found; i++)
                        found = strcmp(jc_get(&events->items[i], "name")->str, want) == 0;
                }
                if (!found)
                    fail_msg("frame '%s' does not come back from the %s output", want, which ? "chrome" : "speedscope");
            }
            const jc_val *pname = which ? jc_get(jc_get(&jc_get(&doc, "traceEvents")->items[1], "args"), "name")
                                        : jc_get(&jc_get(&doc, "profiles")->items[0], "name");
            assert_string_equal(pname->str, bs_frame_name(&prof.frames, prof.trees[0].nodes[0].frame));
            jc_free(&doc);
            free(text);
        }
        bs_profile_free(&prof);
    }
}

static void test_determinism(void **state)
{
    (void)state;
    writer_fn ws[] = {bs_write_speedscope, bs_write_chrome, bs_write_perf};
    for (int timeline = 0; timeline <= 1; timeline++) {
        bs_profile a, b;
        make_fixture(&a, timeline);
        make_random(&a, 3000, 11, timeline ? 100000 : 0);
        OK(bs_profile_clone(&a, &b));
        for (size_t i = 0; i < 3; i++) {
            size_t l1, l2, l3;
            char *t1 = write_mem(ws[i], &a, NULL, &l1), *t2 = write_mem(ws[i], &a, NULL, &l2),
                 *t3 = write_mem(ws[i], &b, NULL, &l3);
            assert_int_equal(l1, l2);
            assert_int_equal(l1, l3);
            assert_memory_equal(t1, t2, l1);
            assert_memory_equal(t1, t3, l1);
            free(t1);
            free(t2);
            free(t3);
        }
        bs_profile_free(&a);
        bs_profile_free(&b);
    }
}

static void test_drop_sleep(void **state)
{
    (void)state;
    for (int timeline = 0; timeline <= 1; timeline++) {
        bs_profile prof;
        make_fixture(&prof, timeline);
        bs_render_opts o = {.drop_sleep = 1};
        check_all(&prof, &o);
        writer_fn ws[] = {bs_write_speedscope, bs_write_chrome, bs_write_perf};
        for (size_t i = 0; i < 3; i++) {
            char *text = write_mem(ws[i], &prof, &o, NULL);
            assert_null(strstr(text, "SLEEP"));
            assert_non_null(strstr(text, "GC"));
            free(text);
            text = write_mem(ws[i], &prof, NULL, NULL);
            assert_non_null(strstr(text, "SLEEP"));
            free(text);
        }
        bs_profile_free(&prof);
    }
}

static void test_truncated_timeline(void **state)
{
    (void)state;
    /* A quota of 5 spans: P1 gets some, P2 none (so it is sampled), and the
     * spans kept may lack their parents. */
    bs_span_quota quota;
    bs_span_quota_init(&quota, 5);
    bs_profile prof;
    OK(bs_profile_init(&prof));
    add_proc(&prof, &quota, feed_p1, NULL, "<0.80.0>", tu_namer, NULL);
    add_proc(&prof, &quota, feed_p2, NULL, "<0.81.0> my_server", tu_namer, NULL);
    bs_profile_compute_totals(&prof);
    assert_true(prof.timeline_truncated);
    check_all(&prof, NULL);
    size_t len;
    ss_stats st;
    char *text = write_mem(bs_write_speedscope, &prof, NULL, &len);
    jc_val doc = check_speedscope(text, len, &st);
    const jc_val *profiles = jc_get(&doc, "profiles");
    assert_string_equal(jc_get(&profiles->items[0], "name")->str, "<0.80.0> (timeline truncated)");
    assert_string_equal(jc_get(&profiles->items[0], "type")->str, "evented");
    assert_string_equal(jc_get(&profiles->items[1], "type")->str, "sampled");
    jc_free(&doc);
    free(text);
    ct_stats ct;
    text = write_mem(bs_write_chrome, &prof, NULL, &len);
    doc = check_chrome(text, len, &ct);
    assert_true(jc_get(jc_get(&doc, "otherData"), "timeline_truncated")->boolean);
    jc_free(&doc);
    free(text);
    bs_profile_free(&prof);
    /* Random processes sharing a small quota: many spans without parents. */
    for (uint64_t seed = 1; seed <= (tu_small() ? 2u : 4u); seed++) {
        OK(bs_profile_init(&prof));
        make_random(&prof, tu_small() ? 1000 : 2000, seed, 300);
        check_all(&prof, NULL);
        bs_profile_free(&prof);
    }
}

/* A profile read from folded stacks: unitless counts, no timeline. */
static void test_count_profile(void **state)
{
    (void)state;
    bs_profile prof;
    make_fixture(&prof, 0);
    prof.unit = BS_UNIT_COUNT;
    for (uint32_t ti = 0; ti < prof.n_trees; ti++)
        for (uint32_t i = 0; i < prof.trees[ti].n_nodes; i++)
            prof.trees[ti].nodes[i].self_ns /= 100; /* counts 0..50 */
    bs_profile_compute_totals(&prof);
    check_all(&prof, NULL);
    size_t len;
    ss_stats st;
    char *text = write_mem(bs_write_speedscope, &prof, NULL, &len);
    jc_val doc = check_speedscope(text, len, &st);
    const jc_val *p1 = &jc_get(&doc, "profiles")->items[0];
    assert_string_equal(jc_get(p1, "unit")->str, "none");
    const bs_pnode *root = &prof.trees[0].nodes[0];
    assert_true(jc_get(p1, "endValue")->num == (double)(root->total_ns - root->self_ns));
    jc_free(&doc);
    free(text);
    text = write_mem(bs_write_chrome, &prof, NULL, &len);
    assert_non_null(strstr(text, "\"weights\":\"samples, drawn as 1 microsecond each\""));
    free(text);
    bs_profile_free(&prof);
}

/* *depth nested calls, each with time of its own. */
static void feed_deep(bs_proc *p, void *ctx)
{
    unsigned depth = *(const unsigned *)ctx;
    uint64_t t = 0;
    bs_key prev = KEY(M_M, F_LOOP, 1);
    OK(bs_proc_call(p, &prev, BS_CALLER_ROOT, NULL, t));
    for (unsigned d = 1; d < depth; d++) {
        bs_key k = KEY(M_M, F_LOOP, 1);
        t += 10;
        OK(bs_proc_call(p, &k, BS_CALLER_FRAME, &prev, t));
    }
    for (unsigned d = depth; d-- > 1;) {
        t += 10;
        OK(bs_proc_return_to(p, &prev, t));
    }
    OK(bs_proc_return_to(p, NULL, t + 10));
    bs_proc_flush(p, t + 10);
}

static void test_deep_recursion(void **state)
{
    (void)state;
    unsigned depth = tu_small() ? 5000 : 100000; /* valgrind: smaller */
    bs_span_quota quota;
    bs_span_quota_init(&quota, 1000000);
    bs_profile prof;
    OK(bs_profile_init(&prof));
    add_proc(&prof, &quota, feed_deep, &depth, "<0.70.0>", tu_namer, NULL);
    bs_profile_compute_totals(&prof);
    assert_int_equal(prof.trees[0].n_nodes, depth + 1);
    /* Time-ordered outputs are linear in the spans and nest all the way. */
    size_t len;
    ss_stats st;
    char *text = write_mem(bs_write_speedscope, &prof, NULL, &len);
    jc_val doc = check_speedscope(text, len, &st);
    assert_int_equal(st.events, 2 * (size_t)depth);
    jc_free(&doc);
    free(text);
    ct_stats ct;
    text = write_mem(bs_write_chrome, &prof, NULL, &len);
    doc = check_chrome(text, len, &ct);
    assert_int_equal(ct.x_events, depth);
    jc_free(&doc);
    free(text);
    /* Sampled outputs stop at max_depth frames (1024 by default; 64 here to
     * keep the case fast): "[deeper]" carries the rest. */
    prof.has_timeline = 0;
    const unsigned cap = 64;
    bs_render_opts o = {.folded_max_depth = cap};
    text = write_mem(bs_write_speedscope, &prof, &o, &len);
    doc = check_speedscope(text, len, &st);
    const jc_val *samples = jc_get(&jc_get(&doc, "profiles")->items[0], "samples");
    assert_int_equal(samples->n, cap + 1);
    assert_int_equal(samples->items[samples->n - 1].n, cap + 1);
    const jc_val *frames = jc_get(jc_get(&doc, "shared"), "frames");
    assert_string_equal(jc_get(&frames->items[frames->n - 1], "name")->str, BS_DEEPER_FRAME);
    /* The total is still everything below the process frame. */
    double total = (double)(prof.trees[0].nodes[0].total_ns - prof.trees[0].nodes[0].self_ns) / 1000;
    assert_true(jc_get(&jc_get(&doc, "profiles")->items[0], "endValue")->num == total);
    jc_free(&doc);
    free(text);
    text = write_mem(bs_write_perf, &prof, &o, &len);
    weights collapse = {0}, speedscope = {0};
    perf_stats ps;
    check_perf(text, len, &collapse, &speedscope, &ps);
    size_t stacks = 1; /* [deeper] */
    double sum = 0;
    for (uint32_t i = 0; i <= cap; i++)
        stacks += prof.trees[0].nodes[i].self_ns > 0;
    for (size_t i = 0; i < collapse.n; i++)
        sum += collapse.items[i].weight;
    assert_int_equal(collapse.n, stacks);
    assert_true(sum == (double)prof.trees[0].nodes[0].total_ns);
    assert_same_weights(&collapse, &speedscope, 1e-6, "stackcollapse vs speedscope");
    weights_free(&collapse);
    weights_free(&speedscope);
    free(text);
    /* The default cap is 1024. */
    assert_int_equal(bs_profile_deeper_than(&prof, 0), depth > BS_DEFAULT_SAMPLE_DEPTH);
    assert_int_equal(bs_profile_deeper_than(&prof, depth), 0);
    bs_profile_free(&prof);
}

/* Spans that break the engine's promises (as a damaged file could hold). */
static void test_bad_spans(void **state)
{
    (void)state;
    bs_profile prof;
    make_fixture(&prof, 1);
    bs_ptree *t = &prof.trees[0];
    bs_pspan bad[] = {
        {1, 5000, 9000},   /* m:top/0 */
        {2, 4000, 8000},   /* m:a/0 starting before its parent (out of order) */
        {3, 6000, 12000},  /* m:b/0 outliving both */
        {0, 6000, 7000},   /* the process frame itself */
        {99, 6000, 7000},  /* no such node */
        {4, 7000, 6500},   /* ends before it starts */
        {2, 7500, 7600},   /* a again, while b (its child) is open */
        {6, 11000, 20000}, /* c partially overlapping top */
    };
    free(t->spans);
    t->spans = malloc(sizeof bad);
    assert_non_null(t->spans);
    memcpy(t->spans, bad, sizeof bad);
    t->n_spans = sizeof bad / sizeof bad[0];
    check_all(&prof, NULL);
    bs_profile_free(&prof);
}

static void test_write_errors(void **state)
{
    (void)state;
    FILE *full = fopen("/dev/full", "w");
    if (!full)
        skip();
    bs_profile prof;
    make_fixture(&prof, 1);
    make_random(&prof, 3000, 5, 100000); /* more than a stdio buffer */
    writer_fn ws[] = {bs_write_speedscope, bs_write_chrome, bs_write_perf};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(ws[i](full, &prof, NULL), -1);
        clearerr(full);
    }
    fclose(full);
    bs_profile_free(&prof);
}

static void test_random_profiles(void **state)
{
    (void)state;
    unsigned n = tu_small() ? 2 : 12;
    size_t events = tu_small() ? 1500 : 4000;
    for (uint64_t seed = 1; seed <= n; seed++) {
        bs_profile prof;
        OK(bs_profile_init(&prof));
        make_random(&prof, events, seed * 7919, 1000000);
        make_random(&prof, events / 4, seed * 104729, 1000000);
        bs_profile_compute_totals(&prof);
        check_all(&prof, NULL);
        prof.has_timeline = 0;
        check_all(&prof, NULL);
        bs_profile_free(&prof);
    }
}

static void test_empty_profiles(void **state)
{
    (void)state;
    bs_profile prof;
    OK(bs_profile_init(&prof));
    check_all(&prof, NULL); /* no process at all */
    size_t len;
    char *text = write_mem(bs_write_perf, &prof, NULL, &len);
    assert_int_equal(len, 0);
    free(text);
    text = write_mem(bs_write_chrome, &prof, NULL, &len);
    jc_val doc;
    char why[200];
    OK(jc_parse(text, len, &doc, why, sizeof why));
    jc_free(&doc);
    free(text);
    OK(bs_profile_add_tree(&prof, "<0.1.0>")); /* a process with no calls */
    prof.has_timeline = 1;
    check_all(&prof, NULL);
    bs_profile_free(&prof);
}

/* bs_write_file picks these writers by extension. */
static void test_write_file_dispatch(void **state)
{
    (void)state;
    char dir[] = "/tmp/bs_trace_XXXXXX";
    assert_non_null(mkdtemp(dir));
    bs_profile prof;
    make_fixture(&prof, 1);
    static const struct { const char *ext, *start; } files[] = {
        {"p.speedscope.json", "{\"$schema\":\"" SCHEMA "\""},
        {"p.trace.json", "{\"traceEvents\":[\n{\"ph\":\"M\""},
        {"p.perf.txt", "beam.smp 1/1 1.000000000: "},
    };
    for (size_t i = 0; i < 3; i++) {
        char path[128], head[64] = {0};
        snprintf(path, sizeof path, "%s/%s", dir, files[i].ext);
        OK(bs_write_file(path, BS_FORMAT_UNKNOWN, &prof, NULL));
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        assert_true(fread(head, 1, strlen(files[i].start), f) == strlen(files[i].start));
        fclose(f);
        assert_string_equal(head, files[i].start);
        OK(remove(path));
    }
    OK(rmdir(dir));
    bs_profile_free(&prof);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_formats),
        cmocka_unit_test(test_golden_timeline),
        cmocka_unit_test(test_golden_totals),
        cmocka_unit_test(test_speedscope_rules),
        cmocka_unit_test(test_chrome_rules),
        cmocka_unit_test(test_perf_rules),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_drop_sleep),
        cmocka_unit_test(test_truncated_timeline),
        cmocka_unit_test(test_count_profile),
        cmocka_unit_test(test_deep_recursion),
        cmocka_unit_test(test_bad_spans),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_random_profiles),
        cmocka_unit_test(test_empty_profiles),
        cmocka_unit_test(test_write_file_dispatch),
    };
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
