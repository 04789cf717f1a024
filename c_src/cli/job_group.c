/* job_group.c — several nodes' jobs driven at once over poll(2) (see
 * job_group.h). */
#define _GNU_SOURCE
#include "job_group.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "stop_signals.h"

/* How long an unanswered poll is waited for at least (a distribution
 * tick's time: a node that does not answer for that long is not merely
 * busy). */
#define POLL_PATIENCE_MS 60000u

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int bs_job_group_init(bs_job_group *g, bs_job *jobs, bs_remote *nodes, int n)
{
    memset(g, 0, sizeof *g);
    g->jobs = jobs;
    g->nodes = nodes;
    g->n = n;
    g->out_code = calloc((size_t)n, sizeof *g->out_code);
    g->waiting = calloc((size_t)n, sizeof *g->waiting);
    g->pfd = calloc((size_t)n, sizeof *g->pfd);
    g->pfd_node = calloc((size_t)n, sizeof *g->pfd_node);
    g->sent_ms = calloc((size_t)n, sizeof *g->sent_ms);
    g->deadline_ms = calloc((size_t)n, sizeof *g->deadline_ms);
    g->renewed_ms = calloc((size_t)n, sizeof *g->renewed_ms);
    if (!g->out_code || !g->waiting || !g->pfd || !g->pfd_node || !g->sent_ms || !g->deadline_ms || !g->renewed_ms) {
        bs_job_group_free(g);
        return -1;
    }
    return 0;
}

void bs_job_group_free(bs_job_group *g)
{
    free(g->out_code), free(g->waiting), free(g->pfd), free(g->pfd_node), free(g->sent_ms), free(g->deadline_ms);
    free(g->renewed_ms);
    g->out_code = g->waiting = g->pfd_node = NULL;
    g->sent_ms = g->deadline_ms = g->renewed_ms = NULL;
    g->pfd = NULL;
}

int bs_job_group_in(const bs_job_group *g, int i)
{
    return g->out_code[i] == 0;
}

void bs_job_group_drop(bs_job_group *g, int i, int rc)
{
    if (g->out_code[i])
        return;
    g->out_code[i] = rc ? rc : BS_EXIT_FAILURE;
    g->waiting[i] = BS_AWAIT_NOTHING;
    bs_job_forget_request(&g->jobs[i]);
    if (g->jobs[i].started)
        g->recording--;
    g->jobs[i].started = 0;
    g->jobs[i].lost = 1;
    if (g->nodes[i].node.fd >= 0)
        g->attached--;
    /* A node gone or silent: closed (a job there ends by itself and
     * removes beamspy's code). A node that answered with a failure stays
     * connected until the detach, which removes the code delivered. */
    if (rc == BS_EXIT_CONNECTION_LOST || rc == BS_EXIT_TIMEOUT)
        bs_node_close(&g->nodes[i].node);
}

/* What to do with node i's reply: an exit code (BS_EXIT_OK: it stays). */
typedef int (*take_fn)(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx);
static int take_start(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx);
static int take_poll(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx);
static int take_finish(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx);

/* Reads node i's next message; a reply goes to the taker of what node i
 * awaits. */
static void read_one(bs_job_group *g, int i, long long left_ms, void *ctx)
{
    char err[1024];
    ei_x_buff reply;
    int got = 0, index = 0;
    bs_job *j = &g->jobs[i];
    bs_node_status st = bs_node_receive_reply(&g->nodes[i].node, &j->tag, (unsigned)(left_ms > 0 ? left_ms : 1),
                                              &got, &reply, &index, err, sizeof err);
    if (st != BS_NODE_OK) {
        bs_cli_error("%s", err);
        bs_job_group_drop(g, i, st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st));
        return;
    }
    if (!got)
        return;
    take_fn take = g->waiting[i] == BS_AWAIT_START ? take_start
                   : g->waiting[i] == BS_AWAIT_POLL ? take_poll
                                                    : take_finish;
    g->waiting[i] = BS_AWAIT_NOTHING;
    bs_eterm_tree *t = NULL;
    int rc = bs_job_take_reply(j, &reply, index, &t);
    if (rc == BS_EXIT_OK)
        rc = take(g, i, t, ctx);
    if (rc != BS_EXIT_OK)
        bs_job_group_drop(g, i, rc);
}

/* Reads and drops one message from node i, to which nothing is awaited
 * (a tick, answered; a late poll's answer). */
static void drain_one(bs_job_group *g, int i)
{
    char err[1024];
    ei_x_buff reply;
    int got = 0, index = 0;
    bs_node_status st = bs_node_receive_reply(&g->nodes[i].node, NULL, 1000, &got, &reply, &index, err, sizeof err);
    if (st == BS_NODE_LOST) {
        bs_node_close(&g->nodes[i].node); /* said at the detach, if anything is left to do there */
    } else if (st == BS_NODE_FAILED && g->jobs[i].started) {
        bs_cli_error("%s", err); /* the job ended by itself */
        bs_job_group_drop(g, i, BS_EXIT_FAILURE);
    }
}

