/* tick_keeper.c — a thread that answers node ticks while the tool merges
 * and writes (see tick_keeper.h). */
#include "tick_keeper.h"

#include <poll.h>
#include <stdlib.h>

#include "cli.h"

#define TICK_POLL_MS 200

static void *keep(void *arg)
{
    bs_tick_keeper *k = arg;
    struct pollfd *pfd = calloc((size_t)k->n, sizeof *pfd);
    int *which = calloc((size_t)k->n, sizeof *which);
    if (!pfd || !which) {
        free(pfd), free(which);
        return NULL;
    }
    while (!atomic_load(&k->stop)) {
        int m = 0;
        for (int i = 0; i < k->n; i++)
            if (k->nodes[i].node.fd >= 0) {
                pfd[m] = (struct pollfd){.fd = k->nodes[i].node.fd, .events = POLLIN};
                which[m++] = i;
            }
        if (m == 0)
            break;
        if (poll(pfd, (nfds_t)m, TICK_POLL_MS) <= 0)
            continue;
        for (int j = 0; j < m; j++) {
            if (!pfd[j].revents)
                continue;
            char err[256];
            ei_x_buff reply;
            int got = 0, index = 0;
            /* No tag: a tick is answered, anything else dropped. */
            if (bs_node_receive_reply(&k->nodes[which[j]].node, NULL, 0, &got, &reply, &index, err, sizeof err) ==
                BS_NODE_LOST)
                bs_node_close(&k->nodes[which[j]].node);
        }
    }
    free(pfd), free(which);
    return NULL;
}

void bs_tick_keeper_start(bs_tick_keeper *k, bs_remote *nodes, int n)
{
    k->nodes = nodes;
    k->n = n;
    atomic_store(&k->stop, 0);
    k->running = pthread_create(&k->thread, NULL, keep, k) == 0;
    if (!k->running)
        bs_cli_error("warning: cannot start a thread to answer the nodes' ticks while writing: a node may drop the "
                       "connection if writing takes longer than its net_ticktime");
}

void bs_tick_keeper_stop(bs_tick_keeper *k)
{
    if (!k->running)
        return;
    atomic_store(&k->stop, 1);
    pthread_join(k->thread, NULL);
    k->running = 0;
}
