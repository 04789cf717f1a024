/* job.h — a job run on a node by beamspy_agent for the command-line tool:
 * a live trace, a function capture, stack sampling or top's figures. The
 * tool starts it, polls it (each poll renews the job's lease on the node:
 * a job that stops hearing from its tool ends itself), and fetches its
 * result as a profile. */
#ifndef BS_JOB_H
#define BS_JOB_H

#include <stdio.h>

#include "../engine/profile.h"
#include "../writers/render_opts.h"
#include "defaults.h"
#include "early_stop.h"
#include "remote.h"

#define BS_JOB_MAX_TARGETS 1024

typedef enum bs_job_target_kind {
    BS_TARGET_NONE = 0,
    BS_TARGET_LIST,     /* pids and registered names */
    BS_TARGET_ALL,
    BS_TARGET_FUNCTION  /* capture calls of module:function/arity */
} bs_job_target_kind;

/* What to run; filled from the command line. */
/* mode cpu's rate when --hz is not given: beamspy_opts's default of cpu_hz
 * (build/gen/defaults.h, generated from its table). */
#define BS_CPU_DEFAULT_HZ BS_DEFAULT_CPU_HZ

typedef struct bs_job_spec {
    int top;                          /* a top job (figures, no profile) */
    bs_job_target_kind target_kind;
    const char *targets[BS_JOB_MAX_TARGETS]; /* "<0.1.0>" or a registered name */
    int n_targets;
    char module[256], function[256];
    int arity;
    unsigned calls;
    int sample;                       /* stack sampling instead of tracing */
    int cpu;                          /* mode cpu: the kernel's CPU samples */
    unsigned cpu_hz;                  /* mode cpu: samples a second (0: BS_CPU_DEFAULT_HZ) */
    int no_cpu;                       /* top: hot functions from sampling the busiest processes, not the CPU */
    unsigned interval_ms;             /* sampling period (0: the node's default) */
    unsigned long long duration_ms;
    unsigned long long max_events;    /* 0: no limit */
    unsigned long long max_memory, max_processes; /* 0: the node's defaults */
    int children, gc, no_sleep, no_compensate;
    const char *times;                /* --times: compensated, samples or raw (NULL: the default) */
    int elixir;                       /* 1 Elixir names, 0 Erlang's, -1 (default) as
                                       * the node runs (bs_remote_choose_names) */
    int show_idle;                    /* whole-VM views: keep WAIT frames */
    long long timeline;               /* -1: default */
    unsigned lease_ms;                /* 0: the node's default (BS_DEFAULT_LEASE_MS) */
    unsigned limit;                   /* top: processes listed */
    int strict;                       /* --strict: an early stop is an error */
    int seq;                          /* a seq job: tokens for calls of module:function/arity */
    long long seq_label;              /* the token label, the same on every node: a small
                                       * integer (a binary label set from a match spec
                                       * crashed OTP 25 once the spec was replaced) */
} bs_job_spec;

typedef struct bs_job_progress {
    unsigned long long events, memory, samples, processes, elapsed_ms;
    unsigned long long calls;         /* seq: calls that got a token */
    int limit_permille;               /* -1 unknown */
    char limit_name[32];
    char stopped[64];                 /* "" or why the job stopped by itself */
} bs_job_progress;

typedef struct bs_job {
    const bs_job_spec *spec;
    bs_remote *remote;
    ei_x_buff pid;                    /* the job's pid, encoded */
    ei_x_buff tag;                    /* while awaiting: the tag of the reply awaited */
    int awaiting;                     /* a request sent, its reply not read yet */
    int started, done, lost;
    int starts_again;                 /* starts sent again after beamspy's code went away */
    bs_job_progress progress;
    bs_eterm_tree *last_poll;         /* the last poll's answer (top reads its report) */
    bs_early_stop early_stop;         /* after finish: a limit that ended it early */
} bs_job;

