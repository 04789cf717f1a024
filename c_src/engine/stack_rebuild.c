/* stack_rebuild.c — the stack rules of stack_rebuild.h. */
#include "stack_rebuild.h"

#include <string.h>

int bs_proc_init(bs_proc *p, bs_budget *budget, uint64_t start_ns, int charge_sleep, int charge_gc)
{
    memset(p, 0, sizeof *p);
    bs_timeline_init(&p->timeline, NULL, budget);
    if (bs_call_tree_init(&p->tree, budget) < 0) {
        p->state = BS_EXITED; /* no tree: every later event, flush and free leave it alone */
        return -1;
    }
    p->current = 0;
    p->last_ns = start_ns;
    p->state = BS_RUNNING;
    p->charge_sleep = charge_sleep ? 1 : 0;
    p->charge_gc = charge_gc ? 1 : 0;
    return 0;
}

void bs_proc_enable_timeline(bs_proc *p, bs_span_quota *quota)
{
    p->timeline.quota = quota;
}

void bs_proc_free(bs_proc *p)
{
    if (p->spans)
        bs_budget_free(p->tree.budget, p->spans, sizeof *p->spans);
    p->spans = NULL;
    bs_spans_free_notes(p);
    bs_timeline_free(&p->timeline);
    bs_call_tree_free(&p->tree);
}

/* The timeline follows the stack that is running (or the SLEEP/WAIT/GC leaf
 * under it while scheduled out or collecting). */
static void timeline_to(bs_proc *p, uint32_t node, uint64_t t)
{
    (void)t; /* every caller charged up to t first: last_ns is max(t, earlier) */
    if (p->timeline.quota)
        bs_timeline_move(&p->timeline, &p->tree, node, bs_proc_clock(p));
}

static void set_current(bs_proc *p, uint32_t node, uint64_t t)
{
    p->current = node;
    timeline_to(p, node, t);
}

static int drop(bs_proc *p)
{
    p->truncated = 1;
    p->dropped++;
    return -1;
}

/* The leaf scheduled-out time goes to while it is not known why. */
static inline enum bs_pseudo_frame out_leaf(const bs_proc *p)
{
    return p->split_waits ? BS_PSEUDO_WAIT : BS_PSEUDO_SLEEP;
}

/* The first event after an `in' that shows what the process did tells
 * whether it had been waiting (a receive) or runnable (code ran): in the
 * second case the out intervals since it was last seen doing something
 * (woke_calls of them, one or more when it was scheduled in only for
 * signals) move from the WAIT leaf to a RUNNABLE leaf beside it, in the
 * tree and in the timeline. */
static void settle_wake(bs_proc *p, int waited)
{
    p->woke = 0;
    if (waited || p->woke_node == 0)
        return;
    bs_tree_node *w = &p->tree.nodes[p->woke_node];
    bs_key k = bs_key_pseudo(BS_PSEUDO_RUNNABLE);
    uint32_t n = bs_call_tree_child(&p->tree, w->parent, &k);
    if (n == BS_NO_NODE) {
        (void)drop(p); /* the intervals stay WAIT */
        return;
    }
    w = &p->tree.nodes[p->woke_node]; /* the child may have moved the nodes */
    uint64_t moved = p->woke_ns < w->self_ns ? p->woke_ns : w->self_ns;
    w->self_ns -= moved;
    p->tree.nodes[n].self_ns += moved;
    uint32_t calls = p->woke_calls < w->calls ? p->woke_calls : w->calls;
    w->calls -= calls;
    p->tree.nodes[n].calls += calls;
    bs_timeline *tl = &p->timeline;
    for (uint32_t i = p->woke_span; i < tl->n; i++) /* BS_NO_SPAN: none kept */
        if (tl->spans[i].node == p->woke_node)
            tl->spans[i].node = n;
}

/* Charge the interval [last_ns, t) to whatever ran during it, less the
 * tracer's cost of n_events of kind that it holds (compensation.h). Clock
 * readings from different threads may be a few ns out of order: never
 * charge a negative interval. */
