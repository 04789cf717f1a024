/* session.c — session lifecycle and the stop protocol.
 *
 * Stop protocol (Dekker-style, all seq_cst): a callback sets its record's
 * `busy`, then reads `recording`; stop clears `recording`, then waits for
 * every `busy` to drop. Either the callback sees recording == 0 and backs off,
 * or stop sees busy == 1 and waits: no callback is ever inside a record that
 * the exporter reads. The flag lives in the per-process record, so the hot
 * path writes only a cache line its own thread already owns. */
#define _POSIX_C_SOURCE 200809L
#include "session.h"

#include "nif_atoms.h"

#include <sched.h>
#include <string.h>
#include <time.h>

uint64_t bs_now_ns(void)
{
    /* clock_gettime through the vDSO: ~40 ns here, against ~133 ns for
     * enif_monotonic_time, measured on this project's 2-core test VMs. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *bs_stop_reason_name(int reason)
{
    switch (reason) {
    case BS_STOP_MAX_MEMORY: return "max_memory";
    case BS_STOP_MAX_PROCESSES: return "max_processes";
    case BS_STOP_MAX_EVENTS: return "max_events";
    case BS_STOP_MAX_DURATION: return "max_duration";
    default: return "";
    }
}

int bs_session_init(bs_session *s, size_t max_memory, uint32_t max_procs)
{
    memset(s, 0, sizeof *s);
    bs_budget_init(&s->budget, max_memory);
    if (bs_pid_table_init(&s->pids, max_procs) < 0)
        return -1;
    s->insert_lock = enif_mutex_create("beamspy_session_insert");
    if (!s->insert_lock) {
        bs_pid_table_free(&s->pids, &s->budget);
        return -1;
    }
    atomic_init(&s->recording, 1);
    atomic_init(&s->stop_reason, BS_STOP_NONE);
    atomic_init(&s->lost_processes, 0);
    atomic_init(&s->events_counted, 0);
    atomic_init(&s->run_notes_lost, 0);
    s->start_ns = bs_now_ns();
    return 0;
}

void bs_session_destroy(bs_session *s)
{
    bs_pid_table_free(&s->pids, &s->budget);
    if (s->insert_lock)
        enif_mutex_destroy(s->insert_lock);
    s->insert_lock = NULL;
}

void bs_session_stop_for_limit(ErlNifEnv *env, bs_session *s, int reason)
{
    int none = BS_STOP_NONE;
    int first = atomic_compare_exchange_strong(&s->stop_reason, &none, reason);
    bs_session_stop(s, reason, 0);
    if (!first || !s->has_owner)
        return;
    ErlNifEnv *msg_env = enif_alloc_env();
    if (!msg_env)
        return;
    ERL_NIF_TERM msg = enif_make_tuple2(msg_env, enif_make_atom(msg_env, "beamspy_limit"),
                                        enif_make_atom(msg_env, bs_stop_reason_name(reason)));
    (void)enif_send(env, &s->owner, msg_env, msg);
    enif_free_env(msg_env);
}

void bs_session_tell_owner(ErlNifEnv *env, bs_session *s, const char *tag, uint64_t pid, uint32_t index)
{
    if (!s->has_owner)
        return;
    ErlNifEnv *msg_env = enif_alloc_env();
    if (!msg_env)
        return;
    ERL_NIF_TERM msg = enif_make_tuple3(msg_env, enif_make_atom(msg_env, tag), (ERL_NIF_TERM)pid,
                                        enif_make_uint(msg_env, index));
    (void)enif_send(env, &s->owner, msg_env, msg);
    enif_free_env(msg_env);
}

void bs_session_stop(bs_session *s, int reason, int wait)
{
    int none = BS_STOP_NONE;
    atomic_compare_exchange_strong(&s->stop_reason, &none, reason);
    if (atomic_exchange(&s->recording, 0) == 1)
        s->stop_ns = bs_now_ns();
    if (!wait)
        return;
    enif_mutex_lock(s->insert_lock);
    for (uint32_t i = 0; i < s->pids.cap; i++) {
        bs_traced_proc *r = atomic_load(&s->pids.slots[i].record);
        while (r && atomic_load(&r->busy))
            sched_yield();
    }
    enif_mutex_unlock(s->insert_lock);
}

int bs_session_is_excluded(const bs_session *s, ERL_NIF_TERM module)
{
    for (int i = 0; i < s->n_excluded; i++)
        if (s->excluded[i] == module)
            return 1;
    return 0;
}

void bs_session_prepare_proc(bs_session *s, bs_proc *p)
{
    if (s->keep_timeline)
        bs_proc_enable_timeline(p, &s->span_quota);
    if (s->comp_state == BS_COMP_APPLIED)
        bs_proc_compensate(p, &s->comp_costs);
    if (s->charge_sleep) /* the tracees are traced with `receive' too */
        bs_proc_split_waits(p);
}

