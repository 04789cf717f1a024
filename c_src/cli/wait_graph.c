/* wait_graph.c — the wait-for graph of `beamspy dump` (see wait_graph.h):
 * processes and their wait targets taken from the dumps, targets matched
 * to processes by (node, pid) or (node, name), cycles found as strongly
 * connected components (Tarjan, iterative: a long chain must not exhaust
 * the C stack), then every blocked process's chain followed to its end. */
#include "wait_graph.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


/* The text or integer under key of a map the node sent ("" / 0 if absent). */
static const char *map_text(const bs_eterm *map, const char *key)
{
    const char *t = bs_eterm_text(bs_eterm_map_get(map, key));
    return t ? t : "";
}

static long long map_int(const bs_eterm *map, const char *key)
{
    return bs_eterm_int(bs_eterm_map_get(map, key), NULL);
}

/* ---- lookup of processes by (node, pid) and (node, name) ---------------- */

typedef struct lookup {
    size_t *slots; /* process index + 1, 0 = empty */
    unsigned char *by_name;
    size_t mask;
} lookup;

static uint64_t hash_key(const char *node, const char *key, int by_name)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)by_name;
    for (const char *s = node; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (const char *s = key; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static const char *key_of(const bs_wg_proc *p, int by_name)
{
    return by_name ? p->name : p->pid;
}

static int lookup_init(lookup *l, size_t n)
{
    size_t size = 16;
    while (size < 4 * n + 16)
        size *= 2;
    l->slots = calloc(size, sizeof *l->slots);
    l->by_name = calloc(size, 1);
    l->mask = size - 1;
    return l->slots && l->by_name ? 0 : -1;
}

static void lookup_free(lookup *l)
{
    free(l->slots);
    free(l->by_name);
}

static size_t lookup_find(const lookup *l, const bs_wg_proc *procs, const char *node, const char *key, int by_name)
{
    for (size_t i = hash_key(node, key, by_name) & l->mask;; i = (i + 1) & l->mask) {
        if (!l->slots[i])
            return BS_WG_NONE;
        const bs_wg_proc *p = &procs[l->slots[i] - 1];
        if (l->by_name[i] == by_name && strcmp(p->node, node) == 0 && strcmp(key_of(p, by_name), key) == 0)
            return l->slots[i] - 1;
    }
}

static void lookup_add(lookup *l, const bs_wg_proc *procs, size_t idx, int by_name)
{
    const bs_wg_proc *p = &procs[idx];
    const char *key = key_of(p, by_name);
    if (!key[0] || lookup_find(l, procs, p->node, key, by_name) != BS_WG_NONE)
        return;
    size_t i = hash_key(p->node, key, by_name) & l->mask;
    while (l->slots[i])
        i = (i + 1) & l->mask;
    l->slots[i] = idx + 1;
    l->by_name[i] = (unsigned char)by_name;
}

/* ---- collecting ---------------------------------------------------------- */

bs_wg_state bs_wg_state_of(const char *text)
{
    if (strcmp(text, "call") == 0)
        return BS_WG_CALL;
    if (strcmp(text, "busy") == 0)
        return BS_WG_BUSY;
    if (strcmp(text, "idle") == 0)
        return BS_WG_IDLE;
    if (strcmp(text, "receive") == 0)
        return BS_WG_RECEIVE;
    return BS_WG_RUNNING;
}

static void count(const bs_eterm *const *dumps, size_t n_dumps, size_t *procs, size_t *targets, int *truncated)
{
    *procs = *targets = 0;
    for (size_t d = 0; d < n_dumps; d++) {
        const bs_eterm *list = bs_eterm_map_get(dumps[d], "processes");
        for (size_t i = 0; i < bs_eterm_size(list); i++) {
            size_t t = bs_eterm_size(bs_eterm_map_get(bs_eterm_item(list, i), "waits_for"));
            if (*procs >= BS_WG_MAX_PROCESSES || *targets + t > BS_WG_MAX_TARGETS) {
                *truncated = 1;
                return;
            }
            (*procs)++;
            *targets += t;
        }
    }
}

static void collect(bs_wait_graph *g, const bs_eterm *const *dumps, size_t n_dumps, size_t max_procs)
{
    for (size_t d = 0; d < n_dumps; d++) {
        const char *node = map_text(dumps[d], "node");
        const bs_eterm *list = bs_eterm_map_get(dumps[d], "processes");
        for (size_t i = 0; i < bs_eterm_size(list) && g->n_procs < max_procs; i++) {
            const bs_eterm *m = bs_eterm_item(list, i);
            bs_wg_proc *p = &g->procs[g->n_procs++];
            memset(p, 0, sizeof *p);
            p->dump = m;
            p->node = node;
            p->pid = map_text(m, "pid");
            p->name = map_text(m, "name");
            p->interval_ms = map_int(dumps[d], "interval_ms");
            p->state = bs_wg_state_of(map_text(m, "state"));
            p->deadlock = p->next = BS_WG_NONE;
            p->first_target = g->n_targets;
            const bs_eterm *ws = bs_eterm_map_get(m, "waits_for");
            for (size_t k = 0; k < bs_eterm_size(ws); k++) {
                bs_wg_target *t = &g->targets[g->n_targets++];
                const bs_eterm *w = bs_eterm_item(ws, k);
                t->pid = map_text(w, "pid");
                t->name = map_text(w, "name");
                t->node = map_text(w, "node");
                t->proc = t->same_as = BS_WG_NONE;
                t->behind = 0;
                t->node_dumped = 0;
            }
            p->n_targets = g->n_targets - p->first_target;
        }
    }
}

static int resolve_targets(bs_wait_graph *g)
{
    lookup l;
    if (lookup_init(&l, g->n_procs) < 0) {
        lookup_free(&l);
        return -1;
    }
    for (size_t i = 0; i < g->n_procs; i++) {
        lookup_add(&l, g->procs, i, 0);
        lookup_add(&l, g->procs, i, 1);
    }
    for (size_t i = 0; i < g->n_targets; i++) {
        bs_wg_target *t = &g->targets[i];
        t->proc = t->pid[0] ? lookup_find(&l, g->procs, t->node, t->pid, 0)
                            : lookup_find(&l, g->procs, t->node, t->name, 1);
    }
    lookup_free(&l);
    /* Outside targets: the first target naming the same process stands for
     * all (few: a quadratic pass over them only). */
    size_t outside = 0;
    for (size_t i = 0; i < g->n_targets; i++) {
        bs_wg_target *t = &g->targets[i];
        if (t->proc != BS_WG_NONE)
            continue;
        t->same_as = i;
        for (size_t j = 0; j < i && outside < 4096; j++) {
            const bs_wg_target *u = &g->targets[j];
            if (u->proc == BS_WG_NONE && strcmp(u->node, t->node) == 0 && strcmp(u->pid, t->pid) == 0 &&
                strcmp(u->name, t->name) == 0) {
                t->same_as = u->same_as;
                break;
            }
        }
        outside++;
    }
    return 0;
}

/* ---- cycles: strongly connected components (Tarjan, iterative) ----------- */

static size_t edge_target(const bs_wait_graph *g, size_t v, size_t k)
{
    return g->targets[g->procs[v].first_target + k].proc;
}

static int has_self_edge(const bs_wait_graph *g, size_t v)
{
    for (size_t k = 0; k < g->procs[v].n_targets; k++)
        if (edge_target(g, v, k) == v)
            return 1;
    return 0;
}

/* Orders processes by node, then name (named ones first), then pid. */
static int proc_cmp(const bs_wg_proc *a, const bs_wg_proc *b)
{
    int c = strcmp(a->node, b->node);
    if (c)
        return c;
    if (!a->name[0] != !b->name[0])
        return a->name[0] ? -1 : 1;
    c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->pid, b->pid);
}

static void reverse(size_t *a, size_t from, size_t to)
{
    while (from + 1 < to) {
        size_t t = a[from];
        a[from++] = a[--to];
        a[to] = t;
    }
}

/* A cycle is printed from its smallest member, so that the same deadlock
 * reads the same whatever the order of the dump. */
static void rotate_to_smallest(const bs_wait_graph *g, size_t *cycle, size_t n)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (proc_cmp(&g->procs[cycle[i]], &g->procs[cycle[best]]) < 0)
            best = i;
    reverse(cycle, 0, best);
    reverse(cycle, best, n);
    reverse(cycle, 0, n);
}

