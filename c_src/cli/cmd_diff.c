/* cmd_diff.c — `beamspy diff BEFORE AFTER -o OUTPUT...`: what changed
 * between two profiles, as a differential flame graph (SVG) or as
 * differential folded stacks ("stack before after", flamegraph.pl's input).
 *
 * Both writers pair processes by their label without the pid (pids differ
 * from one run to the next). As in render, arguments are checked before
 * anything is read, both inputs are read before anything is written, and
 * each output is written atomically. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "../engine/filter.h"
#include "../common/atomic_file.h"
#include "../writers/diff_svg.h"
#include "../writers/writers.h"
#include "cli.h"
#include "../writers/diff_folded.h"

#define CMD "diff"

enum { OPT_FOLDED = BS_OPT_FIRST_OWN, OPT_NO_NORMALIZE };

typedef enum diff_output { DIFF_SVG, DIFF_FOLDED } diff_output;

typedef struct diff_args {
    bs_render_opts opts;
    int force_folded;   /* --folded */
    int normalize;      /* scale before to after's total (default) */
    const char **outputs;
    int n_outputs;
    char **inputs;
    int n_inputs;
} diff_args;

void bs_cmd_diff_usage(FILE *out)
{
    fputs("usage: beamspy diff BEFORE AFTER -o OUTPUT [-o OUTPUT...] [options]\n"
          "\n"
          "Shows what changed from BEFORE to AFTER (folded stacks or .bspy files; '-'\n"
          "reads standard input for one of them). BEFORE is first scaled to AFTER's\n"
          "total, so runs of different lengths compare by proportion. The SVG is laid\n"
          "out by AFTER; each frame is coloured by the change of its own time: red\n"
          "grew, blue shrank, white unchanged, deeper the larger the change. Stacks\n"
          "only BEFORE has are drawn too (blue). Tooltips give both times and the\n"
          "change in percent. Processes are paired by name, not pid (pids differ\n"
          "between runs): '<0.85.0> my_server' with '<0.91.0> my_server', and all\n"
          "unnamed processes are '<process>'; --merge compares whole profiles.\n"
          "\n"
          "output:\n"
          "  -o, --output FILE   write FILE (several -o for several files); .svg is a\n"
          "                      differential flame graph, .folded differential\n"
          "                      folded stacks\n"
          "  --folded            write differential folded stacks whatever the\n"
          "                      extension; '-o -' then writes to standard output.\n"
          "                      One line per stack: 'frame;frame;... BEFORE AFTER'\n"
          "                      (flamegraph.pl's differential input, as FlameGraph's\n"
          "                      difffolded.pl -n writes it). Counts are microseconds\n"
          "                      for recorded profiles, samples for folded input; the\n"
          "                      BEFORE column is scaled to sum exactly to AFTER's\n"
          "                      total\n"
          "  --no-normalize      folded: BEFORE's own counts (each column then sums to\n"
          "                      its own profile's total)\n",
          out);
    bs_cli_shared_options_usage(out, "\"Differential Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "If one of several outputs cannot be written, it is reported and the others\n"
          "are still written (exit code 1).\n"
          "\n"
          "examples:\n"
          "  beamspy diff old.folded new.folded -o diff.svg --drop-sleep\n"
          "  beamspy diff old.bspy new.bspy --folded -o - | flamegraph.pl > diff.svg\n"
          "\n",
          out);
    bs_cli_exit_codes_usage(out);
}

/* Returns -1 to go on, or the exit code (help printed: 0). */
static int parse_args(int argc, char **argv, diff_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"folded", no_argument, NULL, OPT_FOLDED},
        {"no-normalize", no_argument, NULL, OPT_NO_NORMALIZE},
        {"help", no_argument, NULL, 'h'},
        BS_CLI_SHARED_LONG_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    opterr = 0;
    optind = 1;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            bs_cmd_diff_usage(stdout);
            return BS_EXIT_OK;
        case OPT_FOLDED:
            a->force_folded = 1;
            break;
        case OPT_NO_NORMALIZE:
            a->normalize = 0;
            break;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_cli_output_option(CMD, c, optarg, &a->outputs, &a->n_outputs, NULL);
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

static diff_output output_kind(const diff_args *a, const char *path)
{
    if (a->force_folded)
        return DIFF_FOLDED;
    return bs_format_from_path(path) == BS_FORMAT_FOLDED ? DIFF_FOLDED : DIFF_SVG;
}

