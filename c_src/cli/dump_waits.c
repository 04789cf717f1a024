/* dump_waits.c — prints the wait-for graph of `beamspy dump` (see
 * dump_waits.h). Chains are printed from the processes nobody waits for,
 * at most CHAINS_SHOWN per root cause and UNKNOWN_SHOWN waits whose target
 * is unknown; the counts are always complete. */
#include "dump_waits.h"

#include <stdlib.h>
#include <string.h>

#include "../common/json_escape.h"
#include "dump_names.h"
#include "remote.h"

#define CHAINS_SHOWN 10
#define UNKNOWN_SHOWN 20
#define LABEL_MAX 1200

/* ---- labels -------------------------------------------------------------- */

static const char *label(char *buf, size_t cap, const char *pid, const char *name, const char *node,
                         const bs_dump_style *st)
{
    char n[600];
    if (name[0])
        bs_dump_name(name, st->elixir, n, sizeof n);
    else
        snprintf(n, sizeof n, "%s", pid);
    if (st->several_nodes)
        snprintf(buf, cap, "%s on %s", n, node);
    else
        snprintf(buf, cap, "%s", n);
    return buf;
}

static const char *proc_label(char *buf, size_t cap, const bs_wg_proc *p, const bs_dump_style *st)
{
    return label(buf, cap, p->pid, p->name, p->node, st);
}

/* "<0.90.0> name" (or the pid alone), then " on node" with several nodes. */
static const char *full_label(char *buf, size_t cap, const bs_wg_proc *p, const bs_dump_style *st)
{
    char n[600];
    if (!p->name[0])
        return proc_label(buf, cap, p, st);
    snprintf(buf, cap, "%s %s", p->pid, proc_label(n, sizeof n, p, st));
    return buf;
}

static const char *current(const bs_wg_proc *p, const bs_dump_style *st, char *buf, size_t cap)
{
    return bs_dump_frame(bs_eterm_map_get(p->dump, "current"), st->elixir, buf, cap);
}

static const char *outside_why(const bs_wg_target *t, char *buf, size_t cap)
{
    if (t->node_dumped)
        snprintf(buf, cap, "on %s, not among the processes dumped (--pid/--name)", t->node);
    else
        snprintf(buf, cap, "on %s, which is not in this dump: give --node %s to follow it", t->node, t->node);
    return buf;
}

/* Why a process that ends a chain holds the others up (long form). */
static const char *why(const bs_wg_proc *p, const bs_dump_style *st, char *buf, size_t cap)
{
    char buf_cur[600];
    const char *cur = current(p, st, buf_cur, sizeof buf_cur);
    switch (p->state) {
    case BS_WG_BUSY:
        snprintf(buf, cap, "busy in %s: %lld reductions in %lld ms", cur, bs_term_int(p->dump, "reductions_delta"),
                 p->interval_ms);
        break;
    case BS_WG_RECEIVE:
        snprintf(buf, cap, "waiting in a receive in %s, message queue %lld: what for cannot be told", cur,
                 bs_term_int(p->dump, "message_queue_len"));
        break;
    case BS_WG_IDLE:
        snprintf(buf, cap, "idle in %s, message queue %lld", cur, bs_term_int(p->dump, "message_queue_len"));
        break;
    case BS_WG_CALL:
        snprintf(buf, cap, "waiting for a reply in %s from a process that cannot be told: %s", cur,
                 bs_term_text(p->dump, "wait_note"));
        break;
    default:
        snprintf(buf, cap, "running in %s (%lld reductions in %lld ms)", cur, bs_term_int(p->dump, "reductions_delta"),
                 p->interval_ms);
    }
    return buf;
}

/* The same in a word or two, at the end of a chain line. */
static const char *why_short(const bs_wg_proc *p)
{
    switch (p->state) {
    case BS_WG_BUSY:
        return "busy";
    case BS_WG_RECEIVE:
        return "in a receive";
    case BS_WG_IDLE:
        return "idle";
    case BS_WG_CALL:
        return "waiting for an unknown process";
    default:
        return "running";
    }
}

/* ---- text ---------------------------------------------------------------- */