static int charge_n(bs_proc *p, uint64_t t, bs_event_kind kind, uint32_t n_events)
{
    /* A call, a return or a span: code ran. Scheduling and GC show nothing
     * (a process waiting in a receive is scheduled in and out again to
     * handle signals: monitors, links, process_info, code purges, GC). */
    if (p->woke && kind != BS_EVENT_SCHED && kind != BS_EVENT_GC)
        settle_wake(p, 0);
    uint64_t dt = t > p->last_ns ? t - p->last_ns : 0;
    if (t > p->last_ns)
        p->last_ns = t;
    uint32_t into = BS_NO_NODE;
    switch (p->state) {
    case BS_RUNNING:
        if (p->current || !p->skip_root)
            into = p->current;
        break;
    case BS_SCHEDULED_OUT:
    case BS_IN_GC: {
        int is_gc = p->state == BS_IN_GC;
        if (is_gc ? !p->charge_gc : !p->charge_sleep)
            break;
        bs_key k = bs_key_pseudo(is_gc ? BS_PSEUDO_GC : out_leaf(p));
        into = bs_call_tree_child(&p->tree, p->current, &k);
        if (into == BS_NO_NODE) {
            uint64_t short_by;
            (void)bs_comp_take_n(&p->comp, kind, n_events, dt, 0, &short_by);
            return drop(p);
        }
        break;
    }
    case BS_EXITED:
        return 0;
    }
    uint64_t short_by;
    uint64_t kept = bs_comp_take_n(&p->comp, kind, n_events, dt, into != BS_NO_NODE, &short_by);
    if (into != BS_NO_NODE) {
        bs_tree_node *n = &p->tree.nodes[into];
        n->owed_ns += short_by;
        if (n->owed_ns && kept)
            bs_comp_pay(&p->comp, &n->owed_ns, &kept);
        n->self_ns += kept;
        if (p->state == BS_SCHEDULED_OUT)
            p->woke_ns += kept; /* what settle_wake may move to RUNNABLE */
    }
    return 0;
}

static int charge(bs_proc *p, uint64_t t, bs_event_kind kind)
{
    return charge_n(p, t, kind, 1);
}

/* Count one entry into the pseudo leaf of the current stack. */
static int count_pseudo(bs_proc *p, enum bs_pseudo_frame which, uint64_t t)
{
    bs_key k = bs_key_pseudo(which);
    uint32_t n = bs_call_tree_child(&p->tree, p->current, &k);
    if (n == BS_NO_NODE)
        return drop(p);
    p->tree.nodes[n].calls++;
    uint32_t spans = p->timeline.n;
    timeline_to(p, n, t);
    if (which == BS_PSEUDO_WAIT) {
        if (p->woke && n != p->woke_node)
            settle_wake(p, 1); /* cannot happen: nothing moved the stack; a wait is the safe reading */
        if (!p->woke) {
            p->woke_node = n;
            p->woke_ns = 0;
            p->woke_calls = 0;
            p->woke_span = BS_NO_SPAN;
        }
        p->woke_calls++;
        if (p->woke_span == BS_NO_SPAN && p->timeline.n > spans)
            p->woke_span = p->timeline.n - 1;
    }
    return 0;
}

/* Open span frames survive pops (span_frames.h); processes without one pay
 * this test only. */
static inline uint32_t cut_to(bs_proc *p, uint32_t at)
{
    return p->spans && p->spans->n ? bs_spans_cut(p, at) : at;
}

static inline void forget_spans(bs_proc *p, uint64_t *counter)
{
    if (p->spans && p->spans->n)
        bs_spans_clear(p, counter);
}

static uint32_t find_up(const bs_proc *p, uint32_t from, const bs_key *k)
{
    for (uint32_t n = from; n != 0; n = p->tree.nodes[n].parent)
        if (bs_key_eq(&p->tree.nodes[n].key, k))
            return n;
    return BS_NO_NODE;
}

