/* flame_layout.c — frame positions (see flame_layout.h).
 *
 * The graph walk never builds the merged tree: it keeps, for each level of
 * the current path, the profile nodes of the siblings still to draw (sorted
 * by name, equal names adjacent) in one stack-like array. Only the children
 * of frames that are drawn are ever looked at, which is what keeps a
 * 1,000,000-stack profile cheap once pruning cuts it down. */
#include "flame_layout.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static const char *node_name(const bs_profile *p, uint32_t tree, uint32_t node)
{
    return bs_frame_name(&p->frames, p->trees[tree].nodes[node].frame);
}

static int is_dropped(const bs_flame_layout *l, const bs_pnode *n)
{
    return l->drop_sleep && bs_profile_is_sched_out(l->p, n->frame);
}

/* Time covered by a tree's timeline, and where it starts. */
static uint64_t chart_extent(const bs_flame_layout *l, uint32_t t, uint64_t *t0)
{
    const bs_ptree *tree = &l->p->trees[t];
    *t0 = 0;
    if (tree->n_spans == 0)
        return 0;
    uint64_t lo = tree->spans[0].start_ns, hi = lo;
    for (uint32_t i = 0; i < tree->n_spans; i++)
        if (tree->spans[i].end_ns > hi)
            hi = tree->spans[i].end_ns;
    *t0 = lo;
    return hi - lo;
}

static int index_tree(bs_flame_layout *l, uint32_t t)
{
    const bs_profile *p = l->p;
    const bs_ptree *tree = &p->trees[t];
    size_t b = l->base[t];
    for (uint32_t i = 0; i < tree->n_nodes; i++) {
        const bs_pnode *n = &tree->nodes[i];
        if (n->frame >= p->frames.n || (i > 0 && n->parent >= i))
            return -1;
        l->first[b + i] = NONE;
        l->value[b + i] = i > 0 && is_dropped(l, n) ? 0 : n->self_ns;
    }
    /* Parents come first: one backward pass sums subtrees and links
     * children (in creation order, though walks sort them anyway). */
    for (uint32_t i = tree->n_nodes; i-- > 1;) {
        uint32_t par = tree->nodes[i].parent;
        if (is_dropped(l, &tree->nodes[i]))
            continue; /* with whatever hangs below it */
        l->value[b + par] += l->value[b + i];
        l->next[b + i] = l->first[b + par];
        l->first[b + par] = i;
    }
    return 0;
}

int bs_flame_layout_init(bs_flame_layout *l, const bs_profile *p, int drop_sleep)
{
    memset(l, 0, sizeof *l);
    l->p = p;
    l->drop_sleep = drop_sleep;
    size_t n = 0;
    l->base = malloc(((size_t)p->n_trees + 1) * sizeof *l->base);
    if (!l->base)
        return -1;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        l->base[t] = n;
        n += p->trees[t].n_nodes;
    }
    l->first = malloc((n + 1) * sizeof *l->first);
    l->next = malloc((n + 1) * sizeof *l->next);
    l->value = malloc((n + 1) * sizeof *l->value);
    if (!l->first || !l->next || !l->value)
        goto fail;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        if (p->trees[t].n_nodes == 0)
            continue;
        if (index_tree(l, t) < 0)
            goto fail;
        l->total += l->value[l->base[t]];
        uint64_t t0;
        if (p->has_timeline)
            l->chart_total += chart_extent(l, t, &t0);
    }
    return 0;
fail:
    bs_flame_layout_free(l);
    return -1;
}

void bs_flame_layout_free(bs_flame_layout *l)
{
    free(l->base);
    free(l->first);
    free(l->next);
    free(l->value);
    memset(l, 0, sizeof *l);
}

/* ------------------------------------------------------------ graph order */

typedef struct level {
    size_t end, cursor;  /* this level's siblings are refs[cursor..end) */
    uint64_t next_start; /* where the next sibling goes */
} level;

typedef struct graph_walk {
    const bs_flame_layout *l;
    bs_flame_ref *refs;  /* every open level's siblings, level after level */
    size_t n_refs, cap_refs;
    level *levels;
    size_t n_levels, cap_levels;
} graph_walk;