/* Long-option codes of the recording options record and run share. */
enum {
    BS_OPT_DURATION = 0x300,
    BS_OPT_MAX_EVENTS,
    BS_OPT_MAX_MEMORY,
    BS_OPT_MAX_PROCESSES,
    BS_OPT_GC,
    BS_OPT_NO_SLEEP,
    BS_OPT_NO_COMPENSATE,
    BS_OPT_TIMELINE,
    BS_OPT_ELIXIR,
    BS_OPT_ERLANG,
    BS_OPT_FLAMECHART,
    BS_OPT_PALETTE,
    BS_OPT_STRICT,
    BS_OPT_FUNCTION,
    BS_OPT_CALLS,
    BS_OPT_LEASE,
    BS_OPT_SHOW_IDLE,
    BS_OPT_HZ,
    BS_OPT_TIMES,
    BS_OPT_RECORDING_FIRST_OWN
};

#define BS_RECORDING_LONG_OPTIONS                                        \
    {"duration", required_argument, NULL, BS_OPT_DURATION},              \
    {"max-events", required_argument, NULL, BS_OPT_MAX_EVENTS},          \
    {"max-memory", required_argument, NULL, BS_OPT_MAX_MEMORY},          \
    {"max-processes", required_argument, NULL, BS_OPT_MAX_PROCESSES},    \
    {"gc", no_argument, NULL, BS_OPT_GC},                                \
    {"no-sleep", no_argument, NULL, BS_OPT_NO_SLEEP},                    \
    {"no-compensate", no_argument, NULL, BS_OPT_NO_COMPENSATE},          \
    {"timeline", required_argument, NULL, BS_OPT_TIMELINE},              \
    {"elixir", no_argument, NULL, BS_OPT_ELIXIR},                        \
    {"erlang", no_argument, NULL, BS_OPT_ERLANG},                        \
    {"flamechart", no_argument, NULL, BS_OPT_FLAMECHART},                \
    {"palette", required_argument, NULL, BS_OPT_PALETTE},                \
    {"strict", no_argument, NULL, BS_OPT_STRICT},                        \
    {"show-idle", no_argument, NULL, BS_OPT_SHOW_IDLE},                  \
    {"hz", required_argument, NULL, BS_OPT_HZ},                          \
    {"times", required_argument, NULL, BS_OPT_TIMES}

/* Applies recording option `code`: 0 done, -1 not a recording option,
 * else the exit code (message printed). */
int bs_job_option(const char *cmd, int code, const char *arg, bs_job_spec *s, bs_render_opts *render);

/* The options of a job that follows calls of a function, which record and
 * seq take alike: --function M:F/A, --calls N, --lease T. */
#define BS_FUNCTION_JOB_LONG_OPTIONS                             \
    {"function", required_argument, NULL, BS_OPT_FUNCTION},      \
    {"calls", required_argument, NULL, BS_OPT_CALLS},            \
    {"lease", required_argument, NULL, BS_OPT_LEASE}

/* Applies --function, --calls or --lease: 0 done, -1 none of them, else the
 * exit code (message printed). */
int bs_job_function_option(const char *cmd, int code, const char *arg, bs_job_spec *s);

/* Help lines of the recording options. */
void bs_job_options_usage(FILE *out);
/* Appends the recording limits of s (", max_events => ..., max_memory =>
 * ..., max_processes => ..., timeline => ...": what a profile's options text
 * says of them) to buf at n, within size; returns the new length (at most
 * size - 1). */
size_t bs_job_limits_text(const bs_job_spec *s, char *buf, size_t size, size_t n);

void bs_job_spec_init(bs_job_spec *s);
void bs_job_spec_free(bs_job_spec *s);
/* Adds a --pid or --name target; -1 when there are too many. */
int bs_job_add_target(bs_job_spec *s, const char *target);
/* Parses the --function text (every spelling of function_arg.h) into s;
 * -1 when malformed, with why. */
int bs_job_parse_mfa(const char *text, bs_job_spec *s, char *why, size_t why_cap);

/* Starts the job on an attached node. BS_EXIT_OK or an exit code, message
 * printed ("beamspy: app@host: ..."). */
