/* span_nif.c — telemetry span events from beamspy_telemetry's handler.
 *
 * span_event(Session, start | stop | exception, Name[, Note]) runs in the process
 * that emitted the event, synchronously, on its scheduler thread: the same
 * thread, and in order with, that process's trace events. So, like a tracer
 * callback, it finds the process's record in the session's pid table and
 * pushes or pops a span frame (span_frames.h) keyed {BS_SPAN_MODULE, Name}.
 * In a spans-only session (beamspy_telemetry alone) records are created on
 * a process's first span, and time outside spans is not charged; otherwise
 * (spans with the stacks) only processes the session traces are recorded.
 * Note, a binary, is attached to the span (metadata at its start, kind and
 * reason at an exception) and becomes its args in the Chrome trace.
 * Nothing here blocks, allocates terms beyond an atom reply, or sends. */
#include "span_nif.h"

#include <stdio.h>
#include <string.h>

#include "nif_atoms.h"

static bs_session *get_session(ErlNifEnv *env, ERL_NIF_TERM t)
{
    bs_session *s = NULL;
    return enif_get_resource(env, t, bs_priv_of(env)->session_type, (void **)&s) ? s : NULL;
}

int bs_span_session_opts(ErlNifEnv *env, bs_session *s, ERL_NIF_TERM opts)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM v;
    ErlNifUInt64 max = UINT64_MAX;
    if (enif_get_map_value(env, opts, enif_make_atom(env, "max_spans"), &v) && !enif_get_uint64(env, v, &max))
        return -1;
    s->spans_only = enif_get_map_value(env, opts, enif_make_atom(env, "spans_only"), &v) && v == a->true;
    s->span_anchors[0] = (bs_key){(uint64_t)a->telemetry, (uint64_t)a->execute, 3};
    s->span_anchors[1] = (bs_key){(uint64_t)a->telemetry, (uint64_t)enif_make_atom(env, "do_execute"), 4};
    atomic_store(&s->spans_left, max);
    atomic_store(&s->spans_dropped, 0);
    return 0;
}

/* One span start may pass when max_spans allows it. */
static int take_span(bs_session *s)
{
    uint64_t left = atomic_load_explicit(&s->spans_left, memory_order_relaxed);
    while (left > 0)
        if (atomic_compare_exchange_weak(&s->spans_left, &left, left - 1))
            return 1;
    atomic_fetch_add(&s->spans_dropped, 1);
    return 0;
}

ERL_NIF_TERM bs_nif_span_event(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    uint64_t t = bs_now_ns();
    ErlNifBinary note = {0};
    if (argc > 3 && !enif_inspect_binary(env, argv[3], &note))
        note.size = 0;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    bs_session *s = get_session(env, argv[0]);
    ERL_NIF_TERM kind = argv[1];
    if (!s || !enif_is_atom(env, argv[2]) || (kind != a->start && kind != a->stop && kind != a->exception))
        return a->badarg;
    if (!atomic_load_explicit(&s->recording, memory_order_relaxed))
        return a->stopped;
    ErlNifPid self;
    if (!enif_self(env, &self))
        return a->badarg;
    uint64_t key = (uint64_t)enif_make_pid(env, &self);
    if (s->n_ignored && bs_session_is_ignored(s, key))
        return a->not_traced;
    bs_traced_proc *r = s->spans_only ? bs_session_proc(env, s, key, t) : bs_pid_table_find(&s->pids, key);
    if (!r)
        return s->spans_only ? a->dropped : a->not_traced;
    ERL_NIF_TERM reply = a->ok;
    bs_key span = {BS_SPAN_MODULE, (uint64_t)argv[2], 0};
    /* The stop protocol of session.c: announce, then re-check. */
    atomic_store(&r->busy, 1);
    if (!atomic_load(&s->recording)) {
        reply = a->stopped;
    } else if (s->capture_mode && !atomic_load(&r->capturing)) {
        reply = a->not_traced;
    } else if (kind == a->start) {
        if (!take_span(s))
            reply = a->dropped;
        else if (bs_proc_span_start(&r->proc, &span, s->span_anchors, 2, t) < 0)
            reply = a->refused;
        else {
            if (note.size)
                (void)bs_spans_note(&r->proc, &span, (const char *)note.data, note.size);
            if (s->spans_only && !r->span_seen)
                reply = a->first;
        }
        r->span_seen = 1;
    } else {
        if (note.size)
            (void)bs_spans_note(&r->proc, &span, (const char *)note.data, note.size);
        int rc = bs_proc_span_stop(&r->proc, &span, t);
        reply = rc == 0 ? a->ok : rc > 0 ? a->unmatched : a->refused;
    }
    atomic_store(&r->busy, 0);
    return reply;
}