/* The cycle of deadlock n_deadlocks (a component whose members are marked
 * with that index) from its member `start`: follow edges
 * that stay in the component until a process repeats. */
static int add_deadlock(bs_wait_graph *g, size_t start, size_t members, size_t *seen_at)
{
    size_t dl = g->n_deadlocks, first = g->n_cycle_members, v = start;
    while (seen_at[v] == BS_WG_NONE) {
        seen_at[v] = g->n_cycle_members;
        g->cycle_members[g->n_cycle_members++] = v;
        size_t next = BS_WG_NONE;
        for (size_t k = 0; k < g->procs[v].n_targets && next == BS_WG_NONE; k++) {
            size_t w = edge_target(g, v, k);
            if (w != BS_WG_NONE && g->procs[w].deadlock == dl)
                next = w;
        }
        if (next == BS_WG_NONE)
            return -1; /* cannot happen in a component */
        v = next;
    }
    size_t from = seen_at[v];
    /* Members before the loop's entry are in the knot, not on this cycle. */
    memmove(&g->cycle_members[first], &g->cycle_members[from], (g->n_cycle_members - from) * sizeof(size_t));
    g->n_cycle_members -= from - first;
    rotate_to_smallest(g, &g->cycle_members[first], g->n_cycle_members - first);
    g->deadlocks[dl] = (bs_wg_deadlock){first, g->n_cycle_members - first, members, 0};
    g->n_deadlocks++;
    return 0;
}

