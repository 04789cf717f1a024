/* sched_watch.c — sampling sessions: the scheduling state of each target
 * process (see sched_watch.h). Written on the tracee's scheduler thread,
 * read by the sampler on its own: every field is atomic, a read is
 * retried when a slice began meanwhile, and a record, once published in
 * the pid table, lives as long as the session. */
#include "sched_watch.h"

#include <string.h>

static void tell_out(ErlNifEnv *env, bs_session *s, bs_traced_proc *r, uint32_t slices, ERL_NIF_TERM mfa)
{
    if (!s->has_owner)
        return;
    ErlNifEnv *msg_env = enif_alloc_env();
    if (!msg_env) {
        atomic_fetch_add(&s->run_notes_lost, 1);
        return;
    }
    ERL_NIF_TERM msg = enif_make_tuple4(msg_env, enif_make_atom(msg_env, "beamspy_out"), (ERL_NIF_TERM)r->pid,
                                        enif_make_uint(msg_env, slices), enif_make_copy(msg_env, mfa));
    if (!enif_send(env, &s->owner, msg_env, msg))
        atomic_fetch_add(&s->run_notes_lost, 1);
    enif_free_env(msg_env);
}

/* {M, F, Arity} of an out event, kept as atoms and a number. */
static void keep_out_mfa(ErlNifEnv *env, bs_traced_proc *r, ERL_NIF_TERM mfa)
{
    int n;
    const ERL_NIF_TERM *e;
    unsigned arity;
    if (enif_get_tuple(env, mfa, &n, &e) && n == 3 && enif_is_atom(env, e[0]) && enif_is_atom(env, e[1]) &&
        enif_get_uint(env, e[2], &arity)) {
        atomic_store_explicit(&r->out_m, (uint64_t)e[0], memory_order_relaxed);
        atomic_store_explicit(&r->out_f, (uint64_t)e[1], memory_order_relaxed);
        atomic_store_explicit(&r->out_a, arity, memory_order_relaxed);
    } else {
        atomic_store_explicit(&r->out_m, 0, memory_order_relaxed);
    }
}

void bs_run_state_event(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_traced_proc *r,
                        ERL_NIF_TERM tag, ERL_NIF_TERM mfa)
{
    int64_t now = (int64_t)enif_monotonic_time(ERL_NIF_NSEC);
    if (tag == a->in || tag == a->in_exiting) {
        uint32_t n = atomic_load(&r->slices) + 1;
        atomic_store(&r->ring_out[n % BS_RUN_RING], 0);
        atomic_store(&r->ring_in[n % BS_RUN_RING], now);
        atomic_store(&r->slices, n); /* only this thread writes it */
        atomic_store(&r->running, 1);
    } else if (tag == a->out || tag == a->out_exiting || tag == a->out_exited) {
        keep_out_mfa(env, r, mfa);
        atomic_store(&r->ring_out[atomic_load(&r->slices) % BS_RUN_RING], now);
        atomic_store(&r->running, 0);
        if (atomic_exchange(&r->want_out, 0))
            tell_out(env, s, r, atomic_load(&r->slices), mfa);
    }
}

typedef struct snapshot {
    int running;
    uint32_t slices;
    int64_t in[BS_RUN_RING], out[BS_RUN_RING];
    uint64_t m, f;
    uint32_t arity;
} snapshot;

/* A consistent view: no `in` between the first and the last read. */
static int take(bs_traced_proc *r, snapshot *v)
{
    for (int tries = 0; tries < 4; tries++) {
        uint32_t before = atomic_load(&r->slices);
        v->running = atomic_load(&r->running);
        for (int k = 0; k < BS_RUN_RING; k++) {
            v->in[k] = atomic_load(&r->ring_in[k]);
            v->out[k] = atomic_load(&r->ring_out[k]);
        }
        v->m = atomic_load(&r->out_m);
        v->f = atomic_load(&r->out_f);
        v->arity = atomic_load(&r->out_a);
        v->slices = atomic_load(&r->slices);
        if (v->slices == before)
            return 1;
    }
    return 0;
}

