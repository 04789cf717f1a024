/* cmd_record.c — `beamspy record --node N -o FILE`: profiles a running node
 * over distribution and writes the outputs here.
 *
 * For each node: attach (connect, deliver beamspy's code if it lacks it),
 * start a job on it (beamspy_agent: a live trace, a function capture, or
 * stack sampling), poll it every POLL_MS (which also renews its lease: a
 * job whose tool stops polling ends itself), and when the duration is over,
 * a limit trips, the capture completes or Ctrl-C is pressed, fetch the
 * result (a .bspy profile or folded stacks) and render it locally. Several
 * nodes are merged under one root frame per node, or written one file per
 * node with --per-node. */
#define _GNU_SOURCE /* getopt_long, fmemopen */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "../dist/call_args.h"
#include "../readers/readers.h"
#include "../writers/writers.h"
#include "cli.h"
#include "defaults.h"
#include "function_arg.h"
#include "nodes_at_once.h"
#include "job.h"
#include "cluster.h"
#include "job_group.h"
#include "remote.h"
#include "stop_signals.h"
#include "tick_keeper.h"

#define CMD "record"
#define POLL_MS 250
#define FINISH_TIMEOUT_MS 300000u

enum {
    OPT_MODE = BS_OPT_RECORDING_FIRST_OWN,
    OPT_PID,
    OPT_NAME,
    OPT_ALL,
    OPT_INTERVAL,
    OPT_PER_NODE,
    OPT_CHILDREN,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_TIMINGS
};

typedef struct record_args {
    bs_remote_opts remote;
    bs_job_spec job;
    bs_render_opts render;
    const char **outputs;
    int n_outputs;
    int per_node;
    int progress; /* -1 auto (a terminal), 0 off, 1 on */
    int open; /* --open */
    int timings; /* --timings: the timings line with one node too */
} record_args;

void bs_cmd_record_usage(FILE *out)
{
    fputs("usage: beamspy record {--node NAME [--node NAME...] | --cluster NODE} TARGET -o FILE [-o FILE...] [options]\n"
          "\n"
          "Profiles processes of running nodes over Erlang distribution and writes\n"
          "the outputs here. Nothing needs to be installed on the nodes: beamspy\n"
          "loads its own modules there for the recording and removes them after.\n"
          "\n"
          "connection:\n",
          out);
    bs_remote_options_usage(out, 1);
    fputs("\n"
          "what to record (one of):\n"
          "  --pid PID           a process, e.g. '<0.123.0>' (repeatable)\n"
          "  --name NAME         a registered process (repeatable)\n"
          "  --all               every process, and every process spawned meanwhile\n"
          "  --function M:F/A    the next calls of M:F/A, by any process (capture);\n"
          BS_FUNCTION_ARG_SPELLINGS_USAGE
          "  --calls K           with --function: how many calls (default 1)\n"
          "\n"
          "how:\n"
          "  --mode trace|sample|cpu\n"
          "                      trace (default): every call and return, exact;\n"
          "                      cpu: the kernel's CPU samples of the node's scheduler\n"
          "                      threads (--hz), charged to the process each ran: where\n"
          "                      the CPU time goes; the node must run with +JPperf true;\n"
          "                      sample: the stacks of the targets every --interval,\n"
          "                      cheap on busy nodes, approximate (not with --function);\n"
          "                      a running process is read where it is preempted, one\n"
          "                      that ran into a receive first shows [ran to receive]\n"
          "  --interval T        sampling period (default 10ms)\n"
          "  --children          trace: also processes the targets spawn\n",
          out);
    bs_job_options_usage(out);
    fputs("  (--duration: default 10s; with --function, the longest wait for the calls)\n"
          "  --lease T           the node stops the recording by itself when it has\n"
          "                      heard nothing from this tool for T (default 5s)\n"
          "  Ctrl-C stops the recording early; the outputs are still written.\n"
          "  Several nodes are started and stopped together (all requests sent, then\n"
          "  the answers read as they come); a node that cannot be attached, fails or\n"
          "  goes away is said and left out, the others written (exit 11; --strict:\n"
          "  the code of the node lost); the last line says the spread of the start\n"
          "  and stop requests across the nodes.\n"
          "\n"
          "output:\n"
          "  -o, --output FILE   write FILE (repeatable); the format comes from the\n"
          "                      extension (formats: below)\n"
          "  --per-node          several nodes: one file per node (FILE gets the node\n"
          "                      name before its extension) instead of one file with\n"
          "                      a root frame per node\n"
          "  --progress, --no-progress\n"
          "                      a progress line on standard error (default: when it\n"
          "                      is a terminal)\n"
          "  --timings           the last line on standard error says how long attaching\n"
          "                      took, the spread of the start and stop requests across\n"
          "                      the nodes and when the outputs were written (always\n"
          "                      with several nodes)\n",
          out);
    fputs(BS_CLI_OPEN_USAGE, out);
    bs_cli_shared_options_usage(out, "\"Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "examples:\n"
          "  beamspy record --node app@host --all --duration 10s -o node.svg -o node.html\n"
          "  beamspy record --node app@host --name my_server -o srv.speedscope.json\n"
          "  beamspy record --node app@host --function my_handler:handle/2 --calls 5 -o h.svg\n"
          "  beamspy record --node a@h1.example.com --node b@h2.example.com --all --mode sample -o c.svg\n"
          "\n",
          out);
    bs_cli_formats_usage(out);
    fputc('\n', out);
    bs_cli_exit_codes_usage(out);
}

