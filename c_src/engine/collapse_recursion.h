/* collapse_recursion.h — recursion folded into one frame.
 *
 * Direct mode: a call of f made by f itself (fib calling fib, a list walk
 * calling itself) is merged into its caller's node. All mode: a call of f
 * made anywhere below an f already on the stack (f -> g -> f, the
 * compiler's mutually recursive tree walks) is merged into that nearest f,
 * so no frame appears twice on any stack. The tower becomes one frame whose
 * self time and call count are those of every level, and whose children are
 * the children of every level, merged by frame. Time is preserved exactly
 * (every self time lands in one node) and calls are summed; what changes is
 * where the time below a re-entered f is shown: under the first f, not under
 * the g that called it again (g's total no longer includes it).
 *
 * Timeline spans follow their nodes and the call tree. A span of a node that
 * is already open is dropped (the re-entry); in all mode the spans between
 * the two (g above) are ended when the re-entry starts and continued when it
 * ends, so every span's parent in time is its parent in the tree and spans
 * stay properly nested. Continuations are capped (BS_COLLAPSE_SPLIT_CAP more
 * spans than the tree had); past the cap they are left out and the timeline
 * is marked truncated. */
#ifndef BS_COLLAPSE_RECURSION_H
#define BS_COLLAPSE_RECURSION_H

#include "profile.h"

typedef enum bs_collapse_mode {
    BS_COLLAPSE_NONE = 0,
    BS_COLLAPSE_DIRECT = 1, /* f calling f (what `true` has always meant) */
    BS_COLLAPSE_ALL = 2     /* f anywhere below f: direct and indirect recursion */
} bs_collapse_mode;

/* Spans a tree may gain from continuations, beyond its own count. */
#define BS_COLLAPSE_SPLIT_CAP 1000000u

/* Collapses every tree of p in place and computes the totals again.
 * Returns 0, or -1 when memory runs out (the trees done by then stay
 * collapsed; writers work on a copy). */
int bs_profile_collapse_recursion_mode(bs_profile *p, bs_collapse_mode mode);

/* bs_profile_collapse_recursion_mode(p, BS_COLLAPSE_DIRECT). */
int bs_profile_collapse_recursion(bs_profile *p);

#endif
