/* cli_options.c — messages, and the options render and diff share (see
 * cli.h): parsing their values and printing their help. */
#include "cli.h"
#include "open_page.h"

#include "../engine/collapse_recursion.h"
#include "../engine/filter.h"
#include "../writers/output_size.h"
#include "../writers/size_limit.h"
#include "../writers/writers.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Wider graphs than this are a typo, not a wish (and would make every x
 * coordinate in the SVG a seven-digit number). */
#define MAX_WIDTH_PX 100000u

void bs_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    flockfile(stderr); /* one line whole, whichever thread says it (nodes_at_once.c) */
    fputs("beamspy: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
    va_end(ap);
}

int bs_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "beamspy %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'beamspy help %s')\n", cmd);
    va_end(ap);
    return BS_EXIT_USAGE;
}

int bs_cli_getopt_error(const char *cmd, int result, char **argv)
{
    /* optopt is the short option's letter, or 0 / a long option's code; for
     * a long option getopt_long has moved optind just past it. */
    int short_opt = optopt > 0 && optopt < 0x100;
    const char *word = optind > 0 ? argv[optind - 1] : "?";
    if (result == ':')
        return short_opt ? bs_cli_usage_error(cmd, "option '-%c' needs a value", optopt)
                         : bs_cli_usage_error(cmd, "option '%s' needs a value", word);
    return short_opt ? bs_cli_usage_error(cmd, "unknown option '-%c'", optopt)
                     : bs_cli_usage_error(cmd, "unknown option '%s'", word);
}

static int check_regex(const char *cmd, const char *opt, const char *re)
{
    char why[128];
    if (bs_filter_check_pattern(re, why, sizeof why) == 0)
        return 0;
    return bs_cli_usage_error(cmd, "%s '%s': %s (POSIX extended regular expression)", opt, re, why);
}

static int parse_width(const char *cmd, const char *arg, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v > MAX_WIDTH_PX)
        return bs_cli_usage_error(cmd, "--width wants pixels from 1 to %u, not '%s'", MAX_WIDTH_PX, arg);
    *out = (unsigned)v;
    return 0;
}

static int parse_min_width(const char *cmd, const char *arg, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !isfinite(v) || v < 0 || v > MAX_WIDTH_PX)
        return bs_cli_usage_error(cmd, "--min-width wants pixels (0 or more), not '%s'", arg);
    /* 0 means "the default" in bs_render_opts; the smallest positive value
     * keeps "draw every frame" expressible. */
    *out = v > 0 ? v : 1e-9;
    return 0;
}

static int parse_timeline_cap(const char *cmd, const char *arg, uint64_t *out)
{
    char *end;
    if (strcmp(arg, "none") == 0) {
        *out = UINT64_MAX;
        return 0;
    }
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || end == arg || *end || arg[0] == '-' || v == 0 || v == UINT64_MAX)
        return bs_cli_usage_error(cmd, "--timeline-cap wants a number of calls or 'none', not '%s'", arg);
    *out = v;
    return 0;
}

int bs_cli_shared_option(const char *cmd, int code, const char *arg, bs_render_opts *o)
{
    switch (code) {
    case BS_OPT_DROP_SLEEP: o->drop_sleep = 1; return 0;
    case BS_OPT_MERGE: o->merge_processes = 1; return 0;
    case BS_OPT_COLLAPSE_RECURSION:
        if (!arg || strcmp(arg, "direct") == 0)
            o->collapse_recursion = BS_COLLAPSE_DIRECT;
        else if (strcmp(arg, "all") == 0)
            o->collapse_recursion = BS_COLLAPSE_ALL;
        else
            return bs_cli_usage_error(cmd, "--collapse-recursion wants direct or all, not '%s'", arg);
        return 0;
    case BS_OPT_INVERTED: o->inverted = 1; return 0;
    case BS_OPT_TIMELINE_CAP: return parse_timeline_cap(cmd, arg, &o->timeline_cap);
    case BS_OPT_FULL: o->full = 1; return 0;
    case BS_OPT_TITLE: o->title = arg; return 0;
    case BS_OPT_SUBTITLE: o->subtitle = arg; return 0;
    case BS_OPT_COUNT_NAME: o->count_name = arg; return 0;
    case BS_OPT_WIDTH: return parse_width(cmd, arg, &o->width);
    case BS_OPT_MIN_WIDTH: return parse_min_width(cmd, arg, &o->min_width);
    case BS_OPT_INCLUDE:
        o->include_re = arg;
        return check_regex(cmd, "--include", arg);
    case BS_OPT_EXCLUDE:
        o->exclude_re = arg;
        return check_regex(cmd, "--exclude", arg);
    default:
        return -1;
    }
}