static int set_targets_kind(record_args *a, bs_job_target_kind kind, const char *opt)
{
    if (a->job.target_kind != BS_TARGET_NONE && a->job.target_kind != kind)
        return bs_cli_usage_error(CMD, "%s cannot be combined with the other target given", opt);
    a->job.target_kind = kind;
    return 0;
}

/* Returns -1 to go on, or the exit code (help printed: 0). */
static int parse_args(int argc, char **argv, record_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"mode", required_argument, NULL, OPT_MODE},
        {"pid", required_argument, NULL, OPT_PID},
        {"name", required_argument, NULL, OPT_NAME},
        {"all", no_argument, NULL, OPT_ALL},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"per-node", no_argument, NULL, OPT_PER_NODE},
        {"children", no_argument, NULL, OPT_CHILDREN},
        {"progress", no_argument, NULL, OPT_PROGRESS},
        {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
        {"timings", no_argument, NULL, OPT_TIMINGS},
        {"help", no_argument, NULL, 'h'},
        BS_RECORDING_LONG_OPTIONS,
        BS_FUNCTION_JOB_LONG_OPTIONS,
        BS_REMOTE_LONG_OPTIONS,
        BS_CLI_SHARED_LONG_OPTIONS,
        BS_CLI_OPEN_LONG_OPTION,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    unsigned long long v;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case BS_OPT_OPEN:
            a->open = 1;
            break;
        case 'h':
            bs_cmd_record_usage(stdout);
            return BS_EXIT_OK;
        case 'o':
            if ((rc = bs_cli_add_output(&a->outputs, &a->n_outputs, optarg)) != BS_EXIT_OK)
                return rc;
            break;
        case OPT_MODE:
            a->job.sample = strcmp(optarg, "sample") == 0;
            a->job.cpu = strcmp(optarg, "cpu") == 0;
            if (!a->job.sample && !a->job.cpu && strcmp(optarg, "trace") != 0)
                return bs_cli_usage_error(CMD, "unknown mode '%s' (trace, sample or cpu)", optarg);
            break;
        case OPT_PID:
        case OPT_NAME:
            if ((rc = set_targets_kind(a, BS_TARGET_LIST, c == OPT_PID ? "--pid" : "--name")))
                return rc;
            if (c == OPT_PID && (optarg[0] != '<' || optarg[strlen(optarg) - 1] != '>'))
                return bs_cli_usage_error(CMD, "bad --pid '%s' (a pid looks like <0.123.0>)", optarg);
            if (bs_job_add_target(&a->job, optarg) < 0)
                return bs_cli_usage_error(CMD, "too many targets");
            break;
        case OPT_ALL:
            if ((rc = set_targets_kind(a, BS_TARGET_ALL, "--all")))
                return rc;
            break;
        case OPT_INTERVAL:
            if (bs_cli_duration_option(CMD, "--interval", optarg, 1, 60000, "e.g. 5ms, 100ms", &v))
                return BS_EXIT_USAGE;
            a->job.interval_ms = (unsigned)v;
            break;
        case OPT_PER_NODE:
            a->per_node = 1;
            break;
        case OPT_CHILDREN:
            a->job.children = 1;
            break;
        case OPT_PROGRESS:
            a->progress = 1;
            break;
        case OPT_NO_PROGRESS:
            a->progress = 0;
            break;
        case OPT_TIMINGS:
            a->timings = 1;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_remote_option(CMD, c, optarg, &a->remote, BS_REMOTE_MAX_NODES);
            if (rc < 0)
                rc = bs_job_option(CMD, c, optarg, &a->job, &a->render);
            if (rc < 0)
                rc = bs_job_function_option(CMD, c, optarg, &a->job);
            if (rc < 0)
                rc = bs_cli_shared_option(CMD, c, optarg, &a->render);
            if (rc != 0)
                return rc < 0 ? bs_cli_getopt_error(CMD, '?', argv) : rc;
        }
    }
    if (optind < argc)
        return bs_cli_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    return -1;
}

