/* stack_rebuild.h — turns one process's trace events into its call tree.
 *
 * Rules (how the VM reports calls under `call`, `arity`, `return_to` and a
 * match spec that sends {caller}):
 *  - call M with caller C: pop to the nearest frame equal to C (a tail call
 *    reports the frame it will return to), then push M. If C is not on the
 *    stack it was entered before tracing began: the stack becomes [C] (a new
 *    root, as for return_to), then M is pushed. An unknown caller keeps the
 *    stack; BS_CALLER_ROOT empties it first (the caller is code the session
 *    does not trace, such as beamspy's own wrapper).
 *  - beamspy's own code in a seeded process (one that profiles itself, or
 *    calls beamspy while profiled live): its frames are never on the stack
 *    and it sits above real ones (the seeded stack, or the frame that called
 *    beamspy:stop), so emptying the stack there would cut the process's
 *    stack in two. A call from own code pushes on the frame own code was
 *    entered from (its floor: the top frame when own code was first seen,
 *    the seeded top when the seed says own code was above it); a tail call
 *    of the frame own code called replaces it. A return into own code pops
 *    to the floor, and the next return_to M is own code returning: M is
 *    looked for from the top frame itself. Elsewhere (apply's wrapper at
 *    the bottom of the process) own code is the root, as above.
 *  - return_to M: pop the returning frame, then pop until M is on top; if M is
 *    not on the stack it becomes a new root frame. return_to undefined (or to
 *    untraced code) empties the stack. One return_to may unwind many frames
 *    (exceptions, chains of tail calls).
 *  - return_from M (a {return_trace} match spec, or exception_from): M
 *    returns. Pop to the nearest frame M, then pop M itself; if M is not on
 *    the stack it was entered before tracing began, so every frame we know
 *    lies inside it and has been left: the stack empties.
 *  - time between two events is charged to the stack that was current during
 *    the interval: to its top frame while running, to a SLEEP leaf while
 *    scheduled out (if enabled), to a GC leaf during garbage collection;
 *    with compensation on, less the tracer's cost of the event that ends
 *    it, never below zero (compensation.h).
 *  - scheduled-out time is split (bs_proc_split_waits) when the source also
 *    reports message arrivals (trace flag `receive'): the VM emits the
 *    `receive' event of the message (or `timeout') that woke a process
 *    waiting in a receive right after its `in', before anything else. So
 *    an out interval whose `in' is followed first by a receive is WAIT
 *    (waiting for a message); one followed first by code running (a call,
 *    a return, a span) is RUNNABLE (preempted, yielded, rescheduled by the
 *    tracer's own work: able to run, waiting for a scheduler). A process
 *    waiting in a receive is also scheduled in to handle signals (monitors,
 *    links, process_info, code purge checks, GC requests): `in', perhaps a
 *    GC, then `out', no code run. Such a slice tells nothing: the out
 *    intervals on both sides of it are told apart together, by the first
 *    event after an `in' that is not a reschedule or a GC. An exit right
 *    after the `in' (killed while waiting: the VM sends `in', then
 *    `out_exited') keeps them WAIT, and so does the end of the recording
 *    while scheduled out. The intervals are charged to WAIT and moved to
 *    RUNNABLE when code runs (a WAIT leaf left with no time and no entry
 *    stays in the tree; profiles leave it out). Without the split it is
 *    SLEEP.
 * Events of one process must arrive in time order; nothing here is shared
 * between processes, so no locking is needed. */
#ifndef BS_STACK_REBUILD_H
#define BS_STACK_REBUILD_H

#include <stdint.h>

#include "call_tree.h"
#include "compensation.h"
#include "span_frames.h"
#include "timeline.h"

typedef enum bs_caller_kind {
    BS_CALLER_UNKNOWN,   /* no {caller} match spec: keep the stack */
    BS_CALLER_UNDEFINED, /* {cp, undefined}: keep the stack */
    BS_CALLER_ROOT,      /* the caller is untraced code: empty the stack */
    BS_CALLER_FRAME,     /* the caller is a frame: pop to it */
    BS_CALLER_OWN_CODE   /* the caller is beamspy's own code: ROOT, except in
                          * a seeded process (rules above) */
} bs_caller_kind;

typedef enum bs_run_state { BS_RUNNING, BS_SCHEDULED_OUT, BS_IN_GC, BS_EXITED } bs_run_state;

typedef struct bs_proc {
    bs_call_tree tree;
    uint32_t current;        /* node whose path is the current stack */
    uint64_t last_ns;        /* time of the previous event */
    bs_run_state state;
    bs_run_state state_before_gc;
    unsigned charge_sleep : 1;
    unsigned charge_gc : 1;
    unsigned truncated : 1;  /* an event was dropped for lack of memory */
    unsigned skip_root : 1;  /* time with an empty stack is not charged (spans-only recording) */
    unsigned split_waits : 1; /* WAIT/RUNNABLE instead of SLEEP */
    unsigned woke : 1;       /* scheduled in; whether it waited is told by the next event */
    unsigned seeded : 1;     /* running before recording began (bs_proc_seed) */
    unsigned in_own_code : 1; /* seeded: beamspy's own code runs right above own_floor */
    uint32_t own_floor;      /* seeded: the frame beamspy's own code was entered from */
    uint32_t own_callee;     /* seeded: the frame own code called last (its tail calls replace it) */
    uint32_t woke_node;      /* the WAIT leaf the out intervals not yet told apart went to */
    uint32_t woke_calls;     /* how many of them */
    uint32_t woke_span;      /* the first timeline span of them, BS_NO_SPAN if none kept */
    uint64_t woke_ns;        /* time charged to it since the first of them */
    uint64_t events;
    uint64_t dropped;
    bs_timeline timeline;    /* kept only after bs_proc_enable_timeline */
    bs_span_stack *spans;    /* open telemetry span frames; NULL until the first (span_frames.h) */
    bs_span_counts span_counts;
    bs_span_note *notes;     /* texts attached to spans (bs_spans_note) */
    uint32_t n_notes, cap_notes;
    bs_comp_clock comp;      /* tracer cost taken so far (costs NULL: raw) */
} bs_proc;

