/* job_group.h — the jobs of several nodes driven at once (record over a
 * cluster): every node's request is sent first, then the answers are read
 * as they come, over poll(2) on the node connections, so no node waits on
 * another (node k is told to stop at the instant node 1 is, not after
 * nodes 1..k-1 were fetched). A node that fails, goes away or does not
 * answer in time is said on stderr and left out (a node gone or silent
 * has its connection closed: its job then ends by itself and removes
 * beamspy's code); the others go on. */
#ifndef BS_JOB_GROUP_H
#define BS_JOB_GROUP_H

#include <poll.h>

#include "job.h"

/* Called with each node's profile as it arrives (p is the callee's: it
 * must free it with bs_profile_free). Returns BS_EXIT_OK or an exit code. */
typedef int (*bs_job_group_fetched)(void *ctx, int i, bs_profile *p);

/* What a node's next reply answers. */
enum { BS_AWAIT_NOTHING, BS_AWAIT_START, BS_AWAIT_POLL, BS_AWAIT_FINISH };

typedef struct bs_job_group {
    bs_job *jobs;
    bs_remote *nodes;
    int n;
    int *out_code;          /* 0 while node i is in the run, else the exit code that took it out */
    int *waiting;           /* what node i's next reply answers (BS_AWAIT_*; a late poll's: across rounds) */
    long long *sent_ms;     /* when the awaited request was sent to node i */
    long long *deadline_ms; /* when node i is dropped if its answer is not in */
    long long *renewed_ms;  /* when node i's lease was last renewed (a poll or a renewal sent) */
    struct pollfd *pfd;     /* scratch */
    int *pfd_node;          /* scratch: the node of pfd[k] */
    int attached, recording, fetched; /* nodes at each stage (the progress line) */
    long long start_sent_ns[2], stop_sent_ns[2]; /* first and last send of the starts, the stops */
    long long started_ns, fetched_ns;            /* when the last start, the last fetch came back */
} bs_job_group;

/* Allocates for n nodes (jobs and nodes are the caller's, n long). 0 or -1. */
int bs_job_group_init(bs_job_group *g, bs_job *jobs, bs_remote *nodes, int n);
void bs_job_group_free(bs_job_group *g);

/* Takes node i out of the run with exit code rc (the reason already said);
 * a node lost or silent (rc 9 or 8) has its connection closed. */
void bs_job_group_drop(bs_job_group *g, int i, int rc);
/* Whether node i is still in the run. */
int bs_job_group_in(const bs_job_group *g, int i);

/* Starts the job on every node in the run: all requests sent, then all
 * answers awaited; the nodes already recording are polled every poll_ms
 * meanwhile (which renews their leases). Returns the number of nodes
 * recording. */
int bs_job_group_start(bs_job_group *g, const bs_job_spec *s, unsigned poll_ms);
/* Polls every job still running (which renews their leases); a job that
 * stopped by itself gets done set. Waits at most round_ms: a node slower
 * than that keeps its poll outstanding (no new one is sent to it, its
 * lease is renewed every round_ms without a reply) and is left out only
 * once its answer is a minute late (or later than the node's timeout), so
 * one slow node holds up neither the others' polls nor their leases.
 * Returns the number still running. */
int bs_job_group_poll(bs_job_group *g, unsigned round_ms);
/* Stops every started job (all stop requests sent at once) and hands each
 * profile to fetched as it arrives, waiting at most timeout_ms in all.
 * Returns BS_EXIT_OK or the first code fetched returned. */
int bs_job_group_finish(bs_job_group *g, unsigned timeout_ms, bs_job_group_fetched fetched, void *ctx);

/* One line on stderr: how long attaching took (attach_ms), how far apart
 * the start requests and the stop requests were sent (the tool's clock),
 * how long the nodes took to answer them, and how long after the stop
 * requests the outputs were written (written_ms). */
void bs_job_group_say_spread(const bs_job_group *g, long long attach_ms, long long written_ms);

#endif
