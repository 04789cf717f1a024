/* call_tree.h — one process's aggregated call tree while recording.
 *
 * A node is (parent, frame); the path from a node to the root is a call stack.
 * Each node keeps the time spent running in exactly that stack (self) and how
 * many times the stack was entered (calls). Totals are derived when a profile
 * is built, so the hot path only touches one node. Node 0 is the root (the
 * process itself). Storage grows by doubling, charged to a bs_budget. */
#ifndef BS_CALL_TREE_H
#define BS_CALL_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "frame_key.h"

#define BS_NO_NODE UINT32_MAX

typedef struct bs_tree_node {
    bs_key key;
    uint32_t parent;
    uint32_t depth;
    uint64_t self_ns;
    uint64_t calls;
    uint64_t owed_ns;  /* tracer cost not yet taken from self_ns (compensation.h) */
} bs_tree_node;

typedef struct bs_call_tree {
    bs_tree_node *nodes;
    uint32_t n_nodes, cap_nodes;
    uint32_t *slots;       /* open addressing: (parent, key) -> node index */
    uint32_t cap_slots;    /* power of two */
    bs_budget *budget;
} bs_call_tree;

/* Returns 0, or -1 when the budget refuses the first allocation. */
int bs_call_tree_init(bs_call_tree *t, bs_budget *budget);
void bs_call_tree_free(bs_call_tree *t);
/* Gives the node array's unused room back to the budget (a tree that is
 * done growing, such as one capture of many: 2 nodes, not 64). It may
 * grow again; if realloc fails it stays as it was. */
void bs_call_tree_trim(bs_call_tree *t);

/* The child of parent for key, created if absent; BS_NO_NODE when the budget
 * refuses to grow. */
uint32_t bs_call_tree_child(bs_call_tree *t, uint32_t parent, const bs_key *key);

/* Bytes held by the tree (what it charged to its budget). */
size_t bs_call_tree_bytes(const bs_call_tree *t);

#endif
