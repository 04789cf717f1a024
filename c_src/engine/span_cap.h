/* span_cap.h — a timeline made small enough for its viewer.
 *
 * Time-ordered viewers load every span of a file into memory and lay it out
 * before showing anything; past some hundreds of thousands of spans they take
 * minutes or give up (speedscope, Perfetto). A cap keeps at most max spans of
 * a profile: the shallowest ones, so the whole recording stays visible and
 * only detail is lost. Every span down to some depth D-1 is kept, then spans
 * at depth D in tree and time order while room is left; deeper ones go. A
 * kept span's parents are kept too, so nesting stays valid, and each kept
 * span is whole (start and end unchanged): a parent's span still covers the
 * time of the children left out, which viewers then show as its own time.
 * The call tree (totals) is not touched. */
#ifndef BS_SPAN_CAP_H
#define BS_SPAN_CAP_H

#include <stdint.h>

#include "profile.h"

/* Spans of all trees of p. */
uint64_t bs_profile_span_count(const bs_profile *p);

/* Keeps at most max spans (over all trees) as above; marks the timeline
 * truncated when some are left out. *left_out (may be NULL) gets how many
 * went. Returns 0, or -1 when memory runs out (p unchanged). */
int bs_profile_cap_spans(bs_profile *p, uint64_t max, uint64_t *left_out);

#endif
