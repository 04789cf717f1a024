/* node_conn.c — connecting to a node as a C node and calling functions on
 * it (see node_conn.h). */
#include "node_conn.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "epmd_lookup.h"
#include "eterm.h"

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int bs_cookie_resolve(const char *value, const char *file, char *cookie, size_t cookie_size, char *origin,
                      size_t origin_size, char *err, size_t err_size)
{
    char path[4096];
    if (value) {
        snprintf(origin, origin_size, "the cookie given with --cookie");
        if (strlen(value) >= cookie_size || !*value) {
            snprintf(err, err_size, "%s is empty or longer than %zu bytes", origin, cookie_size - 1);
            return -1;
        }
        strcpy(cookie, value);
        return 0;
    }
    if (file) {
        snprintf(path, sizeof path, "%s", file);
        snprintf(origin, origin_size, "the cookie from %s", file);
    } else {
        const char *home = getenv("HOME");
        if (!home || !*home) {
            snprintf(err, err_size, "no cookie: HOME is not set; give --cookie or --cookie-file");
            return -1;
        }
        snprintf(path, sizeof path, "%s/.erlang.cookie", home);
        snprintf(origin, origin_size, "the cookie from ~/.erlang.cookie");
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_size, "cannot read cookie file %s: %s%s", path, strerror(errno),
                 file ? "" : " (give --cookie or --cookie-file)");
        return -1;
    }
    size_t n = fread(cookie, 1, cookie_size - 1, f);
    int too_long = n == cookie_size - 1 && fgetc(f) != EOF;
    fclose(f);
    while (n > 0 && isspace((unsigned char)cookie[n - 1]))
        n--;
    cookie[n] = '\0';
    if (too_long || n == 0) {
        snprintf(err, err_size, "cookie file %s is %s", path, n == 0 ? "empty" : "too long");
        return -1;
    }
    return 0;
}

/* This host's name in the form the target uses: short (up to the first
 * '.') or long (fully qualified when the resolver knows it). */
static void own_host(int long_names, char *host, size_t size)
{
    char name[BS_NODE_NAME_MAX + 1] = "localhost";
    if (gethostname(name, sizeof name - 1) != 0)
        snprintf(name, sizeof name, "localhost");
    name[sizeof name - 1] = '\0';
    if (!long_names) {
        char *dot = strchr(name, '.');
        if (dot)
            *dot = '\0';
        snprintf(host, size, "%s", name);
        return;
    }
    if (!strchr(name, '.')) {
        struct addrinfo hints = {.ai_flags = AI_CANONNAME}, *res = NULL;
        if (getaddrinfo(name, NULL, &hints, &res) == 0 && res && res->ai_canonname &&
            strchr(res->ai_canonname, '.'))
            snprintf(name, sizeof name, "%s", res->ai_canonname);
        if (res)
            freeaddrinfo(res);
    }
    /* Long names need a dot; an address always has one. */
    snprintf(host, size, "%s", strchr(name, '.') ? name : "127.0.0.1");
}

static bs_node_status parse_name(bs_node *n, const char *name, char *err, size_t err_size)
{
    const char *at = strchr(name, '@');
    size_t alive_len = at ? (size_t)(at - name) : strlen(name);
    if (alive_len == 0 || alive_len > BS_NODE_NAME_MAX || (at && !at[1]) || (at && strchr(at + 1, '@'))) {
        snprintf(err, err_size, "'%s' is not a node name (expected name@host)", name);
        return BS_NODE_FAILED;
    }
    for (size_t i = 0; i < alive_len; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-') {
            snprintf(err, err_size, "'%s' is not a node name (expected name@host)", name);
            return BS_NODE_FAILED;
        }
    memcpy(n->alive, name, alive_len);
    n->alive[alive_len] = '\0';
    if (at)
        snprintf(n->host, sizeof n->host, "%s", at + 1);
    else
        own_host(0, n->host, sizeof n->host);
    n->long_names = strchr(n->host, '.') != NULL;
    if (strlen(n->alive) + 1 + strlen(n->host) > BS_NODE_NAME_MAX) {
        snprintf(err, err_size, "node name '%s' is too long", name);
        return BS_NODE_FAILED;
    }
    size_t a = strlen(n->alive), h = strlen(n->host);
    memcpy(n->name, n->alive, a);
    n->name[a] = '@';
    memcpy(n->name + a + 1, n->host, h + 1);
    return BS_NODE_OK;
}

