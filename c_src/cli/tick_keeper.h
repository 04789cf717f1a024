/* tick_keeper.h — keeps node connections alive while the tool is busy
 * elsewhere (merging and writing a cluster's profile can take longer than
 * a node's net_ticktime): a thread answers the nodes' ticks, so that no
 * node drops the connection and the detach can still remove beamspy's
 * code. The main thread must not use the connections between start and
 * stop. */
#ifndef BS_TICK_KEEPER_H
#define BS_TICK_KEEPER_H

#include <pthread.h>
#include <stdatomic.h>

#include "remote.h"

typedef struct bs_tick_keeper {
    bs_remote *nodes;
    int n;
    atomic_int stop;
    int running;
    pthread_t thread;
} bs_tick_keeper;

/* Starts answering the ticks of nodes[0..n) (those connected). When the
 * thread cannot be started the ticks go unanswered, as before: said. */
void bs_tick_keeper_start(bs_tick_keeper *k, bs_remote *nodes, int n);
/* Stops the thread (within a poll period, 200 ms) and hands the
 * connections back; a connection found closed is closed (fd -1). */
void bs_tick_keeper_stop(bs_tick_keeper *k);

#endif
