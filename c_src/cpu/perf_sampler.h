/* perf_sampler.h — CPU samples of chosen threads of this process, taken by
 * the kernel (perf_event_open(2)): the event, its ring buffers and their
 * decoding. Linux only; elsewhere opening fails with "CPU sampling needs
 * Linux". Plain C11, no Erlang headers: built into the NIF and into test/c.
 *
 * One event per thread: PERF_TYPE_SOFTWARE / PERF_COUNT_SW_TASK_CLOCK (virtual
 * machines have no PMU; the task clock advances only while the thread runs,
 * so a sleeping thread takes no samples), freq = hz, user space only
 * (exclude_kernel: perf_event_paranoid 2, the usual default, allows it for
 * the process's own threads), sample_type TID | TIME | CALLCHAIN (the kernel
 * walks the frame pointers) and on x86_64 REGS_USER (ip, sp, bp, r13), times
 * on CLOCK_MONOTONIC (use_clockid). Events start disabled;
 * bs_perf_sampler_enable starts them.
 *
 * Memory, all allocated by open and bounded: per thread one ring buffer of
 * BS_PERF_RING_PAGES data pages plus the kernel's header page (36 KiB with
 * 4 KiB pages), plus one scratch record and one address array of the ring's
 * size for the whole sampler. A sample at the kernel's deepest chain
 * (perf_event_max_stack, 127 by default) is about 1.1 KiB, so a ring holds
 * some 30 of the deepest samples: 30 ms of one busy thread at 999 Hz, three
 * times the drain period of ~10 ms the NIF uses. What does not fit is lost
 * and counted (bs_perf_stats.lost and ring_full). Ring buffers are locked
 * memory: the kernel allows perf_event_mlock_kb (516 KiB) per CPU beyond
 * RLIMIT_MEMLOCK, enough for ~14 threads per CPU without a raised limit.
 * With stack copies (bs_perf_sampler_open_ex) a sample is about
 * stack_bytes + 1.2 KiB (25 KiB at BS_PERF_STACK_BYTES) and each ring has
 * BS_PERF_RING_PAGES_STACK data pages (132 KiB with its header page): ~5
 * samples, 25 ms of a busy thread at 199 Hz (the caller drains more often
 * at higher rates); ~4 threads per CPU fit perf_event_mlock_kb, the rest
 * counts against RLIMIT_MEMLOCK. */
#ifndef BS_PERF_SAMPLER_H
#define BS_PERF_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#define BS_PERF_RING_PAGES 8 /* data pages per thread without stack copies (a power of two, as the kernel requires) */
#define BS_PERF_RING_PAGES_STACK 32 /* data pages per thread with stack copies (128 KiB with 4 KiB pages) */
#define BS_PERF_STACK_BYTES 24576 /* bytes of user stack copied per sample (PERF_SAMPLE_STACK_USER):
                                     beam.smp's C stack under a BIF reaches 17 KiB (term_to_binary) */
#define BS_PERF_MAX_THREADS 4096 /* threads one sampler takes */

typedef struct bs_cpu_sample {
    int tid;
    uint64_t time_ns;     /* CLOCK_MONOTONIC, comparable with clock_gettime */
    uint32_t n_ips;       /* user-space addresses, leaf first: the sampled
                             instruction, then return addresses; the kernel's
                             context markers (PERF_CONTEXT_USER...) removed */
    const uint64_t *ips;  /* valid only during the callback */
    int chain_truncated;  /* the chain reached the kernel's limit
                             (kernel.perf_event_max_stack): outer frames are missing */
    /* On x86_64, when the kernel had user registers for the sample:
     * has_regs 1 and the thread's ip, sp, bp and r13 (BEAMAsm keeps the
     * running Process * there: cpu_session.c). With stack copies
     * (bs_perf_sampler_open_ex's with_stack) also the stack_size bytes at
     * [sp, sp + stack_size) as they were (stack valid only during the
     * callback); else stack NULL, stack_size 0. Else has_regs 0. */
    int has_regs;
    uint64_t ip, sp, bp, r13;
    const unsigned char *stack;
    size_t stack_size;
} bs_cpu_sample;

