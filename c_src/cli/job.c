/* job.c — starting, polling and finishing beamspy_agent jobs on a node
 * (see job.h). */
#define _GNU_SOURCE /* fmemopen */
#include "job.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dist/call_args.h"
#include "../engine/filter.h"
#include "../readers/readers.h"
#include "function_arg.h"
#include "cli.h"
#include "stop_signals.h"
#include "term_frame.h"

/* A recording is stopped by the node itself this long after the planned
 * end, should the tool be held up (the lease usually ends it sooner). */
#define SAFETY_MARGIN_MS 30000ULL

int bs_job_option(const char *cmd, int code, const char *arg, bs_job_spec *s, bs_render_opts *render)
{
    unsigned long long v;
    switch (code) {
    case BS_OPT_DURATION:
        if (bs_cli_duration_option(cmd, "--duration", arg, 1, 1000000000000ULL, "e.g. 500ms, 10s, 2m", &s->duration_ms))
            return BS_EXIT_USAGE;
        return 0;
    case BS_OPT_MAX_EVENTS:
        if (bs_parse_count(arg, &s->max_events) < 0 || s->max_events == 0)
            return bs_cli_usage_error(cmd, "bad --max-events '%s'", arg);
        return 0;
    case BS_OPT_MAX_MEMORY:
        if (bs_parse_bytes(arg, &s->max_memory) < 0)
            return bs_cli_usage_error(cmd, "bad --max-memory '%s' (e.g. 64M, 1G)", arg);
        return 0;
    case BS_OPT_MAX_PROCESSES:
        if (bs_parse_count(arg, &s->max_processes) < 0 || s->max_processes == 0)
            return bs_cli_usage_error(cmd, "bad --max-processes '%s'", arg);
        return 0;
    case BS_OPT_GC:
        s->gc = 1;
        return 0;
    case BS_OPT_NO_SLEEP:
        s->no_sleep = 1;
        return 0;
    case BS_OPT_SHOW_IDLE:
        s->show_idle = 1;
        return 0;
    case BS_OPT_HZ:
        if (bs_parse_count(arg, &v) < 0 || v < 1 || v > 10000)
            return bs_cli_usage_error(cmd, "bad --hz '%s' (samples a second, 1 to 10000)", arg);
        s->cpu_hz = (unsigned)v;
        return 0;
    case BS_OPT_NO_COMPENSATE:
        s->no_compensate = 1;
        return 0;
    case BS_OPT_TIMES:
        if (strcmp(arg, "compensated") != 0 && strcmp(arg, "samples") != 0 && strcmp(arg, "raw") != 0)
            return bs_cli_usage_error(cmd, "bad --times '%s' (compensated, samples or raw)", arg);
        s->times = arg;
        return 0;
    case BS_OPT_TIMELINE:
        if (bs_parse_count(arg, &v) < 0 || v > 100000000)
            return bs_cli_usage_error(cmd, "bad --timeline '%s' (0 to 100000000 calls)", arg);
        s->timeline = (long long)v;
        return 0;
    case BS_OPT_ELIXIR:
        s->elixir = 1;
        return 0;
    case BS_OPT_ERLANG:
        s->elixir = 0;
        return 0;
    case BS_OPT_FLAMECHART:
        render->flamechart = 1;
        return 0;
    case BS_OPT_PALETTE:
        return bs_cli_palette_option(cmd, arg, render);
    case BS_OPT_STRICT:
        s->strict = 1;
        return 0;
    default:
        return -1;
    }
}

int bs_job_function_option(const char *cmd, int code, const char *arg, bs_job_spec *s)
{
    unsigned long long v;
    char why[200];
    switch (code) {
    case BS_OPT_FUNCTION:
        if (s->target_kind != BS_TARGET_NONE && s->target_kind != BS_TARGET_FUNCTION)
            return bs_cli_usage_error(cmd, "--function cannot be combined with the other target given");
        if (bs_job_parse_mfa(arg, s, why, sizeof why) < 0)
            return bs_cli_usage_error(cmd, "bad --function '%s': %s", arg, why);
        s->target_kind = BS_TARGET_FUNCTION;
        return 0;
    case BS_OPT_CALLS:
        if (bs_parse_count(arg, &v) < 0 || v == 0 || v > 100000)
            return bs_cli_usage_error(cmd, "bad --calls '%s' (1 to 100000)", arg);
        s->calls = (unsigned)v;
        return 0;
    case BS_OPT_LEASE:
        if (bs_cli_duration_option(cmd, "--lease", arg, 1000, 600000, "1s to 10m", &v))
            return BS_EXIT_USAGE;
        s->lease_ms = (unsigned)v;
        return 0;
    default:
        return -1;
    }
}