/* span_exit(Session, Pid): a process of a spans-only session died (its
 * owner saw the monitor fire); spans it left open are counted as died. */
ERL_NIF_TERM bs_nif_span_exit(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    bs_session *s = get_session(env, argv[0]);
    ErlNifPid pid;
    if (!s || !s->spans_only || !enif_get_local_pid(env, argv[1], &pid))
        return enif_make_badarg(env);
    bs_traced_proc *r = bs_pid_table_find(&s->pids, (uint64_t)enif_make_pid(env, &pid));
    if (!r)
        return a->not_traced;
    /* The process is dead: no span event of it can run now. */
    atomic_store(&r->busy, 1);
    if (atomic_load(&s->recording))
        bs_proc_exit(&r->proc, bs_now_ns());
    atomic_store(&r->busy, 0);
    return a->ok;
}

void bs_span_totals(bs_session *s, bs_span_counts *c, uint64_t *open)
{
    memset(c, 0, sizeof *c);
    *open = 0;
    for (uint32_t i = 0; i < s->pids.cap; i++) {
        bs_traced_proc *r = atomic_load(&s->pids.slots[i].record);
        if (!r)
            continue;
        const bs_span_counts *p = &r->proc.span_counts;
        c->started += p->started;
        c->closed += p->closed;
        c->unmatched += p->unmatched;
        c->lost += p->lost;
        c->died += p->died;
        c->refused += p->refused;
        *open += bs_proc_open_spans(&r->proc);
        for (const bs_capture *k = r->captures; k; k = k->next) {
            c->started += k->proc.span_counts.started;
            c->closed += k->proc.span_counts.closed;
            c->unmatched += k->proc.span_counts.unmatched;
            c->lost += k->proc.span_counts.lost;
            c->died += k->proc.span_counts.died;
            c->refused += k->proc.span_counts.refused;
        }
    }
}

void bs_span_notes(bs_session *s, char *buf, size_t cap)
{
    bs_span_counts c;
    uint64_t open;
    bs_span_totals(s, &c, &open);
    uint64_t dropped = atomic_load(&s->spans_dropped);
    buf[0] = '\0';
    if (!c.started && !c.unmatched && !c.refused && !dropped)
        return;
    snprintf(buf, cap,
             "telemetry spans: %llu recorded, %llu dropped (max_spans), %llu refused (depth/memory), "
             "%llu stops unmatched, %llu lost (anchor left), %llu in processes that died, %llu open at the end",
             (unsigned long long)c.started, (unsigned long long)dropped, (unsigned long long)c.refused,
             (unsigned long long)c.unmatched, (unsigned long long)c.lost, (unsigned long long)c.died,
             (unsigned long long)open);
}

/* span_info(Session): the counts, once recording has stopped. */
ERL_NIF_TERM bs_nif_span_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    bs_session *s = get_session(env, argv[0]);
    if (!s)
        return enif_make_badarg(env);
    if (atomic_load(&s->recording))
        return enif_make_tuple2(env, a->error, a->recording);
    bs_span_counts c;
    uint64_t open;
    bs_span_totals(s, &c, &open);
    ERL_NIF_TERM keys[] = {enif_make_atom(env, "started"), enif_make_atom(env, "closed"), a->unmatched,
                           enif_make_atom(env, "lost"), enif_make_atom(env, "died"), a->refused, a->dropped,
                           enif_make_atom(env, "open")};
    ERL_NIF_TERM vals[] = {enif_make_uint64(env, c.started), enif_make_uint64(env, c.closed),
                           enif_make_uint64(env, c.unmatched), enif_make_uint64(env, c.lost),
                           enif_make_uint64(env, c.died), enif_make_uint64(env, c.refused),
                           enif_make_uint64(env, atomic_load(&s->spans_dropped)), enif_make_uint64(env, open)};
    ERL_NIF_TERM map;
    if (!enif_make_map_from_arrays(env, keys, vals, sizeof keys / sizeof keys[0], &map))
        return enif_make_badarg(env);
    return map;
}
