/* cmd_seq.c — `beamspy seq --node N --function M:F/A -o flow.mmd`: sequence
 * diagrams of the message flows that the next calls of a function start,
 * across running nodes.
 *
 * For each node: attach (deliver beamspy's code if it lacks it) and start a
 * seq job (beamspy_agent): a collector becomes the node's seq_trace system
 * tracer; once every node collects, each job arms a meta trace pattern on
 * M:F/A that gives the calling process a token (match-spec action
 * set_seq_token, no recompiling). The token then
 * travels with every message, node to node. The tool polls the jobs (which
 * renews their lease: a tool killed with -9 is seen by monitor_node and the
 * job undoes everything) until --calls calls got a token and no node saw
 * an event for QUIET_MS, or --duration ends, or Ctrl-C; then it fetches
 * the events of every node, merges them by the tokens' serials
 * (engine/seq_flow.c) and writes the outputs here. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "../engine/filter.h"
#include "../engine/seq_flow.h"
#include "../writers/seq_writers.h"
#include "cli.h"
#include "defaults.h"
#include "function_arg.h"
#include "job.h"
#include "nodes_at_once.h"
#include "cluster.h"
#include "remote.h"
#include "stop_signals.h"
#include "term_frame.h"

#define CMD "seq"
#define POLL_MS 100
#define QUIET_MS 500
#define FINISH_TIMEOUT_MS 60000u

enum {
    OPT_DURATION = BS_OPT_REMOTE_FIRST_OWN,
    OPT_KEEP_NOISE,
    OPT_INCLUDE,
    OPT_EXCLUDE,
    OPT_MAX_EVENTS,
    OPT_MAX_PARTICIPANTS,
    OPT_LABEL_CHARS,
    OPT_TITLE
};

typedef struct seq_args {
    bs_remote_opts remote;
    bs_job_spec job;
    bs_seq_opts seq;
    const char **outputs;
    int n_outputs;
} seq_args;

void bs_cmd_seq_usage(FILE *out)
{
    fputs("usage: beamspy seq {--node NAME [--node NAME...] | --cluster NODE} --function M:F/A -o FILE [-o FILE...] [options]\n"
          "\n"
          "Sequence diagrams of the messages that the next calls of a function set off,\n"
          "between processes and nodes (seq_trace). The process that calls M:F/A gets a\n"
          "token (a match-spec action: nothing recompiled); every message it sends then\n"
          "carries it on, to any process of any of the nodes given. Messages are ordered\n"
          "by the tokens' serial numbers (causality), not by the nodes' clocks.\n"
          "\n"
          "connection:\n",
          out);
    bs_remote_options_usage(out, 1);
    fputs("\n"
          "what to follow:\n"
          "  --function M:F/A    calls of M:F/A by any process on any node given;\n"
          BS_FUNCTION_ARG_SPELLINGS_USAGE
          "  --calls K           how many calls get a token (default 1; calls racing\n"
          "                      with the pattern's removal may get one too)\n"
          "  --duration T        the longest wait for the calls and their flows\n"
          "                      (default 10s); the recording ends earlier once K calls\n"
          "                      were seen and no node saw a message for 0.5 s\n"
          "  --lease T           a node undoes everything by itself when it has heard\n"
          "                      nothing from this tool for T (default 5s)\n"
          "\n"
          "what to show:\n"
          "  --keep-noise        keep messages of the code server, the loader, logger\n"
          "                      and the I/O protocol (left out by default)\n"
          "  --include REGEX     keep only messages whose text or either process\n"
          "                      ('node pid name') matches (POSIX extended)\n"
          "  --exclude REGEX     leave those out\n"
          "  --max-events N      events kept per node (default 10000)\n"
          "  --max-participants N  processes drawn in columns of their own (default 40;\n"
          "                      the others of a node share one)\n"
          "  --label-chars N     characters of a message label (default 60)\n"
          "  --title TEXT        diagram title\n"
          "  --elixir, --erlang  processes named MyApp.Server, MyApp.Worker.init/1 or\n"
          "                      'Elixir.MyApp.Server', 'Elixir.MyApp.Worker':init/1\n"
          "                      (default: Elixir's when the (first) node runs Elixir)\n"
          "\n"
          "output:\n"
          "  -o, --output FILE   write FILE (repeatable); the format comes from the\n"
          "                      extension (formats: below)\n"
          "  -h, --help          this text\n"
          "\n"
          "examples:\n"
          "  beamspy seq --node a@host --node b@host --function my_api:handle/2 -o flow.mmd\n"
          "  beamspy seq --node app --function 'MyApp.Router.call/2' --calls 3 -o f.seq.svg -o f.json\n"
          "\n",
          out);
    fputs("formats (picked by the file's extension):\n", out);
    bs_seq_format_list_usage(out, "  ");
    fputc('\n', out);
    bs_cli_exit_codes_usage(out);
}

static int count_option(const char *opt, const char *arg, unsigned long long min, unsigned long long max,
                        unsigned long long *v)
{
    if (bs_parse_count(arg, v) < 0 || *v < min || *v > max)
        return bs_cli_usage_error(CMD, "bad %s '%s' (%llu to %llu)", opt, arg, min, max);
    return 0;
}

/* Returns -1 to go on, or the exit code (help printed: 0). */
static int parse_args(int argc, char **argv, seq_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"duration", required_argument, NULL, OPT_DURATION},
        BS_FUNCTION_JOB_LONG_OPTIONS,
        {"keep-noise", no_argument, NULL, OPT_KEEP_NOISE},
        {"include", required_argument, NULL, OPT_INCLUDE},
        {"exclude", required_argument, NULL, OPT_EXCLUDE},
        {"max-events", required_argument, NULL, OPT_MAX_EVENTS},
        {"max-participants", required_argument, NULL, OPT_MAX_PARTICIPANTS},
        {"label-chars", required_argument, NULL, OPT_LABEL_CHARS},
        {"title", required_argument, NULL, OPT_TITLE},
        {"elixir", no_argument, NULL, BS_OPT_ELIXIR},
        {"erlang", no_argument, NULL, BS_OPT_ERLANG},
        {"help", no_argument, NULL, 'h'},
        BS_REMOTE_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    unsigned long long v;
    char why[128];
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bs_cmd_seq_usage(stdout);
            return BS_EXIT_OK;
        case 'o':
            if ((rc = bs_cli_add_output(&a->outputs, &a->n_outputs, optarg)) != BS_EXIT_OK)
                return rc;
            break;
        case OPT_DURATION:
            if (bs_cli_duration_option(CMD, "--duration", optarg, 1, 86400000ULL, "e.g. 500ms, 10s, 2m",
                                       &a->job.duration_ms))
                return BS_EXIT_USAGE;
            break;
        case OPT_KEEP_NOISE:
            a->seq.keep_noise = 1;
            break;
        case BS_OPT_ELIXIR:
        case BS_OPT_ERLANG:
            a->job.elixir = c == BS_OPT_ELIXIR;
            break;
        case OPT_INCLUDE:
        case OPT_EXCLUDE:
            if (bs_filter_check_pattern(optarg, why, sizeof why) < 0)
                return bs_cli_usage_error(CMD, "bad %s '%s': %s", c == OPT_INCLUDE ? "--include" : "--exclude",
                                          optarg, why);
            *(c == OPT_INCLUDE ? &a->seq.include_re : &a->seq.exclude_re) = optarg;
            break;
        case OPT_MAX_EVENTS:
            if ((rc = count_option("--max-events", optarg, 1, BS_SEQ_MAX_EVENTS_LIMIT, &a->job.max_events)))
                return rc;
            break;
        case OPT_MAX_PARTICIPANTS:
            if ((rc = count_option("--max-participants", optarg, 1, BS_SEQ_MAX_PARTICIPANTS_LIMIT, &v)))
                return rc;
            a->seq.max_participants = (size_t)v;
            break;
        case OPT_LABEL_CHARS:
            if ((rc = count_option("--label-chars", optarg, 8, BS_SEQ_LABEL_CHARS_LIMIT, &v)))
                return rc;
            a->seq.label_chars = (size_t)v;
            break;
        case OPT_TITLE:
            a->seq.title = optarg;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_remote_option(CMD, c, optarg, &a->remote, BS_REMOTE_MAX_NODES);
            if (rc < 0)
                rc = bs_job_function_option(CMD, c, optarg, &a->job);
            if (rc != 0)
                return rc < 0 ? bs_cli_getopt_error(CMD, '?', argv) : rc;
        }
    }
    if (optind < argc)
        return bs_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    return -1;
}

