/* dbg_profile.c — dbg trace-port files into a profile (bs_dbg_read_profile,
 * dbg_trace.h), through the same engine as live recordings.
 *
 * Two passes over the files. The first finds the processes, whether the
 * trace has timestamps and which processes have return events: a stack can
 * only be rebuilt from calls AND returns, and a call alone cannot say how
 * much of the stack it replaced, so feeding calls-only traces to the stack
 * rules would grow one frame per call. The second pass feeds the engine:
 *   call M [caller C]   bs_proc_call (C from dbg's {caller} or beamspy's
 *                       {cp, {caller}} match spec; none: keep the stack)
 *   return_to M         bs_proc_return_to, except right after a
 *                       return_from that already left M on top (with both
 *                       {return_trace} and return_to the VM sends
 *                       return_from F then return_to Caller for one return)
 *   return_from M,      bs_proc_return_from: pop to M, then pop M
 *   exception_from M
 *   in/out, gc, exit    scheduling (SLEEP), GC, end of the process
 * A process without return events is recorded flat: each call replaces the
 * stack (one frame deep). Without timestamps, each process's clock is its
 * count of events, so weights are event counts; with calls only, weights
 * are call counts, and the timeline (with timestamps) shows each call until
 * the process's next one. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_source.h"
#include "dbg_procs.h"
#include "dbg_stream.h"

/* A trace whose times lie further apart than this is refused: one trace
 * does not span a year, corrupt or mixed-up timestamps do. */
#define BS_DBG_MAX_SPAN_DAYS 366
#define NS_PER_DAY (86400ull * 1000000000ull)

/* A timed message's place, for errors that name two messages. */
typedef struct place {
    const char *file;
    uint64_t offset, t;
    bs_dbg_ts_kind kind;
} place;

typedef struct builder {
    const bs_dbg_opts *o;
    bs_dbg_procs procs;
    bs_budget budget;
    bs_span_quota quota;
    int second_pass;
    /* what the first pass saw */
    uint64_t events, timed, untimed, returns, calls, drops, drop_records, too_big, unknown, seq;
    uint64_t no_memory; /* messages of processes left out for lack of memory */
    place first_ts, min_ts, max_ts;   /* of the timed messages */
    uint64_t cpu_back, cpu_back_max;  /* CPU-time steps back, and the largest (ns) */
    int rebuild, timed_mode, oom;
} builder;

