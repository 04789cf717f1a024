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

/* One entry into a frame, for time-ordered views. Within a tree, spans are
 * sorted by (start, depth) and properly nested. */
typedef struct bs_pspan {
    uint32_t node;
    uint64_t start_ns;
    uint64_t end_ns;
} bs_pspan;

/* Text attached to one span of the timeline (telemetry metadata, an
 * exception's kind and reason), found by (node, start). */
typedef struct bs_pnote {
    uint32_t node;
    uint32_t seq;      /* order of attachment */
    uint64_t start_ns;
    char *text;
} bs_pnote;

typedef struct bs_ptree {
    bs_pnode *nodes;
    uint32_t n_nodes;
    int synthetic_root;/* node 0 is not a frame (folded input without a process
                          frame): writers start stacks at its children */
    bs_pspan *spans;   /* NULL when no timeline was kept */
    uint32_t n_spans;
    uint64_t events;
    uint64_t dropped;
    bs_pnote *notes;   /* sorted by (start, node, seq); NULL when none */
    uint32_t n_notes;
} bs_ptree;

/* What the numbers in self_ns/total_ns are. */
typedef enum bs_unit {
    BS_UNIT_NS = 0,   /* recorded time in nanoseconds */
    BS_UNIT_COUNT     /* unitless weights (samples), e.g. read from folded input */
} bs_unit;

/* Where and how a profile was taken; kept by the .bspy format. */
typedef struct bs_profile_meta {
    char node[256];          /* Erlang node name, "" if unknown */
    char otp_release[32];    /* e.g. "25" */
    char source[256];        /* what was profiled: "beamspy:apply(...)", input file... */
    char options[2048];      /* options it was taken with, as text (a longer text ends
                                with "... (N more characters)", text_fit.h) */
    int64_t start_unix_us;   /* wall-clock start, microseconds since the epoch; 0 unknown */
} bs_profile_meta;

typedef struct bs_profile {
    bs_frame_table frames;
    bs_unit unit;
    bs_profile_meta meta;
    bs_ptree *trees;
    uint32_t n_trees, cap_trees;
    uint32_t sleep_frame, gc_frame; /* ids of the pseudo frames */
    uint32_t wait_frame;            /* scheduled out waiting in a receive */
    uint32_t runnable_frame;        /* scheduled out while able to run */
    char truncated[128];            /* "" or why recording stopped early */
    char notes[2048];               /* "" or what else a reader must know (telemetry spans
                                       dropped, unmatched, CPU samples ...); kept by
                                       .bspy (section NOTE) */
    uint64_t start_ns;              /* session start (same clock as spans) */
    uint64_t duration_ns;
    int has_timeline;               /* spans were recorded */
    int timeline_truncated;         /* some calls are not in the timeline */
    int ordered_by_cpu;             /* trees are by running time (filter order_by_cpu):
                                       writers keep that order for processes */
    bs_compensation compensation;   /* whether tracer cost was subtracted, and how much */
    uint64_t timeline_cap;          /* 0, or the cap a writer applied to this copy (span_cap.h) */
    uint64_t spans_capped;          /* spans that cap left out of the file */
} bs_profile;

/* Turns a recording key into text; returns the length written (< cap) or -1. */
typedef int (*bs_key_namer)(void *ctx, const bs_key *key, char *buf, size_t cap);

int bs_profile_init(bs_profile *p);

/* Whether frame is time scheduled out: SLEEP, WAIT or RUNNABLE. */
static inline int bs_profile_is_sched_out(const bs_profile *p, uint32_t frame)
{
    return frame == p->sleep_frame || frame == p->wait_frame || frame == p->runnable_frame;
}
void bs_profile_free(bs_profile *p);

/* Adds a recorded process as a new tree whose root frame is label. Pseudo keys
 * become SLEEP, WAIT, RUNNABLE and GC; other keys are named by namer. Its
 * compensation bookkeeping is added to the profile's. Returns 0 or -1. */
int bs_profile_add_proc(bs_profile *p, const bs_proc *proc, const char *label, bs_key_namer namer, void *ctx);

/* Interns a frame name (made safe for every format as the recorder's are);
 * UINT32_MAX when out of memory. */
uint32_t bs_profile_intern(bs_profile *p, const char *name);

/* The id of a frame name (made safe as bs_profile_intern makes it), or
 * UINT32_MAX when no frame of p has it. */
uint32_t bs_profile_find_frame(const bs_profile *p, const char *name);

/* Adds a tree of n_nodes zeroed nodes whose node 0 is the process rooted at
 * label, for a caller that fills in the others (parents before children).
 * NULL when out of memory or n_nodes is 0. */
bs_ptree *bs_profile_new_tree(bs_profile *p, const char *label, uint32_t n_nodes);

/* Adds an empty tree rooted at label (readers fill it through bs_profile_add_path). */
int bs_profile_add_tree(bs_profile *p, const char *label);

/* Computes total_ns of every node of every tree from the self times. */
void bs_profile_compute_totals(bs_profile *p);

/* Merges all trees into one whose root is `label`: stacks equal below their
 * process frame are summed. The result replaces the trees of p. */
int bs_profile_merge_processes(bs_profile *p, const char *label);

void bs_profile_set_truncated(bs_profile *p, const char *reason);

/* The notes of the span (node, start): how many, and the first in *first. */
uint32_t bs_ptree_notes(const bs_ptree *t, uint32_t node, uint64_t start_ns, const bs_pnote **first);

/* Adds every tree of src to dst under a new root frame root_label (the
 * node a profile was recorded on: `beamspy record` of several nodes). The
 * first profile added gives dst its unit, metadata and clock; the spans of
 * all are placed by the difference of wall-clock starts from the earliest
 * (a profile that started before those already added moves theirs later). Returns 0
 * or -1 (out of memory; dst may hold part of src then). */
int bs_profile_add_under(bs_profile *dst, const bs_profile *src, const char *root_label);
/* Orders the trees of a combined profile by their root's place in
 * labels[0..n) (a tree whose root is none of them goes last), keeping the
 * order of trees under the same root: the nodes in the order they were
 * named, whatever order they answered in. 0, or -1 (out of memory; the
 * order unchanged). */
int bs_profile_order_roots(bs_profile *p, const char *const *labels, size_t n);

/* Deep copy (frames, trees, spans, metadata). Returns 0 or -1. */
int bs_profile_clone(const bs_profile *src, bs_profile *dst);

#endif
