/* cmd_convert.c — `beamspy convert FILE... -o OUTPUT...`: dbg trace-port
 * files (plain, wrap sets, a saved ip-port stream) into every output
 * format, or `--text` for a listing like dbg:trace_client's.
 *
 * The reading is c_src/readers/ (dbg_trace.h); the profile goes to the
 * same writers `render` uses (bs_cli_write_outputs). As in render, every
 * argument is checked before anything is read and every input is read
 * before any output is written. */
#define _GNU_SOURCE /* getopt_long */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../writers/writers.h"
#include "../readers/dbg_trace.h"
#include "cli.h"
#include "remote.h"

#define CMD "convert"

enum {
    OPT_FLAMECHART = BS_OPT_FIRST_OWN,
    OPT_PALETTE,
    OPT_TEXT,
    OPT_GC,
    OPT_NO_SLEEP,
    OPT_TIMELINE,
    OPT_MAX_TERM,
    OPT_MAX_PROCESSES,
    OPT_MAX_MEMORY,
    OPT_ELIXIR
};

typedef struct convert_args {
    bs_render_opts opts;
    bs_dbg_opts dbg;
    bs_format format;
    const char **outputs;
    int n_outputs;
    char **inputs;
    int n_inputs;
    int text;
    int open; /* --open */
} convert_args;

void bs_cmd_convert_usage(FILE *out)
{
    fputs("usage: beamspy convert FILE... -o OUTPUT [-o OUTPUT...] [options]\n"
          "       beamspy convert FILE... --text\n"
          "\n"
          "Reads files written by dbg's trace ports, without a node: dbg:trace_port(file,\n"
          "Name), wrap sets {Name, wrap, Suffix, Size, Count} (give all their files, e.g.\n"
          "trace*.log: they are read oldest first, also after wrapping around or with the\n"
          "first files deleted), and the stream of dbg:trace_port(ip, Port) saved to a\n"
          "file. With calls and return_to (or {return_trace}, exception_trace) the stacks\n"
          "are rebuilt exactly; with calls only, each process gets its call counts and a\n"
          "timeline of its calls. Without timestamps (the timestamp flag) weights are\n"
          "event counts. What was found is said on standard error.\n"
          "\n"
          "output:\n"
          "  -o, --output FILE   write FILE (several -o allowed); the format comes from\n"
          "                      the extension (formats: below)\n"
          "  -f, --format F      write every output in format F (formats: below)\n"
          "  --text              print every message on standard output, like\n"
          "                      dbg:trace_client/2 does\n"
          "  --flamechart        SVG: x is time (needs timestamps)\n"
          "  --palette hot|beam  SVG and HTML colours\n"
          "\n"
          "reading:\n"
          "  --no-sleep          do not charge scheduled-out time (in/out events) to SLEEP\n"
          "  --gc                charge garbage collection (gc events) to GC\n"
          "  --timeline N        calls kept in time order (default 1000000; 0: none)\n"
          "  --elixir            frames spelled Mod.fun/1\n"
          "  --max-term-size B   larger trace messages are skipped (default 4M)\n"
          "  --max-processes N   processes read at most (default 100000)\n"
          "  --max-memory B      memory for the call trees and timeline (default 1G)\n",
          out);
    fputs(BS_CLI_OPEN_USAGE, out);
    bs_cli_shared_options_usage(out, "\"Flame Graph\"");
    fputs("  -h, --help          this text\n"
          "\n"
          "Truncated or corrupt files are refused with the file and the byte offset of\n"
          "the bad record (exit 3).\n"
          "\n"
          "examples:\n"
          "  beamspy convert /tmp/dbg.trace -o fg.svg -o fg.html\n"
          "  beamspy convert /var/log/app/trace*.log -o prof.speedscope.json\n"
          "  beamspy convert /tmp/dbg.trace --text | less\n"
          "\n",
          out);
    bs_cli_formats_usage(out);
    fputc('\n', out);
    bs_cli_exit_codes_usage(out);
}

static int count_arg(const char *opt, const char *arg, unsigned long long max, unsigned long long *v)
{
    if (bs_parse_count(arg, v) < 0 || *v > max)
        return bs_cli_usage_error(CMD, "%s wants a number up to %llu, not '%s'", opt, max, arg);
    return 0;
}

static int own_option(int c, convert_args *a)
{
    unsigned long long v;
    switch (c) {
    case OPT_FLAMECHART:
        a->opts.flamechart = 1;
        return 0;
    case OPT_PALETTE:
        return bs_cli_palette_option(CMD, optarg, &a->opts);
    case OPT_TEXT:
        a->text = 1;
        return 0;
    case OPT_GC:
        a->dbg.gc = 1;
        return 0;
    case OPT_NO_SLEEP:
        a->dbg.no_sleep = 1;
        return 0;
    case OPT_ELIXIR:
        a->dbg.names = BS_NAMES_ELIXIR;
        return 0;
    case OPT_TIMELINE:
        if (count_arg("--timeline", optarg, 100000000, &v))
            return BS_EXIT_USAGE;
        a->dbg.max_spans = v ? v : UINT64_MAX;
        return 0;
    case OPT_MAX_PROCESSES:
        if (count_arg("--max-processes", optarg, 10000000, &v) || v == 0)
            return v == 0 ? bs_cli_usage_error(CMD, "--max-processes must be at least 1") : BS_EXIT_USAGE;
        a->dbg.max_processes = (uint32_t)v;
        return 0;
    case OPT_MAX_TERM:
    case OPT_MAX_MEMORY:
        if (bs_parse_bytes(optarg, &v) < 0 || v == 0 || v > ((unsigned long long)1 << 40))
            return bs_cli_usage_error(CMD, "%s wants a size such as 512K, 64M or 2G, not '%s'",
                                      c == OPT_MAX_TERM ? "--max-term-size" : "--max-memory", optarg);
        if (c == OPT_MAX_TERM) {
            if (v > INT32_MAX)
                return bs_cli_usage_error(CMD, "--max-term-size is at most 2G");
            a->dbg.max_term_bytes = v;
        } else {
            a->dbg.max_memory = (size_t)v;
        }
        return 0;
    }
    return -1;
}

