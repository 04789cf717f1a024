/* cli_input.c — reading the input files of a subcommand into one profile
 * (see cli.h): errors turned into the CLI's messages and exit codes, and
 * several inputs combined as if their folded stacks were concatenated: the
 * trees of the same process (same root frame) are merged, equal stacks
 * summed (engine/profile_union.h); other processes are added side by
 * side. */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/profile_union.h"
#include "../readers/readers.h"

static int report_read_error(const bs_read_error *err)
{
    if (err->line)
        bs_cli_error("%s:%" PRIu64 ": %s", err->file, err->line, err->msg);
    else
        bs_cli_error("%s: byte %" PRIu64 ": %s", err->file, err->offset, err->msg);
    return BS_EXIT_BAD_INPUT;
}

int bs_cli_read_input(const char *path, bs_profile *out)
{
    int is_stdin = strcmp(path, "-") == 0;
    if (!is_stdin) {
        /* Opened here first so that a missing or unreadable file is a
         * runtime failure with the system's reason, not malformed input. */
        FILE *probe = fopen(path, "rb");
        if (!probe) {
            bs_cli_error("%s: %s", path, strerror(errno));
            return BS_EXIT_FAILURE;
        }
        fclose(probe);
    }
    /* The reader tells .bspy from folded text by the first bytes and hands
     * them back itself when the input is a pipe, so standard input needs no
     * copy: it is opened again by name. */
    bs_read_error err;
    memset(&err, 0, sizeof err);
    if (bs_read_profile_file(is_stdin ? "/dev/stdin" : path, out, &err) == 0)
        return BS_EXIT_OK;
    if (is_stdin)
        snprintf(err.file, sizeof err.file, "<stdin>");
    return report_read_error(&err);
}

/* Merges tree s of src into tree d of dst (the same process): equal stacks
 * are summed, as when the two folded texts are concatenated. The two trees'
 * timelines cannot be interleaved, so d keeps none. */
static int merge_tree(bs_profile *dst, bs_ptree *d, const bs_profile *src, const bs_ptree *s)
{
    bs_profile_union u;
    if (bs_profile_union_init(&u, &dst->frames) < 0)
        return -1;
    uint32_t *d_node = malloc(((size_t)d->n_nodes + 1) * sizeof *d_node);
    uint32_t *s_node = malloc(((size_t)s->n_nodes + 1) * sizeof *s_node);
    bs_pnode *nodes = NULL;
    int rc = -1;
    if (!d_node || !s_node || bs_profile_union_add_tree(&u, dst, d, 0, 0, d_node) < 0 ||
        bs_profile_union_add_tree(&u, src, s, 0, 0, s_node) < 0)
        goto out;
    nodes = calloc(u.tree.n_nodes, sizeof *nodes);
    if (!nodes)
        goto out;
    for (uint32_t i = 0; i < u.tree.n_nodes; i++) {
        nodes[i].parent = i == 0 ? UINT32_MAX : u.tree.nodes[i].parent;
        nodes[i].frame = i == 0 ? d->nodes[0].frame : bs_profile_union_frame(&u, i);
    }
    for (uint32_t i = 0; i < d->n_nodes; i++) {
        nodes[d_node[i]].self_ns += d->nodes[i].self_ns;
        nodes[d_node[i]].calls += d->nodes[i].calls;
    }
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        nodes[s_node[i]].self_ns += s->nodes[i].self_ns;
        nodes[s_node[i]].calls += s->nodes[i].calls;
    }
    free(d->nodes);
    d->nodes = nodes;
    nodes = NULL;
    d->n_nodes = u.tree.n_nodes;
    free(d->spans);
    d->spans = NULL;
    d->n_spans = 0;
    d->events += s->events;
    d->dropped += s->dropped;
    rc = 0;
out:
    free(nodes);
    free(d_node);
    free(s_node);
    bs_profile_union_free(&u);
    return rc;
}

/* Appends src's tree s to dst as a new tree; node indices (and so spans)
 * stay as they are. */
static int append_tree(bs_profile *dst, const bs_ptree *s, const uint32_t *frame_of)
{
    if (bs_profile_add_tree(dst, bs_frame_name(&dst->frames, frame_of[s->nodes[0].frame])) < 0)
        return -1;
    bs_ptree *d = &dst->trees[dst->n_trees - 1];
    bs_pnode *nodes = realloc(d->nodes, (size_t)s->n_nodes * sizeof *nodes);
    if (!nodes)
        return -1;
    d->nodes = nodes;
    for (uint32_t i = 0; i < s->n_nodes; i++) {
        d->nodes[i] = s->nodes[i];
        d->nodes[i].frame = frame_of[s->nodes[i].frame];
    }
    d->n_nodes = s->n_nodes;
    d->synthetic_root = s->synthetic_root;
    d->events = s->events;
    d->dropped = s->dropped;
    if (s->n_spans) {
        d->spans = malloc((size_t)s->n_spans * sizeof *d->spans);
        if (!d->spans)
            return -1;
        memcpy(d->spans, s->spans, (size_t)s->n_spans * sizeof *d->spans);
        d->n_spans = s->n_spans;
    }
    return 0;
}

