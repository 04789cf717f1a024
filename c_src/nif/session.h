/* session.h — one recording: the resource handed to erl_tracer as its state.
 *
 * A session owns the memory budget, the pid table and the options. It is
 * created by beamspy_tracer:session_new/1, passed as TracerState in
 * {tracer, beamspy_tracer, Session}, and lives as long as any trace setting
 * or Erlang term refers to it. Stopping is one-way: once `recording` is 0 no
 * callback touches a process record again (see session_stop in session.c),
 * so the profile can be read safely from another thread; session_flush.h
 * then ends its time. */
#ifndef BS_SESSION_H
#define BS_SESSION_H

#include <erl_nif.h>
#include <stdatomic.h>

#include "../engine/budget.h"
#include "../engine/compensation.h"
#include "../engine/frame_key.h"
#include "pid_table.h"

#define BS_MAX_IGNORED 8 /* option ignore: pids of the tool's own processes */
#define BS_MAX_EXCLUDED 16

typedef struct bs_session {
    _Atomic int recording;           /* 1 while events are recorded */
    _Atomic int stop_reason;         /* bs_stop_reason */
    bs_budget budget;
    bs_pid_table pids;
    ErlNifMutex *insert_lock;        /* new processes and stop are serialised */
    uint64_t start_ns;
    uint64_t stop_ns;
    int flushed;                     /* bs_session_flush done (under insert_lock) */
    int charge_sleep, charge_gc, use_caller, keep_timeline;
    bs_comp_state comp_state;        /* option compensate: raw, applied, or unknown (spans only) */
    bs_comp_costs comp_costs;        /* calibrated cost per event kind (beamspy_calibrate) */
    bs_span_quota span_quota;        /* spans left for the timeline */
    ERL_NIF_TERM excluded[BS_MAX_EXCLUDED]; /* atoms: modules treated as untraced */
    int n_excluded;
    /* run mode (beamspy run, option until_halt): the process that calls
     * erlang:halt/0-2 or init:stop/0-1 writes the files (halt_write.c) */
    int halt_hook;
    struct bs_halt_plan *halt_plan;
    uint64_t ignored[BS_MAX_IGNORED]; /* local pid terms never recorded (beamspy's own) */
    int n_ignored;
    _Atomic uint64_t lost_processes; /* events of processes refused by max_processes */
    uint64_t max_events;             /* 0: no limit */
    _Atomic uint64_t events_counted; /* events seen, counted in batches (see tracer_callbacks.c) */
    ErlNifPid owner;                 /* told with {beamspy_limit, Reason} when a limit stops recording */
    int has_owner;
    /* capture mode (beamspy:capture/3): record only inside calls of one function */
    int capture_mode;
    bs_key capture_key;              /* atoms as terms, arity */
    _Atomic int64_t captures_left;   /* captures that may still start */
    _Atomic uint32_t captures_started;
    /* telemetry spans (span_nif.c) */
    int spans_only;                  /* no tracing: records are made by span events */
    bs_key span_anchors[2];          /* telemetry:execute/3, do_execute/4: spans sit below them */
    _Atomic uint64_t spans_left;     /* span starts still accepted (max_spans) */
    _Atomic uint64_t spans_dropped;  /* span starts refused by max_spans */
    /* sampling (sched_watch.c): only in/out are traced, nothing is recorded */
    int run_states;
    _Atomic uint64_t run_notes_lost; /* `out` messages that could not be sent */
    /* CPU sampling (cpu_session.h): only in/out are traced, samples fill the trees */
    struct bs_cpu *cpu;
    int cpu_times;                   /* option times => samples: calls traced as usual, cpu samples
                                        beside them give the self times (cpu_session.h) */
} bs_session;

typedef enum bs_stop_reason {
    BS_STOP_NONE, BS_STOP_REQUESTED, BS_STOP_MAX_MEMORY, BS_STOP_MAX_PROCESSES, BS_STOP_MAX_EVENTS,
    BS_STOP_MAX_DURATION
} bs_stop_reason;

uint64_t bs_now_ns(void);
/* Sends {Tag, Pid, Index} to the session's owner (from a callback). */
void bs_session_tell_owner(ErlNifEnv *env, bs_session *s, const char *tag, uint64_t pid, uint32_t index);
const char *bs_stop_reason_name(int reason);

int bs_session_init(bs_session *s, size_t max_memory, uint32_t max_procs);
/* Frees what bs_session_init made. What was attached to the session later
 * is freed first by whoever attached it (beamspy_nif.c's destructor: the
 * CPU sampler, the halt plan), so the session knows nothing above it. */
void bs_session_destroy(bs_session *s);
/* Stops recording (first reason wins) and, if wait, waits until no callback
 * is inside a process record. Safe to call many times and from a callback.
 * The first stop for a limit tells the owner: env is the calling NIF's
 * environment (callbacks run on scheduler threads, where enif_send needs it). */
void bs_session_stop(bs_session *s, int reason, int wait);
void bs_session_stop_for_limit(ErlNifEnv *env, bs_session *s, int reason);
int bs_session_is_excluded(const bs_session *s, ERL_NIF_TERM module);

/* Whether pid (a local pid term) is one of the session's ignored processes. */
int bs_session_is_ignored(const bs_session *s, uint64_t pid);

/* Sets up a new process record's engine state as the session's options say
 * (timeline, compensation). */
void bs_session_prepare_proc(bs_session *s, bs_proc *p);

/* The record of pid, created if new; NULL if recording stopped or a cap was hit. */
bs_traced_proc *bs_session_proc(ErlNifEnv *env, bs_session *s, uint64_t pid, uint64_t now);

/* As bs_session_proc, from a thread that must not wait for the insert lock
 * (the CPU sampler's drain: the stop holds that lock while it joins the
 * drain): tries the lock until it gets it, or gives up (NULL) once
 * *give_up is set or recording stopped. */
bs_traced_proc *bs_session_proc_try(bs_session *s, uint64_t pid, uint64_t now, const _Atomic int *give_up);

#endif