static int same_name(const char *a, const char *b) { return a == b || strcmp(a, b) == 0; }

static int cmp_ref(const void *pa, const void *pb)
{
    const bs_flame_ref *a = pa, *b = pb;
    int c = a->name == b->name ? 0 : strcmp(a->name, b->name);
    if (c != 0)
        return c;
    if (a->tree != b->tree)
        return a->tree < b->tree ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static int push_ref(graph_walk *w, uint32_t tree, uint32_t node)
{
    if (w->n_refs == w->cap_refs) {
        size_t cap = w->cap_refs ? w->cap_refs * 2 : 1024;
        bs_flame_ref *r = realloc(w->refs, cap * sizeof *r);
        if (!r)
            return -1;
        w->refs = r;
        w->cap_refs = cap;
    }
    w->refs[w->n_refs++] = (bs_flame_ref){node_name(w->l->p, tree, node), tree, node};
    return 0;
}

static int push_children(graph_walk *w, uint32_t tree, uint32_t node)
{
    size_t b = w->l->base[tree];
    for (uint32_t c = w->l->first[b + node]; c != NONE; c = w->l->next[b + c])
        if (w->l->value[b + c] > 0 && push_ref(w, tree, c) < 0)
            return -1;
    return 0;
}

/* Sorts the refs pushed since `from` (unless keep_order) and opens a level
 * over them. */
static int open_level(graph_walk *w, size_t from, uint64_t start, int keep_order)
{
    if (w->n_refs == from)
        return 0;
    if (!keep_order)
        qsort(w->refs + from, w->n_refs - from, sizeof *w->refs, cmp_ref);
    if (w->n_levels == w->cap_levels) {
        size_t cap = w->cap_levels ? w->cap_levels * 2 : 64;
        level *lv = realloc(w->levels, cap * sizeof *lv);
        if (!lv)
            return -1;
        w->levels = lv;
        w->cap_levels = cap;
    }
    w->levels[w->n_levels++] = (level){w->n_refs, from, start};
    return 0;
}

/* The root's children: process frames, or the top frames of trees with a
 * synthetic root. Also returns the root's own time (synthetic roots' self). */
static int open_root(graph_walk *w, uint64_t *root_self)
{
    const bs_profile *p = w->l->p;
    *root_self = 0;
    int keep_order = p->ordered_by_cpu;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        if (p->trees[t].n_nodes == 0 || w->l->value[w->l->base[t]] == 0)
            continue;
        if (p->trees[t].synthetic_root) {
            keep_order = 0; /* top frames of several trees merge by name: sorted */
            *root_self += p->trees[t].nodes[0].self_ns;
            if (push_children(w, t, 0) < 0)
                return -1;
        } else if (push_ref(w, t, 0) < 0) {
            return -1;
        }
    }
    /* Processes ordered by running time (whole-VM views) stay in that order. */
    return open_level(w, 0, 0, keep_order);
}

static int has_children(const bs_flame_layout *l, const bs_flame_ref *r)
{
    size_t b = l->base[r->tree];
    for (uint32_t c = l->first[b + r->node]; c != NONE; c = l->next[b + c])
        if (l->value[b + c] > 0)
            return 1;
    return 0;
}

/* Takes the next group of equal names off the top level and, unless it is
 * pruned, visits it and opens a level over its children (none at
 * max_depth: the frame is marked cut instead). */
