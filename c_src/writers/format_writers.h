/* format_writers.h — the writer of each format, as the rows of the format
 * table (format_registry.c) point at them: one function a format, profile
 * writers and sequence-diagram writers, each in its own file (folded.c,
 * svg.c, seq_mermaid.c, ...). Below the table: the writers know nothing of
 * it, the table knows them. Each streams its format to a FILE and returns 0
 * or -1 (write or allocation error); writers.h and seq_writers.h say more. */
#ifndef BS_FORMAT_WRITERS_H
#define BS_FORMAT_WRITERS_H

#include <stddef.h>
#include <stdio.h>

#include "../engine/profile.h"
#include "../engine/seq_flow.h"
#include "render_opts.h"

typedef int (*bs_profile_writer)(FILE *out, const bs_profile *p, const bs_render_opts *o);

int bs_write_folded_opts(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_svg(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_html(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_speedscope(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_chrome(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_perf(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_bspy(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_callgrind(FILE *out, const bs_profile *p, const bs_render_opts *o);
int bs_write_pprof(FILE *out, const bs_profile *p, const bs_render_opts *o);

/* What a sequence writer drew of a diagram. */
typedef struct bs_seq_write_info {
    size_t written;  /* messages drawn */
    size_t left_out; /* messages past the format's cap */
} bs_seq_write_info;

typedef int (*bs_seq_writer)(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info);

int bs_write_seq_mermaid(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info);
int bs_write_seq_json(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info);
int bs_write_seq_svg(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info);
int bs_write_seq_chrome(FILE *out, const bs_seq_diagram *d, const bs_seq_opts *o, bs_seq_write_info *info);

#endif
