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
    if (!g->out_code || !g->waiting || !g->pfd || !g->pfd_node || !g->sent_ms) {
        bs_job_group_free(g);
        return -1;
    }
    return 0;
}

void bs_job_group_free(bs_job_group *g)
{
    free(g->out_code), free(g->waiting), free(g->pfd), free(g->pfd_node), free(g->sent_ms);
    g->out_code = g->waiting = g->pfd_node = NULL;
    g->sent_ms = NULL;
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
    g->waiting[i] = 0;
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

/* Reads node i's next message; a reply goes to take. */
static void read_one(bs_job_group *g, int i, long long left_ms, take_fn take, void *ctx)
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
    g->waiting[i] = 0;
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

/* Reads the replies of every node with waiting set as they come, for at
 * most round_ms; a node whose answer is later than timeout_ms after its
 * request was sent is said and dropped, the others not in yet stay
 * waiting. */
static void await_all(bs_job_group *g, unsigned round_ms, unsigned timeout_ms, const char *what, take_fn take,
                      void *ctx)
{
    long long round_end = bs_now_ms() + round_ms;
    for (;;) {
        long long now = bs_now_ms(), until = round_end;
        int k = 0;
        for (int i = 0; i < g->n; i++) {
            if (!g->waiting[i])
                continue;
            if (now - g->sent_ms[i] >= (long long)timeout_ms) {
                bs_cli_error("%s: beamspy's job did not answer %s within %u ms", g->nodes[i].node.name, what,
                             timeout_ms);
                bs_job_group_drop(g, i, BS_EXIT_TIMEOUT);
                continue;
            }
            if (g->sent_ms[i] + timeout_ms < until)
                until = g->sent_ms[i] + timeout_ms;
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
                read_one(g, i, g->sent_ms[i] + timeout_ms - bs_now_ms(), take, ctx);
            else if (g->pfd[m].revents && m >= awaited)
                drain_one(g, i);
        }
    }
}

/* Marks node i as awaiting the request just sent. */
static void sent_now(bs_job_group *g, int i)
{
    g->waiting[i] = 1;
    g->sent_ms[i] = bs_now_ms();
}

static int take_start(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx)
{
    (void)ctx;
    int rc = bs_job_start_take(&g->jobs[i], t);
    if (rc == BS_EXIT_OK)
        g->recording++;
    g->started_ns = now_ns();
    return rc;
}

int bs_job_group_start(bs_job_group *g, const bs_job_spec *s)
{
    unsigned timeout = 0;
    g->start_sent_ns[0] = now_ns();
    for (int i = 0; i < g->n; i++) {
        if (!bs_job_group_in(g, i))
            continue;
        int rc = bs_job_start_send(&g->jobs[i], &g->nodes[i], s);
        if (rc != BS_EXIT_OK) {
            bs_job_group_drop(g, i, rc);
            continue;
        }
        sent_now(g, i);
        if (bs_job_start_timeout_ms(&g->jobs[i]) > timeout)
            timeout = bs_job_start_timeout_ms(&g->jobs[i]);
    }
    g->start_sent_ns[1] = now_ns();
    await_all(g, timeout, timeout, "the start", take_start, NULL);
    return g->recording;
}

static int take_poll(bs_job_group *g, int i, bs_eterm_tree *t, void *ctx)
{
    (void)ctx;
    return bs_job_poll_take(&g->jobs[i], t);
}

int bs_job_group_poll(bs_job_group *g, unsigned round_ms)
{
    unsigned timeout = 0;
    for (int i = 0; i < g->n; i++) {
        bs_job *j = &g->jobs[i];
        if (!bs_job_group_in(g, i) || !j->started || j->done)
            continue;
        if (g->nodes[i].timeout_ms > timeout)
            timeout = g->nodes[i].timeout_ms;
        if (g->waiting[i])
            continue; /* its last poll is not answered yet */
        int rc = bs_job_poll_send(j);
        if (rc != BS_EXIT_OK) {
            bs_job_group_drop(g, i, rc);
            continue;
        }
        sent_now(g, i);
    }
    await_all(g, round_ms, timeout, "a poll", take_poll, NULL);
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
        sent_now(g, i);
    }
    g->stop_sent_ns[1] = now_ns();
    await_all(g, timeout_ms, timeout_ms, "the stop", take_finish, &f);
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