void bs_job_options_usage(FILE *out)
{
    fputs("  --duration T        stop recording after T: 500ms, 10s, 2m\n"
          "  --hz N              mode cpu, --times samples: samples a second of each\n"
          "                      busy scheduler thread (default 199)\n"
          "  --gc                trace: charge garbage collection to a GC frame\n"
          "  --no-sleep          trace: leave out time spent scheduled out (WAIT, RUNNABLE)\n"
          "  --show-idle         whole-VM views (--all, run): keep the time processes\n"
          "                      spent waiting for a message (WAIT), left out by default\n"
          "  --no-compensate     trace: raw traced times (by default the tracer's own\n"
          "                      cost per event, calibrated on the node, is subtracted)\n"
          "  --times T           trace: self times compensated (default), samples (from\n"
          "                      CPU samples taken beside the trace, at --hz; the node\n"
          "                      must run with +JPperf true; no calibration) or raw\n"
          "  --timeline N        trace: calls kept in time order for flame charts,\n"
          "                      Chrome trace and speedscope (default 1000000; shared\n"
          "                      by the nodes of a cluster; 0: none)\n"
          "  --max-events N      trace: stop after N events (default: no limit)\n"
          "  --max-memory SIZE   trace: memory the recording may use on the node\n"
          "                      (default 256M); what protects the node\n"
          "  --max-processes N   trace: processes recorded at most (default 10000)\n"
          "  --elixir, --erlang  names spelled Mod.fun/2 or mod:fun/2 (default: Elixir's\n"
          "                      for an Elixir node or command: mix, elixir, iex)\n"
          "  --flamechart        SVG: x is time (needs the timeline)\n"
          "  --palette hot|beam  SVG and HTML colours\n"
          "  --strict            exit with code 10 when a limit ended the recording\n"
          "                      early (the outputs are written all the same; without\n"
          "                      --strict the exit code is 0 and stderr says which\n"
          "                      limit, when, and the option that raises it); record\n"
          "                      with several nodes: a node left out is a failure\n"
          "                      (its own exit code, not 11)\n",
          out);
}

void bs_job_spec_init(bs_job_spec *s)
{
    memset(s, 0, sizeof *s);
    s->timeline = -1;
    s->calls = 1;
    s->elixir = -1;
}

void bs_job_spec_free(bs_job_spec *s)
{
    (void)s; /* targets point into argv */
}

int bs_job_add_target(bs_job_spec *s, const char *target)
{
    if (s->n_targets >= BS_JOB_MAX_TARGETS)
        return -1;
    s->targets[s->n_targets++] = target;
    return 0;
}

int bs_job_parse_mfa(const char *text, bs_job_spec *s, char *why, size_t why_cap)
{
    bs_function_arg f;
    if (bs_function_arg_parse(text, &f, why, why_cap) < 0)
        return -1;
    memcpy(s->module, f.module, sizeof s->module);
    memcpy(s->function, f.function, sizeof s->function);
    s->arity = f.arity;
    return 0;
}

/* Map entries are encoded into body, counted in *n. */
static int put_atom(ei_x_buff *body, int *n, const char *key, const char *value)
{
    (*n)++;
    return ei_x_encode_atom(body, key) | ei_x_encode_atom(body, value);
}

static int put_int(ei_x_buff *body, int *n, const char *key, long long value)
{
    (*n)++;
    return ei_x_encode_atom(body, key) | ei_x_encode_longlong(body, value);
}

static int put_bool(ei_x_buff *body, int *n, const char *key, int value)
{
    return put_atom(body, n, key, value ? "true" : "false");
}

static int put_targets(ei_x_buff *body, int *n, const bs_job_spec *s)
{
    (*n)++;
    int rc = ei_x_encode_atom(body, "targets");
    if (s->target_kind == BS_TARGET_ALL)
        return rc | ei_x_encode_atom(body, "all");
    if (s->n_targets)
        rc |= ei_x_encode_list_header(body, s->n_targets);
    for (int i = 0; i < s->n_targets; i++)
        rc |= ei_x_encode_string(body, s->targets[i]);
    return rc | ei_x_encode_empty_list(body);
}

static const char *kind_name(const bs_job_spec *s)
{
    if (s->top)
        return "top";
    if (s->seq)
        return "seq";
    if (s->target_kind == BS_TARGET_FUNCTION)
        return "capture";
    return s->sample ? "sample" : "record";
}

