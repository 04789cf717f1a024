/* cmd_run.c — `beamspy run [options] -- COMMAND ARGS...` (or `-e EXPR`):
 * starts an Erlang VM with beamspy available, records every process of it
 * from its start to its exit (or for --duration), and writes the outputs.
 * The way to profile a script, an escript-like run or a test suite.
 *
 * beamspy's modules and NIF (carried inside this tool, payload.h) are
 * written to a private temporary directory, and the VM is started with
 * ERL_AFLAGS="-pa DIR/ebin -eval beamspy_runner:boot()": erlexec puts those
 * flags before the command's own, so recording starts before the command's
 * code runs, whether the command is erl, elixir, mix or rebar3. The process
 * that halts the VM writes the profile (beamspy_runner, option until_halt);
 * this tool then renders it. */
#define _GNU_SOURCE /* getopt_long, mkdtemp */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dist/payload.h"
#include "../formats/readers.h"
#include "../formats/writers.h"
#include "cli.h"
#include "job.h"
#include "remote.h"

#define CMD "run"

typedef struct run_args {
    bs_job_spec job; /* the recording options (target: every process) */
    bs_render_opts render;
    const char **outputs;
    int n_outputs;
    const char *expr;
    char **command;
} run_args;

void bs_cmd_run_usage(FILE *out)
{
    fputs("usage: beamspy run -o FILE [-o FILE...] [options] -- COMMAND [ARGS...]\n"
          "       beamspy run -o FILE [options] -e EXPR\n"
          "\n"
          "Starts an Erlang VM, records every process of it from its start to its\n"
          "exit (or for --duration), and writes the outputs. COMMAND is erl, or\n"
          "anything that starts the VM through erl (elixir, mix, rebar3, iex);\n"
          "-e EXPR runs `erl -noshell -eval EXPR -s init stop`. Nothing needs to be\n"
          "installed: beamspy's modules come from this tool and are removed after.\n"
          "The VM's own output goes where this tool's goes.\n"
          "\n"
          "options:\n"
          "  -o, --output FILE   write FILE (repeatable); the format comes from the\n"
          "                      extension: .folded .svg .html .speedscope.json\n"
          "                      .trace.json .perf.txt .bspy\n"
          "  -e, --eval EXPR     the Erlang expressions to run (instead of a command)\n"
          "  (--duration: the VM goes on, unrecorded, after it)\n",
          out);
    bs_job_options_usage(out);
    bs_cli_shared_options_usage(out, "\"Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "The recording ends when a process calls erlang:halt/0-2 or init:stop/0-1\n"
          "(that process writes the profile before the VM goes). A VM killed by a\n"
          "signal leaves no profile.\n"
          "\n"
          "exit code: the command's own, or 1 when no profile could be written, or\n"
          "2 for a usage error.\n"
          "\n"
          "examples:\n"
          "  beamspy run -o sort.svg -e 'lists:sort(lists:seq(1, 100000))'\n"
          "  beamspy run -o boot.html -- erl -noshell -s my_app main -s init stop\n"
          "  beamspy run -o tests.svg --elixir -- mix test\n"
          "\n",
          out);
}

static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"eval", required_argument, NULL, 'e'},
        {"help", no_argument, NULL, 'h'},
        BS_RECORDING_LONG_OPTIONS,
        BS_CLI_SHARED_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    /* "+": stop at the first non-option, so the command's own options are
     * never taken for ours (they come after "--" anyway). */
    while ((c = getopt_long(argc, argv, "+:o:e:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bs_cmd_run_usage(stdout);
            return BS_EXIT_OK;
        case 'o':
            if ((rc = bs_cli_add_output(&a->outputs, &a->n_outputs, optarg)) != BS_EXIT_OK)
                return rc;
            break;
        case 'e':
            a->expr = optarg;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_job_option(CMD, c, optarg, &a->job, &a->render);
            if (rc < 0)
                rc = bs_cli_shared_option(CMD, c, optarg, &a->render);
            if (rc != 0)
                return rc < 0 ? bs_cli_getopt_error(CMD, '?', argv) : rc;
        }
    }
    if (optind < argc && strcmp(argv[optind - 1], "--") != 0 && !a->expr)
        return bs_cli_usage_error(CMD, "put '--' before the command: beamspy run [options] -- %s ...", argv[optind]);
    if (a->expr && optind < argc)
        return bs_cli_usage_error(CMD, "give either -e EXPR or a command, not both");
    if (!a->expr && optind >= argc)
        return bs_cli_usage_error(CMD, "nothing to run: give -- COMMAND [ARGS...] or -e EXPR");
    if (a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE");
    for (int i = 0; i < a->n_outputs; i++)
        if (bs_format_from_path(a->outputs[i]) == BS_FORMAT_UNKNOWN)
            return bs_cli_usage_error(CMD, "cannot tell the format of '%s' from its extension", a->outputs[i]);
    a->command = argv + optind;
    return -1;
}

static int write_bytes(const char *path, const unsigned char *start, const unsigned char *end)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = (size_t)(end - start);
    int rc = fwrite(start, 1, n, f) == n ? 0 : -1;
    if (fclose(f) != 0)
        rc = -1;
    return rc;
}

