/* tracer_callbacks.c — the erl_tracer callbacks: enabled/3 and trace/5.
 *
 * They run on the scheduler thread (dirty ones included) that runs the
 * tracee, for every traced call, return and reschedule, so they do the least
 * possible: read the clock, find the process record, check the shape of the
 * term, feed one event to the engine. A term of an unexpected shape is
 * dropped, never trusted. Nothing here allocates terms or sends messages. */
#include "tracer_callbacks.h"

#include "capture.h"
#include "cpu_session.h"
#include "nif_atoms.h"
#include "halt_write.h"
#include "load_factor.h"
#include "sched_watch.h"
#include "session.h"

/* The tracer state is the session resource, or {beamspy_meta, Session} for
 * the meta tracer of capture mode. */
static bs_session *session_of(ErlNifEnv *env, const bs_priv *priv, ERL_NIF_TERM state, int *is_meta)
{
    bs_session *s = NULL;
    *is_meta = 0;
    if (enif_get_resource(env, state, priv->session_type, (void **)&s))
        return s;
    int n;
    const ERL_NIF_TERM *e;
    if (enif_get_tuple(env, state, &n, &e) && n == 2 && e[0] == priv->atoms.beamspy_meta &&
        enif_get_resource(env, e[1], priv->session_type, (void **)&s)) {
        *is_meta = 1;
        return s;
    }
    return NULL;
}

static int is_gc(const bs_atoms *a, ERL_NIF_TERM tag)
{
    return tag == a->gc_minor_start || tag == a->gc_major_start || tag == a->gc_minor_end || tag == a->gc_major_end;
}

ERL_NIF_TERM bs_nif_enabled(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_priv *priv = bs_priv_of(env);
    const bs_atoms *a = &priv->atoms;
    int is_meta;
    bs_session *s = session_of(env, priv, argv[1], &is_meta);
    (void)is_meta;
    if (!s)
        return argv[0] == a->trace_status ? a->remove : a->discard;
    if (!atomic_load_explicit(&s->recording, memory_order_relaxed)) {
        /* A limit stopped the session while its profile is still to be
         * written at the halt: the tracer stays and calls still come, for
         * the halting one. */
        if ((argv[0] == a->call || argv[0] == a->trace_status) && s->halt_hook && bs_halt_pending(s))
            return a->trace;
        /* A stopped session asks the VM to drop the tracer from the tracee. */
        return argv[0] == a->trace_status ? a->remove : a->discard;
    }
    /* Mode cpu joined by registers traces garbage collections: one on a
     * dirty scheduler names its process for the samples taken there, one on
     * a normal scheduler its Erlang caller (cpu_session.c). No term is built
     * for the latter: about 50 ns a collection. */
    if (s->cpu && !s->cpu_times && is_gc(a, argv[0]) && bs_cpu_by_registers(s->cpu)) {
        int type = enif_thread_type();
        if (type == ERL_NIF_THR_DIRTY_CPU_SCHEDULER || type == ERL_NIF_THR_DIRTY_IO_SCHEDULER)
            return a->trace;
        /* On a normal scheduler the collection's Erlang caller is taken
         * here, before any term is built, and nothing is traced. */
        if (argv[0] == a->gc_minor_start || argv[0] == a->gc_major_start)
            bs_cpu_gc_start(s->cpu, (uint64_t)argv[2], bs_now_ns());
        else
            bs_cpu_gc_end(s->cpu, (uint64_t)argv[2], bs_now_ns());
        return a->discard;
    }
    /* Capture mode cannot answer `remove` for a process between captures:
     * the VM asks trace_status the moment a meta match spec switches tracing
     * on, before the meta call event arrives. Such a process's events are
     * ignored in trace/5 and the owner switches its tracing off. */
    return a->trace;
}

/* {M, F, Arity} (trace flag `arity`) or {M, F, Args}. */
static int get_mfa(ErlNifEnv *env, ERL_NIF_TERM t, bs_key *k)
{
    int n;
    const ERL_NIF_TERM *e;
    unsigned len;
    if (!enif_get_tuple(env, t, &n, &e) || n != 3 || !enif_is_atom(env, e[0]) || !enif_is_atom(env, e[1]))
        return 0;
    if (!enif_get_uint(env, e[2], &len) && !enif_get_list_length(env, e[2], &len))
        return 0;
    if (len > 255)
        return 0;
    k->module = (uint64_t)e[0];
    k->function = (uint64_t)e[1];
    k->arity = len;
    return 1;
}

/* {cp, undefined}: the callee will return to no function at all, i.e. to
 * the bottom of the process (a spawned fun tail-calling its loop, the usual
 * `spawn(fun() -> loop(S) end)`), so the stack below it is empty. Keeping the
 * stack instead would grow it by one frame per iteration of such a loop.
 * The exception are BIFs, for which the VM sometimes cannot tell the caller
 * ("technically built-in functions", erlang:trace/3 docs): they stay on the
 * current stack. */