static int check_args(const record_args *a)
{
    if (!bs_cluster_any_node(&a->remote))
        return bs_cli_usage_error(CMD, "no node: give --node NAME or --cluster NODE");
    if (a->job.target_kind == BS_TARGET_NONE)
        return bs_cli_usage_error(CMD, "nothing to record: give --pid, --name, --all or --function");
    if (a->job.target_kind == BS_TARGET_FUNCTION && a->job.sample)
        return bs_cli_usage_error(CMD, "--function records calls exactly: it cannot be combined with --mode sample");
    if (a->job.cpu && a->job.target_kind == BS_TARGET_FUNCTION)
        return bs_cli_usage_error(CMD, "--function records calls exactly: it cannot be combined with --mode cpu");
    if (a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE");
    for (int i = 0; i < a->n_outputs; i++)
        if (bs_format_from_path(a->outputs[i]) == BS_FORMAT_UNKNOWN)
            return bs_cli_usage_error(CMD, "cannot tell the format of '%s' from its extension", a->outputs[i]);
    return BS_EXIT_OK;
}

/* Sleeps up to ms with the stop signals let through. */
static void wait_a_little(long long ms, const sigset_t *waiting_mask)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    pselect(0, NULL, NULL, NULL, &ts, waiting_mask);
}

/* Appends " word" to buf (quoted when it holds a blank or a quote); n is
 * what buf holds, kept at most cap. */
static size_t add_word(char *buf, size_t cap, size_t n, const char *word)
{
    if (n >= cap)
        return n;
    int blank = strpbrk(word, " \t\n'\"") != NULL;
    n += (size_t)snprintf(buf + n, cap - n, blank ? " '%s'" : " %s", word);
    return n < cap ? n : cap;
}

/* What the outputs say was recorded and how: the command as the user gave
 * it (nodes and targets), and this tool's options with show_idle as drawn;
 * not the VM's session (beamspy:start(all), the node's working directory,
 * the job's own pids left out, show_idle => true because this tool leaves
 * idle time out, the node's safety deadline for max_duration). */
