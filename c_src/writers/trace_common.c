/* trace_common.c — numbers, the span walk and per-frame strings shared by
 * the time-ordered writers (see trace_common.h). */
#include "trace_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t bs_fmt_uint(char *buf, uint64_t v)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        buf[i] = digits[n - 1 - i];
    buf[n] = '\0';
    return n;
}

/* Appends '.' and the `width` digits of frac (zero-padded), trailing zeros
 * dropped; nothing when frac is 0. */
static size_t put_fraction(char *buf, uint64_t frac, unsigned width)
{
    if (frac == 0) {
        buf[0] = '\0';
        return 0;
    }
    while (frac % 10 == 0) {
        frac /= 10;
        width--;
    }
    buf[0] = '.';
    for (unsigned i = width; i > 0; i--) {
        buf[i] = (char)('0' + frac % 10);
        frac /= 10;
    }
    buf[width + 1] = '\0';
    return width + 1;
}

size_t bs_fmt_us(char *buf, uint64_t ns)
{
    size_t n = bs_fmt_uint(buf, ns / 1000);
    return n + put_fraction(buf + n, ns % 1000, 3);
}

uint64_t bs_ns_to_binary_us(uint64_t ns)
{
    /* ns * 4096 / 1000 = ns * 512 / 125, split so that nothing overflows. */
    return ns / 125 * 512 + ((ns % 125) * 512 + 62) / 125;
}

size_t bs_fmt_binary_us(char *buf, uint64_t k)
{
    size_t n = bs_fmt_uint(buf, k >> 12);
    /* 2^-12 = 0.000244140625 exactly: twelve decimals. */
    return n + put_fraction(buf + n, (k & 4095) * 244140625ull, 12);
}

uint64_t bs_spans_origin(const bs_profile *p)
{
    uint64_t origin = UINT64_MAX;
    for (uint32_t i = 0; i < p->n_trees; i++)
        for (uint32_t s = 0; s < p->trees[i].n_spans; s++)
            if (p->trees[i].spans[s].start_ns < origin)
                origin = p->trees[i].spans[s].start_ns;
    return origin == UINT64_MAX ? 0 : origin;
}

int bs_profile_has_spans(const bs_profile *p)
{
    for (uint32_t i = 0; i < p->n_trees; i++)
        if (p->trees[i].n_spans > 0)
            return 1;
    return 0;
}

/* Pre-order numbers and subtree sizes: a is a proper ancestor of d exactly
 * when pre[a] < pre[d] < pre[a] + size[a]. Parents have smaller indices, so
 * both come from two linear passes, without a traversal. */
typedef struct ancestry {
    uint32_t *pre, *size;
} ancestry;

static int ancestry_init(ancestry *a, const bs_ptree *t)
{
    uint32_t n = t->n_nodes;
    uint32_t *next = malloc((size_t)n * sizeof *next);
    a->pre = malloc((size_t)n * sizeof *a->pre);
    a->size = malloc((size_t)n * sizeof *a->size);
    if (!next || !a->pre || !a->size) {
        free(next);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++)
        a->size[i] = 1;
    for (uint32_t i = n; i-- > 1;)
        a->size[t->nodes[i].parent] += a->size[i];
    a->pre[0] = 0;
    next[0] = 1; /* pre-order number of the next child of each node */
    for (uint32_t i = 1; i < n; i++) {
        uint32_t par = t->nodes[i].parent;
        a->pre[i] = next[par];
        next[par] += a->size[i];
        next[i] = a->pre[i] + 1;
    }
    free(next);
    return 0;
}

static int is_ancestor(const ancestry *a, uint32_t anc, uint32_t node)
{
    return a->pre[anc] < a->pre[node] && a->pre[node] < a->pre[anc] + a->size[anc];
}

typedef struct open_span {
    uint32_t node;
    uint64_t end;
} open_span;

typedef struct span_stack {
    open_span *items;
    size_t n, cap;
    uint64_t last_at; /* latest time given to the visitor */
} span_stack;

static int stack_push(span_stack *st, uint32_t node, uint64_t end)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        open_span *items = realloc(st->items, cap * sizeof *items);
        if (!items)
            return -1;
        st->items = items;
        st->cap = cap;
    }
    st->items[st->n++] = (open_span){node, end};
    return 0;
}

/* Closes the innermost open span at min(its end, limit), never earlier than
 * anything already reported. */
static int stack_pop(span_stack *st, uint64_t limit, const bs_span_visitor *v)
{
    open_span top = st->items[--st->n];
    uint64_t at = top.end < limit ? top.end : limit;
    if (at < st->last_at)
        at = st->last_at;
    st->last_at = at;
    return v->close ? v->close(v->ctx, top.node, at) : 0;
}

/* The innermost open span encloses a span [start, end] of node if its node
 * is an ancestor and it has not ended before start. A span that ends exactly
 * at start still holds a zero-length span there (a call at the very end),
 * not one with a length. */
static int encloses(const ancestry *a, const open_span *top, uint32_t node, uint64_t start, uint64_t end)
{
    if (!is_ancestor(a, top->node, node))
        return 0;
    return top->end > start || (top->end == start && end == start);
}