static int find_deadlocks(bs_wait_graph *g)
{
    size_t n = g->n_procs, counter = 0, sp = 0, cs = 0;
    size_t *index = malloc((n + 1) * sizeof *index), *low = malloc((n + 1) * sizeof *low);
    size_t *stack = malloc((n + 1) * sizeof *stack), *call_v = malloc((n + 1) * sizeof *call_v);
    size_t *call_k = malloc((n + 1) * sizeof *call_k), *seen_at = malloc((n + 1) * sizeof *seen_at);
    unsigned char *on_stack = calloc(n + 1, 1);
    g->deadlocks = malloc((n + 1) * sizeof *g->deadlocks);
    g->cycle_members = malloc((n + 1) * sizeof *g->cycle_members);
    int rc = -1;
    if (!index || !low || !stack || !call_v || !call_k || !seen_at || !on_stack || !g->deadlocks ||
        !g->cycle_members)
        goto out;
    for (size_t i = 0; i < n; i++)
        index[i] = seen_at[i] = BS_WG_NONE;
    for (size_t root = 0; root < n; root++) {
        if (index[root] != BS_WG_NONE || g->procs[root].n_targets == 0)
            continue;
        call_v[cs] = root, call_k[cs++] = 0;
        index[root] = low[root] = counter++;
        stack[sp++] = root, on_stack[root] = 1;
        while (cs) {
            size_t v = call_v[cs - 1];
            if (call_k[cs - 1] < g->procs[v].n_targets) {
                size_t w = edge_target(g, v, call_k[cs - 1]++);
                if (w == BS_WG_NONE)
                    continue;
                if (index[w] == BS_WG_NONE) {
                    index[w] = low[w] = counter++;
                    stack[sp++] = w, on_stack[w] = 1;
                    call_v[cs] = w, call_k[cs++] = 0;
                } else if (on_stack[w] && index[w] < low[v]) {
                    low[v] = index[w];
                }
                continue;
            }
            cs--;
            if (cs && low[v] < low[call_v[cs - 1]])
                low[call_v[cs - 1]] = low[v];
            if (low[v] != index[v])
                continue;
            /* v is the root of a component: pop it. */
            size_t top = sp;
            do {
                sp--;
                on_stack[stack[sp]] = 0;
            } while (stack[sp] != v);
            size_t members = top - sp;
            if (members > 1 || has_self_edge(g, v)) {
                for (size_t i = sp; i < top; i++)
                    g->procs[stack[i]].deadlock = g->n_deadlocks;
                size_t start = stack[sp];
                for (size_t i = sp; i < top; i++)
                    if (stack[i] < start)
                        start = stack[i];
                if (add_deadlock(g, start, members, seen_at) < 0)
                    goto out;
            }
        }
    }
    rc = 0;
out:
    free(index), free(low), free(stack), free(call_v), free(call_k), free(seen_at), free(on_stack);
    return rc;
}

/* ---- chains -------------------------------------------------------------- */

/* The target a blocked process's chain goes on to: one in a deadlock
 * first, then one that is blocked itself, then any in the dumps, then an
 * outside one (its target index + n_procs). */
