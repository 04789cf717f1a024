/* cmd_dump.c — `beamspy dump --node N`: the current stack of every process
 * of a running node (or of the ones named), with registered name, initial
 * call, status, message queue, memory and reductions, the processes that
 * look stuck first; and who waits for whom: deadlocks first, then chains of
 * blocked processes by root cause (wait_graph.c, dump_waits.c). What people
 * need when a node hangs. Several --node: each node is dumped in turn and
 * the waits are followed across them.
 *
 * Each node looks at every process twice, --interval apart, and ranks them
 * (beamspy_dump on the node); this file prints the result as text or, with
 * --json, as one JSON document. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dist/call_args.h"
#include "../common/json_escape.h"
#include "cli.h"
#include "defaults.h"
#include "dump_names.h"
#include "dump_waits.h"
#include "cluster.h"
#include "remote.h"
#include "wait_graph.h"

#define CMD "dump"
#define MAX_TARGETS 1024
#define SNAPSHOT_TIMEOUT_MS 300000u

enum { OPT_PID = BS_OPT_REMOTE_FIRST_OWN, OPT_NAME, OPT_INTERVAL, OPT_LIMIT, OPT_JSON, OPT_ELIXIR, OPT_ERLANG };

typedef struct dump_args {
    bs_remote_opts remote;
    const char *targets[MAX_TARGETS];
    int n_targets;
    unsigned long long interval_ms;
    unsigned long long limit; /* 0: every process */
    int json;
    int elixir; /* -1: as the first node runs */
} dump_args;

void bs_cmd_dump_usage(FILE *out)
{
    fputs("usage: beamspy dump {--node NAME [--node NAME ...] | --cluster NODE} [--pid PID | --name NAME ...] [--json] [options]\n"
          "\n"
          "Prints the current stack of every process of a running node (complete:\n"
          "every frame, recursion included), with its registered name, initial call,\n"
          "status, message queue length, memory and reductions. Processes that look\n"
          "stuck come first: long or growing message queues, waiting for a reply,\n"
          "waiting in a receive deep in their code, growing memory; each says why.\n"
          "The node is looked at twice, --interval apart, to see what grows and what\n"
          "does not move.\n"
          "\n"
          "Before the list: who waits for whom. Processes that wait for a reply\n"
          "(gen_server, gen_statem, gen_event calls, erpc/rpc, proc_lib starts, io)\n"
          "for the whole interval, and the process they wait for (from their\n"
          "monitors). Cycles are printed first as DEADLOCK, each member with its\n"
          "stack; then every other blocked process as a chain to its root cause\n"
          "(busy, stuck in a receive, in a deadlock, on a node not dumped), each\n"
          "root once with the number of processes behind it. A wait whose target\n"
          "cannot be told is said so, never guessed. With several --node the waits\n"
          "are followed from node to node.\n"
          "\n"
          "connection:\n",
          out);
    bs_remote_options_usage(out, 1);
    fputs("\n"
          "options:\n"
          "  --pid PID           only this process, e.g. '<0.123.0>' (repeatable)\n"
          "  --name NAME         only this registered process (repeatable)\n"
          "  --interval T        time between the two looks (default 200ms)\n"
          "  --limit N           print the first N processes only\n"
          "  --json              one JSON document instead of text (for scripts),\n"
          "                      with \"waits\" and \"deadlocks\" lists\n"
          "  --elixir, --erlang  names spelled MyApp.Server, Mod.fun/2 or mod:fun/2\n"
          "                      (default: as the (first) node runs)\n"
          "  -h, --help          this text\n"
          "\n"
          "examples:\n"
          "  beamspy dump --node app@host | less\n"
          "  beamspy dump --node app@host --limit 5\n"
          "  beamspy dump --node app@host --name my_server --json\n"
          "  beamspy dump --node a@host --node b@host --limit 10\n"
          "\n",
          out);
    bs_cli_exit_codes_usage(out);
}

