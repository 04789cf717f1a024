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
 * this tool then renders it.
 *
 * The VM gets the reading end of a pipe from this tool (BEAMSPY_RUN_CONTROL):
 * on SIGINT or SIGTERM the tool writes a line to it and the VM writes the
 * profile and halts; should the tool die, even by SIGKILL, the VM sees the
 * pipe end, removes the temporary directory and halts. --duration is kept
 * by the VM too: at its end the profile is written and the VM halts. The VM
 * ignores its own SIGINT (+Bi), so a Ctrl-C at a terminal, which reaches
 * both, stops the run through this tool and the profile is still written. */
#define _GNU_SOURCE /* getopt_long, mkdtemp */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../dist/payload.h"
#include "../readers/readers.h"
#include "../writers/writers.h"
#include "cli.h"
#include "early_stop.h"
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
    int open;                /* --open */
    const char *when_started; /* --when-started APP: record once APP has started */
} run_args;

enum { OPT_WHEN_STARTED = 0x500, OPT_MODE };

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
          "                      extension (formats: below)\n"
          "  -e, --eval EXPR     the Erlang expressions to run (instead of a command)\n"
          "  --mode trace|cpu    trace (default): every call and return, exact counts\n"
          "                      and stacks; cpu: the kernel's CPU samples of the\n"
          "                      VM's scheduler threads (--hz), charged to the process\n"
          "                      each ran: where the CPU time goes (the VM is started\n"
          "                      with +JPperf true for it)\n"
          "  --when-started APP  record from when application APP has started (looked\n"
          "                      at every 10 ms), e.g. ex_unit with mix test: the\n"
          "                      tests, not the compilation and start before them\n"
          "  (--duration: at its end the outputs are written and the VM is stopped)\n",
          out);
    bs_job_options_usage(out);
    fputs(BS_CLI_OPEN_USAGE, out);
    bs_cli_shared_options_usage(out, "\"Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "The recording ends when a process calls erlang:halt/0-2 or init:stop/0-1\n"
          "(that process writes the profile before the VM goes), at the end of\n"
          "--duration, or on Ctrl-C or SIGTERM to this tool (the outputs are\n"
          "written, then the VM is stopped; a second Ctrl-C ends the tool at once).\n"
          "A limit (--max-memory...) ends the recording early, says so on stderr,\n"
          "and the VM goes on unrecorded. If this tool is killed, the VM halts and\n"
          "removes beamspy's temporary files. A VM killed by a signal leaves no\n"
          "profile. The VM runs with +Bi (Ctrl-C reaches it through this tool).\n"
          "\n"
          "exit code: the command's own; 128+N when signal N (Ctrl-C: 130, SIGTERM:\n"
          "143) stopped the run (outputs written); 1 when no profile could be\n"
          "written; 2 for a usage error; with --strict, 10 when a limit ended the\n"
          "recording early and the command succeeded.\n"
          "\n"
          "examples:\n"
          "  beamspy run -o sort.svg -e 'lists:sort(lists:seq(1, 100000))'\n"
          "  beamspy run -o boot.html -- erl -noshell -s my_app main -s init stop\n"
          "  beamspy run -o tests.svg --elixir -- mix test\n"
          "  beamspy run --mode cpu -o compile.svg -- erlc -o /tmp big_module.erl\n"
          "\n",
          out);
    bs_cli_formats_usage(out);
}

/* Names left to the command (no --elixir or --erlang): Elixir's when the
 * command is one of Elixir's (mix, elixir, iex), said on stderr. */
static void choose_names(run_args *a)
{
    static const char *const elixir_commands[] = {"mix", "elixir", "iex", "elixirc"};
    const char *slash = strrchr(a->command[0], '/');
    const char *name = slash ? slash + 1 : a->command[0];
    a->job.elixir = 0;
    for (size_t i = 0; i < sizeof elixir_commands / sizeof *elixir_commands; i++)
        if (strcmp(name, elixir_commands[i]) == 0) {
            a->job.elixir = 1;
            fprintf(stderr, "beamspy: %s is Elixir's: names spelled as Elixir does (--erlang for Erlang's)\n",
                    name);
        }
}