/* start_ns: when recording of this process began (time before its first event
 * is charged to the root). Returns 0 or -1 (budget refused: then the process
 * is left exited, with no tree, so that events, bs_proc_flush and
 * bs_proc_free on it do nothing). */
int bs_proc_init(bs_proc *p, bs_budget *budget, uint64_t start_ns, int charge_sleep, int charge_gc);
void bs_proc_free(bs_proc *p);
/* Also keep a timeline of spans, drawing on the session's quota. */
void bs_proc_enable_timeline(bs_proc *p, bs_span_quota *quota);

/* Subtract costs (per event kind, shared, outliving p) from now on; NULL
 * keeps raw times. Set before the first event. */
static inline void bs_proc_compensate(bs_proc *p, const bs_comp_costs *costs) { p->comp.costs = costs; }

/* The process's compensated clock at its latest event: raw time minus the
 * tracer cost taken so far. Never decreases; the timeline is on it. */
static inline uint64_t bs_proc_clock(const bs_proc *p) { return p->last_ns - p->comp.shift_ns; }

/* The tracer's own callback for the event at t ran until end_ns: with
 * compensation on, that stretch is charged to nothing (the next interval
 * starts at end_ns) and the compensated clock skips it. Exact, where the
 * calibrated costs are averages: it leaves them only what the VM does
 * before the callback is entered. */
static inline void bs_proc_skip_callback(bs_proc *p, uint64_t t, uint64_t end_ns)
{
    if (!p->comp.costs || p->last_ns != t || end_ns <= t)
        return;
    p->last_ns = end_ns;
    p->comp.shift_ns += end_ns - t;
    p->comp.callback_ns += end_ns - t;
}

/* Each event returns 0, or -1 when it was dropped because the budget is
 * exhausted (the process is then marked truncated). */
int bs_proc_call(bs_proc *p, const bs_key *callee, bs_caller_kind kind, const bs_key *caller, uint64_t t);
int bs_proc_return_to(bs_proc *p, const bs_key *to /* NULL: undefined */, uint64_t t);
/* The top frame returns into beamspy's own (untraced) code: as return_to
 * undefined, except in a seeded process (rules above). */
int bs_proc_return_to_own_code(bs_proc *p, uint64_t t);
int bs_proc_return_from(bs_proc *p, const bs_key *from, uint64_t t);
int bs_proc_sched_out(bs_proc *p, uint64_t t);
int bs_proc_sched_in(bs_proc *p, uint64_t t);
/* The `in' just fed woke the process from erlang:hibernate/3: it waited
 * for a message, although its wake-up function is called before the
 * receive event comes (the first call would otherwise make the wait
 * RUNNABLE). */
void bs_proc_woke_from_hibernation(bs_proc *p);
/* Split scheduled-out time into WAIT and RUNNABLE (rules above); call before
 * the first event, and only if receive events are fed. */
void bs_proc_split_waits(bs_proc *p);
/* A message (or a receive timeout) was taken from the mailbox. */
int bs_proc_received(bs_proc *p, uint64_t t);
int bs_proc_gc_start(bs_proc *p, uint64_t t);
int bs_proc_gc_end(bs_proc *p, uint64_t t);
/* The process exited: charge up to t, stop charging. */
void bs_proc_exit(bs_proc *p, uint64_t t);
/* Close the interval up to t without changing the stack (end of session). */
void bs_proc_flush(bs_proc *p, uint64_t t);

/* A telemetry span starts or stops in this process (span_frames.h has the
 * rules). anchors (n_anchors keys, 0 for none): the frame that emitted the
 * event sits below the topmost frame equal to one of them (none on the
 * stack: the top of the stack). start returns 0
 * or -1 (refused: too deep or no memory, counted); stop returns 0, 1 when no
 * span of that key was open (counted as unmatched). */
int bs_proc_span_start(bs_proc *p, const bs_key *span, const bs_key *anchors, uint32_t n_anchors, uint64_t t);
int bs_proc_span_stop(bs_proc *p, const bs_key *span, uint64_t t);
/* Spans open right now (0 when none). */
static inline uint32_t bs_proc_open_spans(const bs_proc *p) { return p->spans ? p->spans->n : 0; }

/* Seed the stack of a process that was already running: frames root first.
 * Replaces the current stack. own_code_on_top: frames of beamspy's own code
 * were above them (left out), as in a process that profiles itself. Returns
 * 0 or -1. */
int bs_proc_seed(bs_proc *p, const bs_key *frames, uint32_t n, int own_code_on_top, uint64_t t);

/* Depth of the current stack (0 = empty). */
static inline uint32_t bs_proc_depth(const bs_proc *p) { return p->tree.nodes[p->current].depth; }

#endif