/* The top real frame (span frames skipped). */
static uint32_t top_frame(const bs_proc *p)
{
    uint32_t top = p->current;
    while (top && bs_key_is_span(&p->tree.nodes[top].key))
        top = p->tree.nodes[top].parent;
    return top;
}

/* Whether node n is on the current stack (0, the root, always is). */
static int on_stack(const bs_proc *p, uint32_t n)
{
    for (uint32_t x = p->current; x != 0; x = p->tree.nodes[x].parent)
        if (x == n)
            return 1;
    return n == 0;
}

/* Where a call from beamspy's own code goes in a seeded process (rules in
 * stack_rebuild.h); *tail says whether it replaces the frame own code
 * called before. */
static uint32_t own_code_caller(bs_proc *p, uint32_t top, int *tail)
{
    int floor_on_stack = on_stack(p, p->own_floor);
    *tail = 0;
    if (floor_on_stack && p->in_own_code)
        return p->own_floor;
    if (floor_on_stack && top == p->own_callee && top != p->own_floor) {
        *tail = 1;
        return p->own_floor;
    }
    return p->current; /* own code was entered from the top frame, unseen */
}

int bs_proc_call(bs_proc *p, const bs_key *callee, bs_caller_kind kind, const bs_key *caller, uint64_t t)
{
    p->events++;
    if (p->state == BS_EXITED)
        return 0;
    if (kind == BS_CALLER_OWN_CODE && !p->seeded)
        kind = BS_CALLER_ROOT;
    /* A call whose caller is below the top frame is a tail call (the top
     * frame is replaced): its cost is a tail call's (compensation.h). So is
     * a call that returns to the root (its caller is untraced code) made
     * while frames are on the stack: a loop called from the root tail-calls
     * itself so. */
    uint32_t found = kind == BS_CALLER_FRAME ? find_up(p, p->current, caller) : BS_NO_NODE;
    uint32_t top = top_frame(p);
    int own_tail = 0;
    uint32_t own_at = kind == BS_CALLER_OWN_CODE ? own_code_caller(p, top, &own_tail) : 0;
    int tail = (found != BS_NO_NODE && found != top) || (kind == BS_CALLER_ROOT && top != 0) || own_tail;
    if (charge(p, t, tail ? BS_EVENT_TAIL_CALL : BS_EVENT_CALL) < 0)
        return -1;
    p->in_own_code = 0;
    uint32_t at = p->current;
    if (kind == BS_CALLER_ROOT) {
        at = 0;
    } else if (kind == BS_CALLER_OWN_CODE) {
        at = p->own_floor = own_at;
    } else if (kind == BS_CALLER_FRAME) {
        if (found != BS_NO_NODE) {
            at = found;
        } else {
            /* The callee will return to a frame we never saw: it lies below
             * everything we know (entered before tracing began), and every
             * frame we know has been left. It becomes a root frame, as in
             * return_to; keeping the stack would grow it by one frame per
             * iteration of a tail-recursive loop called from such a frame. */
            forget_spans(p, &p->span_counts.lost);
            at = bs_call_tree_child(&p->tree, 0, caller);
            if (at == BS_NO_NODE) {
                set_current(p, 0, t);
                return drop(p);
            }
        }
    }
    if (kind == BS_CALLER_ROOT || kind == BS_CALLER_FRAME || kind == BS_CALLER_OWN_CODE)
        at = cut_to(p, at);
    uint32_t n = bs_call_tree_child(&p->tree, at, callee);
    if (n == BS_NO_NODE) {
        set_current(p, at, t);
        return drop(p);
    }
    p->tree.nodes[n].calls++;
    if (kind == BS_CALLER_OWN_CODE)
        p->own_callee = n;
    set_current(p, n, t);
    return 0;
}

