/* filter.h — what users keep or leave out of a profile before it is drawn.
 *
 * Applied in place: SLEEP/WAIT/RUNNABLE frames dropped (drop_sleep) or WAIT
 * frames only (drop_wait, whole-VM views: the profile's notes then say how
 * much waiting was left out), stacks kept only if some frame
 * matches include_re, stacks dropped if some frame matches exclude_re
 * (POSIX extended regular expressions, matched against frame names), and
 * processes ordered by running time (order_by_cpu: most first, scheduled-out
 * time not counted), and finally all processes merged into one tree. Nodes left with no time of
 * their own and no kept descendants disappear, and so do their spans.
 * Recursion is collapsed (collapse_recursion.h) before the merge. */
#ifndef BS_FILTER_H
#define BS_FILTER_H

#include "profile.h"

typedef struct bs_filter {
    int drop_sleep;
    int drop_wait;          /* WAIT frames only (idle time of whole-VM views) */
    int order_by_cpu;       /* trees by running time, most first (stable) */
    int merge_processes;
    int collapse_recursion; /* a bs_collapse_mode: 0 none, 1 direct, 2 all (after the filters) */
    const char *include_re; /* NULL: keep all */
    const char *exclude_re; /* NULL: drop none */
} bs_filter;

/* Checks that re compiles the way the filters compile it (POSIX extended,
 * glibc's regcomp): front ends check users' patterns with this, so a pattern
 * is never accepted in one dialect and used in another. Returns 0, or -1
 * with regcomp's reason in why (always NUL-terminated). */
int bs_filter_check_pattern(const char *re, char *why, size_t why_size);

/* Self time of every node of frame `frame' in all trees; *n_trees gets how
 * many trees have some. */
uint64_t bs_profile_frame_time(const bs_profile *p, uint32_t frame, uint32_t *n_trees);

/* Returns 0, or -1 if a regular expression does not compile (the profile is
 * then unchanged) or memory runs out. */
int bs_profile_filter(bs_profile *p, const bs_filter *f);

#endif