static int parse_args(int argc, char **argv, dump_args *a)
{
    static const struct option longopts[] = {
        {"pid", required_argument, NULL, OPT_PID},
        {"name", required_argument, NULL, OPT_NAME},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"json", no_argument, NULL, OPT_JSON},
        {"elixir", no_argument, NULL, OPT_ELIXIR},
        {"erlang", no_argument, NULL, OPT_ERLANG},
        {"help", no_argument, NULL, 'h'},
        BS_REMOTE_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    char *end;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bs_cmd_dump_usage(stdout);
            return BS_EXIT_OK;
        case OPT_PID:
        case OPT_NAME:
            if (c == OPT_PID && (optarg[0] != '<' || optarg[strlen(optarg) - 1] != '>'))
                return bs_cli_usage_error(CMD, "bad --pid '%s' (a pid looks like <0.123.0>)", optarg);
            if (a->n_targets >= MAX_TARGETS)
                return bs_cli_usage_error(CMD, "too many processes named");
            a->targets[a->n_targets++] = optarg;
            break;
        case OPT_INTERVAL:
            if (strcmp(optarg, "0") == 0)
                a->interval_ms = 0;
            else if (bs_cli_duration_option(CMD, "--interval", optarg, 1, 60000, "e.g. 200ms, 1s", &a->interval_ms))
                return BS_EXIT_USAGE;
            break;
        case OPT_LIMIT:
            errno = 0;
            a->limit = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] < '1' || optarg[0] > '9')
                return bs_cli_usage_error(CMD, "bad --limit '%s' (a positive number)", optarg);
            break;
        case OPT_JSON:
            a->json = 1;
            break;
        case OPT_ELIXIR:
        case OPT_ERLANG:
            a->elixir = c == OPT_ELIXIR;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_remote_option(CMD, c, optarg, &a->remote, BS_REMOTE_MAX_NODES);
            if (rc != 0)
                return rc < 0 ? bs_cli_getopt_error(CMD, '?', argv) : rc;
        }
    }
    if (optind < argc)
        return bs_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!bs_cluster_any_node(&a->remote))
        return bs_cli_usage_error(CMD, "no node: give --node NAME or --cluster NODE");
    return -1;
}

static void print_text_process(FILE *out, const bs_eterm *p, int elixir)
{
    char mem[32], growth[32], frame[2048];
    const char *name = bs_term_text(p, "name");
    fprintf(out, "%s%s%s\n", bs_term_text(p, "pid"), name[0] ? " " : "", bs_dump_name(name, elixir, frame, sizeof frame));
    const bs_eterm *reasons = bs_eterm_map_get(p, "reasons");
    for (size_t i = 0; i < bs_eterm_size(reasons); i++) {
        fprintf(out, "  ! %s\n", bs_dump_reason(bs_eterm_item(reasons, i), elixir, frame, sizeof frame));
    }
    long long mg = bs_term_int(p, "memory_growth");
    fprintf(out, "  initial call %s, ", bs_dump_frame(bs_eterm_map_get(p, "initial_call"), elixir, frame, sizeof frame));
    fprintf(out, "status %s, message queue %lld", bs_term_text(p, "status"), bs_term_int(p, "message_queue_len"));
    if (bs_term_int(p, "queue_growth"))
        fprintf(out, " (%+lld)", bs_term_int(p, "queue_growth"));
    fprintf(out, ", memory %s", bs_human_bytes(bs_term_int(p, "memory"), 0, mem, sizeof mem));
    if (mg)
        fprintf(out, " (%s%s)", mg > 0 ? "+" : "", bs_human_bytes(mg, 0, growth, sizeof growth));
    fprintf(out, ", reductions %lld (%+lld)", bs_term_int(p, "reductions"), bs_term_int(p, "reductions_delta"));
    if (bs_term_int(p, "idle_ms"))
        fprintf(out, ", idle for %lld+ ms", bs_term_int(p, "idle_ms"));
    fputc('\n', out);
    bs_dump_print_stack(out, p, 4, elixir);
    fputc('\n', out);
}

