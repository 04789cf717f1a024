/* compensation.c — bookkeeping and the text of compensation.h. */
#include "compensation.h"

#include <inttypes.h>
#include <stdio.h>

void bs_compensation_add(bs_compensation *into, const bs_comp_clock *c)
{
    for (int k = 0; k < BS_EVENT_KINDS; k++)
        into->events[k] += c->events[k];
    into->subtracted_ns += c->subtracted_ns + c->callback_ns;
    into->base_ns += c->base_ns;
    into->scaled_ns += c->scaled_ns;
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
    into->base_ns += from->base_ns;
    into->scaled_ns += from->scaled_ns;
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
    int n = snprintf(buf, cap, "traced times compensated for tracer overhead: %" PRIu32 " ns/call, ",
                     c->ns[BS_EVENT_CALL]);
    n = clamp(n, cap);
    if (c->ns[BS_EVENT_TAIL_CALL])
        n += clamp(snprintf(buf + n, cap - (size_t)n, "%" PRIu32 " ns/tail call, ", c->ns[BS_EVENT_TAIL_CALL]),
                   cap - (size_t)n);
    n += clamp(snprintf(buf + n, cap - (size_t)n,
                        "%" PRIu32 " ns/return, %" PRIu32 " ns/reschedule, and the callbacks' own time as measured",
                        c->ns[BS_EVENT_RETURN], c->ns[BS_EVENT_SCHED]),
               cap - (size_t)n);
    /* Costs were scaled up by the OS load seen while recording: say by how
     * much on average, when it matters. */
    if (c->base_ns && c->scaled_ns > c->base_ns + c->base_ns / 20)
        n += clamp(snprintf(buf + n, cap - (size_t)n, " (x%.2f for OS load)",
                            (double)c->scaled_ns / (double)c->base_ns), cap - (size_t)n);
    n += clamp(snprintf(buf + n, cap - (size_t)n, "; %.3f ms subtracted over %" PRIu64 " events",
                        (double)c->subtracted_ns / 1e6, events), cap - (size_t)n);
    return (size_t)n;
}
