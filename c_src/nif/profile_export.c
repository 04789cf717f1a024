/* profile_export.c — builds the engine profile from a stopped session.
 *
 * Runs on a dirty scheduler after bs_session_stop has waited for every
 * callback, so process records are read without locks. Recording keys are
 * atom terms; they are named here, once per distinct frame of each process. */
#include "profile_export.h"

#include <stdio.h>
#include <string.h>

#include "cpu_session.h"
#include "name_nif.h"
#include "nif_atoms.h"
#include "span_nif.h"

typedef struct namer_ctx {
    ErlNifEnv *env;
    bs_name_style style;
    const bs_cpu *cpu;
} namer_ctx;

static int name_key(void *vctx, const bs_key *k, char *buf, size_t cap)
{
    namer_ctx *ctx = vctx;
    if (k->module == BS_CPU_FRAME_MODULE && ctx->cpu) /* a sampled frame (cpu_session.h) */
        return bs_cpu_frame_name(ctx->cpu, k->function, ctx->style, buf, cap);
    if (bs_key_is_span(k)) /* a telemetry span: its name is an atom, [my_app.repo.query] */
        return (int)bs_nif_atom_text(ctx->env, (ERL_NIF_TERM)k->function, buf, cap);
    char mod[1024], fun[1024];
    size_t ml = bs_nif_atom_text(ctx->env, (ERL_NIF_TERM)k->module, mod, sizeof mod);
    size_t fl = bs_nif_atom_text(ctx->env, (ERL_NIF_TERM)k->function, fun, sizeof fun);
    return (int)bs_format_mfa(buf, cap, ctx->style, mod, ml, fun, fl, k->arity);
}

/* The process's label (see bs_nif_label) in the profile's style, or its
 * pid. */
static void label_of(ErlNifEnv *env, ERL_NIF_TERM labels, bs_name_style style, ERL_NIF_TERM pid, char *buf,
                     size_t cap)
{
    ERL_NIF_TERM v;
    if (enif_is_map(env, labels) && enif_get_map_value(env, labels, pid, &v) &&
        bs_nif_label(env, v, style, buf, cap) > 0)
        return;
    enif_snprintf(buf, cap, "%T", pid);
}

/* Captures of one process, oldest first (the list is newest first). A loop
 * over an array of the list's nodes, not a recursion: a process can hold
 * any number of captures (--calls 100000), and this runs on a dirty
 * scheduler's stack. Returns -1 when out of memory. */
static int add_captures(bs_profile *out, const bs_capture *head, const char *label, unsigned only,
                        namer_ctx *ctx)
{
    size_t n = 0;
    for (const bs_capture *c = head; c; c = c->next)
        n++;
    if (!n)
        return 0;
    const bs_capture **order = enif_alloc(n * sizeof *order);
    if (!order)
        return -1;
    size_t i = n;
    for (const bs_capture *c = head; c; c = c->next)
        order[--i] = c;
    int rc = 0;
    char name[600];
    for (i = 0; i < n && rc == 0; i++) {
        if (only && order[i]->index != only)
            continue;
        snprintf(name, sizeof name, "%s (call %u)", label, order[i]->index);
        rc = bs_profile_add_proc(out, &order[i]->proc, name, name_key, ctx) < 0 ? -1 : 0;
    }
    enif_free(order);
    return rc;
}