int bs_job_start(bs_job *j, bs_remote *r, const bs_job_spec *s);
/* Polls: updates progress, sets done when the job stopped by itself. */
int bs_job_poll(bs_job *j);
/* Ends the job and reads its result into out (a profile of the node; meta
 * node set); j->early_stop says whether a limit ended it early. Not for top
 * jobs: they end with bs_job_stop. */
int bs_job_finish(bs_job *j, unsigned timeout_ms, bs_profile *out);
/* The halves of bs_job_start, bs_job_poll and bs_job_finish, for several
 * jobs driven at once (job_group.h): *_send sends the request (BS_EXIT_OK
 * or the exit code, said), the reply comes back through bs_job_await or a
 * group's poll(2) and bs_job_take_reply, and *_take reads it (taking t:
 * freed or kept) as the whole call would. */
int bs_job_start_send(bs_job *j, bs_remote *r, const bs_job_spec *s);
unsigned bs_job_start_timeout_ms(const bs_job *j);
int bs_job_start_take(bs_job *j, bs_eterm_tree *t);
/* Before bs_job_start_take: 1 when the start's answer t says beamspy's
 * code went away from the node after it was found there (a tool that went
 * away had left a job, which removed the code as this tool attached): the
 * code is delivered again once that removal is over, the start is sent
 * again and *rc says how that went (t is the caller's to free). At most
 * BS_JOB_STARTS_AGAIN times; 0 otherwise. */
#define BS_JOB_STARTS_AGAIN 2
int bs_job_start_again(bs_job *j, const bs_eterm_tree *t, int *rc);
int bs_job_poll_send(bs_job *j);
int bs_job_poll_take(bs_job *j, bs_eterm_tree *t);
/* Renews the job's lease without a reply (a job whose poll is not answered
 * yet: a busy node answers late, and its lease must not run out meanwhile).
 * BS_EXIT_OK or the exit code, said. */
int bs_job_renew_send(bs_job *j);
int bs_job_finish_send(bs_job *j);
int bs_job_finish_take(bs_job *j, bs_eterm_tree *t, bs_profile *out);
/* Waits up to timeout_ms for the reply to j's request into *out; an exit
 * code (said, naming the node) when it does not come. */
int bs_job_await(bs_job *j, unsigned timeout_ms, bs_eterm_tree **out);
/* Decodes the reply a group read for j (reply freed) into *out. */
int bs_job_take_reply(bs_job *j, ei_x_buff *reply, int index, bs_eterm_tree **out);
/* Gives up the request j awaits (its node lost or too slow). */
void bs_job_forget_request(bs_job *j);
/* A seq job: arms the pattern that gives calls a token (after every node's
 * job started, so no flow reaches a node that does not collect yet). */
int bs_job_arm(bs_job *j);
/* Ends the job and hands back its result map as the node sent it (seq
 * jobs: #{format => seq, data => term_to_binary(Flow)}): *out is the whole
 * reply tree, *result the map inside {ok, Map}. */
int bs_job_finish_raw(bs_job *j, unsigned timeout_ms, bs_eterm_tree **out, const bs_eterm **result);
/* Ends the job, discarding any result. */
void bs_job_stop(bs_job *j);
void bs_job_free(bs_job *j);

/* Mode cpu: says on stderr what the profile's counts are (CPU samples at
 * the rate asked for, how many, of how many processes), then the node's
 * notes on how they were taken (lost samples, C frames unwound or not and
 * why, what the sampler cost), which the .bspy a node sends carries. */
/* Also says what --times samples' times are. */
void bs_job_say_cpu_samples(const bs_job_spec *s, const bs_profile *p, const char *node);

/* Whole-VM views (`record --all', `run'): processes ordered by running
 * time and, unless --show-idle, WAIT frames left out of o; says on stderr
 * how much waiting was left out. */
void bs_job_whole_vm_view(const bs_job_spec *s, const bs_profile *p, bs_render_opts *o);

#endif
