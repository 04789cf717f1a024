/* sampled_times.h — traced call trees whose self times come from CPU
 * samples (option times => samples).
 *
 * A trace gives exact call counts and stacks; its times carry the tracer's
 * own cost. The CPU sampler, running beside it, measures where the CPU
 * went. This puts the two together for one process's tree: the self time of
 * each node of function F becomes
 *
 *     samples(F) x ns_per_sample x self_traced(node) / sum of self_traced(F's nodes)
 *
 * so that the per-function CPU shares are the sampler's and, within a
 * function, the split across call sites follows the trace (by calls when the
 * traced self times of F are all 0, evenly when the calls are too).
 *
 * A sample is given as the chain of its Erlang functions, innermost first,
 * in the profile's frame ids. It goes to the innermost function of the chain
 * that a node of the tree holds: its own function when traced (`charged'),
 * else the nearest traced caller (`to_caller'). A chain with no such
 * function (or none at all) is charged to the process's root node
 * (`untraced'). Nodes whose frame is marked in keep (WAIT, RUNNABLE, SLEEP,
 * GC: not CPU time of a function) keep their traced times. Pure: no
 * allocation; the caller's scratch arrays are left as found. */
#ifndef BS_SAMPLED_TIMES_H
#define BS_SAMPLED_TIMES_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

typedef struct bs_sample_chain {
    const uint32_t *frames; /* innermost first; UINT32_MAX: a frame the profile does not hold */
    uint32_t n;
    uint64_t count;
} bs_sample_chain;

typedef struct bs_sampled_stats {
    uint64_t charged;   /* samples charged to their own function's nodes */
    uint64_t to_caller; /* samples of an untraced function, charged to its nearest traced caller */
    uint64_t untraced;  /* samples reaching no traced function: charged to the process */
} bs_sampled_stats;

/* Per frame id of the profile (n_frames entries each), zeroed by the
 * caller once and zero again on return. */
typedef struct bs_sampled_scratch {
    uint32_t n_frames;
    uint64_t *traced_self; /* sum of the traced self times of the frame's nodes */
    uint64_t *calls;       /* sum of their calls */
    uint64_t *nodes;       /* how many nodes hold the frame */
    uint64_t *samples;     /* samples charged to the frame */
} bs_sampled_scratch;

/* Rewrites the self times of t (total_ns is left to
 * bs_profile_compute_totals). keep: n_frames flags, or NULL. Adds to *st.
 * Returns 0, or -1 when a frame id of t is not below scratch->n_frames. */
int bs_sampled_times_apply(bs_ptree *t, const unsigned char *keep, const bs_sample_chain *chains,
                           size_t n_chains, uint64_t ns_per_sample, bs_sampled_scratch *scratch,
                           bs_sampled_stats *st);

#endif
