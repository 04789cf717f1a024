/* remote.h — what the commands that work on running nodes share (record,
 * dump, top, run): the connection options, attaching to a node (connect,
 * check, deliver beamspy's code), detaching (remove that code unless
 * --keep), jobs run by beamspy_agent on the node, and durations as people
 * write them ("500ms", "10s", "2m"). */
#ifndef BS_REMOTE_H
#define BS_REMOTE_H

#include <stdio.h>

#include "../dist/code_delivery.h"
#include "../dist/eterm.h"
#include "../dist/node_conn.h"

/* Nodes one command talks to at most. ei (erl_interface) waits on a
 * connection with select(2), which takes descriptors below FD_SETSIZE
 * (1024): 512 nodes keep every descriptor of the tool below it with room
 * to spare. Past that, ei's socket callbacks would have to wait with
 * poll(2) instead. */
#define BS_REMOTE_MAX_NODES 512
/* --cluster seeds and --exclude-node names given at most. */
#define BS_REMOTE_MAX_SEEDS BS_REMOTE_MAX_NODES
#define BS_REMOTE_MAX_EXCLUDED 1024

/* Long-option codes of the connection options (after the shared drawing
 * options of cli.h). */
enum {
    BS_OPT_NODE = 0x200,
    BS_OPT_COOKIE,
    BS_OPT_COOKIE_FILE,
    BS_OPT_CONNECT_TIMEOUT,
    BS_OPT_KEEP,
    BS_OPT_CLUSTER,
    BS_OPT_EXCLUDE_NODE,
    BS_OPT_REMOTE_FIRST_OWN
};

#define BS_REMOTE_LONG_OPTIONS                                              \
    {"node", required_argument, NULL, BS_OPT_NODE},                         \
    {"cookie", required_argument, NULL, BS_OPT_COOKIE},                     \
    {"cookie-file", required_argument, NULL, BS_OPT_COOKIE_FILE},           \
    {"connect-timeout", required_argument, NULL, BS_OPT_CONNECT_TIMEOUT},   \
    {"keep", no_argument, NULL, BS_OPT_KEEP},                               \
    {"cluster", required_argument, NULL, BS_OPT_CLUSTER},                   \
    {"exclude-node", required_argument, NULL, BS_OPT_EXCLUDE_NODE}

typedef struct bs_remote_opts {
    const char *nodes[BS_REMOTE_MAX_NODES]; /* --node, then what bs_cluster_find found */
    int n_nodes;
    const char *seeds[BS_REMOTE_MAX_SEEDS]; /* --cluster */
    int n_seeds;
    const char *excluded[BS_REMOTE_MAX_EXCLUDED]; /* --exclude-node */
    int n_excluded;
    char found[BS_REMOTE_MAX_NODES][BS_NODE_NAME_MAX + 1]; /* the names nodes[] points at after bs_cluster_find */
    const char *cookie;       /* never printed */
    const char *cookie_file;
    unsigned timeout_ms;      /* connecting and each call (BS_DEFAULT_CONNECT_TIMEOUT_MS) */
    int keep;                 /* leave delivered code loaded */
} bs_remote_opts;

/* One attached node. */
typedef struct bs_remote {
    bs_node node;
    bs_delivery delivery;
    unsigned timeout_ms;
    int keep;
} bs_remote;

void bs_remote_opts_init(bs_remote_opts *o);

/* Applies connection option `code`: 0 done, -1 not a connection option,
 * else the exit code (message printed). max_nodes: 1 for commands that work
 * on one node. */
int bs_remote_option(const char *cmd, int code, const char *arg, bs_remote_opts *o, int max_nodes);

/* Help lines of the connection options. */
void bs_remote_options_usage(FILE *out, int several_nodes);

/* Connects to o->nodes[i] and makes beamspy's modules available there.
 * Returns BS_EXIT_OK or the exit code, with the message printed. */
int bs_remote_attach(const bs_remote_opts *o, int i, bs_remote *r);

/* Removes delivered code (unless keep) and disconnects. Quiet on failure:
 * a node that went away has nothing left to remove. */
void bs_remote_detach(bs_remote *r);

/* Settles names left to the node (*elixir < 0): Elixir's when the node
 * runs Elixir (its elixir application started, or Elixir's Kernel loaded),
 * which stderr then says; Erlang's otherwise, or when the node cannot tell. */
void bs_remote_choose_names(bs_remote *r, int *elixir);

/* The exit code for a node status (BS_NODE_FAILED: BS_EXIT_FAILURE). */
int bs_remote_exit_code(bs_node_status st);

/* Calls mod:fun(args) on the node and decodes the result into *out (free
 * with bs_eterm_free). Returns BS_EXIT_OK or an exit code, message printed. */
int bs_remote_call(bs_remote *r, const char *mod, const char *fun, ei_x_buff *args, unsigned timeout_ms,
                   bs_eterm_tree **out);

/* Sends Request to the beamspy process `to` on the node and decodes its
 * reply (bs_node_request); as bs_remote_call otherwise. */
int bs_remote_request(bs_remote *r, const ei_x_buff *to, const ei_x_buff *request, unsigned timeout_ms,
                      bs_eterm_tree **out);

/* Parses "250ms", "10s", "2m", "1h". 0 ok, -1 bad, BS_DURATION_NO_UNIT for
 * a bare number ("5": seconds or milliseconds? the user must say). */
#define BS_DURATION_NO_UNIT (-2)
int bs_parse_duration_ms(const char *text, unsigned long long *ms);

/* Option OPT's duration ARG into *ms, from min_ms to max_ms. 0, or
 * BS_EXIT_USAGE with a one-line message: "has no unit: write e.g. 5s or
 * 5ms" for a bare number, else "bad OPT 'ARG' (hint)". */
int bs_cli_duration_option(const char *cmd, const char *opt, const char *arg, unsigned long long min_ms,
                           unsigned long long max_ms, const char *hint, unsigned long long *ms);

/* Fields of a map the node sent: the integer under atom key (0 when absent
 * or not an integer), the text (atom, binary or string; "" when absent). */
long long bs_term_int(const bs_eterm *map, const char *key);
const char *bs_term_text(const bs_eterm *map, const char *key);

/* 1536 -> "1.5 KiB" (compact: "1.5K"); negative numbers keep their sign. */
const char *bs_human_bytes(long long n, int compact, char *buf, size_t size);

/* Parses a plain decimal count. 0 ok, -1 bad. */
int bs_parse_count(const char *text, unsigned long long *v);

/* Parses "64M", "1G", "512K" or plain bytes. 0 ok, -1 bad. */
int bs_parse_bytes(const char *text, unsigned long long *bytes);

#endif
