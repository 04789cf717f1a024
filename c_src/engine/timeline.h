/* timeline.h — the bounded, time-ordered record of calls of one process.
 *
 * The call tree says how much time each stack took in total; the timeline
 * says when: one span (tree node, start, end) per entry into a frame, which
 * flame charts, Chrome traces and speedscope's evented profiles need. Spans
 * are opened and closed as the stack changes, so per process they are
 * properly nested and sorted by start. A session-wide quota caps the number
 * of spans; calls beyond it are still aggregated in the tree but not kept
 * here, and the timeline is marked truncated. Processes take the quota in
 * chunks, so the hot path does not touch a shared cache line per call. */
#ifndef BS_TIMELINE_H
#define BS_TIMELINE_H

#include <stdatomic.h>
#include <stdint.h>

#include "budget.h"

#define BS_NO_SPAN UINT32_MAX

typedef struct bs_span {
    uint32_t node;     /* call-tree node entered */
    uint64_t start_ns;
    uint64_t end_ns;   /* 0 while open */
} bs_span;

/* Shared by all processes of a session. */
typedef struct bs_span_quota {
    _Atomic uint64_t remaining;
} bs_span_quota;

void bs_span_quota_init(bs_span_quota *q, uint64_t max_spans);

typedef struct bs_timeline {
    bs_span *spans;
    uint32_t n, cap;
    uint32_t *open;        /* open[d] = span of the frame at depth d (BS_NO_SPAN if not kept) */
    uint32_t open_cap;
    uint32_t top;          /* call-tree node whose path is open */
    uint64_t reserved;     /* spans taken from the quota and not used yet */
    bs_span_quota *quota;
    bs_budget *budget;
    int truncated;         /* a span was not kept */
} bs_timeline;

void bs_timeline_init(bs_timeline *tl, bs_span_quota *quota, bs_budget *budget);
void bs_timeline_free(bs_timeline *tl);

/* Records that the open path changed from tl->top to `to` at time t: spans of
 * frames no longer on the path are closed, spans of new frames are opened.
 * parent_of/depth_of describe the call tree. */
struct bs_call_tree;
void bs_timeline_move(bs_timeline *tl, const struct bs_call_tree *tree, uint32_t to, uint64_t t);

#endif