static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"eval", required_argument, NULL, 'e'},
        {"when-started", required_argument, NULL, OPT_WHEN_STARTED},
        {"mode", required_argument, NULL, OPT_MODE},
        {"help", no_argument, NULL, 'h'},
        BS_RECORDING_LONG_OPTIONS,
        BS_CLI_SHARED_LONG_OPTIONS,
        BS_CLI_OPEN_LONG_OPTION,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    /* "+": stop at the first non-option, so the command's own options are
     * never taken for ours (they come after "--" anyway). */
    while ((c = getopt_long(argc, argv, "+:o:e:h", longopts, NULL)) != -1) {
        switch (c) {
        case BS_OPT_OPEN:
            a->open = 1;
            break;
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
        case OPT_MODE:
            if (strcmp(optarg, "trace") != 0 && strcmp(optarg, "cpu") != 0)
                return bs_cli_usage_error(CMD, "unknown mode '%s' (trace or cpu)", optarg);
            a->job.cpu = strcmp(optarg, "cpu") == 0;
            break;
        case OPT_WHEN_STARTED:
            /* An application name, written into an Erlang term as is. */
            if (!(optarg[0] >= 'a' && optarg[0] <= 'z') || strlen(optarg) > 200 ||
                optarg[strspn(optarg, "abcdefghijklmnopqrstuvwxyz0123456789_")] != '\0')
                return bs_cli_usage_error(CMD, "--when-started wants an application name such as ex_unit, not '%s'",
                                          optarg);
            a->when_started = optarg;
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
    if (a->job.elixir < 0 && !a->expr)
        choose_names(a);
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
    snprintf(path, sizeof path, "%s/run.bspy.stopped", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/ebin", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/priv", dir);
    rmdir(path);
    rmdir(dir);
}

/* The options map of beamspy_runner (BEAMSPY_RUN_OPTIONS). */
static void runner_options(const run_args *r, char *buf, size_t size)
{
    const bs_job_spec *a = &r->job;
    size_t n = 0;
    n += (size_t)snprintf(buf + n, size - n, "#{gc => %s, sleep => %s, compensate => %s, names => %s",
                          a->gc ? "true" : "false", a->no_sleep ? "false" : "true",
                          a->no_compensate ? "false" : "true", a->elixir > 0 ? "elixir" : "erlang");
    if (a->duration_ms)
        n += (size_t)snprintf(buf + n, size - n, ", max_duration => %llu", a->duration_ms);
    else
        n += (size_t)snprintf(buf + n, size - n, ", max_duration => infinity");
    n = bs_job_limits_text(a, buf, size, n);
    if (r->when_started)
        n += (size_t)snprintf(buf + n, size - n, ", start_when => %s", r->when_started);
    if (a->cpu)
        n += (size_t)snprintf(buf + n, size - n, ", mode => cpu");
    else if (a->times)
        n += (size_t)snprintf(buf + n, size - n, ", times => %s%s", a->times,
                              strcmp(a->times, "samples") == 0 ? ", cpu_hz => " : "");
    if (!a->cpu && a->times && strcmp(a->times, "samples") == 0)
        n += (size_t)snprintf(buf + n, size - n, "%u", a->cpu_hz ? a->cpu_hz : BS_CPU_DEFAULT_HZ);
    if (a->cpu)
        n += (size_t)snprintf(buf + n, size - n, ", cpu_hz => %u", a->cpu_hz ? a->cpu_hz : BS_CPU_DEFAULT_HZ);
    snprintf(buf + n, size - n, "}");
}

/* SIGINT and SIGTERM: stop the run, write the outputs. Blocked except in
 * sigsuspend, so none is missed between looking and waiting. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

static void on_child(int sig)
{
    (void)sig; /* only wakes sigsuspend */
}

typedef struct saved_signals {
    struct sigaction intr, term, quit, chld;
    sigset_t mask;
} saved_signals;

static void catch_signals(saved_signals *old, sigset_t *waiting_mask)
{
    sigset_t ours;
    sigemptyset(&ours);
    sigaddset(&ours, SIGINT);
    sigaddset(&ours, SIGTERM);
    sigaddset(&ours, SIGCHLD);
    sigprocmask(SIG_BLOCK, &ours, &old->mask);
    *waiting_mask = old->mask;
    sigdelset(waiting_mask, SIGINT);
    sigdelset(waiting_mask, SIGTERM);
    sigdelset(waiting_mask, SIGCHLD);
    struct sigaction stop = {.sa_handler = on_stop_signal}, child = {.sa_handler = on_child},
                     ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&stop.sa_mask);
    sigemptyset(&child.sa_mask);
    sigemptyset(&ignore.sa_mask);
    stop.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the tool at once */
    sigaction(SIGINT, &stop, &old->intr);
    sigaction(SIGTERM, &stop, &old->term);
    sigaction(SIGQUIT, &ignore, &old->quit);
    sigaction(SIGCHLD, &child, &old->chld);
    stop_signal = 0;
}

static void restore_signals(const saved_signals *old)
{
    sigaction(SIGINT, &old->intr, NULL);
    sigaction(SIGTERM, &old->term, NULL);
    sigaction(SIGQUIT, &old->quit, NULL);
    sigaction(SIGCHLD, &old->chld, NULL);
    sigprocmask(SIG_SETMASK, &old->mask, NULL);
}

