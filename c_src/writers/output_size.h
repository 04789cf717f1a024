/* output_size.h — how big a file will be before it is written, the caps
 * that keep time-ordered files loadable, and the warnings about both.
 *
 * Sizes are projected from the filtered profile (nodes, path lengths,
 * spans), not by writing: a 1.5 GB folded file is announced before the
 * first byte, with the options that make it smaller. The projection is an
 * estimate (within a few tens of percent: number widths vary), enough to
 * tell 20 MB from 2 GB.
 *
 * The default timeline caps are the format table's (format_registry.h). */
#ifndef BS_OUTPUT_SIZE_H
#define BS_OUTPUT_SIZE_H

#include <stddef.h>
#include <stdint.h>

#include "format_registry.h"

/* Files projected above this many bytes are announced with a warning. The
 * environment variable BEAMSPY_SIZE_WARN_BYTES (a positive integer) sets
 * another threshold: the tests use it so as not to write 100 MB files. */
#define BS_SIZE_WARN_BYTES (100u * 1000u * 1000u)

/* The span cap that applies to format f under o: 0 for formats that are not
 * time-ordered (or no cap asked: UINT64_MAX in o). */
uint64_t bs_timeline_cap_for(bs_format f, const bs_render_opts *o);

/* Estimated bytes of p written in format f with o (p already filtered and
 * capped, as the writer will see it). */
uint64_t bs_projected_bytes(bs_format f, const bs_profile *p, const bs_render_opts *o);

/* The stacks of p whose self time rounds to no folded line (folded.c
 * writes whole units: microseconds for recorded profiles), their time and
 * the time of all stacks, into r's stacks_rounded_out, rounded_out_ns and
 * total_ns. */
void bs_folded_rounding(const bs_profile *p, bs_write_report *r);

/* The warning threshold: BEAMSPY_SIZE_WARN_BYTES or BS_SIZE_WARN_BYTES. */
uint64_t bs_size_warn_bytes(void);

/* What to tell the user about r, one sentence per issue (the timeline cap,
 * recursion collapsed because the whole file was too big to open
 * (size_limit.h), else a projected size above the threshold, folded stacks too short for a
 * line holding 1% of the time or more), each naming what changes it; ""
 * when there is nothing to say. Returns the length written (always
 * NUL-terminated, cut to cap). */
size_t bs_write_warning_text(const bs_write_report *r, char *buf, size_t cap);

#endif