void bs_dump_print_stack(FILE *out, const bs_eterm *process, int indent, int elixir)
{
    char frame[2048];
    const bs_eterm *stack = bs_eterm_map_get(process, "stack");
    for (size_t i = 0; i < bs_eterm_size(stack); i++) {
        fprintf(out, "%*s%s\n", indent, "", bs_dump_frame(bs_eterm_item(stack, i), elixir, frame, sizeof frame));
    }
    if (bs_eterm_size(stack) == 0)
        fprintf(out, "%*s(no stack: %s)\n", indent, "",
                bs_dump_frame(bs_eterm_map_get(process, "current"), elixir, frame, sizeof frame));
    if (bs_eterm_is_atom(bs_eterm_map_get(process, "stack_complete"), "false"))
        fprintf(out, "%*s... (deeper frames not shown)\n", indent, "");
}

/* "waiting for a reply in F (called from G)" from p's reply_wait (the
 * node sends where the call waits and who made it, as frames), or NULL
 * when p waits for no reply. */
static const char *reply_wait_text(const bs_wg_proc *p, int elixir, char *buf, size_t cap)
{
    const bs_eterm *w = bs_eterm_map_get(p->dump, "reply_wait");
    if (!w || bs_eterm_kind_of(w) != BS_ET_MAP)
        return NULL;
    char in[600], from[600];
    const bs_eterm *caller = bs_eterm_map_get(w, "called_from");
    bs_dump_frame(bs_eterm_map_get(w, "in"), elixir, in, sizeof in);
    if (!caller || bs_eterm_is_atom(caller, "none"))
        snprintf(buf, cap, "waiting for a reply in %s", in);
    else
        snprintf(buf, cap, "waiting for a reply in %s (called from %s)", in,
                 bs_dump_frame(caller, elixir, from, sizeof from));
    return buf;
}

/* "a -> b -> c" from v to the end of its chain, then the end's tag. */
static void print_chain(FILE *out, const bs_wait_graph *g, size_t v, const bs_dump_style *st)
{
    char l[LABEL_MAX];
    size_t steps = 0;
    fputs(proc_label(l, sizeof l, &g->procs[v], st), out);
    while (g->procs[v].next != BS_WG_NONE && steps++ < g->n_procs) {
        v = g->procs[v].next;
        fprintf(out, " -> %s", proc_label(l, sizeof l, &g->procs[v], st));
        if (g->procs[v].deadlock != BS_WG_NONE) {
            fputs(" (in a deadlock)", out);
            break;
        }
        if (g->procs[v].next == BS_WG_NONE && g->procs[v].root_kind == BS_WG_ROOT_NONE)
            fprintf(out, " (%s)", why_short(&g->procs[v]));
    }
    const bs_wg_proc *p = &g->procs[v];
    if (p->root_kind == BS_WG_ROOT_OUTSIDE && p->next == BS_WG_NONE) {
        const bs_wg_target *t = &g->targets[p->root];
        fprintf(out, " -> %s (not in this dump)", label(l, sizeof l, t->pid, t->name, t->node, st));
    }
    fputc('\n', out);
}

/* The chains that end at one root: from every blocked process nobody
 * waits for. */
static void print_chains(FILE *out, const bs_wait_graph *g, bs_wg_root_kind kind, size_t root, size_t total,
                         const bs_dump_style *st)
{
    size_t shown = 0, leaves = 0;
    fprintf(out, "  %zu process%s blocked behind it:\n", total, total == 1 ? "" : "es");
    for (size_t v = 0; v < g->n_procs; v++) {
        const bs_wg_proc *p = &g->procs[v];
        if (p->root_kind != kind || p->root != root || p->deadlock != BS_WG_NONE || p->waited_on)
            continue;
        leaves++;
        if (shown < CHAINS_SHOWN) {
            fputs("    ", out);
            print_chain(out, g, v, st);
            shown++;
        }
    }
    if (leaves > shown)
        fprintf(out, "    (%zu more chains)\n", leaves - shown);
}

