/* span_frames.c — the span-frame rules of span_frames.h. */
#include "span_frames.h"

#include <string.h>

#include "../common/text_fit.h"
#include "stack_rebuild.h"

static uint32_t depth_of(const bs_proc *p, uint32_t n) { return p->tree.nodes[n].depth; }
static uint32_t parent_of(const bs_proc *p, uint32_t n) { return p->tree.nodes[n].parent; }

uint32_t bs_spans_cut(bs_proc *p, uint32_t to)
{
    bs_span_stack *s = p->spans;
    if (!s || !s->n)
        return to;
    uint32_t d = depth_of(p, to);
    uint32_t i = s->n;
    while (i > 0 && depth_of(p, s->open[i - 1].node) > d)
        i--;
    /* open[i..n) lie above `to`: keep those sitting directly on it (or on
     * a kept span), re-pushed in order. */
    uint32_t keep = i, at = to, below = to;
    for (uint32_t j = i; j < s->n; j++) {
        uint32_t old = s->open[j].node;
        if (parent_of(p, old) != below) {
            p->span_counts.lost++;
            continue;
        }
        uint32_t c = bs_call_tree_child(&p->tree, at, &s->open[j].key);
        if (c == BS_NO_NODE) {
            p->span_counts.refused++;
            continue; /* the spans above it no longer sit on a kept span */
        }
        below = old;
        at = c;
        s->open[keep] = s->open[j];
        s->open[keep].node = c;
        keep++;
    }
    s->n = keep;
    return at;
}

static int is_anchor(const bs_key *k, const bs_key *anchors, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (bs_key_eq(k, &anchors[i]))
            return 1;
    return 0;
}

uint32_t bs_spans_open(bs_proc *p, const bs_key *span, const bs_key *anchors, uint32_t n_anchors)
{
    if (!p->spans) {
        p->spans = bs_budget_alloc(p->tree.budget, sizeof *p->spans);
        if (!p->spans) {
            p->span_counts.refused++;
            return BS_NO_NODE;
        }
        memset(p->spans, 0, sizeof *p->spans);
    }
    bs_span_stack *s = p->spans;
    if (s->n >= BS_MAX_OPEN_SPANS) {
        p->span_counts.refused++;
        return BS_NO_NODE;
    }
    uint32_t cur = p->current, anchor = cur;
    if (n_anchors) {
        for (uint32_t n = cur; n != 0; n = parent_of(p, n))
            if (is_anchor(&p->tree.nodes[n].key, anchors, n_anchors)) {
                anchor = parent_of(p, n);
                break;
            }
    }
    /* Never below the innermost open span: spans nest. */
    if (s->n && depth_of(p, anchor) < depth_of(p, s->open[s->n - 1].node))
        anchor = s->open[s->n - 1].node;
    uint32_t k = depth_of(p, cur) - depth_of(p, anchor);
    if (k > BS_SPAN_REROOT_MAX) {
        anchor = cur;
        k = 0;
    }
    /* No open span lies above the anchor: the frames above it are real. */
    uint32_t n = cur;
    for (uint32_t i = k; i-- > 0; n = parent_of(p, n))
        s->scratch[i] = p->tree.nodes[n].key;
    uint32_t sn = bs_call_tree_child(&p->tree, anchor, span);
    if (sn == BS_NO_NODE) {
        p->span_counts.refused++;
        return BS_NO_NODE;
    }
    p->tree.nodes[sn].calls++;
    s->open[s->n].key = *span;
    s->open[s->n].node = sn;
    s->open[s->n].start_ns = 0; /* set by the caller, which knows the time */
    s->n++;
    p->span_counts.started++;
    uint32_t at = sn;
    for (uint32_t i = 0; i < k; i++) {
        uint32_t c = bs_call_tree_child(&p->tree, at, &s->scratch[i]);
        if (c == BS_NO_NODE)
            break; /* out of memory: the frames above are forgotten */
        at = c;
    }
    return at;
}

uint32_t bs_spans_close(bs_proc *p, const bs_key *span, int *matched)
{
    bs_span_stack *s = p->spans;
    *matched = 0;
    uint32_t i = s ? s->n : 0;
    while (i > 0 && !bs_key_eq(&s->open[i - 1].key, span))
        i--;
    if (i == 0) {
        p->span_counts.unmatched++;
        return p->current;
    }
    i--;
    *matched = 1;
    p->span_counts.closed++;
    p->span_counts.lost += s->n - 1 - i; /* started inside it, never stopped */
    uint32_t base = parent_of(p, s->open[i].node);
    s->n = i;
    uint32_t cur = p->current;
    uint32_t k = depth_of(p, cur) - depth_of(p, base);
    if (k > BS_SPAN_REROOT_MAX)
        return base; /* the real frames above are forgotten; later events rebuild them */
    /* The real frames above base, root first; span frames above base are
     * exactly the spans removed. */
    uint32_t from = k;
    for (uint32_t n = cur; n != base; n = parent_of(p, n))
        if (!bs_key_is_span(&p->tree.nodes[n].key))
            s->scratch[--from] = p->tree.nodes[n].key;
    uint32_t at = base;
    for (uint32_t j = from; j < k; j++) {
        uint32_t c = bs_call_tree_child(&p->tree, at, &s->scratch[j]);
        if (c == BS_NO_NODE)
            break;
        at = c;
    }
    return at;
}

void bs_spans_clear(bs_proc *p, uint64_t *counter)
{
    if (!p->spans)
        return;
    *counter += p->spans->n;
    p->spans->n = 0;
}

int bs_spans_note(bs_proc *p, const bs_key *span, const char *text, size_t len)
{
    bs_span_stack *s = p->spans;
    uint32_t i = s ? s->n : 0;
    while (i > 0 && !bs_key_eq(&s->open[i - 1].key, span))
        i--;
    if (i == 0)
        return -1;
    bs_budget *b = p->tree.budget;
    if (p->n_notes == p->cap_notes) {
        uint32_t cap = p->cap_notes ? p->cap_notes * 2 : 16;
        bs_span_note *n = bs_budget_realloc(b, p->notes, (size_t)p->cap_notes * sizeof *n, (size_t)cap * sizeof *n);
        if (!n) {
            p->span_counts.refused++;
            return -1;
        }
        p->notes = n;
        p->cap_notes = cap;
    }
    char *copy = bs_budget_alloc(b, BS_SPAN_NOTE_MAX);
    if (!copy) {
        p->span_counts.refused++;
        return -1;
    }
    /* A longer note ends at a word, with how much is missing. */
    bs_text_fit(copy, BS_SPAN_NOTE_MAX, text, len);
    p->notes[p->n_notes++] = (bs_span_note){s->open[i - 1].node, s->open[i - 1].start_ns, copy};
    return 0;
}

void bs_spans_free_notes(bs_proc *p)
{
    for (uint32_t i = 0; i < p->n_notes; i++)
        bs_budget_free(p->tree.budget, p->notes[i].text, BS_SPAN_NOTE_MAX);
    bs_budget_free(p->tree.budget, p->notes, (size_t)p->cap_notes * sizeof *p->notes);
    p->notes = NULL;
    p->n_notes = p->cap_notes = 0;
}