static void note(const bs_dbg_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(const bs_dbg_opts *o, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (o->note)
        o->note(o->note_ctx, line);
    else
        fprintf(stderr, "beamspy: %s\n", line);
}

static int oom(bs_read_error *err, const char *file)
{
    return bs_read_fail(err, file, 0, 0, "out of memory");
}


/* The process of ev's pid in b->procs: 1 (its index in *i), 0 when it is
 * left out (too many processes), -1 when memory ran out. */
static int proc_of(builder *b, const bs_dbg_event *ev, uint32_t *i)
{
    int failed = 0;
    *i = bs_dbg_procs_get(&b->procs, ev->pid, &failed);
    if (failed)
        return -1;
    return *i != UINT32_MAX;
}

static const char *kind_name(bs_dbg_ts_kind k)
{
    switch (k) {
    case BS_DBG_TS_WALL:
        return "wall-clock ({Mega, Sec, Micro} from the year 2000 on)";
    case BS_DBG_TS_CPU:
        return "CPU-time ({Mega, Sec, Micro} before the year 2000, cpu_timestamp)";
    case BS_DBG_TS_MONOTONIC:
        return "monotonic (an integer or {Monotonic, Unique})";
    default:
        return "no";
    }
}

/* " of FILE" when the other message is in another file than this one. */
static void other_file(char *buf, size_t cap, const char *here, const char *there)
{
    if (there && here != there && strcmp(here, there) != 0)
        snprintf(buf, cap, " of %s", there);
    else if (cap)
        buf[0] = '\0';
}

/* Every timestamp of the input is of the first one's kind; the times lie
 * within BS_DBG_MAX_SPAN_DAYS of each other. */
static int check_kind(builder *b, const char *file, const bs_dbg_record *rec, const bs_dbg_event *ev,
                      bs_read_error *err)
{
    char ts[64], where[300];
    place here = {file, rec->offset, ev->ts_ns, ev->ts_kind};
    if (b->first_ts.kind == BS_DBG_TS_NONE) {
        b->first_ts = b->min_ts = b->max_ts = here;
        return 0;
    }
    if (ev->ts_kind != b->first_ts.kind) {
        bs_eterm_format(ts, sizeof ts, ev->ts_term);
        other_file(where, sizeof where, file, b->first_ts.file);
        return bs_read_fail(err, file, 0, rec->offset,
                            "record %" PRIu64 "'s timestamp %s is %s while the first one's (byte %" PRIu64
                            "%s) is %s: not one trace's times (traces of two runs, or a corrupt file)",
                            rec->number, ts, kind_name(ev->ts_kind), b->first_ts.offset, where,
                            kind_name(b->first_ts.kind));
    }
    if (ev->ts_ns < b->min_ts.t)
        b->min_ts = here;
    if (ev->ts_ns > b->max_ts.t)
        b->max_ts = here;
    if (b->max_ts.t - b->min_ts.t <= BS_DBG_MAX_SPAN_DAYS * NS_PER_DAY)
        return 0;
    const place *other = ev->ts_ns == b->min_ts.t ? &b->max_ts : &b->min_ts;
    bs_eterm_format(ts, sizeof ts, ev->ts_term);
    other_file(where, sizeof where, file, other->file);
    return bs_read_fail(err, file, 0, rec->offset,
                        "record %" PRIu64 "'s timestamp %s is %.1f days %s the message at byte %" PRIu64 "%s: one "
                        "trace does not span more than %d days (a corrupt timestamp, or traces of two runs)",
                        rec->number, ts, (double)(b->max_ts.t - b->min_ts.t) / (double)NS_PER_DAY,
                        other == &b->max_ts ? "before" : "after", other->offset, where, BS_DBG_MAX_SPAN_DAYS);
}

/* A process's wall-clock and monotonic times never go back: a step back
 * is two traces one after the other (or a corrupt file). CPU times may. */
static int check_order(builder *b, bs_dbg_proc *p, const char *file, const bs_dbg_record *rec,
                       const bs_dbg_event *ev, bs_read_error *err)
{
    uint64_t last = p->scan_t, last_offset = p->scan_offset;
    const char *last_file = p->scan_file;
    if (!p->scan_file || ev->ts_ns >= last) {
        p->scan_t = ev->ts_ns;
        p->scan_offset = rec->offset;
        p->scan_file = file;
        return 0;
    }
    uint64_t back = last - ev->ts_ns;
    if (ev->ts_kind == BS_DBG_TS_CPU) {
        b->cpu_back++;
        if (back > b->cpu_back_max)
            b->cpu_back_max = back;
        return 0; /* the process keeps its latest time */
    }
    char label[600], where[300];
    bs_dbg_proc_label(&b->procs, p, label, sizeof label);
    other_file(where, sizeof where, file, last_file);
    return bs_read_fail(err, file, 0, rec->offset,
                        "record %" PRIu64 ": the time of %s goes back %.6f s from its message at byte %" PRIu64 "%s; "
                        "%s times never go back within a process: traces of two runs one after the other (give "
                        "the files in time order), or a corrupt file",
                        rec->number, label, (double)back / 1e9, last_offset, where,
                        ev->ts_kind == BS_DBG_TS_WALL ? "wall-clock" : "monotonic");
}

static int scan(void *ctx, const char *file, const bs_dbg_record *rec, const bs_dbg_event *ev, bs_read_error *err)
{
    builder *b = ctx;
    if (!ev) {
        if (rec->kind == BS_DBG_REC_DROP) {
            b->drops += rec->size;
            b->drop_records++;
        } else {
            b->too_big++;
        }
        return 0;
    }
    if (ev->kind == BS_DBG_EV_UNKNOWN) {
        b->unknown++;
        return 0;
    }
    if (ev->kind == BS_DBG_EV_SEQ_TRACE) {
        b->seq++;
        return 0;
    }
    if (ev->bad[0])
        return bs_read_fail(err, file, 0, rec->offset,
                            "record %" PRIu64 " is %s: no VM writes that, the file is corrupt", rec->number, ev->bad);
    b->events++;
    if (ev->has_ts) {
        b->timed++;
        if (check_kind(b, file, rec, ev, err) < 0)
            return -1;
    } else {
        b->untimed++;
    }
    if (!ev->pid)
        return 0;
    uint32_t i;
    int found = proc_of(b, ev, &i);
    if (found <= 0)
        return found < 0 ? oom(err, file) : 0;
    if (ev->has_ts && check_order(b, &b->procs.procs[i], file, rec, ev, err) < 0)
        return -1;
    if (ev->kind == BS_DBG_EV_RETURN_TO || ev->kind == BS_DBG_EV_RETURN_FROM) {
        b->procs.procs[i].has_returns = 1;
        b->returns++;
    } else if (ev->kind == BS_DBG_EV_CALL) {
        b->calls++;
    }
    return 0;
}

static bs_key key_of(builder *b, const bs_dbg_mfa *m)
{
    uint32_t mod = bs_dbg_atom(&b->procs, m->module), fun = bs_dbg_atom(&b->procs, m->function);
    if (mod == UINT32_MAX || fun == UINT32_MAX)
        b->oom = 1;
    bs_key k = {(uint64_t)mod + 1, fun, m->arity};
    return k;
}

static int start_proc(builder *b, bs_dbg_proc *p, uint64_t t)
{
    if (bs_proc_init(&p->proc, &b->budget, t, !b->o->no_sleep, b->o->gc) < 0)
        return -1;
    p->started = 1;
    p->first_t = p->last_t = t;
    if (b->timed_mode && b->o->max_spans != UINT64_MAX)
        bs_proc_enable_timeline(&p->proc, &b->quota);
    return 0;
}

static int proc_exit(bs_proc *p, uint64_t t)
{
    bs_proc_exit(p, t);
    return 0;
}

/* The events that only move a process between states (running, scheduled
 * out, in GC, gone): one engine call each, at the event's time. */
static int (*const state_events[])(bs_proc *, uint64_t) = {
    [BS_DBG_EV_IN] = bs_proc_sched_in,        [BS_DBG_EV_OUT] = bs_proc_sched_out,
    [BS_DBG_EV_EXIT] = proc_exit,             [BS_DBG_EV_GC_START] = bs_proc_gc_start,
    [BS_DBG_EV_GC_END] = bs_proc_gc_end,
};

static void feed(builder *b, bs_dbg_proc *p, const bs_dbg_event *ev, uint64_t t)
{
    bs_proc *pr = &p->proc;
    bs_key k, c;
    int after_return_from = p->last_return_from;
    p->last_return_from = ev->kind == BS_DBG_EV_RETURN_FROM;
    switch (ev->kind) {
    case BS_DBG_EV_CALL:
        k = key_of(b, &ev->mfa);
        if (!b->rebuild || !p->has_returns) {
            bs_proc_call(pr, &k, BS_CALLER_ROOT, NULL, t);
        } else if (ev->caller_kind == BS_DBG_CALLER_MFA) {
            c = key_of(b, &ev->caller);
            bs_proc_call(pr, &k, BS_CALLER_FRAME, &c, t);
        } else {
            bs_proc_call(pr, &k, ev->caller_kind == BS_DBG_CALLER_UNDEFINED ? BS_CALLER_UNDEFINED : BS_CALLER_UNKNOWN,
                         NULL, t);
        }
        break;
    case BS_DBG_EV_RETURN_TO:
        if (!ev->has_mfa) {
            bs_proc_return_to(pr, NULL, t);
            break;
        }
        k = key_of(b, &ev->mfa);
        if (after_return_from && (bs_proc_depth(pr) == 0 || bs_key_eq(&pr->tree.nodes[pr->current].key, &k))) {
            pr->events++; /* the return_from before it did the work */
            break;
        }
        bs_proc_return_to(pr, &k, t);
        break;
    case BS_DBG_EV_RETURN_FROM:
        k = key_of(b, &ev->mfa);
        bs_proc_return_from(pr, &k, t);
        break;
    case BS_DBG_EV_REGISTER:
        p->name_atom = bs_dbg_atom(&b->procs, ev->name);
        pr->events++;
        break;
    default:
        if ((size_t)ev->kind < sizeof state_events / sizeof *state_events && state_events[ev->kind])
            state_events[ev->kind](pr, t);
        else
            pr->events++;
        break;
    }
}

static int build(void *ctx, const char *file, const bs_dbg_record *rec, const bs_dbg_event *ev, bs_read_error *err)
{
    (void)rec;
    builder *b = ctx;
    if (!ev || !ev->pid || ev->kind == BS_DBG_EV_UNKNOWN || ev->kind == BS_DBG_EV_SEQ_TRACE)
        return 0;
    uint32_t i;
    int found = proc_of(b, ev, &i);
    if (found <= 0)
        return found < 0 ? oom(err, file) : 0;
    bs_dbg_proc *p = &b->procs.procs[i];
    uint64_t t;
    if (!b->timed_mode)
        t = p->clock++;
    else if (ev->has_ts)
        t = ev->ts_ns;
    else
        t = p->started ? p->last_t : 0; /* an untimed message in a timed trace: no time passes */
    if (!p->started) {
        if (b->timed_mode && !ev->has_ts)
            return 0; /* cannot place the process in time yet */
        if (start_proc(b, p, t) < 0) {
            if (!bs_budget_is_exhausted(&b->budget))
                return oom(err, file);
            b->no_memory++; /* --max-memory reached: this process is left out */
            return 0;
        }
    }
    if (t < p->last_t)
        t = p->last_t; /* CPU time that went back (counted by the first pass): no negative time */
    p->last_t = t;
    feed(b, p, ev, t);
    if (b->oom)
        return oom(err, file);
    return 0;
}

static int name_key(void *ctx, const bs_key *k, char *buf, size_t cap)
{
    const builder *b = ctx;
    const bs_frame_table *a = &b->procs.atoms;
    if (k->module == 0 || k->module - 1 >= a->n || k->function >= a->n)
        return snprintf(buf, cap, "?");
    const char *m = bs_frame_name(a, (uint32_t)(k->module - 1)), *f = bs_frame_name(a, (uint32_t)k->function);
    return (int)bs_format_mfa(buf, cap, b->o->names, m, strlen(m), f, strlen(f), k->arity);
}

/* Calls-only processes: the weight of each function is its call count. */
static void weights_are_calls(bs_ptree *t)
{
    for (uint32_t i = 0; i < t->n_nodes; i++)
        t->nodes[i].self_ns = t->nodes[i].calls;
}

static int make_profile(builder *b, char *const *paths, int n, bs_profile *out)
{
    if (bs_profile_init(out) < 0)
        return -1;
    out->unit = b->rebuild && b->timed_mode ? BS_UNIT_NS : BS_UNIT_COUNT;
    uint64_t start = UINT64_MAX, end = 0;
    char label[600];
    for (uint32_t i = 0; i < b->procs.n; i++) {
        bs_dbg_proc *p = &b->procs.procs[i];
        if (!p->started)
            continue;
        bs_proc_flush(&p->proc, p->last_t);
        bs_dbg_proc_label(&b->procs, p, label, sizeof label);
        if (bs_profile_add_proc(out, &p->proc, label, name_key, b) < 0)
            return -1;
        if (!b->rebuild)
            weights_are_calls(&out->trees[out->n_trees - 1]);
        if (p->first_t < start)
            start = p->first_t;
        if (p->last_t > end)
            end = p->last_t;
    }
    if (b->timed_mode && start != UINT64_MAX) {
        out->start_ns = start;
        out->duration_ns = end - start;
        if (start < (uint64_t)1 << 63) /* {Mega, Sec, Micro}: wall-clock time (monotonic ones are shifted) */
            out->meta.start_unix_us = (int64_t)(start / 1000);
    }
    out->has_timeline = b->timed_mode && b->o->max_spans != UINT64_MAX && out->n_trees > 0;
    if (b->procs.refused)
        bs_profile_set_truncated(out, "max_processes");
    size_t used = 0;
    for (int i = 0; i < n && used + 4 < sizeof out->meta.source; i++) {
        int w = snprintf(out->meta.source + used, sizeof out->meta.source - used, "%s%s", i ? " + " : "dbg ",
                         paths[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    snprintf(out->meta.options, sizeof out->meta.options, "%s%s",
             b->rebuild ? "stacks rebuilt from calls and returns" : "calls only (flat call counts)",
             b->timed_mode ? "" : ", no timestamps (event counts)");
    bs_profile_compute_totals(out);
    return 0;
}

static void say_what_was_read(builder *b, const char *what)
{
    const bs_dbg_opts *o = b->o;
    note(o, "%s: %" PRIu64 " trace messages from %" PRIu32 " process%s", what, b->events, b->procs.n,
         b->procs.n == 1 ? "" : "es");
    if (b->rebuild)
        note(o, "stacks rebuilt from calls and %s", b->returns ? "return_to/return_from events" : "returns");
    else if (b->calls)
        note(o, "calls only (no return_to, return_from or exception_from): stacks cannot be rebuilt; each process "
                "shows how often it called each function%s",
             b->timed_mode ? ", and its calls in time order in the timeline" : "");
    else
        note(o, "no call events: the profile has only its processes");
    if (!b->timed_mode && b->events)
        note(o, "no timestamps (traced without the timestamp flag): weights are %s, not times, and there is no "
                "timeline (--flamechart, Chrome trace and speedscope show totals)",
             b->rebuild ? "event counts" : "call counts");
    else if (b->untimed)
        note(o, "%" PRIu64 " messages without a timestamp took the time of the message before them", b->untimed);
    if (b->drops)
        note(o, "the trace port dropped %" PRIu64 " messages (%" PRIu64 " drop records): stacks around them may be "
                "wrong", b->drops, b->drop_records);
    if (b->too_big)
        note(o, "%" PRIu64 " records larger than --max-term-size (%" PRIu64 " bytes) were skipped", b->too_big,
             o->max_term_bytes);
    if (b->unknown)
        note(o, "%" PRIu64 " records hold terms that are not trace messages: ignored", b->unknown);
    if (b->cpu_back)
        note(o, "%" PRIu64 " messages had a CPU time (cpu_timestamp) before their process's previous one (by up to "
                "%.6f s: the CPU clocks of cores differ): taken as no time passing", b->cpu_back,
             (double)b->cpu_back_max / 1e9);
    if (b->seq)
        note(o, "%" PRIu64 " seq_trace messages ignored (beamspy seq draws them)", b->seq);
    if (b->procs.refused)
        note(o, "max-processes (%" PRIu32 ") reached: %" PRIu64 " messages of later processes dropped; raise it "
                "with --max-processes N", b->procs.max, b->procs.refused);
}

int bs_dbg_read_profile(char *const *paths, int n, const bs_dbg_opts *opts, bs_profile *out, bs_read_error *err)
{
    bs_dbg_opts o = *opts;
    if (!o.max_term_bytes)
        o.max_term_bytes = BS_DBG_DEFAULT_MAX_TERM;
    builder b;
    memset(&b, 0, sizeof b);
    b.o = &o;
    memset(out, 0, sizeof *out);
    bs_dbg_procs_init(&b.procs, o.max_processes ? o.max_processes : BS_DBG_DEFAULT_MAX_PROCESSES);
    bs_budget_init(&b.budget, o.max_memory ? o.max_memory : BS_DBG_DEFAULT_MAX_MEMORY);
    bs_span_quota_init(&b.quota, o.max_spans ? o.max_spans : BS_DBG_DEFAULT_MAX_SPANS);
    int rc = bs_dbg_each_event(paths, n, &o, scan, &b, err);
    if (rc == 0) {
        b.rebuild = b.returns > 0;
        b.timed_mode = b.timed > 0;
        b.procs.refused = 0; /* counted again by the second pass */
        rc = bs_dbg_each_event(paths, n, &o, build, &b, err);
    }
    if (rc == 0) {
        char what[300];
        snprintf(what, sizeof what, "%s%s", paths[0], n > 1 ? " and the files after it" : "");
        say_what_was_read(&b, what);
        if (make_profile(&b, paths, n, out) < 0) {
            bs_profile_free(out);
            rc = oom(err, paths[0]);
        } else if (bs_budget_is_exhausted(&b.budget)) {
            int mib = b.budget.cap >= (1u << 20);
            note(&o, "max-memory (%zu %s) reached: some calls were not recorded (and %" PRIu64 " messages of "
                     "processes that did not fit); raise it with --max-memory", b.budget.cap >> (mib ? 20 : 10),
                 mib ? "MiB" : "KiB", b.no_memory);
            bs_profile_set_truncated(out, "max_memory");
        }
        if (rc == 0 && out->timeline_truncated && !bs_budget_is_exhausted(&b.budget))
            note(&o, "the timeline keeps the first %" PRIu64 " calls (--timeline N); later ones are only summed",
                 o.max_spans ? o.max_spans : (uint64_t)BS_DBG_DEFAULT_MAX_SPANS);
    }
    bs_dbg_procs_free(&b.procs);
    return rc;
}
