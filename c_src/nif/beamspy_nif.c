/* beamspy_nif.c — the NIF library of module beamspy_tracer.
 *
 * erl_tracer insists that enabled/3 and trace/5 are NIFs of the tracer
 * module, so the session functions live in the same library. Everything the
 * NIF keeps is inside a session resource or the library's private data. */
#include <errno.h>
#include <string.h>

#include "../engine/filter.h"
#include "../writers/writers.h"
#include "cpu_session.h"
#include "format_nif.h"
#include "name_nif.h"
#include "nif_atoms.h"
#include "profile_export.h"
#include "profile_import.h"
#include "cpu_hot_nif.h"
#include "sched_watch.h"
#include "session.h"
#include "session_flush.h"
#include "tracer_callbacks.h"
#include "halt_write.h"
#include "seq_nif.h"
#include "span_nif.h"
#include "write_request.h"

static void session_dtor(ErlNifEnv *env, void *obj)
{
    (void)env;
    bs_session *s = obj;
    bs_session_stop(s, BS_STOP_REQUESTED, 0);
    /* What was attached to the session here goes first: the sampler's
     * drain thread reads the pid table. */
    bs_cpu_close(s->cpu);
    s->cpu = NULL;
    bs_halt_plan_free(s);
    bs_session_destroy(s);
}

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info)
{
    (void)info;
    bs_priv *p = enif_alloc(sizeof *p);
    if (!p)
        return 1;
#define BS_ATOM_MAKE(name) p->atoms.name = enif_make_atom(env, #name);
    BS_ATOM_LIST(BS_ATOM_MAKE)
#undef BS_ATOM_MAKE
    p->session_type = enif_open_resource_type(env, NULL, "beamspy_session", session_dtor,
                                              ERL_NIF_RT_CREATE | ERL_NIF_RT_TAKEOVER, NULL);
    if (!p->session_type) {
        enif_free(p);
        return 1;
    }
    *priv = p;
    return 0;
}

static int upgrade(ErlNifEnv *env, void **priv, void **old_priv, ERL_NIF_TERM info)
{
    (void)old_priv;
    return load(env, priv, info);
}

static void unload(ErlNifEnv *env, void *priv)
{
    (void)env;
    enif_free(priv);
}

static ERL_NIF_TERM error_tuple(ErlNifEnv *env, const char *why)
{
    return enif_make_tuple2(env, bs_priv_of(env)->atoms.error, enif_make_atom(env, why));
}

ERL_NIF_TERM bs_errno_atom(ErlNifEnv *env, int e)
{
    switch (e) {
    case ENOENT: return enif_make_atom(env, "enoent");
    case EACCES: return enif_make_atom(env, "eacces");
    case EISDIR: return enif_make_atom(env, "eisdir");
    case ENOTDIR: return enif_make_atom(env, "enotdir");
    case ENOSPC: return enif_make_atom(env, "enospc");
    case EROFS: return enif_make_atom(env, "erofs");
    case ENAMETOOLONG: return enif_make_atom(env, "enametoolong");
    case EEXIST: return enif_make_atom(env, "eexist");
    default: return enif_make_atom(env, "eio");
    }
}

static int opt_u64(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key, ErlNifUInt64 *out)
{
    ERL_NIF_TERM v;
    return !enif_get_map_value(env, map, key, &v) || enif_get_uint64(env, v, out);
}

static int opt_bool(ErlNifEnv *env, ERL_NIF_TERM map, ERL_NIF_TERM key, int dflt)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM v;
    if (!enif_get_map_value(env, map, key, &v))
        return dflt;
    return v == a->true;
}

static bs_session *get_session(ErlNifEnv *env, ERL_NIF_TERM t)
{
    bs_session *s = NULL;
    return enif_get_resource(env, t, bs_priv_of(env)->session_type, (void **)&s) ? s : NULL;
}

/* Option compensate: false (raw times), or the calibrated cost of one event
 * per kind, #{call, return, sched, gc} and optionally tail_call, in ns
 * (beamspy_calibrate); absent
 * for recordings that trace nothing (telemetry spans only). Returns 0 or -1
 * (bad shape). */