typedef struct bs_perf_sampler bs_perf_sampler;

typedef void bs_cpu_sample_fn(void *ctx, const bs_cpu_sample *sample);

/* Opens one disabled sampling event at hz samples per second of CPU time on
 * each of the n_tids threads tids (threads of this process), with its ring
 * buffer. A thread that has already exited is left out (bs_perf_stats.threads
 * says how many are sampled). Returns 0 with *out set, or -1 with a sentence
 * in why (at most why_cap bytes, NUL-terminated) that says what failed and how
 * to fix it; nothing is left open then. */
int bs_perf_sampler_open(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz,
                         char *why, size_t why_cap);

/* As bs_perf_sampler_open, and with with_stack each sample also carries a copy of
 * stack_bytes of its user stack from sp (PERF_SAMPLE_STACK_USER; a multiple
 * of 8, at most 65528), in rings of BS_PERF_RING_PAGES_STACK data pages.
 * Those rings are 4 times larger: when the locked-memory limit refuses them
 * it fails like open (the caller may retry without stacks). */
int bs_perf_sampler_open_ex(bs_perf_sampler **out, const int *tids, unsigned n_tids, unsigned hz, int with_stack,
                            unsigned stack_bytes, char *why, size_t why_cap);

/* Starts (stops) sampling on every thread: PERF_EVENT_IOC_ENABLE (DISABLE)
 * on each event. 0, or -1 with errno. */
int bs_perf_sampler_enable(bs_perf_sampler *s);
int bs_perf_sampler_disable(bs_perf_sampler *s);

/* Reads what every ring buffer holds now, calls on_sample for each sample
 * (in order per thread) and counts the samples the kernel reports lost. Call
 * from one thread at a time; never blocks. Returns the samples delivered. */
size_t bs_perf_sampler_drain(bs_perf_sampler *s, bs_cpu_sample_fn *on_sample, void *ctx);

/* Where the kernel keeps the head of thread tid's ring (it moves on with
 * every record written: a sample, or a lost-record), for that thread to tell
 * whether it was sampled between two of its reads; NULL when tid is not
 * sampled. Valid until close. */
const uint64_t *bs_perf_sampler_ring_head(const bs_perf_sampler *s, int tid);

typedef struct bs_perf_stats {
    uint64_t samples;    /* delivered by drain */
    uint64_t lost;       /* reported lost by the kernel (a ring was full) */
    uint64_t truncated;  /* delivered with chain_truncated */
    uint64_t malformed;  /* records that did not decode (the rest of that ring was skipped) */
    uint64_t bytes;      /* ring bytes read */
    uint64_t ring_full;  /* drains that found a ring with no room for one more of the
                            deepest samples: samples were probably lost, also when the
                            kernel could not say so yet (lost counts them only once its
                            next sample fits, never after sampling stops) */
    uint64_t with_regs;  /* delivered with user registers and a stack copy (with_stack) */
    uint64_t stack_bytes_used; /* the largest stack copy the kernel filled (dyn_size) */
    unsigned threads;    /* threads sampled */
    unsigned ring_kib;   /* KiB of each thread's ring (header page included) */
    unsigned max_stack;  /* kernel.perf_event_max_stack when opened */
} bs_perf_stats;

void bs_perf_sampler_stats(const bs_perf_sampler *s, bs_perf_stats *out);

/* Closes every event and frees everything; NULL does nothing. */
void bs_perf_sampler_close(bs_perf_sampler *s);

/* The sentence open gives when perf_event_open fails with err, for a kernel
 * whose perf_event_paranoid is paranoid (INT_MIN: unknown) and a process
 * whose seccomp mode (/proc/self/status "Seccomp:") is seccomp (0 none,
 * 1 strict, 2 filter, -1 unknown). Pure, for tests; returns why. */
const char *bs_perf_refusal_text(char *why, size_t why_cap, int err, int paranoid, int seccomp);

#endif