int bs_export_profile(ErlNifEnv *env, bs_session *s, bs_name_style style, ERL_NIF_TERM labels,
                      unsigned capture, bs_profile *out)
{
    if (bs_profile_init(out) < 0)
        return -1;
    out->compensation.state = s->comp_state;
    if (s->comp_state == BS_COMP_APPLIED)
        memcpy(out->compensation.ns, s->comp_costs.ns, sizeof out->compensation.ns);
    namer_ctx ctx = {env, style, s->cpu};
    char label[512];
    /* times => samples: the process of each tree, for its samples */
    uint64_t *tree_pids = s->cpu_times ? enif_alloc((s->pids.cap ? s->pids.cap : 1) * sizeof *tree_pids) : NULL;
    if (s->cpu_times && !tree_pids)
        return -1;
    for (uint32_t i = 0; i < s->pids.cap; i++) {
        bs_traced_proc *r = atomic_load(&s->pids.slots[i].record);
        if (!r)
            continue;
        label_of(env, labels, style, (ERL_NIF_TERM)r->pid, label, sizeof label);
        if (!s->capture_mode) {
            if (tree_pids && out->n_trees < s->pids.cap)
                tree_pids[out->n_trees] = r->pid;
            if (bs_profile_add_proc(out, &r->proc, label, name_key, &ctx) < 0) {
                enif_free(tree_pids);
                return -1;
            }
            continue;
        }
        if (add_captures(out, r->captures, label, capture, &ctx) < 0)
            return -1;
        if (atomic_load(&r->capturing) && (!capture || capture == r->capture_index)) {
            char name[600];
            snprintf(name, sizeof name, "%s (call %u, incomplete)", label, r->capture_index);
            if (bs_profile_add_proc(out, &r->proc, name, name_key, &ctx) < 0)
                return -1;
        }
    }
    int reason = atomic_load(&s->stop_reason);
    if (reason != BS_STOP_NONE && reason != BS_STOP_REQUESTED)
        bs_profile_set_truncated(out, bs_stop_reason_name(reason));
    bs_span_notes(s, out->notes, sizeof out->notes);
    if (tree_pids) { /* after the notes: it adds one */
        int rc = bs_cpu_traced_export(s->cpu, out, tree_pids, out->n_trees, name_key, &ctx);
        enif_free(tree_pids);
        if (rc < 0)
            return -1;
    } else if (s->cpu && bs_cpu_export(s->cpu, out, name_key, &ctx) < 0) /* after the notes: it adds one */
        return -1;
    out->duration_ns = (s->stop_ns ? s->stop_ns : bs_now_ns()) - s->start_ns;
    out->start_ns = s->start_ns;
    out->has_timeline = s->keep_timeline;
    bs_profile_compute_totals(out);
    return 0;
}

static ERL_NIF_TERM make_string(ErlNifEnv *env, const char *s)
{
    ERL_NIF_TERM t;
    size_t n = strlen(s);
    unsigned char *d = enif_make_new_binary(env, n, &t);
    memcpy(d, s, n);
    return t;
}

/* #{state => applied | raw | unknown, call/return/sched/gc/tail_call => ns per event,
 * events => compensated events, subtracted_ns, text => the outputs' line}. */
static ERL_NIF_TERM compensation_term(ErlNifEnv *env, const bs_compensation *c, const char *own_text)
{
    static const char *const states[] = {"unknown", "raw", "applied"};
    char text[BS_COMPENSATION_TEXT_CAP];
    if (own_text)
        snprintf(text, sizeof text, "%s", own_text);
    else
        bs_compensation_text(c, text, sizeof text);
    uint64_t events = 0;
    for (int k = 0; k < BS_EVENT_KINDS; k++)
        events += c->events[k];
    ERL_NIF_TERM keys[] = {enif_make_atom(env, "state"), enif_make_atom(env, "call"), enif_make_atom(env, "return"),
                           enif_make_atom(env, "sched"), enif_make_atom(env, "gc"),
                           enif_make_atom(env, "tail_call"), enif_make_atom(env, "events"),
                           enif_make_atom(env, "subtracted_ns"), enif_make_atom(env, "text")};
    ERL_NIF_TERM vals[] = {enif_make_atom(env, states[c->state]), enif_make_uint(env, c->ns[BS_EVENT_CALL]),
                           enif_make_uint(env, c->ns[BS_EVENT_RETURN]), enif_make_uint(env, c->ns[BS_EVENT_SCHED]),
                           enif_make_uint(env, c->ns[BS_EVENT_GC]), enif_make_uint(env, c->ns[BS_EVENT_TAIL_CALL]),
                           enif_make_uint64(env, events),
                           enif_make_uint64(env, c->subtracted_ns), make_string(env, text)};
    ERL_NIF_TERM map;
    if (!enif_make_map_from_arrays(env, keys, vals, sizeof keys / sizeof keys[0], &map))
        return enif_make_atom(env, "undefined");
    return map;
}