/* Waits for the VM; on a stop signal, tells it once through the pipe. */
static int wait_for_vm(pid_t child, int control, const sigset_t *waiting_mask)
{
    int status = -1, told = 0;
    for (;;) {
        pid_t r = waitpid(child, &status, WNOHANG);
        if (r == child || (r < 0 && errno != EINTR))
            return r == child ? status : -1;
        if (stop_signal && !told) {
            fprintf(stderr, "beamspy: stopping (%s): writing what was recorded, then stopping the VM\n",
                    stop_signal == SIGINT ? "Ctrl-C" : "SIGTERM");
            told = 1;
            if (write(control, "stop\n", 5) < 0) {
                /* The VM is already going: wait for it all the same. */
            }
        }
        if (r == 0)
            sigsuspend(waiting_mask);
    }
}

/* Runs the command with the environment set; returns its wait status, or
 * -1 (message printed). *stopped_by is the signal that stopped the run, or
 * 0. */
static int run_command(const run_args *a, const char *dir, int *stopped_by)
{
    char aflags[8400], ours[4300], output[4300], options[1024], control_fd[16];
    /* Mode cpu: the JIT keeps frame pointers and writes its perf map. */
    snprintf(ours, sizeof ours, "+Bi%s -pa %s/ebin -eval beamspy_runner:boot()", a->job.cpu || (a->job.times && strcmp(a->job.times, "samples") == 0) ? " +JPperf true" : "",
             dir);
    const char *theirs = getenv("ERL_AFLAGS");
    snprintf(aflags, sizeof aflags, "%s%s%s", ours, theirs && *theirs ? " " : "", theirs ? theirs : "");
    snprintf(output, sizeof output, "%s/run.bspy", dir);
    runner_options(a, options, sizeof options);
    char *eval_argv[] = {"erl", "-noshell", "-eval", (char *)a->expr, "-s", "init", "stop", NULL};
    char **argv = a->expr ? eval_argv : a->command;

    /* The VM reads control[0]; only this tool holds control[1], so the VM
     * sees the pipe end when the tool is gone, however it went. */
    int control[2];
    if (pipe(control) < 0 || fcntl(control[1], F_SETFD, FD_CLOEXEC) < 0) {
        bs_cli_error("cannot make a pipe to the VM: %s", strerror(errno));
        return -1;
    }
    snprintf(control_fd, sizeof control_fd, "%d", control[0]);
    saved_signals old;
    sigset_t waiting_mask;
    catch_signals(&old, &waiting_mask);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        restore_signals(&old);
        setenv("ERL_AFLAGS", aflags, 1);
        setenv("BEAMSPY_RUN_AFLAGS", ours, 1);
        setenv("BEAMSPY_RUN_OUTPUT", output, 1);
        setenv("BEAMSPY_RUN_OPTIONS", options, 1);
        setenv("BEAMSPY_RUN_CONTROL", control_fd, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "beamspy: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(control[0]);
    int status = -1;
    if (child < 0)
        bs_cli_error("cannot start %s: %s", argv[0], strerror(errno));
    else
        status = wait_for_vm(child, control[1], &waiting_mask);
    *stopped_by = stop_signal;
    restore_signals(&old);
    close(control[1]);
    return status;
}

/* What the VM noted when a limit ended the recording early (run.bspy.stopped:
 * "Reason ElapsedMs Events MemoryBytes LimitValue ExUnit"); limit "" if
 * none. *ex_unit: 1 when ExUnit had started by then, 0 if not, -1 unknown. */
static void read_early_stop(const char *dir, bs_early_stop *e, int *ex_unit)
{
    char path[4300];
    memset(e, 0, sizeof *e);
    *ex_unit = -1;
    snprintf(path, sizeof path, "%s/run.bspy.stopped", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int n = fscanf(f, "%63s %llu %llu %llu %llu %d", e->limit, &e->after_ms, &e->events, &e->memory,
                   &e->limit_value, ex_unit);
    if (n >= 5)
        e->have_figures = 1;
    if (n < 6)
        *ex_unit = -1;
    else if (!e->limit[0])
        snprintf(e->limit, sizeof e->limit, "a limit");
    fclose(f);
}

/* The value of the limit named `limit' that this run gave the VM; 0 when
 * it gave none (the VM's default applied). */
static unsigned long long asked_limit(const bs_job_spec *job, const char *limit)
{
    if (strcmp(limit, "max_events") == 0)
        return job->max_events;
    if (strcmp(limit, "max_memory") == 0)
        return job->max_memory;
    if (strcmp(limit, "max_processes") == 0)
        return job->max_processes;
    return 0;
}

/* What the outputs say was profiled and how: the command the user ran, and
 * the options this tool gave the VM with the view it draws (show_idle as
 * asked), not the VM's session (beamspy:start(all), its temporary output
 * file, and show_idle => true because this tool leaves idle time out). */
static void describe_run(const run_args *a, bs_profile_meta *m)
{
    size_t cap = sizeof m->source, n = 0;
    const char *words[] = {"beamspy run", a->expr ? "-e" : "--"};
    m->source[0] = '\0';
    for (size_t i = 0; i < 2 && n < cap; i++)
        n += (size_t)snprintf(m->source + n, cap - n, "%s%s", i ? " " : "", words[i]);
    char *const *args = a->expr ? (char *const[]){(char *)a->expr, NULL} : a->command;
    for (size_t i = 0; args[i] && n < cap; i++) {
        int blank = strpbrk(args[i], " \t\n'\"") != NULL;
        n += (size_t)snprintf(m->source + n, cap - n, blank ? " '%s'" : " %s", args[i]);
    }
    if (n >= cap) /* cut: say so */
        memcpy(m->source + cap - 4, "...", 4);
    char options[1024];
    runner_options(a, options, sizeof options);
    size_t len = strlen(options);
    if (len > 0 && options[len - 1] == '}')
        options[len - 1] = '\0';
    snprintf(m->options, sizeof m->options, "%s, show_idle => %s}", options, a->job.show_idle ? "true" : "false");
}

/* render: writes the outputs from the VM's profile; *truncated gets the
 * profile's own word on an early stop ("" if none): the VM may halt before
 * it notes the stop in run.bspy.stopped, never before the profile is
 * written. */
static int render(const run_args *a, const char *dir, char *truncated, size_t cap)
{
    char path[4300];
    snprintf(path, sizeof path, "%s/run.bspy", dir);
    FILE *in = fopen(path, "rb");
    if (!in) {
        if (a->when_started)
            bs_cli_error("the VM ended without writing a profile: %s never started (--when-started), or the VM "
                         "was killed: see its output above",
                         a->when_started);
        else
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
    snprintf(truncated, cap, "%s", p.truncated);
    bs_job_say_cpu_samples(&a->job, &p, NULL);
    describe_run(a, &p.meta);
    bs_render_opts o = a->render;
    bs_job_whole_vm_view(&a->job, &p, &o);
    rc = bs_cli_write_outputs(a->outputs, a->n_outputs, BS_FORMAT_UNKNOWN, &p, &o, NULL, 1, a->open);
    bs_profile_free(&p);
    return rc;
}

/* mix test: whether the limit fell before the tests or while they ran,
 * and how to record the tests alone. */
static void say_mix_test_phase(const run_args *a, int ex_unit)
{
    if (a->expr || a->when_started || ex_unit < 0)
        return;
    const char *slash = strrchr(a->command[0], '/');
    if (strcmp(slash ? slash + 1 : a->command[0], "mix") != 0)
        return;
    int test = 0;
    for (int i = 1; a->command[i]; i++)
        test |= strcmp(a->command[i], "test") == 0;
    if (!test)
        return;
    if (ex_unit)
        fputs("beamspy: the limit fell while the tests ran (ExUnit had started)\n", stderr);
    else
        fputs("beamspy: the limit fell before any test ran (ExUnit had not started: Mix was compiling or "
              "starting the project); to record the tests alone: beamspy run --when-started ex_unit -- mix test\n",
              stderr);
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
    int stopped_by = 0;
    int status = run_command(a, dir, &stopped_by);
    char truncated[128] = "";
    int rc = status < 0 ? BS_EXIT_FAILURE : render(a, dir, truncated, sizeof truncated);
    bs_early_stop early;
    int ex_unit;
    read_early_stop(dir, &early, &ex_unit);
    /* max_duration is --duration, the run's planned end, not an early stop.
     * Without the VM's note (it halted first) the limit's value is the one
     * this run asked for, when it asked for one. */
    if (!early.limit[0] && truncated[0] && strcmp(truncated, "max_duration") != 0) {
        snprintf(early.limit, sizeof early.limit, "%s", truncated);
        early.limit_value = asked_limit(&a->job, truncated);
    }
    remove_unpacked(dir);
    bs_early_stop_report(&early, NULL);
    if (early.limit[0])
        say_mix_test_phase(a, ex_unit);
    if (rc != BS_EXIT_OK || status < 0)
        return rc != BS_EXIT_OK ? rc : BS_EXIT_FAILURE;
    if (stopped_by)
        return 128 + stopped_by;
    if (WIFEXITED(status)) {
        if (WEXITSTATUS(status) == 0 && early.limit[0] && a->job.strict)
            return BS_EXIT_STOPPED_EARLY;
        return WEXITSTATUS(status);
    }
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
