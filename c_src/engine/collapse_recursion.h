/* collapse_recursion.h — direct recursion folded into one frame.
 *
 * A call of f made by f itself (fib calling fib, a list walk calling
 * itself) is merged into its caller's node: the tower of one frame repeated
 * becomes one frame whose self time, total time and call count are those
 * of the whole tower, and whose children are the children of every level,
 * merged by frame. Time is preserved exactly (every self time lands in one
 * node); calls are summed. Indirect recursion (f -> g -> f) is left as it
 * is. Timeline spans follow their nodes; a span inside a span of the same
 * (merged) node is dropped, so spans stay properly nested. */
#ifndef BS_COLLAPSE_RECURSION_H
#define BS_COLLAPSE_RECURSION_H

#include "profile.h"

/* Collapses every tree of p in place and computes the totals again.
 * Returns 0, or -1 when memory runs out (the trees done by then stay
 * collapsed; writers work on a copy). */
int bs_profile_collapse_recursion(bs_profile *p);

#endif
