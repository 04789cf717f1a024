/* pid_table.h — the session's map from a traced process to its recording.
 *
 * Tracer callbacks of different processes run on different scheduler threads
 * at once, so lookups are lock-free: a fixed-size open-addressing table whose
 * slots are claimed once and never freed during a session. Only the thread
 * running a process inserts that process (on its first event), and a process
 * runs on one thread at a time, so a record is never used by two threads at
 * once. The size is fixed at creation (max_processes); a full table refuses. */
#ifndef BS_PID_TABLE_H
#define BS_PID_TABLE_H

#include <stdatomic.h>
#include <stdint.h>

#include "../engine/stack_rebuild.h"

#define BS_RUN_RING 16 /* slices remembered by sampling sessions (sched_watch.c) */

/* A finished capture of one call (capture mode, see capture.c). */
typedef struct bs_capture {
    bs_proc proc;
    uint32_t index;            /* 1-based, in the order captures started */
    struct bs_capture *next;
} bs_capture;

typedef struct bs_traced_proc {
    uint64_t pid;         /* the local pid term (an immediate) */
    _Atomic int busy;     /* a callback is using this record (see session.c) */
    uint32_t uncounted;   /* events not yet added to the session's count */
    bs_proc proc;         /* the recording (in capture mode: of the running capture) */
    int span_seen;        /* a span event of this process was seen (spans-only sessions) */
    /* sampling sessions only (sched_watch.c): read by the sampler's thread */
    _Atomic int running;        /* the last scheduling event was `in` */
    _Atomic uint32_t slices;    /* `in` events seen */
    _Atomic int want_out;       /* tell the owner at the next `out` */
    /* ERTS monotonic ns of the in and out of the last BS_RUN_RING slices,
     * slice n at n % BS_RUN_RING (out 0: not yet out) */
    _Atomic int64_t ring_in[BS_RUN_RING], ring_out[BS_RUN_RING];
    _Atomic uint64_t out_m, out_f;       /* where the last `out` left it (atoms)... */
    _Atomic uint32_t out_a;              /* ...and arity; out_m 0: unknown */
    /* OS load factor (load_factor.c): the open stretch and the sums so far */
    uint32_t load_count;
    int load_marked;
    uint64_t load_wall_ns, load_cpu_ns;
    uint64_t load_sum_wall_ns, load_sum_cpu_ns;
    /* capture mode only */
    _Atomic int capturing;     /* a captured call is running in this process */
    uint32_t capture_depth;    /* nested calls of the captured function */
    uint32_t capture_index;
    bs_capture *captures;      /* finished captures, newest first */
} bs_traced_proc;

typedef struct bs_pid_slot {
    _Atomic uint64_t pid;                /* 0 = free */
    _Atomic(bs_traced_proc *) record;    /* NULL until the inserter publishes it */
} bs_pid_slot;

typedef struct bs_pid_table {
    bs_pid_slot *slots;
    uint32_t cap;       /* power of two, twice max_processes */
    uint32_t max_procs;
    _Atomic uint32_t count;
} bs_pid_table;

int bs_pid_table_init(bs_pid_table *t, uint32_t max_procs);
/* Frees the table and every record (call only when no callback can run). */
void bs_pid_table_free(bs_pid_table *t, bs_budget *budget);
bs_traced_proc *bs_pid_table_find(bs_pid_table *t, uint64_t pid);
/* Publishes rec for pid; returns rec, or NULL if the table is full. */
bs_traced_proc *bs_pid_table_insert(bs_pid_table *t, uint64_t pid, bs_traced_proc *rec);

#endif
