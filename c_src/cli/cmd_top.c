/* cmd_top.c — `beamspy top --node N`: a live view, refreshed every second,
 * of the processes of a node (or of several: --node repeated, --cluster)
 * doing the most reductions and the functions
 * they run (sampled on the node by beamspy_top: a full pass over the
 * processes per refresh, and the current function of the busiest few every
 * --interval, so the overhead stays small). The node's hottest functions
 * come from CPU samples of every process (a mode cpu session, ended with
 * top) when the node runs with +JPperf true, else from those samples of the
 * busiest processes, and the screen says which and why.
 *
 * On a terminal the screen is redrawn in place (ANSI home + clear, which
 * tmux and every terminal emulator understand) and fitted to its width;
 * otherwise each refresh is printed as plain text, one screen after the
 * other. --once prints one screen and exits. With several nodes there is
 * one job per node and one screen for them all: the processes of every node
 * in one list sorted by reductions/s with the node in each row, and the
 * hottest functions as shares of all the nodes' samples. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "defaults.h"
#include "dump_names.h"
#include "job.h"
#include "cluster.h"
#include "nodes_at_once.h"
#include "remote.h"
#include "term_frame.h"

#define CMD "top"

enum {
    OPT_ONCE = BS_OPT_REMOTE_FIRST_OWN,
    OPT_INTERVAL,
    OPT_REFRESH,
    OPT_LIMIT,
    OPT_COUNT,
    OPT_ELIXIR,
    OPT_ERLANG,
    OPT_NO_CPU,
    OPT_HZ
};

typedef struct top_args {
    bs_remote_opts remote;
    bs_job_spec job;
    unsigned long long refresh_ms;
    unsigned long long screens; /* 0: until Ctrl-C */
    bs_name_style style;        /* how functions and names are spelled */
} top_args;

void bs_cmd_top_usage(FILE *out)
{
    fputs("usage: beamspy top {--node NAME [--node NAME...] | --cluster NODE} [--once] [options]\n"
          "\n"
          "A live view of the processes of a running node doing the most work\n"
          "(reductions per second), with their message queue, memory and the\n"
          "functions they were seen running, and the hottest functions of the node.\n"
          "A process's functions come from sampling the busiest processes, so the\n"
          "view costs the node little. The hottest functions come from CPU samples\n"
          "of every process when the node runs with +JPperf true (a BIF's time goes\n"
          "to the function that called it; the schedulers' own samples are not\n"
          "counted), else from those samples of the busiest processes, and the\n"
          "screen says why. With several nodes (--node repeated, --cluster) the\n"
          "processes of all of them are in one list, sorted by reductions/s, the\n"
          "node first in each row, and the hottest functions are shares of the\n"
          "samples of all the nodes, each with its node. Ctrl-C quits.\n"
          "\n"
          "connection:\n",
          out);
    bs_remote_options_usage(out, 1);
    fputs("\n"
          "options:\n"
          "  --once              print one screen (after one refresh period) and exit\n"
          "  --count N           print N screens and exit\n"
          "  --refresh T         time between screens (default 1s)\n"
          "  --interval T        sampling period on the node (default 100ms)\n"
          "  --limit N           processes listed (default 20)\n"
          "  --hz N              CPU samples a second of each busy thread (default 199)\n"
          "  --no-cpu            hottest functions from sampling the busiest processes,\n"
          "                      even when the node can take CPU samples\n"
          "  --elixir, --erlang  names spelled MyApp.Server, Mod.fun/2 or mod:fun/2\n"
          "                      (default: as the node runs)\n"
          "  -h, --help          this text\n"
          "\n"
          "On a terminal the screen is redrawn in place; otherwise (a pipe, a file)\n"
          "every screen is printed as plain text.\n"
          "\n"
          "examples:\n"
          "  beamspy top --node app@host\n"
          "  beamspy top --node app@host --once --limit 5\n"
          "  beamspy top --cluster app@host\n"
          "\n",
          out);
    bs_cli_exit_codes_usage(out);
}