int bs_walk_spans(const bs_profile *p, const bs_ptree *t, const bs_span_walk_opts *o, const bs_span_visitor *v)
{
    bs_span_walk_opts opts = o ? *o : (bs_span_walk_opts){0};
    ancestry a = {0};
    span_stack st = {0};
    int rc = -1;
    if (t->n_spans == 0)
        return 0;
    if (ancestry_init(&a, t) < 0) {
        errno = ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < t->n_spans; i++) {
        const bs_pspan *s = &t->spans[i];
        uint32_t node = s->node;
        if (node == 0 || node >= t->n_nodes)
            continue;
        if (opts.skip_sleep && bs_profile_is_sched_out(p, t->nodes[node].frame))
            continue;
        uint64_t start = s->start_ns < st.last_at ? st.last_at : s->start_ns;
        uint64_t end = s->end_ns < start ? start : s->end_ns;
        while (st.n > 0 && !encloses(&a, &st.items[st.n - 1], node, start, end))
            if (stack_pop(&st, start, v) < 0)
                goto out;
        if (st.n > 0 && end > st.items[st.n - 1].end)
            end = st.items[st.n - 1].end;
        if (opts.skip_empty && end == start)
            continue;
        if (stack_push(&st, node, end) < 0) {
            errno = ENOMEM;
            goto out;
        }
        st.last_at = start;
        if (v->open(v->ctx, node, start, end) < 0)
            goto out;
    }
    while (st.n > 0)
        if (stack_pop(&st, UINT64_MAX, v) < 0)
            goto out;
    rc = 0;
out:
    free(a.pre);
    free(a.size);
    free(st.items);
    return rc;
}

int bs_walk_samples(const bs_ptree *t, unsigned max_depth, const bs_sample_visitor *v)
{
    uint32_t n = t->n_nodes, limit = max_depth ? max_depth : BS_DEFAULT_SAMPLE_DEPTH;
    uint32_t *depth = malloc((size_t)n * sizeof *depth);
    uint64_t *own = malloc((size_t)n * sizeof *own), *subtree = malloc((size_t)n * sizeof *subtree);
    int rc = -1;
    if (!depth || !own || !subtree) {
        errno = ENOMEM;
        goto out;
    }
    depth[0] = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            depth[i] = depth[t->nodes[i].parent] + 1;
        own[i] = subtree[i] = v->weight(v->ctx, t, i);
    }
    for (uint32_t i = n; i-- > 1;)
        subtree[t->nodes[i].parent] += subtree[i];
    for (uint32_t i = 0; i < n; i++) {
        if (depth[i] > limit)
            continue;
        if (own[i] > 0 && v->sample(v->ctx, t, i, 0, own[i]) < 0)
            goto out;
        if (depth[i] == limit && subtree[i] > own[i] && v->sample(v->ctx, t, i, 1, subtree[i] - own[i]) < 0)
            goto out;
    }
    rc = 0;
out:
    free(depth);
    free(own);
    free(subtree);
    return rc;
}

int bs_profile_deeper_than(const bs_profile *p, unsigned max_depth)
{
    uint32_t limit = max_depth ? max_depth : BS_DEFAULT_SAMPLE_DEPTH;
    for (uint32_t ti = 0; ti < p->n_trees; ti++) {
        const bs_ptree *t = &p->trees[ti];
        if (t->n_nodes <= limit)
            continue; /* too few nodes to be that deep */
        uint32_t *depth = malloc((size_t)t->n_nodes * sizeof *depth);
        if (!depth) {
            errno = ENOMEM;
            return -1;
        }
        depth[0] = 0;
        int deeper = 0;
        for (uint32_t i = 1; i < t->n_nodes && !deeper; i++) {
            depth[i] = depth[t->nodes[i].parent] + 1;
            deeper = depth[i] > limit;
        }
        free(depth);
        if (deeper)
            return 1;
    }
    return 0;
}

int bs_frame_strings_init(bs_frame_strings *fs, uint32_t n_frames)
{
    fs->n = n_frames;
    fs->text = calloc(n_frames ? n_frames : 1, sizeof *fs->text);
    fs->len = calloc(n_frames ? n_frames : 1, sizeof *fs->len);
    if (!fs->text || !fs->len) {
        bs_frame_strings_free(fs);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void bs_frame_strings_free(bs_frame_strings *fs)
{
    if (fs->text)
        for (uint32_t i = 0; i < fs->n; i++)
            free(fs->text[i]);
    free(fs->text);
    free(fs->len);
    memset(fs, 0, sizeof *fs);
}

const char *bs_frame_string(bs_frame_strings *fs, const bs_profile *p, uint32_t frame,
                            bs_frame_string_maker make, void *ctx, size_t *len)
{
    if (frame >= fs->n)
        return NULL;
    if (!fs->text[frame]) {
        char *buf = NULL;
        size_t n = 0;
        FILE *mem = open_memstream(&buf, &n);
        if (!mem)
            return NULL;
        make(mem, bs_frame_name(&p->frames, frame), frame, ctx);
        if (fclose(mem) != 0 || !buf) {
            free(buf);
            errno = ENOMEM;
            return NULL;
        }
        fs->text[frame] = buf;
        fs->len[frame] = n;
    }
    *len = fs->len[frame];
    return fs->text[frame];
}
