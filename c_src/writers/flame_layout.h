/* flame_layout.h — where each frame of a flame graph goes.
 *
 * Turns a profile into the frames of one drawing: the root "all", under it
 * one frame per process (a tree with a synthetic root contributes its top
 * frames instead), and under each frame its callees. Positions are exact
 * integers in the profile's own units (ns or samples): a frame covers
 * [start, start + value) of "all"; the writer scales them to pixels.
 *
 * Two orders:
 *   graph  siblings with the same name are merged, across trees too (so a
 *          frame can stand for several profile nodes), and sorted by name in
 *          byte order (flamegraph.pl's convention); value is total time;
 *   chart  x is time from the timeline: every entry into a frame is a frame
 *          of its own, in time order; processes are laid side by side, each
 *          as wide as the time its timeline covers.
 * A frame narrower than min_value is left out with everything beneath it
 * (its room stays empty), so the work and the output follow the frames
 * drawn, not the size of the profile; frames deeper than max_depth (0: no
 * limit) are left out too (a 100,000-deep recursion is not a picture).
 * Walks visit frames parent first. */
#ifndef BS_FLAME_LAYOUT_H
#define BS_FLAME_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/profile.h"

/* One profile node merged into a frame. */
typedef struct bs_flame_ref {
    const char *name;
    uint32_t tree, node;
} bs_flame_ref;

typedef struct bs_flame_frame {
    const char *name;
    uint32_t depth;           /* 0 for "all" */
    int is_process;           /* stands for a process (or is "all") */
    uint64_t start, value;    /* position and width, in profile units */
    uint64_t self, calls;
    int cut;                  /* it has callees, left out below max_depth */
    const bs_flame_ref *refs; /* nodes merged into it; none for "all" */
    uint32_t n_refs;
} bs_flame_frame;

/* Called for every frame kept: 0 to go on, 1 to stop the walk, -1 on error. */
typedef int (*bs_flame_visit)(void *ctx, const bs_flame_frame *f);

typedef struct bs_flame_layout {
    const bs_profile *p;
    int drop_sleep;     /* SLEEP nodes count for nothing */
    uint64_t total;     /* width of "all" in the graph order */
    uint64_t chart_total; /* width of "all" in the chart order (0 without a timeline) */
    size_t *base;       /* per tree: index of its node 0 in the arrays below */
    uint32_t *first;    /* first child of each node (tree-local index) */
    uint32_t *next;     /* next sibling */
    uint64_t *value;    /* time of each node's subtree */
} bs_flame_layout;

/* Indexes p (which must outlive l). Returns 0, or -1 on allocation failure
 * or a malformed profile (a parent not before its child, an unknown frame). */
int bs_flame_layout_init(bs_flame_layout *l, const bs_profile *p, int drop_sleep);
void bs_flame_layout_free(bs_flame_layout *l);

/* Visits the frames of the graph order, "all" first. Returns 0 when done,
 * 1 when visit stopped it, -1 on error. */
int bs_flame_walk_graph(const bs_flame_layout *l, uint64_t min_value, uint32_t max_depth, bs_flame_visit visit,
                        void *ctx);

/* The same for the chart order (needs p->has_timeline). */
int bs_flame_walk_chart(const bs_flame_layout *l, uint64_t min_value, uint32_t max_depth, bs_flame_visit visit,
                        void *ctx);

#endif
