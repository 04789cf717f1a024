/* tree_build.h — a profile tree grown one stack at a time (readers only).
 *
 * Readers of stack-per-line input walk each stack from the root and need
 * "the child of node P for frame F, created if absent" hundreds of millions
 * of times, over trees of tens of millions of nodes, where each cache miss
 * costs more than everything else. Nodes are bs_pnode from the start, so
 * finishing a tree hands over the array without a copy. While building, a
 * node's total_ns holds its first child and calls says whether its children
 * are in the hash table: a node with one child finds it through that link
 * (one miss), a node with more through an open-addressing table whose
 * entries hold the whole key (parent, frame, node: one miss, no node read).
 * A child of a node created by the same stack cannot exist yet, so it is
 * appended without any search (bs_tree_build_new_child) and, being an only
 * child, needs no table entry: a stack of new frames costs sequential
 * writes only. */
#ifndef BS_TREE_BUILD_H
#define BS_TREE_BUILD_H

#include <stdint.h>

#include "../engine/profile.h"

#define BS_TB_NONE UINT32_MAX

typedef struct bs_tb_slot {
    uint32_t parent, frame, node, used;
} bs_tb_slot;

typedef struct bs_tree_build {
    bs_pnode *nodes;
    uint32_t n, cap;
    bs_tb_slot *slots;  /* children of nodes with more than one child */
    uint32_t n_slotted, cap_slots;
    int synthetic_root;
} bs_tree_build;

/* Starts a tree whose node 0 has frame root. Returns 0 or -1 (memory). */
int bs_tree_build_init(bs_tree_build *t, uint32_t root_frame, int synthetic_root);
void bs_tree_build_free(bs_tree_build *t);

/* The child of parent for frame; created if absent, and then *fresh = 1.
 * BS_TB_NONE when memory (or the 2^31 node limit) runs out. */
uint32_t bs_tree_build_child(bs_tree_build *t, uint32_t parent, uint32_t frame, int *fresh);

/* A child of a node created by the current stack (it has no children yet). */
uint32_t bs_tree_build_new_child(bs_tree_build *t, uint32_t parent, uint32_t frame);

/* Moves the nodes into out (parents before children, self_ns as added,
 * total_ns 0 until bs_profile_compute_totals, calls 0) and frees the rest. */
void bs_tree_build_finish(bs_tree_build *t, bs_ptree *out);

#endif