static bs_traced_proc *insert_locked(ErlNifEnv *env, bs_session *s, uint64_t pid, uint64_t now);

bs_traced_proc *bs_session_proc(ErlNifEnv *env, bs_session *s, uint64_t pid, uint64_t now)
{
    bs_traced_proc *r = bs_pid_table_find(&s->pids, pid);
    if (r)
        return r;
    enif_mutex_lock(s->insert_lock);
    return insert_locked(env, s, pid, now);
}

bs_traced_proc *bs_session_proc_try(bs_session *s, uint64_t pid, uint64_t now, const _Atomic int *give_up)
{
    bs_traced_proc *r = bs_pid_table_find(&s->pids, pid);
    if (r)
        return r;
    while (enif_mutex_trylock(s->insert_lock) != 0) {
        if (atomic_load(give_up) || !atomic_load(&s->recording))
            return NULL;
        sched_yield();
    }
    return insert_locked(NULL, s, pid, now);
}

/* With insert_lock held; releases it. */
static bs_traced_proc *insert_locked(ErlNifEnv *env, bs_session *s, uint64_t pid, uint64_t now)
{
    bs_traced_proc *r = bs_pid_table_find(&s->pids, pid);
    if (!r && atomic_load(&s->recording)) {
        r = bs_budget_alloc(&s->budget, sizeof *r);
        if (r && bs_proc_init(&r->proc, &s->budget, now, s->charge_sleep, s->charge_gc) < 0) {
            bs_budget_free(&s->budget, r, sizeof *r);
            r = NULL;
        }
        if (r) {
            bs_session_prepare_proc(s, &r->proc);
            r->pid = pid;
            r->uncounted = 0;
            r->span_seen = 0;
            r->load_count = 0;
            r->load_marked = 0;
            r->load_sum_wall_ns = r->load_sum_cpu_ns = 0;
            r->proc.skip_root = s->spans_only ? 1 : 0;
            atomic_init(&r->busy, 0);
            atomic_init(&r->capturing, 0);
            atomic_init(&r->running, 0);
            atomic_init(&r->slices, 0);
            atomic_init(&r->want_out, 0);
            for (int k = 0; k < BS_RUN_RING; k++) {
                atomic_init(&r->ring_in[k], 0);
                atomic_init(&r->ring_out[k], 0);
            }
            atomic_init(&r->out_m, 0);
            atomic_init(&r->out_f, 0);
            atomic_init(&r->out_a, 0);
            r->capture_depth = 0;
            r->capture_index = 0;
            r->captures = NULL;
            if (!bs_pid_table_insert(&s->pids, pid, r)) {
                bs_proc_free(&r->proc);
                bs_budget_free(&s->budget, r, sizeof *r);
                r = NULL;
                atomic_fetch_add(&s->lost_processes, 1);
                enif_mutex_unlock(s->insert_lock);
                bs_session_stop_for_limit(env, s, BS_STOP_MAX_PROCESSES);
                return NULL;
            }
        } else {
            enif_mutex_unlock(s->insert_lock);
            bs_session_stop_for_limit(env, s, BS_STOP_MAX_MEMORY);
            return NULL;
        }
    }
    enif_mutex_unlock(s->insert_lock);
    return r;
}

int bs_session_is_ignored(const bs_session *s, uint64_t pid)
{
    for (int i = 0; i < s->n_ignored; i++)
        if (s->ignored[i] == pid)
            return 1;
    return 0;
}