void bs_cli_shared_options_usage(FILE *out, const char *default_title)
{
    fputs("filters (applied before drawing, in this order):\n"
          "  --drop-sleep        leave out SLEEP, WAIT and RUNNABLE frames (time scheduled out)\n"
          "  --include REGEX     keep only stacks with a frame matching REGEX\n"
          "                      (POSIX extended regular expression)\n"
          "  --exclude REGEX     drop stacks with a frame matching REGEX\n"
          "  --collapse-recursion[=direct|all]  fold recursion into one frame: direct\n"
          "                      (the default) f calling f; all: also f -> g -> f, so\n"
          "                      no frame repeats on a stack. Time and call counts\n"
          "                      kept; the smallest folded/perf output for deep code\n"
          "  --merge             merge all processes into one tree (no pid roots)\n",
          out);
    fprintf(out,
            "  --timeline-cap N|none  calls at most in the time order of a speedscope or\n"
            "                      Chrome trace file (the deepest go first; totals kept);\n"
            "                      default %u (speedscope), %u (Chrome trace): what\n"
            "                      their viewers load in seconds; none: no cap\n",
            BS_TIMELINE_CAP_SPEEDSCOPE, BS_TIMELINE_CAP_CHROME);
    fprintf(out,
            "  --full              write every stack whole: folded, perf, speedscope, Chrome\n"
            "                      trace and callgrind files projected above %u MB (more\n"
            "                      than viewers open) otherwise get their recursion folded,\n"
            "                      unless --collapse-recursion is given; stderr says so\n",
            (unsigned)(BS_OPENABLE_BYTES / 1000000u));
    fputs("drawing:\n", out);
    fprintf(out, "  --title TEXT        heading (default %s)\n", default_title);
    fputs("  --subtitle TEXT     second heading line (default none)\n"
          "  --count-name NAME   unit shown in tooltips (default \"µs\" for recorded\n"
          "                      profiles, \"samples\" for folded input)\n"
          "  --width PX          SVG width in pixels (default 1200)\n"
          "  --min-width PX      SVG: leave out frames narrower than PX pixels\n"
          "                      (default 0.1)\n"
          "  --inverted          SVG: icicle graph, roots at the top\n",
          out);
}

void bs_cli_exit_codes_usage(FILE *out)
{
    fputs("exit codes:\n"
          "  0  success\n"
          "  1  runtime failure (an input cannot be opened, an output cannot be written)\n"
          "  2  usage error (unknown option or format, bad value)\n"
          "  3  malformed input (reported as FILE:LINE: or FILE: byte OFFSET:)\n"
          "  commands that connect to a node (record, dump, top, run):\n"
          "  4  node not found (unknown host, no epmd there, or no node of that name)\n"
          "  5  the node refused the connection\n"
          "  6  the node rejected the cookie\n"
          "  7  the node cannot run beamspy (OTP too old, or another OTP release or\n"
          "     architecture than this beamspy was built for)\n"
          "  8  timeout (the node did not answer in time)\n"
          "  9  the connection to the node was lost (the node went down)\n"
          "  10 record and run with --strict: a limit ended the recording early\n"
          "     (the outputs are written)\n"
          "  11 record with several nodes: some nodes were left out (not attached,\n"
          "     lost or silent during the run; stderr names them), the others were\n"
          "     recorded and written (--strict: the exit code of the first node left out)\n",
          out);
}

int bs_cli_format_option(const char *cmd, const char *name, bs_format *format)
{
    *format = bs_format_from_name(name);
    if (*format == BS_FORMAT_UNKNOWN) {
        char names[256];
        bs_format_names(names, sizeof names, ", ");
        return bs_cli_usage_error(cmd, "unknown format '%s' (%s)", name, names);
    }
    return BS_EXIT_OK;
}

