/* cluster.h — the nodes a command works on when the user names a cluster:
 * `--cluster NODE` (NODE and every node it is connected to, asked over
 * distribution), `--node` beside it, `--exclude-node` taken out, and the set
 * said on stderr before anything is recorded. */
#ifndef BS_CLUSTER_H
#define BS_CLUSTER_H

#include "remote.h"

/* Names one --cluster search keeps at most (all seeds together, before
 * exclusions): beyond it the cluster is refused, never cut. */
#define BS_CLUSTER_MAX_SEEN 100000

/* Whether the user named any node (--node or --cluster). */
int bs_cluster_any_node(const bs_remote_opts *o);

/* Settles o->nodes when --cluster or --exclude-node was given (else leaves
 * it as --node made it): each seed is connected to with o's cookie options
 * and asked for erlang:node() and erlang:nodes(visible); the --node names
 * come first, then each seed and its nodes (sorted by name), each name once
 * (bare names completed as for --node), and the --exclude-node names are
 * left out. Says the set on stderr, and an --exclude-node that matched
 * nothing. Returns BS_EXIT_OK; the connection's exit code for a seed that
 * cannot be reached or asked (its name in the message); BS_EXIT_USAGE when
 * nothing is left or the set is larger than max_nodes (its size said). */
int bs_cluster_find(const char *cmd, bs_remote_opts *o, int max_nodes);

#endif