/* Returns -1 to go on, or the exit code (help printed: 0). */
static int parse_args(int argc, char **argv, convert_args *a)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"format", required_argument, NULL, 'f'},
        {"flamechart", no_argument, NULL, OPT_FLAMECHART},
        {"palette", required_argument, NULL, OPT_PALETTE},
        {"text", no_argument, NULL, OPT_TEXT},
        {"gc", no_argument, NULL, OPT_GC},
        {"no-sleep", no_argument, NULL, OPT_NO_SLEEP},
        {"timeline", required_argument, NULL, OPT_TIMELINE},
        {"max-term-size", required_argument, NULL, OPT_MAX_TERM},
        {"max-processes", required_argument, NULL, OPT_MAX_PROCESSES},
        {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
        {"elixir", no_argument, NULL, OPT_ELIXIR},
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
            bs_cmd_convert_usage(stdout);
            return BS_EXIT_OK;
        case '?':
        case ':':
            return bs_cli_getopt_error(CMD, c, argv);
        default:
            rc = bs_cli_output_option(CMD, c, optarg, &a->outputs, &a->n_outputs, &a->format);
            if (rc < 0)
                rc = own_option(c, a);
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

static int check_args(const convert_args *a)
{
    if (a->n_inputs == 0)
        return bs_cli_usage_error(CMD, "no input file (dbg trace-port files)");
    if (a->text && a->n_outputs)
        return bs_cli_usage_error(CMD, "--text prints the messages; it takes no -o");
    if (!a->text && a->n_outputs == 0)
        return bs_cli_usage_error(CMD, "no output: give -o FILE (or --text)");
    for (int i = 0; i < a->n_inputs; i++)
        if (strcmp(a->inputs[i], "-") == 0)
            return bs_cli_usage_error(CMD, "standard input is not supported: save the stream to a file first");
    for (int i = 0; i < a->n_outputs; i++) {
        const char *path = a->outputs[i];
        if (strcmp(path, "-") == 0)
            return bs_cli_usage_error(CMD, "writing to standard output is not supported: give -o FILE");
        bs_format f = a->format != BS_FORMAT_UNKNOWN ? a->format : bs_format_from_path(path);
        if (f == BS_FORMAT_UNKNOWN)
            return bs_cli_usage_error(CMD, "cannot tell the format of '%s' from its extension: use --format", path);
    }
    return BS_EXIT_OK;
}

static int report(const bs_read_error *err)
{
    if (strncmp(err->msg, "out of memory", 13) == 0) {
        bs_cli_error("%s: out of memory", err->file);
        return BS_EXIT_FAILURE;
    }
    if (strncmp(err->msg, "cannot open", 11) == 0 || strncmp(err->msg, "cannot read", 11) == 0 ||
        strncmp(err->msg, "cannot write", 12) == 0) {
        bs_cli_error("%s: %s", err->file, err->msg);
        return BS_EXIT_FAILURE;
    }
    bs_cli_error("%s: byte %" PRIu64 ": %s", err->file, err->offset, err->msg);
    return BS_EXIT_BAD_INPUT;
}

static int convert(convert_args *a)
{
    for (int i = 0; i < a->n_inputs; i++) {
        FILE *probe = fopen(a->inputs[i], "rb");
        if (!probe) {
            bs_cli_error("%s: %s", a->inputs[i], strerror(errno));
            return BS_EXIT_FAILURE;
        }
        fclose(probe);
    }
    if (bs_dbg_order_files(a->inputs, a->n_inputs, &a->dbg) < 0) {
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    bs_read_error err;
    memset(&err, 0, sizeof err);
    if (a->text) {
        if (bs_dbg_print_text(a->inputs, a->n_inputs, &a->dbg, stdout, &err) < 0)
            return report(&err);
        return BS_EXIT_OK;
    }
    bs_profile p;
    if (bs_dbg_read_profile(a->inputs, a->n_inputs, &a->dbg, &p, &err) < 0)
        return report(&err);
    if (a->opts.flamechart && !p.has_timeline)
        bs_cli_error("warning: --flamechart needs timestamps; the SVG is drawn as a flame graph");
    if (p.unit == BS_UNIT_COUNT && !a->opts.count_name)
        a->opts.count_name = strstr(p.meta.options, "calls only") ? "calls" : "events";
    int rc = bs_cli_write_outputs(a->outputs, a->n_outputs, a->format, &p, &a->opts, NULL, 1, a->open);
    bs_profile_free(&p);
    return rc;
}

int bs_cmd_convert(int argc, char **argv)
{
    convert_args a;
    memset(&a, 0, sizeof a);
    a.dbg.names = BS_NAMES_ERLANG;
    int rc = parse_args(argc, argv, &a);
    if (rc == -1 && (rc = check_args(&a)) == BS_EXIT_OK)
        rc = convert(&a);
    free(a.outputs);
    return rc;
}
