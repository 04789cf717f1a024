/* writers.h — the output formats and the one entry point that writes a file.
 *
 * Each writer streams one format from a profile to a FILE and returns 0 or -1
 * (write or allocation error). They are deterministic (same profile, same
 * options: same bytes) and escape every name they write. bs_write_file
 * applies the filters of the options, picks the writer and writes
 * atomically (temporary file, then rename). */
#ifndef BS_WRITERS_H
#define BS_WRITERS_H

#include <stdio.h>

#include "../engine/profile.h"
#include "render_opts.h"

typedef enum bs_format {
    BS_FORMAT_UNKNOWN = 0,
    BS_FORMAT_FOLDED,      /* .folded */
    BS_FORMAT_SVG,         /* .svg */
    BS_FORMAT_HTML,        /* .html */
    BS_FORMAT_SPEEDSCOPE,  /* .speedscope.json */
    BS_FORMAT_CHROME,      /* .trace.json */
    BS_FORMAT_PERF,        /* .perf.txt */
    BS_FORMAT_BSPY         /* .bspy (beamspy's own profile file) */
} bs_format;

/* "folded", "svg", ... -> format; BS_FORMAT_UNKNOWN if none. */
bs_format bs_format_from_name(const char *name);
/* Format picked by a file name's extension (longest match wins). */
bs_format bs_format_from_path(const char *path);
const char *bs_format_name(bs_format f);
const char *bs_format_extension(bs_format f);

int bs_write_folded_opts(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_svg(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_html(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_speedscope(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_chrome(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_perf(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_bspy(FILE *out, const bs_profile *p, const bs_render_opts *o);

/* Writes p to path in format f (BS_FORMAT_UNKNOWN: from the extension).
 * Filters in o are applied to a copy; p is not changed. Returns 0, or -1
 * with errno set (EINVAL for an unknown format); the target is untouched on
 * error. */
int bs_write_file(const char *path, bs_format f, const bs_profile *p, const bs_render_opts *o);

#endif
