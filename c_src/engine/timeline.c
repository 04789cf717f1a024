/* timeline.c — span recording (see timeline.h). */
#include "timeline.h"

#include <string.h>

#include "call_tree.h"

#define QUOTA_CHUNK 4096u

void bs_span_quota_init(bs_span_quota *q, uint64_t max_spans) { atomic_init(&q->remaining, max_spans); }

void bs_timeline_init(bs_timeline *tl, bs_span_quota *quota, bs_budget *budget)
{
    memset(tl, 0, sizeof *tl);
    tl->quota = quota;
    tl->budget = budget;
    tl->top = 0;
}

void bs_timeline_free(bs_timeline *tl)
{
    bs_budget_free(tl->budget, tl->spans, (size_t)tl->cap * sizeof *tl->spans);
    bs_budget_free(tl->budget, tl->open, (size_t)tl->open_cap * sizeof *tl->open);
    if (tl->quota && tl->reserved)
        atomic_fetch_add(&tl->quota->remaining, tl->reserved);
    memset(tl, 0, sizeof *tl);
}

static int take_quota(bs_timeline *tl)
{
    if (tl->reserved)
        return 1;
    if (!tl->quota)
        return 0;
    uint64_t cur = atomic_load(&tl->quota->remaining);
    for (;;) {
        if (cur == 0)
            return 0;
        uint64_t take = cur < QUOTA_CHUNK ? cur : QUOTA_CHUNK;
        if (atomic_compare_exchange_weak(&tl->quota->remaining, &cur, cur - take)) {
            tl->reserved = take;
            return 1;
        }
    }
}

static int ensure_open_cap(bs_timeline *tl, uint32_t depth)
{
    if (depth < tl->open_cap)
        return 1;
    uint32_t cap = tl->open_cap ? tl->open_cap : 64;
    while (cap <= depth)
        cap *= 2;
    uint32_t *open = bs_budget_realloc(tl->budget, tl->open, (size_t)tl->open_cap * sizeof *open,
                                       (size_t)cap * sizeof *open);
    if (!open)
        return 0;
    for (uint32_t i = tl->open_cap; i < cap; i++)
        open[i] = BS_NO_SPAN;
    tl->open = open;
    tl->open_cap = cap;
    return 1;
}

static uint32_t new_span(bs_timeline *tl, uint32_t node, uint64_t t)
{
    if (!take_quota(tl)) {
        tl->truncated = 1;
        return BS_NO_SPAN;
    }
    if (tl->n == tl->cap) {
        uint32_t cap = tl->cap ? tl->cap * 2 : 256;
        bs_span *spans = bs_budget_realloc(tl->budget, tl->spans, (size_t)tl->cap * sizeof *spans,
                                           (size_t)cap * sizeof *spans);
        if (!spans) {
            tl->truncated = 1;
            return BS_NO_SPAN;
        }
        tl->spans = spans;
        tl->cap = cap;
    }
    tl->reserved--;
    bs_span *s = &tl->spans[tl->n];
    s->node = node;
    s->start_ns = t;
    s->end_ns = 0;
    return tl->n++;
}

static void close_at(bs_timeline *tl, uint32_t depth, uint64_t t)
{
    if (depth < tl->open_cap && tl->open[depth] != BS_NO_SPAN) {
        tl->spans[tl->open[depth]].end_ns = t;
        tl->open[depth] = BS_NO_SPAN;
    }
}

/* Opens spans for the path from just below `ancestor` down to `node`. The
 * path is walked upwards, so spans are created leaf first and then reversed
 * in place: the array stays sorted by (start, depth), parents first. */
static void open_path(bs_timeline *tl, const bs_call_tree *tree, uint32_t ancestor, uint32_t node, uint64_t t)
{
    uint32_t first = tl->n;
    for (uint32_t n = node; n != ancestor; n = tree->nodes[n].parent) {
        uint32_t depth = tree->nodes[n].depth;
        if (!ensure_open_cap(tl, depth)) {
            tl->truncated = 1;
            continue;
        }
        tl->open[depth] = new_span(tl, n, t);
    }
    for (uint32_t i = first, j = tl->n; j-- > i; i++) {
        bs_span tmp = tl->spans[i];
        tl->spans[i] = tl->spans[j];
        tl->spans[j] = tmp;
    }
    for (uint32_t i = first; i < tl->n; i++)
        tl->open[tree->nodes[tl->spans[i].node].depth] = i;
}

void bs_timeline_move(bs_timeline *tl, const bs_call_tree *tree, uint32_t to, uint64_t t)
{
    uint32_t from = tl->top;
    if (from == to)
        return;
    /* Close frames of the old path down to the common ancestor. */
    uint32_t a = from, b = to;
    while (tree->nodes[a].depth > tree->nodes[b].depth) {
        close_at(tl, tree->nodes[a].depth, t);
        a = tree->nodes[a].parent;
    }
    while (tree->nodes[b].depth > tree->nodes[a].depth)
        b = tree->nodes[b].parent;
    while (a != b) {
        close_at(tl, tree->nodes[a].depth, t);
        a = tree->nodes[a].parent;
        b = tree->nodes[b].parent;
    }
    open_path(tl, tree, a, to, t);
    tl->top = to;
}