int bs_proc_return_to_own_code(bs_proc *p, uint64_t t)
{
    if (!p->seeded)
        return bs_proc_return_to(p, NULL, t);
    p->events++;
    if (p->state == BS_EXITED)
        return 0;
    if (charge(p, t, BS_EVENT_RETURN) < 0)
        return -1;
    if (!on_stack(p, p->own_floor)) {
        /* Own code called the top frame unseen: it lies just below it. */
        uint32_t top = top_frame(p);
        p->own_floor = top ? p->tree.nodes[top].parent : 0;
    }
    p->in_own_code = 1;
    set_current(p, cut_to(p, p->own_floor), t);
    return 0;
}

int bs_proc_return_to(bs_proc *p, const bs_key *to, uint64_t t)
{
    p->events++;
    if (p->state == BS_EXITED)
        return 0;
    if (charge(p, t, BS_EVENT_RETURN) < 0)
        return -1;
    if (!to) {
        p->in_own_code = 0;
        set_current(p, cut_to(p, 0), t);
        return 0;
    }
    /* Pop the returning frame first: in recursion it has the same MFA as the
     * frame being returned to. The returning frame is the top real one,
     * unless beamspy's own code is what returns (it has no frame). */
    uint32_t from = top_frame(p);
    if (p->in_own_code)
        p->in_own_code = 0;
    else
        from = from ? p->tree.nodes[from].parent : 0;
    uint32_t at = find_up(p, from, to);
    if (at != BS_NO_NODE) {
        set_current(p, cut_to(p, at), t);
        return 0;
    }
    forget_spans(p, &p->span_counts.lost);
    /* Returned into a frame never seen (entered before tracing began, or its
     * call was lost): it becomes a root frame of this process. */
    uint32_t n = bs_call_tree_child(&p->tree, 0, to);
    if (n == BS_NO_NODE) {
        set_current(p, 0, t);
        return drop(p);
    }
    set_current(p, n, t);
    return 0;
}

int bs_proc_return_from(bs_proc *p, const bs_key *from, uint64_t t)
{
    p->events++;
    if (p->state == BS_EXITED)
        return 0;
    if (charge(p, t, BS_EVENT_RETURN) < 0)
        return -1;
    uint32_t at = find_up(p, p->current, from);
    set_current(p, cut_to(p, at == BS_NO_NODE ? 0 : p->tree.nodes[at].parent), t);
    return 0;
}

int bs_proc_sched_out(bs_proc *p, uint64_t t)
{
    p->events++;
    if (p->state != BS_RUNNING)
        return 0;
    /* This event's cost lands in the interval it starts: `in' pays it. */
    if (charge_n(p, t, BS_EVENT_SCHED, 0) < 0)
        return -1;
    p->state = BS_SCHEDULED_OUT;
    if (!p->woke) /* else scheduled in for signals only: the wait goes on */
        p->woke_node = 0;
    return p->charge_sleep ? count_pseudo(p, out_leaf(p), t) : 0;
}

int bs_proc_sched_in(bs_proc *p, uint64_t t)
{
    p->events++;
    if (p->state != BS_SCHEDULED_OUT)
        return 0;
    int rc = charge_n(p, t, BS_EVENT_SCHED, 2); /* the out before and this in */
    p->state = BS_RUNNING;
    timeline_to(p, p->current, t);
    p->woke = p->split_waits && p->charge_sleep && p->woke_node; /* kept by an empty slice */
    return rc;
}

void bs_proc_woke_from_hibernation(bs_proc *p)
{
    if (p->woke)
        settle_wake(p, 1);
}

void bs_proc_split_waits(bs_proc *p)
{
    p->split_waits = 1;
}

int bs_proc_received(bs_proc *p, uint64_t t)
{
    (void)t;
    p->events++;
    if (p->woke)
        settle_wake(p, 1);
    return 0;
}

