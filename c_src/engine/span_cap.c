/* span_cap.c — the shallowest spans kept, up to a cap (see span_cap.h).
 *
 * Two passes over the spans: one counts spans per depth over all trees and
 * finds the depth D where the cap falls, the other keeps spans above D and
 * the first ones at D. Memory: a depth per node of the largest tree and a
 * count per depth. */
#include "span_cap.h"

#include <stdlib.h>

uint64_t bs_profile_span_count(const bs_profile *p)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < p->n_trees; i++)
        n += p->trees[i].n_spans;
    return n;
}

/* depth[i] for every node of t (root 0); returns the deepest. */
static uint32_t depths(const bs_ptree *t, uint32_t *depth)
{
    uint32_t deepest = 0;
    depth[0] = 0;
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        depth[i] = depth[t->nodes[i].parent] + 1;
        if (depth[i] > deepest)
            deepest = depth[i];
    }
    return deepest;
}

static uint32_t span_depth(const bs_ptree *t, const uint32_t *depth, const bs_pspan *s)
{
    return s->node < t->n_nodes ? depth[s->node] : 0;
}

int bs_profile_cap_spans(bs_profile *p, uint64_t max, uint64_t *left_out)
{
    uint64_t total = bs_profile_span_count(p);
    if (left_out)
        *left_out = 0;
    if (total <= max)
        return 0;
    uint32_t most_nodes = 1, deepest = 0;
    for (uint32_t i = 0; i < p->n_trees; i++)
        if (p->trees[i].n_nodes > most_nodes)
            most_nodes = p->trees[i].n_nodes;
    uint32_t *depth = malloc((size_t)most_nodes * sizeof *depth);
    uint64_t *per_depth = NULL;
    if (!depth)
        return -1;
    for (uint32_t i = 0; i < p->n_trees; i++)
        if (p->trees[i].n_nodes) {
            uint32_t d = depths(&p->trees[i], depth);
            if (d > deepest)
                deepest = d;
        }
    per_depth = calloc((size_t)deepest + 1, sizeof *per_depth);
    if (!per_depth) {
        free(depth);
        return -1;
    }
    for (uint32_t i = 0; i < p->n_trees; i++) {
        const bs_ptree *t = &p->trees[i];
        if (!t->n_nodes)
            continue;
        depths(t, depth);
        for (uint32_t s = 0; s < t->n_spans; s++)
            per_depth[span_depth(t, depth, &t->spans[s])]++;
    }
    /* The depth where the cap falls, and the room left there. */
    uint32_t cut = 0;
    uint64_t room = max;
    while (cut <= deepest && per_depth[cut] <= room)
        room -= per_depth[cut++];
    uint64_t kept = 0;
    for (uint32_t i = 0; i < p->n_trees; i++) {
        bs_ptree *t = &p->trees[i];
        if (!t->n_nodes) {
            t->n_spans = 0;
            continue;
        }
        depths(t, depth);
        uint32_t n = 0;
        for (uint32_t s = 0; s < t->n_spans; s++) {
            uint32_t d = span_depth(t, depth, &t->spans[s]);
            if (d < cut || (d == cut && room > 0)) {
                if (d == cut)
                    room--;
                t->spans[n++] = t->spans[s];
            }
        }
        t->n_spans = n;
        kept += n;
    }
    free(depth);
    free(per_depth);
    p->timeline_truncated = 1;
    if (left_out)
        *left_out = total - kept;
    return 0;
}
