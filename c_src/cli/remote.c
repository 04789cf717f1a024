/* remote.c — connection options, attach/detach and calls for the commands
 * that work on running nodes (see remote.h). */
#include "remote.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../dist/call_args.h"
#include "cli.h"
#include "defaults.h"

void bs_remote_opts_init(bs_remote_opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_ms = BS_DEFAULT_CONNECT_TIMEOUT_MS;
}

int bs_parse_duration_ms(const char *text, unsigned long long *ms)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return -1;
    double v = strtod(text, &end);
    if (errno || end == text || v < 0)
        return -1;
    double scale;
    if (strcmp(end, "") == 0)
        return BS_DURATION_NO_UNIT;
    if (strcmp(end, "ms") == 0)
        scale = 1;
    else if (strcmp(end, "s") == 0)
        scale = 1e3;
    else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
        scale = 60e3;
    else if (strcmp(end, "h") == 0)
        scale = 3600e3;
    else
        return -1;
    double r = v * scale;
    if (r < 1 || r > 1e12)
        return -1;
    *ms = (unsigned long long)r;
    return 0;
}

int bs_cli_duration_option(const char *cmd, const char *opt, const char *arg, unsigned long long min_ms,
                           unsigned long long max_ms, const char *hint, unsigned long long *ms)
{
    unsigned long long v = 0;
    int rc = bs_parse_duration_ms(arg, &v);
    if (rc == BS_DURATION_NO_UNIT)
        return bs_cli_usage_error(cmd, "%s '%s' has no unit: write e.g. %ss or %sms", opt, arg, arg, arg);
    if (rc < 0 || v < min_ms || v > max_ms)
        return bs_cli_usage_error(cmd, "bad %s '%s' (%s)", opt, arg, hint);
    *ms = v;
    return 0;
}

long long bs_term_int(const bs_eterm *map, const char *key)
{
    int ok = 0;
    long long v = bs_eterm_int(bs_eterm_map_get(map, key), &ok);
    return ok ? v : 0;
}

const char *bs_term_text(const bs_eterm *map, const char *key)
{
    const char *t = bs_eterm_text(bs_eterm_map_get(map, key));
    return t ? t : "";
}

const char *bs_human_bytes(long long n, int compact, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)(n < 0 ? -n : n);
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (compact)
        snprintf(buf, size, u ? "%s%.1f%c" : "%s%.0f%c", n < 0 ? "-" : "", v, u ? units[u][0] : 'B');
    else
        snprintf(buf, size, u ? "%s%.1f %s" : "%s%.0f %s", n < 0 ? "-" : "", v, units[u]);
    return buf;
}

int bs_parse_count(const char *text, unsigned long long *v)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return -1;
    *v = strtoull(text, &end, 10);
    return (errno || *end) ? -1 : 0;
}

int bs_parse_bytes(const char *text, unsigned long long *bytes)
{
    char *end = NULL;
    errno = 0;
    if (!isdigit((unsigned char)text[0]))
        return -1;
    double v = strtod(text, &end);
    if (errno || end == text || v < 0)
        return -1;
    double scale = 1;
    if (*end == 'K' || *end == 'k')
        scale = 1024.0, end++;
    else if (*end == 'M')
        scale = 1024.0 * 1024, end++;
    else if (*end == 'G')
        scale = 1024.0 * 1024 * 1024, end++;
    if (*end == 'i' && scale > 1)
        end++;
    if (*end == 'B')
        end++;
    if (*end)
        return -1;
    double r = v * scale;
    if (r < 1 || r > 1e15)
        return -1;
    *bytes = (unsigned long long)r;
    return 0;
}

int bs_remote_option(const char *cmd, int code, const char *arg, bs_remote_opts *o, int max_nodes)
{
    unsigned long long ms;
    switch (code) {
    case BS_OPT_NODE:
        if (o->n_nodes >= max_nodes)
            return max_nodes == 1 ? bs_cli_usage_error(cmd, "one --node only")
                                  : bs_cli_usage_error(cmd, "at most %d nodes", max_nodes);
        o->nodes[o->n_nodes++] = arg;
        return 0;
    case BS_OPT_CLUSTER:
        if (o->n_seeds >= BS_REMOTE_MAX_SEEDS)
            return bs_cli_usage_error(cmd, "at most %d --cluster", BS_REMOTE_MAX_SEEDS);
        o->seeds[o->n_seeds++] = arg;
        return 0;
    case BS_OPT_EXCLUDE_NODE:
        if (o->n_excluded >= BS_REMOTE_MAX_EXCLUDED)
            return bs_cli_usage_error(cmd, "at most %d --exclude-node", BS_REMOTE_MAX_EXCLUDED);
        o->excluded[o->n_excluded++] = arg;
        return 0;
    case BS_OPT_COOKIE:
        o->cookie = arg;
        return 0;
    case BS_OPT_COOKIE_FILE:
        o->cookie_file = arg;
        return 0;
    case BS_OPT_CONNECT_TIMEOUT:
        if (bs_cli_duration_option(cmd, "--connect-timeout", arg, 1, 3600000, "e.g. 500ms, 10s", &ms))
            return BS_EXIT_USAGE;
        o->timeout_ms = (unsigned)ms;
        return 0;
    case BS_OPT_KEEP:
        o->keep = 1;
        return 0;
    default:
        return -1;
    }
}

