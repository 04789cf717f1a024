/* collapse_recursion.c — recursion folded into one frame (see
 * collapse_recursion.h).
 *
 * Nodes are visited parents first (a tree's invariant), so each node's
 * parent already has its place in the new tree: a node whose frame is the
 * parent's (direct) or an ancestor's (all) takes that node's place, any
 * other becomes (or joins) the child of its parent's place with its frame,
 * found through an open-addressing table keyed by (new parent, frame).
 *
 * In all mode the ancestor of the same frame is found in constant time: the
 * old tree is walked depth first (an explicit stack, never recursion), with
 * the open path of the new tree in an array indexed by depth and, per
 * frame, the last new node of that frame put on it; a node is on the path
 * when the array holds it at its depth. What a subtree writes into both is
 * logged and undone when the walk leaves it, so the whole walk is linear
 * (walking the new path up for each node was quadratic in the depth: a
 * chain of 100,000 distinct frames took minutes). The walk creates the new
 * nodes in its own order; they are numbered afterwards in the order the
 * old nodes' index order would have created them (each new node's number is
 * set by the first old node placed on it), so the output is the same.
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

/* Direct mode: where a node of frame goes below the new node up (up
 * itself when it is of that frame). The root is the process, never a
 * function: only nodes below it can repeat a frame. */
static uint32_t place_direct(collapse *c, uint32_t up, uint32_t frame)
{
    return (up != 0 && c->nodes[up].frame == frame) ? up : child_of(c, up, frame);
}

/* A write the depth-first walk of all mode undoes when it leaves the
 * subtree that made it: the new path's entry at depth, and the frame's
 * last node on the path. */
typedef struct undo {
    uint32_t depth, old_path, frame, old_last;
} undo;

/* A node of the old tree being walked, and what leaving it restores. */
typedef struct walk_entry {
    uint32_t node, next_child, depth, undo_mark;
} walk_entry;

/* All mode: place[i] for every old node, as numbers in c that the walk's
 * order gave (see the top of the file). Memory: O(nodes + frames).
 * Returns 0 or -1 (out of memory). */
static int walk_all(const bs_ptree *t, uint32_t n_frames, collapse *c, uint32_t *place)
{
    uint32_t n = t->n_nodes;
    uint32_t *first_child = malloc((size_t)n * sizeof *first_child);
    uint32_t *next_sibling = malloc((size_t)n * sizeof *next_sibling);
    uint32_t *path = malloc(((size_t)n + 1) * sizeof *path);    /* the new path by depth */
    uint32_t *depth = malloc((size_t)n * sizeof *depth);        /* of each new node */
    uint32_t *last = malloc(((size_t)n_frames + 1) * sizeof *last); /* per frame, UINT32_MAX: none */
    undo *log = malloc((size_t)n * sizeof *log);
    walk_entry *stack = malloc((size_t)n * sizeof *stack);
    int rc = -1;
    if (!first_child || !next_sibling || !path || !depth || !last || !log || !stack)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        first_child[i] = UINT32_MAX;
    for (uint32_t i = n - 1; i > 0; i--) { /* children in index order */
        next_sibling[i] = first_child[t->nodes[i].parent];
        first_child[t->nodes[i].parent] = i;
    }
    for (uint32_t i = 0; i <= n_frames; i++)
        last[i] = UINT32_MAX;
    for (uint32_t i = 0; i <= n; i++)
        path[i] = UINT32_MAX;
    path[0] = 0;
    depth[0] = 0;
    place[0] = 0;
    uint32_t at = 0, n_log = 0, sp = 0; /* at: depth of the open path's end */
    stack[sp++] = (walk_entry){0, first_child[0], 0, 0};
    while (sp > 0) {
        walk_entry *top = &stack[sp - 1];
        uint32_t y = top->next_child;
        if (y == UINT32_MAX) { /* leaving top->node: its subtree's writes undone */
            while (n_log > top->undo_mark) {
                const undo *u = &log[--n_log];
                path[u->depth] = u->old_path;
                last[u->frame] = u->old_last;
            }
            at = top->depth;
            sp--;
            continue;
        }
        top->next_child = next_sibling[y];
        walk_entry entered = {y, first_child[y], at, n_log};
        uint32_t frame = t->nodes[y].frame;
        uint32_t key = frame < n_frames ? frame : n_frames; /* an unknown frame: a slot of its own */
        uint32_t a = last[key];
        if (key < n_frames && a != UINT32_MAX && depth[a] <= at && path[depth[a]] == a) {
            place[y] = a; /* an f already on the path: y merges into it */
            at = depth[a];
        } else {
            uint32_t k = child_of(c, path[at], frame);
            depth[k] = at + 1;
            log[n_log++] = (undo){at + 1, path[at + 1], key, last[key]};
            path[at + 1] = k;
            last[key] = k;
            at++;
            place[y] = k;
        }
        stack[sp++] = entered;
    }
    rc = 0;
out:
    free(first_child);
    free(next_sibling);
    free(path);
    free(depth);
    free(last);
    free(log);
    free(stack);
    return rc;
}

/* Numbers the new nodes of c in the order that placing the old nodes in
 * index order creates them, rewriting place; c->nodes is replaced.
 * Returns 0 or -1 (out of memory). */
static int renumber(collapse *c, uint32_t *place, uint32_t n_old)
{
    uint32_t *number = malloc((size_t)c->n * sizeof *number);
    bs_pnode *nodes = malloc((size_t)c->n * sizeof *nodes);
    if (!number || !nodes) {
        free(number), free(nodes);
        return -1;
    }
    for (uint32_t i = 0; i < c->n; i++)
        number[i] = UINT32_MAX;
    number[0] = 0;
    nodes[0] = c->nodes[0];
    uint32_t next = 1;
    for (uint32_t i = 1; i < n_old; i++) {
        uint32_t k = place[i];
        if (number[k] == UINT32_MAX) { /* its parent was numbered by an earlier old node */
            number[k] = next;
            nodes[next++] = (bs_pnode){.parent = number[c->nodes[k].parent], .frame = c->nodes[k].frame};
        }
        place[i] = number[k];
    }
    free(number);
    free(c->nodes);
    c->nodes = nodes;
    return 0;
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
    /* Up from to to the deepest node it shares with the open path (a path
     * of the tree too): the steps are the spans this move starts and ends,
     * so a replay is linear in them, not in the depth times the moves. */
    uint32_t a = to;
    while (r->depth[a] > r->open_depth) {
        r->path[r->depth[a]] = a;
        a = r->nodes[a].parent;
    }
    while (a != 0 && r->open_node[r->depth[a]] != a) {
        r->path[r->depth[a]] = a;
        a = r->nodes[a].parent;
    }
    uint32_t common = r->depth[a];
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

static int collapse_tree(bs_ptree *t, uint32_t n_frames, bs_collapse_mode mode, int *truncated)
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
    int rc = 0;
    if (mode == BS_COLLAPSE_ALL) {
        rc = walk_all(t, n_frames, &c, place);
        if (rc == 0)
            rc = renumber(&c, place, n);
    } else {
        for (uint32_t i = 1; i < n; i++)
            place[i] = place_direct(&c, place[t->nodes[i].parent], t->nodes[i].frame);
    }
    for (uint32_t i = 1; rc == 0 && i < n; i++) {
        c.nodes[place[i]].self_ns += t->nodes[i].self_ns;
        c.nodes[place[i]].calls += t->nodes[i].calls;
    }
    if (rc == 0)
        rc = replay_spans(t, &c, place, truncated);
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
        if (collapse_tree(&p->trees[i], p->frames.n, mode, &truncated) < 0)
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