bs_node_status bs_node_full_name(const char *name, char *out, size_t out_size, char *err, size_t err_size)
{
    bs_node n;
    memset(&n, 0, sizeof n);
    bs_node_status st = parse_name(&n, name, err, err_size);
    if (st == BS_NODE_OK)
        snprintf(out, out_size, "%s", n.name);
    return st;
}

bs_node_status bs_node_connect(bs_node *n, const char *name, const char *cookie, const char *cookie_origin,
                               unsigned timeout_ms, char *err, size_t err_size)
{
    memset(n, 0, sizeof *n);
    n->fd = -1;
    bs_node_status st = parse_name(n, name, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    if (strlen(cookie) > EI_MAX_COOKIE_SIZE) {
        snprintf(err, err_size, "%s is longer than %d bytes", cookie_origin, EI_MAX_COOKIE_SIZE);
        return BS_NODE_FAILED;
    }
    long long deadline = now_ms() + timeout_ms;
    int port = 0;
    switch (bs_epmd_port(n->host, n->alive, timeout_ms, &port, err, err_size)) {
    case BS_EPMD_FOUND:
        break;
    case BS_EPMD_TIMEOUT:
        return BS_NODE_TIMEOUT;
    case BS_EPMD_PROTOCOL:
        return BS_NODE_FAILED;
    default:
        return BS_NODE_NOT_FOUND;
    }

    char self_host[BS_NODE_NAME_MAX + 1], self_alive[64], self_name[BS_NODE_NAME_MAX * 2 + 2];
    own_host(n->long_names, self_host, sizeof self_host);
    /* A name of its own for each connection: a node refuses a second
     * connection from a name it still counts as connected, and a
     * connection just closed (the one --cluster used to find the nodes) can
     * still count for a moment. */
    static atomic_uint connections;
    snprintf(self_alive, sizeof self_alive, "beamspy_%ld_%u", (long)getpid(), atomic_fetch_add(&connections, 1));
    snprintf(self_name, sizeof self_name, "%s@%s", self_alive, self_host);
    struct in_addr any = {0};
    unsigned creation = (unsigned)(time(NULL) ^ (getpid() << 8)) | 1u;
    if (ei_init() != 0 ||
        ei_connect_xinit(&n->ec, self_host, self_alive, self_name, (Erl_IpAddr)&any, cookie, creation) < 0) {
        snprintf(err, err_size, "cannot set up a C node named %s", self_name);
        return BS_NODE_FAILED;
    }
    long long left = deadline - now_ms();
    if (left < 1)
        left = 1;
    errno = 0;
    int fd = ei_connect_host_port_tmo(&n->ec, n->host, port, (unsigned)left);
    if (fd < 0) {
        /* ei reports a refused TCP connection as EIO like a failed
         * handshake; connect's own errno tells them apart. */
        int e = erl_errno == EIO && errno ? errno : erl_errno;
        if (e == ETIMEDOUT) {
            snprintf(err, err_size, "node %s did not answer within %u ms", n->name, timeout_ms);
            return BS_NODE_TIMEOUT;
        }
        if (e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == ECONNRESET) {
            snprintf(err, err_size, "node %s refused the connection (%s)", n->name, strerror(e));
            return BS_NODE_REFUSED;
        }
        /* The handshake itself failed: the node closed on us after the
         * challenge, which is what it does when the cookies differ. */
        snprintf(err, err_size, "node %s rejected %s (wrong cookie?)", n->name, cookie_origin);
        return BS_NODE_COOKIE;
    }
    n->fd = fd;
    return BS_NODE_OK;
}

/* {badrpc, Reason} as one line of text. */
static int badrpc_text(const ei_x_buff *x, int index, char *err, size_t err_size, const char *node)
{
    int i = index, arity;
    char atom[MAXATOMLEN_UTF8];
    if (ei_decode_tuple_header(x->buff, &i, &arity) < 0 || arity != 2 || ei_decode_atom(x->buff, &i, atom) < 0 ||
        strcmp(atom, "badrpc") != 0)
        return 0;
    char text[301];
    int ti = i;
    (void)bs_eterm_describe(x->buff, x->index, &ti, text, sizeof text);
    snprintf(err, err_size, "call on %s failed: %s", node, text);
    return 1;
}

/* Whether the message in x is {Tag, _} with Tag's encoding equal to tag;
 * *index then points at the second element. */
static int tagged_reply(const ei_x_buff *x, const ei_x_buff *tag, int *index)
{
    int i = 0, version, arity;
    if (ei_decode_version(x->buff, &i, &version) < 0 || ei_decode_tuple_header(x->buff, &i, &arity) < 0 ||
        arity != 2)
        return 0;
    /* A term's encoding ends itself: the first element is Tag exactly when
     * its bytes start with Tag's (no ei_skip_term, which recurses once per
     * level of nesting of whatever a process sends). */
    if (tag->index > x->index - i || memcmp(x->buff + i, tag->buff, (size_t)tag->index) != 0)
        return 0;
    *index = i + tag->index;
    return 1;
}

/* Whether the message in x is {beamspy_job_ended, JobPid, {lease, Ms}}: a
 * job of this tool's ended by itself, having heard no poll within its
 * lease (beamspy_agent). Said in err: no request to it will be answered. */
static int job_ended(const ei_x_buff *x, const char *node, char *err, size_t err_size)
{
    int i = 0, version, arity, inner;
    char atom[MAXATOMLEN_UTF8];
    erlang_pid pid;
    long long lease = 0;
    if (ei_decode_version(x->buff, &i, &version) < 0 || ei_decode_tuple_header(x->buff, &i, &arity) < 0 ||
        arity != 3 || ei_decode_atom(x->buff, &i, atom) < 0 || strcmp(atom, "beamspy_job_ended") != 0 ||
        ei_decode_pid(x->buff, &i, &pid) < 0 || ei_decode_tuple_header(x->buff, &i, &inner) < 0 || inner != 2 ||
        ei_decode_atom(x->buff, &i, atom) < 0 || strcmp(atom, "lease") != 0 || ei_decode_longlong(x->buff, &i, &lease) < 0)
        return 0;
    snprintf(err, err_size,
             "the job on %s ended by itself: it heard from this tool within none of its leases of %lld ms "
             "(the tool or the node was too busy to keep up; --lease gives more time), and stopped everything it had "
             "set there",
             node, lease);
    return 1;
}

/* Whether tag is the atom rex: the reply to a call, which may be {badrpc, _}. */
static int is_rex(const ei_x_buff *tag)
{
    int i = 0;
    char atom[MAXATOMLEN_UTF8];
    return ei_decode_atom(tag->buff, &i, atom) == 0 && strcmp(atom, "rex") == 0;
}

bs_node_status bs_node_receive_reply(bs_node *n, const ei_x_buff *tag, unsigned timeout_ms, int *got,
                                     ei_x_buff *reply, int *index, char *err, size_t err_size)
{
    *got = 0;
    if (n->fd < 0) {
        snprintf(err, err_size, "not connected to %s", n->name);
        return BS_NODE_LOST;
    }
    erlang_msg msg;
    if (ei_x_new(reply) < 0) {
        snprintf(err, err_size, "out of memory");
        return BS_NODE_FAILED;
    }
    int r = ei_xreceive_msg_tmo(n->fd, &msg, reply, timeout_ms ? timeout_ms : 1);
    if (r == ERL_TICK) {
        ei_x_free(reply);
        return BS_NODE_OK;
    }
    if (r == ERL_ERROR) {
        ei_x_free(reply);
        if (erl_errno == ETIMEDOUT || erl_errno == EAGAIN)
            return BS_NODE_OK; /* nothing yet: the caller's deadline decides */
        snprintf(err, err_size, "lost the connection to %s", n->name);
        return BS_NODE_LOST;
    }
    if (tag && (msg.msgtype == ERL_SEND || msg.msgtype == ERL_REG_SEND) && tagged_reply(reply, tag, index)) {
        *got = 1;
        if (is_rex(tag) && badrpc_text(reply, *index, err, err_size, n->name)) {
            ei_x_free(reply);
            *got = 0;
            return BS_NODE_FAILED;
        }
        return BS_NODE_OK;
    }
    if ((msg.msgtype == ERL_SEND || msg.msgtype == ERL_REG_SEND) && job_ended(reply, n->name, err, err_size)) {
        n->job_ended = 1;
        ei_x_free(reply);
        return BS_NODE_FAILED;
    }
    ei_x_free(reply); /* links, exits, strays: dropped */
    return BS_NODE_OK;
}

/* Receives until a message {Tag, Reply} arrives (*index at Reply), the
 * deadline passes or the connection breaks. `what` names the call in the
 * timeout message. */
static bs_node_status await_reply(bs_node *n, const ei_x_buff *tag, unsigned timeout_ms, const char *what,
                                  ei_x_buff *reply, int *index, char *err, size_t err_size)
{
    long long deadline = now_ms() + timeout_ms;
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            snprintf(err, err_size, "%s on %s did not answer within %u ms", what, n->name, timeout_ms);
            return BS_NODE_TIMEOUT;
        }
        int got = 0;
        bs_node_status st = bs_node_receive_reply(n, tag, (unsigned)left, &got, reply, index, err, err_size);
        if (st != BS_NODE_OK || got)
            return st;
    }
}

