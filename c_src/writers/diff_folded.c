/* diff_folded.c — differential folded stacks (see diff_folded.h).
 *
 * Both profiles are laid onto one union call tree (engine/profile_union.h,
 * processes paired by their labels without pids) whose frames are interned
 * in a table of its own; each union node then has a before and an after
 * count. The tree is written depth
 * first with one growing path buffer, as the folded writer does. */
#include "diff_folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/profile_union.h"

typedef struct union_tree {
    bs_frame_table frames;  /* the union's names (the two profiles' ids differ) */
    bs_profile_union un;
    uint64_t *self;         /* per union node: the profile being added, in its units */
    size_t self_cap;
    uint64_t *before;       /* per union node, in output units */
    uint64_t *after;
    unsigned char *present; /* per union node: a stack of either input (a
                               count normalised to 0 still has its line) */
} union_tree;

/* Room in u->self for every union node, new ones zeroed. */
static int grow_self(union_tree *u)
{
    size_t n = u->un.tree.n_nodes;
    if (n <= u->self_cap)
        return 0;
    size_t cap = u->self_cap ? u->self_cap : 1024;
    while (cap < n)
        cap *= 2;
    uint64_t *self = realloc(u->self, cap * sizeof *self);
    if (!self)
        return -1;
    memset(self + u->self_cap, 0, (cap - u->self_cap) * sizeof *self);
    u->self = self;
    u->self_cap = cap;
    return 0;
}

/* Adds every stack of p to u (processes paired by their labels without
 * pids), summing self times into u->self. */
static int add_profile(union_tree *u, const bs_profile *p)
{
    uint32_t *node_of = NULL;
    size_t node_cap = 0;
    int rc = -1;
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        if (t->n_nodes > node_cap) {
            free(node_of);
            node_cap = t->n_nodes;
            node_of = malloc(node_cap * sizeof *node_of);
            if (!node_of)
                goto out;
        }
        uint32_t root = t->n_nodes ? bs_profile_union_process_node(&u->un, p, t) : 0;
        if (root == BS_NO_NODE || bs_profile_union_add_tree(&u->un, p, t, root, 0, node_of) < 0 ||
            grow_self(u) < 0)
            goto out;
        for (uint32_t i = 0; i < t->n_nodes; i++)
            u->self[node_of[i]] += t->nodes[i].self_ns;
    }
    rc = grow_self(u);
out:
    free(node_of);
    return rc;
}

/* Moves the self times gathered by add_profile into counts[] (in the units
 * the folded writer uses) and clears them for the next profile. */
static uint64_t *take_counts(union_tree *u, const bs_profile *p)
{
    uint64_t unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    uint64_t *counts = calloc(u->un.tree.n_nodes ? u->un.tree.n_nodes : 1, sizeof *counts);
    if (!counts)
        return NULL;
    for (uint32_t i = 0; i < u->un.tree.n_nodes; i++) {
        counts[i] = (u->self[i] + unit / 2) / unit;
        u->self[i] = 0;
    }
    return counts;
}

typedef struct remainder {
    uint64_t r;
    uint32_t node;
} remainder;

static int by_remainder_desc(const void *a, const void *b)
{
    const remainder *x = a, *y = b;
    if (x->r != y->r)
        return x->r < y->r ? 1 : -1;
    return x->node < y->node ? -1 : x->node > y->node;
}

static uint64_t sum(const uint64_t *v, uint32_t n)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += v[i];
    return s;
}

/* Scales v (n counts summing to from) to sum exactly to `to`: every count
 * gets the floor of its share, and the units left over go to the largest
 * fractional parts (ties to the earlier node), so the result is exact and
 * deterministic. 128-bit products: counts times totals overflow 64 bits. */
static int scale_to_total(uint64_t *v, uint32_t n, uint64_t to)
{
    __extension__ typedef unsigned __int128 u128;
    uint64_t from = sum(v, n);
    if (from == 0 || to == 0 || from == to)
        return 0;
    remainder *rem = malloc((size_t)n * sizeof *rem);
    if (!rem)
        return -1;
    uint64_t given = 0;
    for (uint32_t i = 0; i < n; i++) {
        u128 product = (u128)v[i] * to;
        v[i] = (uint64_t)(product / from);
        rem[i].r = (uint64_t)(product % from);
        rem[i].node = i;
        given += v[i];
    }
    qsort(rem, n, sizeof *rem, by_remainder_desc);
    for (uint64_t k = 0; given + k < to && k < n; k++)
        v[rem[k].node]++;
    free(rem);
    return 0;
}