#define BS_MAX_EVENT_COST_NS 100000u /* 100 µs: far above any measured cost */
static int compensate_option(ErlNifEnv *env, bs_session *s, ERL_NIF_TERM opts)
{
    ERL_NIF_TERM v;
    s->comp_state = BS_COMP_UNKNOWN;
    if (!enif_get_map_value(env, opts, enif_make_atom(env, "compensate"), &v))
        return 0;
    if (v == bs_priv_of(env)->atoms.false) {
        s->comp_state = BS_COMP_RAW;
        return 0;
    }
    static const char *const kinds[BS_EVENT_KINDS] = {"call", "return", "sched", "gc", "tail_call"};
    for (int k = 0; k < BS_EVENT_KINDS; k++) {
        ERL_NIF_TERM c;
        unsigned ns = 0;
        if (!enif_get_map_value(env, v, enif_make_atom(env, kinds[k]), &c)) {
            if (k == BS_EVENT_TAIL_CALL) /* optional: as a call */
                continue;
            return -1;
        }
        if (!enif_get_uint(env, c, &ns) || ns > BS_MAX_EVENT_COST_NS)
            return -1;
        s->comp_costs.ns[k] = ns;
    }
    s->comp_state = BS_COMP_APPLIED;
    return 0;
}

/* session_new(#{max_memory, max_processes, sleep, gc, caller, exclude,
 * compensate, ...}) */
