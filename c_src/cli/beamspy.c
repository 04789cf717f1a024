/* beamspy.c — the command-line tool's entry point: picks the subcommand. */
#include <stdio.h>
#include <string.h>

#define BEAMSPY_VERSION "0.1.0"

static void usage(FILE *out)
{
    fputs("usage: beamspy <command> [options]\n"
          "\n"
          "commands:\n"
          "  version     print the version\n"
          "  help        this text\n"
          "\n"
          "Profiling from Erlang or Elixir: beamspy:apply/2, BeamSpy.run/2 (see README.md).\n"
          "exit codes: 0 ok, 1 failure, 2 usage error\n",
          out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("beamspy %s\n", BEAMSPY_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "beamspy: unknown command '%s' (try beamspy help)\n", cmd);
    return 2;
}