static const char *awaited_name(int what)
{
    return what == BS_AWAIT_START ? "the start" : what == BS_AWAIT_POLL ? "a poll" : "the stop";
}

/* Reads the replies of every node that awaits one as they come, for at
 * most round_ms (or until none is awaited); a node whose answer is not in
 * by its deadline is said and dropped, the others not in yet stay
 * waiting. ctx goes to the finish's taker. */
static void await_all(bs_job_group *g, unsigned round_ms, void *ctx)
{
    long long round_end = bs_now_ms() + round_ms;
    for (;;) {
        long long now = bs_now_ms(), until = round_end;
        int k = 0;
        for (int i = 0; i < g->n; i++) {
            if (!g->waiting[i])
                continue;
            if (now >= g->deadline_ms[i]) {
                bs_cli_error("%s: beamspy's job did not answer %s within %lld ms", g->nodes[i].node.name,
                             awaited_name(g->waiting[i]), g->deadline_ms[i] - g->sent_ms[i]);
                bs_job_group_drop(g, i, BS_EXIT_TIMEOUT);
                continue;
            }
            if (g->deadline_ms[i] < until)
                until = g->deadline_ms[i];
            g->pfd[k] = (struct pollfd){.fd = g->nodes[i].node.fd, .events = POLLIN};
            g->pfd_node[k++] = i;
        }
        int awaited = k;
        /* The other connections are read too: a node whose ticks go
         * unanswered for its net_ticktime drops the connection (and the
         * detach could then not remove beamspy's code). */
        for (int i = 0; i < g->n && awaited > 0; i++)
            if (!g->waiting[i] && g->nodes[i].node.fd >= 0) {
                g->pfd[k] = (struct pollfd){.fd = g->nodes[i].node.fd, .events = POLLIN};
                g->pfd_node[k++] = i;
            }
        long long left = until - now;
        if (awaited == 0 || (left <= 0 && now >= round_end))
            return;
        if (left < 0)
            left = 0;
        int ready = poll(g->pfd, (nfds_t)k, left > 1000 ? 1000 : (int)left);
        if (ready < 0 && errno != EINTR) {
            bs_cli_error("poll: %s", strerror(errno));
            for (int i = 0; i < g->n; i++)
                if (g->waiting[i])
                    bs_job_group_drop(g, i, BS_EXIT_FAILURE);
            return;
        }
        for (int m = 0; ready > 0 && m < k; m++) {
            int i = g->pfd_node[m];
            if (g->pfd[m].revents && m < awaited && g->waiting[i])
                read_one(g, i, g->deadline_ms[i] - bs_now_ms(), ctx);
            else if (g->pfd[m].revents && m >= awaited)
                drain_one(g, i);
        }
    }
}

/* Marks node i as awaiting the answer to the request just sent (what),
 * for at most timeout_ms. */
static void sent_now(bs_job_group *g, int i, int what, unsigned timeout_ms)
{
    g->waiting[i] = what;
    g->sent_ms[i] = bs_now_ms();
    g->deadline_ms[i] = g->sent_ms[i] + timeout_ms;
}

/* Sends a poll to every job that is recording and awaits nothing. A job
 * whose last poll is not answered yet keeps it outstanding and is sent a
 * renewal of its lease instead, at most one per renew_ms: a node too busy
 * to answer soon must not lose its job to the lease meanwhile. A poll is
 * given up after the node's timeout or POLL_PATIENCE_MS, whichever is
 * longer: a slow answer loses nothing, a node gone is seen by its
 * connection. */
static void poll_idle_jobs(bs_job_group *g, unsigned renew_ms)
{
    long long now = bs_now_ms();
    for (int i = 0; i < g->n; i++) {
        bs_job *j = &g->jobs[i];
        if (!bs_job_group_in(g, i) || !j->started || j->done)
            continue;
        if (g->waiting[i] == BS_AWAIT_POLL && now - g->renewed_ms[i] >= (long long)renew_ms) {
            int rc = bs_job_renew_send(j);
            if (rc != BS_EXIT_OK) {
                bs_job_group_drop(g, i, rc); /* out of the run: no poll either */
                continue;
            }
            g->renewed_ms[i] = now;
        }
        if (g->waiting[i])
            continue;
        int rc = bs_job_poll_send(j);
        if (rc != BS_EXIT_OK) {
            bs_job_group_drop(g, i, rc);
            continue;
        }
        unsigned patience = g->nodes[i].timeout_ms > POLL_PATIENCE_MS ? g->nodes[i].timeout_ms : POLL_PATIENCE_MS;
        sent_now(g, i, BS_AWAIT_POLL, patience);
        g->renewed_ms[i] = g->sent_ms[i];
    }
}

