/* thread_slices.h — which Erlang process each scheduler thread ran, and
 * when: the join between CPU samples (an OS thread and a time) and
 * processes.
 *
 * The tracer's `in' and `out' callbacks run on the scheduler thread that
 * runs the process; each appends (time, pid) to that thread's log (pid 0:
 * the thread left the process; it runs the scheduler's own code until the
 * next `in'). One writer per log (its thread), one reader (the sampler's
 * drain thread), no lock: a ring of BS_SLICE_RING entries per thread. The
 * reader takes samples of a thread in time order and asks, for each, which
 * process held the thread then; entries older than the sample are consumed.
 * A writer that laps the reader (more than BS_SLICE_RING switches between
 * two drains) loses the oldest entries: samples in that stretch are told
 * `unknown' and counted (bs_thread_slices_lost). Memory: 16 bytes an entry,
 * 256 KiB a thread. */
#ifndef BS_THREAD_SLICES_H
#define BS_THREAD_SLICES_H

#include <stdatomic.h>
#include <stdint.h>

#define BS_SLICE_RING 16384u /* power of two */
#define BS_SLICE_MAX_THREADS 1024u

typedef struct bs_slice_entry {
    _Atomic uint64_t t_ns;
    _Atomic uint64_t pid;
} bs_slice_entry;

typedef struct bs_thread_log {
    int tid;
    _Atomic uint64_t written;   /* entries ever appended (writer) */
    uint64_t read;              /* entries consumed (reader) */
    uint64_t current_pid;       /* the reader's view: who held the thread after `read' entries */
    int current_known;          /* 0 until the first entry, or after a lap */
    bs_slice_entry *ring;
} bs_thread_log;

typedef struct bs_thread_slices {
    bs_thread_log *logs;        /* sorted by tid */
    unsigned n;
    _Atomic uint64_t lost;      /* entries overwritten before they were read */
} bs_thread_slices;

/* Logs for these threads (any order, at most BS_SLICE_MAX_THREADS); 0 or
 * -1 when out of memory. */
int bs_thread_slices_init(bs_thread_slices *ts, const int *tids, unsigned n);
void bs_thread_slices_free(bs_thread_slices *ts);

/* The log of thread tid, or NULL when it is not one of them. */
bs_thread_log *bs_thread_slices_log(bs_thread_slices *ts, int tid);

/* Writer side (the thread itself): from t_ns on it runs pid (0: none). */
void bs_thread_log_switch(bs_thread_log *log, uint64_t t_ns, uint64_t pid);

/* Reader side: who held the thread at t_ns (not earlier than the time
 * asked before on this log). Returns 1 and sets *pid (0: no process), or
 * 0 when unknown (nothing logged before t_ns since the start or a lap). */
int bs_thread_log_at(bs_thread_slices *ts, bs_thread_log *log, uint64_t t_ns, uint64_t *pid);

/* The calling thread's id (gettid), read once per thread and kept in a
 * thread-local variable: the callbacks ask for it on every switch. */
int bs_current_tid(void);

#endif