static void describe_record(const record_args *a, bs_profile_meta *m)
{
    const bs_job_spec *j = &a->job;
    size_t cap = sizeof m->source, n = (size_t)snprintf(m->source, cap, "beamspy record");
    for (int i = 0; i < a->remote.n_nodes; i++) {
        n = add_word(m->source, cap, n, "--node");
        n = add_word(m->source, cap, n, a->remote.nodes[i]);
    }
    if (j->target_kind == BS_TARGET_ALL)
        n = add_word(m->source, cap, n, "--all");
    for (int i = 0; j->target_kind == BS_TARGET_LIST && i < j->n_targets; i++) {
        n = add_word(m->source, cap, n, j->targets[i][0] == '<' ? "--pid" : "--name");
        n = add_word(m->source, cap, n, j->targets[i]);
    }
    if (j->target_kind == BS_TARGET_FUNCTION) {
        bs_function_arg f = {.arity = j->arity};
        char name[600], calls[32];
        snprintf(f.module, sizeof f.module, "%s", j->module);
        snprintf(f.function, sizeof f.function, "%s", j->function);
        bs_function_arg_name(name, sizeof name, &f);
        snprintf(calls, sizeof calls, "%u", j->calls);
        n = add_word(m->source, cap, n, "--function");
        n = add_word(m->source, cap, n, name);
        n = add_word(m->source, cap, n, "--calls");
        n = add_word(m->source, cap, n, calls);
    }
    if (j->sample || j->cpu) {
        n = add_word(m->source, cap, n, "--mode");
        n = add_word(m->source, cap, n, j->sample ? "sample" : "cpu");
    }
    if (n >= cap) /* cut: say so */
        memcpy(m->source + cap - 4, "...", 4);

    /* At most about 300 bytes (every number at its widest): options holds 512. */
    char *o = m->options;
    size_t ocap = sizeof m->options, k = 0;
    k += (size_t)snprintf(o + k, ocap - k, "#{mode => %s", j->sample ? "sample" : j->cpu ? "cpu" : "trace");
    if (j->cpu && j->cpu_hz)
        k += (size_t)snprintf(o + k, ocap - k, ", cpu_hz => %u", j->cpu_hz);
    if (!j->cpu && !j->sample && j->times)
        k += (size_t)snprintf(o + k, ocap - k, ", times => %s", j->times);
    if (j->sample && j->interval_ms)
        k += (size_t)snprintf(o + k, ocap - k, ", interval => %u", j->interval_ms);
    k += (size_t)snprintf(o + k, ocap - k, ", max_duration => %llu", j->duration_ms);
    if (!j->sample) {
        k += (size_t)snprintf(o + k, ocap - k, ", gc => %s, sleep => %s, compensate => %s, children => %s",
                              j->gc ? "true" : "false", j->no_sleep ? "false" : "true",
                              j->no_compensate ? "false" : "true", j->children ? "true" : "false");
        k = bs_job_limits_text(j, o, ocap, k);
    }
    k += (size_t)snprintf(o + k, ocap - k, ", names => %s", j->elixir > 0 ? "elixir" : "erlang");
    if (j->target_kind == BS_TARGET_ALL) /* whole-VM views only */
        snprintf(o + k, ocap - k, ", show_idle => %s", j->show_idle ? "true" : "false");
    k = strlen(o);
    snprintf(o + k, ocap - k, "}");
}

static int write_profile(const record_args *a, const bs_profile *p, const char *node)
{
    bs_render_opts o = a->render;
    bs_job_say_cpu_samples(&a->job, p, node);
    bs_profile shown = *p; /* the same trees, described as the user asked for them */
    describe_record(a, &shown.meta);
    if (a->job.target_kind == BS_TARGET_ALL)
        bs_job_whole_vm_view(&a->job, &shown, &o);
    return bs_cli_write_outputs(a->outputs, a->n_outputs, BS_FORMAT_UNKNOWN, &shown, &o, node, 1, a->open);
}

/* One line, rewritten in place: elapsed time, events, memory on the node,
 * the limit closest to tripping; with several nodes, how many are
 * attached, recording and fetched. */