/* The options map of beamspy_agent:start/3 for this spec. */
static int encode_options(const bs_job_spec *s, const bs_delivery *d, ei_x_buff *out)
{
    ei_x_buff body;
    int n = 0, rc = 0;
    if (ei_x_new(&body) < 0)
        return -1;
    if (s->lease_ms)
        rc |= put_int(&body, &n, "lease_ms", s->lease_ms);
    n++;
    rc |= ei_x_encode_atom(&body, "unload") | bs_delivery_encode_modules(d, &body);
    unsigned long long safety = s->duration_ms + SAFETY_MARGIN_MS;
    const char *kind = kind_name(s);
    if (strcmp(kind, "seq") == 0) {
        n++;
        rc |= ei_x_encode_atom(&body, "mfa") | ei_x_encode_tuple_header(&body, 3) |
              ei_x_encode_atom(&body, s->module) | ei_x_encode_atom(&body, s->function) |
              ei_x_encode_long(&body, s->arity);
        rc |= put_int(&body, &n, "calls", s->calls);
        rc |= put_int(&body, &n, "label", s->seq_label);
        if (s->max_events)
            rc |= put_int(&body, &n, "max_events", (long long)s->max_events);
    } else if (strcmp(kind, "top") == 0) {
        if (s->interval_ms)
            rc |= put_int(&body, &n, "interval_ms", s->interval_ms);
        if (s->limit)
            rc |= put_int(&body, &n, "limit", s->limit);
        rc |= put_bool(&body, &n, "cpu", !s->no_cpu);
        if (s->cpu_hz)
            rc |= put_int(&body, &n, "cpu_hz", s->cpu_hz);
    } else if (strcmp(kind, "sample") == 0) {
        rc |= put_targets(&body, &n, s);
        if (s->interval_ms)
            rc |= put_int(&body, &n, "interval_ms", s->interval_ms);
        rc |= put_int(&body, &n, "max_duration_ms", (long long)safety);
    } else {
        if (strcmp(kind, "capture") == 0) {
            n++;
            rc |= ei_x_encode_atom(&body, "mfa") | ei_x_encode_tuple_header(&body, 3) |
                  ei_x_encode_atom(&body, s->module) | ei_x_encode_atom(&body, s->function) |
                  ei_x_encode_long(&body, s->arity);
            rc |= put_int(&body, &n, "calls", s->calls);
            rc |= put_int(&body, &n, "timeout", (long long)s->duration_ms);
            rc |= put_int(&body, &n, "max_duration", (long long)safety);
        } else {
            rc |= put_targets(&body, &n, s);
            rc |= put_int(&body, &n, "max_duration", (long long)safety);
            if (s->cpu) {
                rc |= put_atom(&body, &n, "mode", "cpu");
                rc |= put_int(&body, &n, "cpu_hz", s->cpu_hz ? s->cpu_hz : BS_CPU_DEFAULT_HZ);
            }
        }
        /* No event limit unless asked for: a whole recording is what people
         * expect, and max_memory is what protects the node. */
        if (s->max_events)
            rc |= put_int(&body, &n, "max_events", (long long)s->max_events);
        else
            rc |= put_atom(&body, &n, "max_events", "infinity");
        if (s->max_memory)
            rc |= put_int(&body, &n, "max_memory", (long long)s->max_memory);
        if (s->max_processes)
            rc |= put_int(&body, &n, "max_processes", (long long)s->max_processes);
        rc |= put_bool(&body, &n, "children", s->children);
        rc |= put_bool(&body, &n, "gc", s->gc);
        rc |= put_bool(&body, &n, "sleep", !s->no_sleep);
        rc |= put_bool(&body, &n, "compensate", !s->no_compensate);
        if (s->times && !s->cpu) {
            rc |= put_atom(&body, &n, "times", s->times);
            if (strcmp(s->times, "samples") == 0)
                rc |= put_int(&body, &n, "cpu_hz", s->cpu_hz ? s->cpu_hz : BS_CPU_DEFAULT_HZ);
        }
        rc |= put_atom(&body, &n, "names", s->elixir > 0 ? "elixir" : "erlang");
        if (s->timeline == 0)
            rc |= put_atom(&body, &n, "timeline", "false");
        else if (s->timeline > 0)
            rc |= put_int(&body, &n, "timeline", s->timeline);
    }
    if (rc == 0 && ei_x_new(out) == 0) {
        rc = ei_x_encode_map_header(out, n) | ei_x_append_buf(out, body.buff, body.index);
        if (rc)
            ei_x_free(out);
    } else {
        rc = -1;
    }
    ei_x_free(&body);
    return rc ? -1 : 0;
}

/* "beamspy: app@host: <what the node said>" for an {error, Reason}: in
 * words for a --function the node refused, else the term. */
static void report_error(const bs_job *j, const char *doing, const bs_eterm *reason)
{
    char text[700];
    bs_function_arg f;
    memcpy(f.module, j->spec->module, sizeof f.module);
    memcpy(f.function, j->spec->function, sizeof f.function);
    f.arity = j->spec->arity;
    if (j->spec->target_kind == BS_TARGET_FUNCTION &&
        bs_function_arg_refusal(text, sizeof text, &f, j->remote->node.name, reason) == 0) {
        bs_cli_error("%s", text);
        return;
    }
    bs_eterm_format(text, sizeof text, reason);
    bs_cli_error("%s: %s failed: %s", j->remote->node.name, doing, text);
}

/* Sends the request or call of the half-done exchange: j->tag set. */
static int sent(bs_job *j, bs_node_status st, const char *err)
{
    if (st != BS_NODE_OK) {
        bs_cli_error("%s", err);
        return st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
    }
    j->awaiting = 1;
    return BS_EXIT_OK;
}