static bs_caller_kind undefined_caller(const bs_atoms *a, const bs_key *callee)
{
    return (ERL_NIF_TERM)callee->module == a->erlang ? BS_CALLER_UNDEFINED : BS_CALLER_ROOT;
}

static int on_call(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_proc *p,
                   ERL_NIF_TERM term, ERL_NIF_TERM opts, uint64_t t)
{
    bs_key callee, caller;
    if (!get_mfa(env, term, &callee))
        return -1;
    bs_caller_kind kind = BS_CALLER_UNKNOWN;
    ERL_NIF_TERM msr;
    if (s->use_caller && enif_get_map_value(env, opts, a->match_spec_result, &msr)) {
        int n;
        const ERL_NIF_TERM *e;
        if (enif_get_tuple(env, msr, &n, &e) && n == 2 && e[0] == a->cp) {
            if (get_mfa(env, e[1], &caller))
                kind = bs_session_is_excluded(s, (ERL_NIF_TERM)caller.module) ? BS_CALLER_OWN_CODE : BS_CALLER_FRAME;
            else
                kind = undefined_caller(a, &callee);
        }
    }
    return bs_proc_call(p, &callee, kind, &caller, t);
}

static int on_return_to(ErlNifEnv *env, bs_session *s, bs_proc *p, ERL_NIF_TERM term, uint64_t t)
{
    bs_key to;
    if (!get_mfa(env, term, &to))
        return bs_proc_return_to(p, NULL, t); /* undefined */
    if (bs_session_is_excluded(s, (ERL_NIF_TERM)to.module))
        return bs_proc_return_to_own_code(p, t);
    return bs_proc_return_to(p, &to, t);
}

/* An `in' at erlang:hibernate/3: the process is woken from hibernation
 * (its stack discarded; its wake-up function is called next). */
static int woke_from_hibernation(ErlNifEnv *env, const bs_atoms *a, ERL_NIF_TERM mfa)
{
    int n;
    const ERL_NIF_TERM *e;
    return enif_get_tuple(env, mfa, &n, &e) && n == 3 && e[0] == a->erlang && e[1] == a->hibernate;
}

static int dispatch(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_proc *p, ERL_NIF_TERM tag,
                    ERL_NIF_TERM term, ERL_NIF_TERM opts, uint64_t t)
{
    if (tag == a->call)
        return on_call(env, a, s, p, term, opts, t);
    if (tag == a->return_to)
        return on_return_to(env, s, p, term, t);
    if (tag == a->out || tag == a->out_exiting)
        return bs_proc_sched_out(p, t);
    if (tag == a->in || tag == a->in_exiting) {
        int rc = bs_proc_sched_in(p, t);
        if (woke_from_hibernation(env, a, term))
            bs_proc_woke_from_hibernation(p);
        return rc;
    }
    if (tag == a->out_exited) {
        bs_proc_exit(p, t);
        return 0;
    }
    if (tag == a->receive) /* the message itself is not looked at */
        return bs_proc_received(p, t);
    if (tag == a->gc_minor_start || tag == a->gc_major_start)
        return bs_proc_gc_start(p, t);
    if (tag == a->gc_minor_end || tag == a->gc_major_end)
        return bs_proc_gc_end(p, t);
    return 0;
}

/* CPU sessions: the thread this callback runs on now runs r's process
 * (`in') or none (`out'). */
static void cpu_switch(const bs_atoms *a, bs_session *s, bs_traced_proc *r, ERL_NIF_TERM tag, uint64_t t)
{
    if (tag == a->in || tag == a->in_exiting)
        bs_cpu_switch(s->cpu, r->pid, t);
    else if (tag == a->out || tag == a->out_exiting || tag == a->out_exited)
        bs_cpu_switch(s->cpu, 0, t);
}

/* times => samples: r's process starts or ends a garbage collection on
 * this thread, so that the samples taken in it get its Erlang caller and
 * stack as mode cpu's do (cpu_session.h). 1 when tag is such an event. */
static int cpu_collection(const bs_atoms *a, bs_session *s, bs_traced_proc *r, ERL_NIF_TERM tag, uint64_t t)
{
    int start = tag == a->gc_minor_start || tag == a->gc_major_start;
    if (!start && tag != a->gc_minor_end && tag != a->gc_major_end)
        return 0;
    int type = enif_thread_type();
    if (type == ERL_NIF_THR_DIRTY_CPU_SCHEDULER || type == ERL_NIF_THR_DIRTY_IO_SCHEDULER) {
        if (start)
            bs_cpu_dirty_gc_start(s->cpu, r->pid, t);
        else
            bs_cpu_dirty_gc_end(s->cpu, t);
    } else if (start)
        bs_cpu_gc_start(s->cpu, r->pid, t);
    else
        bs_cpu_gc_end(s->cpu, r->pid, t);
    return 1;
}

static int is_sched(const bs_atoms *a, ERL_NIF_TERM tag)
{
    return tag == a->in || tag == a->out || tag == a->in_exiting || tag == a->out_exiting || tag == a->out_exited;
}