static ERL_NIF_TERM session_new(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ErlNifUInt64 max_memory = 256u << 20, max_procs = 10000, max_spans = 0, max_events = 0;
    if (!enif_is_map(env, argv[0]) || !opt_u64(env, argv[0], a->max_memory, &max_memory) ||
        !opt_u64(env, argv[0], enif_make_atom(env, "timeline"), &max_spans) ||
        !opt_u64(env, argv[0], enif_make_atom(env, "max_events"), &max_events) ||
        !opt_u64(env, argv[0], a->max_processes, &max_procs) || max_procs == 0 || max_procs > (1u << 24))
        return enif_make_badarg(env);
    bs_session *s = enif_alloc_resource(bs_priv_of(env)->session_type, sizeof *s);
    if (!s)
        return error_tuple(env, "enomem");
    if (bs_session_init(s, (size_t)max_memory, (uint32_t)max_procs) < 0) {
        memset(s, 0, sizeof *s);
        enif_release_resource(s);
        return error_tuple(env, "enomem");
    }
    s->charge_sleep = opt_bool(env, argv[0], a->sleep, 1);
    s->charge_gc = opt_bool(env, argv[0], a->gc, 0);
    s->halt_hook = opt_bool(env, argv[0], a->halt_hook, 0);
    s->use_caller = opt_bool(env, argv[0], a->caller, 1);
    s->run_states = opt_bool(env, argv[0], enif_make_atom(env, "run_states"), 0);
    s->keep_timeline = max_spans > 0;
    if (compensate_option(env, s, argv[0]) < 0 || bs_span_session_opts(env, s, argv[0]) < 0) {
        enif_release_resource(s);
        return enif_make_badarg(env);
    }
    s->max_events = max_events;
    ERL_NIF_TERM capture, captures;
    if (enif_get_map_value(env, argv[0], a->capture, &capture)) {
        int n;
        const ERL_NIF_TERM *e;
        unsigned arity;
        ErlNifSInt64 count;
        if (!enif_get_tuple(env, capture, &n, &e) || n != 3 || !enif_is_atom(env, e[0]) ||
            !enif_is_atom(env, e[1]) || !enif_get_uint(env, e[2], &arity) || arity > 255 ||
            !enif_get_map_value(env, argv[0], a->captures, &captures) ||
            !enif_get_int64(env, captures, &count) || count <= 0) {
            enif_release_resource(s);
            return enif_make_badarg(env);
        }
        s->capture_mode = 1;
        s->capture_key = (bs_key){(uint64_t)e[0], (uint64_t)e[1], arity};
        atomic_store(&s->captures_left, count);
    }
    ERL_NIF_TERM owner;
    if (enif_get_map_value(env, argv[0], enif_make_atom(env, "owner"), &owner)) {
        if (!enif_get_local_pid(env, owner, &s->owner)) {
            enif_release_resource(s);
            return enif_make_badarg(env);
        }
        s->has_owner = 1;
    }
    bs_span_quota_init(&s->span_quota, max_spans);
    ERL_NIF_TERM excl, head;
    if (enif_get_map_value(env, argv[0], a->exclude, &excl)) {
        while (enif_get_list_cell(env, excl, &head, &excl) && s->n_excluded < BS_MAX_EXCLUDED)
            if (enif_is_atom(env, head))
                s->excluded[s->n_excluded++] = head;
    }
    ERL_NIF_TERM ignore;
    if (enif_get_map_value(env, argv[0], enif_make_atom(env, "ignore"), &ignore)) {
        ErlNifPid p;
        while (enif_get_list_cell(env, ignore, &head, &ignore) && s->n_ignored < BS_MAX_IGNORED)
            if (enif_get_local_pid(env, head, &p))
                s->ignored[s->n_ignored++] = (uint64_t)enif_make_pid(env, &p);
    }
    ERL_NIF_TERM cpu;
    int cpu_times = enif_get_map_value(env, argv[0], enif_make_atom(env, "cpu_times"), &cpu);
    if (cpu_times || enif_get_map_value(env, argv[0], enif_make_atom(env, "cpu"), &cpu)) {
        /* Last: it starts sampling (cpu_session.h). cpu_times => Hz: calls
         * are traced as usual and the samples give their self times. */
        unsigned hz;
        char why[768];
        if (!enif_get_uint(env, cpu, &hz) || (cpu_times && s->capture_mode)) {
            enif_release_resource(s);
            return enif_make_badarg(env);
        }
        int all = !cpu_times && opt_bool(env, argv[0], enif_make_atom(env, "cpu_all"), 0);
        /* cpu_join => registers: each sample names its process (r13), no
         * scheduling is traced; cpu_pids: the chosen processes known now
         * (their records are the set of processes whose samples are kept). */
        ERL_NIF_TERM join, pids;
        int by_regs = enif_get_map_value(env, argv[0], enif_make_atom(env, "cpu_join"), &join) &&
                      join == enif_make_atom(env, "registers");
        s->cpu_times = cpu_times;
        s->cpu = bs_cpu_open(env, s, hz, all, by_regs, why, sizeof why);
        if (s->cpu && enif_get_map_value(env, argv[0], enif_make_atom(env, "cpu_pids"), &pids)) {
            ErlNifPid p;
            uint64_t now = bs_now_ns();
            while (enif_get_list_cell(env, pids, &head, &pids))
                if (enif_get_local_pid(env, head, &p))
                    (void)bs_session_proc(env, s, (uint64_t)enif_make_pid(env, &p), now);
        }
        if (!s->cpu) {
            enif_release_resource(s);
            ErlNifBinary bin;
            size_t n = strlen(why);
            if (!enif_alloc_binary(n, &bin))
                return error_tuple(env, "enomem");
            memcpy(bin.data, why, n);
            return enif_make_tuple2(env, a->error,
                                    enif_make_tuple2(env, enif_make_atom(env, "cpu_unavailable"),
                                                     enif_make_binary(env, &bin)));
        }
    }
    ERL_NIF_TERM term = enif_make_resource(env, s);
    enif_release_resource(s);
    return term;
}

/* session_seed(Session, Pid, [{M, F, A}], Waiting, OwnCodeOnTop) — root
 * first. OwnCodeOnTop: frames of beamspy's own modules were above these
 * (left out), as in a process that profiles itself (stack_rebuild.h).
 * current_stacktrace never has more than 64 frames, so a small bound keeps
 * this on the stack. Waiting (the process was waiting in a receive when its
 * stack was read): it starts scheduled out, so its time until it next runs
 * is SLEEP, not time in its top frame (no `in'/`out' event comes before it
 * runs again). */
