/* folded.h — the folded-stacks ("collapsed") writer.
 *
 * One line per stack with non-zero self time: frames root first joined by
 * ';', one space, an integer count (microseconds by default). The exact
 * grammar is the one folded_read.c documents; names are already sanitised by the
 * profile, so every line is valid for flamegraph.pl, inferno and speedscope. */
#ifndef BS_FOLDED_H
#define BS_FOLDED_H

#include <stdio.h>

#include "../engine/profile.h"

typedef struct bs_folded_opts {
    int drop_sleep;          /* leave SLEEP leaves out (default 0) */
    int omit_process_root;   /* do not write the process frame (merged profiles) */
    unsigned max_depth;      /* deeper frames are summed into a "[deeper]" leaf; 0 = 4096 */
    unsigned ns_per_unit;    /* 1000 = microseconds (default when 0) */
} bs_folded_opts;

/* Returns 0, or -1 on a write or allocation error. */
int bs_write_folded(FILE *out, const bs_profile *p, const bs_folded_opts *opts);

#endif