static void show_progress(const bs_job_group *g, long long elapsed, unsigned long long duration)
{
    char line[512];
    unsigned long long events = 0, memory = 0, samples = 0;
    int best_permille = -1, n = g->n;
    const char *best_limit = "";
    for (int i = 0; i < n; i++) {
        const bs_job *j = &g->jobs[i];
        events += j->progress.events;
        memory += j->progress.memory;
        samples += j->progress.samples;
        if (j->progress.limit_permille > best_permille) {
            best_permille = j->progress.limit_permille;
            best_limit = j->progress.limit_name;
        }
    }
    int w = n == 1 ? snprintf(line, sizeof line, "recording 1 node: %.1f s of %.1f s", (double)elapsed / 1000,
                              (double)duration / 1000)
                   : snprintf(line, sizeof line, "%d nodes: %d attached, %d recording, %d fetched: %.1f s of %.1f s",
                              n, g->attached, g->recording, g->fetched, (double)elapsed / 1000,
                              (double)duration / 1000);
    if (g->jobs[0].spec && g->jobs[0].spec->sample)
        w += snprintf(line + w, sizeof line - (size_t)w, ", %llu samples", samples);
    else
        w += snprintf(line + w, sizeof line - (size_t)w, ", %llu events, %.1f MiB on the node%s", events,
                      (double)memory / (1024.0 * 1024.0), n == 1 ? "" : "s");
    if (best_permille >= 0 && best_limit[0])
        snprintf(line + w, sizeof line - (size_t)w, ", nearest limit %s %d%%", best_limit, best_permille / 10);
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
}

static int show_progress_line(const record_args *a)
{
    return a->progress == 1 || (a->progress == -1 && isatty(STDERR_FILENO));
}

/* Polls until the duration is over, every job is done or a stop signal
 * came; a node lost meanwhile is said and left out (job_group). */
static void watch_jobs(const record_args *a, bs_job_group *g, const sigset_t *waiting_mask)
{
    long long t0 = bs_now_ms();
    unsigned long long duration = a->job.duration_ms;
    int show = show_progress_line(a);
    for (;;) {
        long long elapsed = bs_now_ms() - t0;
        if (bs_stop_requested() || (unsigned long long)elapsed >= duration)
            break;
        long long left = (long long)duration - elapsed;
        wait_a_little(left < POLL_MS ? left : POLL_MS, waiting_mask);
        int running = bs_job_group_poll(g, POLL_MS);
        if (show)
            show_progress(g, bs_now_ms() - t0, duration);
        if (running == 0)
            break;
    }
    if (show)
        fputs("\n", stderr);
    if (bs_stop_requested())
        fputs("beamspy: stopping (Ctrl-C): writing what was recorded\n", stderr);
}

/* What becomes of each node's profile as it arrives: written (one node,
 * --per-node) or merged under a root frame named after the node, then
 * freed at once, so the tool holds the merged profile and one node's. */
typedef struct arrivals {
    const record_args *a;
    bs_job_group *g;
    bs_profile all;
    int merged, any, rc;
} arrivals;

static int arrived(void *ctx, int i, bs_profile *p)
{
    arrivals *r = ctx;
    int rc = BS_EXIT_OK;
    r->any = 1;
    if (r->g->n == 1 || r->a->per_node) {
        rc = write_profile(r->a, p, r->g->n == 1 ? NULL : r->g->nodes[i].node.name);
    } else if (bs_profile_add_under(&r->all, p, r->g->nodes[i].node.name) < 0) {
        bs_cli_error("out of memory");
        rc = BS_EXIT_FAILURE;
    } else {
        r->merged++;
    }
    bs_profile_free(p);
    if (rc != BS_EXIT_OK && r->rc == BS_EXIT_OK)
        r->rc = rc;
    return rc;
}

