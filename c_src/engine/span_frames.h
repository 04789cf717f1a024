/* span_frames.h — telemetry spans as frames of a process's rebuilt stack.
 *
 * A span frame (key module BS_SPAN_MODULE) is pushed where its span started
 * and stays on the stack while the span is open, so the functions that run
 * inside the span are drawn above it. The call/return rules of
 * stack_rebuild.h pop to a frame; with spans open they pop only the real
 * frames above it and push the open span frames that sat directly on it
 * back on top. The rules:
 *  - start: the span's anchor is the frame below the topmost frame equal to
 *    one of the `anchors` keys (telemetry:execute/3, or do_execute/4 which
 *    execute/3 tail-calls: the frame below is the one that emitted the
 *    event, e.g. telemetry:span/3), or the top of the stack when there is
 *    none. The
 *    span frame is inserted directly above the anchor; the frames that were
 *    above the anchor (the handler's own calls) are re-rooted above the span.
 *  - stop: the innermost open span with that key is removed from the stack
 *    wherever it is (frames above it are re-rooted under its parent). Open
 *    spans started inside it and not stopped are removed too and counted as
 *    lost. A stop with no open span of its key is counted as unmatched.
 *  - a pop to frame C keeps an open span only if it sits directly on C (or
 *    on a kept span); a span whose anchor was popped is removed and counted
 *    as lost (its stop will then count as unmatched).
 *  - exit: spans still open are counted as died; end of recording: counted
 *    as open at the end (their timeline entries end there).
 * Caps: BS_MAX_OPEN_SPANS open spans per process (deeper ones are refused
 * and counted), BS_SPAN_REROOT_MAX frames re-rooted at once (a start with
 * more frames between anchor and top anchors at the top instead). The
 * per-process state (about 3 KiB) is allocated from the session's budget at
 * a process's first span; processes without spans pay one NULL test per pop. */
#ifndef BS_SPAN_FRAMES_H
#define BS_SPAN_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "frame_key.h"

#define BS_MAX_OPEN_SPANS 64u
#define BS_SPAN_REROOT_MAX 64u

typedef struct bs_span_counts {
    uint64_t started;     /* span frames pushed */
    uint64_t closed;      /* stopped normally (stop or exception) */
    uint64_t unmatched;   /* stops with no open span of their key */
    uint64_t lost;        /* removed because their anchor was popped, or left open inside a stopped span */
    uint64_t died;        /* open when the process exited */
    uint64_t open_at_end; /* open when recording ended */
    uint64_t refused;     /* not recorded: too deep, or no memory */
} bs_span_counts;

typedef struct bs_open_span {
    bs_key key;
    uint32_t node;     /* its call-tree node, on the current path */
    uint64_t start_ns; /* when it started (its timeline entry's start) */
} bs_open_span;

/* Text attached to one span (metadata, an exception's kind and reason):
 * the span is its node and start time, as in the timeline. */
#define BS_SPAN_NOTE_MAX 512u
typedef struct bs_span_note {
    uint32_t node;
    uint64_t start_ns;
    char *text; /* NUL-terminated, at most BS_SPAN_NOTE_MAX - 1 bytes */
} bs_span_note;

typedef struct bs_span_stack {
    bs_open_span open[BS_MAX_OPEN_SPANS]; /* by depth, outermost first */
    uint32_t n;
    bs_key scratch[BS_SPAN_REROOT_MAX];    /* frames being re-rooted */
} bs_span_stack;

struct bs_proc;

/* Used by stack_rebuild.c only. Each returns the node that becomes current. */
/* The stack is about to be cut to node `to` (an ancestor of current, or 0):
 * returns `to` with the open spans that survive pushed back on it. */
uint32_t bs_spans_cut(struct bs_proc *p, uint32_t to);
/* Pushes a span frame (see the rules above); BS_NO_NODE if refused. */
uint32_t bs_spans_open(struct bs_proc *p, const bs_key *span, const bs_key *anchors, uint32_t n_anchors);
/* Removes the innermost open span `span`; *matched says if there was one. */
uint32_t bs_spans_close(struct bs_proc *p, const bs_key *span, int *matched);
/* Attaches text (len bytes, cut to fit) to the innermost open span `span`;
 * 0, or -1 (no such span, or no memory: counted as refused). */
int bs_spans_note(struct bs_proc *p, const bs_key *span, const char *text, size_t len);
/* Frees the notes of a process. */
void bs_spans_free_notes(struct bs_proc *p);
/* Forgets every open span (process exit or end of recording). */
void bs_spans_clear(struct bs_proc *p, uint64_t *counter);

#endif
