/* thread_slices.c — the per-thread logs of thread_slices.h. */
#define _GNU_SOURCE
#include "thread_slices.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

static int by_tid(const void *a, const void *b)
{
    int x = ((const bs_thread_log *)a)->tid, y = ((const bs_thread_log *)b)->tid;
    return (x > y) - (x < y);
}

int bs_thread_slices_init(bs_thread_slices *ts, const int *tids, unsigned n)
{
    memset(ts, 0, sizeof *ts);
    atomic_init(&ts->lost, 0);
    if (n > BS_SLICE_MAX_THREADS)
        n = BS_SLICE_MAX_THREADS;
    if (n == 0)
        return 0;
    ts->logs = calloc(n, sizeof *ts->logs);
    if (!ts->logs)
        return -1;
    for (unsigned i = 0; i < n; i++) {
        bs_thread_log *l = &ts->logs[i];
        l->tid = tids[i];
        atomic_init(&l->written, 0);
        l->ring = calloc(BS_SLICE_RING, sizeof *l->ring);
        if (!l->ring) {
            ts->n = i;
            bs_thread_slices_free(ts);
            return -1;
        }
        ts->n = i + 1;
    }
    qsort(ts->logs, ts->n, sizeof *ts->logs, by_tid);
    return 0;
}

void bs_thread_slices_free(bs_thread_slices *ts)
{
    for (unsigned i = 0; i < ts->n; i++)
        free(ts->logs[i].ring);
    free(ts->logs);
    ts->logs = NULL;
    ts->n = 0;
}

bs_thread_log *bs_thread_slices_log(bs_thread_slices *ts, int tid)
{
    unsigned lo = 0, hi = ts->n;
    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (ts->logs[mid].tid < tid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < ts->n && ts->logs[lo].tid == tid ? &ts->logs[lo] : NULL;
}

void bs_thread_log_switch(bs_thread_log *log, uint64_t t_ns, uint64_t pid)
{
    uint64_t w = atomic_load_explicit(&log->written, memory_order_relaxed);
    bs_slice_entry *e = &log->ring[w & (BS_SLICE_RING - 1)];
    atomic_store_explicit(&e->t_ns, t_ns, memory_order_relaxed);
    atomic_store_explicit(&e->pid, pid, memory_order_relaxed);
    atomic_store_explicit(&log->written, w + 1, memory_order_release);
}

int bs_thread_log_at(bs_thread_slices *ts, bs_thread_log *log, uint64_t t_ns, uint64_t *pid)
{
    uint64_t w = atomic_load_explicit(&log->written, memory_order_acquire);
    if (w - log->read > BS_SLICE_RING) { /* lapped: the oldest are gone */
        uint64_t skip = w - BS_SLICE_RING - log->read;
        atomic_fetch_add(&ts->lost, skip);
        log->read = w - BS_SLICE_RING;
        log->current_known = 0;
    }
    while (log->read < w) {
        const bs_slice_entry *e = &log->ring[log->read & (BS_SLICE_RING - 1)];
        uint64_t et = atomic_load_explicit(&e->t_ns, memory_order_relaxed);
        uint64_t ep = atomic_load_explicit(&e->pid, memory_order_relaxed);
        /* The writer may have overwritten it while it was read. */
        uint64_t w2 = atomic_load_explicit(&log->written, memory_order_acquire);
        if (w2 - log->read > BS_SLICE_RING) {
            w = w2;
            atomic_fetch_add(&ts->lost, w2 - BS_SLICE_RING - log->read);
            log->read = w2 - BS_SLICE_RING;
            log->current_known = 0;
            continue;
        }
        if (et > t_ns)
            break;
        log->current_pid = ep;
        log->current_known = 1;
        log->read++;
    }
    if (!log->current_known)
        return 0;
    *pid = log->current_pid;
    return 1;
}

int bs_current_tid(void)
{
#ifdef __linux__
    static _Thread_local int tid;
    if (!tid)
        tid = (int)syscall(SYS_gettid);
    return tid;
#else
    return 0;
#endif
}