/* Why node i was left out, in a few words. */
static const char *left_out_reason(int code, const bs_node *node)
{
    if (node->job_ended)
        return "its job ended by itself, unheard within its lease";
    switch (code) {
    case BS_EXIT_NODE_NOT_FOUND:
        return "not found";
    case BS_EXIT_NODE_REFUSED:
        return "refused the connection";
    case BS_EXIT_COOKIE_REJECTED:
        return "rejected the cookie";
    case BS_EXIT_NODE_INCOMPATIBLE:
        return "cannot run beamspy";
    case BS_EXIT_TIMEOUT:
        return "did not answer in time";
    case BS_EXIT_CONNECTION_LOST:
        return "connection lost";
    default:
        return "failed";
    }
}

/* Several nodes, some left out: one line naming them; the exit code. */
static int say_left_out(const record_args *a, const bs_job_group *g, int fetched)
{
    int first = 0, lost = 0;
    for (int i = 0; i < g->n; i++)
        if (g->out_code[i]) {
            lost++;
            if (!first)
                first = g->out_code[i];
        }
    if (lost == 0)
        return BS_EXIT_OK;
    if (g->n == 1)
        return first;
    char line[2048];
    size_t w = (size_t)snprintf(line, sizeof line, "beamspy: %d of %d nodes recorded; left out:", fetched, g->n);
    for (int i = 0, k = 0; i < g->n && w < sizeof line; i++)
        if (g->out_code[i])
            w += (size_t)snprintf(line + w, sizeof line - w, "%s %s (%s, exit %d)", k++ ? "," : "",
                                  g->nodes[i].node.name, left_out_reason(g->out_code[i], &g->nodes[i].node), g->out_code[i]);
    if (w >= sizeof line)
        memcpy(line + sizeof line - 4, "...", 4);
    fprintf(stderr, "%s\n", line);
    if (fetched == 0)
        return first;
    return a->job.strict ? first : BS_EXIT_PARTIAL;
}

/* The merged profile's nodes in the order they were named (they were
 * merged in the order they answered, which changes from run to run). */
static void order_nodes(bs_profile *all, const bs_remote *nodes, int n)
{
    const char **labels = calloc((size_t)n, sizeof *labels);
    if (labels) {
        for (int i = 0; i < n; i++)
            labels[i] = nodes[i].node.name;
    }
    if (!labels || bs_profile_order_roots(all, labels, (size_t)n) < 0)
        bs_cli_error("warning: out of memory: the nodes are in the order they answered");
    free(labels);
}

/* A cluster's nodes share one node's timeline: traced over n nodes, each
 * keeps the first BS_DEFAULT_TIMELINE_CALLS / n calls in time order
 * unless --timeline says how many. The timeline is what makes a node's
 * profile large (a busy node fills a million calls, about 16 MB, in a few
 * seconds), and the merged profile holds every node's: shared, the tool's
 * memory and the bytes fetched stay those of one node however many nodes
 * there are, while the flame graphs, tables and call counts stay whole.
 * Said on stderr. */
static void share_timeline(bs_job_spec *s, int n)
{
    if (n < 2 || s->timeline >= 0 || s->sample || s->cpu || s->top)
        return;
    s->timeline = BS_DEFAULT_TIMELINE_CALLS / n;
    fprintf(stderr,
            "beamspy: %d nodes: each keeps a timeline of its first %lld calls in time order (one node's %d "
            "shared; --timeline N for N per node); flame graphs, tables and counts are whole\n",
            n, s->timeline, BS_DEFAULT_TIMELINE_CALLS);
}