static int check_args(const seq_args *a)
{
    if (!bs_cluster_any_node(&a->remote))
        return bs_cli_usage_error(CMD, "no node: give --node NAME or --cluster NODE");
    if (a->job.target_kind != BS_TARGET_FUNCTION)
        return bs_cli_usage_error(CMD, "nothing to follow: give --function M:F/A");
    if (a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE");
    char seq_extensions[128];
    bs_seq_format_extension_list(seq_extensions, sizeof seq_extensions, ", ");
    for (int i = 0; i < a->n_outputs; i++)
        if (bs_seq_format_from_path(a->outputs[i]) == BS_SEQ_FORMAT_UNKNOWN)
            return bs_cli_usage_error(CMD, "cannot tell the format of '%s' from its extension (%s)",
                                      a->outputs[i], seq_extensions);
    return BS_EXIT_OK;
}

/* Polls until K calls got a token and the flows are quiet, the duration
 * ends, a node is lost or a stop signal came. */
static int watch_jobs(const seq_args *a, bs_job *jobs, int n, const sigset_t *waiting_mask)
{
    long long t0 = bs_now_ms(), quiet_since = -1;
    unsigned long long last_events = 0;
    int rc = BS_EXIT_OK;
    while (!bs_stop_requested() && (unsigned long long)(bs_now_ms() - t0) < a->job.duration_ms) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = POLL_MS * 1000000L};
        pselect(0, NULL, NULL, NULL, &ts, waiting_mask);
        unsigned long long calls = 0, events = 0;
        int alive = 0;
        for (int i = 0; i < n; i++) {
            if (!jobs[i].started || jobs[i].lost)
                continue;
            int prc = bs_job_poll(&jobs[i]);
            if (prc != BS_EXIT_OK) {
                jobs[i].lost = 1;
                rc = prc;
                continue;
            }
            alive++;
            calls += jobs[i].progress.calls;
            events += jobs[i].progress.events;
        }
        if (alive == 0)
            break;
        if (calls < a->job.calls || events != last_events) {
            quiet_since = -1;
            last_events = events;
            continue;
        }
        if (quiet_since < 0)
            quiet_since = bs_now_ms();
        else if (bs_now_ms() - quiet_since >= QUIET_MS)
            break;
    }
    if (bs_stop_requested())
        fputs("beamspy: stopping (Ctrl-C): writing what was recorded\n", stderr);
    return rc;
}

