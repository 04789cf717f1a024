/* format_registry.h — the one table of output formats: one row per format
 * (its name, extensions, whether it shows time order, its caps, a help line
 * and its writer), for profiles and for sequence diagrams.
 *
 * Everything that names, picks or lists formats reads these rows: the name
 * and extension lookups, bs_write_stream's dispatch, the timeline caps, the
 * automatic collapse of oversized files, the command-line tool's help and
 * "unknown format" errors, and the NIF's format list (beamspy_tracer:formats/0,
 * which the Erlang tests hold beamspy_opts' lists to). Adding a format is its
 * writer's file, one row in format_registry.c and its tests. */
#ifndef BS_FORMAT_REGISTRY_H
#define BS_FORMAT_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine/profile.h"
#include "../engine/seq_flow.h"
#include "format_writers.h"
#include "render_opts.h"

/* The values only name rows of the table; they are not stored in files. */
typedef enum bs_format {
    BS_FORMAT_UNKNOWN = 0,
    BS_FORMAT_FOLDED,
    BS_FORMAT_SVG,
    BS_FORMAT_HTML,
    BS_FORMAT_SPEEDSCOPE,
    BS_FORMAT_CHROME,
    BS_FORMAT_PERF,
    BS_FORMAT_BSPY,
    BS_FORMAT_CALLGRIND,
    BS_FORMAT_PPROF
} bs_format;

typedef enum bs_seq_format {
    BS_SEQ_FORMAT_UNKNOWN = 0,
    BS_SEQ_FORMAT_MERMAID,
    BS_SEQ_FORMAT_SVG,
    BS_SEQ_FORMAT_CHROME,
    BS_SEQ_FORMAT_JSON
} bs_seq_format;

#define BS_FORMAT_MAX_EXTENSIONS 3

/* The default timeline caps of the time-ordered rows, measured by loading
 * evented files of increasing size into speedscope 1.25 (headless
 * Chromium, 2 shared cores; its Chrome trace importer for .trace.json): see
 * README "Benchmarks: output sizes". Above the cap a file takes minutes to
 * import or never opens. speedscope's own JSON imports 200,000 calls in 22 s
 * and 400,000 in 30 s here (832,000: 49 s); its Chrome trace importer is
 * much slower and grows faster than the count: 25,000 calls in 10 s, 50,000
 * in 40-54 s, 200,000 in 215 s, 400,000 not within 300 s (same profile,
 * load average about 30 on 2 cores, so a quiet machine is faster).
 * Perfetto reads far larger traces: timeline_cap => infinity lifts the cap
 * for it. */
#define BS_TIMELINE_CAP_SPEEDSCOPE 300000u
#define BS_TIMELINE_CAP_CHROME 25000u

typedef struct bs_format_desc {
    bs_format format;
    const char *name;
    /* Lower case, the first is the one files are named with; NULL ends. */
    const char *extensions[BS_FORMAT_MAX_EXTENSIONS];
    /* A base name starting with this (and longer) is of this format, as
     * valgrind names callgrind.out.<pid>; NULL: none. */
    const char *file_prefix;
    int timeline;              /* shows time order: asking for it keeps a timeline */
    uint32_t timeline_cap;     /* default spans kept in time order (BS_TIMELINE_CAP_*); 0: no cap */
    int collapse_when_big;     /* grows with depth times stacks: size_limit.h applies */
    const char *help;          /* one line, at most 46 characters */
    bs_profile_writer write;
} bs_format_desc;

typedef struct bs_seq_format_desc {
    bs_seq_format format;
    const char *name;
    const char *extensions[BS_FORMAT_MAX_EXTENSIONS];
    const char *help;
    bs_seq_writer write;
} bs_seq_format_desc;

/* The rows, in the order help texts list them; *n gets their number. */
const bs_format_desc *bs_format_table(size_t *n);
const bs_seq_format_desc *bs_seq_format_table(size_t *n);

/* The row of f, or NULL for BS_FORMAT_UNKNOWN (and any other value). */
const bs_format_desc *bs_format_desc_of(bs_format f);
const bs_seq_format_desc *bs_seq_format_desc_of(bs_seq_format f);

/* "folded", "svg", ... -> format; BS_FORMAT_UNKNOWN if none. */
bs_format bs_format_from_name(const char *name);
/* Format picked by a file name's extension (case-insensitive, the longest
 * matching extension of any row wins), or by a row's file_prefix. */
bs_format bs_format_from_path(const char *path);
/* The name ("unknown" for none) and the default extension ("" for none). */
const char *bs_format_name(bs_format f);
const char *bs_format_extension(bs_format f);

bs_seq_format bs_seq_format_from_name(const char *name); /* mermaid, svg, chrome, json */
bs_seq_format bs_seq_format_from_path(const char *path);

/* The profile formats' names ("folded, svg, ..." with sep ", "), or every
 * extension of the sequence formats, joined by sep, NUL-terminated and cut
 * to cap; returns the length the whole list needs (as snprintf). */
size_t bs_format_names(char *buf, size_t cap, const char *sep);
size_t bs_seq_format_extension_list(char *buf, size_t cap, const char *sep);

/* Prints one line per format (name, extensions, help), each starting with
 * indent: the list of the help texts. */
void bs_format_list_usage(FILE *out, const char *indent);
void bs_seq_format_list_usage(FILE *out, const char *indent);

#endif
