/* sched_work.c — a scheduler's own samples told apart: spin before sleep,
 * or other work (the rule is in sched_work.h). */
#include "sched_work.h"

#include <string.h>

/* Functions of the scheduler's way to sleep, by their dynamic symbols. */
static const char *const wait_symbols[] = {"ethr_event_wait",
                                           "ethr_event_swait",
                                           "ethr_event_twait",
                                           "ethr_event_stwait",
                                           "erts_thr_progress_prepare_wait",
                                           "erts_thr_progress_finalize_wait",
                                           "sched_yield",
                                           "__sched_yield",
                                           "erts_thr_yield"};

static int named(const bs_sched_frame *f)
{
    return f->symbol && f->symbol[0];
}

static int is_wait(const char *symbol)
{
    for (size_t i = 0; i < sizeof wait_symbols / sizeof *wait_symbols; i++)
        if (strcmp(symbol, wait_symbols[i]) == 0)
            return 1;
    return 0;
}

static int known_site(const bs_sched_sites *sites, uint64_t site)
{
    for (unsigned i = 0; i < sites->n; i++)
        if (sites->site[i] == site)
            return 1;
    return 0;
}

static void remember(bs_sched_sites *sites, uint64_t site)
{
    if (!known_site(sites, site) && sites->n < BS_SCHED_WAIT_SITES)
        sites->site[sites->n++] = site;
}

bs_sched_work bs_sched_work_of(bs_sched_sites *sites, const bs_sched_frame *frames, size_t n, int unwound)
{
    if (n == 0)
        return BS_SCHED_WORK_OTHER;
    if (!unwound)
        return named(&frames[0]) && is_wait(frames[0].symbol) ? BS_SCHED_WORK_SPIN : BS_SCHED_WORK_OTHER;
    size_t k = 0;
    while (k < n && !(named(&frames[k]) && strcmp(frames[k].symbol, "erts_schedule") == 0))
        k++;
    if (k == 0)
        return BS_SCHED_WORK_OTHER; /* the scheduling loop's own code */
    if (k == n) {
        /* No erts_schedule: not the scheduler's way to wait (a dirty BIF's own
         * sched_yield under erts_call_dirty_bif), unless no frame of the VM
         * is named at all (a beam.smp stripped of its dynamic symbols, as
         * Debian's OTP 29 is): then the leaf alone, as without unwinding. */
        for (size_t i = 0; i < n; i++)
            if (frames[i].in_vm && named(&frames[i]))
                return BS_SCHED_WORK_OTHER;
        return named(&frames[0]) && is_wait(frames[0].symbol) ? BS_SCHED_WORK_SPIN : BS_SCHED_WORK_OTHER;
    }
    int wait = 0;
    for (size_t i = 0; i < k; i++)
        wait |= named(&frames[i]) && is_wait(frames[i].symbol);
    for (size_t i = 0; i < k; i++) {
        if (!named(&frames[i])) {
            if (!frames[i].in_vm)
                return BS_SCHED_WORK_OTHER;
        } else if (!is_wait(frames[i].symbol) && (strcmp(frames[i].symbol, "syscall") != 0 || !wait)) {
            return BS_SCHED_WORK_OTHER; /* named work; a syscall counts only under a wait (the futex) */
        }
    }
    uint64_t site = frames[k].addr; /* the return address in erts_schedule of its callee */
    if (wait) {
        remember(sites, site);
        return BS_SCHED_WORK_SPIN;
    }
    return known_site(sites, site) ? BS_SCHED_WORK_SPIN : BS_SCHED_WORK_OTHER;
}
