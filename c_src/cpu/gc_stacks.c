/* gc_stacks.c — the Erlang stacks of the collections samples landed in
 * (gc_stacks.h). */
#include <stdlib.h>
#include <string.h>

#include "cpu/dwarf_unwind.h"
#include "cpu/gc_stacks.h"

int bs_gc_stacks_init(bs_gc_stacks *g, unsigned n)
{
    memset(g, 0, sizeof *g);
    atomic_init(&g->taken, 0);
    if (n == 0)
        return 0;
    g->logs = calloc(n, sizeof *g->logs);
    if (!g->logs)
        return -1;
    g->n = n;
    for (unsigned i = 0; i < n; i++) {
        bs_gc_stack_log *log = &g->logs[i];
        log->copy = malloc(BS_GC_STACK_COPY);
        log->ring = calloc(BS_GC_STACK_RING, sizeof *log->ring);
        log->walk = malloc(BS_GC_STACK_FRAMES * sizeof *log->walk);
        if (!log->copy || !log->ring || !log->walk) {
            bs_gc_stacks_free(g);
            return -1;
        }
    }
    return 0;
}

void bs_gc_stacks_free(bs_gc_stacks *g)
{
    for (unsigned i = 0; g->logs && i < g->n; i++) {
        free(g->logs[i].copy);
        free(g->logs[i].ring);
        free(g->logs[i].walk);
    }
    free(g->logs);
    g->logs = NULL;
    g->n = 0;
}

void bs_gc_stacks_bind(bs_gc_stacks *g, unsigned i, const uint64_t *ring_head)
{
    if (i < g->n)
        g->logs[i].ring_head = ring_head;
}

static uint64_t ring_head(const bs_gc_stack_log *log)
{
    return __atomic_load_n(log->ring_head, __ATOMIC_RELAXED);
}

void bs_gc_stack_start(bs_gc_stack_log *log, uint64_t t, uint64_t ra)
{
    if (!log->ring_head)
        return;
    log->head_at_start = ring_head(log);
    log->t_start = t;
    log->ra = ra;
}

/* Copies the stack at stop, walks it from ra (under the collecting
 * fragment's frame, or the process's own on top) and publishes the entry of
 * a collection from t_start to t_end. */
static int take(bs_gc_stacks *g, bs_gc_stack_log *log, uint64_t t_start, uint64_t t_end, uint64_t ra, uint64_t stop,
                uint64_t fp, bs_gc_top top, const bs_proc_mem *mem)
{
    size_t got = bs_proc_mem_copy(mem, stop, log->copy, BS_GC_STACK_COPY);
    bs_stack_copy stack = {.sp = stop, .data = log->copy, .size = got};
    uint64_t caller_fp = stop, held;
    /* The collecting fragment's own frame: the caller's frame pointer, then
     * the return address into it. */
    if (top == BS_GC_TOP_FRAGMENT &&
        (!bs_stack_read8(&stack, stop, &caller_fp) || !bs_stack_read8(&stack, stop + 8, &held) || held != ra))
        return 0;
    /* The process's own frame, above the y registers of the function it
     * runs: it must lie in the copy (else the two words disagree). */
    if (top == BS_GC_TOP_PROCESS && fp != 0) {
        if (fp < stop || fp - stop > got || got - (fp - stop) < 16)
            return 0;
        caller_fp = fp;
    }
    bs_user_regs at = {.ip = ra, .bp = caller_fp};
    size_t n = bs_fp_walk(&at, &stack, NULL, log->walk, BS_GC_STACK_FRAMES);
    uint64_t k = atomic_load_explicit(&log->written, memory_order_relaxed);
    bs_gc_stack *e = &log->ring[k & (BS_GC_STACK_RING - 1)];
    atomic_store_explicit(&e->seq, 2 * k + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&e->t_start, t_start, memory_order_relaxed);
    atomic_store_explicit(&e->t_end, t_end, memory_order_relaxed);
    atomic_store_explicit(&e->n, n, memory_order_relaxed);
    for (size_t i = 0; i < n; i++)
        atomic_store_explicit(&e->ret[i], log->walk[i], memory_order_relaxed);
    atomic_store_explicit(&e->seq, 2 * k + 2, memory_order_release);
    atomic_store_explicit(&log->written, k + 1, memory_order_release);
    atomic_fetch_add_explicit(&g->taken, 1, memory_order_relaxed);
    return 1;
}

