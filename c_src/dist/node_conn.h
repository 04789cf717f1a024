/* node_conn.h — one connection of the command-line tool, as a hidden C node
 * (ei), to a running Erlang node: resolving the cookie, connecting with
 * errors a person can act on, and remote calls through the node's `rex`
 * server.
 *
 * The cookie is never printed or logged: error texts name where it came
 * from ("the cookie from ~/.erlang.cookie"), never its value. */
#ifndef BS_NODE_CONN_H
#define BS_NODE_CONN_H

#include <stddef.h>

#include <ei.h>

/* Why a connection or a call failed; the CLI maps each to its own exit code. */
typedef enum bs_node_status {
    BS_NODE_OK = 0,
    BS_NODE_NOT_FOUND,    /* bad host, no epmd there, or epmd does not know the node */
    BS_NODE_REFUSED,      /* the node's port refused the connection */
    BS_NODE_COOKIE,       /* the handshake failed: wrong cookie */
    BS_NODE_TIMEOUT,      /* no answer in time (connect or call) */
    BS_NODE_INCOMPATIBLE, /* OTP too old, or a release/architecture we cannot serve */
    BS_NODE_LOST,         /* the connection broke during a call */
    BS_NODE_FAILED        /* the call ran and failed ({badrpc, _}), or bad usage */
} bs_node_status;

#define BS_NODE_NAME_MAX 256 /* alive@host as Erlang limits it */

typedef struct bs_node {
    ei_cnode ec;
    int fd;                            /* -1 when not connected */
    char name[BS_NODE_NAME_MAX + 1];   /* target, alive@host */
    char alive[BS_NODE_NAME_MAX + 1];
    char host[BS_NODE_NAME_MAX + 1];
    int long_names;                    /* chosen from the name's form: a '.' in the host */
    unsigned long long requests;       /* tags of bs_node_request */
    int job_ended;                     /* a job there said it ended by itself (its lease ran out) */
} bs_node;

/* Where a cookie comes from, in order: an explicit value, a file, or
 * $HOME/.erlang.cookie. Fills cookie (trailing whitespace removed) and a
 * description of its origin for messages. Returns 0, or -1 with err set. */
int bs_cookie_resolve(const char *value, const char *file, char *cookie, size_t cookie_size, char *origin,
                      size_t origin_size, char *err, size_t err_size);

/* name as bs_node_connect completes it ("a" -> "a@thishost", short form)
 * into out (at least BS_NODE_NAME_MAX + 1 bytes). BS_NODE_OK, or
 * BS_NODE_FAILED with err set for what is not a node name. */
bs_node_status bs_node_full_name(const char *name, char *out, size_t out_size, char *err, size_t err_size);

/* Splits "alive@host" (a bare "alive" means this host) and connects as a
 * hidden node named beamspy_<pid>@<host of the same form>. timeout_ms bounds
 * the epmd lookup and the handshake. */
bs_node_status bs_node_connect(bs_node *n, const char *name, const char *cookie, const char *cookie_origin,
                               unsigned timeout_ms, char *err, size_t err_size);

/* Calls mod:fun(Args...) on the node (args: an ei-encoded list, no version
 * byte). On BS_NODE_OK, *reply holds the message and *index points at the
 * function's result in it; the caller frees reply with ei_x_free. Messages
 * other than the reply are dropped; ticks are answered. A result of
 * {badrpc, Reason} is BS_NODE_FAILED with Reason printed into err. */
bs_node_status bs_node_call(bs_node *n, const char *mod, const char *fun, const ei_x_buff *args,
                            unsigned timeout_ms, ei_x_buff *reply, int *index, char *err, size_t err_size);

/* Sends {Tag, Self, Request} to the process `to` (encoded pid, no version
 * byte) and waits for its {Tag, Reply}: a call to a beamspy process that
 * spawns nothing on the node (a remote call would: rex runs each call in a
 * new process, which a recording of every process would then see).
 * request: one encoded term. Results as bs_node_call. */
bs_node_status bs_node_request(bs_node *n, const ei_x_buff *to, const ei_x_buff *request, unsigned timeout_ms,
                               ei_x_buff *reply, int *index, char *err, size_t err_size);

/* The two halves of bs_node_call and bs_node_request, for a tool that
 * waits on several nodes at once (one request outstanding per node): the
 * send fills *tag with what the reply carries (free it with ei_x_free once
 * the reply came or the node is given up); bs_node_receive_reply reads one
 * message, waiting at most timeout_ms for it: *got is 1 when it was the
 * reply (reply and *index as bs_node_call; {badrpc, _} to a call is
 * BS_NODE_FAILED), 0 when nothing came or something else did (a tick, a
 * stray message: dropped; with tag NULL every message is, which keeps an
 * idle connection's ticks answered). A closed connection is BS_NODE_LOST. */
bs_node_status bs_node_send_call(bs_node *n, const char *mod, const char *fun, const ei_x_buff *args,
                                 ei_x_buff *tag, char *err, size_t err_size);
bs_node_status bs_node_send_request(bs_node *n, const ei_x_buff *to, const ei_x_buff *request, ei_x_buff *tag,
                                    char *err, size_t err_size);
bs_node_status bs_node_receive_reply(bs_node *n, const ei_x_buff *tag, unsigned timeout_ms, int *got,
                                     ei_x_buff *reply, int *index, char *err, size_t err_size);

/* Closes the connection (the node sees nodedown at once). */
void bs_node_close(bs_node *n);

#endif