static int parse_args(int argc, char **argv, top_args *a)
{
    static const struct option longopts[] = {
        {"once", no_argument, NULL, OPT_ONCE},
        {"count", required_argument, NULL, OPT_COUNT},
        {"refresh", required_argument, NULL, OPT_REFRESH},
        {"interval", required_argument, NULL, OPT_INTERVAL},
        {"limit", required_argument, NULL, OPT_LIMIT},
        {"elixir", no_argument, NULL, OPT_ELIXIR},
        {"erlang", no_argument, NULL, OPT_ERLANG},
        {"no-cpu", no_argument, NULL, OPT_NO_CPU},
        {"hz", required_argument, NULL, OPT_HZ},
        {"help", no_argument, NULL, 'h'},
        BS_REMOTE_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    char *end;
    unsigned long long v;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bs_cmd_top_usage(stdout);
            return BS_EXIT_OK;
        case OPT_ONCE:
            a->screens = 1;
            break;
        case OPT_NO_CPU:
            a->job.no_cpu = 1;
            break;
        case OPT_HZ:
            errno = 0;
            v = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] < '1' || optarg[0] > '9' || v > 10000)
                return bs_cli_usage_error(CMD, "bad --hz '%s' (1 to 10000)", optarg);
            a->job.cpu_hz = (unsigned)v;
            break;
        case OPT_ELIXIR:
        case OPT_ERLANG:
            a->job.elixir = c == OPT_ELIXIR;
            break;
        case OPT_COUNT:
        case OPT_LIMIT:
            errno = 0;
            v = strtoull(optarg, &end, 10);
            if (errno || *end || optarg[0] < '1' || optarg[0] > '9' || v > 100000)
                return bs_cli_usage_error(CMD, "bad %s '%s' (a positive number)", c == OPT_COUNT ? "--count" : "--limit",
                                          optarg);
            if (c == OPT_COUNT)
                a->screens = v;
            else
                a->job.limit = (unsigned)v;
            break;
        case OPT_REFRESH:
            if (bs_cli_duration_option(CMD, "--refresh", optarg, 100, 600000, "100ms to 10m", &a->refresh_ms))
                return BS_EXIT_USAGE;
            break;
        case OPT_INTERVAL:
            if (bs_cli_duration_option(CMD, "--interval", optarg, 1, 60000, "e.g. 50ms", &v))
                return BS_EXIT_USAGE;
            a->job.interval_ms = (unsigned)v;
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

static volatile sig_atomic_t quit_requested;

static void on_quit(int sig)
{
    (void)sig;
    quit_requested = 1;
}

/* "fun/1 80%, other/2 20%" of a [{MFA, Samples}] list, shares of total. */
static void functions_text(const bs_eterm *list, long long total, bs_name_style style, char *buf, size_t size)
{
    char name[512];
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < bs_eterm_size(list) && used + 1 < size; i++) {
        const bs_eterm *pair = bs_eterm_item(list, i);
        int ok = 0;
        long long n = bs_eterm_int(bs_eterm_item(pair, 1), &ok);
        if (!ok)
            continue;
        bs_term_frame(bs_eterm_item(pair, 0), style, name, sizeof name);
        int w = snprintf(buf + used, size - used, "%s%s %lld%%", used ? ", " : "", name,
                         total > 0 ? n * 100 / total : 0);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    if (used >= size && size > 4)
        strcpy(buf + size - 4, "...");
}

/* What a process was seen running (shares of its samples), else its
 * current function. */
static void process_functions(const bs_eterm *p, bs_name_style style, char *buf, size_t size)
{
    const bs_eterm *fl = bs_eterm_map_get(p, "functions");
    long long total = 0;
    for (size_t k = 0; k < bs_eterm_size(fl); k++) {
        int ok;
        total += bs_eterm_int(bs_eterm_item(bs_eterm_item(fl, k), 1), &ok);
    }
    functions_text(fl, total, style, buf, size);
    if (!buf[0])
        bs_term_frame(bs_eterm_map_get(p, "current"), style, buf, size);
}