int bs_proc_gc_start(bs_proc *p, uint64_t t)
{
    p->events++;
    if (p->state == BS_EXITED || p->state == BS_IN_GC)
        return 0;
    if (charge(p, t, BS_EVENT_GC) < 0)
        return -1;
    p->state_before_gc = p->state;
    p->state = BS_IN_GC;
    return p->charge_gc ? count_pseudo(p, BS_PSEUDO_GC, t) : 0;
}

int bs_proc_gc_end(bs_proc *p, uint64_t t)
{
    p->events++;
    if (p->state != BS_IN_GC)
        return 0;
    int rc = charge(p, t, BS_EVENT_GC);
    p->state = p->state_before_gc;
    if (p->state == BS_RUNNING)
        timeline_to(p, p->current, t);
    else if (p->state == BS_SCHEDULED_OUT && p->charge_sleep) {
        bs_key k = bs_key_pseudo(out_leaf(p));
        uint32_t n = bs_call_tree_child(&p->tree, p->current, &k);
        uint32_t spans = p->timeline.n;
        if (n != BS_NO_NODE)
            timeline_to(p, n, t);
        if (n == p->woke_node && p->woke_node && p->woke_span == BS_NO_SPAN && p->timeline.n > spans)
            p->woke_span = p->timeline.n - 1; /* the wait goes on in a new span */
    }
    return rc;
}

void bs_proc_exit(bs_proc *p, uint64_t t)
{
    p->events++;
    if (p->state == BS_EXITED)
        return;
    if (p->woke) /* scheduled in only to exit: an exit signal ended its wait */
        settle_wake(p, 1);
    (void)charge_n(p, t, BS_EVENT_SCHED, 0); /* its cost comes after */
    p->state = BS_EXITED;
    forget_spans(p, &p->span_counts.died);
    set_current(p, 0, t);
}

void bs_proc_flush(bs_proc *p, uint64_t t)
{
    int out = p->state == BS_SCHEDULED_OUT || (p->state == BS_IN_GC && p->state_before_gc == BS_SCHEDULED_OUT);
    if (p->woke && out) /* out again, nothing ran: it still waits */
        settle_wake(p, 1);
    if (p->state != BS_EXITED)
        (void)charge(p, t, BS_EVENT_FREE);
    timeline_to(p, 0, t); /* close every open span */
}

int bs_proc_seed(bs_proc *p, const bs_key *frames, uint32_t n, int own_code_on_top, uint64_t t)
{
    if (p->state == BS_EXITED)
        return 0;
    if (charge(p, t, BS_EVENT_FREE) < 0)
        return -1;
    forget_spans(p, &p->span_counts.lost);
    uint32_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t c = bs_call_tree_child(&p->tree, at, &frames[i]);
        if (c == BS_NO_NODE)
            return drop(p);
        at = c;
    }
    p->seeded = 1;
    p->in_own_code = own_code_on_top ? 1 : 0;
    p->own_floor = at;
    p->own_callee = BS_NO_NODE;
    set_current(p, at, t);
    return 0;
}

int bs_proc_span_start(bs_proc *p, const bs_key *span, const bs_key *anchors, uint32_t n_anchors, uint64_t t)
{
    if (p->state == BS_EXITED) {
        p->span_counts.refused++;
        return -1;
    }
    if (charge(p, t, BS_EVENT_FREE) < 0)
        return -1;
    uint32_t n = bs_spans_open(p, span, anchors, n_anchors);
    if (n == BS_NO_NODE)
        return -1;
    p->spans->open[p->spans->n - 1].start_ns = bs_proc_clock(p);
    set_current(p, n, t);
    return 0;
}

int bs_proc_span_stop(bs_proc *p, const bs_key *span, uint64_t t)
{
    if (p->state == BS_EXITED) {
        p->span_counts.unmatched++;
        return 1;
    }
    if (charge(p, t, BS_EVENT_FREE) < 0)
        return -1;
    int matched;
    uint32_t n = bs_spans_close(p, span, &matched);
    if (!matched)
        return 1;
    set_current(p, n, t);
    return 0;
}
