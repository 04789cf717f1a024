/* sched_work.h — what a scheduler thread that ran no Erlang process was
 * doing when the kernel sampled it: spinning before it sleeps (`[spin]`),
 * or the scheduler's other work (port tasks, aux work, thread progress,
 * polling, scheduling itself).
 *
 * A scheduler with nothing to run calls a static function of erts_schedule
 * (scheduler_wait in erl_process.c) that spins (a pause loop with
 * sched_yield) and then sleeps (ethr_event_*wait: a futex). Debian strips
 * beam.smp's static functions, so that function has no name. The rule reads
 * the sample's frames, leaf first, up to `erts_schedule':
 *   - frames there are only wait primitives (ethr_event_wait, _swait,
 *     _twait, _stwait, erts_thr_progress_prepare_wait, _finalize_wait,
 *     sched_yield), `syscall' (the futex) and unnamed beam.smp functions,
 *     with at least one wait primitive: spin. The return address in
 *     erts_schedule of that wait function is remembered (its call site);
 *   - frames there are only unnamed beam.smp functions (the pause loop
 *     itself has no call to name it): spin when the call site in
 *     erts_schedule is one remembered, otherwise other work (told only
 *     once the session saw that site reach a wait primitive);
 *   - any other named function there (erts_check_io, erts_port_task_execute,
 *     erts_thr_progress_*, erts_garbage_collect*, ...), no frame there, or
 *     no erts_schedule at all: other work; but when no frame of beam.smp
 *     is named at all (a beam.smp stripped of its dynamic symbols, as
 *     Debian's OTP 29 is), the leaf alone, as below.
 * When the C frames were not unwound (no libdw), only the leaf is known: a
 * leaf in a wait primitive is spin; anything else is other work. Memory:
 * BS_SCHED_WAIT_SITES call sites, fixed. */
#ifndef BS_SCHED_WORK_H
#define BS_SCHED_WORK_H

#include <stddef.h>
#include <stdint.h>

#define BS_SCHED_WAIT_SITES 16u

typedef enum bs_sched_work { BS_SCHED_WORK_OTHER, BS_SCHED_WORK_SPIN } bs_sched_work;

/* One frame of a sample, leaf first. */
typedef struct bs_sched_frame {
    uint64_t addr;      /* the frame's address (a return address but for the leaf) */
    const char *symbol; /* the symbol that names it; NULL or "" when none does */
    int in_vm;          /* 1: code of the emulator (beam.smp) */
} bs_sched_frame;

/* The call sites in erts_schedule of its wait function, learnt from the
 * samples (one per session: the drain thread's). */
typedef struct bs_sched_sites {
    uint64_t site[BS_SCHED_WAIT_SITES];
    unsigned n;
} bs_sched_sites;

/* The work of a sample of a scheduler thread that ran no process: frames,
 * leaf first, n of them; unwound 0 when only the leaf can be trusted (the
 * C frames were not unwound). */
bs_sched_work bs_sched_work_of(bs_sched_sites *sites, const bs_sched_frame *frames, size_t n, int unwound);

#endif