#define BS_MAX_SEED_FRAMES 256
static ERL_NIF_TERM session_seed(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    ErlNifPid pid;
    unsigned len;
    if (!s || !enif_get_local_pid(env, argv[1], &pid) || !enif_get_list_length(env, argv[2], &len) || len > BS_MAX_SEED_FRAMES)
        return enif_make_badarg(env);
    bs_key frames[BS_MAX_SEED_FRAMES];
    char waiting[8], own_code[8];
    if (enif_get_atom(env, argv[3], waiting, sizeof waiting, ERL_NIF_LATIN1) <= 0 ||
        (strcmp(waiting, "true") != 0 && strcmp(waiting, "false") != 0) ||
        enif_get_atom(env, argv[4], own_code, sizeof own_code, ERL_NIF_LATIN1) <= 0 ||
        (strcmp(own_code, "true") != 0 && strcmp(own_code, "false") != 0))
        return enif_make_badarg(env);
    ERL_NIF_TERM list = argv[2], head;
    unsigned n = 0;
    while (enif_get_list_cell(env, list, &head, &list)) {
        int arity;
        const ERL_NIF_TERM *e;
        unsigned ar;
        if (!enif_get_tuple(env, head, &arity, &e) || arity != 3 || !enif_is_atom(env, e[0]) ||
            !enif_is_atom(env, e[1]) || !enif_get_uint(env, e[2], &ar) || ar > 255)
            return enif_make_badarg(env);
        frames[n].module = (uint64_t)e[0];
        frames[n].function = (uint64_t)e[1];
        frames[n].arity = ar;
        n++;
    }
    uint64_t t = bs_now_ns();
    uint64_t key = (uint64_t)enif_make_pid(env, &pid);
    if (bs_session_is_ignored(s, key))
        return bs_priv_of(env)->atoms.ok;
    bs_traced_proc *r = bs_session_proc(env, s, key, t);
    if (!r)
        return error_tuple(env, "stopped");
    atomic_store(&r->busy, 1);
    int rc = atomic_load(&s->recording) ? bs_proc_seed(&r->proc, frames, n, own_code[0] == 't', t) : -1;
    if (rc == 0 && waiting[0] == 't')
        rc = bs_proc_sched_out(&r->proc, t);
    atomic_store(&r->busy, 0);
    return rc < 0 ? error_tuple(env, "stopped") : bs_priv_of(env)->atoms.ok;
}

/* session_stop(Session) or session_stop(Session, max_duration): the reason
 * (first one wins) shows as the profile's `truncated`. */
static ERL_NIF_TERM session_stop(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    bs_session *s = get_session(env, argv[0]);
    if (!s)
        return enif_make_badarg(env);
    int reason = BS_STOP_REQUESTED;
    if (argc == 2) {
        if (argv[1] == enif_make_atom(env, "max_duration"))
            reason = BS_STOP_MAX_DURATION;
        else if (argv[1] != enif_make_atom(env, "requested"))
            return enif_make_badarg(env);
    }
    bs_session_stop(s, reason, 1);
    bs_session_flush(s);
    return bs_priv_of(env)->atoms.ok;
}

/* session_prepare_halt(Session, [{Format, Path}], WriteOpts): what to write
 * when a process halts the VM (option until_halt); called again to refresh
 * the labels. */
static ERL_NIF_TERM session_prepare_halt(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    if (!s || !s->halt_hook || !enif_is_list(env, argv[1]) || !enif_is_map(env, argv[2]))
        return enif_make_badarg(env);
    return bs_halt_plan_set(s, argv[1], argv[2]) == 0 ? bs_priv_of(env)->atoms.ok : error_tuple(env, "enomem");
}

/* session_capturing(Session, Pid) -> boolean(): a captured call is running
 * in Pid (capture mode). */
static ERL_NIF_TERM session_capturing(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    ErlNifPid pid;
    if (!s || !enif_get_local_pid(env, argv[1], &pid))
        return enif_make_badarg(env);
    bs_traced_proc *r = bs_pid_table_find(&s->pids, (uint64_t)enif_make_pid(env, &pid));
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    return r && atomic_load(&r->capturing) ? a->true : a->false;
}

/* session_probe(Session, [{M, F, A}]) -> {CallbackNs, [SelfNs]}: for the
 * calling process, how long the tracer's callbacks took so far
 * (compensation on) and the self time recorded so far in frames of each
 * function; {0, [0...]} if it has no record. Read by the process itself,
 * whose callbacks write them on its own thread: beamspy_calibrate measures
 * with it what the engine charges to each kind of interval. */