static int awaiting(const bs_job_group *g, int what)
{
    for (int i = 0; i < g->n; i++)
        if (g->waiting[i] == what)
            return 1;
    return 0;
}

static int take_start(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx)
{
    (void)ctx;
    int rc;
    if (bs_job_start_again(&g->jobs[i], t, &rc)) {
        bs_eterm_free(t);
        if (rc == BS_EXIT_OK)
            sent_now(g, i, BS_AWAIT_START, bs_job_start_timeout_ms(&g->jobs[i]));
        return rc;
    }
    rc = bs_job_start_take(&g->jobs[i], t);
    if (rc == BS_EXIT_OK)
        g->recording++;
    g->started_ns = now_ns();
    return rc;
}

int bs_job_group_start(bs_job_group *g, const bs_job_spec *s, unsigned poll_ms)
{
    g->start_sent_ns[0] = now_ns();
    for (int i = 0; i < g->n; i++) {
        if (!bs_job_group_in(g, i))
            continue;
        int rc = bs_job_start_send(&g->jobs[i], &g->nodes[i], s);
        if (rc != BS_EXIT_OK) {
            bs_job_group_drop(g, i, rc);
            continue;
        }
        sent_now(g, i, BS_AWAIT_START, bs_job_start_timeout_ms(&g->jobs[i]));
    }
    g->start_sent_ns[1] = now_ns();
    /* A node that started early is polled while the others are still
     * starting: its lease would run out otherwise (a busy node can take
     * tens of seconds to answer its start). */
    while (awaiting(g, BS_AWAIT_START)) {
        await_all(g, poll_ms, NULL);
        poll_idle_jobs(g, poll_ms);
    }
    return g->recording;
}

static int take_poll(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx)
{
    (void)ctx;
    return bs_job_poll_take(&g->jobs[i], t);
}

int bs_job_group_poll(bs_job_group *g, unsigned round_ms)
{
    poll_idle_jobs(g, round_ms);
    await_all(g, round_ms, NULL);
    int running = 0;
    for (int i = 0; i < g->n; i++)
        running += bs_job_group_in(g, i) && g->jobs[i].started && !g->jobs[i].done;
    return running;
}

typedef struct finish_ctx {
    bs_job_group_fetched fetched;
    void *ctx;
    int rc;
} finish_ctx;

static int take_finish(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx)
{
    finish_ctx *f = ctx;
    bs_profile p;
    memset(&p, 0, sizeof p);
    int rc = bs_job_finish_take(&g->jobs[i], t, &p); /* the job is over either way */
    g->fetched_ns = now_ns();
    g->recording--;
    if (rc != BS_EXIT_OK)
        return rc;
    g->fetched++;
    int frc = f->fetched(f->ctx, i, &p);
    if (frc != BS_EXIT_OK && f->rc == BS_EXIT_OK)
        f->rc = frc;
    return BS_EXIT_OK;
}

int bs_job_group_finish(bs_job_group *g, unsigned timeout_ms, bs_job_group_fetched fetched, void *ctx)
{
    finish_ctx f = {fetched, ctx, BS_EXIT_OK};
    g->stop_sent_ns[0] = now_ns();
    for (int i = 0; i < g->n; i++) {
        if (!bs_job_group_in(g, i) || !g->jobs[i].started)
            continue;
        bs_job_forget_request(&g->jobs[i]); /* a late poll's answer: dropped when it comes */
        int rc = bs_job_finish_send(&g->jobs[i]);
        if (rc != BS_EXIT_OK) {
            bs_job_group_drop(g, i, rc);
            continue;
        }
        sent_now(g, i, BS_AWAIT_FINISH, timeout_ms);
    }
    g->stop_sent_ns[1] = now_ns();
    await_all(g, timeout_ms, &f);
    return f.rc;
}

void bs_job_group_say_spread(const bs_job_group *g, long long attach_ms, long long written_ms)
{
    double start_ms = (double)(g->start_sent_ns[1] - g->start_sent_ns[0]) / 1e6;
    double stop_ms = (double)(g->stop_sent_ns[1] - g->stop_sent_ns[0]) / 1e6;
    double started = g->started_ns ? (double)(g->started_ns - g->start_sent_ns[0]) / 1e6 : 0;
    double fetched = g->fetched_ns ? (double)(g->fetched_ns - g->stop_sent_ns[0]) / 1e6 : 0;
    fprintf(stderr,
            "beamspy: %d node%s: attached in %lld ms; start requests sent within %.2f ms (the last answered after "
            "%.0f ms); stop requests sent within %.2f ms (the last profile in after %.0f ms, the outputs written "
            "after %lld ms)\n",
            g->n, g->n == 1 ? "" : "s", attach_ms, start_ms, started, stop_ms, fetched, written_ms);
}
