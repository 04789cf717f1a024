/* cli.h — what the subcommands of the command-line tool share: exit codes,
 * error messages, the drawing and filter options common to `render` and
 * `diff`, and loading input files into one profile.
 *
 * Exit codes (every help text repeats them):
 *   0  success
 *   1  runtime failure: an input cannot be opened, an output cannot be
 *      written, memory ran out
 *   2  usage error: unknown command, option or format, bad option value
 *   3  malformed input: a file that is not folded stacks, .bspy or a dbg
 *      trace-port file (truncated, corrupt)
 *   4-9 commands that connect to a node: not found, refused, cookie
 *       rejected, incompatible node, timeout, connection lost (remote.h)
 *   10 record and run with --strict: a limit ended the recording early
 * Messages are one line on stderr, starting with "beamspy: " (or
 * "beamspy CMD: " for usage errors). */
#ifndef BS_CLI_H
#define BS_CLI_H

#include <stdio.h>

#include "../engine/profile.h"
#include "../writers/render_opts.h"
#include "../writers/writers.h"

enum {
    BS_EXIT_OK = 0,
    BS_EXIT_FAILURE = 1,
    BS_EXIT_USAGE = 2,
    BS_EXIT_BAD_INPUT = 3,
    BS_EXIT_NODE_NOT_FOUND = 4,
    BS_EXIT_NODE_REFUSED = 5,
    BS_EXIT_COOKIE_REJECTED = 6,
    BS_EXIT_NODE_INCOMPATIBLE = 7,
    BS_EXIT_TIMEOUT = 8,
    BS_EXIT_CONNECTION_LOST = 9,
    BS_EXIT_STOPPED_EARLY = 10,
    BS_EXIT_PARTIAL = 11
};

/* Subcommands: run gets argv[0] == the command's name; usage prints the
 * complete help text. */
int bs_cmd_render(int argc, char **argv);
void bs_cmd_render_usage(FILE *out);
int bs_cmd_convert(int argc, char **argv);
void bs_cmd_convert_usage(FILE *out);
int bs_cmd_diff(int argc, char **argv);
void bs_cmd_diff_usage(FILE *out);
int bs_cmd_record(int argc, char **argv);
void bs_cmd_record_usage(FILE *out);
int bs_cmd_seq(int argc, char **argv);
void bs_cmd_seq_usage(FILE *out);
int bs_cmd_dump(int argc, char **argv);
void bs_cmd_dump_usage(FILE *out);
int bs_cmd_top(int argc, char **argv);
void bs_cmd_top_usage(FILE *out);
int bs_cmd_run(int argc, char **argv);
void bs_cmd_run_usage(FILE *out);

/* "beamspy: <message>\n" on stderr. */
void bs_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "beamspy CMD: <message> (see 'beamspy help CMD')\n"; returns BS_EXIT_USAGE. */
int bs_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Long-option codes of the options render and diff share (above any char). */
enum {
    BS_OPT_DROP_SLEEP = 0x100,
    BS_OPT_MERGE,
    BS_OPT_COLLAPSE_RECURSION,
    BS_OPT_INCLUDE,
    BS_OPT_EXCLUDE,
    BS_OPT_TITLE,
    BS_OPT_SUBTITLE,
    BS_OPT_MIN_WIDTH,
    BS_OPT_WIDTH,
    BS_OPT_INVERTED,
    BS_OPT_COUNT_NAME,
    BS_OPT_TIMELINE_CAP,
    BS_OPT_FULL,
    BS_OPT_OPEN, /* --open, of the commands that write flame graphs */
    BS_OPT_FIRST_OWN /* subcommands number their own options from here */
};

/* The getopt_long table entries of the shared options (expanded inside each
 * subcommand's struct option array). */