static void print_deadlock(FILE *out, const bs_wait_graph *g, size_t d, const bs_dump_style *st)
{
    const bs_wg_deadlock *dl = &g->deadlocks[d];
    char l[LABEL_MAX], n[LABEL_MAX];
    fputs("DEADLOCK: ", out);
    for (size_t i = 0; i < dl->length; i++)
        fprintf(out, "%s -> ", proc_label(l, sizeof l, &g->procs[g->cycle_members[dl->first + i]], st));
    fprintf(out, "%s\n", proc_label(l, sizeof l, &g->procs[g->cycle_members[dl->first]], st));
    if (dl->members > dl->length)
        fprintf(out, "  (%zu more processes wait inside the same knot of calls)\n", dl->members - dl->length);
    for (size_t i = 0; i < dl->length; i++) {
        const bs_wg_proc *p = &g->procs[g->cycle_members[dl->first + i]];
        const bs_wg_proc *q = &g->procs[g->cycle_members[dl->first + (i + 1) % dl->length]];
        char rt[1400];
        const char *r = reply_wait_text(p, st->elixir, rt, sizeof rt);
        fprintf(out, "  %s waits for %s%s%s\n", full_label(l, sizeof l, p, st), proc_label(n, sizeof n, q, st),
                r ? ": " : "", r ? r : "");
        bs_dump_print_stack(out, p->dump, 6, st->elixir);
    }
    if (dl->behind)
        print_chains(out, g, BS_WG_ROOT_DEADLOCK, d, dl->behind, st);
    fputc('\n', out);
}

static const bs_wait_graph *sort_graph;

static int by_behind(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    size_t bx = sort_graph->procs[x].behind, by = sort_graph->procs[y].behind;
    return bx != by ? (bx < by ? 1 : -1) : (x < y ? -1 : x > y);
}

