/* process_ptrs.h — the Process * of each Erlang process seen in CPU samples,
 * for the tracer's callbacks to read what the JIT saved there.
 *
 * BEAMAsm (x86_64) keeps the running process's Process * in r13 while JIT
 * code runs, and a Process begins with its pid (common.id). The sampler's
 * drain thread learns (pid, Process *) from samples whose leaf is JIT code
 * (the sample's own r13, no unwinding: exactly c_p) when the word there is
 * that pid; a scheduler thread finds the Process * of a pid in a callback
 * of that very process (alive, its struct in place). One writer (the
 * drain), many readers, no lock: a fixed open-addressing table of
 * BS_PROCESS_PTRS slots (16 bytes each, 64 KiB); once full, nothing more is
 * learnt (bs_process_ptrs_full counts the refusals). A pid is never
 * forgotten: a dead process's slot stays (its pid does not come back while
 * the session runs). */
#ifndef BS_CPU_PROCESS_PTRS_H
#define BS_CPU_PROCESS_PTRS_H

#include <stdatomic.h>
#include <stdint.h>

#define BS_PROCESS_PTRS 4096u /* power of two */
#define BS_PROCESS_PTRS_PROBE 16u

typedef struct bs_process_ptr {
    _Atomic uint64_t pid; /* 0: free */
    _Atomic uint64_t ptr; /* 0: not written yet */
} bs_process_ptr;

typedef struct bs_process_ptrs {
    bs_process_ptr *slots;
    uint64_t full; /* pids not learnt: no free slot within the probe */
} bs_process_ptrs;

int bs_process_ptrs_init(bs_process_ptrs *t);
void bs_process_ptrs_free(bs_process_ptrs *t);
/* Drain thread: pid's Process * is ptr (both nonzero). */
void bs_process_ptrs_learn(bs_process_ptrs *t, uint64_t pid, uint64_t ptr);
/* Any thread: pid's Process *, or 0 when not learnt. */
uint64_t bs_process_ptrs_find(const bs_process_ptrs *t, uint64_t pid);

#endif