void bs_remote_options_usage(FILE *out, int several_nodes)
{
    fputs(several_nodes ? "  --node NAME         the node: name@host (long names when host has a dot),\n"
                          "                      or a bare name on this host; repeat for several nodes\n"
                        : "  --node NAME         the node: name@host (long names when host has a dot),\n"
                          "                      or a bare name on this host\n",
 out);
    fputs("  --cluster NODE      NODE and every node it is connected to (its nodes(visible):\n"
          "                      hidden nodes such as remote shells are not in it), said\n"
          "                      on stderr first; a bare name means this host; repeatable\n"
          "  --exclude-node NAME leave node NAME out (repeatable)\n",
          out);
    fputs("  --cookie COOKIE     the node's cookie (visible in ps: prefer --cookie-file)\n"
          "  --cookie-file FILE  read the cookie from FILE (default ~/.erlang.cookie)\n"
          "  --connect-timeout T give up connecting or waiting for an answer after T\n"
          "                      (default 10s)\n"
          "  --keep              leave beamspy's modules loaded on the node afterwards\n"
          "                      (by default what beamspy loaded there is removed)\n",
          out);
}

int bs_remote_exit_code(bs_node_status st)
{
    switch (st) {
    case BS_NODE_OK:
        return BS_EXIT_OK;
    case BS_NODE_NOT_FOUND:
        return BS_EXIT_NODE_NOT_FOUND;
    case BS_NODE_REFUSED:
        return BS_EXIT_NODE_REFUSED;
    case BS_NODE_COOKIE:
        return BS_EXIT_COOKIE_REJECTED;
    case BS_NODE_INCOMPATIBLE:
        return BS_EXIT_NODE_INCOMPATIBLE;
    case BS_NODE_TIMEOUT:
        return BS_EXIT_TIMEOUT;
    case BS_NODE_LOST:
        return BS_EXIT_CONNECTION_LOST;
    default:
        return BS_EXIT_FAILURE;
    }
}

int bs_remote_attach(const bs_remote_opts *o, int i, bs_remote *r)
{
    char cookie[EI_MAX_COOKIE_SIZE + 2], origin[4200], err[1024];
    memset(r, 0, sizeof *r);
    r->node.fd = -1;
    r->timeout_ms = o->timeout_ms;
    r->keep = o->keep;
    if (bs_cookie_resolve(o->cookie, o->cookie_file, cookie, sizeof cookie, origin, sizeof origin, err,
                          sizeof err) < 0) {
        bs_cli_error("%s", err);
        return BS_EXIT_FAILURE;
    }
    bs_node_status st = bs_node_connect(&r->node, o->nodes[i], cookie, origin, o->timeout_ms, err, sizeof err);
    memset(cookie, 0, sizeof cookie);
    if (st == BS_NODE_OK)
        st = bs_deliver_code(&r->node, &r->delivery, o->timeout_ms, err, sizeof err);
    if (st != BS_NODE_OK) {
        bs_cli_error("%s", err);
        bs_node_close(&r->node);
        return st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
    }
    return BS_EXIT_OK;
}

void bs_remote_detach(bs_remote *r)
{
    char err[512];
    int deferred = 0;
    if (r->node.fd >= 0 && !r->keep) {
        bs_node_status st = bs_remove_code(&r->node, &r->delivery, r->timeout_ms, &deferred, err, sizeof err);
        if (st != BS_NODE_OK)
            bs_cli_error("warning: %s", err);
        else if (deferred)
            fprintf(stderr, "beamspy: another beamspy job still runs on %s (a recording, capture or tool started "
                    "there too): beamspy's code stays until the last one ends, which removes it\n", r->node.name);
    }
    bs_node_close(&r->node);
}

void bs_remote_choose_names(bs_remote *r, int *elixir)
{
    if (*elixir >= 0)
        return;
    *elixir = 0;
    ei_x_buff args;
    bs_eterm_tree *t = NULL;
    if (bs_call_args(&args, "") < 0)
        return;
    if (bs_remote_call(r, "beamspy_agent", "runs_elixir", &args, r->timeout_ms, &t) == BS_EXIT_OK &&
        bs_eterm_is_atom(bs_eterm_root(t), "true")) {
        *elixir = 1;
        fprintf(stderr, "beamspy: %s runs Elixir: names spelled as Elixir does (--erlang for Erlang's)\n",
                r->node.name);
    }
    bs_eterm_free(t);
}

static int decode_reply(bs_remote *r, bs_node_status st, ei_x_buff *reply, int index, const char *why,
                        bs_eterm_tree **out)
{
    char err[1024];
    if (st != BS_NODE_OK) {
        bs_cli_error("%s", why);
        return bs_remote_exit_code(st);
    }
    int rc = bs_eterm_decode(reply->buff, reply->index, &index, out, err, sizeof err);
    ei_x_free(reply);
    if (rc < 0) {
        bs_cli_error("unreadable answer from %s: %s", r->node.name, err);
        return BS_EXIT_FAILURE;
    }
    return BS_EXIT_OK;
}

int bs_remote_request(bs_remote *r, const ei_x_buff *to, const ei_x_buff *request, unsigned timeout_ms,
                      bs_eterm_tree **out)
{
    ei_x_buff reply;
    int index = 0;
    char err[1024];
    bs_node_status st = bs_node_request(&r->node, to, request, timeout_ms, &reply, &index, err, sizeof err);
    return decode_reply(r, st, &reply, index, err, out);
}

int bs_remote_call(bs_remote *r, const char *mod, const char *fun, ei_x_buff *args, unsigned timeout_ms,
                   bs_eterm_tree **out)
{
    ei_x_buff reply;
    int index = 0;
    char err[1024];
    bs_node_status st = bs_node_call(&r->node, mod, fun, args, timeout_ms, &reply, &index, err, sizeof err);
    ei_x_free(args);
    return decode_reply(r, st, &reply, index, err, out);
}
