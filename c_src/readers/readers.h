/* readers.h — input formats turned back into profiles.
 *
 * Readers never trust their input: every malformed line or record is
 * reported with its line number (text) or byte offset (binary) and the
 * reader stops without crashing; memory grows with distinct stacks, never
 * with the number of input lines. */
#ifndef BS_READERS_H
#define BS_READERS_H

#include <stdint.h>
#include <stdio.h>

#include "../engine/profile.h"

typedef struct bs_read_error {
    char file[256];    /* input name as given */
    uint64_t line;     /* 1-based line of text input, 0 if not applicable */
    uint64_t offset;   /* byte offset of binary input (or of the line start) */
    char msg[512];     /* what is wrong, one line */
} bs_read_error;

/* Folded stacks from any tool (flamegraph.pl input, eflame, inferno,
 * beamspy): "frame;frame;... count" per line. Lines whose first frame is a
 * pid (<a.b.c>, optionally followed by a space and a name) become one tree
 * per process; other stacks go to one tree with a synthetic root. Counts go
 * to self_ns with unit BS_UNIT_COUNT. Returns 0 or -1 (err filled). */
int bs_read_folded(FILE *in, const char *name, bs_profile *out, bs_read_error *err);

/* beamspy's own profile file (.bspy); format documented in docs/bspy-format.md. */
int bs_read_bspy(FILE *in, const char *name, bs_profile *out, bs_read_error *err);

/* Opens path and reads it as .bspy (by its magic bytes) or folded text. */
int bs_read_profile_file(const char *path, bs_profile *out, bs_read_error *err);

#endif
