/* profile_import.c — the profile term back into an engine profile (see
 * profile_import.h). Every shape is checked: the term comes from a user. */
#include "profile_import.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A binary or iolist as a NUL-terminated name; -1 if it is neither, holds
 * a NUL or is too long. */
static int get_text(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t cap)
{
    ErlNifBinary bin;
    if (!enif_inspect_iolist_as_binary(env, t, &bin) || bin.size >= cap || memchr(bin.data, 0, bin.size))
        return -1;
    memcpy(buf, bin.data, bin.size);
    buf[bin.size] = '\0';
    return 0;
}

/* Says why in why, frees out, returns -1. */
static int fail(bs_profile *out, char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    bs_profile_free(out);
    return -1;
}

static int add_process(ErlNifEnv *env, ERL_NIF_TERM proc, unsigned pi, bs_profile *out, uint64_t *budget,
                       char *why, size_t cap)
{
    const ERL_NIF_TERM *pt, *nt;
    int arity;
    unsigned n;
    char name[1024];
    if (!enif_get_tuple(env, proc, &arity, &pt) || arity != 2 || get_text(env, pt[0], name, sizeof name) < 0 ||
        !enif_get_list_length(env, pt[1], &n) || n == 0)
        return fail(out, why, cap, "process %u is not {Label, [Node, ...]}", pi + 1);
    if (n > *budget)
        return fail(out, why, cap, "more than %u nodes (process %u)", BS_IMPORT_MAX_NODES, pi + 1);
    *budget -= n;
    bs_ptree *t = bs_profile_new_tree(out, name, n);
    if (!t)
        return fail(out, why, cap, "out of memory (process %u)", pi + 1);
    ERL_NIF_TERM list = pt[1], head;
    for (unsigned i = 0; enif_get_list_cell(env, list, &head, &list); i++) {
        unsigned id, parent;
        ErlNifUInt64 self, total, calls;
        if (!enif_get_tuple(env, head, &arity, &nt) || arity != 6 || !enif_get_uint(env, nt[0], &id) || id != i ||
            !enif_get_uint64(env, nt[3], &self) || !enif_get_uint64(env, nt[4], &total) ||
            !enif_get_uint64(env, nt[5], &calls) || get_text(env, nt[2], name, sizeof name) < 0)
            return fail(out, why, cap, "process %u, node %u: not {Id, Parent, Frame, SelfNs, TotalNs, Calls} "
                        "with Id the node's position", pi + 1, i);
        if (i == 0) {
            if (!enif_is_atom(env, nt[1]))
                return fail(out, why, cap, "process %u: node 0 must have no parent (undefined)", pi + 1);
        } else if (!enif_get_uint(env, nt[1], &parent) || parent >= i) {
            return fail(out, why, cap, "process %u, node %u: its parent must be an earlier node", pi + 1, i);
        } else {
            uint32_t frame = bs_profile_intern(out, name);
            if (frame == UINT32_MAX)
                return fail(out, why, cap, "out of memory (process %u, node %u)", pi + 1, i);
            t->nodes[i].parent = parent;
            t->nodes[i].frame = frame;
        }
        (void)total;
        t->nodes[i].self_ns = self;
        t->nodes[i].calls = calls;
    }
    return 0;
}

/* compensation => #{state, call, return, sched, gc, events, subtracted_ns}
 * (and tail_call, optional)
 * as bs_profile_to_term gives it; anything else leaves it unknown (a
 * profile made by hand says nothing about its times). */
static void import_compensation(ErlNifEnv *env, ERL_NIF_TERM map, bs_compensation *c)
{
    static const char *const kinds[BS_EVENT_KINDS] = {"call", "return", "sched", "gc", "tail_call"};
    ERL_NIF_TERM v;
    char state[16];
    ErlNifUInt64 subtracted, events;
    if (!enif_is_map(env, map) || !enif_get_map_value(env, map, enif_make_atom(env, "state"), &v) ||
        enif_get_atom(env, v, state, sizeof state, ERL_NIF_LATIN1) <= 0 ||
        !enif_get_map_value(env, map, enif_make_atom(env, "subtracted_ns"), &v) ||
        !enif_get_uint64(env, v, &subtracted) ||
        !enif_get_map_value(env, map, enif_make_atom(env, "events"), &v) || !enif_get_uint64(env, v, &events))
        return;
    bs_compensation in = {.subtracted_ns = subtracted};
    if (strcmp(state, "applied") == 0)
        in.state = BS_COMP_APPLIED;
    else if (strcmp(state, "raw") == 0)
        in.state = BS_COMP_RAW;
    else
        return;
    for (int k = 0; k < BS_EVENT_KINDS; k++) {
        unsigned ns = 0;
        int found = enif_get_map_value(env, map, enif_make_atom(env, kinds[k]), &v);
        if (found ? !enif_get_uint(env, v, &ns) : k != BS_EVENT_TAIL_CALL) /* tail_call: optional */
            return;
        in.ns[k] = ns;
    }
    in.events[BS_EVENT_CALL] = events; /* the term keeps the total only */
    *c = in;
}

int bs_profile_from_term(ErlNifEnv *env, ERL_NIF_TERM term, bs_profile *out, char *why, size_t why_cap)
{
    if (bs_profile_init(out) < 0) {
        snprintf(why, why_cap, "out of memory");
        return -1;
    }
    ERL_NIF_TERM procs, v;
    if (!enif_is_map(env, term) || !enif_get_map_value(env, term, enif_make_atom(env, "processes"), &procs) ||
        !enif_is_list(env, procs))
        return fail(out, why, why_cap, "not a profile: a map with processes => [...] is expected");
    uint64_t budget = BS_IMPORT_MAX_NODES;
    ERL_NIF_TERM head;
    for (unsigned pi = 0; enif_get_list_cell(env, procs, &head, &procs); pi++)
        if (add_process(env, head, pi, out, &budget, why, why_cap) < 0)
            return -1;
    char atom[128];
    if (enif_get_map_value(env, term, enif_make_atom(env, "truncated"), &v) &&
        enif_get_atom(env, v, atom, sizeof atom, ERL_NIF_LATIN1) > 0 && strcmp(atom, "false") != 0)
        bs_profile_set_truncated(out, atom);
    ErlNifUInt64 duration;
    if (enif_get_map_value(env, term, enif_make_atom(env, "duration_ns"), &v) && enif_get_uint64(env, v, &duration))
        out->duration_ns = duration;
    if (enif_get_map_value(env, term, enif_make_atom(env, "compensation"), &v))
        import_compensation(env, v, &out->compensation);
    /* Totals follow from the self times (a profile edited by hand stays
     * consistent in every writer). */
    bs_profile_compute_totals(out);
    return 0;
}