/* Prints s cut to width columns (bytes: names are mostly ASCII). */
static void put_cut(FILE *out, const char *s, int width)
{
    int n = (int)strlen(s);
    if (width > 0 && n > width)
        fprintf(out, "%.*s\n", width, s);
    else
        fprintf(out, "%s\n", s);
}

/* A new screen: cleared on a terminal; clock gets the local time (HH:MM:SS). */
static void begin_screen(FILE *out, int on_terminal, char clock[16])
{
    time_t now = time(NULL);
    struct tm tm;
    clock[0] = '\0';
    if (localtime_r(&now, &tm))
        strftime(clock, 16, "%H:%M:%S", &tm);
    if (on_terminal)
        fputs("\033[H\033[2J", out);
}

static void draw(FILE *out, const char *node, const bs_eterm *report, bs_name_style style, int on_terminal,
                 int width)
{
    char line[4096], mem[32], funcs[2048], name[512], reg[256];
    long long window = bs_term_int(report, "window_ms");
    double per_s = window > 0 ? 1000.0 / (double)window : 1.0;
    char clock[16];
    begin_screen(out, on_terminal, clock);
    /* Every sample taken, and those that found a process running (what the
     * hottest functions are shares of). */
    snprintf(line, sizeof line,
             "beamspy top  %s  %s  %lld processes, run queue %lld, %.0f reductions/s, %lld samples (%lld running)",
             node, clock, bs_term_int(report, "process_count"), bs_term_int(report, "run_queue"),
             (double)bs_term_int(report, "total_reductions") * per_s, bs_term_int(report, "samples_taken"),
             bs_term_int(report, "samples"));
    put_cut(out, line, width);
    fputc('\n', out);
    snprintf(line, sizeof line, "%-14s %-24s %12s %7s %8s  %s", "PID", "NAME", "REDUCTIONS/s", "MSGQ", "MEMORY",
             "RUNNING (share of samples)");
    put_cut(out, line, width);
    const bs_eterm *procs = bs_eterm_map_get(report, "processes");
    for (size_t i = 0; i < bs_eterm_size(procs); i++) {
        const bs_eterm *p = bs_eterm_item(procs, i);
        process_functions(p, style, funcs, sizeof funcs);
        bs_human_bytes(bs_term_int(p, "memory"), 1, mem, sizeof mem);
        snprintf(line, sizeof line, "%-14s %-24.24s %12.0f %7lld %8s  %s", bs_term_text(p, "pid"),
                 bs_dump_name(bs_term_text(p, "name"), style == BS_NAMES_ELIXIR, reg, sizeof reg),
                 (double)bs_term_int(p, "reductions") * per_s, bs_term_int(p, "message_queue_len"), mem, funcs);
        put_cut(out, line, width);
    }
    const bs_eterm *hot = bs_eterm_map_get(report, "functions");
    const char *source = bs_term_text(report, "hot");
    int cpu = source && strcmp(source, "cpu") == 0;
    long long samples = cpu ? bs_term_int(report, "cpu_samples") : bs_term_int(report, "samples");
    fputc('\n', out);
    if (cpu) {
        snprintf(line, sizeof line,
                 "hot functions: CPU samples at %lld Hz, %lld of processes (%lld of the schedulers' own not counted)",
                 bs_term_int(report, "cpu_hz"), samples, bs_term_int(report, "cpu_scheduler"));
        put_cut(out, line, width);
    } else {
        const char *why = bs_term_text(report, "hot_why");
        snprintf(line, sizeof line, "hot functions: share of running samples (not CPU samples: %s)",
                 why && why[0] ? why : "the node did not say why");
        put_cut(out, line, width);
    }
    if (bs_eterm_size(hot)) {
        for (size_t i = 0; i < bs_eterm_size(hot) && i < 10; i++) {
            const bs_eterm *pair = bs_eterm_item(hot, i);
            int ok = 0;
            long long n = bs_eterm_int(bs_eterm_item(pair, 1), &ok);
            snprintf(line, sizeof line, "%5.1f%%  %s", samples > 0 ? 100.0 * (double)n / (double)samples : 0.0,
                     bs_term_frame(bs_eterm_item(pair, 0), style, name, sizeof name));
            put_cut(out, line, width);
        }
    }
    if (!on_terminal)
        fputc('\n', out);
    fflush(out);
}