static ERL_NIF_TERM running_term(ErlNifEnv *env, uint32_t slices)
{
    return enif_make_tuple2(env, enif_make_atom(env, "running"), enif_make_uint(env, slices));
}

/* The slice that held time t among those remembered: the newest whose `in`
 * is not after t. Returns 1 and sets *k, *ran (t lies before its out), or
 * 0 when t is older than every remembered slice. */
static int slice_at(const snapshot *v, int64_t t, uint32_t *k, int *ran)
{
    uint32_t oldest = v->slices > BS_RUN_RING - 1 ? v->slices - (BS_RUN_RING - 1) : 1;
    for (uint32_t n = v->slices; n >= oldest && n > 0; n--) {
        int64_t in = v->in[n % BS_RUN_RING];
        if (in > t)
            continue;
        int64_t out = v->out[n % BS_RUN_RING];
        *k = n;
        *ran = out == 0 ? (n == v->slices && v->running) : out > t;
        return 1;
    }
    return 0;
}

static ERL_NIF_TERM state_at(ErlNifEnv *env, bs_session *s, ERL_NIF_TERM pid, int64_t t)
{
    ERL_NIF_TERM unknown = enif_make_atom(env, "unknown");
    bs_traced_proc *r = bs_pid_table_find(&s->pids, (uint64_t)pid);
    if (!r)
        return unknown;
    /* Armed first: an `out` after the snapshot then tells the owner. */
    atomic_store(&r->want_out, 1);
    snapshot v;
    uint32_t k;
    int ran;
    if (!take(r, &v) || v.slices == 0) {
        atomic_store(&r->want_out, 0);
        return unknown;
    }
    if (!slice_at(&v, t, &k, &ran)) { /* t is older than every slice kept */
        if (v.running)
            return running_term(env, v.slices);
        atomic_store(&r->want_out, 0);
        return unknown;
    }
    if (!ran) {
        atomic_store(&r->want_out, 0);
        return enif_make_atom(env, "out");
    }
    if (k == v.slices && !v.running) { /* ran at t, stopped since, not run again */
        atomic_store(&r->want_out, 0);
        ERL_NIF_TERM mfa = v.m ? enif_make_tuple3(env, (ERL_NIF_TERM)v.m, (ERL_NIF_TERM)v.f, enif_make_uint(env, v.arity))
                               : enif_make_int(env, 0);
        return enif_make_tuple2(env, enif_make_atom(env, "stopped"), mfa);
    }
    /* Ran at t: still in that slice, or in a later one (where it stops next
     * stands for where it was: the next stop of a busy process is as good
     * a sample of its CPU as the one missed). An `out` since the snapshot
     * was told with this count or a higher one. */
    if (!v.running)
        return running_term(env, v.slices + 1); /* told at the end of its next slice */
    return running_term(env, v.slices);
}

ERL_NIF_TERM bs_nif_session_run_states(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_priv *priv = bs_priv_of(env);
    bs_session *s = NULL;
    unsigned len;
    ErlNifSInt64 t;
    if (!enif_get_resource(env, argv[0], priv->session_type, (void **)&s) || !s->run_states ||
        !enif_get_list_length(env, argv[1], &len) || !enif_get_int64(env, argv[2], &t))
        return enif_make_badarg(env);
    ERL_NIF_TERM out = enif_make_list(env, 0), list = argv[1], head;
    ErlNifPid pid;
    while (enif_get_list_cell(env, list, &head, &list)) {
        if (!enif_get_local_pid(env, head, &pid))
            return enif_make_badarg(env);
        ERL_NIF_TERM one = atomic_load(&s->recording) ? state_at(env, s, enif_make_pid(env, &pid), (int64_t)t)
                                                      : enif_make_atom(env, "unknown");
        out = enif_make_list_cell(env, one, out);
    }
    /* Built reversed, then reversed once: the answer follows Pids' order. */
    ERL_NIF_TERM reversed;
    if (!enif_make_reverse_list(env, out, &reversed))
        return enif_make_badarg(env);
    return reversed;
}
