/* size_limit.h — the default outcome for a file too big for any viewer:
 * recursion folded into one frame, said in the write report.
 *
 * Stacks of deep recursion repeat every frame below them: xmerl scanning
 * a generated 1,500- or 3,000-item document in a loop wrote folded stacks
 * of 0.1-0.5 GB compensated, 2.4-3 GB raw, which no viewer opens in
 * reasonable time (or at all). Above BS_OPENABLE_BYTES (projected, see
 * output_size.h) a stack format is written with collapse_recursion =>
 * direct, or all if direct is still too big, unless the user asked for a
 * collapse mode of their own or for everything (full => true, --full).
 *
 * Why 200 MB: speedscope 1.25 in headless Chromium (this project's 2
 * shared, loaded cores) imports folded stacks of that xmerl profile at about
 * 3 MB/s: 20 MB in 6 s, 43 MB in 13 s, 173 MB in 55 s, 520 MB in 157 s; a
 * file past V8's longest string (2^29 - 24 characters, 537 MB) it cannot
 * read at all (Firefox: 2^30 - 2). 200 MB is about a minute. flamegraph.pl
 * and inferno read any size but draw an SVG of the frames wider than 0.1 px,
 * the picture collapsed files give too. */
#ifndef BS_SIZE_LIMIT_H
#define BS_SIZE_LIMIT_H

#include <stdint.h>

#include "format_registry.h"

#define BS_OPENABLE_BYTES (200u * 1000u * 1000u)

/* The threshold: BEAMSPY_OPENABLE_BYTES (a positive integer, for tests) or
 * BS_OPENABLE_BYTES. */
uint64_t bs_openable_bytes(void);

/* Whether format f is one whose size grows with depth times stacks and
 * that the automatic collapse applies to (not SVG or HTML, which leave out
 * what is too narrow to see, nor bspy, the archive that keeps everything). */
int bs_size_limit_applies(bs_format f);

/* If p written in format f under o is projected above the threshold, and o
 * asks neither for full output nor for a collapse mode: collapses p's
 * recursion in place (direct, then all if still above) and fills r's
 * full_bytes (the size before), auto_collapse (the mode applied) and
 * projected_bytes (the size after). Returns 0, or -1 when memory runs out. */
int bs_fit_openable(bs_profile *p, bs_format f, const bs_render_opts *o, bs_write_report *r);

#endif