void bs_dump_waits_text(FILE *out, const bs_wait_graph *g, const bs_dump_style *st)
{
    char l[LABEL_MAX], w[2048];
    for (size_t d = 0; d < g->n_deadlocks; d++)
        print_deadlock(out, g, d, st);
    size_t n_roots = 0, *roots = malloc((g->n_procs + 1) * sizeof *roots);
    if (roots) {
        for (size_t v = 0; v < g->n_procs; v++)
            if (g->procs[v].behind)
                roots[n_roots++] = v;
        sort_graph = g;
        qsort(roots, n_roots, sizeof *roots, by_behind);
        for (size_t i = 0; i < n_roots; i++) {
            const bs_wg_proc *p = &g->procs[roots[i]];
            fprintf(out, "BLOCKED behind %s (%s)\n", full_label(l, sizeof l, p, st), why(p, st, w, sizeof w));
            print_chains(out, g, BS_WG_ROOT_PROCESS, roots[i], p->behind, st);
            fputc('\n', out);
        }
        free(roots);
    } else {
        fputs("(out of memory: the chains of blocked processes are not shown)\n\n", out);
    }
    for (size_t t = 0; t < g->n_targets; t++) {
        const bs_wg_target *x = &g->targets[t];
        if (!x->behind)
            continue;
        fprintf(out, "BLOCKED behind %s (%s)\n", label(l, sizeof l, x->pid, x->name, x->node, st),
                outside_why(x, w, sizeof w));
        print_chains(out, g, BS_WG_ROOT_OUTSIDE, t, x->behind, st);
        fputc('\n', out);
    }
    size_t unknown = 0;
    for (size_t v = 0; v < g->n_procs; v++) {
        const bs_wg_proc *p = &g->procs[v];
        if (p->state != BS_WG_CALL || p->n_targets || p->behind)
            continue;
        if (unknown++ < UNKNOWN_SHOWN)
            fprintf(out, "WAITING %s: %s\n", full_label(l, sizeof l, p, st), why(p, st, w, sizeof w));
    }
    if (unknown > UNKNOWN_SHOWN)
        fprintf(out, "(%zu more waits whose target cannot be told)\n", unknown - UNKNOWN_SHOWN);
    if (unknown)
        fputc('\n', out);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_key(FILE *out, const char *key, const char *value)
{
    bs_json_write_string(out, key);
    fputc(':', out);
    bs_json_write_string(out, value);
}

static void json_ident(FILE *out, const char *pid, const char *name, const char *node, const bs_dump_style *st)
{
    char n[600];
    json_key(out, "pid", pid);
    fputc(',', out);
    json_key(out, "name", bs_dump_name(name, st->elixir, n, sizeof n));
    fputc(',', out);
    json_key(out, "node", node);
}

static void json_proc(FILE *out, const bs_wg_proc *p, const bs_dump_style *st)
{
    fputc('{', out);
    json_ident(out, p->pid, p->name, p->node, st);
    fputc('}', out);
}

static void json_chain(FILE *out, const bs_wait_graph *g, size_t v, const bs_dump_style *st)
{
    char l[LABEL_MAX];
    size_t steps = 0;
    fputs("\"chain\":[", out);
    bs_json_write_string(out, proc_label(l, sizeof l, &g->procs[v], st));
    while (g->procs[v].next != BS_WG_NONE && steps++ < g->n_procs) {
        v = g->procs[v].next;
        fputc(',', out);
        bs_json_write_string(out, proc_label(l, sizeof l, &g->procs[v], st));
        if (g->procs[v].deadlock != BS_WG_NONE)
            break;
    }
    fputc(']', out);
}

static void json_blocked_by(FILE *out, const bs_wait_graph *g, const bs_wg_proc *p, const bs_dump_style *st)
{
    char w[2048];
    fputs("\"blocked_by\":", out);
    switch (p->root_kind) {
    case BS_WG_ROOT_DEADLOCK:
        fprintf(out, "{\"deadlock\":%zu}", p->root);
        break;
    case BS_WG_ROOT_PROCESS: {
        const bs_wg_proc *r = &g->procs[p->root];
        fputc('{', out);
        json_ident(out, r->pid, r->name, r->node, st);
        fputc(',', out);
        json_key(out, "state", bs_term_text(r->dump, "state"));
        fputc(',', out);
        json_key(out, "why", why(r, st, w, sizeof w));
        fprintf(out, ",\"blocked_behind\":%zu}", r->behind);
        break;
    }
    case BS_WG_ROOT_OUTSIDE: {
        const bs_wg_target *t = &g->targets[p->root];
        fputc('{', out);
        json_ident(out, t->pid, t->name, t->node, st);
        fputc(',', out);
        json_key(out, "state", "not_dumped");
        fputc(',', out);
        json_key(out, "why", outside_why(t, w, sizeof w));
        fprintf(out, ",\"blocked_behind\":%zu}", t->behind);
        break;
    }
    default:
        fputs("null", out);
    }
}

void bs_dump_waits_json(FILE *out, const bs_wait_graph *g, const bs_dump_style *st)
{
    char cur[600];
    fputs("\"deadlocks\":[", out);
    for (size_t d = 0; d < g->n_deadlocks; d++) {
        const bs_wg_deadlock *dl = &g->deadlocks[d];
        fprintf(out, "%s{\"cycle\":[", d ? ",\n" : "");
        for (size_t i = 0; i < dl->length; i++) {
            if (i)
                fputc(',', out);
            json_proc(out, &g->procs[g->cycle_members[dl->first + i]], st);
        }
        fprintf(out, "],\"members\":%zu,\"blocked_behind\":%zu}", dl->members, dl->behind);
    }
    fputs("],\n\"waits\":[", out);
    int first = 1;
    for (size_t v = 0; v < g->n_procs; v++) {
        const bs_wg_proc *p = &g->procs[v];
        if (p->state != BS_WG_CALL)
            continue;
        fputs(first ? "{" : ",\n{", out);
        first = 0;
        json_ident(out, p->pid, p->name, p->node, st);
        fputc(',', out);
        json_key(out, "in", current(p, st, cur, sizeof cur));
        fputs(",\"waits_for\":[", out);
        for (size_t k = 0; k < p->n_targets; k++) {
            const bs_wg_target *t = &g->targets[p->first_target + k];
            fputs(k ? ",{" : "{", out);
            json_ident(out, t->pid, t->name, t->node, st);
            fprintf(out, ",\"in_dump\":%s}", t->proc != BS_WG_NONE ? "true" : "false");
        }
        fputs("],\"unknown\":", out);
        if (p->n_targets)
            fputs("null", out);
        else
            bs_json_write_string(out, bs_term_text(p->dump, "wait_note"));
        fputs(",\"deadlock\":", out);
        if (p->deadlock != BS_WG_NONE)
            fprintf(out, "%zu", p->deadlock);
        else
            fputs("null", out);
        fputc(',', out);
        json_blocked_by(out, g, p, st);
        fputc(',', out);
        json_chain(out, g, v, st);
        fputc('}', out);
    }
    fputs("]", out);
}