bs_node_status bs_node_send_call(bs_node *n, const char *mod, const char *fun, const ei_x_buff *args,
                                 ei_x_buff *tag, char *err, size_t err_size)
{
    tag->buff = NULL;
    if (n->fd < 0) {
        snprintf(err, err_size, "not connected to %s", n->name);
        return BS_NODE_LOST;
    }
    if (ei_rpc_to(&n->ec, n->fd, (char *)mod, (char *)fun, args->buff, args->index) < 0) {
        snprintf(err, err_size, "lost the connection to %s", n->name);
        return BS_NODE_LOST;
    }
    if (ei_x_new(tag) < 0 || ei_x_encode_atom(tag, "rex") < 0) {
        if (tag->buff)
            ei_x_free(tag);
        snprintf(err, err_size, "out of memory");
        return BS_NODE_FAILED;
    }
    return BS_NODE_OK;
}

bs_node_status bs_node_call(bs_node *n, const char *mod, const char *fun, const ei_x_buff *args,
                            unsigned timeout_ms, ei_x_buff *reply, int *index, char *err, size_t err_size)
{
    ei_x_buff rex;
    bs_node_status st = bs_node_send_call(n, mod, fun, args, &rex, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    char what[2 * MAXATOMLEN_UTF8 + 2];
    snprintf(what, sizeof what, "%s:%s", mod, fun);
    st = await_reply(n, &rex, timeout_ms, what, reply, index, err, err_size);
    ei_x_free(&rex);
    return st;
}

bs_node_status bs_node_send_request(bs_node *n, const ei_x_buff *to, const ei_x_buff *request, ei_x_buff *tag,
                                    char *err, size_t err_size)
{
    tag->buff = NULL;
    if (n->fd < 0) {
        snprintf(err, err_size, "not connected to %s", n->name);
        return BS_NODE_LOST;
    }
    erlang_pid dest;
    int di = 0;
    if (ei_decode_pid(to->buff, &di, &dest) < 0) {
        snprintf(err, err_size, "bad process to call on %s", n->name);
        return BS_NODE_FAILED;
    }
    ei_x_buff msg;
    if (ei_x_new(tag) < 0) {
        tag->buff = NULL;
        snprintf(err, err_size, "out of memory");
        return BS_NODE_FAILED;
    }
    if (ei_x_new_with_version(&msg) < 0) {
        ei_x_free(tag);
        snprintf(err, err_size, "out of memory");
        return BS_NODE_FAILED;
    }
    int rc = ei_x_encode_tuple_header(tag, 2) | ei_x_encode_atom(tag, "beamspy_cli") |
             ei_x_encode_ulonglong(tag, ++n->requests);
    rc |= ei_x_encode_tuple_header(&msg, 3) | ei_x_append_buf(&msg, tag->buff, tag->index) |
          ei_x_encode_pid(&msg, ei_self(&n->ec)) | ei_x_append_buf(&msg, request->buff, request->index);
    bs_node_status st = BS_NODE_OK;
    if (rc) {
        snprintf(err, err_size, "out of memory");
        st = BS_NODE_FAILED;
    } else if (ei_send(n->fd, &dest, msg.buff, msg.index) < 0) {
        snprintf(err, err_size, "lost the connection to %s", n->name);
        st = BS_NODE_LOST;
    }
    ei_x_free(&msg);
    if (st != BS_NODE_OK)
        ei_x_free(tag);
    return st;
}

bs_node_status bs_node_request(bs_node *n, const ei_x_buff *to, const ei_x_buff *request, unsigned timeout_ms,
                               ei_x_buff *reply, int *index, char *err, size_t err_size)
{
    ei_x_buff tag;
    bs_node_status st = bs_node_send_request(n, to, request, &tag, err, err_size);
    if (st != BS_NODE_OK)
        return st;
    st = await_reply(n, &tag, timeout_ms, "beamspy's job", reply, index, err, err_size);
    ei_x_free(&tag);
    return st;
}

void bs_node_close(bs_node *n)
{
    if (n->fd >= 0)
        ei_close_connection(n->fd);
    n->fd = -1;
}