static int check_args(const diff_args *a)
{
    if (a->n_inputs != 2)
        return bs_cli_usage_error(CMD, "wants two inputs, BEFORE and AFTER (got %d)", a->n_inputs);
    if (strcmp(a->inputs[0], "-") == 0 && strcmp(a->inputs[1], "-") == 0)
        return bs_cli_usage_error(CMD, "standard input ('-') can be read only once");
    if (a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE");
    for (int i = 0; i < a->n_outputs; i++) {
        const char *path = a->outputs[i];
        bs_format f = bs_format_from_path(path);
        if (strcmp(path, "-") == 0 && !a->force_folded)
            return bs_cli_usage_error(CMD, "'-o -' (standard output) needs --folded");
        if (!a->force_folded && f != BS_FORMAT_SVG && f != BS_FORMAT_FOLDED)
            return bs_cli_usage_error(CMD, "'%s': diff writes .svg or .folded (or use --folded)", path);
    }
    return BS_EXIT_OK;
}

static int write_one(FILE *out, const diff_args *a, const char *path, const bs_profile *before,
                     const bs_profile *after)
{
    if (output_kind(a, path) == DIFF_FOLDED)
        return bs_write_diff_folded(out, before, after, a->normalize);
    /* The filters are applied already; the writer only draws. */
    bs_render_opts draw = a->opts;
    draw.drop_sleep = 0;
    draw.merge_processes = 0;
    draw.include_re = draw.exclude_re = NULL;
    return bs_write_diff_svg(out, before, after, &draw);
}

/* Writes one output ("-": standard output) atomically; 0, or -1 with errno
 * set and the target untouched. */
static int write_output(const diff_args *a, const char *path, const bs_profile *before, const bs_profile *after)
{
    if (strcmp(path, "-") == 0)
        return write_one(stdout, a, path, before, after) < 0 || fflush(stdout) != 0 ? -1 : 0;
    bs_atomic_file af;
    if (bs_atomic_open(&af, path) < 0)
        return -1;
    if (write_one(af.fp, a, path, before, after) < 0) {
        int e = errno;
        bs_atomic_abort(&af);
        errno = e;
        return -1;
    }
    return bs_atomic_commit(&af);
}

static int write_outputs(const diff_args *a, const bs_profile *before, const bs_profile *after)
{
    int rc = BS_EXIT_OK;
    for (int i = 0; i < a->n_outputs; i++) {
        const char *path = a->outputs[i];
        errno = 0;
        if (write_output(a, path, before, after) == 0)
            continue;
        bs_cli_error("%s: %s", strcmp(path, "-") == 0 ? "standard output" : path, strerror(errno ? errno : EIO));
        rc = BS_EXIT_FAILURE;
    }
    return rc;
}

/* Reads path and applies the filters of the options. */
static int read_filtered(const diff_args *a, const char *path, bs_profile *p)
{
    int rc = bs_cli_read_input(path, p);
    if (rc != BS_EXIT_OK)
        return rc;
    bs_filter f = {
        .drop_sleep = a->opts.drop_sleep,
        .merge_processes = a->opts.merge_processes,
        .include_re = a->opts.include_re,
        .exclude_re = a->opts.exclude_re,
    };
    if (bs_profile_filter(p, &f) < 0) {
        /* The expressions compiled when the options were parsed. */
        bs_cli_error("%s: out of memory", path);
        bs_profile_free(p);
        return BS_EXIT_FAILURE;
    }
    return BS_EXIT_OK;
}

static int diff(const diff_args *a)
{
    bs_profile before, after;
    int rc = read_filtered(a, a->inputs[0], &before);
    if (rc != BS_EXIT_OK)
        return rc;
    rc = read_filtered(a, a->inputs[1], &after);
    if (rc == BS_EXIT_OK) {
        rc = write_outputs(a, &before, &after);
        bs_profile_free(&after);
    }
    bs_profile_free(&before);
    return rc;
}

int bs_cmd_diff(int argc, char **argv)
{
    diff_args a;
    memset(&a, 0, sizeof a);
    a.normalize = 1;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = check_args(&a)) == BS_EXIT_OK)
        rc = diff(&a);
    free(a.outputs);
    return rc;
}
