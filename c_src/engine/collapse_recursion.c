/* collapse_recursion.c — recursion folded into one frame (see
 * collapse_recursion.h).
 *
 * Nodes are visited parents first (a tree's invariant), so each node's
 * parent already has its place in the new tree: a node whose frame is the
 * parent's (direct) or an ancestor's (all) takes that node's place, any
 * other becomes (or joins) the child of its parent's place with its frame,
 * found through an open-addressing table keyed by (new parent, frame).
 *
 * Spans are replayed: the input spans are a stack of calls changing over
 * time; at every change the open path of the new tree (the path to the new
 * node of the innermost call) is compared with the previous one, spans of
 * nodes that left it end, spans of nodes that joined it start. Changes at
 * the same instant are applied as one, so no zero-length piece is made. */
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

/* Where a node of frame goes below the new node up. The root is the
 * process, never a function: only nodes below it can repeat a frame. The
 * walk is bounded by the new tree's depth, which in all mode is at most the
 * number of distinct frames (no frame repeats on a path). */
static uint32_t place_of(collapse *c, uint32_t up, uint32_t frame, bs_collapse_mode mode)
{
    if (mode == BS_COLLAPSE_DIRECT)
        return (up != 0 && c->nodes[up].frame == frame) ? up : child_of(c, up, frame);
    for (uint32_t a = up; a != 0; a = c->nodes[a].parent)
        if (c->nodes[a].frame == frame)
            return a;
    return child_of(c, up, frame);
}

/* The replay of spans onto the new tree. */
typedef struct replay {
    const bs_pnode *nodes;   /* the new tree */
    const uint32_t *depth;   /* depth[node] in it, root 0 */
    bs_pspan *out;           /* spans written */
    uint32_t n_out, cap_out, max_out;
    uint32_t *open_node, *open_span; /* the open path: node and span (UINT32_MAX: none) per depth 1.. */
    uint32_t open_depth;
    uint32_t *path;          /* scratch: a path being opened */
    uint32_t pending;        /* node the open path moves to at pending_at */
    uint64_t pending_at;
    int has_pending;
    int dropped;             /* a span was left out (cap) */
} replay;