#define BS_CLI_SHARED_LONG_OPTIONS                                  \
    {"drop-sleep", no_argument, NULL, BS_OPT_DROP_SLEEP},           \
    {"merge", no_argument, NULL, BS_OPT_MERGE},                     \
    {"collapse-recursion", optional_argument, NULL, BS_OPT_COLLAPSE_RECURSION}, \
    {"include", required_argument, NULL, BS_OPT_INCLUDE},           \
    {"exclude", required_argument, NULL, BS_OPT_EXCLUDE},           \
    {"title", required_argument, NULL, BS_OPT_TITLE},               \
    {"subtitle", required_argument, NULL, BS_OPT_SUBTITLE},         \
    {"min-width", required_argument, NULL, BS_OPT_MIN_WIDTH},       \
    {"width", required_argument, NULL, BS_OPT_WIDTH},               \
    {"inverted", no_argument, NULL, BS_OPT_INVERTED},               \
    {"count-name", required_argument, NULL, BS_OPT_COUNT_NAME},    \
    {"timeline-cap", required_argument, NULL, BS_OPT_TIMELINE_CAP}, \
    {"full", no_argument, NULL, BS_OPT_FULL}

/* --open's getopt_long entry (render, convert, record, run). */
#define BS_CLI_OPEN_LONG_OPTION {"open", no_argument, NULL, BS_OPT_OPEN}
#define BS_CLI_OPEN_USAGE \
    "  --open              open the HTML (else SVG) written in the browser ($BROWSER,\n" \
    "                      else xdg-open with a display); without one, say where it is\n"

/* Applies shared option `code` with its argument to o. Returns 0 when done,
 * -1 when code is not a shared option, BS_EXIT_USAGE (message printed) when
 * the value is bad; a regular expression is checked here, before any input
 * is read. */
int bs_cli_shared_option(const char *cmd, int code, const char *arg, bs_render_opts *o);

/* Help lines of the shared options; default_title as it should read in
 * "(default ...)". */
void bs_cli_shared_options_usage(FILE *out, const char *default_title);
/* The formats paragraph of the help texts of commands that write profiles:
 * one line per row of format_registry.h. */
void bs_cli_formats_usage(FILE *out);
/* The exit-code paragraph of every help text. */
void bs_cli_exit_codes_usage(FILE *out);

/* --palette hot|beam: 0, or BS_EXIT_USAGE with the message printed. */
int bs_cli_palette_option(const char *cmd, const char *arg, bs_render_opts *o);

/* Writes p to every output, each atomically, in format `forced` or the
 * one its extension names (BS_FORMAT_UNKNOWN). With insert, a file's name
 * gets ".<insert>" before its extension (prof.svg -> prof.app@host.svg).
 * With announce, "beamspy: wrote PATH" goes to stderr for each file. A file
 * that cannot be written is reported, the others are still written. With
 * open (--open), the HTML or SVG written is then opened (open_page.h).
 * Returns BS_EXIT_OK or BS_EXIT_FAILURE. */
int bs_cli_write_outputs(const char *const *outputs, int n, int forced_format, const bs_profile *p,
                         const bs_render_opts *o, const char *insert, int announce, int open);

/* --format F of the commands that write profiles: *format gets F's format;
 * returns BS_EXIT_OK, or the usage error (exit 2) for a name that is none. */
int bs_cli_format_option(const char *cmd, const char *name, bs_format *format);

/* Appends an -o path to a growing list; returns BS_EXIT_OK or BS_EXIT_FAILURE. */
int bs_cli_add_output(const char ***outputs, int *n_outputs, const char *path);

/* The output options of the commands that write profiles (render, convert,
 * diff): -o FILE (repeatable) and, unless format is NULL, -f/--format NAME.
 * Returns 0 when done, -1 when code is neither, else the exit code (message
 * printed). */
int bs_cli_output_option(const char *cmd, int code, const char *arg, const char ***outputs, int *n_outputs,
                         bs_format *format);

/* The one-line usage error for getopt_long's '?' or ':' result. */
int bs_cli_getopt_error(const char *cmd, int result, char **argv);

/* Reads one input ("-" is stdin) into out. Returns BS_EXIT_OK, or
 * BS_EXIT_FAILURE / BS_EXIT_BAD_INPUT with the message printed ("beamspy:
 * FILE:LINE: message" for malformed text, "FILE: byte OFFSET: message" for
 * binary). */
int bs_cli_read_input(const char *path, bs_profile *out);

/* Reads every input and combines their trees into out (one input: out is
 * that profile). Same return values as bs_cli_read_input. */
int bs_cli_read_inputs(char *const *paths, int n, bs_profile *out);

#endif
