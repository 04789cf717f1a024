/* profile.h — the profile model every writer reads.
 *
 * A profile is a frame table plus one call tree per process. In a tree, node 0
 * is the process itself (its frame is the process label, `<0.80.0>` or
 * `<0.80.0> my_server`) and every node's parent has a smaller index, so totals
 * are computed in one backward pass and a forward pass visits parents first.
 * Times are nanoseconds. */
#ifndef BS_PROFILE_H
#define BS_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "frame_table.h"
#include "stack_rebuild.h"

typedef struct bs_pnode {
    uint32_t parent; /* UINT32_MAX for the root */
    uint32_t frame;  /* id in the profile's frame table */
    uint64_t self_ns;
    uint64_t total_ns;
    uint64_t calls;
} bs_pnode;

typedef struct bs_ptree {
    bs_pnode *nodes;
    uint32_t n_nodes;
    uint64_t events;
    uint64_t dropped;
} bs_ptree;

typedef struct bs_profile {
    bs_frame_table frames;
    bs_ptree *trees;
    uint32_t n_trees, cap_trees;
    uint32_t sleep_frame, gc_frame; /* ids of the pseudo frames */
    char truncated[128];            /* "" or why recording stopped early */
    uint64_t duration_ns;
} bs_profile;

/* Turns a recording key into text; returns the length written (< cap) or -1. */
typedef int (*bs_key_namer)(void *ctx, const bs_key *key, char *buf, size_t cap);

int bs_profile_init(bs_profile *p);
void bs_profile_free(bs_profile *p);

/* Adds a recorded process as a new tree whose root frame is label. Pseudo keys
 * become SLEEP and GC; other keys are named by namer. Returns 0 or -1. */
int bs_profile_add_proc(bs_profile *p, const bs_proc *proc, const char *label, bs_key_namer namer, void *ctx);

/* Adds an empty tree rooted at label (readers fill it through bs_profile_add_path). */
int bs_profile_add_tree(bs_profile *p, const char *label);

/* Computes total_ns of every node of every tree from the self times. */
void bs_profile_compute_totals(bs_profile *p);

/* Merges all trees into one whose root is `label`: stacks equal below their
 * process frame are summed. The result replaces the trees of p. */
int bs_profile_merge_processes(bs_profile *p, const char *label);

void bs_profile_set_truncated(bs_profile *p, const char *reason);

#endif
