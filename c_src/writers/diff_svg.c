/* diff_svg.c — the differential flame graph (see diff_svg.h).
 *
 * Both profiles are laid onto one tree with a synthetic root
 * (engine/profile_union.h, processes paired by their labels without pids),
 * so equal stacks of BEFORE and AFTER become one node. A node's time is AFTER's, or BEFORE's normalised time
 * when AFTER does not have the stack at all; the usual layout and document
 * writer then draw it, and the before/after values kept beside each node
 * give the colours and tooltips. */
#include "diff_svg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/profile_union.h"
#include "flame_layout.h"
#include "palette.h"
#include "svg_document.h"
#include "xml_escape.h"


/* Rounds a non-negative amount to whole units (no libm: the CLI and the
 * tests do not link it). */
static uint64_t round_units(double v) { return v <= 0 ? 0 : v >= 1.8e19 ? UINT64_MAX : (uint64_t)(v + 0.5); }

typedef struct union_builder {
    bs_profile u;                /* owns the names */
    bs_profile_union index;      /* both profiles laid onto one tree, names in u */
    uint64_t *a_self, *b_self;   /* own time of each node in AFTER, BEFORE */
    uint64_t *a_total, *b_total; /* subtree times, filled at the end */
    unsigned char *in_after;     /* AFTER has this stack */
    size_t cap;
} union_builder;