/* Longest node name shown whole in the NODE column. */
#define NODE_COLUMN_MAX 40

/* One process row, or one hot function, of the screen of several nodes. */
typedef struct top_row {
    int node;
    const bs_eterm *term; /* the process's map, or the function's {MFA, Samples} */
    double value;         /* reductions/s, or samples */
} top_row;

static int by_value_desc(const void *a, const void *b)
{
    double x = ((const top_row *)a)->value, y = ((const top_row *)b)->value;
    return x < y ? 1 : x > y ? -1 : 0;
}

static long long node_samples(const bs_eterm *report, int *cpu)
{
    const char *source = bs_term_text(report, "hot");
    *cpu = source && strcmp(source, "cpu") == 0;
    return *cpu ? bs_term_int(report, "cpu_samples") : bs_term_int(report, "samples");
}

static const char *first_why(const bs_eterm *const *reports, int n);

/* The screen of several nodes: reports[i] is node i's (NULL when it had no
 * figures for this window). rows: room for every process and function of
 * the reports. */
static void draw_cluster(FILE *out, const bs_remote *nodes, const bs_eterm *const *reports, int n,
                         unsigned limit, bs_name_style style, int on_terminal, int width, top_row *rows)
{
    char line[4096], mem[32], funcs[2048], name[512], reg[256];
    char clock[16];
    begin_screen(out, on_terminal, clock);
    long long processes = 0, run_queue = 0, taken = 0, running = 0, all_samples = 0, cpu_hz = 0, scheduler = 0;
    double reductions = 0;
    int reported = 0, n_cpu = 0, node_w = 4;
    size_t n_rows = 0;
    for (int i = 0; i < n; i++) {
        const bs_eterm *r = reports[i];
        if (!r)
            continue;
        reported++;
        long long window = bs_term_int(r, "window_ms");
        double per_s = window > 0 ? 1000.0 / (double)window : 1.0;
        processes += bs_term_int(r, "process_count");
        run_queue += bs_term_int(r, "run_queue");
        reductions += (double)bs_term_int(r, "total_reductions") * per_s;
        taken += bs_term_int(r, "samples_taken");
        running += bs_term_int(r, "samples");
        int cpu;
        all_samples += node_samples(r, &cpu);
        if (cpu) {
            n_cpu++;
            cpu_hz = bs_term_int(r, "cpu_hz");
            scheduler += bs_term_int(r, "cpu_scheduler");
        }
        int w = (int)strlen(nodes[i].node.name);
        if (w > node_w)
            node_w = w < NODE_COLUMN_MAX ? w : NODE_COLUMN_MAX;
        const bs_eterm *procs = bs_eterm_map_get(r, "processes");
        for (size_t k = 0; k < bs_eterm_size(procs); k++)
            rows[n_rows++] = (top_row){i, bs_eterm_item(procs, k),
                                       (double)bs_term_int(bs_eterm_item(procs, k), "reductions") * per_s};
    }
    snprintf(line, sizeof line,
             "beamspy top  %d nodes  %s  %lld processes, run queue %lld, %.0f reductions/s, %lld samples "
             "(%lld running)%s",
             n, clock, processes, run_queue, reductions, taken, running,
             reported < n ? "; some nodes had no figures for this window" : "");
    put_cut(out, line, width);
    fputc('\n', out);
    snprintf(line, sizeof line, "%-*s %-14s %-24s %12s %7s %8s  %s", node_w, "NODE", "PID", "NAME", "REDUCTIONS/s",
             "MSGQ", "MEMORY", "RUNNING (share of samples)");
    put_cut(out, line, width);
    qsort(rows, n_rows, sizeof *rows, by_value_desc);
    for (size_t i = 0; i < n_rows && i < limit; i++) {
        const bs_eterm *p = rows[i].term;
        process_functions(p, style, funcs, sizeof funcs);
        bs_human_bytes(bs_term_int(p, "memory"), 1, mem, sizeof mem);
        snprintf(line, sizeof line, "%-*.*s %-14s %-24.24s %12.0f %7lld %8s  %s", node_w, NODE_COLUMN_MAX,
                 nodes[rows[i].node].node.name, bs_term_text(p, "pid"),
                 bs_dump_name(bs_term_text(p, "name"), style == BS_NAMES_ELIXIR, reg, sizeof reg), rows[i].value,
                 bs_term_int(p, "message_queue_len"), mem, funcs);
        put_cut(out, line, width);
    }
    fputc('\n', out);
    if (n_cpu == reported && reported > 0)
        snprintf(line, sizeof line,
                 "hot functions of all nodes: CPU samples at %lld Hz, %lld of processes (%lld of the schedulers' "
                 "own not counted)", cpu_hz, all_samples, scheduler);
    else if (n_cpu == 0)
        snprintf(line, sizeof line, "hot functions of all nodes: share of running samples (not CPU samples: %s)",
                 first_why(reports, n));
    else
        snprintf(line, sizeof line,
                 "hot functions of all nodes: share of their samples, CPU samples on %d nodes and running samples "
                 "on %d (those without +JPperf true)", n_cpu, reported - n_cpu);
    put_cut(out, line, width);
    size_t n_hot = 0;
    for (int i = 0; i < n; i++) {
        const bs_eterm *hot = reports[i] ? bs_eterm_map_get(reports[i], "functions") : NULL;
        for (size_t k = 0; k < bs_eterm_size(hot); k++) {
            int ok = 0;
            long long v = bs_eterm_int(bs_eterm_item(bs_eterm_item(hot, k), 1), &ok);
            rows[n_hot++] = (top_row){i, bs_eterm_item(hot, k), ok ? (double)v : 0};
        }
    }
    qsort(rows, n_hot, sizeof *rows, by_value_desc);
    for (size_t i = 0; i < n_hot && i < 10; i++) {
        snprintf(line, sizeof line, "%5.1f%%  %-*.*s  %s",
                 all_samples > 0 ? 100.0 * rows[i].value / (double)all_samples : 0.0, node_w, NODE_COLUMN_MAX,
                 nodes[rows[i].node].node.name, bs_term_frame(bs_eterm_item(rows[i].term, 0), style, name, sizeof name));
        put_cut(out, line, width);
    }
    if (!on_terminal)
        fputc('\n', out);
    fflush(out);
}