/* The dst tree src's tree s belongs to: the one of the same process (root
 * frame), or for a synthetic root any synthetic root; UINT32_MAX if none.
 * tree_of_root[frame] is the tree rooted at frame (UINT32_MAX: none). */
static uint32_t same_process(const bs_profile *dst, const bs_ptree *s, uint32_t root, const uint32_t *tree_of_root)
{
    if (!s->synthetic_root)
        return tree_of_root[root];
    for (uint32_t i = 0; i < dst->n_trees; i++)
        if (dst->trees[i].synthetic_root)
            return i;
    return UINT32_MAX;
}

/* Adds every tree of src to dst: a process dst already has gets src's
 * stacks summed into its tree, a new one is appended. Sets *merged when
 * some tree was merged. */
static int combine_trees(bs_profile *dst, const bs_profile *src, int *merged)
{
    uint32_t *frame_of = malloc(((size_t)src->frames.n + 1) * sizeof *frame_of);
    uint32_t *tree_of_root = NULL;
    int rc = -1;
    if (!frame_of)
        return -1;
    for (uint32_t i = 0; i < src->frames.n; i++) {
        const char *name = bs_frame_name(&src->frames, i);
        frame_of[i] = bs_frame_table_intern(&dst->frames, name, strlen(name));
        if (frame_of[i] == UINT32_MAX)
            goto out;
    }
    /* After interning: frame ids of dst no longer grow (add_tree interns
     * names that are already there). */
    tree_of_root = malloc(((size_t)dst->frames.n + 1) * sizeof *tree_of_root);
    if (!tree_of_root)
        goto out;
    memset(tree_of_root, 0xff, ((size_t)dst->frames.n + 1) * sizeof *tree_of_root);
    for (uint32_t i = 0; i < dst->n_trees; i++)
        if (!dst->trees[i].synthetic_root)
            tree_of_root[dst->trees[i].nodes[0].frame] = i;
    for (uint32_t ti = 0; ti < src->n_trees; ti++) {
        const bs_ptree *s = &src->trees[ti];
        uint32_t root = frame_of[s->nodes[0].frame];
        uint32_t into = same_process(dst, s, root, tree_of_root);
        if (into != UINT32_MAX) {
            if (merge_tree(dst, &dst->trees[into], src, s) < 0)
                goto out;
            *merged = 1;
        } else {
            if (append_tree(dst, s, frame_of) < 0)
                goto out;
            if (!s->synthetic_root)
                tree_of_root[root] = dst->n_trees - 1;
        }
    }
    rc = 0;
out:
    free(frame_of);
    free(tree_of_root);
    return rc;
}

/* What the combined profile says about itself: a timeline only if every
 * input has one and no two trees were merged (each tree then keeps its own
 * input's clock), and the first reason of truncation. */
static void combine_header(bs_profile *dst, const bs_profile *src, int merged)
{
    dst->has_timeline = dst->has_timeline && src->has_timeline && !merged;
    dst->timeline_truncated |= src->timeline_truncated;
    if (src->truncated[0])
        bs_profile_set_truncated(dst, src->truncated);
    if (src->duration_ns > dst->duration_ns)
        dst->duration_ns = src->duration_ns;
}

/* "a.bspy + b.bspy + ...", cut to what fits. */
static void name_sources(bs_profile *p, char *const *paths, int n)
{
    size_t cap = sizeof p->meta.source, used = 0;
    p->meta.source[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        int w = snprintf(p->meta.source + used, cap - used, "%s%s", i ? " + " : "", paths[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int bs_cli_read_inputs(char *const *paths, int n, bs_profile *out)
{
    int rc = bs_cli_read_input(paths[0], out);
    for (int i = 1; i < n && rc == BS_EXIT_OK; i++) {
        bs_profile next;
        int merged = 0;
        rc = bs_cli_read_input(paths[i], &next);
        if (rc != BS_EXIT_OK) {
            bs_profile_free(out);
            return rc;
        }
        if (next.unit != out->unit) {
            bs_cli_error("%s: cannot be combined with %s: one holds recorded times, the other sample counts",
                         paths[i], paths[0]);
            rc = BS_EXIT_USAGE;
        } else if (combine_trees(out, &next, &merged) < 0) {
            bs_cli_error("%s: out of memory", paths[i]);
            rc = BS_EXIT_FAILURE;
        } else {
            combine_header(out, &next, merged);
        }
        bs_profile_free(&next);
        if (rc != BS_EXIT_OK)
            bs_profile_free(out);
    }
    if (rc != BS_EXIT_OK)
        return rc;
    if (n > 1)
        name_sources(out, paths, n);
    bs_profile_compute_totals(out);
    return BS_EXIT_OK;
}
