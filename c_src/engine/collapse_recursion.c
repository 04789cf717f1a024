/* collapse_recursion.c — direct recursion folded into one frame (see
 * collapse_recursion.h).
 *
 * Nodes are visited parents first (a tree's invariant), so each node's
 * parent already has its place in the new tree: a node with its parent's
 * frame takes the parent's place, any other becomes (or joins) the child of
 * that place with its frame, found through an open-addressing table keyed
 * by (new parent, frame). */
#include "collapse_recursion.h"

#include <stdlib.h>
#include <string.h>

typedef struct child_slot {
    uint32_t parent, frame, node; /* node UINT32_MAX: empty */
} child_slot;

typedef struct collapse {
    bs_pnode *nodes;   /* the new tree */
    uint32_t n;
    child_slot *slots;
    size_t mask;
} collapse;

static size_t slot_of(const collapse *c, uint32_t parent, uint32_t frame)
{
    uint64_t h = ((uint64_t)parent << 32 | frame) * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 17) & c->mask;
    while (c->slots[i].node != UINT32_MAX && (c->slots[i].parent != parent || c->slots[i].frame != frame))
        i = (i + 1) & c->mask;
    return i;
}

/* The child of parent for frame in the new tree, created if absent. */
static uint32_t child_of(collapse *c, uint32_t parent, uint32_t frame)
{
    size_t i = slot_of(c, parent, frame);
    if (c->slots[i].node == UINT32_MAX) {
        c->slots[i] = (child_slot){parent, frame, c->n};
        c->nodes[c->n] = (bs_pnode){.parent = parent, .frame = frame};
        c->n++;
    }
    return c->slots[i].node;
}

/* Spans of the new nodes; those nested in a span of the same node go. */
static void remap_spans(bs_ptree *t, const uint32_t *place)
{
    uint32_t kept = 0, depth = 0;
    uint64_t *open_end = NULL;
    uint32_t *open_node = NULL;
    if (t->n_spans) {
        open_end = malloc(t->n_spans * sizeof *open_end);
        open_node = malloc(t->n_spans * sizeof *open_node);
    }
    for (uint32_t i = 0; i < t->n_spans; i++) {
        bs_pspan s = t->spans[i];
        s.node = place[s.node];
        if (!open_end) {
            /* Without room to follow nesting, keep every span renamed. */
            t->spans[kept++] = s;
            continue;
        }
        while (depth && open_end[depth - 1] <= s.start_ns)
            depth--;
        if (depth && open_node[depth - 1] == s.node)
            continue;
        open_end[depth] = s.end_ns;
        open_node[depth] = s.node;
        depth++;
        t->spans[kept++] = s;
    }
    t->n_spans = kept;
    free(open_end);
    free(open_node);
}

static int collapse_tree(bs_ptree *t)
{
    uint32_t n = t->n_nodes;
    if (n < 2)
        return 0;
    size_t cap = 16;
    while (cap < (size_t)n * 2)
        cap *= 2;
    collapse c = {.nodes = malloc(n * sizeof *c.nodes), .slots = malloc(cap * sizeof *c.slots), .mask = cap - 1};
    uint32_t *place = malloc(n * sizeof *place);
    if (!c.nodes || !c.slots || !place) {
        free(c.nodes), free(c.slots), free(place);
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        c.slots[i].node = UINT32_MAX;
    c.nodes[0] = t->nodes[0];
    c.nodes[0].total_ns = 0;
    c.n = 1;
    place[0] = 0;
    for (uint32_t i = 1; i < n; i++) {
        const bs_pnode *old = &t->nodes[i];
        uint32_t up = place[old->parent];
        /* The root is the process, never a function: only its children
         * below can repeat a frame. */
        uint32_t at = (up != 0 && c.nodes[up].frame == old->frame) ? up : child_of(&c, up, old->frame);
        c.nodes[at].self_ns += old->self_ns;
        c.nodes[at].calls += old->calls;
        place[i] = at;
    }
    remap_spans(t, place);
    free(t->nodes);
    t->nodes = c.nodes;
    t->n_nodes = c.n;
    free(c.slots);
    free(place);
    return 0;
}

int bs_profile_collapse_recursion(bs_profile *p)
{
    for (uint32_t i = 0; i < p->n_trees; i++)
        if (collapse_tree(&p->trees[i]) < 0)
            return -1;
    bs_profile_compute_totals(p);
    return 0;
}