/* Text of a term the collector sent (binaries and atoms), "" otherwise. */
static const char *text_of(const bs_eterm *t)
{
    const char *s = bs_eterm_text(t);
    return s ? s : "";
}

/* A process as the collector named it (its registered name, an atom, or
 * its initial call {M, F, Arity}), spelled by the engine's speller in
 * style, as the NIF spells it for beamspy:sequence/2. */
static const char *process_name(const bs_eterm *who, bs_name_style style, char *buf, size_t cap)
{
    if (bs_eterm_kind_of(who) == BS_ET_ATOM) {
        bs_format_registered(buf, cap, style, bs_eterm_text(who), bs_eterm_text_len(who));
        return buf;
    }
    return bs_term_frame(who, style, buf, cap);
}

/* Adds one node's flow (term_to_binary of beamspy_seq_collector's flow map) to f.
 * Returns 0, or -1 with a message printed. */
static int add_node_flow(const char *node, const bs_eterm *result, bs_name_style style, bs_seq_flow *f)
{
    const bs_eterm *data = bs_eterm_map_get(result, "data");
    if (!data || bs_eterm_kind_of(data) != BS_ET_BINARY) {
        bs_cli_error("%s: the flow came back without data", node);
        return -1;
    }
    bs_eterm_tree *t = NULL;
    int index = 0;
    char err[200];
    if (bs_eterm_decode_versioned(bs_eterm_text(data), (int)bs_eterm_text_len(data), &index, &t, err,
                                  sizeof err) < 0) {
        bs_cli_error("%s: the flow came back unreadable: %s", node, err);
        return -1;
    }
    const bs_eterm *root = bs_eterm_root(t);
    const bs_eterm *events = bs_eterm_map_get(root, "events"), *names = bs_eterm_map_get(root, "names");
    int ok = 0;
    long long dropped = bs_eterm_int(bs_eterm_map_get(root, "dropped"), &ok);
    if (ok && dropped > 0)
        f->dropped += (uint64_t)dropped;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < bs_eterm_size(events); i++) {
        const bs_eterm *e = bs_eterm_item(events, i);
        int ok1 = 0, ok2 = 0, ok3 = 0;
        if (bs_eterm_kind_of(e) != BS_ET_TUPLE || bs_eterm_size(e) != 10)
            continue;
        bs_seq_event ev = {
            .kind = bs_eterm_is_atom(bs_eterm_item(e, 0), "send") ? BS_SEQ_SEND : BS_SEQ_RECV,
            .prev = (uint64_t)bs_eterm_int(bs_eterm_item(e, 1), &ok1),
            .cur = (uint64_t)bs_eterm_int(bs_eterm_item(e, 2), &ok2),
            .ts = bs_eterm_int(bs_eterm_item(e, 3), &ok3),
            .from_node = text_of(bs_eterm_item(e, 4)),
            .from_pid = text_of(bs_eterm_item(e, 5)),
            .to_node = text_of(bs_eterm_item(e, 6)),
            .to_pid = text_of(bs_eterm_item(e, 7)),
            .text = text_of(bs_eterm_item(e, 8)),
            .label = text_of(bs_eterm_item(e, 9)),
        };
        if (!ok1 || !ok2)
            continue;
        if (bs_seq_flow_add(f, &ev) < 0)
            rc = -1;
    }
    for (size_t i = 0; rc == 0 && i < bs_eterm_size(names); i++) {
        const bs_eterm *nm = bs_eterm_item(names, i);
        char name[BS_SEQ_NAME_MAX + 1];
        if (bs_eterm_kind_of(nm) == BS_ET_TUPLE && bs_eterm_size(nm) == 3 &&
            bs_seq_flow_name(f, text_of(bs_eterm_item(nm, 0)), text_of(bs_eterm_item(nm, 1)),
                             process_name(bs_eterm_item(nm, 2), style, name, sizeof name)) < 0)
            rc = -1;
    }
    bs_eterm_free(t);
    if (rc < 0)
        bs_cli_error("out of memory");
    return rc;
}