static int step(graph_walk *w, uint64_t min_value, uint32_t max_depth, bs_flame_visit visit, void *ctx)
{
    level *lv = &w->levels[w->n_levels - 1];
    const bs_flame_layout *l = w->l;
    size_t g0 = lv->cursor, g1 = g0 + 1;
    while (g1 < lv->end && same_name(w->refs[g0].name, w->refs[g1].name))
        g1++;
    bs_flame_frame f = {.name = w->refs[g0].name, .depth = (uint32_t)w->n_levels, .start = lv->next_start,
                        .refs = w->refs + g0, .n_refs = (uint32_t)(g1 - g0)};
    for (size_t k = g0; k < g1; k++) {
        const bs_flame_ref *r = &w->refs[k];
        const bs_pnode *n = &l->p->trees[r->tree].nodes[r->node];
        f.value += l->value[l->base[r->tree] + r->node];
        f.self += n->self_ns;
        f.calls += n->calls;
        if (r->node == 0 && !l->p->trees[r->tree].synthetic_root)
            f.is_process = 1;
    }
    lv->cursor = g1;
    lv->next_start += f.value;
    if (f.value < min_value)
        return 0;
    int leaf = max_depth > 0 && f.depth >= max_depth;
    for (size_t k = g0; leaf && k < g1 && !f.cut; k++)
        f.cut = has_children(l, &w->refs[k]);
    int rc = visit(ctx, &f);
    if (rc != 0 || leaf)
        return rc;
    size_t from = w->n_refs;
    for (size_t k = g0; k < g1; k++)
        if (push_children(w, w->refs[k].tree, w->refs[k].node) < 0)
            return -1;
    return open_level(w, from, f.start, 0);
}

int bs_flame_walk_graph(const bs_flame_layout *l, uint64_t min_value, uint32_t max_depth, bs_flame_visit visit,
                        void *ctx)
{
    graph_walk w = {.l = l};
    uint64_t root_self;
    int rc = open_root(&w, &root_self);
    if (rc == 0) {
        bs_flame_frame all = {.name = "all", .is_process = 1, .value = l->total, .self = root_self};
        rc = visit(ctx, &all);
    }
    while (rc == 0 && w.n_levels > 0) {
        level *lv = &w.levels[w.n_levels - 1];
        if (lv->cursor == lv->end) {
            w.n_levels--;
            w.n_refs = w.n_levels ? w.levels[w.n_levels - 1].end : 0;
            continue;
        }
        rc = step(&w, min_value, max_depth, visit, ctx);
    }
    free(w.refs);
    free(w.levels);
    return rc;
}

/* ------------------------------------------------------------ chart order */

/* Trees in the order their timelines start (ties: by label, then index). */
typedef struct tree_order {
    uint64_t t0;
    const char *label;
    uint32_t tree;
} tree_order;

static int cmp_tree_order(const void *pa, const void *pb)
{
    const tree_order *a = pa, *b = pb;
    if (a->t0 != b->t0)
        return a->t0 < b->t0 ? -1 : 1;
    int c = strcmp(a->label, b->label);
    if (c != 0)
        return c;
    return a->tree < b->tree ? -1 : a->tree > b->tree;
}

/* Per-tree scratch of the chart walk. */
typedef struct chart_tree {
    uint32_t *depth;     /* of each node */
    uint64_t *self;      /* of each span: its time minus its children's */
    uint32_t *open;      /* spans open at the current point, by nesting */
    uint64_t top_time;   /* time of the spans directly under the process */
} chart_tree;

static int valid_span(const bs_ptree *t, const bs_pspan *s) { return s->node > 0 && s->node < t->n_nodes; }

static uint64_t span_time(const bs_pspan *s) { return s->end_ns > s->start_ns ? s->end_ns - s->start_ns : 0; }

static int prepare_chart_tree(const bs_ptree *t, chart_tree *c)
{
    uint32_t max_depth = 0;
    c->depth = malloc((size_t)t->n_nodes * sizeof *c->depth);
    c->self = malloc(((size_t)t->n_spans + 1) * sizeof *c->self);
    if (!c->depth || !c->self)
        return -1;
    c->depth[0] = 0;
    for (uint32_t i = 1; i < t->n_nodes; i++) {
        c->depth[i] = c->depth[t->nodes[i].parent] + 1;
        if (c->depth[i] > max_depth)
            max_depth = c->depth[i];
    }
    c->open = malloc(((size_t)max_depth + 1) * sizeof *c->open);
    if (!c->open)
        return -1;
    size_t n_open = 0;
    c->top_time = 0;
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        c->self[i] = span_time(s);
        if (!valid_span(t, s))
            continue;
        uint32_t d = c->depth[s->node];
        uint64_t st = span_time(s);
        /* Pop spans this one is not inside: as deep or deeper, or already
         * over (when a truncated timeline lost the parent in between). */
        while (n_open > 0) {
            const bs_pspan *top = &t->spans[c->open[n_open - 1]];
            if (c->depth[top->node] < d && top->end_ns >= s->start_ns)
                break;
            n_open--;
        }
        if (n_open > 0) {
            uint64_t *ps = &c->self[c->open[n_open - 1]];
            *ps = *ps > st ? *ps - st : 0;
        } else {
            c->top_time += st;
        }
        c->open[n_open++] = i;
    }
    return 0;
}

