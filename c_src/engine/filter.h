/* filter.h — what users keep or leave out of a profile before it is drawn.
 *
 * Applied in place: SLEEP frames dropped, stacks kept only if some frame
 * matches include_re, stacks dropped if some frame matches exclude_re
 * (POSIX extended regular expressions, matched against frame names), and
 * finally all processes merged into one tree. Nodes left with no time of
 * their own and no kept descendants disappear, and so do their spans. */
#ifndef BS_FILTER_H
#define BS_FILTER_H

#include "profile.h"

typedef struct bs_filter {
    int drop_sleep;
    int merge_processes;
    const char *include_re; /* NULL: keep all */
    const char *exclude_re; /* NULL: drop none */
} bs_filter;

/* Returns 0, or -1 if a regular expression does not compile (the profile is
 * then unchanged) or memory runs out. */
int bs_profile_filter(bs_profile *p, const bs_filter *f);

#endif