ERL_NIF_TERM bs_profile_to_term(ErlNifEnv *env, const bs_session *s, const bs_profile *p)
{
    const bs_atoms *a = &bs_priv_of(env)->atoms;
    ERL_NIF_TERM *names = enif_alloc(sizeof(ERL_NIF_TERM) * (p->frames.n ? p->frames.n : 1));
    if (!names)
        return enif_make_tuple2(env, a->error, a->enomem);
    for (uint32_t i = 0; i < p->frames.n; i++)
        names[i] = make_string(env, bs_frame_name(&p->frames, i));
    ERL_NIF_TERM procs = enif_make_list(env, 0);
    uint64_t events = 0, dropped = 0;
    for (uint32_t ti = p->n_trees; ti-- > 0;) {
        const bs_ptree *t = &p->trees[ti];
        events += t->events;
        dropped += t->dropped;
        ERL_NIF_TERM nodes = enif_make_list(env, 0);
        for (uint32_t i = t->n_nodes; i-- > 0;) {
            const bs_pnode *n = &t->nodes[i];
            ERL_NIF_TERM parent = n->parent == UINT32_MAX ? a->undefined : enif_make_uint(env, n->parent);
            ERL_NIF_TERM node = enif_make_tuple6(env, enif_make_uint(env, i), parent, names[n->frame],
                                                 enif_make_uint64(env, n->self_ns), enif_make_uint64(env, n->total_ns),
                                                 enif_make_uint64(env, n->calls));
            nodes = enif_make_list_cell(env, node, nodes);
        }
        procs = enif_make_list_cell(env, enif_make_tuple2(env, names[t->nodes[0].frame], nodes), procs);
    }
    enif_free(names);
    ERL_NIF_TERM keys[] = {a->processes, a->truncated, a->events, a->dropped, a->memory_peak, a->duration_ns,
                           enif_make_atom(env, "timeline"), enif_make_atom(env, "timeline_truncated"),
                           enif_make_atom(env, "compensation"), enif_make_atom(env, "unit"),
                           enif_make_atom(env, "notes")};
    ERL_NIF_TERM vals[] = {procs, p->truncated[0] ? enif_make_atom(env, p->truncated) : a->false,
                           enif_make_uint64(env, events), enif_make_uint64(env, dropped),
                           enif_make_uint64(env, atomic_load(&((bs_session *)s)->budget.peak)),
                           enif_make_uint64(env, p->duration_ns),
                           p->has_timeline ? a->true : a->false,
                           p->timeline_truncated ? a->true : a->false,
                           compensation_term(env, &p->compensation, NULL),
                           enif_make_atom(env, p->unit == BS_UNIT_COUNT ? "samples" : "ns"),
                           make_string(env, p->notes)};
    ERL_NIF_TERM map;
    if (!enif_make_map_from_arrays(env, keys, vals, sizeof keys / sizeof keys[0], &map))
        return enif_make_tuple2(env, a->error, a->badarg);
    return map;
}

ERL_NIF_TERM bs_session_compensation_term(ErlNifEnv *env, bs_session *s)
{
    bs_compensation c = {.state = s->comp_state};
    if (s->comp_state == BS_COMP_APPLIED)
        memcpy(c.ns, s->comp_costs.ns, sizeof c.ns);
    for (uint32_t i = 0; i < s->pids.cap; i++) {
        const bs_traced_proc *r = atomic_load(&s->pids.slots[i].record);
        if (!r)
            continue;
        bs_compensation_add(&c, &r->proc.comp);
        for (const bs_capture *k = r->captures; k; k = k->next)
            bs_compensation_add(&c, &k->proc.comp);
    }
    char text[256];
    if (s->cpu_times) /* what the tool says of the times (beamspy_report) */
        snprintf(text, sizeof text,
                 "self times from CPU samples taken beside the trace at %u Hz, not traced times (the "
                 "outputs' notes say how many samples, and the tracer's share of the CPU)",
                 bs_cpu_hz(s->cpu));
    return compensation_term(env, &c, s->cpu_times ? text : NULL);
}
