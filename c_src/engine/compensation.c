/* compensation.c — bookkeeping and the text of compensation.h. */
#include "compensation.h"

#include <inttypes.h>
#include <stdio.h>

void bs_compensation_add(bs_compensation *into, const bs_comp_clock *c)
{
    for (int k = 0; k < BS_EVENT_KINDS; k++)
        into->events[k] += c->events[k];
    into->subtracted_ns += c->subtracted_ns;
}

void bs_compensation_merge(bs_compensation *into, const bs_compensation *from)
{
    if (from->state == BS_COMP_UNKNOWN)
        return;
    if (into->state == BS_COMP_UNKNOWN) {
        *into = *from;
        return;
    }
    /* Recordings of several nodes: each was calibrated on its own node; the
     * text shows the first node's costs and the summed time taken. */
    if (from->state == BS_COMP_APPLIED)
        into->state = BS_COMP_APPLIED;
    for (int k = 0; k < BS_EVENT_KINDS; k++)
        into->events[k] += from->events[k];
    into->subtracted_ns += from->subtracted_ns;
}

static int clamp(int n, size_t cap)
{
    return n < 0 ? 0 : (size_t)n >= cap ? (int)cap - 1 : n;
}

size_t bs_compensation_text(const bs_compensation *c, char *buf, size_t cap)
{
    buf[0] = '\0';
    switch (c->state) {
    case BS_COMP_UNKNOWN:
        return 0;
    case BS_COMP_RAW:
        return (size_t)clamp(snprintf(buf, cap, "raw traced times: tracer overhead not subtracted"), cap);
    case BS_COMP_APPLIED:
        break;
    }
    uint64_t events = 0;
    for (int k = 0; k < BS_EVENT_KINDS; k++)
        events += c->events[k];
    int n = snprintf(buf, cap,
                     "traced times compensated for tracer overhead: %" PRIu32 " ns/call, %" PRIu32
                     " ns/return, %" PRIu32 " ns/reschedule; %.3f ms subtracted over %" PRIu64 " events",
                     c->ns[BS_EVENT_CALL], c->ns[BS_EVENT_RETURN], c->ns[BS_EVENT_SCHED],
                     (double)c->subtracted_ns / 1e6, events);
    return (size_t)clamp(n, cap);
}