/* The first reporting node's reason for not taking CPU samples. */
static const char *first_why(const bs_eterm *const *reports, int n)
{
    for (int i = 0; i < n; i++) {
        const char *why = reports[i] ? bs_term_text(reports[i], "hot_why") : "";
        if (why[0])
            return why;
    }
    return "the nodes did not say why";
}

/* Room for every process and hot function of the reports. */
static size_t rows_needed(const bs_eterm *const *reports, int n)
{
    size_t need = 0;
    for (int i = 0; i < n; i++)
        if (reports[i]) {
            size_t procs = bs_eterm_size(bs_eterm_map_get(reports[i], "processes"));
            size_t hot = bs_eterm_size(bs_eterm_map_get(reports[i], "functions"));
            need += procs > hot ? procs : hot;
        }
    return need;
}

static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20)
        return ws.ws_col;
    return 0;
}

static int top(top_args *a)
{
    int n = a->remote.n_nodes;
    bs_remote *nodes = calloc((size_t)n, sizeof *nodes);
    bs_job *jobs = calloc((size_t)n, sizeof *jobs);
    const bs_eterm **reports = calloc((size_t)n, sizeof *reports);
    top_row *rows = NULL;
    if (!nodes || !jobs || !reports) {
        free(nodes), free(jobs), free(reports);
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    int rc = BS_EXIT_OK;
    for (int i = 0; i < n; i++)
        nodes[i].node.fd = -1; /* not connected: nothing to detach */
    for (int i = 0; i < n && rc == BS_EXIT_OK; i++)
        rc = bs_remote_attach(&a->remote, i, &nodes[i]);
    if (rc == BS_EXIT_OK) {
        bs_remote_choose_names(&nodes[0], &a->job.elixir);
        a->style = a->job.elixir ? BS_NAMES_ELIXIR : BS_NAMES_ERLANG;
    }
    sigset_t quit_signals, waiting_mask;
    sigemptyset(&quit_signals);
    sigaddset(&quit_signals, SIGINT);
    sigaddset(&quit_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &quit_signals, &waiting_mask);
    sigdelset(&waiting_mask, SIGINT);
    sigdelset(&waiting_mask, SIGTERM);
    struct sigaction sa = {.sa_handler = on_quit}, old_int, old_term;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    quit_requested = 0;

    a->job.duration_ms = 0;
    for (int i = 0; i < n && rc == BS_EXIT_OK; i++)
        rc = bs_job_start(&jobs[i], &nodes[i], &a->job);
    int on_terminal = isatty(STDOUT_FILENO);
    unsigned limit = a->job.limit ? a->job.limit : BS_DEFAULT_TOP_LIMIT;
    size_t rows_cap = 0;
    for (unsigned long long shown = 0; rc == BS_EXIT_OK && !quit_requested && (!a->screens || shown < a->screens);) {
        struct timespec ts = {.tv_sec = (time_t)(a->refresh_ms / 1000),
                              .tv_nsec = (long)(a->refresh_ms % 1000) * 1000000};
        pselect(0, NULL, NULL, NULL, &ts, &waiting_mask);
        if (quit_requested)
            break;
        int any = 0;
        for (int i = 0; i < n && rc == BS_EXIT_OK; i++) {
            rc = bs_job_poll(&jobs[i]);
            const bs_eterm *p = rc == BS_EXIT_OK ? bs_eterm_tagged(bs_eterm_root(jobs[i].last_poll), "ok") : NULL;
            const bs_eterm *report = bs_eterm_map_get(p, "report");
            /* NULL: the node had no figures for this window */
            reports[i] = bs_eterm_kind_of(report) == BS_ET_MAP ? report : NULL;
            any |= reports[i] != NULL;
        }
        if (rc != BS_EXIT_OK)
            break;
        if (!any)
            continue;
        if (n == 1) {
            draw(stdout, nodes[0].node.name, reports[0], a->style, on_terminal, on_terminal ? terminal_width() : 0);
        } else {
            size_t need = rows_needed(reports, n);
            if (need > rows_cap) {
                top_row *more = realloc(rows, need * sizeof *rows);
                if (!more) {
                    bs_cli_error("out of memory");
                    rc = BS_EXIT_FAILURE;
                    break;
                }
                rows = more;
                rows_cap = need;
            }
            draw_cluster(stdout, nodes, reports, n, limit, a->style, on_terminal, on_terminal ? terminal_width() : 0,
                         rows);
        }
        shown++;
    }
    for (int i = 0; i < n; i++) {
        if (jobs[i].started)
            bs_job_stop(&jobs[i]);
        bs_job_free(&jobs[i]);
    }
    bs_detach_all(nodes, n);
    free(nodes), free(jobs), free(reports), free(rows);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigprocmask(SIG_UNBLOCK, &quit_signals, NULL);
    return rc;
}

int bs_cmd_top(int argc, char **argv)
{
    top_args a;
    memset(&a, 0, sizeof a);
    bs_remote_opts_init(&a.remote);
    bs_job_spec_init(&a.job);
    a.job.top = 1;
    a.refresh_ms = BS_DEFAULT_TOP_REFRESH_MS;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = bs_cluster_find(CMD, &a.remote, BS_REMOTE_MAX_NODES)) == BS_EXIT_OK)
        rc = top(&a);
    return rc;
}
