/* attach_all.h — attaching several nodes at once (record over a cluster):
 * an attach is a dozen round trips (connect, checks, code delivery of the
 * modules and the NIF), each waiting on the node, ~54 ms on an idle node and
 * ~230 ms on a busy one; one after another they add up with the cluster.
 * Here up to BS_ATTACH_WORKERS threads each take the next node not yet
 * attached, so the time is about the slowest nodes', not their sum. */
#ifndef BS_ATTACH_ALL_H
#define BS_ATTACH_ALL_H

#include "remote.h"

#define BS_ATTACH_WORKERS 16 /* threads at most: each waits on its node, none computes */

/* Attaches o->nodes[0..n) into nodes[0..n); codes[i] gets node i's result
 * (BS_EXIT_OK or its exit code, the message said on stderr). Falls back to
 * one node after another when a thread cannot be made. */
void bs_attach_all(const bs_remote_opts *o, bs_remote *nodes, int n, int *codes);

#endif