static int out_push(replay *r, uint32_t node, uint64_t t)
{
    if (r->n_out == r->max_out) {
        r->dropped = 1;
        return 0;
    }
    if (r->n_out == r->cap_out) {
        uint32_t cap = r->cap_out ? r->cap_out * 2 : 64;
        if (cap > r->max_out || cap < r->cap_out)
            cap = r->max_out;
        bs_pspan *grown = realloc(r->out, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        r->out = grown;
        r->cap_out = cap;
    }
    r->out[r->n_out] = (bs_pspan){.node = node, .start_ns = t, .end_ns = t};
    return 1;
}

/* Moves the open path to the path of node `to` (0: nothing open) at t. */
static int apply_move(replay *r, uint32_t to, uint64_t t)
{
    uint32_t d = r->depth[to];
    for (uint32_t a = to, k = d; k > 0; a = r->nodes[a].parent, k--)
        r->path[k] = a;
    uint32_t common = 0;
    while (common < d && common < r->open_depth && r->open_node[common + 1] == r->path[common + 1])
        common++;
    for (uint32_t k = r->open_depth; k > common; k--)
        if (r->open_span[k] != UINT32_MAX)
            r->out[r->open_span[k]].end_ns = t;
    for (uint32_t k = common + 1; k <= d; k++) {
        int rc = out_push(r, r->path[k], t);
        if (rc < 0)
            return -1;
        r->open_node[k] = r->path[k];
        r->open_span[k] = rc ? r->n_out++ : UINT32_MAX;
    }
    r->open_depth = d;
    return 0;
}

static int move_to(replay *r, uint32_t to, uint64_t t)
{
    if (r->has_pending && r->pending_at != t && apply_move(r, r->pending, r->pending_at) < 0)
        return -1;
    r->pending = to;
    r->pending_at = t;
    r->has_pending = 1;
    return 0;
}

/* Replays t's spans (sorted by start, properly nested) through place onto
 * the new tree c; replaces t->spans. Returns 0 or -1 (out of memory). */
static int replay_spans(bs_ptree *t, const collapse *c, const uint32_t *place, int *truncated)
{
    if (t->n_spans == 0)
        return 0;
    uint32_t max_depth = 0;
    uint32_t *depth = malloc((size_t)c->n * sizeof *depth);
    replay r = {.nodes = c->nodes, .depth = depth};
    uint64_t *phys_end = malloc((size_t)t->n_spans * sizeof *phys_end);
    uint32_t *phys_node = malloc((size_t)t->n_spans * sizeof *phys_node);
    int rc = -1;
    if (!depth || !phys_end || !phys_node)
        goto out;
    depth[0] = 0;
    for (uint32_t i = 1; i < c->n; i++) {
        depth[i] = depth[c->nodes[i].parent] + 1;
        if (depth[i] > max_depth)
            max_depth = depth[i];
    }
    r.open_node = malloc(((size_t)max_depth + 1) * sizeof *r.open_node);
    r.open_span = malloc(((size_t)max_depth + 1) * sizeof *r.open_span);
    r.path = malloc(((size_t)max_depth + 1) * sizeof *r.path);
    if (!r.open_node || !r.open_span || !r.path)
        goto out;
    uint64_t room = (uint64_t)t->n_spans + BS_COLLAPSE_SPLIT_CAP;
    r.max_out = room > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)room;
    uint32_t depth_phys = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        if (s->node >= t->n_nodes || s->node == 0)
            continue;
        while (depth_phys && phys_end[depth_phys - 1] <= s->start_ns) {
            depth_phys--;
            if (move_to(&r, depth_phys ? phys_node[depth_phys - 1] : 0, phys_end[depth_phys]) < 0)
                goto out;
        }
        uint64_t end = s->end_ns < s->start_ns ? s->start_ns : s->end_ns;
        if (depth_phys && end > phys_end[depth_phys - 1])
            end = phys_end[depth_phys - 1]; /* bad input: keep nesting */
        phys_end[depth_phys] = end;
        phys_node[depth_phys] = place[s->node];
        depth_phys++;
        if (move_to(&r, place[s->node], s->start_ns) < 0)
            goto out;
    }
    while (depth_phys) {
        depth_phys--;
        if (move_to(&r, depth_phys ? phys_node[depth_phys - 1] : 0, phys_end[depth_phys]) < 0)
            goto out;
    }
    if (r.has_pending && apply_move(&r, r.pending, r.pending_at) < 0)
        goto out;
    free(t->spans);
    t->spans = r.out;
    t->n_spans = r.n_out;
    r.out = NULL;
    if (r.dropped)
        *truncated = 1;
    rc = 0;
out:
    free(r.out);
    free(r.open_node);
    free(r.open_span);
    free(r.path);
    free(depth);
    free(phys_end);
    free(phys_node);
    return rc;
}

static int collapse_tree(bs_ptree *t, bs_collapse_mode mode, int *truncated)
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
        uint32_t at = place_of(&c, place[old->parent], old->frame, mode);
        c.nodes[at].self_ns += old->self_ns;
        c.nodes[at].calls += old->calls;
        place[i] = at;
    }
    int rc = replay_spans(t, &c, place, truncated);
    if (rc == 0) {
        free(t->nodes);
        t->nodes = c.nodes;
        t->n_nodes = c.n;
    } else {
        free(c.nodes);
    }
    free(c.slots);
    free(place);
    return rc;
}

int bs_profile_collapse_recursion_mode(bs_profile *p, bs_collapse_mode mode)
{
    if (mode == BS_COLLAPSE_NONE)
        return 0;
    int truncated = 0;
    for (uint32_t i = 0; i < p->n_trees; i++)
        if (collapse_tree(&p->trees[i], mode, &truncated) < 0)
            return -1;
    if (truncated)
        p->timeline_truncated = 1;
    bs_profile_compute_totals(p);
    return 0;
}

int bs_profile_collapse_recursion(bs_profile *p)
{
    return bs_profile_collapse_recursion_mode(p, BS_COLLAPSE_DIRECT);
}