static ERL_NIF_TERM session_probe(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    ErlNifPid self;
    unsigned n;
    if (!s || !enif_self(env, &self) || !enif_get_list_length(env, argv[1], &n) || n > 64)
        return enif_make_badarg(env);
    bs_traced_proc *r = bs_pid_table_find(&s->pids, (uint64_t)enif_make_pid(env, &self));
    ERL_NIF_TERM selfs[64], list = argv[1], head;
    for (unsigned i = 0; i < n && enif_get_list_cell(env, list, &head, &list); i++) {
        int arity_n;
        const ERL_NIF_TERM *e;
        unsigned arity;
        if (!enif_get_tuple(env, head, &arity_n, &e) || arity_n != 3 || !enif_get_uint(env, e[2], &arity))
            return enif_make_badarg(env);
        bs_key k = {(uint64_t)e[0], (uint64_t)e[1], arity};
        uint64_t sum = 0;
        for (uint32_t j = 1; r && j < r->proc.tree.n_nodes; j++)
            if (bs_key_eq(&r->proc.tree.nodes[j].key, &k))
                sum += r->proc.tree.nodes[j].self_ns;
        selfs[i] = enif_make_uint64(env, sum);
    }
    return enif_make_tuple2(env, enif_make_uint64(env, r ? r->proc.comp.callback_ns : 0),
                            enif_make_list_from_array(env, selfs, n));
}

static ERL_NIF_TERM session_pids(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    if (!s)
        return enif_make_badarg(env);
    ERL_NIF_TERM list = enif_make_list(env, 0);
    for (uint32_t i = 0; i < s->pids.cap; i++) {
        uint64_t pid = atomic_load(&s->pids.slots[i].pid);
        if (pid)
            list = enif_make_list_cell(env, (ERL_NIF_TERM)pid, list);
    }
    return list;
}

/* session_info(Session) -> #{recording, memory, memory_peak, truncated,
 * processes, events}, and once stopped compensation (profile_export.h) */
static ERL_NIF_TERM session_info(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    bs_session *s = get_session(env, argv[0]);
    if (!s)
        return enif_make_badarg(env);
    int reason = atomic_load(&s->stop_reason);
    const char *why = bs_stop_reason_name(reason);
    uint64_t events = atomic_load(&s->events_counted);
    ERL_NIF_TERM keys[] = {a->recording, a->memory, a->memory_peak, a->truncated, a->processes, a->events};
    ERL_NIF_TERM vals[] = {atomic_load(&s->recording) ? a->true : a->false,
                           enif_make_uint64(env, atomic_load(&s->budget.used)),
                           enif_make_uint64(env, atomic_load(&s->budget.peak)),
                           why[0] ? enif_make_atom(env, why) : a->false,
                           enif_make_uint(env, atomic_load(&s->pids.count)),
                           enif_make_uint64(env, events)};
    ERL_NIF_TERM map;
    enif_make_map_from_arrays(env, keys, vals, sizeof keys / sizeof keys[0], &map);
    if (!atomic_load(&s->recording)) {
        /* Stopped: wait for a callback still leaving a record (a limit stops
         * without waiting), then the counters are final. */
        bs_session_stop(s, BS_STOP_NONE, 1);
        (void)enif_make_map_put(env, map, enif_make_atom(env, "compensation"),
                                bs_session_compensation_term(env, s), &map);
    }
    return map;
}

static int export_with(ErlNifEnv *env, bs_session *s, const bs_write_request *req, bs_profile *p)
{
    if (bs_export_profile(env, s, req->names, req->labels, req->capture, p) < 0)
        return -1;
    p->meta = req->meta;
    return 0;
}

/* session_profile(Session, Opts) -> map (see beamspy:profile/2). Filters
 * of Opts (drop_sleep, merge_processes, include, exclude) apply. */
