/* capture.c — the capture state machine of one process (see capture.h).
 *
 * idle --meta call, a capture left--> capturing (depth 1, frame pushed)
 * capturing --meta call (recursion)--> depth + 1 (the local call event that
 *     came just before already pushed the frame)
 * capturing --meta return_from / exception_from--> depth - 1; at 0 the
 *     recording moves to the process's finished captures, the owner is told
 *     {beamspy_capture_done, Pid, Index}, and the process is idle again.
 * The process that takes the last capture tells the owner
 * {beamspy_captures_taken, Pid, Index}, so it removes the meta pattern. An
 * idle process records nothing until the owner switches its tracing off. */
#include "capture.h"

#include <string.h>

static int take_capture(bs_session *s)
{
    int64_t left = atomic_load(&s->captures_left);
    while (left > 0)
        if (atomic_compare_exchange_weak(&s->captures_left, &left, left - 1))
            return 1;
    return 0;
}

static void finish(ErlNifEnv *env, bs_session *s, bs_traced_proc *r, uint64_t t)
{
    bs_proc_flush(&r->proc, t);
    bs_capture *c = bs_budget_alloc(&s->budget, sizeof *c);
    uint32_t index = r->capture_index;
    if (c) {
        c->proc = r->proc; /* the tree moves; r->proc is made anew below */
        bs_call_tree_trim(&c->proc.tree); /* a capture of a tiny call keeps 2 nodes, not 64 */
        c->index = index;
        c->next = r->captures;
        r->captures = c;
    } else {
        bs_proc_free(&r->proc);
    }
    memset(&r->proc, 0, sizeof r->proc);
    int made = bs_proc_init(&r->proc, &s->budget, t, s->charge_sleep, s->charge_gc) == 0;
    if (made)
        bs_session_prepare_proc(s, &r->proc);
    /* No memory to keep this capture or to make the next one: the session
     * stops (max_memory) with what it kept, rather than going on losing
     * calls without a word. */
    if (!c || !made)
        bs_session_stop_for_limit(env, s, BS_STOP_MAX_MEMORY);
    r->capture_depth = 0;
    atomic_store(&r->capturing, 0);
    if (!c)
        return;
    bs_session_tell_owner(env, s, "beamspy_capture_done", r->pid, index);
}

static int get_callee(ErlNifEnv *env, ERL_NIF_TERM term, bs_key *k)
{
    int n;
    const ERL_NIF_TERM *e;
    unsigned len;
    if (!enif_get_tuple(env, term, &n, &e) || n != 3 || !enif_is_atom(env, e[0]) || !enif_is_atom(env, e[1]))
        return 0;
    if (!enif_get_list_length(env, e[2], &len) && !enif_get_uint(env, e[2], &len))
        return 0;
    k->module = (uint64_t)e[0];
    k->function = (uint64_t)e[1];
    k->arity = len;
    return 1;
}

int bs_capture_on_meta(ErlNifEnv *env, const bs_atoms *a, bs_session *s, bs_traced_proc *r,
                       ERL_NIF_TERM tag, ERL_NIF_TERM term, uint64_t t)
{
    int capturing = atomic_load(&r->capturing);
    if (tag == a->call) {
        bs_key callee;
        if (!get_callee(env, term, &callee) || !bs_key_eq(&callee, &s->capture_key))
            return 0;
        if (capturing) {
            r->capture_depth++;
            return 0;
        }
        if (!take_capture(s))
            return 0;
        r->capture_index = atomic_fetch_add(&s->captures_started, 1) + 1;
        if (atomic_load(&s->captures_left) == 0)
            bs_session_tell_owner(env, s, "beamspy_captures_taken", r->pid, r->capture_index);
        r->capture_depth = 1;
        /* Nothing before this call belongs to the capture. */
        r->proc.last_ns = t;
        atomic_store(&r->capturing, 1);
        return bs_proc_call(&r->proc, &callee, BS_CALLER_ROOT, NULL, t);
    }
    if ((tag == a->return_from || tag == a->exception_from) && capturing) {
        if (r->capture_depth > 0 && --r->capture_depth == 0)
            finish(env, s, r, t);
    }
    return 0;
}

void bs_capture_on_exit(ErlNifEnv *env, bs_session *s, bs_traced_proc *r, uint64_t t)
{
    if (atomic_load(&r->capturing))
        finish(env, s, r, t);
}