static int write_outputs(const seq_args *a, const bs_seq_flow *f)
{
    bs_seq_diagram d;
    int bad = 0;
    if (bs_seq_merge(f, &a->seq, &d, &bad) < 0) {
        bs_cli_error(bad ? "a pattern does not compile" : "out of memory");
        return BS_EXIT_FAILURE;
    }
    int rc = BS_EXIT_OK;
    for (int i = 0; i < a->n_outputs; i++) {
        bs_seq_write_info info;
        if (bs_seq_write_file(a->outputs[i], BS_SEQ_FORMAT_UNKNOWN, &d, &a->seq, &info) < 0) {
            bs_cli_error("could not write %s: %s", a->outputs[i], strerror(errno));
            rc = BS_EXIT_FAILURE;
            continue;
        }
        printf("beamspy: wrote %s\n", a->outputs[i]);
        if (info.left_out)
            fprintf(stderr, "beamspy: %s shows the first %zu messages only, %zu more are left out (a .json "
                            "output holds every message)\n", a->outputs[i], info.written, info.left_out);
    }
    if (d.dropped_events)
        fprintf(stderr, "beamspy: --max-events reached on a node: recording stopped there, so later messages "
                        "are missing; raise --max-events\n");
    if (d.folded)
        fprintf(stderr, "beamspy: %llu processes past --max-participants are drawn as \"other processes\" of "
                        "their node; raise --max-participants\n", (unsigned long long)d.folded);
    if (d.n_msgs == 0)
        fprintf(stderr, "beamspy: no message was seen (%s)\n",
                f->n_events ? "all were filtered out" : "was the function called?");
    bs_seq_diagram_free(&d);
    return rc;
}

