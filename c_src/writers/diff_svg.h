/* diff_svg.h — the differential flame graph: what changed from one profile
 * to another (`beamspy diff BEFORE AFTER -o diff.svg`).
 *
 * Frames are laid out by the AFTER profile. BEFORE is normalised to AFTER's
 * total (each of its times multiplied by total(after) / total(before)), so a
 * run that was longer overall does not paint everything red. Each frame is
 * coloured by the change of its own (self) time: red grew, blue shrank,
 * white unchanged, more saturated the larger the change relative to the
 * larger of the two. Stacks present only in BEFORE are drawn too, as wide
 * as their normalised time, so code that disappeared stays visible (blue).
 * The tooltip gives the before (normalised) and after self and total times
 * and their change in percent.
 *
 * Processes are matched by what their label says apart from the pid (pids
 * differ between runs): `<0.85.0> my_server` matches `<0.91.0> my_server`,
 * and processes without a name all become `<process>`. Trees with a
 * synthetic root contribute their top frames directly under "all".
 *
 * Options used: title (default "Differential Flame Graph"), subtitle,
 * count_name, width, min_width, inverted, drop_sleep. */
#ifndef BS_DIFF_SVG_H
#define BS_DIFF_SVG_H

#include <stdio.h>

#include "../engine/profile.h"
#include "render_opts.h"

/* Returns 0, or -1 on a write or allocation error (errno set). Deterministic. */
int bs_write_diff_svg(FILE *out, const bs_profile *before, const bs_profile *after, const bs_render_opts *o);

#endif
