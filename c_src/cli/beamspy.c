/* beamspy.c — the command-line tool's entry point: picks the subcommand.
 *
 * Each subcommand lives in its own file (cmd_render.c, cmd_convert.c, cmd_diff.c,
 * cmd_record.c, cmd_seq.c, cmd_dump.c, cmd_top.c, cmd_run.c) and is
 * run with argv starting at its own name. `beamspy help CMD` and
 * `beamspy CMD --help` print the same text. Exit codes are listed in cli.h
 * and in every help text: 0 ok, 1 runtime failure, 2 usage error,
 * 3 malformed input, 4-9 connecting to a node. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define BEAMSPY_VERSION "0.1.0"

typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *out);
} command;

static const command COMMANDS[] = {
    {"render", "draw folded stacks or .bspy files in any output format", bs_cmd_render, bs_cmd_render_usage},
    {"convert", "dbg trace-port files (plain, wrap sets, ip streams) into any output format", bs_cmd_convert,
     bs_cmd_convert_usage},
    {"diff", "differential flame graph of two profiles", bs_cmd_diff, bs_cmd_diff_usage},
    {"record", "profile processes of running nodes over distribution", bs_cmd_record, bs_cmd_record_usage},
    {"seq", "sequence diagram of the messages a function's calls set off, across nodes", bs_cmd_seq, bs_cmd_seq_usage},
    {"dump", "the current stack of every process of a node, stuck ones first", bs_cmd_dump, bs_cmd_dump_usage},
    {"top", "live view of the busiest processes of a node and what they run", bs_cmd_top, bs_cmd_top_usage},
    {"run", "start an Erlang VM, profile it from start to exit", bs_cmd_run, bs_cmd_run_usage},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out)
{
    fputs("usage: beamspy <command> [options]\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-10s  %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fputs("  version     print the version\n"
          "  help [CMD]  this text, or the options of CMD\n"
          "\n"
          "Profiling from Erlang or Elixir: beamspy:apply/2, BeamSpy.run/2 (see README.md).\n"
          "\n",
          out);
    bs_cli_exit_codes_usage(out);
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0)
            return &COMMANDS[i];
    return NULL;
}

static int help(int argc, char **argv)
{
    if (argc < 3) {
        usage(stdout);
        return BS_EXIT_OK;
    }
    const command *c = find_command(argv[2]);
    if (!c) {
        bs_cli_error("unknown command '%s' (try beamspy help)", argv[2]);
        return BS_EXIT_USAGE;
    }
    c->usage(stdout);
    return BS_EXIT_OK;
}

int main(int argc, char **argv)
{
    /* A node that goes away must be a clean error on the socket (EPIPE),
     * not a signal that kills the tool before it can say so. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return BS_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        printf("beamspy %s\n", BEAMSPY_VERSION);
        return BS_EXIT_OK;
    }
    if (strcmp(name, "help") == 0 || strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
        return help(argc, argv);
    const command *c = find_command(name);
    if (!c) {
        bs_cli_error("unknown command '%s' (try beamspy help)", name);
        return BS_EXIT_USAGE;
    }
    int rc = c->run(argc - 1, argv + 1);
    /* Anything still buffered for stdout (help text) must reach it, and a
     * failure to write it is a failure. */
    if (fflush(stdout) != 0 && rc == BS_EXIT_OK)
        rc = BS_EXIT_FAILURE;
    return rc;
}
