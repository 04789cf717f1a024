/* wait_graph.h — who waits for whom, from the dumps of one or several nodes
 * (`beamspy dump`): the wait-for graph, its cycles (deadlocks) and, for
 * every blocked process, the end of its chain (the root cause).
 *
 * Input: each node's dump as beamspy_dump sends it; a process in state
 * "call" lists in "waits_for" the processes it waits for (pid as its own
 * node prints it, name, node). Processes are matched across dumps by
 * (node, pid), or (node, name) when only a name is known, so a cycle
 * through two nodes is one cycle. Nothing is guessed: a wait whose target
 * the node could not tell has no edge.
 *
 * Caps (bounded memory): at most BS_WG_MAX_PROCESSES processes and
 * BS_WG_MAX_TARGETS wait targets are taken, in dump order; beyond them
 * `truncated` is set and the caller says so. The graph points into the
 * dumps (it copies no text): keep them alive while it is used. */
#ifndef BS_WAIT_GRAPH_H
#define BS_WAIT_GRAPH_H

#include <stddef.h>

#include "../dist/eterm.h"

#define BS_WG_MAX_PROCESSES 1000000u
#define BS_WG_MAX_TARGETS 2000000u
#define BS_WG_NONE ((size_t)-1)

typedef enum { BS_WG_CALL, BS_WG_BUSY, BS_WG_IDLE, BS_WG_RECEIVE, BS_WG_RUNNING } bs_wg_state;

/* Where a blocked process's chain ends. */
typedef enum {
    BS_WG_ROOT_NONE,     /* not blocked: not waiting for a known process */
    BS_WG_ROOT_DEADLOCK, /* root = deadlock index */
    BS_WG_ROOT_PROCESS,  /* root = process index (busy, stuck, ...) */
    BS_WG_ROOT_OUTSIDE   /* root = target index: a process not in the dumps */
} bs_wg_root_kind;

typedef struct bs_wg_target {
    const char *pid, *name, *node; /* pid "" when only a name is known */
    size_t proc;                   /* index in procs, or BS_WG_NONE */
    size_t same_as;                /* first target naming the same outside process */
    size_t behind;                 /* as a root (same_as itself): processes blocked behind it */
    int node_dumped;               /* its node is one of the dumps (the process was left out) */
} bs_wg_target;

typedef struct bs_wg_proc {
    const bs_eterm *dump; /* the process's map in its node's dump */
    const char *node, *pid, *name;
    long long interval_ms; /* of its node's dump */
    bs_wg_state state;
    size_t first_target, n_targets;
    size_t deadlock;      /* index of the deadlock it is part of, or BS_WG_NONE */
    size_t next;          /* blocked: the process it waits for in its chain, or BS_WG_NONE */
    bs_wg_root_kind root_kind;
    size_t root;
    size_t behind;        /* as a root: processes blocked behind it */
    size_t waited_on;     /* blocked processes whose chain goes on to it */
} bs_wg_proc;

typedef struct bs_wg_deadlock {
    size_t first, length; /* the cycle, in order, in cycle_members */
    size_t members;       /* processes of the knot (>= length) */
    size_t behind;        /* other processes blocked behind it */
} bs_wg_deadlock;

typedef struct bs_wait_graph {
    bs_wg_proc *procs;
    size_t n_procs;
    bs_wg_target *targets;
    size_t n_targets;
    bs_wg_deadlock *deadlocks;
    size_t n_deadlocks;
    size_t *cycle_members;
    size_t n_cycle_members;
    size_t blocked;       /* processes with a root */
    int truncated;        /* a cap was hit */
} bs_wait_graph;

/* Builds and analyses the graph of the dumps (each a dump map as the node
 * sends it: node, processes). 0, or -1 when memory ran out (g is then
 * empty). */
int bs_wait_graph_build(bs_wait_graph *g, const bs_eterm *const *dumps, size_t n_dumps);
void bs_wait_graph_free(bs_wait_graph *g);

/* The state of a process as the node spells it ("call", "busy", ...). */
bs_wg_state bs_wg_state_of(const char *text);

#endif