typedef struct path_buf {
    char *s;
    size_t len, cap;
} path_buf;

/* Puts name (after a ';' unless at 0) at byte `at` of the path. */
static int path_put(path_buf *b, size_t at, const char *name)
{
    size_t n = strlen(name), need = at + n + 2;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < need)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s)
            return -1;
        b->s = s;
        b->cap = cap;
    }
    b->len = at;
    if (at > 0)
        b->s[b->len++] = ';';
    memcpy(b->s + b->len, name, n);
    b->len += n;
    return 0;
}

/* Depth first over the union tree; children in creation order. */
static int write_lines(FILE *out, const union_tree *u)
{
    uint32_t n = u->un.tree.n_nodes;
    uint32_t *first = malloc((size_t)n * sizeof *first);
    uint32_t *next = malloc((size_t)n * sizeof *next);
    uint32_t *stack = malloc((size_t)n * sizeof *stack);
    size_t *at = malloc((size_t)n * sizeof *at);
    path_buf path = {0};
    int rc = -1;
    if (!first || !next || !stack || !at)
        goto out;
    memset(first, 0xff, (size_t)n * sizeof *first);
    for (uint32_t i = n; i-- > 1;) {
        uint32_t parent = u->un.tree.nodes[i].parent;
        next[i] = first[parent];
        first[parent] = i;
    }
    size_t depth = 0;
    stack[0] = 0;
    at[0] = 0;
    uint32_t node = first[0];
    for (;;) {
        if (node == UINT32_MAX) { /* climb until a node has a next sibling */
            if (depth == 0)
                break;
            node = next[stack[depth]];
            path.len = at[depth];
            depth--;
            continue;
        }
        size_t base = path.len;
        if (path_put(&path, base, bs_frame_name(&u->frames, bs_profile_union_frame(&u->un, node))) < 0)
            goto out;
        if (u->present[node]) {
            fwrite(path.s, 1, path.len, out);
            if (fprintf(out, " %" PRIu64 " %" PRIu64 "\n", u->before[node], u->after[node]) < 0)
                goto out;
        }
        depth++;
        stack[depth] = node;
        at[depth] = base;
        node = first[node];
    }
    rc = ferror(out) ? -1 : 0;
out:
    free(first);
    free(next);
    free(stack);
    free(at);
    free(path.s);
    return rc;
}

int bs_write_diff_folded(FILE *out, const bs_profile *before, const bs_profile *after, int normalize)
{
    union_tree u;
    memset(&u, 0, sizeof u);
    bs_frame_table_init(&u.frames);
    int rc = -1;
    if (bs_profile_union_init(&u.un, &u.frames) < 0)
        goto out_frames;
    if (add_profile(&u, before) < 0 || !(u.before = take_counts(&u, before)))
        goto out;
    uint32_t n_before = u.un.tree.n_nodes;
    if (add_profile(&u, after) < 0 || !(u.after = take_counts(&u, after)))
        goto out;
    uint32_t n = u.un.tree.n_nodes;
    /* Nodes only after has were created after before's counts were taken. */
    uint64_t *grown = realloc(u.before, (size_t)(n ? n : 1) * sizeof *grown);
    if (!grown)
        goto out;
    u.before = grown;
    memset(u.before + n_before, 0, (size_t)(n - n_before) * sizeof *u.before);
    u.present = malloc(n ? n : 1);
    if (!u.present)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        u.present[i] = u.before[i] || u.after[i];
    if (normalize && scale_to_total(u.before, n, sum(u.after, n)) < 0)
        goto out;
    rc = write_lines(out, &u);
out:
    free(u.self);
    free(u.before);
    free(u.after);
    free(u.present);
    bs_profile_union_free(&u.un);
out_frames:
    bs_frame_table_free(&u.frames);
    return rc;
}