static int send_request(bs_job *j, const char *what)
{
    ei_x_buff request;
    char err[1024];
    if (ei_x_new(&request) < 0)
        return BS_EXIT_FAILURE;
    if (ei_x_encode_atom(&request, what) < 0) {
        ei_x_free(&request);
        return BS_EXIT_FAILURE;
    }
    bs_node_status st = bs_node_send_request(&j->remote->node, &j->pid, &request, &j->tag, err, sizeof err);
    ei_x_free(&request);
    return sent(j, st, err);
}

int bs_job_renew_send(bs_job *j)
{
    ei_x_buff request, tag;
    char err[1024];
    if (ei_x_new(&request) < 0)
        return BS_EXIT_FAILURE;
    if (ei_x_encode_atom(&request, "renew") < 0) {
        ei_x_free(&request);
        return BS_EXIT_FAILURE;
    }
    bs_node_status st = bs_node_send_request(&j->remote->node, &j->pid, &request, &tag, err, sizeof err);
    ei_x_free(&request);
    if (st == BS_NODE_OK) {
        ei_x_free(&tag); /* no reply comes */
        return BS_EXIT_OK;
    }
    bs_cli_error("%s", err);
    return st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
}

void bs_job_forget_request(bs_job *j)
{
    if (j->awaiting && j->tag.buff)
        ei_x_free(&j->tag);
    j->awaiting = 0;
}

int bs_job_take_reply(bs_job *j, ei_x_buff *reply, int index, bs_eterm_tree **out)
{
    char err[1024];
    bs_job_forget_request(j);
    int rc = bs_eterm_decode(reply->buff, reply->index, &index, out, err, sizeof err);
    ei_x_free(reply);
    if (rc < 0) {
        bs_cli_error("unreadable answer from %s: %s", j->remote->node.name, err);
        return BS_EXIT_FAILURE;
    }
    return BS_EXIT_OK;
}

int bs_job_await(bs_job *j, unsigned timeout_ms, bs_eterm_tree **out)
{
    char err[1024];
    long long deadline = bs_now_ms() + timeout_ms;
    *out = NULL;
    for (;;) {
        long long left = deadline - bs_now_ms();
        if (left <= 0) {
            bs_cli_error("beamspy's job on %s did not answer within %u ms", j->remote->node.name, timeout_ms);
            bs_job_forget_request(j);
            return BS_EXIT_TIMEOUT;
        }
        ei_x_buff reply;
        int got = 0, index = 0;
        bs_node_status st = bs_node_receive_reply(&j->remote->node, &j->tag, (unsigned)left, &got, &reply, &index,
                                                  err, sizeof err);
        if (st != BS_NODE_OK) {
            bs_cli_error("%s", err);
            bs_job_forget_request(j);
            return st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
        }
        if (got)
            return bs_job_take_reply(j, &reply, index, out);
    }
}