static int grow_side(union_builder *b)
{
    if (b->index.tree.n_nodes <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap * 2 : 1024, old = b->cap;
    while (cap < b->index.tree.n_nodes)
        cap *= 2;
    uint64_t *a = realloc(b->a_self, cap * sizeof *a);
    if (a)
        b->a_self = a;
    uint64_t *bb = realloc(b->b_self, cap * sizeof *bb);
    if (bb)
        b->b_self = bb;
    unsigned char *in = realloc(b->in_after, cap);
    if (in)
        b->in_after = in;
    if (!a || !bb || !in)
        return -1;
    memset(b->a_self + old, 0, (cap - old) * sizeof *b->a_self);
    memset(b->b_self + old, 0, (cap - old) * sizeof *b->b_self);
    memset(b->in_after + old, 0, cap - old);
    b->cap = cap;
    return 0;
}

static int add_tree(union_builder *b, const bs_profile *p, const bs_ptree *t, int is_after, int drop_sleep,
                    uint32_t *map)
{
    uint32_t root = bs_profile_union_process_node(&b->index, p, t);
    if (root == BS_NO_NODE || bs_profile_union_add_tree(&b->index, p, t, root, drop_sleep, map) < 0 ||
        grow_side(b) < 0)
        return -1;
    for (uint32_t i = 0; i < t->n_nodes; i++) {
        if (map[i] == BS_NO_NODE)
            continue;
        if (is_after) {
            b->a_self[map[i]] += t->nodes[i].self_ns;
            b->in_after[map[i]] = 1;
        } else {
            b->b_self[map[i]] += t->nodes[i].self_ns;
        }
    }
    return 0;
}

static int add_profile(union_builder *b, const bs_profile *p, int is_after, int drop_sleep)
{
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        if (t->n_nodes == 0)
            continue;
        uint32_t *map = malloc((size_t)t->n_nodes * sizeof *map);
        if (!map)
            return -1;
        int rc = add_tree(b, p, t, is_after, drop_sleep, map);
        free(map);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Turns the index into the union profile's tree and sums subtree times.
 * Returns BEFORE's scale factor through *scale. */
static int finish_union(union_builder *b, double *scale)
{
    uint32_t n = b->index.tree.n_nodes;
    b->in_after[0] = 1;
    b->a_total = malloc((size_t)n * sizeof *b->a_total);
    b->b_total = malloc((size_t)n * sizeof *b->b_total);
    if (!b->a_total || !b->b_total || bs_profile_add_tree(&b->u, "all") < 0)
        return -1;
    memcpy(b->a_total, b->a_self, (size_t)n * sizeof *b->a_total);
    memcpy(b->b_total, b->b_self, (size_t)n * sizeof *b->b_total);
    for (uint32_t i = n; i-- > 1;) {
        b->a_total[b->index.tree.nodes[i].parent] += b->a_total[i];
        b->b_total[b->index.tree.nodes[i].parent] += b->b_total[i];
    }
    *scale = b->b_total[0] > 0 ? (double)b->a_total[0] / (double)b->b_total[0] : 1.0;
    bs_ptree *t = &b->u.trees[0];
    bs_pnode *nodes = realloc(t->nodes, (size_t)n * sizeof *nodes);
    if (!nodes)
        return -1;
    t->nodes = nodes;
    t->n_nodes = n;
    t->synthetic_root = 1;
    for (uint32_t i = 0; i < n; i++) {
        const bs_tree_node *s = &b->index.tree.nodes[i];
        nodes[i].parent = i == 0 ? UINT32_MAX : s->parent;
        nodes[i].frame = i == 0 ? nodes[0].frame : bs_profile_union_frame(&b->index, i);
        nodes[i].self_ns = b->in_after[i] ? b->a_self[i] : round_units((double)b->b_self[i] * *scale);
        nodes[i].total_ns = 0;
        nodes[i].calls = 0;
    }
    bs_profile_compute_totals(&b->u);
    return 0;
}

static void free_union(union_builder *b)
{
    bs_profile_union_free(&b->index);
    bs_profile_free(&b->u);
    free(b->a_self);
    free(b->b_self);
    free(b->a_total);
    free(b->b_total);
    free(b->in_after);
}

typedef struct diff_style {
    const union_builder *b;
    double scale;
    bs_unit unit;
    const char *count_name;
} diff_style;

static uint32_t node_of(const bs_flame_frame *f) { return f->n_refs ? f->refs[0].node : 0; }

static void diff_fill(void *ctx, const bs_flame_frame *f, char *buf, size_t cap)
{
    const diff_style *s = ctx;
    uint32_t n = node_of(f);
    if (f->depth == 0)
        snprintf(buf, cap, "rgb(255,255,255)");
    else
        bs_palette_diff((double)s->b->b_self[n] * s->scale, (double)s->b->a_self[n], buf, cap);
}

static void write_change(FILE *out, const diff_style *s, const char *what, double before, uint64_t after)
{
    char b[160], a[160];
    uint64_t before_units = round_units(before);
    bs_svg_format_amount(b, sizeof b, before_units, s->unit, s->count_name);
    bs_svg_format_amount(a, sizeof a, after, s->unit, s->count_name);
    fprintf(out, "%s before ", what);
    bs_xml_write(out, b);
    fputs(", after ", out);
    bs_xml_write(out, a);
    if (before_units == after)
        fputs(", +0.0%", out);
    else if (before_units == 0)
        fputs(", new", out);
    else
        fprintf(out, ", %+.1f%%", 100.0 * ((double)after - before) / before);
}

static void diff_describe(void *ctx, FILE *out, const bs_flame_frame *f, uint64_t grand_total)
{
    const diff_style *s = ctx;
    uint32_t n = node_of(f);
    (void)grand_total;
    fputs(" (", out);
    write_change(out, s, "self", (double)s->b->b_self[n] * s->scale, s->b->a_self[n]);
    fputs("; ", out);
    write_change(out, s, "total", (double)s->b->b_total[n] * s->scale, s->b->a_total[n]);
    fputs(")", out);
}

static int draw(FILE *out, union_builder *b, double scale, const bs_profile *after, const bs_render_opts *o)
{
    bs_flame_layout layout;
    if (bs_flame_layout_init(&layout, &b->u, 0) < 0)
        return -1;
    char note[256];
    snprintf(note, sizeof note, "before scaled by %.4g to the total of after; red: more own time, blue: less", scale);
    diff_style style = {b, scale, after->unit, o->count_name};
    bs_svg_doc doc = {
        .layout = &layout,
        .title = o->title ? o->title : "Differential Flame Graph",
        .subtitle = o->subtitle,
        .note = note,
        .width = o->width,
        .min_width = o->min_width,
        .inverted = o->inverted,
        .style = {diff_fill, diff_describe, &style},
    };
    int rc = bs_svg_write_document(out, &doc);
    bs_flame_layout_free(&layout);
    return rc;
}

int bs_write_diff_svg(FILE *out, const bs_profile *before, const bs_profile *after, const bs_render_opts *opts)
{
    bs_render_opts o = opts ? *opts : (bs_render_opts){0};
    union_builder b;
    memset(&b, 0, sizeof b);
    int rc = -1;
    double scale = 1.0;
    if (bs_profile_init(&b.u) < 0 || bs_profile_union_init(&b.index, &b.u.frames) < 0 || grow_side(&b) < 0)
        goto out;
    b.u.unit = after->unit;
    /* AFTER first: its stacks are the ones that decide the layout. */
    if (add_profile(&b, after, 1, o.drop_sleep) < 0 || add_profile(&b, before, 0, o.drop_sleep) < 0 ||
        finish_union(&b, &scale) < 0)
        goto out;
    rc = draw(out, &b, scale, after, &o);
out:
    if (rc < 0 && !ferror(out))
        errno = ENOMEM;
    free_union(&b);
    return rc;
}
