/* load_factor.c — the OS load factor of engine/compensation.h.
 *
 * Every BS_LOAD_WINDOW events of a process that stays running (no in/out
 * between, so on one scheduler thread that ran only it), the thread's CPU
 * clock is read beside the wall clock. Wall over CPU time of such stretches,
 * summed over the recording, is how much the OS stretched this process's
 * time; the costs subtracted are scaled by it. One CPU-clock read (a system
 * call, ~0.3-1 µs) per window keeps the price per event at a few ns. */
#define _POSIX_C_SOURCE 200809L
#include "load_factor.h"

#include <time.h>

#define BS_LOAD_WINDOW 256u
#define BS_LOAD_MAX_MILLI 64000u /* a factor above 64 is a stopped VM, not load */

static int thread_cpu_ns(uint64_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    *out = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return 0;
}

void bs_load_factor_event(bs_traced_proc *r, int sched_event, uint64_t now_ns)
{
    if (sched_event) {
        r->load_marked = 0;
        r->load_count = 0;
        return;
    }
    if (++r->load_count < BS_LOAD_WINDOW)
        return;
    r->load_count = 0;
    uint64_t cpu;
    if (thread_cpu_ns(&cpu) < 0) {
        r->load_marked = 0;
        return;
    }
    if (r->load_marked && cpu > r->load_cpu_ns && now_ns > r->load_wall_ns) {
        r->load_sum_wall_ns += now_ns - r->load_wall_ns;
        r->load_sum_cpu_ns += cpu - r->load_cpu_ns;
        uint64_t milli = r->load_sum_wall_ns * 1000 / r->load_sum_cpu_ns;
        if (milli < 1000)
            milli = 1000; /* clocks of different resolution: never scale down */
        if (milli > BS_LOAD_MAX_MILLI)
            milli = BS_LOAD_MAX_MILLI;
        r->proc.comp.scale_milli = (uint32_t)milli;
    }
    r->load_wall_ns = now_ns;
    r->load_cpu_ns = cpu;
    r->load_marked = 1;
}