static void print_text(FILE *out, const bs_eterm *d, unsigned long long limit, int elixir)
{
    const bs_eterm *procs = bs_eterm_map_get(d, "processes");
    size_t n = bs_eterm_size(procs);
    time_t taken = (time_t)(bs_term_int(d, "taken_at_us") / 1000000);
    struct tm tm;
    char when[64] = "?";
    if (gmtime_r(&taken, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    size_t shown = limit && limit < n ? (size_t)limit : n;
    fprintf(out, "node %s at %s: %lld processes (looked at twice, %lld ms apart); %zu shown, most stuck first\n\n",
            bs_term_text(d, "node"), when, bs_term_int(d, "process_count"), bs_term_int(d, "interval_ms"), shown);
    for (size_t i = 0; i < shown; i++)
        print_text_process(out, bs_eterm_item(procs, i), elixir);
    long long omitted = bs_term_int(d, "omitted") + (long long)(n - shown);
    if (omitted > 0)
        fprintf(out, "(%lld more processes not shown)\n", omitted);
}

/* A term of the dump as JSON: maps with atom keys become objects, lists
 * arrays, binaries strings, integers numbers, true/false booleans; frames
 * (initial_call, current, stack) and reasons are spelled into strings,
 * with elixir in Elixir, as names are. */
static void print_json_texts(FILE *out, const bs_eterm *list,
                             const char *(*spell)(const bs_eterm *, int, char *, size_t), int elixir)
{
    char text[2048];
    fputc('[', out);
    for (size_t i = 0; i < bs_eterm_size(list); i++) {
        if (i)
            fputc(',', out);
        bs_json_write_string(out, spell(bs_eterm_item(list, i), elixir, text, sizeof text));
    }
    fputc(']', out);
}

static void print_json_term(FILE *out, const bs_eterm *t, int elixir)
{
    char text[2048];
    switch (bs_eterm_kind_of(t)) {
    case BS_ET_INT: {
        int ok;
        fprintf(out, "%lld", bs_eterm_int(t, &ok));
        break;
    }
    case BS_ET_ATOM:
        if (bs_eterm_is_atom(t, "true") || bs_eterm_is_atom(t, "false"))
            fputs(bs_eterm_text(t), out);
        else
            bs_json_write_string(out, bs_eterm_text(t));
        break;
    case BS_ET_BINARY:
    case BS_ET_STRING:
        bs_json_write_string(out, bs_eterm_text(t));
        break;
    case BS_ET_LIST:
    case BS_ET_TUPLE:
        fputc('[', out);
        for (size_t i = 0; i < bs_eterm_size(t); i++) {
            if (i)
                fputc(',', out);
            print_json_term(out, bs_eterm_item(t, i), elixir);
        }
        fputc(']', out);
        break;
    case BS_ET_MAP:
        fputc('{', out);
        for (size_t i = 0; i < bs_eterm_size(t); i++) {
            if (i)
                fputc(',', out);
            const char *key = bs_eterm_text(bs_eterm_map_key(t, i));
            const bs_eterm *v = bs_eterm_map_value(t, i);
            bs_json_write_string(out, key ? key : "?");
            fputc(':', out);
            if (key && strcmp(key, "name") == 0 && bs_eterm_text(v))
                bs_json_write_string(out, bs_dump_name(bs_eterm_text(v), elixir, text, sizeof text));
            else if (key && (strcmp(key, "initial_call") == 0 || strcmp(key, "current") == 0))
                bs_json_write_string(out, bs_dump_frame(v, elixir, text, sizeof text));
            else if (key && (strcmp(key, "stack") == 0 || strcmp(key, "reasons") == 0))
                print_json_texts(out, v, strcmp(key, "stack") == 0 ? bs_dump_frame : bs_dump_reason, elixir);
            else
                print_json_term(out, v, elixir);
        }
        fputc('}', out);
        break;
    default:
        fputs("null", out);
    }
}

/* One node's dump: its head fields and processes (no braces around). */
static void print_json_node(FILE *out, const bs_eterm *d, unsigned long long limit, int elixir)
{
    const bs_eterm *procs = bs_eterm_map_get(d, "processes");
    size_t n = bs_eterm_size(procs);
    size_t shown = limit && limit < n ? (size_t)limit : n;
    static const char *const head[] = {"node", "taken_at_us", "interval_ms", "process_count", "omitted"};
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
        bs_json_write_string(out, head[k]);
        fputc(':', out);
        if (strcmp(head[k], "omitted") == 0)
            fprintf(out, "%lld", bs_term_int(d, "omitted") + (long long)(n - shown));
        else
            print_json_term(out, bs_eterm_map_get(d, head[k]), 0);
        fputc(',', out);
    }
    fputs("\"processes\":[", out);
    for (size_t i = 0; i < shown; i++) {
        if (i)
            fputs(",\n", out);
        print_json_term(out, bs_eterm_item(procs, i), elixir);
    }
    fputc(']', out);
}

/* One node: its dump's object with "deadlocks" and "waits" added; several:
 * {"nodes": [each node's object], "deadlocks", "waits"}. */
static void print_json(FILE *out, const bs_eterm *const *dumps, size_t n, unsigned long long limit,
                       const bs_wait_graph *g, const bs_dump_style *st)
{
    fputc('{', out);
    if (n == 1) {
        print_json_node(out, dumps[0], limit, st->elixir);
    } else {
        fputs("\"nodes\":[", out);
        for (size_t i = 0; i < n; i++) {
            fputs(i ? ",\n{" : "{", out);
            print_json_node(out, dumps[i], limit, st->elixir);
            fputc('}', out);
        }
        fputc(']', out);
    }
    fputs(",\n", out);
    bs_dump_waits_json(out, g, st);
    fputs("}\n", out);
}

/* #{interval_ms, targets, tool, unload}: with the tool's pid and what it
 * loaded, the node unloads it should the tool die during the dump. */
static int encode_options(const dump_args *a, bs_remote *r, ei_x_buff *x)
{
    if (ei_x_new(x) < 0)
        return -1;
    int rc = ei_x_encode_map_header(x, 4) | ei_x_encode_atom(x, "tool") | ei_x_encode_pid(x, ei_self(&r->node.ec)) |
             ei_x_encode_atom(x, "unload") | bs_delivery_encode_modules(&r->delivery, x) |
             ei_x_encode_atom(x, "interval_ms") |
             ei_x_encode_longlong(x, (long long)a->interval_ms) | ei_x_encode_atom(x, "targets");
    if (a->n_targets == 0) {
        rc |= ei_x_encode_atom(x, "all");
    } else {
        rc |= ei_x_encode_list_header(x, a->n_targets);
        for (int i = 0; i < a->n_targets; i++)
            rc |= ei_x_encode_string(x, a->targets[i]);
        rc |= ei_x_encode_empty_list(x);
    }
    if (rc)
        ei_x_free(x);
    return rc ? -1 : 0;
}

/* Dumps node i into *tree; BS_EXIT_OK or the exit code (message printed). */
static int dump_node(dump_args *a, int i, bs_eterm_tree **tree)
{
    bs_remote r;
    int rc = bs_remote_attach(&a->remote, i, &r);
    if (rc != BS_EXIT_OK)
        return rc;
    if (i == 0)
        bs_remote_choose_names(&r, &a->elixir);
    ei_x_buff opts, args;
    bs_eterm_tree *t = NULL;
    if (encode_options(a, &r, &opts) < 0 || bs_call_args(&args, "t", &opts) < 0) {
        bs_cli_error("out of memory");
        bs_remote_detach(&r);
        return BS_EXIT_FAILURE;
    }
    ei_x_free(&opts);
    unsigned timeout = a->remote.timeout_ms > SNAPSHOT_TIMEOUT_MS ? a->remote.timeout_ms : SNAPSHOT_TIMEOUT_MS;
    rc = bs_remote_call(&r, "beamspy_agent", "dump", &args, timeout, &t);
    bs_remote_detach(&r);
    if (rc != BS_EXIT_OK)
        return rc;
    const bs_eterm *root = bs_eterm_root(t);
    const bs_eterm *d = bs_eterm_tagged(root, "ok");
    if (!d || bs_eterm_kind_of(d) != BS_ET_MAP) {
        char why[700];
        const bs_eterm *e = bs_eterm_tagged(root, "error");
        bs_eterm_format(why, sizeof why, e ? e : root);
        bs_cli_error("%s: dump failed: %s", r.node.name, why);
        bs_eterm_free(t);
        return BS_EXIT_FAILURE;
    }
    *tree = t;
    return BS_EXIT_OK;
}

static int dump(dump_args *a)
{
    bs_eterm_tree *trees[BS_REMOTE_MAX_NODES] = {NULL};
    const bs_eterm *dumps[BS_REMOTE_MAX_NODES];
    size_t n = (size_t)a->remote.n_nodes;
    int rc = BS_EXIT_OK;
    for (size_t i = 0; i < n && rc == BS_EXIT_OK; i++) {
        rc = dump_node(a, (int)i, &trees[i]);
        if (rc == BS_EXIT_OK)
            dumps[i] = bs_eterm_tagged(bs_eterm_root(trees[i]), "ok");
    }
    bs_wait_graph g;
    if (rc == BS_EXIT_OK && bs_wait_graph_build(&g, dumps, n) < 0) {
        bs_cli_error("out of memory");
        rc = BS_EXIT_FAILURE;
    }
    if (rc == BS_EXIT_OK) {
        bs_dump_style st = {n > 1, a->elixir};
        if (g.truncated)
            bs_cli_error("more than %u processes or %u waits: who waits for whom covers the first ones only",
                         BS_WG_MAX_PROCESSES, BS_WG_MAX_TARGETS);
        if (a->json) {
            print_json(stdout, dumps, n, a->limit, &g, &st);
        } else {
            bs_dump_waits_text(stdout, &g, &st);
            for (size_t i = 0; i < n; i++)
                print_text(stdout, dumps[i], a->limit, a->elixir);
        }
        bs_wait_graph_free(&g);
    }
    for (size_t i = 0; i < n; i++)
        bs_eterm_free(trees[i]);
    return rc;
}

int bs_cmd_dump(int argc, char **argv)
{
    dump_args a;
    memset(&a, 0, sizeof a);
    bs_remote_opts_init(&a.remote);
    a.interval_ms = BS_DEFAULT_DUMP_INTERVAL_MS;
    a.elixir = -1;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = bs_cluster_find(CMD, &a.remote, BS_REMOTE_MAX_NODES)) == BS_EXIT_OK)
        rc = dump(&a);
    return rc;
}