static ERL_NIF_TERM session_profile(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    bs_write_request req;
    if (!s || bs_write_request_decode(env, argv[1], &req) < 0)
        return enif_make_badarg(env);
    if (atomic_load(&s->recording))
        return error_tuple(env, "not_stopped");
    bs_profile p;
    if (export_with(env, s, &req, &p) < 0) {
        bs_profile_free(&p);
        return error_tuple(env, "enomem");
    }
    bs_filter f = {.drop_sleep = req.render.drop_sleep,
                   .drop_wait = req.render.drop_wait,
                   .order_by_cpu = req.render.order_by_cpu,
                   .merge_processes = req.render.merge_processes,
                   .collapse_recursion = req.render.collapse_recursion,
                   .include_re = req.render.include_re,
                   .exclude_re = req.render.exclude_re};
    if (bs_profile_filter(&p, &f) < 0) {
        bs_profile_free(&p);
        return error_tuple(env, "bad_filter");
    }
    ERL_NIF_TERM t = bs_profile_to_term(env, s, &p);
    bs_profile_free(&p);
    return t;
}

/* session_write(Session, Format, Path, Opts) -> ok | {ok, Warning} | {error, Reason}
 * ({ok, Warning} when Opts has report => true: the warning text, <<>> if none).
 * Format is one of writers.h's names; Opts carries rendering options and
 * metadata (see write_request.h). The file appears atomically or not at all. */
static ERL_NIF_TERM session_write(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    ErlNifBinary path_bin;
    char path[4096], format_name[32];
    bs_write_request req;
    if (!s || enif_get_atom(env, argv[1], format_name, sizeof format_name, ERL_NIF_LATIN1) <= 0 ||
        !enif_inspect_iolist_as_binary(env, argv[2], &path_bin) || path_bin.size == 0 ||
        path_bin.size >= sizeof path || memchr(path_bin.data, 0, path_bin.size) ||
        bs_write_request_decode(env, argv[3], &req) < 0)
        return enif_make_badarg(env);
    memcpy(path, path_bin.data, path_bin.size);
    path[path_bin.size] = '\0';
    if (atomic_load(&s->recording))
        return error_tuple(env, "not_stopped");
    bs_format format = bs_format_from_name(format_name);
    if (format == BS_FORMAT_UNKNOWN)
        return error_tuple(env, "unknown_format");
    char warning[1024];
    /* until_halt: a process halting the VM meanwhile waits for this write. */
    bs_halt_lock(s);
    int e = bs_write_session_file(env, s, format, path, &req, warning, sizeof warning);
    bs_halt_unlock(s);
    if (e == ENOMEM)
        return error_tuple(env, "enomem");
    if (e)
        return e == EINVAL ? error_tuple(env, "bad_filter_or_format") : enif_make_tuple2(env, bs_priv_of(env)->atoms.error, bs_errno_atom(env, e));
    if (req.report) {
        ErlNifBinary bin;
        size_t n = strlen(warning);
        if (!enif_alloc_binary(n, &bin))
            return error_tuple(env, "enomem");
        memcpy(bin.data, warning, n);
        return enif_make_tuple2(env, bs_priv_of(env)->atoms.ok, enif_make_binary(env, &bin));
    }
    return bs_priv_of(env)->atoms.ok;
}

/* session_encode(Session, Format, Opts) -> {ok, Binary} | {error, Reason}:
 * what session_write would write, as a binary (Format: any of writers.h's
 * names; Opts as session_write's). Nothing is written on the node; errors:
 * not_stopped, unknown_format, bad_filter_or_format, enomem, too_large
 * (over BS_MEMORY_OUTPUT_MAX). */
static ERL_NIF_TERM session_encode(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    bs_session *s = get_session(env, argv[0]);
    char format_name[32];
    bs_write_request req;
    if (!s || enif_get_atom(env, argv[1], format_name, sizeof format_name, ERL_NIF_LATIN1) <= 0 ||
        bs_write_request_decode(env, argv[2], &req) < 0)
        return enif_make_badarg(env);
    if (atomic_load(&s->recording))
        return error_tuple(env, "not_stopped");
    bs_format format = bs_format_from_name(format_name);
    if (format == BS_FORMAT_UNKNOWN)
        return error_tuple(env, "unknown_format");
    ERL_NIF_TERM bin;
    switch (bs_encode_session(env, s, format, &req, &bin)) {
    case 0: return enif_make_tuple2(env, bs_priv_of(env)->atoms.ok, bin);
    case EINVAL: return error_tuple(env, "bad_filter_or_format");
    case EFBIG: return error_tuple(env, "too_large");
    default: return error_tuple(env, "enomem");
    }
}