int bs_job_start_send(bs_job *j, bs_remote *r, const bs_job_spec *s)
{
    memset(j, 0, sizeof *j);
    j->spec = s;
    j->remote = r;
    j->progress.limit_permille = -1;
    ei_x_buff opts, args;
    char err[1024];
    if (encode_options(s, &r->delivery, &opts) < 0) {
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    int rc = bs_call_args(&args, "apt", kind_name(s), ei_self(&r->node.ec), &opts);
    ei_x_free(&opts);
    if (rc < 0) {
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    bs_node_status st = bs_node_send_call(&r->node, "beamspy_agent", "start", &args, &j->tag, err, sizeof err);
    ei_x_free(&args);
    return sent(j, st, err);
}

unsigned bs_job_start_timeout_ms(const bs_job *j)
{
    return j->remote->timeout_ms + 60000;
}

int bs_job_start_take(bs_job *j, bs_eterm_tree *t)
{
    const bs_eterm *root = bs_eterm_root(t);
    const bs_eterm *pid = bs_eterm_tagged(root, "ok");
    if (!pid || bs_eterm_kind_of(pid) != BS_ET_PID) {
        const bs_eterm *why = bs_eterm_tagged(root, "error");
        report_error(j, "starting the recording", why ? why : root);
        bs_eterm_free(t);
        return BS_EXIT_FAILURE;
    }
    const bs_eterm_pid *p = bs_eterm_pid_of(pid);
    erlang_pid ep;
    memset(&ep, 0, sizeof ep);
    snprintf(ep.node, sizeof ep.node, "%s", p->node);
    ep.num = p->number;
    ep.serial = p->serial;
    ep.creation = p->creation;
    int rc = ei_x_new(&j->pid) | ei_x_encode_pid(&j->pid, &ep);
    bs_eterm_free(t);
    if (rc) {
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    j->started = 1;
    return BS_EXIT_OK;
}

/* Whether t is {busy, {unloading, _}} (a job start refused while
 * beamspy's code is being removed) or {undef, [{beamspy..., _, _, _} | _]}
 * (a call of beamspy's code once deleted). */
static int code_gone_term(const bs_eterm *t)
{
    const bs_eterm *busy = bs_eterm_tagged(t, "busy");
    if (busy && bs_eterm_tagged(busy, "unloading"))
        return 1;
    const bs_eterm *stack = bs_eterm_tagged(t, "undef");
    const bs_eterm *top = bs_eterm_kind_of(stack) == BS_ET_LIST ? bs_eterm_item(stack, 0) : NULL;
    const bs_eterm *mod = bs_eterm_kind_of(top) == BS_ET_TUPLE ? bs_eterm_item(top, 0) : NULL;
    return bs_eterm_kind_of(mod) == BS_ET_ATOM && strncmp(bs_eterm_text(mod), "beamspy", 7) == 0;
}

/* Whether a start's answer says beamspy's code went away: one of the
 * shapes of code_gone_term, wrapped as each job kind wraps its failures
 * ({error, {job_failed, _}}, {error, {sampler_failed, _}}, {badrpc,
 * {'EXIT', _}}, ...): the answer's 2-tuples are looked into, breadth
 * first, at most 64 of them, without recursion. */
static int code_went_away(const bs_eterm *root)
{
    const bs_eterm *queue[64];
    size_t head = 0, tail = 0;
    queue[tail++] = root;
    while (head < tail) {
        const bs_eterm *t = queue[head++];
        if (code_gone_term(t))
            return 1;
        for (size_t k = 0; k < 2 && bs_eterm_kind_of(t) == BS_ET_TUPLE && bs_eterm_size(t) == 2; k++)
            if (tail < sizeof queue / sizeof queue[0])
                queue[tail++] = bs_eterm_item(t, k);
    }
    return 0;
}

int bs_job_start_again(bs_job *j, const bs_eterm_tree *t, int *rc)
{
    if (j->starts_again >= BS_JOB_STARTS_AGAIN || !code_went_away(bs_eterm_root(t)))
        return 0;
    char err[1024];
    bs_remote *r = j->remote;
    bs_cli_error("%s: beamspy's code was being removed there (the job of a tool that went away ended) as this "
                "tool attached: delivering it again", r->node.name);
    bs_node_status st = bs_redeliver_code(&r->node, &r->delivery, r->timeout_ms, err, sizeof err);
    if (st != BS_NODE_OK) {
        bs_cli_error("%s", err);
        *rc = st == BS_NODE_FAILED ? BS_EXIT_FAILURE : bs_remote_exit_code(st);
        return 1;
    }
    int again = j->starts_again + 1;
    *rc = bs_job_start_send(j, r, j->spec);
    j->starts_again = again;
    return 1;
}

int bs_job_start(bs_job *j, bs_remote *r, const bs_job_spec *s)
{
    bs_eterm_tree *t = NULL;
    int rc = bs_job_start_send(j, r, s);
    while (rc == BS_EXIT_OK) {
        rc = bs_job_await(j, bs_job_start_timeout_ms(j), &t);
        if (rc != BS_EXIT_OK)
            break;
        if (!bs_job_start_again(j, t, &rc))
            return bs_job_start_take(j, t);
        bs_eterm_free(t);
        t = NULL;
    }
    return rc;
}

static unsigned long long map_uint(const bs_eterm *map, const char *key)
{
    long long v = bs_term_int(map, key);
    return v > 0 ? (unsigned long long)v : 0;
}

int bs_job_poll_send(bs_job *j)
{
    return send_request(j, "poll");
}

int bs_job_poll(bs_job *j)
{
    bs_eterm_tree *t = NULL;
    int rc = bs_job_poll_send(j);
    if (rc == BS_EXIT_OK)
        rc = bs_job_await(j, j->remote->timeout_ms, &t);
    return rc == BS_EXIT_OK ? bs_job_poll_take(j, t) : rc;
}

int bs_job_poll_take(bs_job *j, bs_eterm_tree *t)
{
    bs_eterm_free(j->last_poll);
    j->last_poll = t;
    const bs_eterm *p = bs_eterm_tagged(bs_eterm_root(j->last_poll), "ok");
    if (!p || bs_eterm_kind_of(p) != BS_ET_MAP) {
        report_error(j, "following the recording", bs_eterm_root(j->last_poll));
        return BS_EXIT_FAILURE;
    }
    bs_job_progress *g = &j->progress;
    g->events = map_uint(p, "events");
    g->memory = map_uint(p, "memory");
    g->samples = map_uint(p, "samples");
    g->processes = map_uint(p, "processes");
    g->elapsed_ms = map_uint(p, "elapsed_ms");
    g->calls = map_uint(p, "calls");
    const bs_eterm *limit = bs_eterm_map_get(p, "nearest_limit");
    if (limit && bs_eterm_kind_of(limit) == BS_ET_TUPLE && bs_eterm_size(limit) == 2) {
        int ok = 0;
        long long permille = bs_eterm_int(bs_eterm_item(limit, 1), &ok);
        const char *name = bs_eterm_text(bs_eterm_item(limit, 0));
        if (name && ok) {
            snprintf(g->limit_name, sizeof g->limit_name, "%s", name);
            g->limit_permille = (int)permille;
        }
    }
    const bs_eterm *state = bs_eterm_map_get(p, "state");
    if (state && bs_eterm_is_atom(state, "done")) {
        j->done = 1;
        const char *why = bs_eterm_text(bs_eterm_map_get(p, "stopped"));
        snprintf(g->stopped, sizeof g->stopped, "%s", why && strcmp(why, "false") != 0 ? why : "");
    }
    return BS_EXIT_OK;
}

/* Reads the bytes of a .bspy or folded result into out. */
/* The folded text of term_to_binary([{Root, [Frame], Count}]) in the job's
 * spelling, into a new buffer *text (free it). Returns 0, or -1 said. */
static int spell_stacks(const bs_job *j, const void *data, size_t len, char **text, size_t *text_len)
{
    bs_eterm_tree *t = NULL;
    int index = 0;
    char err[200];
    if (len > (size_t)INT_MAX ||
        bs_eterm_decode_versioned(data, (int)len, &index, &t, err, sizeof err) < 0) {
        bs_cli_error("%s: the samples came back unreadable: %s", j->remote->node.name,
                     len > (size_t)INT_MAX ? "too large" : err);
        return -1;
    }
    FILE *out = open_memstream(text, text_len);
    int rc = out ? bs_term_stacks_folded(out, bs_eterm_root(t), j->spec->elixir > 0 ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG,
                                         err, sizeof err)
                 : (snprintf(err, sizeof err, "out of memory"), -1);
    if (out && fclose(out) != 0 && rc == 0)
        rc = (snprintf(err, sizeof err, "out of memory"), -1);
    bs_eterm_free(t);
    if (rc < 0) {
        bs_cli_error("%s: the samples came back unreadable: %s", j->remote->node.name, err);
        if (out) {
            free(*text);
            *text = NULL;
        }
    }
    return rc;
}

static int read_result(const bs_job *j, const char *format, const void *data, size_t len, bs_profile *out)
{
    if (len == 0) {
        bs_cli_error("%s: nothing was recorded", j->remote->node.name);
        return BS_EXIT_FAILURE;
    }
    char *folded = NULL;
    if (strcmp(format, "stacks") == 0) { /* a sampler's raw stacks: spelled here */
        size_t folded_len = 0;
        if (spell_stacks(j, data, len, &folded, &folded_len) < 0)
            return BS_EXIT_FAILURE;
        data = folded;
        len = folded_len;
    }
    FILE *in = len ? fmemopen((void *)data, len, "rb") : NULL;
    if (!in) {
        bs_cli_error(len ? "out of memory" : "%s: nothing was recorded", j->remote->node.name);
        free(folded);
        return BS_EXIT_FAILURE;
    }
    bs_read_error err;
    memset(&err, 0, sizeof err);
    int rc = strcmp(format, "bspy") == 0 ? bs_read_bspy(in, j->remote->node.name, out, &err)
                                         : bs_read_folded(in, j->remote->node.name, out, &err);
    fclose(in);
    free(folded);
    if (rc != 0) {
        bs_cli_error("%s: the recording came back unreadable: %s", j->remote->node.name, err.msg);
        return BS_EXIT_FAILURE;
    }
    if (!out->meta.node[0]) {
        size_t n = strnlen(j->remote->node.name, sizeof out->meta.node - 1);
        memcpy(out->meta.node, j->remote->node.name, n);
        out->meta.node[n] = '\0';
    }
    return BS_EXIT_OK;
}

/* From the result map: truncated, stopped_after_ms, events, memory, limit. */
static void note_early_stop(bs_early_stop *e, const bs_eterm *result)
{
    memset(e, 0, sizeof *e);
    const char *why = bs_eterm_text(bs_eterm_map_get(result, "truncated"));
    if (!why || strcmp(why, "false") == 0)
        return;
    snprintf(e->limit, sizeof e->limit, "%s", why);
    e->have_figures = bs_eterm_map_get(result, "events") != NULL;
    e->after_ms = map_uint(result, "stopped_after_ms");
    e->events = map_uint(result, "events");
    e->memory = map_uint(result, "memory");
    e->limit_value = map_uint(result, "limit");
}

/* What the sampler saw (its `counts'), on standard error: which samples
 * found their process running, and how many of those could not be placed
 * (short runs that reached a receive, stacks read late or cut). */
static void say_samples(const bs_job *j, const bs_eterm *result)
{
    const bs_eterm *c = bs_eterm_map_get(result, "counts");
    if (!c || bs_eterm_kind_of(c) != BS_ET_MAP)
        return;
    const char *method = bs_eterm_text(bs_eterm_map_get(result, "method"));
    fprintf(stderr,
            "beamspy: %s: %llu samples: %llu running (%llu preempted, %llu ran to a receive, %llu read late), "
            "%llu not running, %llu unresolved; %llu stacks truncated%s\n",
            j->remote->node.name, map_uint(result, "samples"), map_uint(c, "running"), map_uint(c, "preempted"),
            map_uint(c, "ran_to_receive"), map_uint(c, "late"), map_uint(c, "waiting"), map_uint(c, "unresolved"),
            map_uint(c, "truncated"),
            method && strcmp(method, "process_info") == 0
                ? "; run states unavailable (a target already traced?): running processes were asked "
                  "blindly and answer from their next receive"
                : "");
}

int bs_job_finish_send(bs_job *j)
{
    return send_request(j, "finish");
}

int bs_job_finish(bs_job *j, unsigned timeout_ms, bs_profile *out)
{
    bs_eterm_tree *t = NULL;
    int rc = bs_job_finish_send(j);
    if (rc == BS_EXIT_OK)
        rc = bs_job_await(j, timeout_ms, &t);
    j->started = 0;
    return rc == BS_EXIT_OK ? bs_job_finish_take(j, t, out) : rc;
}

int bs_job_finish_take(bs_job *j, bs_eterm_tree *t, bs_profile *out)
{
    int rc;
    j->started = 0;
    const bs_eterm *root = bs_eterm_root(t);
    const bs_eterm *r = bs_eterm_tagged(root, "ok");
    const char *format = r ? bs_eterm_text(bs_eterm_map_get(r, "format")) : NULL;
    const bs_eterm *data = r ? bs_eterm_map_get(r, "data") : NULL;
    if (!format || !data || bs_eterm_kind_of(data) != BS_ET_BINARY) {
        const bs_eterm *why = bs_eterm_tagged(root, "error");
        report_error(j, "finishing the recording", why ? why : root);
        bs_eterm_free(t);
        return BS_EXIT_FAILURE;
    }
    rc = read_result(j, format, bs_eterm_text(data), bs_eterm_text_len(data), out);
    if (strcmp(format, "stacks") == 0)
        say_samples(j, r);
    note_early_stop(&j->early_stop, r);
    bs_eterm_free(t);
    return rc;
}

int bs_job_arm(bs_job *j)
{
    ei_x_buff request;
    if (ei_x_new(&request) < 0 || ei_x_encode_atom(&request, "arm") < 0)
        return BS_EXIT_FAILURE;
    bs_eterm_tree *t = NULL;
    int rc = bs_remote_request(j->remote, &j->pid, &request, j->remote->timeout_ms, &t);
    ei_x_free(&request);
    if (rc != BS_EXIT_OK)
        return rc;
    if (!bs_eterm_is_atom(bs_eterm_root(t), "ok")) {
        report_error(j, "arming the capture", bs_eterm_root(t));
        rc = BS_EXIT_FAILURE;
    }
    bs_eterm_free(t);
    return rc;
}

int bs_job_finish_raw(bs_job *j, unsigned timeout_ms, bs_eterm_tree **out, const bs_eterm **result)
{
    ei_x_buff request;
    *out = NULL;
    *result = NULL;
    if (ei_x_new(&request) < 0 || ei_x_encode_atom(&request, "finish") < 0)
        return BS_EXIT_FAILURE;
    int rc = bs_remote_request(j->remote, &j->pid, &request, timeout_ms, out);
    ei_x_free(&request);
    j->started = 0;
    if (rc != BS_EXIT_OK)
        return rc;
    const bs_eterm *root = bs_eterm_root(*out);
    const bs_eterm *r = bs_eterm_tagged(root, "ok");
    if (!r || bs_eterm_kind_of(r) != BS_ET_MAP) {
        const bs_eterm *why = bs_eterm_tagged(root, "error");
        report_error(j, "finishing the recording", why ? why : root);
        bs_eterm_free(*out);
        *out = NULL;
        return BS_EXIT_FAILURE;
    }
    *result = r;
    return BS_EXIT_OK;
}

void bs_job_stop(bs_job *j)
{
    if (!j->started)
        return;
    ei_x_buff request;
    bs_eterm_tree *t = NULL;
    if (ei_x_new(&request) == 0 && ei_x_encode_atom(&request, "finish") == 0 &&
        bs_remote_request(j->remote, &j->pid, &request, 20000, &t) == BS_EXIT_OK)
        bs_eterm_free(t);
    ei_x_free(&request);
    j->started = 0;
}

void bs_job_free(bs_job *j)
{
    bs_job_forget_request(j);
    bs_eterm_free(j->last_poll);
    j->last_poll = NULL;
    if (j->pid.buff)
        ei_x_free(&j->pid);
}

/* A share in percent that never reads 100% while something else is left:
 * 99.96% of the time waiting, beside a worker busy for seconds, is not all
 * of it. */
static void share_text(uint64_t part, uint64_t total, char *buf, size_t cap)
{
    double share = total ? 100.0 * (double)part / (double)total : 0.0;
    if (part < total && share >= 99.5)
        snprintf(buf, cap, "%.1f%%", (double)(uint64_t)(share * 10.0) / 10.0); /* cut, not rounded */
    else
        snprintf(buf, cap, "%.0f%%", share);
}

void bs_job_whole_vm_view(const bs_job_spec *s, const bs_profile *p, bs_render_opts *o)
{
    o->order_by_cpu = 1;
    if (s->show_idle || o->drop_sleep)
        return;
    o->drop_wait = 1;
    uint32_t procs = 0, all = 0;
    uint64_t wait_ns = bs_profile_frame_time(p, p->wait_frame, &procs);
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->n_trees; i++)
        for (uint32_t n = 0; n < p->trees[i].n_nodes; n++)
            total += p->trees[i].nodes[n].self_ns;
    all = p->n_trees;
    char share[16];
    share_text(wait_ns, total, share, sizeof share);
    /* The share is of the time of every process added up, which idle
     * processes dominate: the time shown is said too, so that a busy
     * worker's seconds are not lost behind "99%". */
    if (wait_ns == 0)
        return;
    /* A sampled profile (BS_UNIT_COUNT) counts samples, not nanoseconds. */
    if (p->unit == BS_UNIT_COUNT)
        fprintf(stderr,
                "beamspy: idle time left out: %llu %s waiting for messages (WAIT) in %u of %u processes, "
                "%s of the samples taken; shown: the other %llu %s (running, runnable, GC) (--show-idle to see "
                "it)\n",
                (unsigned long long)wait_ns, wait_ns == 1 ? "sample" : "samples", procs, all, share,
                (unsigned long long)(total - wait_ns), total - wait_ns == 1 ? "sample" : "samples");
    else
        fprintf(stderr,
                "beamspy: idle time left out: %.3f s waiting for messages (WAIT) in %u of %u processes, "
                "%s of the time recorded; shown: the other %.3f s (running, runnable, GC) (--show-idle to see it)\n",
                (double)wait_ns / 1e9, procs, all, share, (double)(total - wait_ns) / 1e9);
}

/* append_number: fmt (one %llu) with v at buf + n, never past size; returns
 * the new length. append_text: the same for a plain text. */
static size_t append_number(char *buf, size_t size, size_t n, const char *fmt, unsigned long long v)
{
    if (n + 1 >= size)
        return n;
    int w = snprintf(buf + n, size - n, fmt, v);
    if (w < 0)
        return n;
    return n + (size_t)w < size ? n + (size_t)w : size - 1;
}

static size_t append_text(char *buf, size_t size, size_t n, const char *text)
{
    if (n + 1 >= size)
        return n;
    int w = snprintf(buf + n, size - n, "%s", text);
    if (w < 0)
        return n;
    return n + (size_t)w < size ? n + (size_t)w : size - 1;
}

size_t bs_job_limits_text(const bs_job_spec *s, char *buf, size_t size, size_t n)
{
    /* No event limit unless asked for: the whole recording is what people
     * expect; max_memory is what protects the VM. */
    if (s->max_events)
        n = append_number(buf, size, n, ", max_events => %llu", s->max_events);
    else
        n = append_text(buf, size, n, ", max_events => infinity");
    if (s->max_memory)
        n = append_number(buf, size, n, ", max_memory => %llu", s->max_memory);
    if (s->max_processes)
        n = append_number(buf, size, n, ", max_processes => %llu", s->max_processes);
    if (s->timeline == 0)
        n = append_text(buf, size, n, ", timeline => false");
    else if (s->timeline > 0)
        n = append_number(buf, size, n, ", timeline => %llu", (unsigned long long)s->timeline);
    return n;
}

void bs_job_say_cpu_samples(const bs_job_spec *s, const bs_profile *p, const char *node)
{
    if (!s->cpu && s->times && strcmp(s->times, "samples") == 0) {
        fprintf(stderr,
                "beamspy: %s%sself times from CPU samples taken beside the trace at %u Hz (--times samples), "
                "not traced times; call counts and stacks are the trace's\n",
                node ? node : "", node ? ": " : "", s->cpu_hz ? s->cpu_hz : BS_CPU_DEFAULT_HZ);
        if (p->notes[0])
            fprintf(stderr, "beamspy: %s%show they were taken: %s\n", node ? node : "", node ? ": " : "", p->notes);
        return;
    }
    if (!s->cpu)
        return;
    uint64_t samples = 0;
    unsigned procs = 0;
    for (uint32_t t = 0; t < p->n_trees; t++) {
        uint64_t in_tree = 0;
        for (uint32_t i = 0; i < p->trees[t].n_nodes; i++)
            in_tree += p->trees[t].nodes[i].self_ns;
        samples += in_tree;
        procs += in_tree > 0;
    }
    fprintf(stderr,
            "beamspy: %s%sCPU samples at %u Hz of the VM's scheduler threads (mode cpu): %llu samples in %u "
            "processes; a sample is 1/%u s of a thread's CPU time\n",
            node ? node : "", node ? ": " : "", s->cpu_hz ? s->cpu_hz : BS_CPU_DEFAULT_HZ,
            (unsigned long long)samples, procs, s->cpu_hz ? s->cpu_hz : BS_CPU_DEFAULT_HZ);
    if (p->notes[0])
        fprintf(stderr, "beamspy: %s%show they were taken: %s\n", node ? node : "", node ? ": " : "", p->notes);
}