static size_t chain_step(const bs_wait_graph *g, size_t v, size_t *outside)
{
    size_t best = BS_WG_NONE;
    int best_rank = 0;
    *outside = BS_WG_NONE;
    for (size_t k = 0; k < g->procs[v].n_targets; k++) {
        size_t w = edge_target(g, v, k);
        if (w == BS_WG_NONE) {
            if (*outside == BS_WG_NONE)
                *outside = g->procs[v].first_target + k;
            continue;
        }
        int rank = g->procs[w].deadlock != BS_WG_NONE ? 3 : g->procs[w].n_targets ? 2 : 1;
        if (rank > best_rank)
            best = w, best_rank = rank;
    }
    return best;
}

static void follow_chains(bs_wait_graph *g)
{
    for (size_t v = 0; v < g->n_procs; v++) {
        bs_wg_proc *p = &g->procs[v];
        if (p->deadlock != BS_WG_NONE) {
            p->root_kind = BS_WG_ROOT_DEADLOCK;
            p->root = p->deadlock;
        } else if (p->n_targets) {
            size_t outside;
            p->next = chain_step(g, v, &outside);
            if (p->next == BS_WG_NONE) {
                p->root_kind = BS_WG_ROOT_OUTSIDE;
                p->root = g->targets[outside].same_as;
            }
        }
    }
    /* Outside the components the graph has no cycle, so following `next`
     * ends; each walk stops at the first process whose root is known. */
    for (size_t v = 0; v < g->n_procs; v++) {
        bs_wg_proc *p = &g->procs[v];
        if (p->next == BS_WG_NONE || p->root_kind != BS_WG_ROOT_NONE)
            continue;
        size_t w = v, steps = 0;
        while (g->procs[w].next != BS_WG_NONE && g->procs[w].root_kind == BS_WG_ROOT_NONE && steps++ < g->n_procs)
            w = g->procs[w].next;
        bs_wg_root_kind kind = g->procs[w].root_kind;
        size_t root = g->procs[w].root;
        if (kind == BS_WG_ROOT_NONE || kind == BS_WG_ROOT_DEADLOCK) {
            /* w ends the chain: a process that is not blocked, or one in a
             * deadlock (then the chain's root is that deadlock). */
            if (kind == BS_WG_ROOT_NONE)
                kind = BS_WG_ROOT_PROCESS, root = w;
        }
        for (size_t u = v; u != w && g->procs[u].root_kind == BS_WG_ROOT_NONE; u = g->procs[u].next) {
            g->procs[u].root_kind = kind;
            g->procs[u].root = root;
        }
    }
    for (size_t v = 0; v < g->n_procs; v++) {
        bs_wg_proc *p = &g->procs[v];
        if (p->next != BS_WG_NONE)
            g->procs[p->next].waited_on++;
        if (p->deadlock != BS_WG_NONE || p->root_kind == BS_WG_ROOT_NONE)
            continue;
        g->blocked++;
        if (p->root_kind == BS_WG_ROOT_DEADLOCK)
            g->deadlocks[p->root].behind++;
        else if (p->root_kind == BS_WG_ROOT_PROCESS)
            g->procs[p->root].behind++;
        else
            g->targets[p->root].behind++;
    }
}

/* ---- API ----------------------------------------------------------------- */

int bs_wait_graph_build(bs_wait_graph *g, const bs_eterm *const *dumps, size_t n_dumps)
{
    memset(g, 0, sizeof *g);
    size_t n_procs, n_targets;
    count(dumps, n_dumps, &n_procs, &n_targets, &g->truncated);
    g->procs = malloc((n_procs + 1) * sizeof *g->procs);
    g->targets = malloc((n_targets + 1) * sizeof *g->targets);
    if (!g->procs || !g->targets)
        goto fail;
    collect(g, dumps, n_dumps, n_procs);
    for (size_t i = 0; i < g->n_targets; i++)
        for (size_t d = 0; d < n_dumps && !g->targets[i].node_dumped; d++)
            g->targets[i].node_dumped = strcmp(g->targets[i].node, map_text(dumps[d], "node")) == 0;
    if (resolve_targets(g) < 0 || find_deadlocks(g) < 0)
        goto fail;
    follow_chains(g);
    return 0;
fail:
    bs_wait_graph_free(g);
    return -1;
}

void bs_wait_graph_free(bs_wait_graph *g)
{
    free(g->procs);
    free(g->targets);
    free(g->deadlocks);
    free(g->cycle_members);
    memset(g, 0, sizeof *g);
}
