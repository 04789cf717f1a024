/* cmd_render.c — `beamspy render INPUT... -o OUTPUT...`: reads folded stacks
 * or .bspy files, combines them, and writes every output asked for.
 *
 * Everything the user typed is checked before any input is read, and every
 * input is read before any output is written, so a usage error or a
 * malformed input leaves no file behind. Outputs are then written one by one
 * (each atomically, by bs_write_file); when one fails it is reported, the
 * others are still written, and the exit code is 1. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../writers/writers.h"
#include "cli.h"

#define CMD "render"

enum { OPT_FLAMECHART = BS_OPT_FIRST_OWN, OPT_PALETTE };

typedef struct render_args {
    bs_render_opts opts;
    bs_format format;    /* --format, or UNKNOWN: from each output's extension */
    const char **outputs;
    int n_outputs;
    char **inputs;
    int n_inputs;
    int open; /* --open */
} render_args;

void bs_cmd_render_usage(FILE *out)
{
    fputs("usage: beamspy render INPUT... -o OUTPUT [-o OUTPUT...] [options]\n"
          "\n"
          "Draws profiles read from files. INPUT is folded stacks (flamegraph.pl,\n"
          "inferno, eflame or beamspy output) or a .bspy profile; '-' reads standard\n"
          "input. Several inputs are combined as if their folded stacks were\n"
          "concatenated: equal stacks of the same process are summed. They must all\n"
          "hold recorded times or all sample counts.\n"
          "\n"
          "output:\n"
          "  -o, --output FILE   write FILE; give -o several times for several files.\n"
          "                      The format comes from the extension (formats: below)\n"
          "  -f, --format F      use format F for every output instead\n"
          "  --flamechart        SVG: x is time, not merged stacks (needs a profile\n"
          "                      recorded with a timeline); titled \"Flame Chart\"\n"
          "  --palette hot|beam  SVG and HTML colours. hot: warm colours (default);\n"
          "                      beam: OTP apps, Elixir, user code, WAIT, RUNNABLE and\n"
          "                      GC in distinct hues\n",
          out);
    fputs(BS_CLI_OPEN_USAGE, out);
    bs_cli_shared_options_usage(out, "\"Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "Each output is written to a temporary file and renamed into place, so a\n"
          "file is either complete or not there. If one of several outputs cannot be\n"
          "written, it is reported and the others are still written (exit code 1).\n"
          "\n"
          "examples:\n"
          "  beamspy render fib.folded -o fib.svg -o fib.html --drop-sleep\n"
          "  beamspy render a.bspy b.bspy --merge -o both.speedscope.json\n"
          "  cat stacks.folded | beamspy render - -o fg.svg --title 'my run'\n"
          "\n",
          out);
    bs_cli_formats_usage(out);
    fputc('\n', out);
    bs_cli_exit_codes_usage(out);
}

/* Returns -1 to go on, or the exit code (help printed: 0). */
static int parse_args(int argc, char **argv, render_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"flamechart", no_argument, NULL, OPT_FLAMECHART},
        {"palette", required_argument, NULL, OPT_PALETTE},
        {"help", no_argument, NULL, 'h'},
        BS_CLI_SHARED_LONG_OPTIONS,
        BS_CLI_OPEN_LONG_OPTION,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":o:f:h", longopts, NULL)) != -1) {
        switch (c) {
        case BS_OPT_OPEN:
            a->open = 1;
            break;
        case 'h':
            bs_cmd_render_usage(stdout);
            return BS_EXIT_OK;
        case OPT_FLAMECHART:
            a->opts.flamechart = 1;
            break;
        case OPT_PALETTE:
            if ((rc = bs_cli_palette_option(CMD, optarg, &a->opts)) != 0)
                return rc;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_cli_output_option(CMD, c, optarg, &a->outputs, &a->n_outputs, &a->format);
            if (rc < 0)
                rc = bs_cli_shared_option(CMD, c, optarg, &a->opts);
            if (rc != 0)
                return rc < 0 ? bs_cli_getopt_error(CMD, '?', argv) : rc;
        }
    }
    a->inputs = argv + optind;
    a->n_inputs = argc - optind;
    return -1;
}

static bs_format output_format(const render_args *a, const char *path)
{
    return a->format != BS_FORMAT_UNKNOWN ? a->format : bs_format_from_path(path);
}

/* Usage errors the arguments can show before anything is read. */
static int check_args(const render_args *a)
{
    if (a->n_inputs == 0)
        return bs_cli_usage_error(CMD, "no input file ('-' reads standard input)");
    if (a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE");
    int stdin_uses = 0;
    for (int i = 0; i < a->n_inputs; i++)
        stdin_uses += strcmp(a->inputs[i], "-") == 0;
    if (stdin_uses > 1)
        return bs_cli_usage_error(CMD, "standard input ('-') can be read only once");
    for (int i = 0; i < a->n_outputs; i++) {
        const char *path = a->outputs[i];
        if (strcmp(path, "-") == 0)
            return bs_cli_usage_error(CMD, "writing to standard output is not supported: give -o FILE");
        if (output_format(a, path) == BS_FORMAT_UNKNOWN)
            return bs_cli_usage_error(CMD, "cannot tell the format of '%s' from its extension: use --format", path);
    }
    return BS_EXIT_OK;
}

static int writes_svg(const render_args *a)
{
    for (int i = 0; i < a->n_outputs; i++)
        if (output_format(a, a->outputs[i]) == BS_FORMAT_SVG)
            return 1;
    return 0;
}

static int render(const render_args *a)
{
    bs_profile p;
    int rc = bs_cli_read_inputs(a->inputs, a->n_inputs, &p);
    if (rc != BS_EXIT_OK)
        return rc;
    if (a->opts.flamechart && !p.has_timeline && writes_svg(a))
        bs_cli_error("warning: --flamechart needs a profile recorded with a timeline; "
                     "the SVG is drawn as a flame graph");
    rc = bs_cli_write_outputs(a->outputs, a->n_outputs, a->format, &p, &a->opts, NULL, 0, a->open);
    bs_profile_free(&p);
    return rc;
}

int bs_cmd_render(int argc, char **argv)
{
    render_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = check_args(&a)) == BS_EXIT_OK)
        rc = render(&a);
    free(a.outputs);
    return rc;
}