static int run_seq(seq_args *a)
{
    int n = a->remote.n_nodes;
    bs_remote *nodes = calloc((size_t)n, sizeof *nodes);
    bs_job *jobs = calloc((size_t)n, sizeof *jobs);
    int *codes = calloc((size_t)n, sizeof *codes);
    if (!nodes || !jobs || !codes) {
        free(nodes), free(jobs), free(codes);
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    bs_stop_signals signals;
    bs_stop_signals_catch(&signals);

    /* One label for every node: the collectors keep only its events. An
     * integer below 2^27 (an immediate on every node); pid and clock make
     * two tools' labels differ. */
    a->job.seq_label = (((long long)getpid() << 16) ^ bs_now_ms()) & ((1LL << 27) - 1);
    int rc = BS_EXIT_OK;
    /* Every node at once; the first that could not be attached ends the
     * run (those attached are detached below). */
    bs_attach_all(&a->remote, nodes, n, codes);
    for (int i = 0; i < n && rc == BS_EXIT_OK; i++)
        rc = codes[i];
    if (rc == BS_EXIT_OK)
        bs_remote_choose_names(&nodes[0], &a->job.elixir);
    for (int i = 0; i < n && rc == BS_EXIT_OK; i++)
        rc = bs_job_start(&jobs[i], &nodes[i], &a->job);
    for (int i = 0; i < n && rc == BS_EXIT_OK; i++)
        rc = bs_job_arm(&jobs[i]);
    /* A node refused (a system tracer of its own, no such function): the
     * jobs already started are undone below and nothing is written. */
    int all_started = rc == BS_EXIT_OK;
    if (all_started)
        rc = watch_jobs(a, jobs, n, &signals.waiting_mask);
    bs_seq_flow f;
    bs_seq_flow_init(&f, (size_t)n * (a->job.max_events ? a->job.max_events : BS_SEQ_MAX_EVENTS_DEFAULT));
    int any = 0;
    for (int i = 0; i < n; i++) {
        if (jobs[i].started && !jobs[i].lost) {
            bs_eterm_tree *t = NULL;
            const bs_eterm *result = NULL;
            int frc = bs_job_finish_raw(&jobs[i], FINISH_TIMEOUT_MS, &t, &result);
            if (frc == BS_EXIT_OK && add_node_flow(nodes[i].node.name, result, a->job.elixir > 0 ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG, &f) == 0)
                any = 1;
            else if (rc == BS_EXIT_OK)
                rc = frc != BS_EXIT_OK ? frc : BS_EXIT_FAILURE;
            bs_eterm_free(t);
        }
    }
    bs_detach_all(nodes, n); /* beamspy's code removed from every node, several at once */
    if (any && all_started) {
        int wrc = write_outputs(a, &f);
        if (rc == BS_EXIT_OK)
            rc = wrc;
    }
    bs_seq_flow_free(&f);
    for (int i = 0; i < n; i++)
        bs_job_free(&jobs[i]);
    free(nodes), free(jobs), free(codes);
    bs_stop_signals_restore(&signals);
    return rc;
}

int bs_cmd_seq(int argc, char **argv)
{
    seq_args a;
    memset(&a, 0, sizeof a);
    bs_remote_opts_init(&a.remote);
    bs_job_spec_init(&a.job);
    a.job.seq = 1;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = check_args(&a)) == BS_EXIT_OK &&
        (rc = bs_cluster_find(CMD, &a.remote, BS_REMOTE_MAX_NODES)) == BS_EXIT_OK) {
        if (a.job.duration_ms == 0)
            a.job.duration_ms = BS_DEFAULT_RECORD_DURATION_MS; /* as record's */
        if (a.job.calls == 0)
            a.job.calls = 1;
        rc = run_seq(&a);
    }
    free(a.outputs);
    bs_job_spec_free(&a.job);
    return rc;
}