/* DIR/ebin/<module>.beam for every module, DIR/priv/beamspy_nif.so. */
static int unpack(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ebin", dir);
    if (mkdir(path, 0700) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/priv", dir);
    if (mkdir(path, 0700) < 0)
        return -1;
    for (unsigned i = 0; i < bs_payload_module_count; i++) {
        snprintf(path, sizeof path, "%s/ebin/%s.beam", dir, bs_payload_modules[i].name);
        if (write_bytes(path, bs_payload_modules[i].start, bs_payload_modules[i].end) < 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/priv/beamspy_nif.so", dir);
    return write_bytes(path, bs_payload_nif_start, bs_payload_nif_stop);
}

static void remove_unpacked(const char *dir)
{
    char path[4200];
    for (unsigned i = 0; i < bs_payload_module_count; i++) {
        snprintf(path, sizeof path, "%s/ebin/%s.beam", dir, bs_payload_modules[i].name);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/priv/beamspy_nif.so", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/run.bspy", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/ebin", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/priv", dir);
    rmdir(path);
    rmdir(dir);
}

/* The options map of beamspy_runner (BEAMSPY_RUN_OPTIONS). */
static void runner_options(const bs_job_spec *a, char *buf, size_t size)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, size - n, "#{gc => %s, sleep => %s, names => %s", a->gc ? "true" : "false",
                          a->no_sleep ? "false" : "true", a->elixir ? "elixir" : "erlang");
    if (a->duration_ms)
        n += (size_t)snprintf(buf + n, size - n, ", max_duration => %llu", a->duration_ms);
    else
        n += (size_t)snprintf(buf + n, size - n, ", max_duration => infinity");
    if (a->max_events)
        n += (size_t)snprintf(buf + n, size - n, ", max_events => %llu", a->max_events);
    if (a->max_memory)
        n += (size_t)snprintf(buf + n, size - n, ", max_memory => %llu", a->max_memory);
    if (a->max_processes)
        n += (size_t)snprintf(buf + n, size - n, ", max_processes => %llu", a->max_processes);
    if (a->timeline == 0)
        n += (size_t)snprintf(buf + n, size - n, ", timeline => false");
    else if (a->timeline > 0)
        n += (size_t)snprintf(buf + n, size - n, ", timeline => %lld", a->timeline);
    snprintf(buf + n, size - n, "}");
}

/* Runs the command with the environment set; returns its wait status, or
 * -1 (message printed). */
static int run_command(const run_args *a, const char *dir)
{
    char aflags[8400], ours[4300], output[4300], options[1024];
    snprintf(ours, sizeof ours, "-pa %s/ebin -eval beamspy_runner:boot()", dir);
    const char *theirs = getenv("ERL_AFLAGS");
    snprintf(aflags, sizeof aflags, "%s%s%s", ours, theirs && *theirs ? " " : "", theirs ? theirs : "");
    snprintf(output, sizeof output, "%s/run.bspy", dir);
    runner_options(&a->job, options, sizeof options);
    char *eval_argv[] = {"erl", "-noshell", "-eval", (char *)a->expr, "-s", "init", "stop", NULL};
    char **argv = a->expr ? eval_argv : a->command;

    struct sigaction ignore = {.sa_handler = SIG_IGN}, old_int, old_quit;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        setenv("ERL_AFLAGS", aflags, 1);
        setenv("BEAMSPY_RUN_AFLAGS", ours, 1);
        setenv("BEAMSPY_RUN_OUTPUT", output, 1);
        setenv("BEAMSPY_RUN_OPTIONS", options, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "beamspy: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = -1;
    if (child < 0)
        bs_cli_error("cannot start %s: %s", argv[0], strerror(errno));
    else
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return status;
}

static int render(const run_args *a, const char *dir)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/run.bspy", dir);
    FILE *in = fopen(path, "rb");
    if (!in) {
        bs_cli_error("the VM ended without writing a profile (killed, or beamspy could not start in it: "
                     "see its output above)");
        return BS_EXIT_FAILURE;
    }
    bs_profile p;
    bs_read_error err;
    memset(&err, 0, sizeof err);
    int rc = bs_read_bspy(in, "the VM's profile", &p, &err);
    fclose(in);
    if (rc != 0) {
        bs_cli_error("the VM's profile is unreadable: %s", err.msg);
        return BS_EXIT_FAILURE;
    }
    rc = bs_cli_write_outputs(a->outputs, a->n_outputs, BS_FORMAT_UNKNOWN, &p, &a->render, NULL, 1);
    bs_profile_free(&p);
    return rc;
}

static int run(const run_args *a)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    /* ERL_AFLAGS is split at blanks: the directory must have none. */
    if (!tmp || !*tmp || strpbrk(tmp, " \t\n'\"\\") || strlen(tmp) > 3000)
        tmp = "/tmp";
    snprintf(dir, sizeof dir, "%s/beamspy-run-XXXXXX", tmp);
    if (!mkdtemp(dir)) {
        bs_cli_error("cannot create a temporary directory in %s: %s", tmp, strerror(errno));
        return BS_EXIT_FAILURE;
    }
    if (unpack(dir) < 0) {
        bs_cli_error("cannot write beamspy's modules to %s: %s", dir, strerror(errno));
        remove_unpacked(dir);
        return BS_EXIT_FAILURE;
    }
    int status = run_command(a, dir);
    int rc = status < 0 ? BS_EXIT_FAILURE : render(a, dir);
    remove_unpacked(dir);
    if (rc != BS_EXIT_OK || status < 0)
        return rc != BS_EXIT_OK ? rc : BS_EXIT_FAILURE;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    bs_cli_error("the VM was ended by signal %d", WTERMSIG(status));
    return BS_EXIT_FAILURE;
}

int bs_cmd_run(int argc, char **argv)
{
    run_args a;
    memset(&a, 0, sizeof a);
    bs_job_spec_init(&a.job);
    int rc = parse_args(argc, argv, &a);
    if (rc == -1)
        rc = run(&a);
    free(a.outputs);
    return rc;
}