void bs_cli_formats_usage(FILE *out)
{
    fputs("formats (-o picks one by the file's extension, -f/--format by name):\n", out);
    bs_format_list_usage(out, "  ");
}

int bs_cli_add_output(const char ***outputs, int *n_outputs, const char *path)
{
    const char **more = realloc(*outputs, ((size_t)*n_outputs + 1) * sizeof *more);
    if (!more) {
        bs_cli_error("out of memory");
        return BS_EXIT_FAILURE;
    }
    *outputs = more;
    more[(*n_outputs)++] = path;
    return BS_EXIT_OK;
}

int bs_cli_output_option(const char *cmd, int code, const char *arg, const char ***outputs, int *n_outputs,
                         bs_format *format)
{
    if (code == 'o')
        return bs_cli_add_output(outputs, n_outputs, arg);
    if (code == 'f' && format)
        return bs_cli_format_option(cmd, arg, format);
    return -1;
}

int bs_cli_palette_option(const char *cmd, const char *arg, bs_render_opts *o)
{
    if (strcmp(arg, "hot") == 0)
        o->palette = BS_PALETTE_HOT;
    else if (strcmp(arg, "beam") == 0)
        o->palette = BS_PALETTE_BEAM;
    else
        return bs_cli_usage_error(cmd, "unknown palette '%s' (hot or beam)", arg);
    return 0;
}

/* "dir/prof.svg" + "a@h" -> "dir/prof.a@h.svg" (before the first dot of
 * the file's own name, so ".speedscope.json" stays whole). */
static char *path_with(const char *path, const char *insert)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strchr(base + (base[0] == '.'), '.');
    size_t head = dot ? (size_t)(dot - path) : strlen(path);
    size_t len = strlen(path) + strlen(insert) + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%.*s.%s%s", (int)head, path, insert, dot ? dot : "");
    return out;
}

/* Before each file is written: the timeline cap and a huge projected size
 * said on stderr, with the options that change them. */
static void warn_report(void *ctx, const bs_write_report *r)
{
    char text[1024];
    if (bs_write_warning_text(r, text, sizeof text) > 0)
        bs_cli_error("warning: %s: %s", (const char *)ctx, text);
}

int bs_cli_write_outputs(const char *const *outputs, int n, int forced_format, const bs_profile *p,
                         const bs_render_opts *opts, const char *insert, int announce, int open)
{
    int rc = BS_EXIT_OK;
    bs_render_opts own = *opts;
    const bs_render_opts *o = &own;
    own.on_report = warn_report;
    const char **written = open ? calloc((size_t)n + 1, sizeof *written) : NULL;
    int n_written = 0, n_ok = 0, headerless = 0;
    for (int i = 0; i < n; i++) {
        char *path = insert ? path_with(outputs[i], insert) : strdup(outputs[i]);
        if (!path) {
            bs_cli_error("out of memory");
            return BS_EXIT_FAILURE;
        }
        bs_format f = forced_format != BS_FORMAT_UNKNOWN ? (bs_format)forced_format : bs_format_from_path(outputs[i]);
        own.report_ctx = path;
        errno = 0;
        if (bs_write_file(path, f, p, o) == 0) {
            n_ok++;
            headerless |= f == BS_FORMAT_FOLDED || f == BS_FORMAT_PERF;
            if (announce)
                fprintf(stderr, "beamspy: wrote %s\n", path);
            if (written) {
                written[n_written++] = path;
                continue;
            }
        } else {
            bs_cli_error("%s: cannot write %s: %s", path, bs_format_name(f), strerror(errno ? errno : EIO));
            rc = BS_EXIT_FAILURE;
        }
        free(path);
    }
    /* Folded stacks and perf scripts have no header to say what their times
     * are: stderr says it (and after the files announced, whatever they are). */
    char times[BS_COMPENSATION_TEXT_CAP];
    if ((announce ? n_ok : headerless) && bs_compensation_text(&p->compensation, times, sizeof times))
        fprintf(stderr, "beamspy: %s\n", times);
    if (open) {
        if (written)
            bs_cli_open_page(written, n_written);
        else
            bs_cli_error("--open: out of memory");
        for (int i = 0; i < n_written; i++)
            free((char *)written[i]);
        free(written);
    }
    return rc;
}
