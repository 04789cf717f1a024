/* nodes_at_once.h — attaching and detaching several nodes at once (a
 * command over a cluster): an attach is a dozen round trips (connect,
 * checks, code delivery of the modules and the NIF), a detach a few (the
 * code removed, old code purged), each waiting on the node, ~54 ms on an
 * idle node and ~230 ms on a busy one (a detach of a busy node: seconds);
 * one after another they add up with the cluster. Here up to
 * BS_NODE_WORKERS threads each take the next node not yet done, so the time
 * is about the slowest nodes', not their sum. */
#ifndef BS_NODES_AT_ONCE_H
#define BS_NODES_AT_ONCE_H

#include "remote.h"

#define BS_NODE_WORKERS 16 /* threads at most: each waits on its node, none computes */

/* Attaches o->nodes[0..n) into nodes[0..n); codes[i] gets node i's result
 * (BS_EXIT_OK or its exit code, the message said on stderr). Falls back to
 * one node after another when a thread cannot be made. */
void bs_attach_all(const bs_remote_opts *o, bs_remote *nodes, int n, int *codes);
/* bs_remote_detach of nodes[0..n), several at once (as bs_attach_all). */
void bs_detach_all(bs_remote *nodes, int n);

#endif
