/* folded.c — folded-stacks writer (see folded.h).
 *
 * Walks each tree depth first with an explicit stack (recursion can be
 * 100,000 frames deep) and keeps the current path in one growing buffer, so
 * each line costs one fwrite of the prefix already built. */
#include "folded.h"
#include "writers.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct path_buf {
    char *s;
    size_t len, cap;
} path_buf;

static int path_put(path_buf *b, size_t at, const char *name, int sep)
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
    if (sep)
        b->s[b->len++] = ';';
    memcpy(b->s + b->len, name, n);
    b->len += n;
    return 0;
}

static int emit(FILE *out, const path_buf *b, uint64_t ns, unsigned unit)
{
    uint64_t count = (ns + unit / 2) / unit;
    if (count == 0 || b->len == 0)
        return 0;
    fwrite(b->s, 1, b->len, out);
    return fprintf(out, " %" PRIu64 "\n", count) < 0 ? -1 : 0;
}

typedef struct child_index {
    uint32_t *first, *next;
} child_index;

static int index_children(const bs_ptree *t, child_index *ci)
{
    ci->first = malloc((size_t)t->n_nodes * sizeof *ci->first);
    ci->next = malloc((size_t)t->n_nodes * sizeof *ci->next);
    if (!ci->first || !ci->next)
        return -1;
    memset(ci->first, 0xff, (size_t)t->n_nodes * sizeof *ci->first);
    /* Backwards so that siblings come out in creation order. */
    for (uint32_t i = t->n_nodes; i-- > 1;) {
        uint32_t par = t->nodes[i].parent;
        ci->next[i] = ci->first[par];
        ci->first[par] = i;
    }
    return 0;
}

static int write_tree(FILE *out, const bs_profile *p, const bs_ptree *t, const bs_folded_opts *o,
                      path_buf *path, unsigned unit, unsigned max_depth)
{
    child_index ci = {0};
    uint32_t *stack = NULL;  /* node ids */
    size_t *at = NULL;       /* path length before each node's name */
    uint64_t *drawn = NULL;  /* time of each node's subtree as written (no SLEEP under drop_sleep) */
    int rc = -1;
    if (index_children(t, &ci) < 0)
        goto out;
    stack = malloc(((size_t)max_depth + 2) * sizeof *stack);
    at = malloc(((size_t)max_depth + 2) * sizeof *at);
    drawn = malloc(((size_t)t->n_nodes + 1) * sizeof *drawn);
    if (!stack || !at || !drawn)
        goto out;
    /* Parents have smaller indices: one backward pass sums the subtrees, so
     * "[deeper]" leaves neither depend on precomputed totals nor bring back
     * the SLEEP time drop_sleep leaves out. */
    for (uint32_t i = 0; i < t->n_nodes; i++)
        drawn[i] = o->drop_sleep && i > 0 && bs_profile_is_sched_out(p, t->nodes[i].frame) ? 0 : t->nodes[i].self_ns;
    for (uint32_t i = t->n_nodes; i-- > 1;)
        drawn[t->nodes[i].parent] += drawn[i];

    size_t depth = 0;
    stack[0] = 0;
    at[0] = 0;
    if (path_put(path, 0, (o->omit_process_root || t->synthetic_root) ? "" : bs_frame_name(&p->frames, t->nodes[0].frame), 0) < 0)
        goto out;
    if (!(o->omit_process_root || t->synthetic_root) && emit(out, path, t->nodes[0].self_ns, unit) < 0)
        goto out;
    uint32_t next = ci.first[0];
    for (;;) {
        if (next == UINT32_MAX) { /* climb until a node has a next sibling */
            if (depth == 0)
                break;
            path->len = at[depth];
            next = ci.next[stack[depth]];
            depth--;
            continue;
        }
        const bs_pnode *n = &t->nodes[next];
        int is_sleep = bs_profile_is_sched_out(p, n->frame);
        if (o->drop_sleep && is_sleep) {
            next = ci.next[next];
            continue;
        }
        size_t base = path->len;
        int sep = base > 0;
        if (path_put(path, base, bs_frame_name(&p->frames, n->frame), sep) < 0)
            goto out;
        if (emit(out, path, n->self_ns, unit) < 0)
            goto out;
        if (depth + 1 >= max_depth) {
            /* The deepest frame drawn: everything below it becomes one leaf. */
            if (ci.first[next] != UINT32_MAX &&
                (path_put(path, path->len, "[deeper]", 1) < 0 || emit(out, path, drawn[next] - n->self_ns, unit) < 0))
                goto out;
            path->len = base;
            next = ci.next[next];
            continue;
        }
        depth++;
        stack[depth] = next;
        at[depth] = base;
        next = ci.first[next];
    }
    rc = ferror(out) ? -1 : 0;
out:
    free(ci.first);
    free(ci.next);
    free(stack);
    free(at);
    free(drawn);
    return rc;
}

int bs_write_folded(FILE *out, const bs_profile *p, const bs_folded_opts *opts)
{
    bs_folded_opts o = opts ? *opts : (bs_folded_opts){0};
    unsigned unit = o.ns_per_unit ? o.ns_per_unit : 1000;
    unsigned max_depth = o.max_depth ? o.max_depth : 4096;
    path_buf path = {0};
    int rc = 0;
    for (uint32_t i = 0; i < p->n_trees && rc == 0; i++)
        rc = write_tree(out, p, &p->trees[i], &o, &path, unit, max_depth);
    free(path.s);
    return rc;
}

int bs_write_folded_opts(FILE *out, const bs_profile *p, const bs_render_opts *o)
{
    bs_folded_opts fo = {0};
    fo.drop_sleep = o->drop_sleep;
    /* Folded output grows with depth times paths: a 200,000-deep recursion
     * would write gigabytes for a picture no viewer can draw. Below 1024
     * frames the subtree is summed into one "[deeper]" leaf (no time lost). */
    fo.max_depth = o->folded_max_depth ? o->folded_max_depth : 1024;
    fo.ns_per_unit = p->unit == BS_UNIT_NS ? 1000 : 1;
    return bs_write_folded(out, p, &fo);
}