static int record(record_args *a)
{
    int n = a->remote.n_nodes;
    bs_remote *nodes = calloc((size_t)n, sizeof *nodes);
    bs_job *jobs = calloc((size_t)n, sizeof *jobs);
    bs_job_group g;
    if (!nodes || !jobs || bs_job_group_init(&g, jobs, nodes, n) < 0) {
        free(nodes), free(jobs);
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    bs_stop_signals signals;
    bs_stop_signals_catch(&signals);

    /* Every node attached (and its code delivered: several at once, see
     * nodes_at_once.h) before any recording starts, so the nodes record the
     * same stretch of time; a node that cannot be attached is left out (one
     * node: the run ends there). */
    for (int i = 0; i < n; i++)
        nodes[i].node.fd = -1; /* not connected: nothing to detach */
    int first = -1;
    long long attach_t0 = bs_now_ms();
    bs_attach_all(&a->remote, nodes, n, g.waiting); /* waiting: scratch until the start */
    for (int i = 0; i < n; i++) {
        int rc = g.waiting[i];
        g.waiting[i] = 0;
        if (rc != BS_EXIT_OK) {
            snprintf(nodes[i].node.name, sizeof nodes[i].node.name, "%s", a->remote.nodes[i]);
            bs_job_group_drop(&g, i, rc);
            continue;
        }
        g.attached++;
        if (first < 0)
            first = i;
    }
    long long attach_ms = bs_now_ms() - attach_t0;
    arrivals r = {.a = a, .g = &g, .rc = BS_EXIT_OK};
    if (bs_profile_init(&r.all) < 0) {
        bs_cli_error("out of memory");
        r.rc = BS_EXIT_FAILURE;
    } else if (first >= 0) {
        bs_remote_choose_names(&nodes[first], &a->job.elixir);
        share_timeline(&a->job, g.attached);
        if (bs_job_group_start(&g, &a->job, POLL_MS) > 0)
            watch_jobs(a, &g, &signals.waiting_mask);
        long long stop_ms = bs_now_ms();
        bs_job_group_finish(&g, FINISH_TIMEOUT_MS, arrived, &r);
        if (r.merged > 0 && r.rc == BS_EXIT_OK) {
            order_nodes(&r.all, nodes, n);
            bs_tick_keeper keeper;
            bs_tick_keeper_start(&keeper, nodes, n);
            r.rc = write_profile(a, &r.all, NULL);
            bs_tick_keeper_stop(&keeper);
        }
        if (n > 1 || a->timings)
            bs_job_group_say_spread(&g, attach_ms, bs_now_ms() - stop_ms);
    }
    bs_profile_free(&r.all);
    bs_detach_all(nodes, n); /* beamspy's code removed from every node, several at once */
    int rc = say_left_out(a, &g, g.fetched);
    if (r.rc != BS_EXIT_OK)
        rc = r.rc;
    /* After "wrote FILE": the last lines say the files are not the whole
     * duration asked for, and why. */
    int stopped_early = 0;
    for (int i = 0; i < n; i++)
        if (bs_job_group_in(&g, i) && jobs[i].early_stop.limit[0]) {
            bs_early_stop_report(&jobs[i].early_stop, n == 1 ? NULL : nodes[i].node.name);
            stopped_early = 1;
        }
    if (stopped_early && a->job.strict && rc == BS_EXIT_OK)
        rc = BS_EXIT_STOPPED_EARLY;
    for (int i = 0; i < n; i++)
        bs_job_free(&jobs[i]);
    bs_job_group_free(&g);
    free(nodes), free(jobs);
    bs_stop_signals_restore(&signals);
    return rc;
}

int bs_cmd_record(int argc, char **argv)
{
    record_args a;
    memset(&a, 0, sizeof a);
    bs_remote_opts_init(&a.remote);
    bs_job_spec_init(&a.job);
    a.progress = -1;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = check_args(&a)) == BS_EXIT_OK &&
        (rc = bs_cluster_find(CMD, &a.remote, BS_REMOTE_MAX_NODES)) == BS_EXIT_OK) {
        if (a.job.duration_ms == 0)
            a.job.duration_ms = BS_DEFAULT_RECORD_DURATION_MS;
        rc = record(&a);
    }
    free(a.outputs);
    bs_job_spec_free(&a.job);
    return rc;
}