int bs_gc_stack_end(bs_gc_stacks *g, bs_gc_stack_log *log, uint64_t t, uint64_t stop, bs_gc_top top,
                    const bs_proc_mem *mem)
{
    uint64_t ra = log->ra;
    log->ra = 0;
    if (!log->ring_head || ra == 0 || ring_head(log) == log->head_at_start)
        return 0; /* no sample in this collection */
    return take(g, log, log->t_start, t, ra, stop, 0, top, mem);
}

int bs_gc_stack_take_open(bs_gc_stacks *g, bs_gc_stack_log *log, uint64_t t, uint64_t ra, uint64_t stop,
                          uint64_t fp, const bs_proc_mem *mem)
{
    if (!log->ring_head || ra == 0)
        return 0;
    return take(g, log, t, BS_GC_STACK_OPEN, ra, stop, fp, BS_GC_TOP_PROCESS, mem);
}

void bs_gc_stack_close(bs_gc_stack_log *log, uint64_t t)
{
    uint64_t w = atomic_load_explicit(&log->written, memory_order_relaxed);
    if (w == 0)
        return;
    bs_gc_stack *e = &log->ring[(w - 1) & (BS_GC_STACK_RING - 1)];
    if (atomic_load_explicit(&e->t_end, memory_order_relaxed) != BS_GC_STACK_OPEN)
        return;
    atomic_store_explicit(&e->seq, 2 * (w - 1) + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&e->t_end, t, memory_order_relaxed);
    atomic_store_explicit(&e->seq, 2 * (w - 1) + 2, memory_order_release);
}

/* Entry k as it is now, into out: its times and frames; 0 when it is being
 * written or is not entry k any more. */
static uint32_t read_entry(const bs_gc_stack *e, uint64_t k, uint64_t *t_start, uint64_t *t_end, uint64_t *out,
                           uint32_t cap)
{
    uint64_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    if (seq != 2 * k + 2)
        return 0;
    *t_start = atomic_load_explicit(&e->t_start, memory_order_relaxed);
    *t_end = atomic_load_explicit(&e->t_end, memory_order_relaxed);
    uint64_t n = atomic_load_explicit(&e->n, memory_order_relaxed);
    if (n > cap)
        n = cap;
    for (uint64_t i = 0; i < n; i++)
        out[i] = atomic_load_explicit(&e->ret[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&e->seq, memory_order_relaxed) == seq ? (uint32_t)n : 0;
}

uint32_t bs_gc_stack_at(bs_gc_stack_log *log, uint64_t t, uint64_t ra, uint64_t *out, uint32_t cap)
{
    uint64_t written = atomic_load_explicit(&log->written, memory_order_acquire);
    uint64_t oldest = written > BS_GC_STACK_RING ? written - BS_GC_STACK_RING : 0;
    if (oldest < log->read)
        oldest = log->read;
    /* The newest first, back to the first that ended before t. */
    for (uint64_t k = written; cap > 0 && k-- > oldest;) {
        uint64_t t_start, t_end;
        uint32_t n = read_entry(&log->ring[k & (BS_GC_STACK_RING - 1)], k, &t_start, &t_end, out, cap);
        if (n == 0)
            continue; /* being written, or overwritten (then so are the older ones) */
        if (t_end < t) {
            log->read = k + 1; /* samples come in time order: no later one is in it or before */
            return 0;
        }
        if (t_start <= t)
            return ra == 0 || out[0] == ra ? n : 0;
    }
    return 0;
}
