/* compensation.h — subtracting the tracer's own cost from traced times.
 *
 * Every traced event costs the traced process time (the VM's breakpoint and
 * match spec, the erl_tracer callback, the engine's update): a few hundred ns
 * here, far more than a short function's own work. Left in, it is charged to
 * the frames whose intervals it lands in, so profiles follow call counts
 * rather than time. As Python's `profile` module does, the cost per event is
 * calibrated on the machine (src/beamspy_calibrate.erl) and subtracted:
 *  - from the interval that ends at the event (the one running while its
 *    callback was entered), by the event's kind; except a reschedule: the
 *    callback of `out' runs after the process stopped running and that of
 *    `in' before it runs again, so both land in the scheduled-out interval
 *    (RUNNABLE, WAIT, SLEEP), which the `in' that ends it pays for both
 *    (measured: erlang:md5/1 of 1.6 MB traps 16,000 times, and traced its
 *    own time stays what it is untraced while the cost of the reschedules
 *    is all in RUNNABLE; taken from the running intervals, it took the
 *    BIF's whole time away);
 *  - never below zero: an interval shorter than the cost becomes 0, and the
 *    rest is owed by the frame and taken from its next intervals (so a
 *    frame's time is never below zero either); only what was really taken
 *    is counted as subtracted;
 *  - on a per-process compensated clock (raw time minus what was taken so
 *    far), which the timeline uses, so spans stay nested and never negative.
 *    Processes' clocks drift apart by what each lost; their timelines are
 *    each consistent, not aligned with one another.
 * Events that carry no cost of their own (seeding, end of recording) take
 * nothing. */
#ifndef BS_COMPENSATION_H
#define BS_COMPENSATION_H

#include <stddef.h>
#include <stdint.h>

typedef enum bs_event_kind {
    BS_EVENT_CALL,      /* call (a body call: the caller's frame stays) */
    BS_EVENT_RETURN,    /* return_to, return_from */
    BS_EVENT_SCHED,     /* in, out (and their _exiting/_exited forms) */
    BS_EVENT_GC,        /* gc start and end */
    BS_EVENT_TAIL_CALL, /* call in tail position (the caller's frame is
                           replaced): the VM's part costs more than a body
                           call's; 0 means as a call (costs from before) */
    BS_EVENT_KINDS,
    BS_EVENT_FREE = BS_EVENT_KINDS /* no cost of its own: nothing subtracted */
} bs_event_kind;

/* Cost of one event of each kind, ns; shared by the processes of a session. */
typedef struct bs_comp_costs {
    uint32_t ns[BS_EVENT_KINDS];
} bs_comp_costs;

/* What a profile says about its times. */
typedef enum bs_comp_state {
    BS_COMP_UNKNOWN = 0, /* not a traced recording (folded input, old files) */
    BS_COMP_RAW,         /* traced times as measured (compensate => false) */
    BS_COMP_APPLIED      /* tracer cost subtracted */
} bs_comp_state;

typedef struct bs_compensation {
    bs_comp_state state;
    uint32_t ns[BS_EVENT_KINDS];     /* calibrated cost per event */
    uint64_t events[BS_EVENT_KINDS]; /* events whose cost was subtracted */
    uint64_t subtracted_ns;          /* time taken from charged intervals (the
                                        callbacks' own time included) */
    uint64_t base_ns, scaled_ns;     /* costs of those events as calibrated, and
                                        scaled by the load factor (below) */
} bs_compensation;

/* Per-process bookkeeping while recording.
 *
 * Load factor: on a machine busy with other work the OS takes the CPU from
 * the VM's threads now and then, and a process's wall time grows with its
 * CPU time by that factor, the tracer's share included. The calibrated
 * costs are CPU costs (measured in stretches nothing interrupted), so the
 * NIF measures the factor while recording (wall over thread CPU time of
 * stretches where the process kept running, nif/load_factor.c) and the
 * cost subtracted is scaled by it. Reschedule costs are not: scaling them
 * over-subtracted where a BIF traps many times (erlang:md5/1 of 1.6 MB:
 * 32,000 in/out events took more than its whole time, measured on a
 * machine loaded 5x). */
typedef struct bs_comp_clock {
    const bs_comp_costs *costs; /* NULL: raw times */
    uint32_t scale_milli;       /* load factor x 1000; 0 means 1000 */
    uint64_t shift_ns;          /* raw minus compensated clock */
    uint64_t callback_ns;       /* of it, the tracer callbacks' own time */
    uint64_t events[BS_EVENT_KINDS];
    uint64_t subtracted_ns;     /* of it, what was taken from charged time */
    uint64_t base_ns, scaled_ns;
} bs_comp_clock;

/* The part of an interval of dt ns ending in n events of kind (the cost of
 * n events is taken) that is kept; advances the clock by what was taken. charged: the interval is charged to
 * a frame (counted in subtracted_ns). *short_by: the part of the cost the
 * interval was too short to give (the frame owes it, see bs_comp_pay). */
static inline uint64_t bs_comp_take_n(bs_comp_clock *c, bs_event_kind kind, uint32_t n, uint64_t dt,
                                      int charged, uint64_t *short_by)
{
    *short_by = 0;
    if (!c->costs || kind >= BS_EVENT_KINDS || n == 0)
        return dt;
    uint32_t per = c->costs->ns[kind];
    if (kind == BS_EVENT_TAIL_CALL && per == 0)
        per = c->costs->ns[BS_EVENT_CALL];
    uint64_t base = (uint64_t)per * n;
    uint64_t cost = c->scale_milli > 1000 && kind != BS_EVENT_SCHED ? base * c->scale_milli / 1000 : base;
    uint64_t take = cost < dt ? cost : dt;
    c->events[kind] += n;
    c->base_ns += base;
    c->scaled_ns += cost;
    c->shift_ns += take;
    if (charged)
        c->subtracted_ns += take;
    *short_by = cost - take;
    return dt - take;
}

/* The same for one event. */
static inline uint64_t bs_comp_take(bs_comp_clock *c, bs_event_kind kind, uint64_t dt, int charged,
                                    uint64_t *short_by)
{
    return bs_comp_take_n(c, kind, 1, dt, charged, short_by);
}

/* A frame pays what it owes from a later interval of its own: *owed and
 * *kept shrink by the same amount, the clock advances by it. The cost of an
 * event does not always fit in the interval it ends (the OS took the CPU in
 * another interval of the same frame, or the calibrated split between the
 * intervals around an event is not this one's), so the frame's time as a
 * whole, never below zero, is what the cost is taken from. */
static inline void bs_comp_pay(bs_comp_clock *c, uint64_t *owed, uint64_t *kept)
{
    uint64_t pay = *owed < *kept ? *owed : *kept;
    *owed -= pay;
    *kept -= pay;
    c->shift_ns += pay;
    c->subtracted_ns += pay;
}

/* Adds a process's bookkeeping to a profile's. */
void bs_compensation_add(bs_compensation *into, const bs_comp_clock *c);

/* Adds one profile's compensation to another's (merging recordings). */
void bs_compensation_merge(bs_compensation *into, const bs_compensation *from);

/* The one line every output shows: "" when unknown, else what the times
 * are. Returns the length written (always < cap, cap > 0). A buffer of
 * BS_COMPENSATION_TEXT_CAP holds the longest. */
#define BS_COMPENSATION_TEXT_CAP 384
size_t bs_compensation_text(const bs_compensation *c, char *buf, size_t cap);

#endif