static void free_chart_tree(chart_tree *c)
{
    free(c->depth);
    free(c->self);
    free(c->open);
}

/* Index of the first span after i that is not drawn inside span i. */
static uint32_t skip_inside(const bs_ptree *t, const chart_tree *c, uint32_t i)
{
    const bs_pspan *s = &t->spans[i];
    uint32_t d = c->depth[s->node], j = i + 1;
    while (j < t->n_spans) {
        const bs_pspan *n = &t->spans[j];
        if (valid_span(t, n) &&
            !(c->depth[n->node] > d && (n->start_ns < s->end_ns || (n->start_ns == s->end_ns && s->start_ns == s->end_ns))))
            break;
        j++;
    }
    return j;
}

static int walk_chart_tree(const bs_flame_layout *l, uint32_t ti, uint64_t offset, uint64_t min_value,
                           uint32_t max_depth, bs_flame_visit visit, void *ctx)
{
    const bs_ptree *t = &l->p->trees[ti];
    uint64_t t0, extent = chart_extent(l, ti, &t0);
    if (extent < min_value)
        return 0;
    chart_tree c = {0};
    int rc = prepare_chart_tree(t, &c);
    uint32_t shift = t->synthetic_root ? 0 : 1;
    if (rc == 0 && !t->synthetic_root) {
        bs_flame_ref r = {node_name(l->p, ti, 0), ti, 0};
        bs_flame_frame f = {.name = r.name, .depth = 1, .is_process = 1, .start = offset, .value = extent,
                            .self = extent > c.top_time ? extent - c.top_time : 0, .calls = t->nodes[0].calls,
                            .refs = &r, .n_refs = 1};
        rc = visit(ctx, &f);
    }
    for (uint32_t i = 0; rc == 0 && i < t->n_spans;) {
        const bs_pspan *s = &t->spans[i];
        if (!valid_span(t, s)) {
            i++;
            continue;
        }
        const bs_pnode *n = &t->nodes[s->node];
        if (span_time(s) < min_value || is_dropped(l, n)) {
            i = skip_inside(t, &c, i);
            continue;
        }
        bs_flame_ref r = {node_name(l->p, ti, s->node), ti, s->node};
        bs_flame_frame f = {.name = r.name, .depth = c.depth[s->node] + shift, .start = offset + (s->start_ns - t0),
                            .value = span_time(s), .self = c.self[i], .calls = 1, .refs = &r, .n_refs = 1};
        uint32_t after = i + 1;
        if (max_depth > 0 && f.depth >= max_depth) {
            after = skip_inside(t, &c, i);
            f.cut = after > i + 1;
        }
        rc = visit(ctx, &f);
        i = after;
    }
    free_chart_tree(&c);
    return rc;
}

int bs_flame_walk_chart(const bs_flame_layout *l, uint64_t min_value, uint32_t max_depth, bs_flame_visit visit,
                        void *ctx)
{
    const bs_profile *p = l->p;
    tree_order *order = malloc(((size_t)p->n_trees + 1) * sizeof *order);
    if (!order)
        return -1;
    uint32_t n = 0;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        uint64_t t0;
        if (p->trees[t].n_nodes > 0 && chart_extent(l, t, &t0) > 0)
            order[n++] = (tree_order){t0, node_name(p, t, 0), t};
    }
    qsort(order, n, sizeof *order, cmp_tree_order);
    bs_flame_frame all = {.name = "all", .is_process = 1, .value = l->chart_total};
    int rc = visit(ctx, &all);
    uint64_t offset = 0;
    for (uint32_t k = 0; rc == 0 && k < n; k++) {
        uint64_t t0;
        rc = walk_chart_tree(l, order[k].tree, offset, min_value, max_depth, visit, ctx);
        offset += chart_extent(l, order[k].tree, &t0);
    }
    free(order);
    return rc;
}