/* The session-wide event count is updated every 64 events of a process, so
 * the hot path does not bounce a shared cache line between schedulers;
 * max_events may therefore be passed by up to 64 events per process. */
#define EVENT_BATCH 64u

static void count_event(ErlNifEnv *env, bs_session *s, bs_traced_proc *r)
{
    if (++r->uncounted < EVENT_BATCH)
        return;
    uint64_t total = atomic_fetch_add(&s->events_counted, r->uncounted) + r->uncounted;
    r->uncounted = 0;
    if (s->max_events && total >= s->max_events)
        bs_session_stop_for_limit(env, s, BS_STOP_MAX_EVENTS);
}

/* erlang:halt/0,1,2 or init:stop/0,1: the VM is about to go. */
static int is_halting_call(ErlNifEnv *env, const bs_atoms *a, ERL_NIF_TERM mfa)
{
    int n;
    const ERL_NIF_TERM *e;
    if (!enif_get_tuple(env, mfa, &n, &e) || n != 3)
        return 0;
    return (e[0] == a->erlang && e[1] == a->halt) || (e[0] == a->init && e[1] == a->stop);
}

ERL_NIF_TERM bs_nif_trace(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    uint64_t t = bs_now_ns();
    const bs_priv *priv = bs_priv_of(env);
    const bs_atoms *a = &priv->atoms;
    int is_meta;
    bs_session *s = session_of(env, priv, argv[1], &is_meta);
    if (!s)
        return a->ok;
    if (!atomic_load_explicit(&s->recording, memory_order_relaxed)) {
        /* Stopped by a limit: a halting process waits for the profile
         * (bs_halt_write writes it, or waits for the owner's write). */
        if (s->halt_hook && argv[0] == a->call && is_halting_call(env, a, argv[3]))
            bs_halt_write(env, s);
        return a->ok;
    }
    ErlNifPid pid;
    if (!enif_get_local_pid(env, argv[2], &pid))
        return a->ok;
    uint64_t key = (uint64_t)enif_make_pid(env, &pid);
    if (s->n_ignored && bs_session_is_ignored(s, key))
        return a->ok;
    bs_traced_proc *r = bs_session_proc(env, s, key, t);
    if (!r)
        return a->ok;
    /* The stop protocol of session.c: announce, then re-check. */
    atomic_store(&r->busy, 1);
    if (atomic_load(&s->recording)) {
        int rc = 0;
        int recorded = 0;
        if (s->run_states)
            bs_run_state_event(env, a, s, r, argv[0], argv[3]);
        else if (s->cpu && !s->cpu_times && bs_cpu_by_registers(s->cpu)) {
            /* Only `procs' is traced (with set_on_spawn): a spawned child
             * joins the chosen processes (its own first event would too). */
            ErlNifPid child;
            if (argv[0] == a->spawn && enif_get_local_pid(env, argv[3], &child))
                (void)bs_session_proc(env, s, (uint64_t)enif_make_pid(env, &child), t);
            else if (argv[0] == a->gc_minor_start || argv[0] == a->gc_major_start)
                bs_cpu_dirty_gc_start(s->cpu, r->pid, t); /* on a dirty scheduler: enabled/3 let no other through */
            else if (argv[0] == a->gc_minor_end || argv[0] == a->gc_major_end)
                bs_cpu_dirty_gc_end(s->cpu, t);
        } else if (s->cpu && !s->cpu_times)
            cpu_switch(a, s, r, argv[0], t);
        else if (is_meta)
            rc = bs_capture_on_meta(env, a, s, r, argv[0], argv[3], t);
        else if (!s->capture_mode || atomic_load(&r->capturing)) {
            /* times => samples: which process runs on this thread, and its
             * collections (traced for the samples alone unless gc => true). */
            int samples_only = 0;
            if (s->cpu_times) {
                cpu_switch(a, s, r, argv[0], t);
                samples_only = cpu_collection(a, s, r, argv[0], t) && !s->charge_gc;
            }
            if (!samples_only) {
                rc = dispatch(env, a, s, &r->proc, argv[0], argv[3], argv[4], t);
                if (s->capture_mode && argv[0] == a->out_exited)
                    bs_capture_on_exit(env, s, r, t); /* r->proc is done with */
                else
                    recorded = 1;
            }
        }
        if (rc < 0 && bs_budget_is_exhausted(&s->budget))
            bs_session_stop_for_limit(env, s, BS_STOP_MAX_MEMORY);
        count_event(env, s, r);
        if (s->comp_state == BS_COMP_APPLIED) {
            bs_load_factor_event(r, is_sched(a, argv[0]), t);
            /* Last: everything this callback did is left out of the times. */
            if (recorded)
                bs_proc_skip_callback(&r->proc, t, bs_now_ns());
        }
    }
    atomic_store(&r->busy, 0);
    if (s->halt_hook && argv[0] == a->call && is_halting_call(env, a, argv[3]))
        bs_halt_write(env, s); /* busy is down: the session can be stopped */
    return a->ok;
}
