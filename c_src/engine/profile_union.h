/* profile_union.h — laying profiles onto one call tree, so that equal
 * stacks of different profiles (or of two trees of one process) become one
 * node: what concatenating their folded texts would give.
 *
 * Frames are matched by name (each profile has its own frame ids), and the
 * names are interned in a frame table the caller chooses (the profile being
 * built, or a table of the union's own). The union only makes the nodes:
 * adding a tree returns the union node of each of its nodes, and the
 * caller sums whatever it keeps per node (self times, calls, the before and
 * after of a diff) in arrays of its own. Used by `beamspy render a b ...`
 * (several inputs as one profile) and by both diff writers. */
#ifndef BS_PROFILE_UNION_H
#define BS_PROFILE_UNION_H

#include <stddef.h>
#include <stdint.h>

#include "call_tree.h"
#include "profile.h"

typedef struct bs_profile_union {
    bs_frame_table *frames; /* where names are interned (not owned) */
    bs_call_tree tree;      /* key.module = frame id + 1; node 0 the root */
} bs_profile_union;

/* 0, or -1 when out of memory. */
int bs_profile_union_init(bs_profile_union *u, bs_frame_table *frames);
void bs_profile_union_free(bs_profile_union *u);

/* The child of node parent named name, made if new; BS_NO_NODE when out of
 * memory. */
uint32_t bs_profile_union_child(bs_profile_union *u, uint32_t parent, const char *name);

/* The frame id (in u->frames) of a union node other than the root. */
static inline uint32_t bs_profile_union_frame(const bs_profile_union *u, uint32_t node)
{
    return (uint32_t)(u->tree.nodes[node].key.module - 1);
}

/* Lays tree t of profile p onto u: t's root onto union node `root`, every
 * other node onto the child, named as its frame, of its parent's union
 * node. node_of (t->n_nodes entries) gets each node's union node; with
 * drop_sched_out, the scheduled-out pseudo-frames (SLEEP, WAIT, ...) and
 * what is under them get BS_NO_NODE. -1 when out of memory or when t is
 * malformed (a parent after its child, a frame p does not have). Never
 * recurses: any depth is laid in one pass. */
int bs_profile_union_add_tree(bs_profile_union *u, const bs_profile *p, const bs_ptree *t, uint32_t root,
                              int drop_sched_out, uint32_t *node_of);

/* The union node that pairs a process's tree across runs: the root for a
 * tree with a synthetic root, else the child of the root named by the
 * process's label with its pid left out (bs_label_without_pid).
 * BS_NO_NODE when out of memory. */
uint32_t bs_profile_union_process_node(bs_profile_union *u, const bs_profile *p, const bs_ptree *t);

/* "<0.85.0> my_server" -> "<process> my_server", "<0.85.0>" -> "<process>",
 * any other label as it is: pids differ between runs, what the process is
 * does not. Cut to cap - 1 bytes. */
void bs_label_without_pid(const char *label, char *buf, size_t cap);

#endif