/* profile_render(Profile, Format, Opts) -> {ok, Binary} | {error, Reason}:
 * a profile term (as beamspy:profile/2 returns it) rendered in memory in
 * Format with the write options Opts. Reasons: {bad_profile, Text},
 * unknown_format, bad_filter_or_format, enomem, too_large. */
static ERL_NIF_TERM profile_render(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    char format_name[32], why[256];
    bs_write_request req;
    if (enif_get_atom(env, argv[1], format_name, sizeof format_name, ERL_NIF_LATIN1) <= 0 ||
        bs_write_request_decode(env, argv[2], &req) < 0)
        return enif_make_badarg(env);
    bs_format format = bs_format_from_name(format_name);
    if (format == BS_FORMAT_UNKNOWN)
        return error_tuple(env, "unknown_format");
    bs_profile p;
    if (bs_profile_from_term(env, argv[0], &p, why, sizeof why) < 0) {
        ERL_NIF_TERM text;
        size_t n = strlen(why);
        memcpy(enif_make_new_binary(env, n, &text), why, n);
        return enif_make_tuple2(env, bs_priv_of(env)->atoms.error,
                                enif_make_tuple2(env, enif_make_atom(env, "bad_profile"), text));
    }
    ERL_NIF_TERM bin;
    switch (bs_encode_profile(env, &p, format, &req, &bin)) {
    case 0: return enif_make_tuple2(env, bs_priv_of(env)->atoms.ok, bin);
    case EINVAL: return error_tuple(env, "bad_filter_or_format");
    case EFBIG: return error_tuple(env, "too_large");
    default: return error_tuple(env, "enomem");
    }
}

/* check_pattern(Pattern) -> ok | {error, Why}: whether an include/exclude
 * pattern compiles the way the writers will compile it (POSIX extended), so
 * option checking refuses it before anything is traced. */
static ERL_NIF_TERM check_pattern(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
    (void)argc;
    ErlNifBinary bin;
    char re[1024], why[128];
    if (!enif_inspect_iolist_as_binary(env, argv[0], &bin) || bin.size >= sizeof re ||
        memchr(bin.data, 0, bin.size))
        return enif_make_badarg(env);
    memcpy(re, bin.data, bin.size);
    re[bin.size] = '\0';
    if (bs_filter_check_pattern(re, why, sizeof why) == 0)
        return bs_priv_of(env)->atoms.ok;
    ERL_NIF_TERM text;
    size_t n = strlen(why);
    memcpy(enif_make_new_binary(env, n, &text), why, n);
    return enif_make_tuple2(env, bs_priv_of(env)->atoms.error, text);
}

static ErlNifFunc nif_funcs[] = {
    {"check_pattern", 1, check_pattern, 0},
    {"frame_name", 2, bs_nif_frame_name, 0},
    {"formats", 0, bs_nif_formats, 0},
    {"enabled", 3, bs_nif_enabled, 0},
    {"trace", 5, bs_nif_trace, 0},
    {"session_new", 1, session_new, 0},
    {"session_seed", 5, session_seed, 0},
    {"session_stop", 1, session_stop, 0},
    {"session_stop", 2, session_stop, 0},
    {"session_pids", 1, session_pids, 0},
    {"session_probe", 2, session_probe, 0},
    {"session_run_states", 3, bs_nif_session_run_states, 0},
    {"session_cpu_hot", 2, bs_nif_session_cpu_hot, 0},
    {"session_capturing", 2, session_capturing, 0},
    {"session_prepare_halt", 3, session_prepare_halt, 0},
    {"session_info", 1, session_info, 0},
    {"session_profile", 2, session_profile, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"session_write", 4, session_write, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"session_encode", 3, session_encode, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"profile_render", 3, profile_render, ERL_NIF_DIRTY_JOB_CPU_BOUND},
    {"seq_write", 3, bs_nif_seq_write, ERL_NIF_DIRTY_JOB_IO_BOUND},
    {"span_event", 3, bs_nif_span_event, 0},
    {"span_event", 4, bs_nif_span_event, 0},
    {"span_exit", 2, bs_nif_span_exit, 0},
    {"span_info", 1, bs_nif_span_info, 0},
};

ERL_NIF_INIT(beamspy_tracer, nif_funcs, load, NULL, upgrade, unload)
