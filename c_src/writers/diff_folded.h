/* diff_folded.h — two profiles as differential folded stacks.
 *
 * One line "stack before after" per stack present in either profile (the
 * input of flamegraph.pl for a differential flame graph, the output of
 * FlameGraph's difffolded.pl): frames root first joined by ';', then the
 * stack's self count in each profile. Counts are microseconds for recorded
 * profiles and plain counts for sample weights, as in the folded writer.
 * Processes are paired as the diff SVG pairs them (diff_svg.h): by their
 * label without the pid, so `<0.85.0> my_server` and `<0.91.0> my_server`
 * are both written `<process> my_server`, and every unnamed process is
 * `<process>`; trees with a synthetic root (merged processes, folded input
 * without pids) start at their top frames. Lines come in depth-first order
 * of the union of both profiles, children in the order they first appear
 * (BEFORE's first): deterministic, not sorted. */
#ifndef BS_DIFF_FOLDED_H
#define BS_DIFF_FOLDED_H

#include <stdio.h>

#include "../engine/profile.h"

/* normalize: scale the before column so that it sums exactly to the after
 * column's total (largest-remainder rounding), as difffolded.pl -n does, so
 * that a difference means a change of share rather than of run length.
 * Otherwise each column sums to its own profile's total. Returns 0, or -1
 * on a write or allocation error. */
int bs_write_diff_folded(FILE *out, const bs_profile *before, const bs_profile *after, int normalize);

#endif
