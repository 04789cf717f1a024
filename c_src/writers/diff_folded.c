/* diff_folded.c — differential folded stacks (see diff_folded.h).
 *
 * Both profiles are laid onto one union call tree whose frames are
 * interned in a table of its own (the two profiles' ids differ); each union
 * node then has a before and an after count. The tree is written depth
 * first with one growing path buffer, as the folded writer does. */
#include "diff_folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/call_tree.h"

typedef struct union_tree {
    bs_frame_table frames;
    bs_call_tree tree;   /* key.module = union frame id + 1 */
    uint64_t *before;    /* per union node, in output units */
    uint64_t *after;
    unsigned char *present; /* per union node: a stack of either input (a
                               count normalised to 0 still has its line) */
} union_tree;

/* "<0.85.0> my_server" -> "<process> my_server", "<0.85.0>" -> "<process>":
 * pids differ between runs, what the process is does not. The same rule as
 * the diff SVG's (diff_svg.c), so both outputs pair the same processes. */
static void process_label(const char *label, char *buf, size_t cap)
{
    const char *s = label;
    int dots = 0;
    if (*s == '<') {
        for (s++; (*s >= '0' && *s <= '9') || *s == '.'; s++)
            dots += *s == '.';
        if (*s == '>' && dots == 2 && (s[1] == '\0' || s[1] == ' ')) {
            snprintf(buf, cap, "<process>%s", s + 1);
            return;
        }
    }
    snprintf(buf, cap, "%s", label);
}

/* The union frame id of each of p's frames. */
static uint32_t *union_frames(union_tree *u, const bs_profile *p)
{
    uint32_t *frame_of = malloc(((size_t)p->frames.n + 1) * sizeof *frame_of);
    if (!frame_of)
        return NULL;
    for (uint32_t i = 0; i < p->frames.n; i++) {
        const char *name = bs_frame_name(&p->frames, i);
        frame_of[i] = bs_frame_table_intern(&u->frames, name, strlen(name));
        if (frame_of[i] == UINT32_MAX) {
            free(frame_of);
            return NULL;
        }
    }
    return frame_of;
}

/* The union node of a tree's root: 0 for a synthetic root, else the child of
 * 0 named by the process's label without the pid. */
static uint32_t root_node(union_tree *u, const bs_profile *p, const bs_ptree *t)
{
    if (t->synthetic_root)
        return 0;
    char label[1100];
    process_label(bs_frame_name(&p->frames, t->nodes[0].frame), label, sizeof label);
    uint32_t id = bs_frame_table_intern(&u->frames, label, strlen(label));
    if (id == UINT32_MAX)
        return BS_NO_NODE;
    bs_key k = {(uint64_t)id + 1, 0, 0};
    return bs_call_tree_child(&u->tree, 0, &k);
}

/* Adds every stack of p to u, summing self times into the nodes' self_ns. */
static int add_profile(union_tree *u, const bs_profile *p)
{
    uint32_t *frame_of = union_frames(u, p);
    uint32_t *node_of = NULL;
    size_t node_cap = 0;
    int rc = -1;
    if (!frame_of)
        return -1;
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        if (t->n_nodes > node_cap) {
            free(node_of);
            node_cap = t->n_nodes;
            node_of = malloc(node_cap * sizeof *node_of);
            if (!node_of)
                goto out;
        }
        for (uint32_t i = 0; i < t->n_nodes; i++) {
            if (i == 0) {
                node_of[0] = root_node(u, p, t);
            } else {
                bs_key k = {(uint64_t)frame_of[t->nodes[i].frame] + 1, 0, 0};
                node_of[i] = bs_call_tree_child(&u->tree, node_of[t->nodes[i].parent], &k);
            }
            if (node_of[i] == BS_NO_NODE)
                goto out;
            u->tree.nodes[node_of[i]].self_ns += t->nodes[i].self_ns;
        }
    }
    rc = 0;
out:
    free(frame_of);
    free(node_of);
    return rc;
}

/* Moves the self times gathered by add_profile into counts[] (in the units
 * the folded writer uses) and clears them for the next profile. */
static uint64_t *take_counts(union_tree *u, const bs_profile *p)
{
    uint64_t unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    uint64_t *counts = calloc(u->tree.n_nodes, sizeof *counts);
    if (!counts)
        return NULL;
    for (uint32_t i = 0; i < u->tree.n_nodes; i++) {
        counts[i] = (u->tree.nodes[i].self_ns + unit / 2) / unit;
        u->tree.nodes[i].self_ns = 0;
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
    uint32_t n = u->tree.n_nodes;
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
        uint32_t parent = u->tree.nodes[i].parent;
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
        uint32_t frame = (uint32_t)(u->tree.nodes[node].key.module - 1);
        if (path_put(&path, base, bs_frame_name(&u->frames, frame)) < 0)
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
    if (bs_call_tree_init(&u.tree, NULL) < 0)
        goto out_frames;
    if (add_profile(&u, before) < 0 || !(u.before = take_counts(&u, before)))
        goto out;
    uint32_t n_before = u.tree.n_nodes;
    if (add_profile(&u, after) < 0 || !(u.after = take_counts(&u, after)))
        goto out;
    /* Nodes only after has were created after before's counts were taken. */
    uint64_t *grown = realloc(u.before, (size_t)u.tree.n_nodes * sizeof *grown);
    if (!grown)
        goto out;
    u.before = grown;
    memset(u.before + n_before, 0, (size_t)(u.tree.n_nodes - n_before) * sizeof *u.before);
    u.present = malloc(u.tree.n_nodes ? u.tree.n_nodes : 1);
    if (!u.present)
        goto out;
    for (uint32_t i = 0; i < u.tree.n_nodes; i++)
        u.present[i] = u.before[i] || u.after[i];
    if (normalize && scale_to_total(u.before, u.tree.n_nodes, sum(u.after, u.tree.n_nodes)) < 0)
        goto out;
    rc = write_lines(out, &u);
out:
    free(u.before);
    free(u.after);
    free(u.present);
    bs_call_tree_free(&u.tree);
out_frames:
    bs_frame_table_free(&u.frames);
    return rc;
}
